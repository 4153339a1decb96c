// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/vfolder_wire.h"

#include "bai/protocol/resource.h"
#include "bai/protocol/signing.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/protocol/wire_json.h"
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

using nlohmann::json;

json NullIfEmpty(std::string const& text) { return text.empty() ? json(nullptr) : json(text); }

// 23.09's `max_size` is MiB, rounded up; bai's `max_size_bytes` beside it is exact.
void WriteMaxSize(json& j, std::int64_t bytes) {
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  j["max_size"] = (bytes + kMiB - 1) / kMiB;
  j["max_size_bytes"] = bytes;
}

VFolderInfo InfoFrom(json const& object, internal::FieldReader& r) {
  internal::Lenient l(object, r);
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
  f.user_email = r.String("user_email");
  f.group_name = r.String("group_name");
  f.creator = r.String("creator");
  f.created_at = l.Str({"created_at", "created"}).value_or("");
  f.last_used = r.String("last_used");
  f.is_owner = r.Bool("is_owner", false);
  f.cloneable = r.Bool("cloneable", false);
  f.max_files = r.Int("max_files", 0);
  // bai's exact bytes, else 23.09's MiB.
  f.max_size = r.OptInt("max_size_bytes").value_or(r.Int("max_size", 0) * (std::int64_t{1} << 20));
  f.num_files = r.OptInt("num_files");
  if (!f.num_files) f.num_files = r.OptInt("numFiles");
  f.used_bytes = r.OptInt("used_bytes").value_or(r.Int("cur_size", 0));  // 23.09 lists: cur_size
  return f;
}

json FolderObject(VFolderInfo const& f, VFolderAnswer answer, std::string_view bgtask_id) {
  json j = {{"id", f.id},
            {"name", f.name},
            {"host", f.host},
            {"usage_mode", f.usage_mode},
            {"permission", f.permission},
            {"user", NullIfEmpty(f.user)},
            {"group", NullIfEmpty(f.group)},
            {"cloneable", f.cloneable}};
  switch (answer) {
    case VFolderAnswer::kCreated:
      j["quota_scope_id"] = f.quota_scope_id;
      WriteMaxSize(j, f.max_size);
      j["creator"] = f.creator;
      j["ownership_type"] = f.ownership_type;
      j["status"] = f.status;
      break;
    case VFolderAnswer::kListed:
      j["quota_scope_id"] = f.quota_scope_id;
      j["status"] = f.status;
      j["created_at"] = f.created_at;
      j["is_owner"] = f.is_owner;
      j["creator"] = f.creator;
      j["user_email"] = NullIfEmpty(f.user_email);
      j["group_name"] = NullIfEmpty(f.group_name);
      j["ownership_type"] = f.ownership_type;
      j["type"] = f.ownership_type;
      j["max_files"] = f.max_files;
      WriteMaxSize(j, f.max_size);
      j["cur_size"] = f.used_bytes;
      j["num_files"] = f.num_files.value_or(0);  // bai's: counted as info counts them
      j["used_bytes"] = f.used_bytes;
      break;
    case VFolderAnswer::kInfo:
      j["quota_scope_id"] = f.quota_scope_id;
      j["status"] = f.status;
      j["numFiles"] = f.num_files.value_or(0);
      j["num_files"] = f.num_files.value_or(0);
      j["used_bytes"] = f.used_bytes;
      j["created"] = f.created_at;
      j["created_at"] = f.created_at;
      j["last_used"] = NullIfEmpty(f.last_used);
      j["type"] = f.ownership_type;
      j["is_owner"] = f.is_owner;
      WriteMaxSize(j, f.max_size);
      j["cur_size"] = f.used_bytes;
      break;
    case VFolderAnswer::kCloned:
      j["creator"] = f.creator;
      j["ownership_type"] = f.ownership_type;
      j["bgtask_id"] = std::string(bgtask_id);
      break;
  }
  return j;
}

}  // namespace

std::string EncodeVFolderCreateRequest(VFolderCreateRequest const& request) {
  json body = {{"name", request.name}, {"cloneable", request.cloneable}};
  if (!request.host.empty()) body["host"] = request.host;
  if (!request.usage_mode.empty()) body["usage_mode"] = request.usage_mode;
  if (!request.permission.empty()) body["permission"] = request.permission;
  if (!request.group.empty()) body["group"] = request.group;
  if (request.quota > 0) body["quota"] = request.quota;
  return body.dump();
}

StatusOr<VFolderCreateRequest> DecodeVFolderCreateRequest(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "folder creation");
  if (!j.ok()) return j.status();
  return internal::VFolderCreateRequestFromJson(*j);
}

}  // namespace bai::protocol

namespace bai::internal {

StatusOr<protocol::VFolderCreateRequest> VFolderCreateRequestFromJson(
    nlohmann::json const& object) {
  using namespace protocol;  // the request types
  internal::FieldReader r(object);
  internal::Lenient l(object, r);
  VFolderCreateRequest out;
  out.name = r.Required("name");
  out.host = l.Str({"host", "folder_host"}).value_or("");
  out.usage_mode = l.Str({"usage_mode", "usageMode"}).value_or("");
  out.permission = l.Str({"permission"}).value_or("");
  out.group = l.Str({"group", "groupId", "group_id"}).value_or("");
  out.cloneable = l.Bool({"cloneable"}).value_or(false);
  if (auto const* quota = l.Find({"quota"}); quota != nullptr && !quota->is_null()) {
    // 23.09: a binary size ("10g", "512m") or a number of bytes.
    std::optional<std::int64_t> bytes;
    if (quota->is_number_integer()) {
      bytes = quota->get<std::int64_t>();
    } else if (quota->is_string()) {
      auto size = ParseBinarySize(quota->get<std::string>());
      if (size.ok() && !size->is_unlimited()) {
        bytes = static_cast<std::int64_t>(size->units() / Decimal::kUnitsPerOne);
      }
    }
    if (!bytes || *bytes < 0) {
      r.Fail("quota", "a size such as 10g, or a number of bytes");
    } else {
      out.quota = *bytes;
    }
  }
  if (l.Find({"unmanaged_path", "unmanagedPath"}) != nullptr) {
    r.Refuse("unmanaged_path", "unmanaged folders are not supported by this server");
  }
  if (!r.ok()) return internal::FieldProblem(r);
  return out;
}

StatusOr<protocol::VFolderCloneRequest> VFolderCloneRequestFromJson(nlohmann::json const& object) {
  using namespace protocol;  // the request types
  internal::FieldReader r(object);
  internal::Lenient l(object, r);
  VFolderCloneRequest out;
  out.target_name = l.Str({"target_name", "targetName"}).value_or("");
  if (out.target_name.empty()) r.Fail("target_name", "a non-empty string");
  out.target_host = l.Str({"target_host", "targetHost", "folder_host"}).value_or("");
  out.usage_mode = l.Str({"usage_mode", "usageMode"}).value_or("");
  out.permission = l.Str({"permission"}).value_or("");
  out.cloneable = l.Bool({"cloneable"}).value_or(false);
  if (!r.ok()) return internal::FieldProblem(r);
  return out;
}

}  // namespace bai::internal

namespace bai::protocol {

std::string EncodeVFolderCloneRequest(VFolderCloneRequest const& request) {
  json body = {{"target_name", request.target_name}, {"cloneable", request.cloneable}};
  if (!request.target_host.empty()) body["target_host"] = request.target_host;
  if (!request.usage_mode.empty()) body["usage_mode"] = request.usage_mode;
  if (!request.permission.empty()) body["permission"] = request.permission;
  return body.dump();
}

StatusOr<VFolderCloneRequest> DecodeVFolderCloneRequest(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "clone request");
  if (!j.ok()) return j.status();
  return internal::VFolderCloneRequestFromJson(*j);
}

std::string EncodeVFolderInfo(VFolderInfo const& folder, VFolderAnswer answer,
                              std::string_view bgtask_id) {
  return FolderObject(folder, answer, bgtask_id).dump();
}

std::string EncodeVFolderList(std::vector<VFolderInfo> const& folders) {
  json out = json::array();
  for (auto const& f : folders) out.push_back(FolderObject(f, VFolderAnswer::kListed, {}));
  return out.dump();
}

StatusOr<VFolderInfo> DecodeVFolderInfo(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "folder");
  if (!j.ok()) return j.status();
  internal::FieldReader r(*j);
  auto f = InfoFrom(*j, r);
  if (!r.ok()) return internal::FieldProblem(r);
  return f;
}

StatusOr<VFolderCloneResult> DecodeVFolderCloneResult(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "clone answer");
  if (!j.ok()) return j.status();
  internal::FieldReader r(*j);
  VFolderCloneResult out{r.String("id"), r.String("name"), r.Required("bgtask_id")};
  if (!r.ok()) return internal::FieldProblem(r);
  return out;
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
    out.push_back(InfoFrom(item, r));
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

std::string EncodeTransferTicket(TransferTicket const& ticket) {
  json j{{"token", ticket.token}, {"url", ticket.url}};
  if (ticket.console_url) j["console_url"] = *ticket.console_url;
  return j.dump();
}

StatusOr<TransferTicket> DecodeTransferTicket(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "ticket");
  if (!j.ok()) return j.status();
  internal::FieldReader r(*j);
  TransferTicket t{r.Required("token"), r.Required("url"), r.OptString("console_url")};
  if (!r.ok()) return internal::FieldProblem(r);
  return t;
}

std::string EncodeVFolderInvitations(std::vector<VFolderInvitation> const& invitations) {
  json out = json::array();
  for (auto const& i : invitations) {
    out.push_back({{"id", i.id},
                   {"inviter", i.inviter},
                   {"invitee", i.invitee},
                   {"perm", i.permission},
                   {"state", i.state},
                   {"created_at", i.created_at},
                   {"modified_at", i.modified_at},
                   {"vfolder_id", i.vfolder_id},
                   {"vfolder_name", i.vfolder_name}});
  }
  return json{{"invitations", out}}.dump();
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
    i.modified_at = r.String("modified_at");
    if (!r.ok()) return internal::FieldProblem(r);
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace bai::protocol
