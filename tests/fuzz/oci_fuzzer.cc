// SPDX-License-Identifier: Apache-2.0
// What a registry sends a pull (server-reference/common/oci/): manifests and indexes, image
// configs, WWW-Authenticate challenges, token answers, Link headers, error documents, and the
// image references users type. None may crash, hang or read out of bounds whatever the bytes.
#include "server-reference/common/oci/manifest.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_auth.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view text(reinterpret_cast<char const*>(data), size);
  using namespace bai::server::oci;
  auto doc = ParseManifest(text, "");
  if (doc.ok() && doc->index) (void)ChoosePlatform(*doc->index, "amd64");
  if (doc.ok() && doc->manifest) (void)doc->manifest->LayerBytes();
  auto config = ParseImageConfig(text);
  if (config.ok()) (void)ChainIds(config->diff_ids);
  for (auto const& c : ParseWwwAuthenticate(text)) (void)TokenUrl(c, "repository:a:pull");
  (void)ParseTokenAnswer(text);
  (void)NextLink(text);
  (void)RegistryErrorWords(text);
  auto ref = ParseImageReference(text);
  if (ref.ok()) (void)ref->Canonical();
  return 0;
}
