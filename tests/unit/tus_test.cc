// SPDX-License-Identifier: Apache-2.0
// tus 1.0 core decisions (server-reference/storage/tus.h): every refusal happens before a byte
// is written, and says what to do.
#include "server-reference/storage/tus.h"

#include "libbai/util/base64.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::storage::tus {
namespace {

using ::testing::HasSubstr;

PatchHeaders Good(std::int64_t offset, std::int64_t length) {
  PatchHeaders h;
  h.tus_resumable = "1.0.0";
  h.content_type = "application/offset+octet-stream";
  h.upload_offset = std::to_string(offset);
  h.content_length = length;
  return h;
}

TEST(TusTest, AcceptsTheNextChunk) {
  auto v = CheckPatch({100, 40}, Good(40, 60));
  ASSERT_TRUE(v.ok()) << v.message;
  EXPECT_EQ(v.offset, 40);
  EXPECT_EQ(v.length, 60);
  EXPECT_TRUE(v.sha256.empty());
  EXPECT_TRUE(CheckPatch({0, 0}, Good(0, 0)).ok()) << "an empty file is one empty chunk";
  auto typed = Good(0, 1);
  typed.content_type = "application/offset+octet-stream; charset=binary";
  EXPECT_TRUE(CheckPatch({1, 0}, typed).ok());
}

TEST(TusTest, RefusesWhatTheProtocolRefuses) {
  struct Case {
    char const* what;
    PatchHeaders h;
    int status;
    char const* problem;
  };
  auto no_version = Good(0, 1);
  no_version.tus_resumable.reset();
  auto old_version = Good(0, 1);
  old_version.tus_resumable = "0.2.2";
  auto json = Good(0, 1);
  json.content_type = "application/json";
  auto no_offset = Good(0, 1);
  no_offset.upload_offset.reset();
  auto bad_offset = Good(0, 1);
  bad_offset.upload_offset = "-1";
  auto text_offset = Good(0, 1);
  text_offset.upload_offset = "10abc";
  auto chunked = Good(0, 1);
  chunked.content_length.reset();
  for (auto const& c : std::vector<Case>{
           {"no version", no_version, 412, "storage/tus-version"},
           {"old version", old_version, 412, "storage/tus-version"},
           {"json", json, 415, "storage/unsupported-media-type"},
           {"no offset", no_offset, 400, "storage/invalid-upload-offset"},
           {"negative offset", bad_offset, 400, "storage/invalid-upload-offset"},
           {"text offset", text_offset, 400, "storage/invalid-upload-offset"},
           {"chunked", chunked, 400, "storage/length-required"},
       }) {
    auto v = CheckPatch({10, 0}, c.h);
    EXPECT_EQ(v.status, c.status) << c.what;
    EXPECT_EQ(v.problem, c.problem) << c.what;
  }
}

TEST(TusTest, OffsetsAndSizesAreEnforced) {
  auto behind = CheckPatch({100, 50}, Good(40, 10));
  EXPECT_EQ(behind.status, 409);
  EXPECT_THAT(behind.message, HasSubstr("has 50 bytes"));
  EXPECT_EQ(CheckPatch({100, 50}, Good(60, 10)).status, 409) << "ahead of the upload";
  auto past = CheckPatch({100, 50}, Good(50, 51));
  EXPECT_EQ(past.status, 413);
  EXPECT_THAT(past.message, HasSubstr("100 bytes"));
  EXPECT_TRUE(CheckPatch({100, 50}, Good(50, 50)).ok()) << "exactly to the end";
  EXPECT_EQ(CheckPatch({100, 100}, Good(100, 1)).status, 413) << "a complete upload takes no more";
}

TEST(TusTest, TheSdksChunkChecksumIsWhatTheProxyChecks) {
  // FIPS 180-2's "abc" vector, in Base64.
  EXPECT_EQ(ChunkChecksum("abc"), "sha256 ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  auto h = Good(0, 3);
  h.upload_checksum = ChunkChecksum("abc");
  auto v = CheckPatch({3, 0}, h);
  ASSERT_TRUE(v.ok()) << v.message;
  EXPECT_TRUE(CheckChunkDigest(v, Sha256("abc")).ok());
  EXPECT_EQ(CheckChunkDigest(v, Sha256("abd")).status, 460);
}

TEST(TusTest, ChecksumsAreSha256AndCompared) {
  std::string digest(32, '\x5a');
  auto h = Good(0, 3);
  h.upload_checksum = "sha256 " + internal::Base64Encode(digest);
  auto v = CheckPatch({3, 0}, h);
  ASSERT_TRUE(v.ok()) << v.message;
  EXPECT_EQ(v.sha256, digest);
  EXPECT_TRUE(CheckChunkDigest(v, digest).ok());
  auto wrong = CheckChunkDigest(v, std::string(32, '\0'));
  EXPECT_EQ(wrong.status, 460);
  EXPECT_EQ(wrong.problem, "storage/checksum-mismatch");
  h.upload_checksum = "md5 " + internal::Base64Encode(std::string(16, 'x'));
  EXPECT_EQ(CheckPatch({3, 0}, h).problem, "storage/unsupported-checksum");
  h.upload_checksum = "sha256 not-base64!";
  EXPECT_EQ(CheckPatch({3, 0}, h).problem, "storage/invalid-checksum");
  h.upload_checksum = "sha256";
  EXPECT_EQ(CheckPatch({3, 0}, h).problem, "storage/invalid-checksum");
  // No checksum asked: any digest is fine.
  EXPECT_TRUE(CheckChunkDigest(CheckPatch({3, 0}, Good(0, 3)), "whatever").ok());
}

TEST(TusTest, ConcatenationHeadersAreReadStrictly) {
  auto partial = ParseConcat("partial");
  ASSERT_TRUE(partial);
  EXPECT_FALSE(partial->final);
  auto final = ParseConcat(
      "final;http://s:6021/upload?token=a.b.c&part=0 /storage/k?part=1&token=x ?token=y&part=2");
  ASSERT_TRUE(final);
  EXPECT_TRUE(final->final);
  EXPECT_EQ(final->parts, (std::vector<int>{0, 1, 2}));
  for (char const* bad : {"", "partial ", "final;", "final;/upload?token=x",
                          "final;/upload?part=-1", "final;/upload?part=1x", "whole"}) {
    EXPECT_FALSE(ParseConcat(bad)) << bad;
  }
}

TEST(TusTest, PartsFollowEachOtherAndMakeTheFileWholeInOrder) {
  std::vector<Part> parts;
  auto first = PlanPart(30, 0, parts, "12");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.offset, 0);
  parts.push_back({0, 12, 0});
  auto second = PlanPart(30, 0, parts, "18");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.offset, 12);
  parts.push_back({12, 18, 0});
  EXPECT_EQ(PlanPart(30, 0, parts, "1").status, 413);
  EXPECT_EQ(PlanPart(30, 0, {}, "0").status, 400);
  EXPECT_EQ(PlanPart(30, 0, {}, "-3").status, 400);
  EXPECT_EQ(PlanPart(30, 0, {}, std::nullopt).status, 400);
  EXPECT_EQ(PlanPart(30, 7, {}, "5").status, 409) << "bytes were sent whole";
  EXPECT_EQ(CheckFinal(30, parts, {0, 1}).status, 409) << "not yet whole";
  parts[0].received = 12;
  parts[1].received = 18;
  EXPECT_EQ(CheckFinal(30, parts, {1, 0}).status, 400);
  EXPECT_EQ(CheckFinal(30, parts, {0}).status, 400);
  EXPECT_EQ(CheckFinal(30, parts, {0, 1, 1}).status, 400);
  EXPECT_EQ(CheckFinal(31, parts, {0, 1}).status, 400) << "short of the size";
  EXPECT_TRUE(CheckFinal(30, parts, {0, 1}).ok());
}

}  // namespace
}  // namespace bai::storage::tus
