// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/fs/confined_tree.h"
#include "server-reference/common/wire/runner_messages.h"

#include <string>
#include <string_view>

/// A kernel's work directory as the file requests of a session see it (PROTOCOL.md §5.6). The
/// kernel runner uses it inside the container on /home/work (so what it writes belongs to the
/// work user); the dummy agent on a directory of its own.
namespace bai::server {

/// `path` relative to /home/work (an absolute path is taken under it only).
inline StatusOr<std::string> WorkRelative(std::string_view path) {
  return RelativeBeneath(path, protocol::kSessionWorkDir);
}

/// Answers a file request on the directory `root` (seen as /home/work): the kernel runner's
/// and the dummy agent's one implementation of the runner protocol's `file` op.
runner_protocol::FileResult AnswerFileRequest(std::string const& root,
                                              runner_protocol::FileRequest const& request);

}  // namespace bai::server
