// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/vfolder_wire.h"

#include "bai/protocol/signing.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

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

namespace {

VFolderInfo InfoFrom(internal::FieldReader& r) {
  VFolderInfo f;
  f.id = r.Required("id");
  f.name = r.Required("name");
  f.host = r.String("host");
  f.quota_scope_id = r.String("quota_scope_id");
  f.status = r.String("status", "ready");
  f.usage_mode = r.String("usage_mode", "general");
  f.permission = r.String("permission");
  f.ownership_type = r.String("ownership_type", r.String("type", "user"));
  f.user = r.String("user");
  f.group = r.String("group");
  f.creator = r.String("creator");
  f.created_at = r.String("created_at");
  f.is_owner = r.Bool("is_owner", false);
  f.cloneable = r.Bool("cloneable", false);
  f.num_files = r.Int("num_files", 0);
  f.used_bytes = r.Int("used_bytes", 0);
  return f;
}

}  // namespace

StatusOr<VFolderInfo> DecodeVFolderInfo(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "folder");
  if (!j.ok()) return j.status();
  internal::FieldReader r(*j);
  auto f = InfoFrom(r);
  if (!r.ok()) return internal::FieldProblem(r);
  return f;
}

StatusOr<std::vector<VFolderInfo>> DecodeVFolderList(std::string_view json_array) {
  auto j = nlohmann::json::parse(json_array, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    return Status(StatusCode::kInvalidArgument, "Malformed folder list: expected a JSON array");
  }
  std::vector<VFolderInfo> out;
  for (auto const& item : j) {
    if (!item.is_object()) {
      return Status(StatusCode::kInvalidArgument, "Malformed folder list: an entry is no object");
    }
    internal::FieldReader r(item);
    out.push_back(InfoFrom(r));
    if (!r.ok()) return internal::FieldProblem(r);
  }
  return out;
}

namespace {

nlohmann::json FilesArray(std::vector<VFolderFile> const& files) {
  auto out = nlohmann::json::array();
  for (auto const& f : files) {
    out.push_back({{"name", f.name},
                   {"type", f.type},
                   {"size", f.size},
                   {"mode", f.mode},
                   {"created", f.created},
                   {"modified", f.modified}});
  }
  return out;
}

// Seconds since the epoch of an ISO 8601 time, with its fraction (0 when unreadable).
double EpochSeconds(std::string const& iso) {
  auto parsed = ParseHttpDate(iso);
  if (!parsed) return 0;
  double seconds = static_cast<double>(parsed->unix_seconds);
  auto dot = iso.find('.');
  if (dot != std::string::npos && iso.find('T') < dot) {
    double scale = 0.1;
    for (auto i = dot + 1; i < iso.size() && iso[i] >= '0' && iso[i] <= '9'; ++i, scale /= 10) {
      seconds += (iso[i] - '0') * scale;
    }
  }
  return seconds;
}

// "-rw-r--r--" from a type and three octal digits, as Python's stat.filemode writes it.
std::string FileMode(VFolderFile const& f) {
  std::string out(1, f.IsDirectory() ? 'd' : f.type == "SYMLINK" ? 'l' : '-');
  for (std::size_t i = 0; i < 3; ++i) {
    int bits = i < f.mode.size() && f.mode[i] >= '0' && f.mode[i] <= '7' ? f.mode[i] - '0' : 0;
    out += (bits & 4) ? 'r' : '-';
    out += (bits & 2) ? 'w' : '-';
    out += (bits & 1) ? 'x' : '-';
  }
  return out;
}

}  // namespace

std::string EncodeVFolderFiles(std::vector<VFolderFile> const& files) {
  return FilesArray(files).dump();
}

std::string EncodeVFolderListing(std::vector<VFolderFile> const& files) {
  auto legacy = nlohmann::json::array();
  for (auto const& f : files) {
    legacy.push_back({{"filename", f.name},
                      {"size", f.size},
                      {"mode", FileMode(f)},
                      {"ctime", EpochSeconds(f.created)},
                      {"atime", 0},
                      {"mtime", EpochSeconds(f.modified)}});
  }
  return nlohmann::json{{"items", FilesArray(files)}, {"files", legacy.dump()}}.dump();
}

StatusOr<std::vector<VFolderFile>> DecodeVFolderListing(std::string_view body) {
  auto j = internal::ObjectOf(body, "listing");
  if (!j.ok()) return j.status();
  auto items = j->find("items");
  if (items == j->end() || !items->is_array()) {
    return Status(StatusCode::kInvalidArgument, "Malformed listing: no 'items' array");
  }
  std::vector<VFolderFile> out;
  for (auto const& item : *items) {
    if (!item.is_object()) {
      return Status(StatusCode::kInvalidArgument, "Malformed listing: an item is no object");
    }
    internal::FieldReader r(item);
    VFolderFile f;
    f.name = r.Required("name");
    f.type = r.String("type", "FILE");
    f.size = r.Int("size", 0);
    f.mode = r.String("mode");
    f.created = r.String("created");
    f.modified = r.String("modified");
    if (!r.ok()) return internal::FieldProblem(r);
    out.push_back(std::move(f));
  }
  return out;
}

StatusOr<TransferTicket> DecodeTransferTicket(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "ticket");
  if (!j.ok()) return j.status();
  internal::FieldReader r(*j);
  TransferTicket t{r.Required("token"), r.Required("url")};
  if (!r.ok()) return internal::FieldProblem(r);
  return t;
}

StatusOr<std::vector<VFolderInvitation>> DecodeVFolderInvitations(std::string_view body) {
  auto j = internal::ObjectOf(body, "invitation list");
  if (!j.ok()) return j.status();
  auto const& list = (*j)["invitations"];
  if (!list.is_array()) {
    return Status(StatusCode::kInvalidArgument, "Malformed invitation list: no 'invitations'");
  }
  std::vector<VFolderInvitation> out;
  for (auto const& item : list) {
    if (!item.is_object()) {
      return Status(StatusCode::kInvalidArgument,
                    "Malformed invitation list: an entry is no object");
    }
    internal::FieldReader r(item);
    VFolderInvitation i;
    i.id = r.Required("id");
    i.vfolder_id = r.String("vfolder_id");
    i.vfolder_name = r.String("vfolder_name");
    i.inviter = r.String("inviter");
    i.invitee = r.String("invitee");
    i.permission = r.String("perm");
    i.state = r.String("state", "pending");
    i.created_at = r.String("created_at");
    if (!r.ok()) return internal::FieldProblem(r);
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace bai::protocol
