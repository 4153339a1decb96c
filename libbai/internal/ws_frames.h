// SPDX-License-Identifier: Apache-2.0
#pragma once
// WebSocket frames (RFC 6455 §5) for the data phase of tunnels: the pure part, no I/O. A block
// at a time, where libwebsockets 4.1 parses received frames a byte at a time (DECISIONS.md,
// "WebSocket"): a header is parsed once and the payload is passed on as it stands. Unit-tested
// and fuzzed (tests/unit/ws_frames_test.cc, tests/fuzz/ws_frames_fuzz.cc); block_websocket.*
// runs it on an upgraded socket.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace bai::internal::ws {

enum Opcode : std::uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

struct FrameHeader {
  bool fin = true;
  std::uint8_t opcode = kBinary;
  bool masked = false;
  std::uint64_t length = 0;
  std::array<std::uint8_t, 4> mask{};
};

/// The longest header: 2 bytes, 8 of extended length, 4 of mask.
inline constexpr std::size_t kMaxHeader = 14;

/// Writes the header of a frame into `out` (kMaxHeader bytes of room); returns its size. A
/// client's frames are masked (`mask` set), a server's are not.
std::size_t EncodeHeader(FrameHeader const& header, std::uint8_t* out);

enum class ParseResult { kOk, kIncomplete, kMalformed };

/// Reads one header from the front of `data`. kOk sets `header` and `size` (the header's
/// bytes); kIncomplete: more bytes are needed; kMalformed: a reserved bit or opcode, a control
/// frame longer than 125 bytes or fragmented, a 64-bit length with its top bit set, a length
/// not in its shortest form, or masking that the role forbids (`from_server`: a server's frames
/// are never masked; a client's always are).
ParseResult ParseHeader(std::uint8_t const* data, std::size_t size, bool from_server,
                        FrameHeader& header, std::size_t& header_size);

/// XORs `data` with `mask`, the payload's first byte being byte `offset` of the frame's payload
/// (so a payload may be unmasked in pieces).
void ApplyMask(std::uint8_t* data, std::size_t size, std::array<std::uint8_t, 4> const& mask,
               std::uint64_t offset);

/// A whole frame: header and (masked when `mask` is given) payload.
std::string EncodeFrame(std::uint8_t opcode, std::string const& payload,
                        std::array<std::uint8_t, 4> const* mask);

}  // namespace bai::internal::ws
