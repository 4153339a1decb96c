// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/scratch.h"

#include "bai/protocol/resource.h"

#include "server-reference/agent/layer_store.h"
#include "server-reference/common/exec/process.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace bai::agent {

namespace fs = std::filesystem;

StatusOr<std::int64_t> ScratchSizeBytes(std::string const& what, std::string const& text) {
  auto size = protocol::ParseBinarySize(text);
  if (!size.ok() || size->is_zero() || size->is_unlimited()) {
    return Status(StatusCode::kInvalidArgument, what + ": expected a size such as 1g");
  }
  return static_cast<std::int64_t>(size->units() / protocol::Decimal::kUnitsPerOne);
}

StatusOr<std::string> ResolveScratchBacking(std::string const& asked) {
  if (asked == kScratchTmpfs) return std::string(kScratchTmpfs);
  if (asked != kScratchDisk && asked != "auto") {
    return Status(StatusCode::kInvalidArgument,
                  "--scratch: expected auto, disk or tmpfs, not '" + asked + "'");
  }
  std::string missing;
  if (access("/dev/loop-control", R_OK | W_OK) != 0)
    missing = "no /dev/loop-control";
  else if (server::FindSystemTool("mkfs.ext4").empty())
    missing = "no mkfs.ext4 (e2fsprogs)";
  else if (server::FindSystemTool("mount").empty())
    missing = "no mount (util-linux)";
  if (missing.empty()) return std::string(kScratchDisk);
  if (asked == "auto") return std::string(kScratchTmpfs);
  return Status(StatusCode::kFailedPrecondition,
                "--scratch disk needs loop devices and ext4 tools: " + missing);
}

Status PrepareDiskScratch(std::string const& kernel_dir, ScratchConfig const& config, int uid,
                          int gid) {
  auto home = ScratchSizeBytes("home size", config.home_size);
  if (!home.ok()) return home.status();
  auto tmp = ScratchSizeBytes("tmp size", config.tmp_size);
  if (!tmp.ok()) return tmp.status();
  std::string image = kernel_dir + "/scratch.img";
  std::string mount_point = kernel_dir + "/scratch";
  {
    int fd = open(image.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
      return Status(StatusCode::kInternal, "cannot create " + image + ": " + std::strerror(errno));
    int rc = ftruncate(fd, *home + *tmp);
    int err = errno;
    close(fd);
    if (rc != 0)
      return Status(StatusCode::kInternal, "cannot size " + image + ": " + std::strerror(err));
  }
  // No journal (scratch does not outlive its kernel), no blocks kept for root (the quota is
  // the work user's), inode tables written lazily: a few milliseconds whatever the size.
  std::string owner = std::to_string(uid) + ":" + std::to_string(gid);
  if (auto s = server::RunTool(
          {server::FindSystemTool("mkfs.ext4"), "-q", "-F", "-m", "0", "-O", "^has_journal", "-E",
           "root_owner=" + owner + ",lazy_itable_init=1", image},
          std::chrono::seconds(30));
      !s.ok()) {
    return s;
  }
  std::error_code ec;
  fs::create_directory(mount_point, ec);
  if (auto s = server::RunTool(
          {server::FindSystemTool("mount"), "-o", "loop,nosuid,nodev", image, mount_point},
          std::chrono::seconds(30));
      !s.ok()) {
    return s;
  }
  std::string home_dir = mount_point + "/home", tmp_dir = mount_point + "/tmp";
  if (mkdir(home_dir.c_str(), 0755) != 0 || chown(home_dir.c_str(), uid, gid) != 0 ||
      mkdir(tmp_dir.c_str(), 0777) != 0 || chmod(tmp_dir.c_str(), 01777) != 0) {
    int err = errno;
    ReleaseKernelMounts(kernel_dir);
    return Status(StatusCode::kInternal, "cannot make the scratch directories in " + mount_point +
                                             ": " + std::strerror(err));
  }
  // lost+found is root's, and not the kernel's business.
  fs::remove(mount_point + "/lost+found", ec);
  return Status();
}

void ReleaseKernelMounts(std::string const& kernel_dir) {
  Unmount(kernel_dir + "/rootfs");
  std::string mount_point = kernel_dir + "/scratch";
  // The loop device was set up with autoclear by mount(8): it goes with the last unmount.
  while (umount2(mount_point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
  }
}

}  // namespace bai::agent
