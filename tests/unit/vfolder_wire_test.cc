// SPDX-License-Identifier: Apache-2.0
// Folder names, permissions and the other vfolder enums (protocol/vfolder_wire.h).
#include "bai/protocol/vfolder_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace bai::protocol {
namespace {

using ::testing::HasSubstr;

TEST(VFolderWireTest, NamesFollowTheRule) {
  for (std::string ok :
       std::vector<std::string>{"data", "my-data", "my_data.v2", "a", "A1", ".local", ".config",
                                "x.y-z_w", std::string(64, 'n')}) {
    EXPECT_TRUE(CheckVFolderName(ok).ok()) << ok << ": " << CheckVFolderName(ok).message();
  }
  struct Bad {
    std::string name;
    std::string why;
  };
  for (auto const& [name, why] : std::vector<Bad>{
           {"", "empty"},
           {std::string(65, 'n'), "longer than 64"},
           {"has space", "only ASCII"},
           {"ünï", "only ASCII"},
           {"a/b", "only ASCII"},
           {"..", "only one '.'"},
           {"..hidden", "only one '.'"},
           {".", "nothing after"},
           {"_x", "may not start"},
           {"-x", "may not start"},
           {"x.", "may not end"},
           {"x_", "may not end"},
           {"x-", "may not end"},
           {"a..b", "in a row"},
           {"a-_b", "in a row"},
           {".ssh", "reserved"},
           {".jupyter", "reserved"},
           {".terminfo", "reserved"},
           {".tmux.conf", "reserved"},
           {".bashrc", "rc or profile"},
           {".zshrc", "rc or profile"},
           {".bash_profile", "rc or profile"},
       }) {
    auto s = CheckVFolderName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(s.message(), HasSubstr(why)) << name;
  }
  // Dot-folders belong to users only.
  EXPECT_TRUE(CheckVFolderName("shared").ok());
  EXPECT_THAT(CheckVFolderName(".local", true).message(), HasSubstr("project"));
}

TEST(VFolderWireTest, PermissionsOrderAndMountRule) {
  for (auto p : {VFolderPermission::kReadOnly, VFolderPermission::kReadWrite,
                 VFolderPermission::kReadWriteDelete}) {
    EXPECT_EQ(ParseVFolderPermission(ToString(p)), p);
  }
  EXPECT_FALSE(ParseVFolderPermission("rwx"));
  EXPECT_FALSE(CanWrite(VFolderPermission::kReadOnly));
  EXPECT_TRUE(CanWrite(VFolderPermission::kReadWrite));
  EXPECT_FALSE(CanDelete(VFolderPermission::kReadWrite));
  EXPECT_TRUE(CanDelete(VFolderPermission::kReadWriteDelete));
  using P = VFolderPermission;
  EXPECT_EQ(MountPermission(std::nullopt, P::kReadWrite), P::kReadWrite);
  EXPECT_EQ(MountPermission(P::kReadOnly, P::kReadWriteDelete), P::kReadOnly);
  EXPECT_EQ(MountPermission(P::kReadWrite, P::kReadOnly), std::nullopt)
      << "never more than granted";
}

TEST(VFolderWireTest, EnumsRoundTrip) {
  for (auto m : {VFolderUsageMode::kGeneral, VFolderUsageMode::kModel, VFolderUsageMode::kData}) {
    EXPECT_EQ(ParseVFolderUsageMode(ToString(m)), m);
  }
  EXPECT_EQ(ParseVFolderOwnership("group"), VFolderOwnership::kGroup);
  EXPECT_EQ(ToString(VFolderStatus::kDeletePending), "delete-pending");
  EXPECT_EQ(ParseVFolderStatus("delete-pending"), VFolderStatus::kDeletePending);
  EXPECT_FALSE(ParseVFolderStatus("trash"));
}

TEST(VFolderWireTest, InvitationsDecode) {
  auto list = DecodeVFolderInvitations(
      R"({"invitations": [{"id": "i1", "inviter": "a@x", "invitee": "b@x", "perm": "ro",
          "state": "pending", "created_at": "2026-01-01T00:00:00Z", "modified_at": "x",
          "vfolder_id": "f1", "vfolder_name": "data"}]})");
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].permission, "ro");
  EXPECT_EQ((*list)[0].vfolder_name, "data");
  EXPECT_TRUE(DecodeVFolderInvitations(R"({"invitations": []})")->empty());
  EXPECT_FALSE(DecodeVFolderInvitations(R"({"invitations": [{"perm": "ro"}]})").ok())
      << "an invitation has an id";
  EXPECT_FALSE(DecodeVFolderInvitations(R"({"items": []})").ok());
  EXPECT_FALSE(DecodeVFolderInvitations("[").ok());
}

// Conformance: 24.09 answers a listing with `items` and a legacy `files` string whose times are
// seconds since the epoch and whose mode is ls-style; 22.03 clients read only that string
// (`datetime.fromtimestamp(file['mtime'])`), and broke on the ISO times we sent there.
TEST(VFolderWireTest, ListingCarriesTheLegacyFilesAs2409Does) {
  std::vector<VFolderFile> files = {
      {"a.bin", "FILE", 300000, "644", "2024-03-15T12:34:56.250000+00:00",
       "2024-03-15T12:34:57.500000+00:00"},
      {"dir", "DIRECTORY", 4096, "755", "2024-03-15T12:00:00+00:00", "2024-03-15T12:00:00Z"},
  };
  auto j = nlohmann::json::parse(EncodeVFolderListing(files));
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["items"][0]["modified"], "2024-03-15T12:34:57.500000+00:00");
  ASSERT_TRUE(j["files"].is_string());
  auto legacy = nlohmann::json::parse(j["files"].get<std::string>());
  ASSERT_EQ(legacy.size(), 2u);
  EXPECT_EQ(legacy[0]["filename"], "a.bin");
  EXPECT_EQ(legacy[0]["size"], 300000);
  EXPECT_EQ(legacy[0]["mode"], "-rw-r--r--");
  ASSERT_TRUE(legacy[0]["mtime"].is_number());
  EXPECT_DOUBLE_EQ(legacy[0]["mtime"].get<double>(), 1710506097.5);
  EXPECT_DOUBLE_EQ(legacy[0]["ctime"].get<double>(), 1710506096.25);
  EXPECT_EQ(legacy[0]["atime"], 0);
  EXPECT_EQ(legacy[1]["mode"], "drwxr-xr-x");
  EXPECT_DOUBLE_EQ(legacy[1]["mtime"].get<double>(), 1710504000.0);
  // And the SDK reads the answer back from `items`.
  auto back = DecodeVFolderListing(EncodeVFolderListing(files));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[1].type, "DIRECTORY");
}

}  // namespace
}  // namespace bai::protocol
