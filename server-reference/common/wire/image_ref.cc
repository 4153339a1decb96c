// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/image_ref.h"

namespace bai::server {

bool ImageServes(std::string const& offered, std::string const& reference) {
  if (offered.empty() || reference.empty()) return false;
  auto slash = reference.rfind('/');
  std::string last = slash == std::string::npos ? reference : reference.substr(slash + 1);
  if (offered == reference || offered == last) return true;
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
