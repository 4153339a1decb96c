// SPDX-License-Identifier: Apache-2.0
// Virtual folders (PROTOCOL.md §7): records here, bytes on a storage proxy. Every handler finds
// the folder among those the caller reaches, asks vfolders::Decide what the caller may do, then
// works on the record and asks the folder's proxy (storage_api.h) for the files.
#include "bai/protocol/errors.h"
#include "bai/protocol/vfolder_wire.h"

#include "libbai/protocol/wire_json.h"
#include "server-reference/common/daemon/workers.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/bgtasks.h"
#include "server-reference/manager/state/store.h"
#include "server-reference/manager/vfolders/access.h"
#include "server-reference/manager/vfolders/storage_links.h"
#include "server-reference/manager/vfolders/store.h"
#include "server-reference/storage/quota.h"
#include "server-reference/storage/storage_api.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace bai::manager {
namespace {

// A folder request (bai/protocol/vfolder_wire.h) from the handler's parameters.
template <class R>
StatusOr<R> Read(RequestContext& ctx, ParamSource source = ParamSource::kStandard) {
  return ReadRequest(ctx.request, internal::VFolderRequestFromJson<R>, source);
}

namespace p = protocol;
namespace api = storage::api;
using nlohmann::json;
using p::MakeProblemStatus;
using p::ProblemType;
using server::HttpResponse;
using vfolders::FolderRecord;

// Clones run on their own threads, joined when the routes go (before the stores they use).
using server::Workers;

// Quota admission, one scope at a time: the check and what makes the room taken (an upload
// session, which the proxy counts in the scope's usage; a clone's bytes, reserved here until
// its copy is counted) happen under the scope's lock, so concurrent uploads or clones cannot
// all pass one check (10 uploads of 600 KiB under 1 MiB were all admitted). The lock is this
// manager's: managers sharing a database do not share it yet.
class QuotaGate {
 public:
  using Held = storage::Held;
  // The scope's lock, held while the caller checks and takes room.
  std::unique_lock<std::mutex> Lock(std::string const& scope) {
    std::mutex* m;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& slot = scopes_[scope];
      if (!slot) slot = std::make_unique<std::mutex>();
      m = slot.get();
    }
    return std::unique_lock<std::mutex>(*m);
  }
  Held Reserved(std::string const& scope) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reserved_.find(scope);
    return it == reserved_.end() ? Held{} : it->second;
  }
  void Reserve(std::string const& scope, Held h, int sign) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& r = reserved_[scope];
    r.bytes += sign * h.bytes;
    r.files += sign * h.files;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> scopes_;
  std::map<std::string, Held> reserved_;
};

struct Env {
  vfolders::FolderStore folders;
  vfolders::StorageLinks const& links;
  BackgroundTaskStore& tasks;
  QuotaGate quota;
  Workers workers;
};

// A folder and what the caller may do with it.
struct Found {
  FolderRecord folder;
  vfolders::Access access;
};

vfolders::CallerFacts CallerOf(Identity const& who) {
  vfolders::CallerFacts caller;
  caller.user_id = who.user_id;
  caller.role = who.role;
  caller.domain = who.domain;
  return caller;
}

Status NotFound(std::string const& key) {
  return MakeProblemStatus(ProblemType::kObjectNotFound, "No such virtual folder: " + key);
}

// The folder `key` (a name, or an id with or without dashes) among those the caller reaches.
// Names match live folders; the trash is searched by name only when `trash` is set; ids
// match either.
StatusOr<Found> Resolve(Env& env, Identity const& who, std::string const& key, bool trash) {
  auto all = env.folders.Visible(CallerOf(who));
  if (!all.ok()) return all.status();
  std::vector<Found> matches;
  std::string hex = vfolders::FolderIdHex(key);
  for (auto& v : *all) {
    bool by_id = hex.size() == 32 && v.folder.id == hex;
    bool by_name = v.folder.name == key && vfolders::InTrash(v.folder) == trash;
    if (by_id) return Found{std::move(v.folder), v.access};
    if (by_name) matches.push_back({std::move(v.folder), v.access});
  }
  if (matches.empty()) return NotFound(key);
  if (matches.size() > 1) {
    // The caller's own folder wins over one shared with them under the same name.
    auto own = std::find_if(matches.begin(), matches.end(), [](Found const& m) {
      return m.access.relation == vfolders::Relation::kOwner;
    });
    if (own != matches.end()) return *own;
    return MakeProblemStatus(ProblemType::kTooManyVfolders,
                             "Several folders are called '" + key + "'; name one by its id.");
  }
  return matches.front();
}

StatusOr<Found> ResolveFor(Env& env, RequestContext& ctx, bool trash = false) {
  return Resolve(env, *ctx.identity, ctx.params.at("name"), trash);
}

Status Denied(std::string const& what) {
  return MakeProblemStatus(ProblemType::kVfolderPermissionError,
                           "The folder does not permit " + what + ".");
}

Status CheckLive(Found const& f) {
  if (vfolders::InTrash(f.folder)) {
    return MakeProblemStatus(ProblemType::kVfolderFilterStatusNotAvailable,
                             "The folder is in the trash; restore it first.");
  }
  return Status();
}

// Storage errors as the API's problems, by code (the same for an embedded proxy and a remote
// one, whose problem+json the SDK's table maps back to a code).
Status StorageProblem(Status const& s) {
  return server::ProblemFor(
      s,
      {{{StatusCode::kInvalidArgument, StatusCode::kFailedPrecondition, StatusCode::kAlreadyExists},
        ProblemType::kVfolderOperationFailed},
       {{StatusCode::kNotFound}, ProblemType::kObjectNotFound},
       {{StatusCode::kResourceExhausted}, ProblemType::kQuotaExceeded},
       {{StatusCode::kUnavailable}, ProblemType::kServiceUnavailable}},
      server::ProblemRule{{}, ProblemType::kStorageProxyError});
}

// Operation `op` (storage_api.h) on folder `f`'s proxy, typed both ways; the proxy's errors
// as problems (StorageProblem).
template <class Op>
StatusOr<typename Op::Answer> Storage(Env& env, FolderRecord const& f, Op const& op = {}) {
  auto r = env.links.Ask(f.host, op, vfolders::ScopeDirectory(f.quota_scope_id), f.id);
  if (!r.ok()) return StorageProblem(r.status());
  return r;
}

// Ends transfer tokens the proxy issued for the folder: `user`'s, or everyone's when empty
// (tokens lived for hours after an unshare or a trash: a removed invitee still wrote files).
Status RevokeTokens(Env& env, FolderRecord const& f, std::string const& user = "") {
  return Storage(env, f, api::RevokeTokens{user}).status();
}

// A folder as the caller sees it (their permission, whether they own it), for the wire codec.
p::VFolderInfo InfoOf(FolderRecord const& f, Found const* found, Identity const& who) {
  p::VFolderInfo out;
  out.id = f.id;
  out.name = f.name;
  out.host = f.host;
  out.quota_scope_id = f.quota_scope_id;
  out.status = std::string(p::ToString(f.status));
  out.usage_mode = f.usage_mode;
  out.permission = found ? std::string(p::ToString(found->access.permission)) : f.permission;
  out.ownership_type = f.ownership_type;
  out.user = f.user_id;
  out.group = f.group_id;
  out.creator = f.creator;
  out.created_at = f.created_at;
  out.last_used = f.last_used;
  out.is_owner = !f.user_id.empty() && f.user_id == who.user_id;
  out.cloneable = f.cloneable;
  out.max_size = f.max_size;
  out.max_files = f.max_files;
  return out;
}

// A folder's own quota may not be larger than its owner's scope quota: it could never be
// reached (400, naming the cap).
Status CheckFolderQuota(Env& env, FolderRecord const& f) {
  if (f.max_size <= 0) return Status();
  auto cap = env.folders.ScopeQuota(f.quota_scope_id);
  if (!cap.ok()) return cap.status();
  if (*cap > 0 && f.max_size > *cap) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "A quota of " + std::to_string(f.max_size) +
                                 " bytes is larger than the owner's max_quota_scope_size (" +
                                 std::to_string(*cap) + " bytes for all of " + f.quota_scope_id +
                                 "'s folders).");
  }
  return Status();
}

HttpResponse FolderResponse(p::VFolderInfo const& f, p::VFolderAnswer answer, int status = 200,
                            std::string_view bgtask_id = {}) {
  return HttpResponse::Json(status, p::EncodeVFolderInfo(f, answer, bgtask_id));
}

// The proxy's {token, url} for a transfer, passed on as request-upload/download answer it.
template <class Ticket>
HttpResponse TicketResponse(Ticket const& t) {
  return HttpResponse::Json(200, p::EncodeTransferTicket({t.token, t.url, std::nullopt}));
}

// ---- handlers ---------------------------------------------------------------------------------

// The policies a new folder passes (streams-admin-console.md §B): its host is among the
// caller's allowed_vfolder_hosts with create-vfolder, and its owner (user or project) stays
// within its resource policy's max_vfolder_count. 400s as 24.09 answers them.
Status CheckFolderPolicies(RequestContext& ctx, FolderRecord const& f) {
  Identity const& who = *ctx.identity;
  vfolders::FolderStore folders(ctx.store.db());
  auto configs = folders.HostSettingsOf(who.domain, who.user_id, who.access_key);
  if (!configs.ok()) return configs.status();
  auto why = vfolders::WhyHostRefused(vfolders::AllowedHosts(*configs), f.host, "create-vfolder");
  if (!why.empty()) return MakeProblemStatus(ProblemType::kInvalidApiParams, why);
  bool project = f.ownership_type == "group";
  auto counted = folders.CountAndLimit(project, project ? f.group_id : f.user_id);
  if (!counted.ok()) return counted.status();
  if (counted->second <= 0) return Status();
  why = vfolders::WhyCountRefused(counted->first, counted->second, project);
  if (!why.empty()) return MakeProblemStatus(ProblemType::kInvalidApiParams, why);
  return Status();
}

StatusOr<HttpResponse> Create(Env& env, RequestContext& ctx) {
  if (auto frozen = ctx.store.RefuseWhileFrozen(); !frozen.ok()) return frozen;
  auto request = ReadRequest(ctx.request, internal::VFolderCreateRequestFromJson);
  if (!request.ok()) return request.status();
  std::optional<std::string> group;
  if (!request->group.empty()) group = request->group;
  Identity const& who = *ctx.identity;
  FolderRecord f;
  f.id = vfolders::NewFolderId();
  f.name = request->name;
  f.host = request->host.empty() ? env.links.default_host : request->host;
  f.usage_mode = request->usage_mode.empty() ? "general" : request->usage_mode;
  f.permission = request->permission.empty() ? "rw" : request->permission;
  f.cloneable = request->cloneable;
  f.max_size = request->quota;
  f.creator = who.email;
  f.domain = who.domain;
  f.created_at = NowIso();
  if (!p::ParseVFolderUsageMode(f.usage_mode)) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "usage_mode is general, model or data");
  }
  if (!p::ParseVFolderPermission(f.permission)) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, "permission is ro, rw or wd");
  }
  if (auto s = p::CheckVFolderName(f.name, group.has_value()); !s.ok()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
  }
  if (group) {
    auto gid = ctx.store.FindGroup(who.domain, *group);
    if (!gid.ok()) return gid.status();
    if (!*gid) return MakeProblemStatus(ProblemType::kObjectNotFound, "No such project: " + *group);
    if (!who.IsAdmin()) {
      return MakeProblemStatus(ProblemType::kGenericForbidden,
                               "Only admins create project folders.");
    }
    f.ownership_type = "group";
    f.group_id = **gid;
    f.quota_scope_id = "project:" + **gid;
  } else {
    f.ownership_type = "user";
    f.user_id = who.user_id;
    f.quota_scope_id = "user:" + who.user_id;
  }
  auto volumes = env.links.Volumes();
  if (!volumes.count(f.host)) {
    return MakeProblemStatus(ProblemType::kVfolderCreationFailed,
                             "No storage host '" + f.host + "' (see GET /folders/_/hosts).");
  }
  if (auto s = CheckFolderPolicies(ctx, f); !s.ok()) return s;
  if (auto s = CheckFolderQuota(env, f); !s.ok()) return s;
  if (auto s = env.folders.Insert(f); !s.ok()) {
    if (s.code() == StatusCode::kAlreadyExists) {
      return MakeProblemStatus(ProblemType::kVfolderAlreadyExists, s.message());
    }
    return s;
  }
  if (auto made = Storage(env, f, api::CreateFolder{}); !made.ok()) {
    (void)env.folders.Remove(f.id);
    return made.status();
  }
  return FolderResponse(InfoOf(f, nullptr, who), p::VFolderAnswer::kCreated, 201);
}

StatusOr<HttpResponse> List(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto group = params->String({"group_id", "groupId"});
  auto all = params->Bool({"all"});
  if (all && *all) params->Fail("all", "'all' is no longer supported");
  if (auto s = params->Check(); !s.ok()) return s;
  Identity const& who = *ctx.identity;
  // A listing shows what the caller uses as a user: their own, shared and project folders, not
  // every folder an admin could manage (GraphQL's vfolder_list covers those).
  auto as_user = CallerOf(who);
  as_user.role = "user";
  auto folders = env.folders.Visible(as_user);
  if (!folders.ok()) return folders.status();
  auto names = env.folders.Names(*folders);
  if (!names.ok()) return names.status();
  std::vector<p::VFolderInfo> out;
  for (auto const& v : *folders) {
    if (group && vfolders::FolderIdHex(v.folder.group_id) != vfolders::FolderIdHex(*group))
      continue;
    Found found{v.folder, v.access};
    auto& info = out.emplace_back(InfoOf(v.folder, &found, who));
    // Counted as info counts them (its storage's usage), so a listing and info agree.
    auto usage = Storage(env, v.folder, api::GetFolderUsage{});
    info.num_files = usage.ok() ? usage->file_count : 0;
    info.used_bytes = usage.ok() ? usage->used_bytes : 0;
    if (auto e = names->user_emails.find(v.folder.user_id); e != names->user_emails.end()) {
      info.user_email = e->second;
    }
    if (auto g = names->group_names.find(v.folder.group_id); g != names->group_names.end()) {
      info.group_name = g->second;
    }
  }
  return HttpResponse::Json(200, p::EncodeVFolderList(out));
}

StatusOr<HttpResponse> Info(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto usage = Storage(env, f->folder, api::GetFolderUsage{});
  auto info = InfoOf(f->folder, &*f, *ctx.identity);
  info.num_files = usage.ok() ? usage->file_count : 0;
  info.used_bytes = usage.ok() ? usage->used_bytes : 0;
  return FolderResponse(info, p::VFolderAnswer::kInfo);
}

StatusOr<HttpResponse> IdOf(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request, ParamSource::kBoth);
  if (!params.ok()) return params.status();
  auto name = params->String({"name"}, true);
  if (auto s = params->Check(); !s.ok()) return s;
  auto f = Resolve(env, *ctx.identity, *name, false);
  if (!f.ok()) return f.status();
  return JsonResponse({{"id", f->folder.id}, {"name", f->folder.name}});
}

// The folder a trash-bin call names by id in its body.
StatusOr<Found> ById(Env& env, RequestContext& ctx) {
  auto request = Read<p::VFolderByIdRequest>(ctx, ParamSource::kBoth);
  if (!request.ok()) return request.status();
  auto hex = vfolders::FolderIdHex(request->vfolder_id);
  if (hex.size() != 32) return NotFound(request->vfolder_id);
  return Resolve(env, *ctx.identity, hex, true);
}

// Refused while sessions that have not ended mount the folder: its data would vanish under
// their jobs. Names them, so the user knows what to end first.
Status CheckUnmounted(Env& env, Found const& f) {
  auto users = env.folders.MountedBy(f.folder.id);
  if (!users.ok()) return users.status();
  if (users->empty()) return {};
  std::string names;
  for (auto const& n : *users) names += (names.empty() ? "" : ", ") + n;
  return MakeProblemStatus(ProblemType::kVfolderOperationFailed,
                           "The folder is mounted by " + std::to_string(users->size()) +
                               " session(s) that have not ended: " + names +
                               ". End them first (bai rm).");
}

StatusOr<HttpResponse> MoveToTrash(Env& env, Found const& f) {
  if (!f.access.manages()) return Denied("deletion by you (only its owner or an admin)");
  if (auto s = CheckLive(f); !s.ok()) return s;
  if (auto s = CheckUnmounted(env, f); !s.ok()) return s;
  if (auto s = env.folders.SetStatus(f.folder.id, p::VFolderStatus::kDeletePending); !s.ok())
    return s;
  if (auto s = RevokeTokens(env, f.folder); !s.ok()) return s;
  return HttpResponse::NoContent();
}

StatusOr<HttpResponse> Purge(Env& env, Found const& f) {
  if (!f.access.manages()) return Denied("deletion by you (only its owner or an admin)");
  if (f.folder.status != p::VFolderStatus::kDeletePending) {
    return MakeProblemStatus(ProblemType::kVfolderFilterStatusNotAvailable,
                             "Only a folder in the trash can be removed for good.");
  }
  if (auto s = CheckUnmounted(env, f); !s.ok()) return s;
  if (auto s = env.folders.SetStatus(f.folder.id, p::VFolderStatus::kDeleteOngoing); !s.ok())
    return s;
  auto gone = Storage(env, f.folder, api::DeleteFolder{});
  if (!gone.ok() && gone.status().code() != StatusCode::kNotFound) {
    (void)env.folders.SetStatus(f.folder.id, p::VFolderStatus::kDeleteError);
    return gone.status();
  }
  if (auto s = env.folders.Remove(f.folder.id); !s.ok()) return s;
  return HttpResponse::NoContent();
}

StatusOr<HttpResponse> Restore(Env& env, Found const& f) {
  if (!f.access.manages()) return Denied("restoring by you");
  if (f.folder.status != p::VFolderStatus::kDeletePending) {
    return MakeProblemStatus(ProblemType::kVfolderFilterStatusNotAvailable,
                             "The folder is not in the trash.");
  }
  // Its name may have been taken meanwhile.
  if (auto s = env.folders.Rename(f.folder.id, f.folder.name); !s.ok()) {
    return MakeProblemStatus(ProblemType::kVfolderAlreadyExists,
                             s.message() + "; rename that one first");
  }
  if (auto s = env.folders.SetStatus(f.folder.id, p::VFolderStatus::kReady); !s.ok()) return s;
  return HttpResponse::NoContent();
}

StatusOr<HttpResponse> Rename(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto request = Read<p::VFolderRenameRequest>(ctx);
  if (!request.ok()) return request.status();
  std::string const& name = request->new_name;
  if (!f->access.manages()) return Denied("renaming by you (only its owner or an admin)");
  if (auto s = CheckLive(*f); !s.ok()) return s;
  if (auto s = p::CheckVFolderName(name, f->folder.ownership_type == "group"); !s.ok()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
  }
  if (auto s = env.folders.Rename(f->folder.id, name); !s.ok()) {
    if (s.code() == StatusCode::kAlreadyExists) {
      return MakeProblemStatus(ProblemType::kVfolderAlreadyExists, s.message());
    }
    return s;
  }
  HttpResponse r;
  r.status = 201;
  r.content_type = "";
  return r;
}

StatusOr<HttpResponse> UpdateOptions(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto cloneable = params->Bool({"cloneable"});
  auto permission = params->String({"permission"});
  if (permission && !p::ParseVFolderPermission(*permission)) {
    params->Fail("permission", "ro, rw or wd");
  }
  if (auto s = params->Check(); !s.ok()) return s;
  if (!f->access.manages()) return Denied("changing its options by you");
  if (auto s = env.folders.SetOptions(f->folder.id, cloneable, permission); !s.ok()) return s;
  HttpResponse r;
  r.status = 201;
  r.content_type = "";
  return r;
}

// Resolves, checks the folder is live and the caller has `need`.
StatusOr<Found> ForWork(Env& env, RequestContext& ctx, bool write) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  if (auto s = CheckLive(*f); !s.ok()) return s;
  if (write && !p::CanWrite(f->access.permission))
    return Denied("writing (it is read-only for you)");
  return f;
}

StatusOr<HttpResponse> Files(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, false);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request, ParamSource::kBoth);
  if (!params.ok()) return params.status();
  auto path = params->String({"path"});
  if (auto s = params->Check(); !s.ok()) return s;
  auto list = Storage(env, f->folder, api::ListFiles{path.value_or("")});
  if (!list.ok()) return list.status();
  return HttpResponse::Json(200, p::EncodeVFolderListing(list->items));
}

StatusOr<HttpResponse> Mkdir(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto request = Read<p::VFolderMkdirRequest>(ctx);
  if (!request.ok()) return request.status();
  json ok = json::array(), failed = json::array();
  for (auto const& path : request->paths) {
    // The proxy's own status (Storage() would fold "exists" into operation-failed).
    auto r =
        env.links.Ask(f->folder.host, api::MakeDirectory{path, request->parents, request->exist_ok},
                      vfolders::ScopeDirectory(f->folder.quota_scope_id), f->folder.id);
    if (r.ok()) {
      ok.push_back({{"item", path}, {"msg", nullptr}});
    } else {
      json one = {{"item", path}, {"msg", r.status().message()}};
      // Our addition (other clients ignore it): tells "already there" from other failures, so
      // the CLI can exit with its conflict code.
      if (r.status().code() == StatusCode::kAlreadyExists) one["exists"] = true;
      failed.push_back(std::move(one));
    }
  }
  json results = {{"results", {{"success", ok}, {"failed", failed}}}};
  if (ok.empty()) {
    return MakeProblemStatus(
        ProblemType::kVfolderOperationFailed,
        failed.empty() ? "nothing to make" : failed[0]["msg"].get<std::string>(), results.dump());
  }
  return JsonResponse(results, failed.empty() ? 200 : 207);
}

// A file operation: the request `R` as the proxy's operation (`op`).
template <class R, class Op>
StatusOr<HttpResponse> FileOp(Env& env, RequestContext& ctx, Op (*op)(R const&)) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto request = Read<R>(ctx);
  if (!request.ok()) return request.status();
  auto r = Storage(env, f->folder, op(*request));
  if (!r.ok()) return r.status();
  return JsonResponse(json::object());
}
api::MoveFile MoveOp(p::VFolderMoveFileRequest const& r) { return {r.src, r.dst}; }
api::RenameFile RenameOp(p::VFolderRenameFileRequest const& r) {
  return {r.target_path, r.new_name};
}
api::DeleteFiles DeleteOp(p::VFolderDeleteFilesRequest const& r) { return {r.files, r.recursive}; }

// The quotas a write into `f` must fit: its own, and its owner's scope's (the resource policy's
// max_quota_scope_size) with the room this manager holds there (clones under way). Read under
// the scope's lock (QuotaGate), before the proxy counts the usage: a clone that finishes in
// between (and gives its reservation back) is then counted twice for a moment, never zero times.
StatusOr<storage::QuotaLimits> LimitsOf(Env& env, FolderRecord const& f) {
  storage::QuotaLimits q;
  q.folder = "the folder " + f.name;
  q.folder_max_bytes = f.max_size;
  q.folder_max_files = f.max_files;
  auto max_bytes = env.folders.ScopeQuota(f.quota_scope_id);
  if (!max_bytes.ok()) return max_bytes.status();
  q.scope = (f.ownership_type == "group" ? "the project's folders (" : "the user's folders (") +
            f.quota_scope_id + ", max_quota_scope_size of its resource policy)";
  q.scope_max_bytes = *max_bytes;
  q.reserved = env.quota.Reserved(f.quota_scope_id);
  return q;
}

// Refuses `more` that would pass the quotas of `f` (LimitsOf), counted now (the folder walked
// with its unfinished uploads at their full size). An upload does not come here: the proxy
// decides it in the request that starts it.
Status CheckQuota(Env& env, FolderRecord const& f, storage::Held more) {
  auto limits = LimitsOf(env, f);
  if (!limits.ok()) return limits.status();
  storage::Held folder, scope;
  if (limits->FolderLimited()) {
    auto used = Storage(env, f, api::GetFolderUsage{true});
    if (!used.ok()) return used.status();
    folder = {used->used_bytes, used->file_count};
  }
  if (limits->ScopeLimited()) {
    auto used =
        env.links.Ask(f.host, api::GetScopeUsage{vfolders::ScopeDirectory(f.quota_scope_id)});
    if (!used.ok()) return StorageProblem(used.status());
    scope = {used->used_bytes, used->file_count};
  }
  auto why = storage::WhyOverLimits(*limits, folder, scope, more);
  if (!why.empty()) return MakeProblemStatus(ProblemType::kQuotaExceeded, why);
  return Status();
}

StatusOr<HttpResponse> RequestUpload(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto request = Read<p::VFolderUploadRequest>(ctx);
  if (!request.ok()) return request.status();
  std::string const& path = request->path;
  std::int64_t size = request->size;
  // Start again instead of resuming an unfinished upload of the same path and size (the
  // client's file changed since).
  if (request->restart.value_or(false)) {
    auto gone = Storage(env, f->folder, api::CancelUpload{path, size});
    if (!gone.ok() && gone.status().code() != StatusCode::kNotFound) return gone.status();
  }
  // Under the scope's lock: the upload session counts in the usage at once. The proxy decides
  // the quotas in the one request that starts the upload.
  auto scope_lock = env.quota.Lock(f->folder.quota_scope_id);
  auto limits = LimitsOf(env, f->folder);
  if (!limits.ok()) return limits.status();
  std::optional<storage::QuotaLimits> quota;
  if (limits->FolderLimited() || limits->ScopeLimited()) quota = *limits;
  auto r =
      Storage(env, f->folder, api::StartUpload{path, size, false, ctx.identity->user_id, quota});
  if (!r.ok()) return r.status();
  return TicketResponse(*r);
}

StatusOr<HttpResponse> RequestDownload(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, false);
  if (!f.ok()) return f.status();
  auto request = Read<p::VFolderDownloadRequest>(ctx);
  if (!request.ok()) return request.status();
  auto r = Storage(env, f->folder, api::StartDownload{request->path, ctx.identity->user_id});
  if (!r.ok()) return r.status();
  return TicketResponse(*r);
}

StatusOr<HttpResponse> Hosts(Env& env, RequestContext&) {
  json allowed = json::array(), info = json::object();
  for (auto const& [host, v] : env.links.Volumes()) {
    allowed.push_back(host);
    api::VolumeUsage usage = v.usage.value_or(api::VolumeUsage{});
    info[host] = {
        {"backend", v.backend},
        {"capabilities", v.capabilities},
        {"usage", {{"percentage", usage.percentage}, {"used", usage.used}, {"total", usage.total}}},
        {"sftp_scaling_groups", json::array()}};
  }
  json def = env.links.default_host.empty() ? json(nullptr) : json(env.links.default_host);
  return JsonResponse({{"default", def}, {"allowed", allowed}, {"volume_info", info}});
}

StatusOr<HttpResponse> AllHosts(Env& env, RequestContext&) {
  json allowed = json::array();
  for (auto const& [host, v] : env.links.Volumes()) allowed.push_back(host);
  return JsonResponse({{"default", env.links.default_host}, {"allowed", allowed}});
}

// `folder_host` and `id` (a folder) of the admin usage calls.
StatusOr<FolderRecord> AdminTarget(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request, ParamSource::kBoth);
  if (!params.ok()) return params.status();
  auto host = params->String({"folder_host"}, true);
  auto id = params->String({"id", "vfolder_id"}, true);
  if (auto s = params->Check(); !s.ok()) return s;
  auto f = env.folders.Get(vfolders::FolderIdHex(*id));
  if (!f.ok()) return f.status();
  if (!*f || (*f)->host != *host) return NotFound(*id);
  return **f;
}

StatusOr<HttpResponse> Usage(Env& env, RequestContext& ctx, bool bytes_only) {
  auto f = AdminTarget(env, ctx);
  if (!f.ok()) return f.status();
  auto u = Storage(env, *f, api::GetFolderUsage{});
  if (!u.ok()) return u.status();
  if (bytes_only) return JsonResponse({{"used_bytes", u->used_bytes}});
  return JsonResponse({{"file_count", u->file_count}, {"used_bytes", u->used_bytes}});
}

// 23.09's answer ({used_bytes, limit_bytes}, null for no limit), with the files beside it.
StatusOr<HttpResponse> GetQuota(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto host = params->String({"folder_host"}, true);
  auto id = params->String({"id"}, true);
  if (auto s = params->Check(); !s.ok()) return s;
  auto f = Resolve(env, *ctx.identity, *id, false);
  if (!f.ok()) return f.status();
  if (f->folder.host != *host) return NotFound(*id);
  auto used = Storage(env, f->folder, api::GetFolderUsage{true});
  if (!used.ok()) return used.status();
  auto limit = [](std::int64_t v) { return v > 0 ? json(v) : json(nullptr); };
  return JsonResponse({{"used_bytes", used->used_bytes},
                       {"limit_bytes", limit(f->folder.max_size)},
                       {"file_count", used->file_count},
                       {"max_files", limit(f->folder.max_files)}});
}

StatusOr<HttpResponse> SetQuota(Env& env, RequestContext& ctx) {
  auto request = Read<p::VFolderQuotaRequest>(ctx);
  if (!request.ok()) return request.status();
  auto f = Resolve(env, *ctx.identity, request->id, false);
  if (!f.ok()) return f.status();
  if (f->folder.host != request->folder_host) return NotFound(request->id);
  // The folder's owner (a project folder's: an admin), as 23.09 lets whoever may change it.
  bool owner = f->folder.ownership_type == "user" && f->folder.user_id == ctx.identity->user_id;
  if (!owner && !ctx.identity->IsAdmin()) {
    return MakeProblemStatus(ProblemType::kInsufficientPrivilege,
                             "Only the folder's owner or an admin sets its quota.");
  }
  FolderRecord updated = f->folder;
  updated.max_size = request->size_bytes;
  updated.max_files = request->max_files;
  if (auto s = CheckFolderQuota(env, updated); !s.ok()) return s;
  if (auto s = env.folders.SetQuota(f->folder.id, updated.max_size, updated.max_files); !s.ok()) {
    return s;
  }
  return JsonResponse({{"size_bytes", updated.max_size}, {"max_files", updated.max_files}});
}

// ---- sharing ----------------------------------------------------------------------------------

// The users of `emails`, all of them, or 404 naming those unknown.
StatusOr<std::vector<vfolders::UserRef>> AllUsers(Env& env,
                                                  std::vector<std::string> const& emails) {
  auto users = env.folders.UsersByEmail(emails);
  if (!users.ok()) return users.status();
  if (users->size() == emails.size()) return users;
  std::string missing;
  for (auto const& e : emails) {
    bool known = std::any_of(users->begin(), users->end(),
                             [&](vfolders::UserRef const& u) { return u.email == e; });
    if (!known) missing += (missing.empty() ? "" : ", ") + e;
  }
  return MakeProblemStatus(ProblemType::kObjectNotFound, "No such user: " + missing);
}

// Invitations go to other users for one's own user folder; project folders are shared with
// members instead, and dot-folders (mounted in every session) stay private.
StatusOr<HttpResponse> Invite(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto request = Read<p::VFolderInviteRequest>(ctx);
  if (!request.ok()) return request.status();
  Identity const& who = *ctx.identity;
  if (f->access.relation != vfolders::Relation::kOwner) {
    return Denied("invitations by you (only its owner invites)");
  }
  if (auto s = CheckLive(*f); !s.ok()) return s;
  if (f->folder.ownership_type == "group") {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "A project folder is shared with members (share), not by invitation.");
  }
  if (!f->folder.name.empty() && f->folder.name[0] == '.') {
    return MakeProblemStatus(ProblemType::kGenericForbidden,
                             "Dot-folders are private and cannot be shared.");
  }
  auto users = AllUsers(env, request->emails);
  if (!users.ok()) return users.status();
  auto grants = env.folders.Grants(f->folder.id);
  if (!grants.ok()) return grants.status();
  json invited = json::array();
  for (auto const& u : *users) {
    if (u.user_id == who.user_id) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams, "You cannot invite yourself.");
    }
    // Already invited or already sharing: nothing new (a script may run this twice).
    bool shared = std::any_of(grants->begin(), grants->end(), [&](vfolders::GrantRecord const& g) {
      return g.user_id == u.user_id;
    });
    auto pending = env.folders.HasPendingInvitation(f->folder.id, u.email);
    if (!pending.ok()) return pending.status();
    if (shared || *pending) continue;
    vfolders::InvitationRecord inv;
    inv.id = vfolders::DashedUuid(vfolders::NewFolderId());
    inv.vfolder_id = f->folder.id;
    inv.inviter = who.email;
    inv.invitee = u.email;
    inv.permission = request->permission;
    if (auto s = env.folders.AddInvitation(inv); !s.ok()) return s;
    invited.push_back(inv.id);
  }
  return JsonResponse({{"invited_ids", invited}}, 201);
}

StatusOr<HttpResponse> Invitations(Env& env, RequestContext& ctx, bool sent) {
  auto list = env.folders.PendingInvitations(ctx.identity->email, sent);
  if (!list.ok()) return list.status();
  return HttpResponse::Json(200, p::EncodeVFolderInvitations(*list));
}

// The pending invitation named by `inv_id` that concerns the caller as `invitee` or inviter.
StatusOr<vfolders::InvitationRecord> PendingInvitation(Env& env, RequestContext& ctx,
                                                       std::string const& id) {
  auto inv = env.folders.Invitation(id);
  if (!inv.ok()) return inv.status();
  std::string const& me = ctx.identity->email;
  if (!*inv || ((*inv)->invitee != me && (*inv)->inviter != me)) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such invitation: " + id);
  }
  if ((*inv)->state != "pending") {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "The invitation is already " + (*inv)->state + ".");
  }
  return **inv;
}

StatusOr<std::string> InvitationId(RequestContext& ctx) {
  auto request = Read<p::VFolderInvitationRequest>(ctx, ParamSource::kBoth);
  if (!request.ok()) return request.status();
  return request->invitation_id;
}

StatusOr<HttpResponse> Accept(Env& env, RequestContext& ctx) {
  auto id = InvitationId(ctx);
  if (!id.ok()) return id.status();
  auto inv = PendingInvitation(env, ctx, *id);
  if (!inv.ok()) return inv.status();
  Identity const& who = *ctx.identity;
  if (inv->invitee != who.email) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such invitation: " + *id);
  }
  // The caller's own folder of that name would make the name ambiguous for them.
  auto mine = env.folders.Visible(CallerOf(who));
  if (!mine.ok()) return mine.status();
  for (auto const& v : *mine) {
    if (v.access.relation == vfolders::Relation::kOwner && v.folder.name == inv->vfolder_name &&
        !vfolders::InTrash(v.folder)) {
      return MakeProblemStatus(ProblemType::kVfolderAlreadyExists,
                               "You have a folder called '" + inv->vfolder_name +
                                   "' already; rename it before accepting.");
    }
  }
  auto ok = env.folders.AcceptInvitation(*inv, who.user_id);
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "The invitation is no longer pending.");
  }
  return JsonResponse(json::object());
}

// The invitee rejects, the inviter cancels.
StatusOr<HttpResponse> DeleteInvitation(Env& env, RequestContext& ctx) {
  auto id = InvitationId(ctx);
  if (!id.ok()) return id.status();
  auto inv = PendingInvitation(env, ctx, *id);
  if (!inv.ok()) return inv.status();
  std::string state = inv->invitee == ctx.identity->email ? "rejected" : "canceled";
  auto ok = env.folders.SetInvitation(*id, state);
  if (!ok.ok()) return ok.status();
  return JsonResponse(json::object());
}

StatusOr<HttpResponse> UpdateInvitation(Env& env, RequestContext& ctx) {
  std::string id = ctx.params.at("inv_id");
  auto request = Read<p::VFolderInvitationUpdateRequest>(ctx);
  if (!request.ok()) return request.status();
  auto inv = PendingInvitation(env, ctx, id);
  if (!inv.ok()) return inv.status();
  if (inv->inviter != ctx.identity->email) {
    return Denied("changing this invitation by you (only its inviter may)");
  }
  auto ok = env.folders.SetInvitation(id, "pending", request->permission);
  if (!ok.ok()) return ok.status();
  return JsonResponse({{"msg", "vfolder invitation updated: " + id}});
}

// An invitee leaves a folder shared with them; its owner (or an admin) may remove an invitee by
// `shared_user_uuid`.
StatusOr<HttpResponse> Leave(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto request = Read<p::VFolderLeaveRequest>(ctx);
  if (!request.ok()) return request.status();
  std::string const& other = request->shared_user_id;
  if (f->folder.ownership_type == "group") {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "A project folder cannot be left; ask an admin to unshare it.");
  }
  std::string user = ctx.identity->user_id;
  if (!other.empty() && other != user) {
    if (!f->access.manages()) return Denied("removing others by you");
    user = other;
  } else if (f->access.relation != vfolders::Relation::kInvited) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "Only a user the folder was shared with can leave it.");
  }
  auto gone = env.folders.Revoke(f->folder.id, user);
  if (!gone.ok()) return gone.status();
  if (!*gone) return MakeProblemStatus(ProblemType::kObjectNotFound, "No such shared user.");
  if (auto s = RevokeTokens(env, f->folder, user); !s.ok()) return s;
  return JsonResponse({{"msg", "left the shared vfolder"}});
}

// Project folders: admins give members a permission of their own (or take it back).
// What share or unshare asks (an unshare as a share without a permission).
StatusOr<p::VFolderShareRequest> SharingOf(RequestContext& ctx, bool share) {
  if (share) return Read<p::VFolderShareRequest>(ctx);
  auto request = Read<p::VFolderUnshareRequest>(ctx);
  if (!request.ok()) return request.status();
  return p::VFolderShareRequest{request->emails, ""};
}

StatusOr<HttpResponse> Share(Env& env, RequestContext& ctx, bool share) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto request = SharingOf(ctx, share);
  if (!request.ok()) return request.status();
  auto const& [emails, perm] = *request;
  if (f->folder.ownership_type != "group") {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "Only project folders are shared this way; invite users to a user "
                             "folder.");
  }
  if (f->access.relation != vfolders::Relation::kAdmin) {
    return MakeProblemStatus(ProblemType::kGenericForbidden, "Only admins share project folders.");
  }
  if (auto s = CheckLive(*f); !s.ok()) return s;
  auto users = AllUsers(env, emails);
  if (!users.ok()) return users.status();
  json done = json::array();
  for (auto const& u : *users) {
    if (share) {
      auto member = ctx.store.IsMember(f->folder.group_id, u.user_id);
      if (!member.ok()) return member.status();
      if (!*member) {
        return MakeProblemStatus(ProblemType::kInvalidApiParams,
                                 u.email + " is not a member of the folder's project.");
      }
      if (auto s = env.folders.Grant(f->folder.id, u.user_id, perm); !s.ok()) return s;
      done.push_back(u.email);
    } else {
      auto gone = env.folders.Revoke(f->folder.id, u.user_id);
      if (!gone.ok()) return gone.status();
      if (*gone) {
        if (auto s = RevokeTokens(env, f->folder, u.user_id); !s.ok()) return s;
        done.push_back(u.email);
      }
    }
  }
  if (share) return JsonResponse({{"shared_emails", done}}, 201);
  return JsonResponse({{"unshared_emails", done}});
}

// Who a folder is shared with (its owner or an admin asks): `GET /folders/_/shared?vfolder_id=`.
StatusOr<HttpResponse> SharedWith(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request, ParamSource::kBoth);
  if (!params.ok()) return params.status();
  auto id = params->String({"vfolder_id", "vfolderId"});
  if (auto s = params->Check(); !s.ok()) return s;
  auto all = env.folders.Visible(CallerOf(*ctx.identity));
  if (!all.ok()) return all.status();
  json out = json::array();
  for (auto const& v : *all) {
    if (!v.access.manages()) continue;
    if (id && v.folder.id != vfolders::FolderIdHex(*id)) continue;
    auto grants = env.folders.Grants(v.folder.id);
    if (!grants.ok()) return grants.status();
    for (auto const& g : *grants) {
      out.push_back(
          {{"vfolder_id", v.folder.id},
           {"vfolder_name", v.folder.name},
           {"status", p::ToString(v.folder.status)},
           {"owner", v.folder.ownership_type == "user" ? v.folder.user_id : v.folder.group_id},
           {"type", v.folder.ownership_type},
           {"shared_to", {{"uuid", g.user_id}, {"email", g.email}}},
           {"perm", g.permission}});
    }
  }
  return JsonResponse(out);
}

// ---- clone ------------------------------------------------------------------------------------

std::string ProxyOf(std::string const& host) { return host.substr(0, host.find(':')); }

// The new folder a clone of `src` makes for `who`, its name and host checked (the host must be
// on the source's proxy).
StatusOr<FolderRecord> CloneTarget(Env& env, Identity const& who,
                                   p::VFolderCloneRequest const& request, std::string const& perm,
                                   FolderRecord const& src) {
  FolderRecord f;
  f.id = vfolders::NewFolderId();
  f.name = request.target_name;
  f.host = request.target_host.empty() ? src.host : request.target_host;
  f.usage_mode = request.usage_mode.empty() ? src.usage_mode : request.usage_mode;
  f.permission = perm;
  f.cloneable = request.cloneable;
  f.creator = who.email;
  f.domain = who.domain;
  f.created_at = NowIso();
  f.ownership_type = "user";
  f.user_id = who.user_id;
  f.quota_scope_id = "user:" + who.user_id;
  f.status = p::VFolderStatus::kCloning;
  if (auto s = p::CheckVFolderName(f.name, false); !s.ok()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
  }
  if (!env.links.Volumes().count(f.host)) {
    return MakeProblemStatus(ProblemType::kVfolderCreationFailed,
                             "No storage host '" + f.host + "' (see GET /folders/_/hosts).");
  }
  if (ProxyOf(f.host) != ProxyOf(src.host)) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "A folder is cloned within its storage proxy ('" + ProxyOf(src.host) +
                                 "'), not to '" + f.host + "'.");
  }
  return f;
}

// A copy of a folder as a new user folder of the caller, made by the proxy in the background:
// 201 at once with the task to follow on /events/background-task.
StatusOr<HttpResponse> Clone(Env& env, RequestContext& ctx) {
  auto src = ForWork(env, ctx, false);
  if (!src.ok()) return src.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto request = internal::VFolderCloneRequestFromJson(params->values());
  if (!request.ok()) return request.status();
  if (!request->usage_mode.empty() && !p::ParseVFolderUsageMode(request->usage_mode)) {
    params->Fail("usage_mode", "general, model or data");
  }
  std::string perm = request->permission.empty() ? "rw" : request->permission;
  if (!p::ParseVFolderPermission(perm)) params->Fail("permission", "ro, rw or wd");
  if (auto s = params->Check(); !s.ok()) return s;
  if (!src->folder.cloneable && !src->access.manages()) {
    return Denied("cloning (it is not cloneable)");
  }
  Identity const& who = *ctx.identity;
  auto target = CloneTarget(env, who, *request, perm, src->folder);
  if (!target.ok()) return target.status();
  FolderRecord const& f = *target;
  auto usage = Storage(env, src->folder, api::GetFolderUsage{});
  if (!usage.ok()) return usage.status();
  storage::Held copy{usage->used_bytes, usage->file_count};
  {
    // The copy's room is reserved until the copy itself is counted (or has failed).
    auto scope_lock = env.quota.Lock(f.quota_scope_id);
    if (auto s = CheckQuota(env, f, copy); !s.ok()) return s;
    env.quota.Reserve(f.quota_scope_id, copy, +1);
  }
  auto unreserve = [&env, scope = f.quota_scope_id, copy] { env.quota.Reserve(scope, copy, -1); };
  if (auto s = env.folders.Insert(f); !s.ok()) {
    unreserve();
    if (s.code() == StatusCode::kAlreadyExists) {
      return MakeProblemStatus(ProblemType::kVfolderAlreadyExists, s.message());
    }
    return s;
  }
  auto task = env.tasks.Create("vfolder-clone", who.access_key, f.id, 0);
  if (!task.ok()) {
    unreserve();
    (void)env.folders.Remove(f.id);
    return task.status();
  }
  api::CloneFolder clone{f.host.substr(f.host.find(':') + 1),
                         vfolders::ScopeDirectory(f.quota_scope_id), f.id};
  env.workers.Run([&env, f, clone, source = src->folder, task_id = task->id, unreserve] {
    auto copied = Storage(env, source, clone);
    unreserve();  // copied: counted in the scope's usage now; failed: removed
    if (copied.ok()) {
      (void)env.folders.SetStatus(f.id, p::VFolderStatus::kReady);
      (void)env.tasks.Finish(task_id, p::TaskStatus::kDone, "cloned to " + f.name);
    } else {
      (void)env.folders.Remove(f.id);
      (void)env.tasks.Finish(task_id, p::TaskStatus::kFailed, copied.status().message());
    }
  });
  return FolderResponse(InfoOf(f, nullptr, who), p::VFolderAnswer::kCloned, 201, task->id);
}

// Handlers that take the folder a body names ({id} or {name}), and the variants of a few.
template <StatusOr<HttpResponse> (*kHandler)(Env&, Found const&)>
StatusOr<HttpResponse> ByBody(Env& env, RequestContext& ctx) {
  auto f = ById(env, ctx);
  if (!f.ok()) return f.status();
  return kHandler(env, *f);
}
StatusOr<HttpResponse> TrashByName(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  return MoveToTrash(env, *f);
}
StatusOr<HttpResponse> AllowedTypes(Env&, RequestContext&) {
  return JsonResponse(json::array({"user", "group"}));
}
StatusOr<HttpResponse> UsageOf(Env& e, RequestContext& c) { return Usage(e, c, false); }
StatusOr<HttpResponse> UsedBytes(Env& e, RequestContext& c) { return Usage(e, c, true); }
StatusOr<HttpResponse> RenameFile(Env& e, RequestContext& c) { return FileOp(e, c, RenameOp); }
StatusOr<HttpResponse> MoveFile(Env& e, RequestContext& c) { return FileOp(e, c, MoveOp); }
StatusOr<HttpResponse> DeleteFiles(Env& e, RequestContext& c) { return FileOp(e, c, DeleteOp); }
StatusOr<HttpResponse> ShareWith(Env& e, RequestContext& c) { return Share(e, c, true); }
StatusOr<HttpResponse> Unshare(Env& e, RequestContext& c) { return Share(e, c, false); }
StatusOr<HttpResponse> Received(Env& e, RequestContext& c) { return Invitations(e, c, false); }
StatusOr<HttpResponse> Sent(Env& e, RequestContext& c) { return Invitations(e, c, true); }

}  // namespace

void RegisterVFolderRoutes(ManagerApi& api, vfolders::StorageLinks const& links,
                           BackgroundTaskStore& tasks) {
  using L = AuthLevel;
  // What walks a folder's whole tree runs off the I/O threads (pooled).
  constexpr bool kPooled = true;
  AddRoutes<Env>(api, std::make_shared<Env>(vfolders::FolderStore(api.store().db()), links, tasks),
                 {
                     {"POST", "/folders", L::kUser, Create},
                     {"GET", "/folders", L::kUser, List},
                     {"DELETE", "/folders", L::kUser, ByBody<MoveToTrash>},
                     {"GET", "/folders/_/id", L::kUser, IdOf},
                     {"GET", "/folders/_/hosts", L::kUser, Hosts},
                     {"GET", "/folders/_/all-hosts", L::kSuperadmin, AllHosts},
                     {"GET", "/folders/_/all_hosts", L::kSuperadmin, AllHosts},
                     {"GET", "/folders/_/allowed-types", L::kUser, AllowedTypes},
                     {"GET", "/folders/_/allowed_types", L::kUser, AllowedTypes},
                     {"GET", "/folders/_/usage", L::kSuperadmin, UsageOf, kPooled},
                     {"GET", "/folders/_/used-bytes", L::kSuperadmin, UsedBytes, kPooled},
                     {"GET", "/folders/_/quota", L::kUser, GetQuota, kPooled},
                     {"POST", "/folders/_/quota", L::kUser, SetQuota},
                     {"POST", "/folders/purge", L::kUser, ByBody<Purge>},
                     {"POST", "/folders/delete-from-trash-bin", L::kUser, ByBody<Purge>},
                     {"POST", "/folders/restore-from-trash-bin", L::kUser, ByBody<Restore>},
                     {"GET", "/folders/{name}", L::kUser, Info, kPooled},
                     {"DELETE", "/folders/{name}", L::kUser, TrashByName},
                     {"POST", "/folders/{name}/rename", L::kUser, Rename},
                     {"POST", "/folders/{name}/update-options", L::kUser, UpdateOptions},
                     {"POST", "/folders/{name}/mkdir", L::kUser, Mkdir},
                     {"GET", "/folders/{name}/files", L::kUser, Files},
                     {"POST", "/folders/{name}/rename-file", L::kUser, RenameFile},
                     {"POST", "/folders/{name}/rename_file", L::kUser, RenameFile},
                     {"POST", "/folders/{name}/move-file", L::kUser, MoveFile},
                     {"POST", "/folders/{name}/delete-files", L::kUser, DeleteFiles},
                     {"DELETE", "/folders/{name}/delete-files", L::kUser, DeleteFiles},
                     {"DELETE", "/folders/{name}/delete_files", L::kUser, DeleteFiles},
                     {"POST", "/folders/{name}/request-upload", L::kUser, RequestUpload},
                     {"POST", "/folders/{name}/request-download", L::kUser, RequestDownload},
                     {"POST", "/folders/{name}/clone", L::kUser, Clone},
                     {"POST", "/folders/{name}/invite", L::kUser, Invite},
                     {"POST", "/folders/{name}/leave", L::kUser, Leave},
                     {"POST", "/folders/{name}/share", L::kUser, ShareWith},
                     {"POST", "/folders/{name}/unshare", L::kUser, Unshare},
                     {"DELETE", "/folders/{name}/unshare", L::kUser, Unshare},
                     {"POST", "/folders/invitations/delete", L::kUser, DeleteInvitation},
                     {"DELETE", "/folders/invitations/delete", L::kUser, DeleteInvitation},
                     {"GET", "/folders/_/shared", L::kUser, SharedWith},
                     {"GET", "/folders/invitations/list", L::kUser, Received},
                     {"GET", "/folders/invitations/list-sent", L::kUser, Sent},
                     {"GET", "/folders/invitations/list_sent", L::kUser, Sent},
                     {"POST", "/folders/invitations/accept", L::kUser, Accept},
                     {"POST", "/folders/invitations/update/{inv_id}", L::kUser, UpdateInvitation},
                 });
}

}  // namespace bai::manager
