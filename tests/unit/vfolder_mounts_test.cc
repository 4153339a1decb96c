// SPDX-License-Identifier: Apache-2.0
// Which folders a session mounts, where and how (manager/vfolders/mounts.h): names and ids,
// the owner's folder before a shared one, the trash, permissions never above what is granted,
// paths confined to /home/work, reserved names, duplicates and overlaps, dot-folders.
#include "server-reference/manager/vfolders/mounts.h"

#include <gtest/gtest.h>

namespace bai::manager::vfolders {
namespace {

using P = protocol::VFolderPermission;

VisibleFolder Folder(std::string id, std::string name, Relation relation, P permission,
                     protocol::VFolderStatus status = protocol::VFolderStatus::kReady) {
  VisibleFolder v;
  v.folder.id = std::move(id);
  v.folder.name = std::move(name);
  v.folder.status = status;
  v.access.relation = relation;
  v.access.permission = permission;
  return v;
}

std::string Id(char c) { return std::string(32, c); }

class VFolderMountsTest : public ::testing::Test {
 protected:
  std::vector<VisibleFolder> visible_ = {
      Folder(Id('a'), "data", Relation::kOwner, P::kReadWriteDelete),
      Folder(Id('b'), "data", Relation::kInvited, P::kReadOnly),
      Folder(Id('c'), "shared", Relation::kInvited, P::kReadOnly),
      Folder(Id('d'), "proj", Relation::kMember, P::kReadWrite),
      Folder(Id('e'), "old", Relation::kOwner, P::kReadWriteDelete,
             protocol::VFolderStatus::kDeletePending),
      Folder(Id('f'), "busy", Relation::kOwner, P::kReadWriteDelete,
             protocol::VFolderStatus::kCloning),
  };
};

TEST_F(VFolderMountsTest, ResolvesNamesIdsPathsAndPermissions) {
  auto plan = PlanMounts({{"data", std::nullopt, std::nullopt},
                          {Id('b'), "theirs", std::nullopt},
                          {"proj", "/home/work/p/q", "ro"}},
                         visible_);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->size(), 3u);
  EXPECT_EQ((*plan)[0].folder.id, Id('a')) << "the owner's own 'data' wins";
  EXPECT_EQ((*plan)[0].kernel_path, "/home/work/data");
  EXPECT_EQ((*plan)[0].permission, P::kReadWriteDelete);
  EXPECT_EQ((*plan)[1].folder.id, Id('b')) << "an id names exactly one";
  EXPECT_EQ((*plan)[1].kernel_path, "/home/work/theirs");
  EXPECT_EQ((*plan)[1].permission, P::kReadOnly);
  EXPECT_EQ((*plan)[2].kernel_path, "/home/work/p/q");
  EXPECT_EQ((*plan)[2].permission, P::kReadOnly) << "asked for less than granted";
}

TEST_F(VFolderMountsTest, Refusals) {
  struct Row {
    MountRequest request;
    StatusCode code;
  };
  Row const rows[] = {
      {{"nope", std::nullopt, std::nullopt}, StatusCode::kNotFound},
      {{"old", std::nullopt, std::nullopt}, StatusCode::kFailedPrecondition},
      {{"busy", std::nullopt, std::nullopt}, StatusCode::kFailedPrecondition},
      {{"shared", std::nullopt, "rw"}, StatusCode::kPermissionDenied},
      {{"proj", std::nullopt, "wd"}, StatusCode::kPermissionDenied},
      {{"proj", std::nullopt, "rx"}, StatusCode::kInvalidArgument},
      {{"proj", "/etc", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", "/home/work", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", "/home/workers", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", "a/../../etc", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", "a//b", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", ".ssh", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", ".bashrc", std::nullopt}, StatusCode::kInvalidArgument},
      {{"proj", std::string(300, 'x'), std::nullopt}, StatusCode::kInvalidArgument},
  };
  for (auto const& row : rows) {
    auto plan = PlanMounts({row.request}, visible_);
    EXPECT_FALSE(plan.ok()) << row.request.folder << " " << row.request.path.value_or("");
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), row.code)
          << row.request.folder << " " << row.request.path.value_or("") << ": "
          << plan.status().message();
    }
  }
}

TEST_F(VFolderMountsTest, DuplicatesAndOverlapsAreRefused) {
  EXPECT_FALSE(
      PlanMounts({{"data", std::nullopt, std::nullopt}, {Id('a'), "again", std::nullopt}}, visible_)
          .ok());
  EXPECT_FALSE(
      PlanMounts({{"data", "x", std::nullopt}, {"proj", "x", std::nullopt}}, visible_).ok());
  EXPECT_FALSE(
      PlanMounts({{"data", "x", std::nullopt}, {"proj", "x/inner", std::nullopt}}, visible_).ok());
  EXPECT_TRUE(
      PlanMounts({{"data", "x", std::nullopt}, {"proj", "xy", std::nullopt}}, visible_).ok());
}

TEST_F(VFolderMountsTest, TheOwnersDotFoldersComeToEverySession) {
  auto with_dots = visible_;
  with_dots.push_back(Folder(Id('1'), ".local", Relation::kOwner, P::kReadWriteDelete));
  with_dots.push_back(Folder(Id('2'), ".theirs", Relation::kInvited, P::kReadOnly));
  with_dots.push_back(Folder(Id('3'), ".trashed", Relation::kOwner, P::kReadWriteDelete,
                             protocol::VFolderStatus::kDeletePending));
  auto plan = PlanMounts({}, with_dots);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].kernel_path, "/home/work/.local");
  // Asked for explicitly, it is mounted once, where asked.
  plan = PlanMounts({{".local", "cfg", "ro"}}, with_dots);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].kernel_path, "/home/work/cfg");
  EXPECT_EQ((*plan)[0].permission, P::kReadOnly);
}

}  // namespace
}  // namespace bai::manager::vfolders
