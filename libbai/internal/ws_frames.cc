// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/ws_frames.h"

#include <cstring>

namespace bai::internal::ws {

std::size_t EncodeHeader(FrameHeader const& h, std::uint8_t* out) {
  std::size_t n = 0;
  out[n++] = static_cast<std::uint8_t>((h.fin ? 0x80 : 0) | (h.opcode & 0x0F));
  std::uint8_t mask_bit = h.masked ? 0x80 : 0;
  if (h.length < 126) {
    out[n++] = static_cast<std::uint8_t>(mask_bit | h.length);
  } else if (h.length <= 0xFFFF) {
    out[n++] = static_cast<std::uint8_t>(mask_bit | 126);
    out[n++] = static_cast<std::uint8_t>(h.length >> 8);
    out[n++] = static_cast<std::uint8_t>(h.length);
  } else {
    out[n++] = static_cast<std::uint8_t>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      out[n++] = static_cast<std::uint8_t>(h.length >> shift);
    }
  }
  if (h.masked) {
    std::memcpy(out + n, h.mask.data(), 4);
    n += 4;
  }
  return n;
}

ParseResult ParseHeader(std::uint8_t const* data, std::size_t size, bool from_server,
                        FrameHeader& h, std::size_t& header_size) {
  if (size < 2) return ParseResult::kIncomplete;
  std::uint8_t b0 = data[0], b1 = data[1];
  if ((b0 & 0x70) != 0) return ParseResult::kMalformed;  // RSV1-3: no extension was agreed
  h.fin = (b0 & 0x80) != 0;
  h.opcode = b0 & 0x0F;
  bool control = (h.opcode & 0x08) != 0;
  if (h.opcode != kContinuation && h.opcode != kText && h.opcode != kBinary && h.opcode != kClose &&
      h.opcode != kPing && h.opcode != kPong) {
    return ParseResult::kMalformed;
  }
  h.masked = (b1 & 0x80) != 0;
  if (h.masked == from_server) return ParseResult::kMalformed;
  std::size_t n = 2;
  std::uint64_t length = b1 & 0x7F;
  if (length == 126) {
    if (size < n + 2) return ParseResult::kIncomplete;
    length = (std::uint64_t{data[2]} << 8) | data[3];
    if (length < 126) return ParseResult::kMalformed;
    n += 2;
  } else if (length == 127) {
    if (size < n + 8) return ParseResult::kIncomplete;
    length = 0;
    for (int i = 0; i < 8; ++i) length = (length << 8) | data[2 + i];
    if ((length >> 63) != 0 || length <= 0xFFFF) return ParseResult::kMalformed;
    n += 8;
  }
  if (control && (length > 125 || !h.fin)) return ParseResult::kMalformed;
  if (h.masked) {
    if (size < n + 4) return ParseResult::kIncomplete;
    std::memcpy(h.mask.data(), data + n, 4);
    n += 4;
  }
  h.length = length;
  header_size = n;
  return ParseResult::kOk;
}

void ApplyMask(std::uint8_t* data, std::size_t size, std::array<std::uint8_t, 4> const& mask,
               std::uint64_t offset) {
  // The mask rotated to this piece's start, then 64 bytes at a time in four 16-byte vectors
  // (SSE2 on x86-64, NEON on arm64: a tunnel's every byte passes here twice, at the agent and
  // at the manager), then 8, then the rest.
  using V16 = std::uint8_t __attribute__((vector_size(16)));
  std::uint8_t key[16];
  for (int i = 0; i < 16; ++i) key[i] = mask[(offset + i) & 3];
  V16 k16;
  std::memcpy(&k16, key, 16);
  std::size_t i = 0;
  for (; i + 64 <= size; i += 64) {
    V16 a, b, c, d;
    std::memcpy(&a, data + i, 16);
    std::memcpy(&b, data + i + 16, 16);
    std::memcpy(&c, data + i + 32, 16);
    std::memcpy(&d, data + i + 48, 16);
    a ^= k16;
    b ^= k16;
    c ^= k16;
    d ^= k16;
    std::memcpy(data + i, &a, 16);
    std::memcpy(data + i + 16, &b, 16);
    std::memcpy(data + i + 32, &c, 16);
    std::memcpy(data + i + 48, &d, 16);
  }
  std::uint64_t wide;
  std::memcpy(&wide, key, 8);  // 16 and 64 are multiples of 4: the key's phase is unchanged
  for (; i + 8 <= size; i += 8) {
    std::uint64_t v;
    std::memcpy(&v, data + i, 8);
    v ^= wide;
    std::memcpy(data + i, &v, 8);
  }
  for (; i < size; ++i) data[i] ^= key[i & 7];
}

std::string EncodeFrame(std::uint8_t opcode, std::string const& payload,
                        std::array<std::uint8_t, 4> const* mask) {
  FrameHeader h;
  h.opcode = opcode;
  h.length = payload.size();
  h.masked = mask != nullptr;
  if (mask) h.mask = *mask;
  std::uint8_t head[kMaxHeader];
  std::size_t n = EncodeHeader(h, head);
  std::string out(reinterpret_cast<char const*>(head), n);
  out += payload;
  if (mask) {
    ApplyMask(reinterpret_cast<std::uint8_t*>(out.data()) + n, payload.size(), *mask, 0);
  }
  return out;
}

}  // namespace bai::internal::ws
