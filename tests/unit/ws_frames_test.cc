// SPDX-License-Identifier: Apache-2.0
// WebSocket frames for a tunnel's block reader and writer (libbai/internal/ws_frames.h).
#include "libbai/internal/ws_frames.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace bai::internal::ws {
namespace {

FrameHeader Parse(std::string const& bytes, bool from_server, ParseResult want = ParseResult::kOk,
                  std::size_t* size = nullptr) {
  FrameHeader h;
  std::size_t n = 0;
  auto r = ParseHeader(reinterpret_cast<std::uint8_t const*>(bytes.data()), bytes.size(),
                       from_server, h, n);
  EXPECT_EQ(r, want);
  if (size) *size = n;
  return h;
}

TEST(WsFramesTest, EveryLengthFormRoundTrips) {
  for (std::uint64_t length : {0ULL, 1ULL, 125ULL, 126ULL, 65535ULL, 65536ULL, 1ULL << 33}) {
    for (bool masked : {false, true}) {
      FrameHeader h;
      h.opcode = kBinary;
      h.length = length;
      h.masked = masked;
      h.mask = {1, 2, 3, 4};
      std::uint8_t out[kMaxHeader];
      std::size_t n = EncodeHeader(h, out);
      EXPECT_EQ(n, (length < 126 ? 2u : length <= 65535 ? 4u : 10u) + (masked ? 4u : 0u));
      std::size_t size = 0;
      auto back =
          Parse(std::string(reinterpret_cast<char*>(out), n), !masked, ParseResult::kOk, &size);
      EXPECT_EQ(size, n);
      EXPECT_EQ(back.length, length);
      EXPECT_EQ(back.masked, masked);
      if (masked) {
        EXPECT_EQ(back.mask, h.mask);
      }
      // Every shorter prefix asks for more.
      for (std::size_t cut = 0; cut < n; ++cut) {
        Parse(std::string(reinterpret_cast<char*>(out), cut), !masked, ParseResult::kIncomplete);
      }
    }
  }
}

TEST(WsFramesTest, WhatRfc6455ForbidsIsRefused) {
  auto bad = [](std::string bytes, bool from_server) {
    Parse(bytes, from_server, ParseResult::kMalformed);
  };
  bad(std::string("\xC2\x00", 2), true);                       // RSV1 without an extension
  bad(std::string("\x83\x00", 2), true);                       // reserved opcode 3
  bad(std::string("\x82\x80\0\0\0\0", 6), true);               // a server's frame masked
  bad(std::string("\x82\x00", 2), false);                      // a client's frame unmasked
  bad(std::string("\x89\x7E\x00\x80", 4), true);               // a ping longer than 125
  bad(std::string("\x09\x00", 2), true);                       // a fragmented ping
  bad(std::string("\x82\x7E\x00\x10", 4), true);               // 16 in the 16-bit form
  bad(std::string("\x82\x7F\0\0\0\0\0\0\xFF\xFF", 10), true);  // 65535 in the 64-bit form
  bad(std::string("\x82\x7F\x80\0\0\0\0\0\0\0", 10), true);    // the 64th bit set
}

TEST(WsFramesTest, AMaskAppliedInPiecesEqualsOneApplied) {
  std::array<std::uint8_t, 4> mask{0x12, 0x34, 0x56, 0x78};
  std::string payload;
  for (int i = 0; i < 1000; ++i) payload.push_back(static_cast<char>(i * 7));
  std::string whole = payload;
  ApplyMask(reinterpret_cast<std::uint8_t*>(whole.data()), whole.size(), mask, 0);
  // Pieces shorter than, across and longer than the 64-byte vector steps, each at its offset.
  for (std::size_t piece : {1, 13, 70, 333}) {
    std::string pieces = payload;
    for (std::size_t at = 0; at < pieces.size(); at += piece) {
      std::size_t n = std::min<std::size_t>(piece, pieces.size() - at);
      ApplyMask(reinterpret_cast<std::uint8_t*>(pieces.data()) + at, n, mask, at);
    }
    EXPECT_EQ(whole, pieces) << "pieces of " << piece;
  }
  // RFC 6455 §5.3: byte i XOR mask[i % 4].
  for (std::size_t i = 0; i < payload.size(); ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(whole[i]),
              static_cast<std::uint8_t>(payload[i]) ^ mask[i % 4]);
  }
  // RFC 6455 §5.7's example: a masked "Hello" from a client.
  std::array<std::uint8_t, 4> key{0x37, 0xfa, 0x21, 0x3d};
  EXPECT_EQ(EncodeFrame(kText, "Hello", &key),
            std::string("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
  EXPECT_EQ(EncodeFrame(kText, "Hello", nullptr), std::string("\x81\x05Hello", 7));
}

}  // namespace
}  // namespace bai::internal::ws
