// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/vfolder_wire.h"

#include <array>
#include <string>
#include <utility>

namespace bai::protocol {
namespace {

// Each enum's spellings, in its order: the one table both directions read.
constexpr std::array kPermissions = {std::pair{VFolderPermission::kReadOnly, "ro"},
                                     std::pair{VFolderPermission::kReadWrite, "rw"},
                                     std::pair{VFolderPermission::kReadWriteDelete, "wd"}};
constexpr std::array kUsageModes = {std::pair{VFolderUsageMode::kGeneral, "general"},
                                    std::pair{VFolderUsageMode::kModel, "model"},
                                    std::pair{VFolderUsageMode::kData, "data"}};
constexpr std::array kOwnerships = {std::pair{VFolderOwnership::kUser, "user"},
                                    std::pair{VFolderOwnership::kGroup, "group"}};
constexpr std::array kStatuses = {
    std::pair{VFolderStatus::kReady, "ready"},
    std::pair{VFolderStatus::kPerforming, "performing"},
    std::pair{VFolderStatus::kCloning, "cloning"},
    std::pair{VFolderStatus::kMounted, "mounted"},
    std::pair{VFolderStatus::kError, "error"},
    std::pair{VFolderStatus::kDeletePending, "delete-pending"},
    std::pair{VFolderStatus::kDeleteOngoing, "delete-ongoing"},
    std::pair{VFolderStatus::kDeleteComplete, "delete-complete"},
    std::pair{VFolderStatus::kDeleteError, "delete-error"},
};

template <class Table, class E>
std::string_view Name(Table const& table, E value) {
  for (auto const& [v, name] : table) {
    if (v == value) return name;
  }
  return "";
}

template <class E, class Table>
std::optional<E> Parse(Table const& table, std::string_view text) {
  for (auto const& [v, name] : table) {
    if (text == name) return v;
  }
  return std::nullopt;
}

bool IsSeparator(char c) { return c == '.' || c == '_' || c == '-'; }

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// `.<lowercase letters and digits>` followed by `suffix`: shell rc and profile files.
bool IsDotFile(std::string_view name, std::string_view suffix) {
  if (name.size() <= 1 + suffix.size() || name[0] != '.' || !EndsWith(name, suffix)) return false;
  for (char c : name.substr(1, name.size() - 1 - suffix.size())) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

Status Bad(std::string_view name, std::string const& why) {
  return Status(StatusCode::kInvalidArgument,
                "'" + std::string(name.substr(0, 80)) + "' is not a folder name: " + why);
}

}  // namespace

std::string_view ToString(VFolderPermission p) { return Name(kPermissions, p); }
std::optional<VFolderPermission> ParseVFolderPermission(std::string_view text) {
  return Parse<VFolderPermission>(kPermissions, text);
}
std::string_view ToString(VFolderUsageMode m) { return Name(kUsageModes, m); }
std::optional<VFolderUsageMode> ParseVFolderUsageMode(std::string_view text) {
  return Parse<VFolderUsageMode>(kUsageModes, text);
}
std::string_view ToString(VFolderOwnership o) { return Name(kOwnerships, o); }
std::optional<VFolderOwnership> ParseVFolderOwnership(std::string_view text) {
  return Parse<VFolderOwnership>(kOwnerships, text);
}
std::string_view ToString(VFolderStatus s) { return Name(kStatuses, s); }
std::optional<VFolderStatus> ParseVFolderStatus(std::string_view text) {
  return Parse<VFolderStatus>(kStatuses, text);
}

std::optional<VFolderPermission> MountPermission(std::optional<VFolderPermission> requested,
                                                 VFolderPermission granted) {
  if (!requested) return granted;
  if (static_cast<int>(*requested) > static_cast<int>(granted)) return std::nullopt;
  return requested;
}

Status CheckVFolderName(std::string_view name, bool project_folder) {
  if (name.empty()) return Bad(name, "empty");
  if (name.size() > kVFolderNameMax) {
    return Bad(name, "longer than " + std::to_string(kVFolderNameMax) + " characters");
  }
  for (char c : name) {
    if (!IsAlnum(c) && !IsSeparator(c)) {
      return Bad(name, "only ASCII letters, digits, '.', '_' and '-' are allowed");
    }
  }
  bool dot = name[0] == '.';
  if (dot && project_folder) return Bad(name, "a project folder's name may not start with '.'");
  std::string_view body = dot ? name.substr(1) : name;
  if (body.empty()) return Bad(name, "nothing after the '.'");
  if (IsSeparator(body.front())) {
    return Bad(name, dot ? "only one '.' may lead" : "it may not start with '_' or '-'");
  }
  if (IsSeparator(name.back())) return Bad(name, "it may not end with '.', '_' or '-'");
  for (std::size_t i = 1; i < body.size(); ++i) {
    if (IsSeparator(body[i]) && IsSeparator(body[i - 1])) {
      return Bad(name, "two of '.', '_', '-' in a row");
    }
  }
  for (std::string_view reserved : {".terminfo", ".jupyter", ".tmux.conf", ".ssh"}) {
    if (name == reserved) return Bad(name, "reserved (the session's own files live there)");
  }
  if (IsDotFile(name, "rc") || IsDotFile(name, "_profile")) {
    return Bad(name, "reserved (a shell's rc or profile file)");
  }
  return Status();
}

}  // namespace bai::protocol
