// SPDX-License-Identifier: Apache-2.0
#pragma once
// What an image's own config means for its kernel's process (issue 46, item 5): the user it runs
// as, the /etc/passwd and /etc/group it sees, the command of a batch session that names none,
// the variables `ai.backend.envs.corecount` names. Pure: the runc backend reads the files and
// mounts the results.

#include "bai/status.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace bai::agent {

struct Image;

/// A user a kernel's processes run as.
struct KernelUser {
  int uid = 1000;
  int gid = 1000;
  std::string name = "work";
};

/// The image config's `User` ("name", "uid", "name:group", "uid:gid", …) against the image's
/// own /etc/passwd and /etc/group text; a name neither file has is refused in words. A uid
/// the passwd lacks keeps the name "work" (the kernel's files still say whose they are).
StatusOr<KernelUser> ResolveImageUser(std::string_view user, std::string_view passwd,
                                      std::string_view group);

/// The image's /etc/passwd with `user` in it at /home/work (an entry of the same name or uid is
/// replaced), so that `whoami`, `~` and Python's getpass work in an image that never heard of
/// the work user. An empty or unreadable image file gives root and the user.
std::string PasswdWithUser(std::string_view image_passwd, KernelUser const& user);
/// The same for /etc/group: the user's group (by name and gid) with the user in it.
std::string GroupWithUser(std::string_view image_group, KernelUser const& user);

/// A batch session's command when it names none: the image's Entrypoint then Cmd, each word
/// shell-quoted, run in its WorkingDir (`cd DIR && exec …`); "" when the image names neither.
std::string ImageCommandLine(Image const& image);

/// The variables `ai.backend.envs.corecount` names (comma-separated; blanks and names that are
/// not shell identifiers dropped), each to be set to the kernel's CPU count as 24.09 does.
std::vector<std::string> CoreCountVariables(std::map<std::string, std::string> const& labels);

}  // namespace bai::agent
