// SPDX-License-Identifier: Apache-2.0
// Who reaches a virtual folder and with what permission (manager/vfolders/access.h): the
// matrix of owner, invitee, project member, project share, stranger, domain admin of this and of
// another domain, and superadmin over user and project folders.
#include "server-reference/manager/vfolders/access.h"

#include <gtest/gtest.h>

namespace bai::manager::vfolders {
namespace {

using protocol::VFolderOwnership;
using P = protocol::VFolderPermission;

TEST(VFolderAccessTest, TheMatrix) {
  FolderFacts user_folder{VFolderOwnership::kUser, "u-owner", "", "d1", P::kReadWrite};
  FolderFacts project_ro{VFolderOwnership::kGroup, "", "g1", "d1", P::kReadOnly};
  struct Row {
    char const* who;
    CallerFacts caller;
    FolderFacts const& folder;
    Relation relation;
    P permission;
  };
  CallerFacts owner{"u-owner", "user", "d1", {}, std::nullopt};
  CallerFacts invited_ro{"u-x", "user", "d1", {}, P::kReadOnly};
  CallerFacts invited_wd{"u-x", "user", "d1", {}, P::kReadWriteDelete};
  CallerFacts member{"u-m", "user", "d1", {"g1"}, std::nullopt};
  CallerFacts member_shared_rw{"u-m", "user", "d1", {"g1"}, P::kReadWrite};
  CallerFacts stranger{"u-s", "user", "d1", {"g2"}, std::nullopt};
  CallerFacts admin{"u-a", "admin", "d1", {}, std::nullopt};
  CallerFacts other_admin{"u-o", "admin", "d2", {"g1"}, std::nullopt};
  CallerFacts super{"u-root", "superadmin", "d9", {}, std::nullopt};
  Row const rows[] = {
      {"owner", owner, user_folder, Relation::kOwner, P::kReadWriteDelete},
      {"invited ro", invited_ro, user_folder, Relation::kInvited, P::kReadOnly},
      {"invited wd", invited_wd, user_folder, Relation::kInvited, P::kReadWriteDelete},
      {"stranger", stranger, user_folder, Relation::kNone, P::kReadOnly},
      {"domain admin, user folder", admin, user_folder, Relation::kNone, P::kReadOnly},
      {"superadmin, user folder", super, user_folder, Relation::kAdmin, P::kReadWriteDelete},
      {"member", member, project_ro, Relation::kMember, P::kReadOnly},
      {"member with a share", member_shared_rw, project_ro, Relation::kMember, P::kReadWrite},
      {"non-member", stranger, project_ro, Relation::kNone, P::kReadOnly},
      {"domain admin", admin, project_ro, Relation::kAdmin, P::kReadWriteDelete},
      {"admin of another domain", other_admin, project_ro, Relation::kNone, P::kReadOnly},
      {"superadmin", super, project_ro, Relation::kAdmin, P::kReadWriteDelete},
  };
  for (auto const& r : rows) {
    SCOPED_TRACE(r.who);
    auto a = Decide(r.folder, r.caller);
    EXPECT_EQ(a.relation, r.relation);
    if (a.ok()) {
      EXPECT_EQ(a.permission, r.permission);
    }
    EXPECT_EQ(a.manages(), r.relation == Relation::kOwner || r.relation == Relation::kAdmin);
  }
}

}  // namespace
}  // namespace bai::manager::vfolders

namespace bai::manager::vfolders {
namespace {

TEST(VFolderHostPolicyTest, UnionOfDomainProjectsAndKeypair) {
  // Nothing configured anywhere: every host.
  EXPECT_FALSE(AllowedHosts({"{}", "{}", "[]"}).has_value());
  EXPECT_EQ(WhyHostRefused(AllowedHosts({"{}"}), "local:v", "create-vfolder"), "");
  // An object names permissions; a list allows everything on its hosts; the union holds.
  auto allowed = AllowedHosts({R"({"nfs:a": ["mount-in-session"]})", "[\"local:v\"]", "bad"});
  ASSERT_TRUE(allowed.has_value());
  EXPECT_EQ(WhyHostRefused(allowed, "local:v", "create-vfolder"), "");
  EXPECT_EQ(WhyHostRefused(allowed, "nfs:a", "mount-in-session"), "");
  EXPECT_NE(WhyHostRefused(allowed, "nfs:a", "create-vfolder").find("'create-vfolder'"),
            std::string::npos);
  auto why = WhyHostRefused(allowed, "s3:x", "create-vfolder");
  EXPECT_NE(why.find("local:v, nfs:a"), std::string::npos) << why;
}

TEST(VFolderHostPolicyTest, CountLimit) {
  EXPECT_EQ(WhyCountRefused(100, 0, false), "");
  EXPECT_EQ(WhyCountRefused(1, 2, false), "");
  EXPECT_NE(WhyCountRefused(2, 2, false).find("max_vfolder_count"), std::string::npos);
  EXPECT_NE(WhyCountRefused(3, 2, true).find("project"), std::string::npos);
}

}  // namespace
}  // namespace bai::manager::vfolders
