// SPDX-License-Identifier: Apache-2.0
// Any bytes as WebSocket frames, as a tunnel's block reader meets them (libbai's ws_frames.h):
// each header parses, asks for more or is refused, never reads past what it was given, and what
// parses encodes back to the same header bytes; masking twice gives back the payload.
#include "libbai/internal/ws_frames.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace bai::internal::ws;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  for (bool from_server : {true, false}) {
    std::size_t at = 0;
    while (at < size) {
      FrameHeader h;
      std::size_t n = 0;
      auto r = ParseHeader(data + at, size - at, from_server, h, n);
      if (r != ParseResult::kOk) break;
      if (n < 2 || n > kMaxHeader || n > size - at) std::abort();
      std::uint8_t again[kMaxHeader];
      if (EncodeHeader(h, again) != n || std::memcmp(again, data + at, n) != 0) std::abort();
      at += n;
      std::size_t take = h.length < size - at ? static_cast<std::size_t>(h.length) : size - at;
      std::vector<std::uint8_t> payload(data + at, data + at + take);
      std::size_t half = take / 2;
      ApplyMask(payload.data(), half, h.mask, 0);
      ApplyMask(payload.data() + half, take - half, h.mask, half);
      ApplyMask(payload.data(), take, h.mask, 0);
      if (take && std::memcmp(payload.data(), data + at, take) != 0) std::abort();
      at += take;
    }
  }
  return 0;
}
