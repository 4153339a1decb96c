// SPDX-License-Identifier: Apache-2.0
// Sharing virtual folders: invitations (invite, list, list-sent, update, accept, reject, cancel,
// leave), project shares (share, unshare, _/shared), the permission matrix over invited,
// member, stranger, domain admin and superadmin callers, clones followed as background tasks,
// and GraphQL's vfolder lists.
#include "tests/integration/vfolder_fixture.h"

#include <gmock/gmock.h>

#include <chrono>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_vfolders::VFolderTest;

class VFolderSharingTest : public VFolderTest {
 protected:
  void SetUp() override {
    VFolderTest::SetUp();
    auto carol = manager_->store().SignUp("default", "carol@example.com", "carol", "x", "Carol");
    ASSERT_TRUE(carol.ok());
    carol_ = ClientFor(carol->first, carol->second);
  }

  // Makes carol a domain admin of "default".
  void MakeCarolAdmin() {
    ASSERT_TRUE(manager_->store()
                    .db()
                    .Exec("UPDATE users SET role = 'admin' WHERE email = 'carol@example.com'")
                    .ok());
  }

  // Invites bob to alice's `folder` with `perm` and has him accept; the invitation's id.
  std::string Share(std::string const& folder, std::string const& perm) {
    auto r = Call(*alice_, "POST", "/folders/" + folder + "/invite",
                  {{"perm", perm}, {"emails", {"bob@example.com"}}});
    EXPECT_EQ(r.status, 201) << r.body;
    auto ids = json::parse(r.body)["invited_ids"];
    EXPECT_EQ(ids.size(), 1u);
    std::string id = ids.empty() ? "" : ids[0].get<std::string>();
    auto a = Call(*bob_, "POST", "/folders/invitations/accept", {{"inv_id", id}});
    EXPECT_EQ(a.status, 200) << a.body;
    return id;
  }

  json Pending(Client& who, bool sent) {
    auto r =
        Call(who, "GET", sent ? "/folders/invitations/list-sent" : "/folders/invitations/list");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["invitations"];
  }

  int UploadStatus(Client& who, std::string const& folder) {
    return Call(who, "POST", "/folders/" + folder + "/request-upload",
                {{"path", "probe.txt"}, {"size", 1}})
        .status;
  }

  std::unique_ptr<Client> carol_;
};

TEST_F(VFolderSharingTest, InvitationsFromInviteToLeave) {
  Create(*alice_, "data");
  Upload(*alice_, "data", "a.txt", "from alice");
  // Bad invitations: unknown users, oneself, by someone who does not own the folder.
  auto unknown = Call(*alice_, "POST", "/folders/data/invite", {{"emails", {"nobody@x.org"}}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(unknown.body, HasSubstr("nobody@x.org"));
  EXPECT_EQ(
      Call(*alice_, "POST", "/folders/data/invite", {{"emails", {"alice@example.com"}}}).status,
      400);
  EXPECT_EQ(Call(*alice_, "POST", "/folders/data/invite", {{"emails", json::array()}}).status, 400);
  EXPECT_EQ(Call(*alice_, "POST", "/folders/data/invite",
                 {{"perm", "admin"}, {"emails", {"bob@example.com"}}})
                .status,
            400);
  EXPECT_EQ(Call(*bob_, "POST", "/folders/data/invite", {{"emails", {"carol@example.com"}}}).status,
            404);

  auto r = Call(*alice_, "POST", "/folders/data/invite",
                {{"perm", "ro"}, {"user_ids", {"bob@example.com"}}});
  ASSERT_EQ(r.status, 201) << r.body;
  auto inv = json::parse(r.body)["invited_ids"][0].get<std::string>();
  // Asking again invites nobody new.
  EXPECT_EQ(
      json::parse(Call(*alice_, "POST", "/folders/data/invite", {{"emails", {"bob@example.com"}}})
                      .body)["invited_ids"]
          .size(),
      0u);
  auto to_bob = Pending(*bob_, false);
  ASSERT_EQ(to_bob.size(), 1u);
  EXPECT_EQ(to_bob[0]["id"], inv);
  EXPECT_EQ(to_bob[0]["vfolder_name"], "data");
  EXPECT_EQ(to_bob[0]["inviter"], "alice@example.com");
  EXPECT_EQ(to_bob[0]["perm"], "ro");
  EXPECT_EQ(to_bob[0]["state"], "pending");
  EXPECT_EQ(Pending(*alice_, true).size(), 1u);
  EXPECT_EQ(Pending(*alice_, false).size(), 0u);
  // Before accepting, bob does not reach the folder.
  EXPECT_EQ(Call(*bob_, "GET", "/folders/data").status, 404);
  // Only the inviter changes the permission offered.
  EXPECT_EQ(Call(*bob_, "POST", "/folders/invitations/update/" + inv, {{"perm", "wd"}}).status,
            400);
  auto upd = Call(*alice_, "POST", "/folders/invitations/update/" + inv, {{"perm", "rw"}});
  EXPECT_EQ(upd.status, 200) << upd.body;
  EXPECT_EQ(Pending(*bob_, false)[0]["perm"], "rw");
  // Carol cannot accept bob's invitation; bob can, once.
  EXPECT_EQ(Call(*carol_, "POST", "/folders/invitations/accept", {{"inv_id", inv}}).status, 404);
  EXPECT_EQ(Call(*bob_, "POST", "/folders/invitations/accept", {{"inv_id", inv}}).status, 200);
  EXPECT_EQ(Call(*bob_, "POST", "/folders/invitations/accept", {{"inv_id", inv}}).status, 400);
  EXPECT_EQ(Pending(*bob_, false).size(), 0u);

  auto list = json::parse(Call(*bob_, "GET", "/folders").body);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["name"], "data");
  EXPECT_EQ(list[0]["permission"], "rw");
  EXPECT_EQ(list[0]["is_owner"], false);
  EXPECT_EQ(Download(*bob_, "data", "a.txt"), "from alice");
  Upload(*bob_, "data", "b.txt", "from bob");
  EXPECT_EQ(Download(*alice_, "data", "b.txt"), "from bob");
  // Owner-only operations stay the owner's.
  EXPECT_EQ(Call(*bob_, "DELETE", "/folders/data").status, 400);
  EXPECT_EQ(Call(*bob_, "POST", "/folders/data/rename", {{"new_name", "mine"}}).status, 400);
  EXPECT_EQ(Call(*bob_, "POST", "/folders/data/invite", {{"emails", {"carol@example.com"}}}).status,
            400);

  // The owner sees whom it is shared with.
  auto shared = json::parse(Call(*alice_, "GET", "/folders/_/shared").body);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0]["shared_to"]["email"], "bob@example.com");
  EXPECT_EQ(shared[0]["perm"], "rw");
  EXPECT_EQ(json::parse(Call(*bob_, "GET", "/folders/_/shared").body).size(), 0u);

  // Hardening (hostile testing): transfer tokens outlived the grant by hours (a removed invitee
  // wrote a file into the owner's folder). Tokens bob holds when he goes stop working; the
  // owner's do not.
  auto [up_status, bob_upload] =
      Ticket(*bob_, "data", "request-upload", {{"path", "late.txt"}, {"size", 4}});
  ASSERT_EQ(up_status, 200);
  auto [down_status, bob_download] = Ticket(*bob_, "data", "request-download", {{"path", "a.txt"}});
  ASSERT_EQ(down_status, 200);
  auto [alice_status, alice_download] =
      Ticket(*alice_, "data", "request-download", {{"path", "a.txt"}});
  ASSERT_EQ(alice_status, 200);

  // Leaving: bob goes; he no longer reaches it. The owner cannot "leave" her own folder.
  EXPECT_EQ(Call(*alice_, "POST", "/folders/data/leave").status, 400);
  auto left = Call(*bob_, "POST", "/folders/data/leave");
  EXPECT_EQ(left.status, 200) << left.body;
  EXPECT_THAT(left.body, HasSubstr("left the shared vfolder"));
  EXPECT_EQ(Call(*bob_, "GET", "/folders/data").status, 404);
  auto late = Patch(bob_upload, 0, "late");
  EXPECT_EQ(late.status, 401) << late.body;
  EXPECT_THAT(late.body, HasSubstr("revoked"));
  EXPECT_EQ(Raw(bob_download, "GET").status, 401);
  EXPECT_EQ(Raw(alice_download, "GET").status, 200) << "the owner's token still works";
  // Trashing ends everyone's tokens, the owner's too.
  Create(*alice_, "bin-me");
  Upload(*alice_, "bin-me", "x", "xx");
  auto [bin_status, bin_download] = Ticket(*alice_, "bin-me", "request-download", {{"path", "x"}});
  ASSERT_EQ(bin_status, 200);
  ASSERT_EQ(Call(*alice_, "DELETE", "/folders/bin-me").status, 204);
  EXPECT_EQ(Raw(bin_download, "GET").status, 401);

  // The owner removes an invitee by user id.
  Share("data", "ro");
  auto bob_uuid =
      json::parse(Call(*alice_, "GET", "/folders/_/shared").body)[0]["shared_to"]["uuid"]
          .get<std::string>();
  EXPECT_EQ(Call(*alice_, "POST", "/folders/data/leave", {{"shared_user_uuid", bob_uuid}}).status,
            200);
  EXPECT_EQ(Call(*bob_, "GET", "/folders/data").status, 404);

  // Rejected by the invitee, cancelled by the inviter: both end the invitation.
  auto again = json::parse(Call(*alice_, "POST", "/folders/data/invite",
                                {{"emails", {"bob@example.com", "carol@example.com"}}})
                               .body)["invited_ids"];
  ASSERT_EQ(again.size(), 2u);
  auto to_bob_again = Pending(*bob_, false)[0]["id"].get<std::string>();
  auto to_carol = Pending(*carol_, false)[0]["id"].get<std::string>();
  EXPECT_EQ(Call(*bob_, "DELETE", "/folders/invitations/delete", {{"inv_id", to_bob_again}}).status,
            200);
  EXPECT_EQ(Call(*alice_, "POST", "/folders/invitations/delete", {{"inv_id", to_carol}}).status,
            200);
  EXPECT_EQ(Pending(*bob_, false).size(), 0u);
  EXPECT_EQ(Pending(*carol_, false).size(), 0u);
  EXPECT_EQ(Pending(*alice_, true).size(), 0u);
  EXPECT_EQ(Call(*carol_, "POST", "/folders/invitations/accept", {{"inv_id", to_carol}}).status,
            400);
  EXPECT_EQ(Call(*carol_, "GET", "/folders/data").status, 404);

  // Dot-folders stay private; accepting a folder named like one's own is refused.
  Create(*alice_, ".config");
  EXPECT_EQ(
      Call(*alice_, "POST", "/folders/.config/invite", {{"emails", {"bob@example.com"}}}).status,
      403);
  Create(*bob_, "data");
  auto clash =
      json::parse(Call(*alice_, "POST", "/folders/data/invite", {{"emails", {"bob@example.com"}}})
                      .body)["invited_ids"][0]
          .get<std::string>();
  auto refused = Call(*bob_, "POST", "/folders/invitations/accept", {{"inv_id", clash}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_THAT(refused.body, HasSubstr("vfolder-already-exists"));
}

// The permission matrix of issue 12 over list / info / files / upload / download / delete:
// invited ro, rw, wd; project member; stranger; domain admin; superadmin.
TEST_F(VFolderSharingTest, PermissionMatrix) {
  MakeCarolAdmin();
  for (auto const* perm : {"ro", "rw", "wd"}) {
    std::string name = std::string("m-") + perm;
    Create(*alice_, name);
    Upload(*alice_, name, "f.txt", perm);
    Share(name, perm);
    SCOPED_TRACE(name);
    auto info = Call(*bob_, "GET", "/folders/" + name);
    ASSERT_EQ(info.status, 200);
    EXPECT_EQ(json::parse(info.body)["permission"], perm);
    EXPECT_EQ(Call(*bob_, "GET", "/folders/" + name + "/files").status, 200);
    EXPECT_EQ(Download(*bob_, name, "f.txt"), perm);
    EXPECT_EQ(UploadStatus(*bob_, name), std::string(perm) == "ro" ? 400 : 200);
    EXPECT_EQ(
        Call(*bob_, "POST", "/folders/" + name + "/delete-files", {{"files", {"f.txt"}}}).status,
        std::string(perm) == "ro" ? 400 : 200);
    EXPECT_EQ(Call(*bob_, "DELETE", "/folders/" + name).status, 400);  // the owner's alone
    // Stranger (carol is a domain admin, but a user folder is private): 404 everywhere.
    EXPECT_EQ(Call(*carol_, "GET", "/folders/" + name).status, 404);
    EXPECT_EQ(UploadStatus(*carol_, name), 404);
    // The superadmin reaches it by id with everything.
    auto id = json::parse(info.body)["id"].get<std::string>();
    EXPECT_EQ(UploadStatus(*root_, id), 200);
  }
  EXPECT_EQ(json::parse(Call(*bob_, "GET", "/folders").body).size(), 3u);
  EXPECT_EQ(json::parse(Call(*carol_, "GET", "/folders").body).size(), 0u);

  // A project folder, ro for members; bob is a member with a share of rw; alice a plain member.
  auto pid = Create(*root_, "proj", {{"group", "default"}, {"permission", "ro"}});
  EXPECT_EQ(UploadStatus(*alice_, "proj"), 400);
  EXPECT_EQ(Call(*alice_, "GET", "/folders/proj/files").status, 200);
  // Only admins share project folders, and only to members.
  EXPECT_EQ(Call(*alice_, "POST", "/folders/proj/share", {{"emails", {"bob@example.com"}}}).status,
            403);
  EXPECT_EQ(Call(*alice_, "POST", "/folders/m-ro/share", {{"emails", {"bob@example.com"}}}).status,
            400);
  auto shared = Call(*carol_, "POST", "/folders/proj/share",
                     {{"permission", "rw"}, {"emails", {"bob@example.com"}}});
  ASSERT_EQ(shared.status, 201) << shared.body;
  EXPECT_EQ(json::parse(shared.body)["shared_emails"], json::array({"bob@example.com"}));
  EXPECT_EQ(UploadStatus(*bob_, "proj"), 200);
  EXPECT_EQ(UploadStatus(*alice_, "proj"), 400);
  // Domain admin: wd on the project folders of the domain.
  EXPECT_EQ(UploadStatus(*carol_, "proj"), 200);
  auto unshared =
      Call(*root_, "DELETE", "/folders/" + pid + "/unshare", {{"emails", {"bob@example.com"}}});
  ASSERT_EQ(unshared.status, 200) << unshared.body;
  EXPECT_EQ(json::parse(unshared.body)["unshared_emails"], json::array({"bob@example.com"}));
  EXPECT_EQ(UploadStatus(*bob_, "proj"), 400);
  // Members cannot leave a project folder.
  EXPECT_EQ(Call(*bob_, "POST", "/folders/proj/leave").status, 400);
  // A user outside the project: not a member, so not shareable, and 404.
  auto& db = manager_->store().db();
  ASSERT_TRUE(db.Exec("DELETE FROM association_groups_users WHERE user_id = (SELECT uuid FROM "
                      "users WHERE email = 'bob@example.com')")
                  .ok());
  EXPECT_EQ(Call(*bob_, "GET", "/folders/proj").status, 404);
  auto outsider = Call(*carol_, "POST", "/folders/proj/share", {{"emails", {"bob@example.com"}}});
  EXPECT_EQ(outsider.status, 400);
  EXPECT_THAT(outsider.body, HasSubstr("not a member"));
}

TEST_F(VFolderSharingTest, CloneRunsAsABackgroundTask) {
  Create(*alice_, "src");
  Upload(*alice_, "src", "top.bin", testing_vfolders::Random(300000, 7));
  Upload(*alice_, "src", "dir/inner.txt", "inner");
  auto r = Call(*alice_, "POST", "/folders/src/clone",
                {{"target_name", "copy"}, {"usage_mode", "data"}, {"permission", "rw"}});
  ASSERT_EQ(r.status, 201) << r.body;
  auto j = json::parse(r.body);
  EXPECT_EQ(j["name"], "copy");
  EXPECT_EQ(j["ownership_type"], "user");
  std::string task_id = j["bgtask_id"];
  // The task ends done and the copy is ready, byte for byte.
  std::optional<BackgroundTask> task;
  for (int i = 0; i < 200; ++i) {
    auto t = manager_->tasks().Get(task_id);
    ASSERT_TRUE(t.ok() && *t);
    task = **t;
    if (task->Finished()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(task && task->Finished());
  EXPECT_EQ(task->status, protocol::TaskStatus::kDone) << task->message;
  auto info = json::parse(Call(*alice_, "GET", "/folders/copy").body);
  EXPECT_EQ(info["status"], "ready");
  EXPECT_EQ(info["usage_mode"], "data");
  EXPECT_EQ(info["num_files"], 2);
  EXPECT_EQ(Download(*alice_, "copy", "top.bin"), testing_vfolders::Random(300000, 7));
  EXPECT_EQ(Download(*alice_, "copy", "dir/inner.txt"), "inner");
  // The copy is independent of its source.
  Upload(*alice_, "copy", "new.txt", "only here");
  auto src_files = json::parse(Call(*alice_, "GET", "/folders/src/files").body)["items"];
  EXPECT_EQ(src_files.size(), 2u);
  // Taken names, other proxies and strangers are refused before any task starts.
  EXPECT_EQ(Call(*alice_, "POST", "/folders/src/clone", {{"target_name", "copy"}}).status, 400);
  EXPECT_EQ(Call(*alice_, "POST", "/folders/src/clone",
                 {{"target_name", "x"}, {"target_host", "elsewhere:volume1"}})
                .status,
            400);
  EXPECT_EQ(Call(*bob_, "POST", "/folders/src/clone", {{"target_name", "x"}}).status, 404);
  // An invitee clones only a cloneable folder.
  Share("src", "ro");
  auto refused = Call(*bob_, "POST", "/folders/src/clone", {{"target_name", "bobs"}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_THAT(refused.body, HasSubstr("vfolder-permission-error"));
  EXPECT_EQ(Call(*alice_, "POST", "/folders/src/update-options", {{"cloneable", true}}).status,
            201);
  auto bobs = Call(*bob_, "POST", "/folders/src/clone", {{"target_name", "bobs"}});
  ASSERT_EQ(bobs.status, 201) << bobs.body;
  for (int i = 0; i < 200; ++i) {
    auto info2 = Call(*bob_, "GET", "/folders/bobs");
    if (info2.status == 200 && json::parse(info2.body)["status"] == "ready") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(Download(*bob_, "bobs", "dir/inner.txt"), "inner");
  EXPECT_EQ(json::parse(Call(*bob_, "GET", "/folders/bobs").body)["is_owner"], true);
}

TEST_F(VFolderSharingTest, GraphqlListsFolders) {
  MakeCarolAdmin();
  Create(*alice_, "data");
  Upload(*alice_, "data", "a.txt", "12345");
  Create(*alice_, "other");
  Create(*bob_, "bobs");
  Share("data", "ro");
  Create(*root_, "proj", {{"group", "default"}});
  auto gql = [&](Client& who, std::string const& query) {
    auto r = Call(who, "POST", "/admin/gql", {{"query", query}});
    EXPECT_EQ(r.status, 200) << r.body;
    auto j = json::parse(r.body);
    EXPECT_FALSE(j.contains("errors")) << r.body;
    return j["data"];
  };
  auto names = [](json const& list) {
    std::vector<std::string> out;
    for (auto const& i : list["items"]) out.push_back(i["name"]);
    return out;
  };
  auto all =
      gql(*bob_,
          "{ vfolder_list(limit: 10, offset: 0, order: \"name\") { total_count items { "
          "id name permission user_email ownership_type num_files cur_size } } }")["vfolder_list"];
  EXPECT_EQ(all["total_count"], 3);
  EXPECT_THAT(names(all), ::testing::ElementsAre("bobs", "data", "proj"));
  EXPECT_EQ(all["items"][1]["permission"], "ro");
  EXPECT_EQ(all["items"][1]["user_email"], "alice@example.com");
  EXPECT_EQ(all["items"][1]["num_files"], 1);
  EXPECT_EQ(all["items"][1]["cur_size"], 5);
  EXPECT_EQ(all["items"][1]["id"].get<std::string>().size(), 36u);
  auto filtered =
      gql(*bob_,
          "{ vfolder_list(limit: 10, offset: 0, filter: \"ownership_type == "
          "\\\"group\\\"\") { total_count items { name group_name } } }")["vfolder_list"];
  EXPECT_EQ(filtered["total_count"], 1);
  EXPECT_EQ(filtered["items"][0]["group_name"], "default");
  auto page = gql(*bob_,
                  "{ vfolder_list(limit: 1, offset: 1, order: \"-name\") { total_count items { "
                  "name } } }")["vfolder_list"];
  EXPECT_EQ(page["total_count"], 3);
  EXPECT_THAT(names(page), ::testing::ElementsAre("data"));
  EXPECT_THAT(names(gql(*bob_,
                        "{ vfolder_own_list(limit: 10, offset: 0) { total_count items { "
                        "name } } }")["vfolder_own_list"]),
              ::testing::ElementsAre("bobs"));
  EXPECT_THAT(names(gql(*bob_,
                        "{ vfolder_invited_list(limit: 10, offset: 0) { total_count "
                        "items { name } } }")["vfolder_invited_list"]),
              ::testing::ElementsAre("data"));
  // A domain admin sees the domain's project folders, not users' private ones; the superadmin
  // sees every folder.
  EXPECT_THAT(names(gql(*carol_,
                        "{ vfolder_list(limit: 10, offset: 0) { total_count items { "
                        "name } } }")["vfolder_list"]),
              ::testing::ElementsAre("proj"));
  EXPECT_EQ(
      gql(*root_,
          "{ vfolder_list(limit: 10, offset: 0) { total_count } }")["vfolder_list"]["total_count"],
      4);
  // vfolder(id) answers null for a folder the caller does not reach.
  auto id = json::parse(Call(*alice_, "GET", "/folders/other").body)["id"].get<std::string>();
  EXPECT_TRUE(gql(*bob_, "{ vfolder(id: \"" + id + "\") { name } }")["vfolder"].is_null());
  EXPECT_EQ(gql(*alice_, "{ vfolder(id: \"" + id + "\") { name } }")["vfolder"]["name"], "other");
  // A bad filter is the caller's error.
  auto bad = Call(*bob_, "POST", "/admin/gql",
                  {{"query",
                    "{ vfolder_list(limit: 10, offset: 0, filter: \"nope == 1\") { "
                    "total_count } }"}});
  EXPECT_THAT(bad.body, HasSubstr("nope"));
}

// What a session mounts is resolved when it is created, as its owner reaches the folders.
TEST_F(VFolderSharingTest, SessionsMountWhatTheirOwnerReaches) {
  Create(*alice_, "data");
  Create(*alice_, "ro-shared");
  Create(*alice_, ".local");
  Create(*alice_, "trashed");
  ASSERT_EQ(Call(*alice_, "DELETE", "/folders/trashed").status, 204);
  Share("ro-shared", "ro");
  auto create = [&](Client& who, json config) {
    return Call(who, "POST", "/session",
                {{"image", "python"}, {"enqueueOnly", true}, {"config", config}});
  };
  auto created = create(*alice_, {{"mounts", {"data"}},
                                  {"mount_map", {{"data", "input/raw"}}},
                                  {"mount_options", {{"data", {{"permission", "ro"}}}}}});
  ASSERT_EQ(created.status, 201) << created.body;
  auto id = json::parse(created.body)["sessionId"].get<std::string>();
  auto record = manager_->sessions().Get(id);
  ASSERT_TRUE(record.ok() && *record);
  auto const& mounts = (*record)->vfolder_mounts;
  ASSERT_EQ(mounts.size(), 2u) << "data, and the owner's dot-folder .local";
  EXPECT_EQ(mounts[0].name, "data");
  EXPECT_EQ(mounts[0].kernel_path, "/home/work/input/raw");
  EXPECT_EQ(mounts[0].permission, "ro");
  auto data_id = json::parse(Call(*alice_, "GET", "/folders/data").body)["id"].get<std::string>();
  auto alice_uid = json::parse(Call(*alice_, "GET", "/folders/data").body)["user"];
  EXPECT_EQ(mounts[0].host_path, FolderDir(data_id, alice_uid));
  EXPECT_TRUE(std::filesystem::is_directory(mounts[0].host_path));
  EXPECT_EQ(mounts[1].name, ".local");
  EXPECT_EQ(mounts[1].kernel_path, "/home/work/.local");
  EXPECT_EQ(mounts[1].permission, "wd");

  // Refusals name the folder and queue nothing.
  auto trashed = create(*alice_, {{"mounts", {"trashed"}}});
  EXPECT_EQ(trashed.status, 400);
  EXPECT_THAT(trashed.body, HasSubstr("trash"));
  auto missing = create(*bob_, {{"mounts", {"data"}}});  // bob has no "data" of his own
  EXPECT_EQ(missing.status, 404);
  auto over = create(*bob_, {{"mounts", {"ro-shared"}},
                             {"mount_options", {{"ro-shared", {{"permission", "rw"}}}}}});
  EXPECT_EQ(over.status, 400);
  EXPECT_THAT(over.body, HasSubstr("vfolder-permission-error"));
  auto outside = create(*alice_, {{"mounts", {"data"}}, {"mount_map", {{"data", "/etc/x"}}}});
  EXPECT_EQ(outside.status, 400);
  auto stray = create(*alice_, {{"mounts", json::array()}, {"mount_map", {{"data", "x"}}}});
  EXPECT_EQ(stray.status, 400);
  // An invitee mounts a shared folder with what was granted.
  auto theirs = create(*bob_, {{"mounts", {"ro-shared"}}});
  ASSERT_EQ(theirs.status, 201) << theirs.body;
  auto bob_record =
      manager_->sessions().Get(json::parse(theirs.body)["sessionId"].get<std::string>());
  ASSERT_TRUE(bob_record.ok() && *bob_record);
  ASSERT_EQ((*bob_record)->vfolder_mounts.size(), 1u);
  EXPECT_EQ((*bob_record)->vfolder_mounts[0].permission, "ro");

  // Hardening (new user, hostile testing): a folder mounted by a session that has not ended can
  // be neither trashed nor purged (its data vanished under the job); the refusal names the
  // sessions. Once they end, both work.
  auto busy = Call(*alice_, "DELETE", "/folders/data");
  EXPECT_EQ(busy.status, 400) << busy.body;
  EXPECT_THAT(busy.body, HasSubstr("mounted by 1 session(s)"));
  EXPECT_THAT(busy.body, HasSubstr("vfolder-operation-failed"));
  auto shared = Call(*alice_, "DELETE", "/folders/ro-shared");
  EXPECT_EQ(shared.status, 400) << "bob's session mounts it: " << shared.body;
  EXPECT_EQ(Call(*alice_, "DELETE", "/session/" + id).status, 200);
  EXPECT_EQ(Call(*alice_, "DELETE", "/folders/data").status, 204);
  EXPECT_EQ(Call(*alice_, "POST", "/folders/purge", {{"vfolder_id", data_id}}).status, 204);
  EXPECT_FALSE(std::filesystem::exists(mounts[0].host_path));
}

}  // namespace
}  // namespace bai::manager
