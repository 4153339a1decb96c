// SPDX-License-Identifier: Apache-2.0
// Folder names, permissions and the other vfolder enums (protocol/vfolder_wire.h).
#include "bai/protocol/vfolder_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
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

// Issue 21 (one codec for vfolders): the four answers a folder appears in carry 24.09's fields
// (PROTOCOL.md §7), legacy names included, and each reads back into the same struct.
std::set<std::string> Keys(std::string const& text) {
  std::set<std::string> out;
  auto const object = nlohmann::json::parse(text);
  for (auto const& [k, v] : object.items()) out.insert(k);
  return out;
}

VFolderInfo Sample() {
  VFolderInfo f;
  f.id = "0123456789abcdef0123456789abcdef";
  f.name = "data";
  f.host = "local:volume1";
  f.quota_scope_id = "user:u1";
  f.status = "ready";
  f.usage_mode = "model";
  f.permission = "wd";
  f.ownership_type = "user";
  f.user = "u1";
  f.user_email = "a@x";
  f.creator = "a@x";
  f.created_at = "2026-11-25T10:00:00Z";
  f.is_owner = true;
  f.cloneable = true;
  f.num_files = 3;
  f.used_bytes = 1234;
  return f;
}

TEST(VFolderWireTest, EachAnswerHasThe2409Fields) {
  auto f = Sample();
  using S = std::set<std::string>;
  EXPECT_EQ(
      Keys(EncodeVFolderInfo(f, VFolderAnswer::kCreated)),
      (S{"id", "name", "quota_scope_id", "host", "usage_mode", "permission", "max_size",
         "max_size_bytes", "creator", "ownership_type", "user", "group", "cloneable", "status"}));
  EXPECT_EQ(Keys(EncodeVFolderInfo(f, VFolderAnswer::kListed)),
            (
                S{"name",           "id",         "quota_scope_id", "host",       "status",
                  "usage_mode",     "created_at", "is_owner",       "permission", "user",
                  "group",          "creator",    "user_email",     "group_name", "ownership_type",
                  "type",           "cloneable",  "max_files",      "max_size",   "cur_size",
                  "max_size_bytes", "num_files",  "used_bytes"}));  // bai adds the last three
  EXPECT_EQ(
      Keys(EncodeVFolderInfo(f, VFolderAnswer::kInfo)),
      (S{"name",      "id",         "host",          "quota_scope_id", "status",     "numFiles",
         "num_files", "used_bytes", "created",       "created_at",     "last_used",  "user",
         "group",     "type",       "is_owner",      "permission",     "usage_mode", "cloneable",
         "max_size",  "cur_size",   "max_size_bytes"}));
  EXPECT_EQ(Keys(EncodeVFolderInfo(f, VFolderAnswer::kCloned, "task-1")),
            (S{"id", "name", "host", "usage_mode", "permission", "creator", "ownership_type",
               "user", "group", "cloneable", "bgtask_id"}));
  // Absent owners and times are null, as 24.09 writes them.
  auto info = nlohmann::json::parse(EncodeVFolderInfo(f, VFolderAnswer::kInfo));
  EXPECT_TRUE(info["group"].is_null());
  EXPECT_TRUE(info["last_used"].is_null());
  EXPECT_EQ(info["numFiles"], 3);
  EXPECT_EQ(info["cur_size"], 1234);
  // A folder's quota: 23.09's MiB, rounded up, and bai's exact bytes; read back exact, or from
  // the MiB alone.
  f.max_size = 1536 * 1024;
  auto quoted = nlohmann::json::parse(EncodeVFolderInfo(f, VFolderAnswer::kInfo));
  EXPECT_EQ(quoted["max_size"], 2);
  EXPECT_EQ(quoted["max_size_bytes"], 1536 * 1024);
  EXPECT_EQ(DecodeVFolderInfo(quoted.dump())->max_size, 1536 * 1024);
  EXPECT_EQ(DecodeVFolderInfo(R"({"id": "i", "name": "n", "max_size": 3})")->max_size, 3 << 20);
}

TEST(VFolderWireTest, AnswersReadBackIntoTheSameFolder) {
  auto f = Sample();
  auto info = DecodeVFolderInfo(EncodeVFolderInfo(f, VFolderAnswer::kInfo));
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->ownership_type, "user") << "read from the legacy `type`";
  EXPECT_EQ(info->num_files, 3);
  EXPECT_EQ(info->used_bytes, 1234);
  EXPECT_EQ(info->created_at, f.created_at);
  EXPECT_TRUE(info->is_owner);
  EXPECT_EQ(info->group, "") << "null reads as absent";
  auto list = DecodeVFolderList(EncodeVFolderList({f, f}));
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].user_email, "a@x");
  EXPECT_EQ((*list)[1].permission, "wd");
  auto clone = DecodeVFolderCloneResult(EncodeVFolderInfo(f, VFolderAnswer::kCloned, "task-1"));
  ASSERT_TRUE(clone.ok()) << clone.status().message();
  EXPECT_EQ(clone->task_id, "task-1");
  EXPECT_EQ(clone->id, f.id);
  EXPECT_FALSE(DecodeVFolderCloneResult(EncodeVFolderInfo(f, VFolderAnswer::kCreated)).ok())
      << "a clone answer names its task";
  // Older answers: `numFiles` and `created` alone.
  auto legacy = DecodeVFolderInfo(R"({"id": "i", "name": "n", "numFiles": 7, "created": "t"})");
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->num_files, 7);
  EXPECT_EQ(legacy->created_at, "t");
}

TEST(VFolderWireTest, CreateAndCloneRequestsTakeTheAliasesAndRefuseUnmanagedPaths) {
  VFolderCreateRequest c{"data", "local:volume1", "model", "ro", "proj", true};
  auto back = DecodeVFolderCreateRequest(EncodeVFolderCreateRequest(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->name, "data");
  EXPECT_EQ(back->host, "local:volume1");
  EXPECT_EQ(back->usage_mode, "model");
  EXPECT_EQ(back->permission, "ro");
  EXPECT_EQ(back->group, "proj");
  EXPECT_TRUE(back->cloneable);
  // What 22.03's client sends: unmanaged_path null (absent), camelCase names, "true".
  auto old = DecodeVFolderCreateRequest(
      R"({"name": "d", "folder_host": "local:volume1", "usageMode": "data", "groupId": "g",
          "unmanaged_path": null, "cloneable": "true"})");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->host, "local:volume1");
  EXPECT_EQ(old->usage_mode, "data");
  EXPECT_EQ(old->group, "g");
  EXPECT_TRUE(old->cloneable);
  auto unmanaged = DecodeVFolderCreateRequest(R"({"name": "d", "unmanaged_path": "/srv/x"})");
  ASSERT_FALSE(unmanaged.ok());
  EXPECT_THAT(unmanaged.status().error_info().data_json, HasSubstr("unmanaged_path"));
  EXPECT_FALSE(DecodeVFolderCreateRequest(R"({"host": "local:volume1"})").ok()) << "no name";
  EXPECT_FALSE(DecodeVFolderCreateRequest(R"({"name": "d", "cloneable": "maybe"})").ok());
  // The folder's quota, as 23.09 takes it: a size or a number of bytes; null is none.
  EXPECT_EQ(DecodeVFolderCreateRequest(R"({"name": "d", "quota": "10m"})")->quota, 10 << 20);
  EXPECT_EQ(DecodeVFolderCreateRequest(R"({"name": "d", "quota": 4096})")->quota, 4096);
  EXPECT_EQ(DecodeVFolderCreateRequest(R"({"name": "d", "quota": null})")->quota, 0);
  for (auto const* bad : {R"({"name": "d", "quota": "lots"})", R"({"name": "d", "quota": -1})",
                          R"({"name": "d", "quota": true})"}) {
    auto refused = DecodeVFolderCreateRequest(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().error_info().data_json, HasSubstr("quota"));
  }
  VFolderCreateRequest q;
  q.name = "q";
  q.quota = 5000;
  EXPECT_EQ(DecodeVFolderCreateRequest(EncodeVFolderCreateRequest(q))->quota, 5000);

  VFolderCloneRequest k{"copy", "local:volume1", "", "rw", false};
  auto kb = DecodeVFolderCloneRequest(EncodeVFolderCloneRequest(k));
  ASSERT_TRUE(kb.ok()) << kb.status().message();
  EXPECT_EQ(kb->target_name, "copy");
  EXPECT_EQ(kb->target_host, "local:volume1");
  auto camel = DecodeVFolderCloneRequest(R"({"targetName": "c2", "targetHost": "h"})");
  ASSERT_TRUE(camel.ok()) << camel.status().message();
  EXPECT_EQ(camel->target_name, "c2");
  EXPECT_EQ(camel->target_host, "h");
  EXPECT_FALSE(DecodeVFolderCloneRequest(R"({"cloneable": true})").ok()) << "no target name";
}

TEST(VFolderWireTest, InvitationsAndTicketsRoundTrip) {
  VFolderInvitation i;
  i.id = "i1";
  i.vfolder_id = "f1";
  i.vfolder_name = "data";
  i.inviter = "a@x";
  i.invitee = "b@x";
  i.permission = "ro";
  i.state = "pending";
  i.created_at = "t1";
  i.modified_at = "t2";
  auto text = EncodeVFolderInvitations({i});
  EXPECT_EQ(nlohmann::json::parse(text)["invitations"][0]["perm"], "ro") << "24.09's key";
  auto back = DecodeVFolderInvitations(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].modified_at, "t2");
  auto ticket =
      DecodeTransferTicket(EncodeTransferTicket({"tok", "http://s/upload", std::nullopt}));
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(ticket->Target(), "http://s/upload?token=tok");
  EXPECT_FALSE(ticket->console_url) << "only the webserver adds a relay path";
  EXPECT_EQ(nlohmann::json::parse(EncodeTransferTicket(*ticket)).count("console_url"), 0u);
  // As bai-webserver passes it on to the console, and the console reads it back.
  ticket->console_url = "/storage/abc";
  auto relayed = DecodeTransferTicket(EncodeTransferTicket(*ticket));
  ASSERT_TRUE(relayed.ok());
  EXPECT_EQ(relayed->console_url, "/storage/abc");
  EXPECT_EQ(relayed->url, "http://s/upload");
}

// The body each request is sent as: what 23.09 and 24.09 read (their key names).
template <class R>
nlohmann::json Sent(R const& request) {
  return nlohmann::json::parse(EncodeVFolderRequest(request));
}
// The fields a refusal names (its problem's data).
template <class R>
std::string Refused(std::string_view body) {
  auto r = DecodeVFolderRequest<R>(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? std::string() : r.status().error_info().data_json;
}

TEST(VFolderWireTest, FolderRequestsAreSentAsBackendAiReadsThemAndReadBack) {
  EXPECT_EQ(Sent(VFolderRenameRequest{"b"}), nlohmann::json({{"new_name", "b"}}));
  EXPECT_EQ(Sent(VFolderMoveFileRequest{"a", "b"}), nlohmann::json({{"src", "a"}, {"dst", "b"}}));
  EXPECT_EQ(Sent(VFolderRenameFileRequest{"d/a", "b"}),
            nlohmann::json({{"target_path", "d/a"}, {"new_name", "b"}}));
  EXPECT_EQ(Sent(VFolderQuotaRequest{"local:v", "f1", 1024, 7}),
            nlohmann::json::parse(
                R"({"folder_host": "local:v", "id": "f1",
                    "input": {"size_bytes": 1024, "max_files": 7}})"));
  EXPECT_EQ(Sent(VFolderInviteRequest{{"a@x"}, "ro"}),
            nlohmann::json({{"perm", "ro"}, {"emails", {"a@x"}}}))
      << "invite says perm";
  EXPECT_EQ(Sent(VFolderShareRequest{{"a@x"}, "ro"}),
            nlohmann::json({{"permission", "ro"}, {"emails", {"a@x"}}}))
      << "share says permission";
  EXPECT_EQ(Sent(VFolderInvitationRequest{"i1"}), nlohmann::json({{"inv_id", "i1"}}));
  EXPECT_EQ(Sent(VFolderInvitationUpdateRequest{"wd"}), nlohmann::json({{"perm", "wd"}}));
  EXPECT_EQ(Sent(VFolderByIdRequest{"f1"}), nlohmann::json({{"vfolder_id", "f1"}}));
  EXPECT_EQ(Sent(VFolderLeaveRequest{}), nlohmann::json::object()) << "the caller leaves";
  EXPECT_EQ(Sent(VFolderLeaveRequest{"u1"}), nlohmann::json({{"shared_user_uuid", "u1"}}));
  // One directory as a string (every release), several as a list (23.09 on).
  EXPECT_EQ(Sent(VFolderMkdirRequest{{"a"}, true, false})["path"], "a");
  EXPECT_EQ(Sent(VFolderMkdirRequest{{"a", "b"}, false, true})["path"], nlohmann::json({"a", "b"}));
  // restart is bai's: absent unless asked (other servers refuse the key).
  EXPECT_FALSE(Sent(VFolderUploadRequest{"f", 10, std::nullopt}).contains("restart"));
  EXPECT_EQ(Sent(VFolderUploadRequest{"f", 10, true})["restart"], true);

  auto mkdir = DecodeVFolderRequest<VFolderMkdirRequest>(
      EncodeVFolderRequest(VFolderMkdirRequest{{"a", "b"}, false, true}));
  ASSERT_TRUE(mkdir.ok()) << mkdir.status().message();
  EXPECT_EQ(mkdir->paths, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(mkdir->parents);
  EXPECT_TRUE(mkdir->exist_ok);
  auto del = DecodeVFolderRequest<VFolderDeleteFilesRequest>(
      EncodeVFolderRequest(VFolderDeleteFilesRequest{{"x", "y"}, true}));
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->files.size(), 2u);
  EXPECT_TRUE(del->recursive);
  auto quota = DecodeVFolderRequest<VFolderQuotaRequest>(
      EncodeVFolderRequest(VFolderQuotaRequest{"local:v", "f1", 1024, 7}));
  ASSERT_TRUE(quota.ok());
  EXPECT_EQ(quota->size_bytes, 1024);
  EXPECT_EQ(quota->max_files, 7);
  auto upload = DecodeVFolderRequest<VFolderUploadRequest>(
      EncodeVFolderRequest(VFolderUploadRequest{"d/f", 1 << 20, false}));
  ASSERT_TRUE(upload.ok());
  EXPECT_EQ(upload->size, 1 << 20);
  EXPECT_EQ(upload->restart, false);
}

TEST(VFolderWireTest, FolderRequestsTakeTheOtherSpellingsAndNameWhatIsWrong) {
  // The spellings other clients send; booleans and integers as strings (query parameters).
  EXPECT_EQ(DecodeVFolderRequest<VFolderRenameRequest>(R"({"newName": "b"})")->new_name, "b");
  EXPECT_EQ(DecodeVFolderRequest<VFolderDownloadRequest>(R"({"file": "a"})")->path, "a");
  EXPECT_EQ(DecodeVFolderRequest<VFolderByIdRequest>(R"({"vfolderId": "f"})")->vfolder_id, "f");
  EXPECT_EQ(DecodeVFolderRequest<VFolderByIdRequest>(R"({"id": "f"})")->vfolder_id, "f");
  EXPECT_EQ(
      DecodeVFolderRequest<VFolderInvitationRequest>(R"({"invitation_id": "i"})")->invitation_id,
      "i");
  EXPECT_EQ(DecodeVFolderRequest<VFolderLeaveRequest>(R"({"sharedUserUuid": "u"})")->shared_user_id,
            "u");
  auto invite = DecodeVFolderRequest<VFolderInviteRequest>(
      R"({"permission": "ro", "user_ids": ["a@x", "b@x", "a@x"]})");
  ASSERT_TRUE(invite.ok()) << invite.status().message();
  EXPECT_EQ(invite->permission, "ro");
  EXPECT_EQ(invite->emails, (std::vector<std::string>{"a@x", "b@x"})) << "a repeat dropped";
  EXPECT_EQ(DecodeVFolderRequest<VFolderInviteRequest>(R"({"emails": ["a@x"]})")->permission, "rw");
  auto upload =
      DecodeVFolderRequest<VFolderUploadRequest>(R"({"path": "f", "size": "30", "restart": "t"})");
  ASSERT_TRUE(upload.ok()) << upload.status().message();
  EXPECT_EQ(upload->size, 30);
  EXPECT_EQ(upload->restart, true);
  auto mkdir = DecodeVFolderRequest<VFolderMkdirRequest>(R"({"path": "a", "parents": "false"})");
  ASSERT_TRUE(mkdir.ok());
  EXPECT_FALSE(mkdir->parents);
  auto none = DecodeVFolderRequest<VFolderQuotaRequest>(
      R"({"folder_host": "h", "id": "f", "input": {"size_bytes": null}})");
  ASSERT_TRUE(none.ok()) << "a null is no quota";
  EXPECT_EQ(none->size_bytes, 0);

  EXPECT_THAT(Refused<VFolderRenameRequest>("{}"), HasSubstr("new_name"));
  EXPECT_THAT(Refused<VFolderMoveFileRequest>(R"({"src": "a"})"), HasSubstr("dst"));
  EXPECT_THAT(Refused<VFolderRenameFileRequest>(R"({"target_path": "", "new_name": "b"})"),
              HasSubstr("target_path"));
  EXPECT_THAT(Refused<VFolderMkdirRequest>(R"({"path": [1]})"), HasSubstr("path"));
  EXPECT_THAT(Refused<VFolderMkdirRequest>(R"({"path": []})"), HasSubstr("path"));
  EXPECT_THAT(Refused<VFolderDeleteFilesRequest>(R"({"files": "a"})"), HasSubstr("files"));
  EXPECT_THAT(Refused<VFolderUploadRequest>(R"({"path": "f"})"), HasSubstr("size"));
  EXPECT_THAT(Refused<VFolderUploadRequest>(R"({"path": "f", "size": -1})"), HasSubstr("size"));
  EXPECT_THAT(Refused<VFolderQuotaRequest>(R"({"folder_host": "h", "id": "f"})"),
              HasSubstr("input"));
  EXPECT_THAT(Refused<VFolderQuotaRequest>(
                  R"({"folder_host": "h", "id": "f", "input": {"max_files": -2}})"),
              HasSubstr("input.max_files"));
  EXPECT_THAT(Refused<VFolderInviteRequest>(R"({"perm": "all", "emails": ["a@x"]})"),
              HasSubstr("perm"));
  EXPECT_THAT(Refused<VFolderInviteRequest>(R"({"emails": []})"), HasSubstr("emails"));
  EXPECT_THAT(Refused<VFolderShareRequest>(R"({"emails": ["a@x", ""]})"), HasSubstr("emails"));
  EXPECT_THAT(Refused<VFolderByIdRequest>("{}"), HasSubstr("vfolder_id"));
  auto not_json = DecodeVFolderRequest<VFolderRenameRequest>("[1]");
  EXPECT_FALSE(not_json.ok());
}

}  // namespace
}  // namespace bai::protocol
