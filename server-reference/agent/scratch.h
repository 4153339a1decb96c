// SPDX-License-Identifier: Apache-2.0
#pragma once
// A kernel's scratch space, /home/work and /tmp: a tmpfs each (fast, counted against the
// session's memory: DECISIONS.md "Containers") or one ext4 image on the agent's disk, loop
// mounted, whose size is the quota (writing to it never costs the session memory).

#include "bai/status.h"

#include <cstdint>
#include <string>

namespace bai::agent {

inline constexpr char kScratchTmpfs[] = "tmpfs";
inline constexpr char kScratchDisk[] = "disk";

struct ScratchConfig {
  std::string backing = kScratchTmpfs;  ///< kScratchTmpfs or kScratchDisk
  std::string home_size = "1g";         ///< /home/work
  std::string tmp_size = "256m";        ///< /tmp (disk: in the same image as /home/work)
};

/// A scratch size ("1g", "256m") in bytes; zero, unlimited or not a size is an error naming
/// WHAT.
StatusOr<std::int64_t> ScratchSizeBytes(std::string const& what, std::string const& text);

/// `auto` (disk where this host can loop-mount an ext4 image, else tmpfs), `disk` or `tmpfs`,
/// to what this agent uses; an unknown word or `disk` on a host that cannot is an error.
StatusOr<std::string> ResolveScratchBacking(std::string const& asked);

/// Disk backing: makes KERNEL_DIR/scratch.img (sparse, home + tmp bytes), an ext4 file system
/// owned by uid:gid, mounts it at KERNEL_DIR/scratch (nosuid, nodev) and makes its `home`
/// (0755, the work user's) and `tmp` (1777) directories, what the container binds.
Status PrepareDiskScratch(std::string const& kernel_dir, ScratchConfig const& config, int uid,
                          int gid);

/// Unmounts what a kernel's directory holds mounted, before the directory is removed
/// (removing a mounted scratch would empty it, not free it): KERNEL_DIR/rootfs, a layered
/// image's overlay (runc_backend.cc), and KERNEL_DIR/scratch. Idempotent.
void ReleaseKernelMounts(std::string const& kernel_dir);

}  // namespace bai::agent
