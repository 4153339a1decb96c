// SPDX-License-Identifier: Apache-2.0
// What an image's config means for its kernel's process (issue 46, item 5): pure core.
#include "server-reference/agent/image_process.h"

#include "server-reference/agent/images.h"
#include "server-reference/agent/oci_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kPasswd[] =
    "root:x:0:0:root:/root:/bin/bash\n"
    "# a comment\n"
    "jovyan:x:1000:100::/home/jovyan:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
constexpr char kGroup[] = "root:x:0:\nusers:x:100:\nstaff:x:50:jovyan\n";

TEST(ImageUserTest, NamesNumbersAndGroupsAreReadFromTheImagesOwnFiles) {
  auto by_name = ResolveImageUser("jovyan", kPasswd, kGroup);
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(by_name->uid, 1000);
  EXPECT_EQ(by_name->gid, 100);
  EXPECT_EQ(by_name->name, "jovyan");
  auto by_uid = ResolveImageUser("1000", kPasswd, kGroup);
  ASSERT_TRUE(by_uid.ok());
  EXPECT_EQ(by_uid->name, "jovyan");
  auto with_group = ResolveImageUser("jovyan:staff", kPasswd, kGroup);
  ASSERT_TRUE(with_group.ok());
  EXPECT_EQ(with_group->gid, 50);
  auto numbers = ResolveImageUser("4242:4343", kPasswd, kGroup);
  ASSERT_TRUE(numbers.ok());
  EXPECT_EQ(numbers->uid, 4242);
  EXPECT_EQ(numbers->gid, 4343);
  EXPECT_EQ(numbers->name, "work") << "a uid the image's passwd lacks";
  auto root = ResolveImageUser("root", kPasswd, kGroup);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->uid, 0);
  // Refused in words: a name the image does not have, a group it does not have, nothing.
  auto unknown = ResolveImageUser("postgres", kPasswd, kGroup);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("no user postgres"));
  EXPECT_THAT(ResolveImageUser("jovyan:wheel", kPasswd, kGroup).status().message(),
              HasSubstr("no group wheel"));
  EXPECT_FALSE(ResolveImageUser(":100", kPasswd, kGroup).ok());
  EXPECT_FALSE(ResolveImageUser("-1", "", "").ok()) << "not a uid, not a name in an empty passwd";
}

TEST(ImageUserTest, TheKernelsPasswdKeepsTheImagesEntriesAndAddsTheUser) {
  KernelUser work{1000, 1000, "work"};
  std::string passwd = PasswdWithUser(kPasswd, work);
  // jovyan had uid 1000: the work user takes its place; the others stay, comments go.
  EXPECT_EQ(passwd,
            "root:x:0:0:root:/root:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            "work:x:1000:1000:work:/home/work:/bin/sh\n");
  std::string group = GroupWithUser(kGroup, work);
  EXPECT_EQ(group, "root:x:0:\nusers:x:100:\nstaff:x:50:jovyan\nwork:x:1000:work\n");
  // An image without the files (a scratch image): root and the user.
  EXPECT_EQ(PasswdWithUser("", work),
            "root:x:0:0:root:/root:/bin/sh\nwork:x:1000:1000:work:/home/work:/bin/sh\n");
  EXPECT_EQ(GroupWithUser("", work), "root:x:0:\nwork:x:1000:work\n");
  // The image's own user, honoured: its entry, at /home/work.
  KernelUser jovyan{1000, 100, "jovyan"};
  EXPECT_THAT(PasswdWithUser(kPasswd, jovyan),
              HasSubstr("jovyan:x:1000:100:jovyan:/home/work:/bin/sh\n"));
  // Root as the image's user: not duplicated.
  std::string as_root = PasswdWithUser(kPasswd, {0, 0, "root"});
  EXPECT_EQ(as_root.find("root:x:0:0:root:/root"), std::string::npos);
  EXPECT_THAT(as_root, HasSubstr("root:x:0:0:root:/home/work:/bin/sh\n"));
}

TEST(ImageCommandTest, EntrypointThenCmdQuotedInTheWorkingDir) {
  Image image;
  EXPECT_EQ(ImageCommandLine(image), "") << "nothing to run";
  image.cmd = {"python3", "-c", "print('hi there')"};
  EXPECT_EQ(ImageCommandLine(image), "exec python3 -c 'print('\\''hi there'\\'')'");
  image.entrypoint = {"/usr/bin/env", "A=b c"};
  image.working_dir = "/srv/my app";
  EXPECT_EQ(ImageCommandLine(image),
            "cd '/srv/my app' && exec /usr/bin/env 'A=b c' python3 -c "
            "'print('\\''hi there'\\'')'");
  image.cmd.clear();
  image.entrypoint = {"", "$HOME", "a;b"};
  EXPECT_EQ(ImageCommandLine(image), "cd '/srv/my app' && exec '' '$HOME' 'a;b'");
}

TEST(ImageCommandTest, CoreCountNamesAreShellIdentifiersOnly) {
  EXPECT_TRUE(CoreCountVariables({}).empty());
  EXPECT_THAT(CoreCountVariables({{"ai.backend.envs.corecount",
                                   "OPENBLAS_NUM_THREADS, OMP_NUM_THREADS,,NPROC,1BAD,A=B,NPROC"}}),
              ElementsAre("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NPROC"));
}

TEST(ImageCommandTest, CpuListsAreCounted) {
  EXPECT_EQ(CpuCount(""), 0u);
  EXPECT_EQ(CpuCount("3"), 1u);
  EXPECT_EQ(CpuCount("0-2,5"), 4u);
  EXPECT_EQ(CpuCount("0-1,4-7"), 6u);
  EXPECT_EQ(CpuCount(CpuList({9, 1, 2, 3})), 4u);
}

}  // namespace
}  // namespace bai::agent
