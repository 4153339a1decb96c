// SPDX-License-Identifier: Apache-2.0
// Any bytes as an Authorization header (and as a whole signed request): the parser must answer
// ok or a 400/401 problem, never crash, hang or read out of bounds.
#include "bai/protocol/signing.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view text(reinterpret_cast<char const*>(data), size);
  auto parsed = bai::protocol::ParseAuthorization(text);
  if (!parsed.ok()) {
    int http = parsed.status().error_info().http_status;
    if (http != 400) std::abort();
  }
  // The same bytes split into the headers of a request.
  bai::protocol::ReceivedRequest r;
  r.method = "GET";
  r.raw_target = text.substr(0, size / 4);
  r.date = text.substr(size / 4, size / 4);
  r.host = "h";
  r.backendai_version = "v8.20240915";
  r.authorization = text.substr(size / 2);
  auto pending = bai::protocol::PrepareVerification(r, std::chrono::system_clock::now());
  if (pending.ok()) {
    auto verified = bai::protocol::VerifySignature(*pending, "secret");
    if (!verified.ok() && verified.error_info().http_status != 401) std::abort();
  } else {
    int http = pending.status().error_info().http_status;
    if (http != 400 && http != 401) std::abort();
  }
  return 0;
}
