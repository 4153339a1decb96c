// SPDX-License-Identifier: Apache-2.0
#include "bai/copy_rule.h"

#include <sys/stat.h>

namespace bai {

std::string LastName(std::string path) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string JoinPath(std::string const& dir, std::string const& name) {
  if (dir.empty() || dir == ".") return name;
  if (name.empty()) return dir;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

PathKind LocalPathKind(std::string const& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return PathKind::kMissing;
  return S_ISDIR(st.st_mode) ? PathKind::kDirectory : PathKind::kFile;
}

bool CopiesInto(std::string const& destination, PathKind destination_kind) {
  return destination.empty() || destination == "." || destination.back() == '/' ||
         destination_kind == PathKind::kDirectory;
}

StatusOr<std::vector<std::string>> PlaceCopies(std::vector<CopySource> const& sources,
                                               std::string const& destination,
                                               PathKind destination_kind, bool recursive) {
  if (sources.empty()) return Status(StatusCode::kInvalidArgument, "nothing to copy");
  bool into = CopiesInto(destination, destination_kind);
  if (into && destination_kind == PathKind::kFile) {
    return Status(StatusCode::kInvalidArgument, destination + " is a file, not a directory");
  }
  if (!into && sources.size() > 1) {
    return Status(
        StatusCode::kInvalidArgument,
        "copying several sources needs a directory: " + destination +
            (destination_kind == PathKind::kMissing ? " does not exist (end it with '/' to make it)"
                                                    : " is a file"));
  }
  std::vector<std::string> targets;
  for (auto const& s : sources) {
    if (s.kind == PathKind::kMissing) {
      return Status(StatusCode::kNotFound, "no such file or directory: " + s.path);
    }
    std::string name = LastName(s.path);
    if (into && (name.empty() || name == "." || name == "..")) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot name a copy of " + s.path + " (name the destination)");
    }
    if (s.kind == PathKind::kDirectory) {
      if (!recursive) {
        return Status(StatusCode::kInvalidArgument, s.path + " is a directory (use -r)");
      }
      if (!into && destination_kind == PathKind::kFile) {
        return Status(StatusCode::kInvalidArgument,
                      "cannot put the directory " + s.path + " over the file " + destination);
      }
    }
    targets.push_back(into ? JoinPath(destination, name) : destination);
  }
  return targets;
}

}  // namespace bai
