// SPDX-License-Identifier: Apache-2.0
// A real distribution image (issue 46, label `slow`, as root): Debian 12 minbase with
// python3-minimal, made with debootstrap from Debian's mirror (BAI_DEBIAN_MIRROR, default
// http://deb.debian.org/debian), pushed as one layer (umoci) to a registry of the test's own,
// then pulled by a session that runs the image's own Python, and an image without any Backend.AI
// label runs as a plain shell image. Skipped, with the reason, when debootstrap is missing or
// the mirror cannot be reached.
#include "tests/agent/registry_kernel_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace bai {
namespace {

using ::testing::HasSubstr;

using DebianImageTest = runc_testing::RegistryKernelTest;

TEST_F(DebianImageTest, ADebianImageWithPythonIsPulledAndRunsItsPython) {
  if (::access("/usr/sbin/debootstrap", X_OK) != 0) {
    GTEST_SKIP() << "debootstrap is missing (scripts/install-deps.sh installs it)";
  }
  char const* mirror_env = std::getenv("BAI_DEBIAN_MIRROR");
  std::string mirror = mirror_env ? mirror_env : "http://deb.debian.org/debian";
  std::string root = dir_.path() + "/debian-root";
  auto made = testing_util::RunProcess({"/usr/sbin/debootstrap", "--variant=minbase",
                                        "--include=python3-minimal", "bookworm", root, mirror});
  if (made.exit_code != 0 &&
      (made.out + made.err).find("Failed getting release file") != std::string::npos) {
    GTEST_SKIP() << "the Debian mirror " << mirror << " cannot be reached";
  }
  ASSERT_EQ(made.exit_code, 0) << made.out.substr(made.out.size() > 3000 ? made.out.size() - 3000
                                                                         : 0)
                               << made.err;
  // Device nodes are the runtime's to make, not an image's.
  testing_util::RunProcess(
      {"/bin/sh", "-c", "rm -rf '" + root + "'/dev/* '" + root + "'/var/cache/apt/archives/*.deb"});
  std::string layout = dir_.path() + "/layout";
  for (auto const& step : std::vector<std::vector<std::string>>{
           {"/usr/bin/umoci", "init", "--layout", layout},
           {"/usr/bin/umoci", "new", "--image", layout + ":t"},
           {"/usr/bin/umoci", "insert", "--image", layout + ":t", root, "/"},
           {"/usr/bin/umoci", "config", "--image", layout + ":t", "--config.env",
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "--config.cmd",
            "/bin/bash"}}) {
    auto r = testing_util::RunProcess(step);
    ASSERT_EQ(r.exit_code, 0) << step[1] << ": " << r.err;
  }
  ASSERT_EQ(registry_.Push(layout, "t", "lab/debian:12"), "");
  std::string host = registry_.host();
  ASSERT_EQ(Bai({"admin", "registry", "add", host, "--url", registry_.url()}).exit_code, 0);
  auto rescan = Bai({"admin", "image", "rescan", host});
  ASSERT_EQ(rescan.exit_code, 0) << rescan.err;
  std::string image = host + "/lab/debian:12";
  auto python = Bai({"run", image, "--", "python3", "-c",
                     "import sys, platform; print(sys.version_info[:2], "
                     "platform.freedesktop_os_release()['VERSION_CODENAME'])"});
  EXPECT_EQ(python.exit_code, 0) << python.err;
  EXPECT_EQ(python.out, "(3, 11) bookworm\n");
  // A plain image: the shell, the work user in the image's own passwd, its home.
  auto shell = Bai({"run", image, "--", "/bin/bash", "-c", "id -un; echo $HOME; pwd"});
  EXPECT_EQ(shell.exit_code, 0) << shell.err;
  EXPECT_EQ(shell.out, "work\n/home/work\n/home/work\n");
}

}  // namespace
}  // namespace bai
