// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/image_ref.h"

#include "server-reference/common/oci/reference.h"

namespace bai::server {

bool ImageServes(std::string const& offered, std::string const& reference) {
  if (offered.empty() || reference.empty()) return false;
  if (offered == reference) return true;
  if (reference.find('/') != std::string::npos) {
    // A registry's image: served only by that image (pulled, its canonical name an alias),
    // whatever the spelling ("lab/app" is "index.docker.io/lab/app:latest"); never by a local
    // image of the same last component (issue 46: it silently ran the host's Python).
    if (offered.find('/') == std::string::npos) return false;
    auto want = oci::ParseImageReference(reference);
    auto have = oci::ParseImageReference(offered);
    return want.ok() && have.ok() && want->Canonical() == have->Canonical();
  }
  std::string const& last = reference;
  auto colon = last.find(':');
  std::string bare = last.substr(0, colon);
  std::string tag = colon == std::string::npos ? "" : last.substr(colon + 1);
  if (tag.empty() || tag == "latest") return offered == bare || offered == bare + ":latest";
  auto dash = tag.find('-');
  return dash != std::string::npos && dash > 0 && offered == bare + ":" + tag.substr(0, dash);
}

bool OffersImage(std::vector<std::string> const& offered, std::string const& reference) {
  if (offered.empty() || reference.empty()) return true;
  for (auto const& name : offered) {
    if (ImageServes(name, reference)) return true;
  }
  return false;
}

}  // namespace bai::server
