// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/vfolders/mounts.h"

#include <algorithm>

namespace bai::manager::vfolders {
namespace {

namespace p = protocol;

constexpr char kHome[] = "/home/work";

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// "/home/work/<path>" for a path relative to /home/work or absolute beneath it.
StatusOr<std::string> KernelPath(std::string const& folder, std::string path) {
  std::string const home = std::string(kHome) + "/";
  if (!path.empty() && path[0] == '/') {
    if (path.rfind(home, 0) != 0) {
      return Invalid("mount " + folder + ": " + path +
                     " is outside /home/work (folders are mounted beneath it)");
    }
    path = path.substr(home.size());
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.empty()) return Invalid("mount " + folder + ": the path is /home/work itself");
  if (path.size() > 1024 || path.find('\0') != std::string::npos) {
    return Invalid("mount " + folder + ": the path is too long or has a NUL");
  }
  std::size_t start = 0;
  bool first = true;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == ".." || part.size() > 255) {
      return Invalid("mount " + folder + ": '" + path + "' has an empty, '.' or '..' part");
    }
    // The first level is where dot-folders and the session's own files live: the folder name
    // rules (reserved names included) apply to it.
    if (first) {
      if (auto s = p::CheckVFolderName(part); !s.ok()) {
        return Invalid("mount " + folder + ": " + s.message());
      }
      first = false;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return home + path;
}

bool Beneath(std::string const& a, std::string const& b) {
  return a == b || a.rfind(b + "/", 0) == 0 || b.rfind(a + "/", 0) == 0;
}

}  // namespace

StatusOr<std::vector<PlannedMount>> PlanMounts(std::vector<MountRequest> const& requests,
                                               std::vector<VisibleFolder> const& visible) {
  std::vector<PlannedMount> out;
  for (auto const& r : requests) {
    std::string hex = FolderIdHex(r.folder);
    VisibleFolder const* found = nullptr;
    VisibleFolder const* trashed = nullptr;
    for (auto const& v : visible) {
      bool by_id = hex.size() == 32 && v.folder.id == hex;
      if (!by_id && v.folder.name != r.folder) continue;
      if (InTrash(v.folder)) {
        if (by_id || !trashed) trashed = &v;
        continue;
      }
      if (by_id || !found || v.access.relation == Relation::kOwner) found = &v;
      if (by_id) break;
    }
    if (!found && trashed) {
      return Status(StatusCode::kFailedPrecondition,
                    "mount " + r.folder + ": the folder is in the trash; restore it first");
    }
    if (!found) return Status(StatusCode::kNotFound, "No such virtual folder: " + r.folder);
    auto const& f = found->folder;
    if (f.status != p::VFolderStatus::kReady && f.status != p::VFolderStatus::kMounted) {
      return Status(StatusCode::kFailedPrecondition, "mount " + r.folder + ": the folder is " +
                                                         std::string(p::ToString(f.status)) +
                                                         ", not ready");
    }
    std::optional<p::VFolderPermission> asked;
    if (r.permission) {
      asked = p::ParseVFolderPermission(*r.permission);
      if (!asked) return Invalid("mount " + r.folder + ": permission is ro, rw or wd");
    }
    auto perm = p::MountPermission(asked, found->access.permission);
    if (!perm) {
      return Status(StatusCode::kPermissionDenied,
                    "mount " + r.folder + ": you may mount it " +
                        std::string(p::ToString(found->access.permission)) + ", not " +
                        *r.permission);
    }
    auto path = KernelPath(r.folder, r.path.value_or(f.name));
    if (!path.ok()) return path.status();
    out.push_back({f, *path, *perm});
  }
  // The owner's dot-folders (.local, .config…) come to every session.
  for (auto const& v : visible) {
    auto const& f = v.folder;
    if (v.access.relation != Relation::kOwner || f.name.empty() || f.name[0] != '.' ||
        f.status != p::VFolderStatus::kReady) {
      continue;
    }
    bool asked = std::any_of(out.begin(), out.end(),
                             [&](PlannedMount const& m) { return m.folder.id == f.id; });
    if (!asked) out.push_back({f, std::string(kHome) + "/" + f.name, v.access.permission});
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (std::size_t j = i + 1; j < out.size(); ++j) {
      if (out[i].folder.id == out[j].folder.id) {
        return Invalid("folder " + out[i].folder.name + " is mounted twice");
      }
      if (Beneath(out[i].kernel_path, out[j].kernel_path)) {
        return Invalid("mounts " + out[i].kernel_path + " and " + out[j].kernel_path + " overlap");
      }
    }
  }
  return out;
}

}  // namespace bai::manager::vfolders
