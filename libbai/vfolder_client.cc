// SPDX-License-Identifier: Apache-2.0
// VFolderClient's record calls: each one request to the manager (PROTOCOL.md §7). The transfers
// are in vfolder_transfer.cc.
#include "bai/vfolder_client.h"

#include "libbai/internal/server_request.h"
#include "libbai/protocol/server_dialect.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"
#include "libbai/util/url.h"

#include <nlohmann/json.hpp>

namespace bai {
namespace {

using nlohmann::json;

std::string Path(std::string const& folder, std::string const& rest = {}) {
  return "/folders/" + internal::EncodeSegment(folder) + rest;
}

// A request whose body a wire codec encoded.
StatusOr<ApiResponse> CallWith(Client const& client, std::string method, std::string path,
                               std::string body) {
  ApiRequest r(std::move(method), std::move(path));
  r.body = std::move(body);
  auto response = client.Send(r);
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return response;
}

// A request without a body.
StatusOr<ApiResponse> Call(Client const& client, std::string method, std::string path) {
  return CallWith(client, std::move(method), std::move(path), {});
}

// A request with one of the folder request types as its body.
template <class Request>
StatusOr<ApiResponse> Post(Client const& client, std::string path, Request const& request) {
  return CallWith(client, "POST", std::move(path), protocol::EncodeVFolderRequest(request));
}

Status Done(StatusOr<ApiResponse> const& r) { return r.ok() ? Status() : r.status(); }

// A call Backend.AI first routed as a DELETE with a JSON body, sent as this server reads it
// (server_request.h).
template <class Request>
StatusOr<ApiResponse> CallDeleteWith(Client const& client, std::string path, Request const& request,
                                     std::string_view what) {
  auto r = internal::RequestWithParams(client, "DELETE", std::move(path),
                                       internal::VFolderRequestToJson(request), what);
  if (!r.ok()) return r.status();
  auto response = client.Send(*r);
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return response;
}

}  // namespace

StatusOr<VFolderInfo> VFolderClient::Create(VFolderCreateRequest const& request) const {
  if (auto s = protocol::CheckVFolderName(request.name, !request.group.empty()); !s.ok()) {
    return s;
  }
  auto r = CallWith(client_, "POST", "/folders", protocol::EncodeVFolderCreateRequest(request));
  if (!r.ok()) return r.status();
  return protocol::DecodeVFolderInfo(r->body);
}

StatusOr<std::vector<VFolderInfo>> VFolderClient::List() const {
  auto r = Call(client_, "GET", "/folders");
  if (!r.ok()) return r.status();
  return protocol::DecodeVFolderList(r->body);
}

StatusOr<VFolderInfo> VFolderClient::Info(std::string const& folder) const {
  auto r = Call(client_, "GET", Path(folder));
  if (!r.ok()) return r.status();
  return protocol::DecodeVFolderInfo(r->body);
}

namespace {

// Whether the server keeps removed folders in a trash (Backend.AI 24.03 and later, bai); its
// description when it does not.
std::optional<ServerCapabilities> WithoutTrash(Client const& client) {
  auto server = client.server();
  if (server.ok() && !server->has("vfolder-trash")) return *server;
  return std::nullopt;
}

}  // namespace

Status VFolderClient::Delete(std::string const& folder) const {
  // Without a trash, DELETE /folders/{name} removes the folder and its files at once: never
  // done by a call that promises the trash.
  if (auto server = WithoutTrash(client_)) {
    return Status(
        StatusCode::kFailedPrecondition,
        "this server (" + internal::DescribeServer(*server) + ") has no folder trash (Backend.AI " +
            protocol::FirstReleaseWith("vfolder-trash") + " or later has one): removing " + folder +
            " there deletes it and its files for good; purge it to do that");
  }
  return Done(Call(client_, "DELETE", Path(folder)));
}

Status VFolderClient::Restore(std::string const& folder) const {
  if (auto server = WithoutTrash(client_)) {
    return internal::Needs(*server, "folder trash", protocol::FirstReleaseWith("vfolder-trash"));
  }
  // The trash-bin calls name a folder by id; a name is looked up among the caller's folders
  // (trash included).
  auto all = List();
  if (!all.ok()) return all.status();
  std::string id = folder;
  for (auto const& f : *all) {
    if (f.name == folder && f.status == "delete-pending") id = f.id;
  }
  return Done(Post(client_, "/folders/restore-from-trash-bin", protocol::VFolderByIdRequest{id}));
}

Status VFolderClient::Purge(std::string const& folder) const {
  if (WithoutTrash(client_)) return Done(Call(client_, "DELETE", Path(folder)));
  auto all = List();
  if (!all.ok()) return all.status();
  std::string id = folder;
  for (auto const& f : *all) {
    if (f.name == folder && f.status == "delete-pending") id = f.id;
  }
  return Done(Post(client_, "/folders/delete-from-trash-bin", protocol::VFolderByIdRequest{id}));
}

Status VFolderClient::Rename(std::string const& folder, std::string const& new_name) const {
  if (auto s = protocol::CheckVFolderName(new_name); !s.ok()) return s;
  return Done(Post(client_, Path(folder, "/rename"), protocol::VFolderRenameRequest{new_name}));
}

Status VFolderClient::SetQuota(std::string const& folder, std::int64_t max_bytes,
                               std::int64_t max_files) const {
  if (max_bytes < 0 || max_files < 0) {
    return Status(StatusCode::kInvalidArgument, "a quota is 0 (none) or more");
  }
  // The call names the folder by host and id (23.09's shape).
  auto info = Info(folder);
  if (!info.ok()) return info.status();
  return Done(Post(client_, "/folders/_/quota",
                   protocol::VFolderQuotaRequest{info->host, info->id, max_bytes, max_files}));
}

StatusOr<VFolderHosts> VFolderClient::Hosts() const {
  auto r = Call(client_, "GET", "/folders/_/hosts");
  if (!r.ok()) return r.status();
  auto j = json::parse(r->body, nullptr, false);
  if (!j.is_object()) return Status(StatusCode::kInternal, "Malformed hosts answer");
  VFolderHosts h;
  if (j.contains("default") && j["default"].is_string()) h.default_host = j["default"];
  for (auto const& a : j.value("allowed", json::array())) {
    if (a.is_string()) h.allowed.push_back(a);
  }
  return h;
}

StatusOr<std::vector<VFolderFile>> VFolderClient::Files(std::string const& folder,
                                                        std::string const& path) const {
  auto r = Call(client_, "GET", Path(folder, "/files?path=" + internal::EncodeSegment(path)));
  if (!r.ok()) return r.status();
  return protocol::DecodeVFolderListing(r->body);
}

Status VFolderClient::Mkdir(std::string const& folder, std::string const& path, bool parents,
                            bool exist_ok) const {
  auto s = Done(Post(client_, Path(folder, "/mkdir"),
                     protocol::VFolderMkdirRequest{{path}, parents, exist_ok}));
  if (s.ok()) return s;
  // A directory that is there already is a conflict (bai exits 6), not a failure.
  auto data = internal::ParseJson(s.error_info().data_json);
  if (data && data->contains("results") && (*data)["results"].contains("failed")) {
    auto const& failed = (*data)["results"]["failed"];
    bool all_exist = failed.is_array() && !failed.empty();
    for (auto const& f : failed) all_exist = all_exist && f.is_object() && f.value("exists", false);
    if (all_exist) {
      ErrorInfo info = s.error_info();
      return Status(StatusCode::kAlreadyExists, s.message(), std::move(info));
    }
  }
  return s;
}

Status VFolderClient::Move(std::string const& folder, std::string const& src,
                           std::string const& dst) const {
  return Done(
      Post(client_, Path(folder, "/move-file"), protocol::VFolderMoveFileRequest{src, dst}));
}

Status VFolderClient::RenameFile(std::string const& folder, std::string const& path,
                                 std::string const& new_name) const {
  return Done(Post(client_, Path(folder, "/rename-file"),
                   protocol::VFolderRenameFileRequest{path, new_name}));
}

Status VFolderClient::DeleteFiles(std::string const& folder, std::vector<std::string> const& paths,
                                  bool recursive) const {
  return Done(CallDeleteWith(client_, Path(folder, "/delete-files"),
                             protocol::VFolderDeleteFilesRequest{paths, recursive},
                             "delete files"));
}

namespace {

StatusOr<std::vector<std::string>> Strings(StatusOr<ApiResponse> const& r, char const* key) {
  if (!r.ok()) return r.status();
  auto j = json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) {
    return Status(StatusCode::kInternal, std::string("Malformed answer: no '") + key + "'");
  }
  std::vector<std::string> out;
  for (auto const& v : j[key]) {
    if (v.is_string()) out.push_back(v);
  }
  return out;
}

Status CheckPermission(std::string const& permission) {
  if (protocol::ParseVFolderPermission(permission)) return Status();
  return Status(StatusCode::kInvalidArgument,
                "permission is ro, rw or wd, not '" + permission + "'");
}

}  // namespace

StatusOr<std::vector<std::string>> VFolderClient::Invite(std::string const& folder,
                                                         std::vector<std::string> const& emails,
                                                         std::string const& permission) const {
  if (auto s = CheckPermission(permission); !s.ok()) return s;
  return Strings(
      Post(client_, Path(folder, "/invite"), protocol::VFolderInviteRequest{emails, permission}),
      "invited_ids");
}

StatusOr<std::vector<VFolderInvitation>> VFolderClient::Invitations(bool sent) const {
  auto r =
      Call(client_, "GET", sent ? "/folders/invitations/list-sent" : "/folders/invitations/list");
  if (!r.ok()) return r.status();
  return protocol::DecodeVFolderInvitations(r->body);
}

Status VFolderClient::AcceptInvitation(std::string const& invitation_id) const {
  return Done(Post(client_, "/folders/invitations/accept",
                   protocol::VFolderInvitationRequest{invitation_id}));
}

Status VFolderClient::DeleteInvitation(std::string const& invitation_id) const {
  return Done(CallDeleteWith(client_, "/folders/invitations/delete",
                             protocol::VFolderInvitationRequest{invitation_id},
                             "delete invitations"));
}

Status VFolderClient::UpdateInvitation(std::string const& invitation_id,
                                       std::string const& permission) const {
  if (auto s = CheckPermission(permission); !s.ok()) return s;
  return Done(Post(client_, "/folders/invitations/update/" + internal::EncodeSegment(invitation_id),
                   protocol::VFolderInvitationUpdateRequest{permission}));
}

Status VFolderClient::Leave(std::string const& folder, std::string const& user_id) const {
  return Done(Post(client_, Path(folder, "/leave"), protocol::VFolderLeaveRequest{user_id}));
}

StatusOr<std::vector<std::string>> VFolderClient::Share(std::string const& folder,
                                                        std::vector<std::string> const& emails,
                                                        std::string const& permission) const {
  if (auto s = CheckPermission(permission); !s.ok()) return s;
  return Strings(
      Post(client_, Path(folder, "/share"), protocol::VFolderShareRequest{emails, permission}),
      "shared_emails");
}

StatusOr<std::vector<std::string>> VFolderClient::Unshare(
    std::string const& folder, std::vector<std::string> const& emails) const {
  return Strings(CallDeleteWith(client_, Path(folder, "/unshare"),
                                protocol::VFolderUnshareRequest{emails}, "unshare folders"),
                 "unshared_emails");
}

StatusOr<VFolderCloneResult> VFolderClient::Clone(std::string const& folder,
                                                  VFolderCloneRequest const& request) const {
  if (auto s = protocol::CheckVFolderName(request.target_name); !s.ok()) return s;
  if (!request.permission.empty()) {
    if (auto s = CheckPermission(request.permission); !s.ok()) return s;
  }
  auto r = CallWith(client_, "POST", Path(folder, "/clone"),
                    protocol::EncodeVFolderCloneRequest(request));
  if (!r.ok()) return r.status();
  return protocol::DecodeVFolderCloneResult(r->body);
}

}  // namespace bai
