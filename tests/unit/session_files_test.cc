// SPDX-License-Identifier: Apache-2.0
// The session file wire formats (protocol/session_files.h): listings, tar archives and
// multipart bodies, encoded and decoded by the one codec.
#include "bai/protocol/session_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace bai::protocol {
namespace {

using ::testing::HasSubstr;

TEST(SessionFilesTest, ListingTravelsAsAJsonString) {
  SessionFileList list;
  list.files = {{"a.txt", "-rw-r--r--", 12, 1.5, 2.5, 3.5}, {"dir", "drwxr-xr-x", 4096, 0, 0, 0}};
  list.abspath = "/home/work";
  std::string body = EncodeSessionFileList(list);
  // 24.09 sends `files` as a string holding JSON; official clients json.loads() it.
  EXPECT_THAT(body, HasSubstr(R"("files":"[{)"));
  auto back = DecodeSessionFileList(body);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->files.size(), 2u);
  EXPECT_EQ(back->files[0].filename, "a.txt");
  EXPECT_EQ(back->files[0].size, 12);
  EXPECT_DOUBLE_EQ(back->files[0].mtime, 2.5);
  EXPECT_EQ(back->files[1].mode, "drwxr-xr-x");
  EXPECT_EQ(back->abspath, "/home/work");
  EXPECT_FALSE(DecodeSessionFileList(R"({"files": "not json"})").ok());
  EXPECT_FALSE(DecodeSessionFileList("[]").ok());
}

TEST(SessionFilesTest, ModesReadLikeLs) {
  EXPECT_EQ(FileModeString(0100644), "-rw-r--r--");
  EXPECT_EQ(FileModeString(0040755), "drwxr-xr-x");
  EXPECT_EQ(FileModeString(0120777), "lrwxrwxrwx");
  EXPECT_EQ(FileModeString(0104750), "-rwsr-x---");
  EXPECT_EQ(FileModeString(0041777), "drwxrwxrwt");
  EXPECT_EQ(FileModeString(0102644), "-rw-r-Sr--");
}

std::string Archive(std::vector<TarMember> const& members) {
  std::string out;
  for (auto const& m : members) {
    auto size = static_cast<std::int64_t>(m.data.size());
    out += TarHeader(m, size) + m.data + TarPadding(size);
  }
  return out + TarEnd();
}

TEST(SessionFilesTest, TarRoundTripsEveryKindAndSize) {
  std::string long_name = "d/" + std::string(150, 'n') + "/file";
  std::vector<TarMember> in = {
      {"d", TarType::kDirectory, 0755, 1700000000, "", ""},
      {"d/empty", TarType::kFile, 0600, 1700000001, "", ""},
      {"d/one", TarType::kFile, 0644, 1, "", "x"},
      {"d/block", TarType::kFile, 0644, 1, "", std::string(512, 'b')},
      {"d/block+1", TarType::kFile, 0755, 1, "", std::string(513, '\xff')},
      {"d/link", TarType::kSymlink, 0777, 1, "../elsewhere", ""},
      {long_name, TarType::kFile, 0644, 1, "", "long"},
      {"d/longlink", TarType::kSymlink, 0777, 1, std::string(200, 't'), ""},
  };
  std::string a = Archive(in);
  EXPECT_EQ(a.size() % 512, 0u);
  auto out = ReadTar(a);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].name);
    EXPECT_EQ((*out)[i].name, in[i].name);
    EXPECT_EQ((*out)[i].type, in[i].type);
    EXPECT_EQ((*out)[i].mode, in[i].mode);
    EXPECT_EQ((*out)[i].mtime, in[i].mtime);
    EXPECT_EQ((*out)[i].link, in[i].link);
    EXPECT_EQ((*out)[i].data, in[i].data);
  }
}

TEST(SessionFilesTest, DamagedArchivesAreRefused) {
  std::string a = Archive({{"f", TarType::kFile, 0644, 1, "", std::string(1000, 'z')}});
  std::string bad = a;
  bad[10] ^= 1;  // inside the header: the checksum no longer matches
  EXPECT_FALSE(ReadTar(bad).ok());
  EXPECT_FALSE(ReadTar(a.substr(0, 700)).ok());  // cut inside the data
  auto empty = ReadTar("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(SessionFilesTest, MultipartRoundTripsNamesAndBytes) {
  std::vector<MultipartPart> parts(3);
  parts[0].name = "src";
  parts[0].filename = "dir/a \"quoted\" name.txt";
  parts[0].body = std::string("bytes\r\n--not-the-boundary\0end", 29);
  parts[1].name = "src";
  parts[1].filename = "résumé/ünïcode.txt";
  parts[1].body = "";
  parts[2].content_type = "application/x-tar";
  parts[2].headers = {{"content-encoding", "identity"}};
  parts[2].body = "tar";
  std::string body = EncodeMultipart(parts, "XyZ");
  auto back = DecodeMultipart("multipart/form-data; boundary=XyZ", body);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].name, "src");
  EXPECT_EQ((*back)[0].filename, "dir/a \"quoted\" name.txt");
  EXPECT_EQ((*back)[0].body, parts[0].body);
  EXPECT_EQ((*back)[1].filename, "résumé/ünïcode.txt");
  EXPECT_EQ((*back)[1].body, "");
  EXPECT_EQ((*back)[2].content_type, "application/x-tar");
  EXPECT_EQ((*back)[2].body, "tar");
}

TEST(SessionFilesTest, MultipartAsOtherClientsWriteIt) {
  // aiohttp (the official client) quotes the boundary and adds filename* for the real name.
  std::string body =
      "--abc\r\nContent-Type: application/octet-stream\r\n"
      "Content-Disposition: form-data; name=\"src\"; filename=\"x%20y.txt\"; "
      "filename*=utf-8''x%20y.txt\r\n\r\nhello\r\n--abc--\r\n";
  auto parts = DecodeMultipart("multipart/form-data; boundary=\"abc\"", body);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].filename, "x y.txt");
  EXPECT_EQ((*parts)[0].body, "hello");
  // Without filename*, the percent-encoded filename alone (a path in a subdirectory).
  auto sub = DecodeMultipart("multipart/form-data; boundary=abc",
                             "--abc\r\nContent-Disposition: form-data; name=\"src\"; "
                             "filename=\"up%2Fdata.bin\"\r\n\r\nhi\r\n--abc--\r\n");
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ((*sub)[0].filename, "up/data.bin");
}

TEST(SessionFilesTest, MalformedMultipartIsAClearError) {
  EXPECT_THAT(DecodeMultipart("application/json", "{}").status().message(), HasSubstr("multipart"));
  EXPECT_FALSE(DecodeMultipart("multipart/form-data", "--x\r\n").ok());  // no boundary
  EXPECT_FALSE(DecodeMultipart("multipart/form-data; boundary=x", "--x\r\nA: b\r\n\r\nbody").ok());
  EXPECT_FALSE(DecodeMultipart("multipart/form-data; boundary=x", "nothing").ok());
}

}  // namespace
}  // namespace bai::protocol
