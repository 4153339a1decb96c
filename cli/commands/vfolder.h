// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

#include <functional>
#include <string>
#include <vector>

namespace bai {
class VFolderClient;
}

namespace bai::cli {

/// What uploads and downloads share on the command line.
struct TransferFlags {
  std::string dst;  ///< upload: directory in the folder; download: local directory
  bool recursive = false;
  int parallel = 4;
  std::string progress;  ///< bar, json, none; empty: a bar when stderr is a terminal
};

/// `bai vfolder upload NAME FILE… [--dst DIR]`: resumes an upload interrupted earlier.
int RunVFolderUpload(std::string const& folder, std::vector<std::string> const& files,
                     TransferFlags const& flags, Context& ctx);
/// `bai vfolder download NAME PATH… [--dst DIR]`.
int RunVFolderDownload(std::string const& folder, std::vector<std::string> const& paths,
                       std::string const& local_dir, TransferFlags const& flags, Context& ctx);
/// `bai cp [-r] SRC… DST`, one side VFOLDER:PATH, placed as cp(1) places (bai/copy_rule.h).
int RunCp(std::vector<std::string> const& args, TransferFlags const& flags, Context& ctx);

/// The `vfolder` noun (alias `vf`) and the root `cp`.
void AddVFolderCommands(CommandSet& set);
/// Its sharing verbs: invite, invitations, accept, reject, leave, share, unshare, clone
/// (vfolder_share.cc).
void AddVFolderSharingCommands(CommandSet& set, CLI::App* noun);

/// Runs `body` with a VFolderClient, reporting its error as every command does (exit code).
int WithFolders(Context& ctx, std::function<Status(VFolderClient&)> const& body);

}  // namespace bai::cli
