// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/http/listen_address.h"

#include <cstdlib>

namespace bai::server {

StatusOr<ListenAddress> ParseListenAddress(std::string const& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status(StatusCode::kInvalidArgument, "listen must be HOST:PORT, got \"" + text + "\"");
  }
  ListenAddress out;
  out.host = text.substr(0, colon);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  char* end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535 || colon + 1 == text.size()) {
    return Status(StatusCode::kInvalidArgument, "invalid port in \"" + text + "\"");
  }
  out.port = static_cast<std::uint16_t>(port);
  return out;
}

}  // namespace bai::server
