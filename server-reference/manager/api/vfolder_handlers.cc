// SPDX-License-Identifier: Apache-2.0
// Virtual folders (PROTOCOL.md §7): records here, bytes on a storage proxy. Every handler finds
// the folder among those the caller reaches, asks vfolders::Decide what the caller may do, then
// works on the record and asks the folder's proxy (storage_api.h) for the files.
#include "bai/protocol/errors.h"
#include "bai/protocol/vfolder_wire.h"

#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/store.h"
#include "server-reference/manager/vfolders/access.h"
#include "server-reference/manager/vfolders/storage_links.h"
#include "server-reference/manager/vfolders/store.h"
#include "server-reference/storage/storage_api.h"

#include <algorithm>

namespace bai::manager {
namespace {

namespace p = protocol;
namespace api = storage::api;
using nlohmann::json;
using p::MakeProblemStatus;
using p::ProblemType;
using server::HttpResponse;
using vfolders::FolderRecord;

struct Env {
  vfolders::FolderStore folders;
  vfolders::StorageLinks const& links;
};

// A folder and what the caller may do with it.
struct Found {
  FolderRecord folder;
  vfolders::Access access;
};

p::VFolderPermission PermissionOf(std::string const& text) {
  return p::ParseVFolderPermission(text).value_or(p::VFolderPermission::kReadOnly);
}

StatusOr<vfolders::Access> AccessOf(Env& env, Identity const& who, FolderRecord const& f) {
  vfolders::FolderFacts facts;
  facts.ownership =
      f.ownership_type == "group" ? p::VFolderOwnership::kGroup : p::VFolderOwnership::kUser;
  facts.user_id = f.user_id;
  facts.group_id = f.group_id;
  facts.domain = f.domain;
  facts.permission = PermissionOf(f.permission);
  vfolders::CallerFacts caller;
  caller.user_id = who.user_id;
  caller.role = who.role;
  caller.domain = who.domain;
  auto groups = env.folders.Groups(who.user_id);
  if (!groups.ok()) return groups.status();
  caller.groups.insert(groups->begin(), groups->end());
  auto shared = env.folders.SharedPermission(f.id, who.user_id);
  if (!shared.ok()) return shared.status();
  if (*shared) caller.shared = PermissionOf(**shared);
  return vfolders::Decide(facts, caller);
}

std::string Hex(std::string const& id) {
  std::string out;
  for (char c : id) {
    if (c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool InTrash(FolderRecord const& f) { return f.status.rfind("delete-", 0) == 0; }

Status NotFound(std::string const& key) {
  return MakeProblemStatus(ProblemType::kObjectNotFound, "No such virtual folder: " + key);
}

// The folder `key` (a name, or an id with or without dashes) among those the caller reaches.
// Names match live folders; the trash is searched by name only when `trash` is set; ids
// match either.
StatusOr<Found> Resolve(Env& env, Identity const& who, std::string const& key, bool trash) {
  auto all = env.folders.Reachable(who.user_id, who.role, who.domain);
  if (!all.ok()) return all.status();
  std::vector<Found> matches;
  std::string hex = Hex(key);
  for (auto& f : *all) {
    if (f.status == "delete-complete") continue;
    bool by_id = hex.size() == 32 && f.id == hex;
    bool by_name = f.name == key && InTrash(f) == trash;
    if (!by_id && !by_name) continue;
    auto access = AccessOf(env, who, f);
    if (!access.ok()) return access.status();
    if (!access->ok()) continue;
    if (by_id) return Found{f, *access};
    matches.push_back({f, *access});
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
  if (InTrash(f.folder)) {
    return MakeProblemStatus(ProblemType::kVfolderFilterStatusNotAvailable,
                             "The folder is in the trash; restore it first.");
  }
  return Status();
}

// Storage errors as the API's problems, by code (the same for an embedded proxy and a remote
// one, whose problem+json the SDK's table maps back to a code).
Status StorageProblem(Status const& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAlreadyExists:
      return MakeProblemStatus(ProblemType::kVfolderOperationFailed, s.message());
    case StatusCode::kNotFound:
      return MakeProblemStatus(ProblemType::kObjectNotFound, s.message());
    case StatusCode::kResourceExhausted:
      return MakeProblemStatus(ProblemType::kQuotaExceeded, s.message());
    case StatusCode::kUnavailable:
      return MakeProblemStatus(ProblemType::kServiceUnavailable, s.message());
    default:
      return MakeProblemStatus(ProblemType::kStorageProxyError, s.message());
  }
}

json FolderArgs(FolderRecord const& f) {
  return {{"scope", vfolders::ScopeDirectory(f.quota_scope_id)}, {"id", f.id}};
}

StatusOr<json> Storage(Env& env, FolderRecord const& f, std::string_view op, json extra = {}) {
  json args = FolderArgs(f);
  if (extra.is_object()) {
    for (auto& [k, v] : extra.items()) args[k] = v;
  }
  auto r = env.links.Call(f.host, op, args);
  if (!r.ok()) return StorageProblem(r.status());
  return r;
}

json Summary(FolderRecord const& f, Found const* found, Identity const& who) {
  std::string perm = found ? std::string(p::ToString(found->access.permission)) : f.permission;
  return {{"name", f.name},
          {"id", f.id},
          {"quota_scope_id", f.quota_scope_id},
          {"host", f.host},
          {"status", f.status},
          {"usage_mode", f.usage_mode},
          {"created_at", f.created_at},
          {"is_owner", f.user_id == who.user_id},
          {"permission", perm},
          {"user", f.user_id.empty() ? json(nullptr) : json(f.user_id)},
          {"group", f.group_id.empty() ? json(nullptr) : json(f.group_id)},
          {"creator", f.creator},
          {"ownership_type", f.ownership_type},
          {"type", f.ownership_type},
          {"cloneable", f.cloneable},
          {"max_files", 0},
          {"max_size", 0},
          {"cur_size", 0}};
}

// ---- handlers ---------------------------------------------------------------------------------

StatusOr<HttpResponse> Create(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto name = params->String({"name"}, true);
  auto host = params->String({"host", "folder_host"});
  auto usage_mode = params->String({"usage_mode", "usageMode"});
  auto permission = params->String({"permission"});
  auto group = params->String({"group", "groupId", "group_id"});
  auto cloneable = params->Bool({"cloneable"});
  if (params->Raw({"unmanaged_path", "unmanagedPath"})) {
    params->Fail("unmanaged_path", "unmanaged folders are not supported by this server");
  }
  if (auto s = params->Check(); !s.ok()) return s;
  Identity const& who = *ctx.identity;
  FolderRecord f;
  f.id = vfolders::NewFolderId();
  f.name = *name;
  f.host = host.value_or(env.links.default_host);
  f.usage_mode = usage_mode.value_or("general");
  f.permission = permission.value_or("rw");
  f.cloneable = cloneable.value_or(false);
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
  if (auto s = env.folders.Insert(f); !s.ok()) {
    if (s.code() == StatusCode::kAlreadyExists) {
      return MakeProblemStatus(ProblemType::kVfolderAlreadyExists, s.message());
    }
    return s;
  }
  if (auto made = Storage(env, f, api::kFolderCreate); !made.ok()) {
    (void)env.folders.Remove(f.id);
    return made.status();
  }
  json out = {{"id", f.id},
              {"name", f.name},
              {"quota_scope_id", f.quota_scope_id},
              {"host", f.host},
              {"usage_mode", f.usage_mode},
              {"permission", f.permission},
              {"max_size", 0},
              {"creator", f.creator},
              {"ownership_type", f.ownership_type},
              {"user", f.user_id.empty() ? json(nullptr) : json(f.user_id)},
              {"group", f.group_id.empty() ? json(nullptr) : json(f.group_id)},
              {"cloneable", f.cloneable},
              {"status", f.status}};
  return JsonResponse(out, 201);
}

StatusOr<HttpResponse> List(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto group = params->String({"group_id", "groupId"});
  auto all = params->Bool({"all"});
  if (all && *all) params->Fail("all", "'all' is no longer supported");
  if (auto s = params->Check(); !s.ok()) return s;
  Identity const& who = *ctx.identity;
  auto folders = env.folders.Reachable(who.user_id, "user", who.domain);
  if (!folders.ok()) return folders.status();
  json out = json::array();
  for (auto const& f : *folders) {
    if (f.status == "delete-complete") continue;
    if (group && Hex(f.group_id) != Hex(*group)) continue;
    auto access = AccessOf(env, who, f);
    if (!access.ok()) return access.status();
    if (!access->ok()) continue;
    Found found{f, *access};
    out.push_back(Summary(f, &found, who));
  }
  return JsonResponse(out);
}

StatusOr<HttpResponse> Info(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto usage = Storage(env, f->folder, api::kFolderUsage);
  json out = Summary(f->folder, &*f, *ctx.identity);
  std::int64_t files = usage.ok() ? usage->value("file_count", std::int64_t{0}) : 0;
  std::int64_t bytes = usage.ok() ? usage->value("used_bytes", std::int64_t{0}) : 0;
  out["numFiles"] = files;
  out["num_files"] = files;
  out["used_bytes"] = bytes;
  out["cur_size"] = bytes;
  out["created"] = f->folder.created_at;
  out["last_used"] = f->folder.last_used.empty() ? json(nullptr) : json(f->folder.last_used);
  return JsonResponse(out);
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
  auto params = Params::From(ctx.request, ParamSource::kBoth);
  if (!params.ok()) return params.status();
  auto id = params->String({"vfolder_id", "vfolderId", "id"}, true);
  if (auto s = params->Check(); !s.ok()) return s;
  auto hex = Hex(*id);
  if (hex.size() != 32) return NotFound(*id);
  return Resolve(env, *ctx.identity, hex, true);
}

StatusOr<HttpResponse> MoveToTrash(Env& env, Found const& f) {
  if (!f.access.manages()) return Denied("deletion by you (only its owner or an admin)");
  if (auto s = CheckLive(f); !s.ok()) return s;
  if (auto s = env.folders.SetStatus(f.folder.id, "delete-pending"); !s.ok()) return s;
  return HttpResponse::NoContent();
}

StatusOr<HttpResponse> Purge(Env& env, Found const& f) {
  if (!f.access.manages()) return Denied("deletion by you (only its owner or an admin)");
  if (f.folder.status != "delete-pending") {
    return MakeProblemStatus(ProblemType::kVfolderFilterStatusNotAvailable,
                             "Only a folder in the trash can be removed for good.");
  }
  if (auto s = env.folders.SetStatus(f.folder.id, "delete-ongoing"); !s.ok()) return s;
  auto gone = Storage(env, f.folder, api::kFolderDelete);
  if (!gone.ok() && gone.status().code() != StatusCode::kNotFound) {
    (void)env.folders.SetStatus(f.folder.id, "delete-error");
    return gone.status();
  }
  if (auto s = env.folders.Remove(f.folder.id); !s.ok()) return s;
  return HttpResponse::NoContent();
}

StatusOr<HttpResponse> Restore(Env& env, Found const& f) {
  if (!f.access.manages()) return Denied("restoring by you");
  if (f.folder.status != "delete-pending") {
    return MakeProblemStatus(ProblemType::kVfolderFilterStatusNotAvailable,
                             "The folder is not in the trash.");
  }
  // Its name may have been taken meanwhile.
  if (auto s = env.folders.Rename(f.folder.id, f.folder.name); !s.ok()) {
    return MakeProblemStatus(ProblemType::kVfolderAlreadyExists,
                             s.message() + "; rename that one first");
  }
  if (auto s = env.folders.SetStatus(f.folder.id, "ready"); !s.ok()) return s;
  return HttpResponse::NoContent();
}

StatusOr<HttpResponse> Rename(Env& env, RequestContext& ctx) {
  auto f = ResolveFor(env, ctx);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto name = params->String({"new_name", "newName"}, true);
  if (auto s = params->Check(); !s.ok()) return s;
  if (!f->access.manages()) return Denied("renaming by you (only its owner or an admin)");
  if (auto s = CheckLive(*f); !s.ok()) return s;
  if (auto s = p::CheckVFolderName(*name, f->folder.ownership_type == "group"); !s.ok()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
  }
  if (auto s = env.folders.Rename(f->folder.id, *name); !s.ok()) {
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
  auto list = Storage(env, f->folder, api::kFileList, {{"path", path.value_or("")}});
  if (!list.ok()) return list.status();
  json items = list->value("items", json::array());
  return JsonResponse({{"items", items}, {"files", items.dump()}});
}

StatusOr<HttpResponse> Mkdir(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  std::vector<std::string> paths;
  if (auto const* raw = params->Raw({"path"})) {
    if (raw->is_string()) {
      paths.push_back(raw->get<std::string>());
    } else if (raw->is_array() && raw->size() <= 50) {
      for (auto const& v : *raw) {
        if (v.is_string())
          paths.push_back(v.get<std::string>());
        else
          params->Fail("path", "a path or a list of paths");
      }
    } else {
      params->Fail("path", "a path or a list of up to 50 paths");
    }
  } else {
    params->Fail("path", "required");
  }
  auto parents = params->Bool({"parents"});
  auto exist_ok = params->Bool({"exist_ok"});
  if (auto s = params->Check(); !s.ok()) return s;
  json ok = json::array(), failed = json::array();
  for (auto const& path : paths) {
    auto r = Storage(env, f->folder, api::kFileMkdir,
                     {{"path", path},
                      {"parents", parents.value_or(true)},
                      {"exist_ok", exist_ok.value_or(false)}});
    if (r.ok()) {
      ok.push_back({{"item", path}, {"msg", nullptr}});
    } else {
      failed.push_back({{"item", path}, {"msg", r.status().message()}});
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

StatusOr<HttpResponse> FileOp(Env& env, RequestContext& ctx, std::string_view op,
                              std::initializer_list<std::pair<char const*, char const*>> fields) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  json args = json::object();
  for (auto const& [wire, ours] : fields) {
    auto v = params->String({wire}, true);
    if (v) args[ours] = *v;
  }
  if (auto s = params->Check(); !s.ok()) return s;
  auto r = Storage(env, f->folder, op, args);
  if (!r.ok()) return r.status();
  return JsonResponse(json::object());
}

StatusOr<HttpResponse> DeleteFiles(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  json paths = json::array();
  if (auto const* raw = params->Raw({"files"}); raw && raw->is_array()) {
    for (auto const& v : *raw) {
      if (v.is_string())
        paths.push_back(v);
      else
        params->Fail("files", "a list of paths");
    }
  } else {
    params->Fail("files", "a list of paths");
  }
  auto recursive = params->Bool({"recursive"});
  if (auto s = params->Check(); !s.ok()) return s;
  auto r = Storage(env, f->folder, api::kFileDelete,
                   {{"paths", paths}, {"recursive", recursive.value_or(false)}});
  if (!r.ok()) return r.status();
  return JsonResponse(json::object());
}

// Refuses an upload that would pass the folder's quota scope (bytes or files).
Status CheckQuota(Env& env, FolderRecord const& f, std::int64_t size) {
  auto quota = env.folders.Quota(f.quota_scope_id);
  if (!quota.ok()) return quota.status();
  auto [max_bytes, max_files] = *quota;
  if (max_bytes <= 0 && max_files <= 0) return Status();
  auto used = env.links.Call(f.host, api::kScopeUsage,
                             {{"scope", vfolders::ScopeDirectory(f.quota_scope_id)}});
  if (!used.ok()) return StorageProblem(used.status());
  auto bytes = used->value("used_bytes", std::int64_t{0});
  auto files = used->value("file_count", std::int64_t{0});
  if (max_bytes > 0 && bytes + size > max_bytes) {
    return MakeProblemStatus(ProblemType::kQuotaExceeded,
                             "Over the quota of " + f.quota_scope_id + ": " +
                                 std::to_string(bytes) + " of " + std::to_string(max_bytes) +
                                 " bytes used, the file has " + std::to_string(size) + ".");
  }
  if (max_files > 0 && files + 1 > max_files) {
    return MakeProblemStatus(ProblemType::kQuotaExceeded, "Over the quota of " + f.quota_scope_id +
                                                              ": " + std::to_string(files) +
                                                              " of " + std::to_string(max_files) +
                                                              " files used.");
  }
  return Status();
}

StatusOr<HttpResponse> RequestUpload(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, true);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto path = params->String({"path"}, true);
  auto size = params->Int({"size"}, 0, std::int64_t{1} << 50);
  if (!size) params->Fail("size", "required: the file's size in bytes");
  // A bai addition other servers ignore: start again instead of resuming an unfinished upload
  // of the same path and size (the client's file changed since).
  auto restart = params->Bool({"restart"});
  if (auto s = params->Check(); !s.ok()) return s;
  if (restart.value_or(false)) {
    auto gone = Storage(env, f->folder, api::kFileCancelUpload, {{"path", *path}, {"size", *size}});
    if (!gone.ok() && gone.status().code() != StatusCode::kNotFound) return gone.status();
  }
  if (auto s = CheckQuota(env, f->folder, *size); !s.ok()) {
    // An unfinished upload of this path and size holds its room already: it may go on.
    auto again = Storage(env, f->folder, api::kFileUpload,
                         {{"path", *path}, {"size", *size}, {"resume_only", true}});
    if (!again.ok()) return s;
    return JsonResponse({{"token", (*again)["token"]}, {"url", (*again)["url"]}});
  }
  auto r = Storage(env, f->folder, api::kFileUpload, {{"path", *path}, {"size", *size}});
  if (!r.ok()) return r.status();
  return JsonResponse({{"token", (*r)["token"]}, {"url", (*r)["url"]}});
}

StatusOr<HttpResponse> RequestDownload(Env& env, RequestContext& ctx) {
  auto f = ForWork(env, ctx, false);
  if (!f.ok()) return f.status();
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto path = params->String({"path", "file"}, true);
  if (auto s = params->Check(); !s.ok()) return s;
  auto r = Storage(env, f->folder, api::kFileDownload, {{"path", *path}});
  if (!r.ok()) return r.status();
  return JsonResponse({{"token", (*r)["token"]}, {"url", (*r)["url"]}});
}

StatusOr<HttpResponse> Hosts(Env& env, RequestContext&) {
  json allowed = json::array(), info = json::object();
  for (auto const& [host, v] : env.links.Volumes()) {
    allowed.push_back(host);
    json usage = v.value("usage", json::object());
    info[host] = {{"backend", v.value("backend", "vfs")},
                  {"capabilities", v.value("capabilities", json::array())},
                  {"usage",
                   {{"percentage", usage.value("percentage", 0.0)},
                    {"used", usage.value("used", std::int64_t{0})},
                    {"total", usage.value("total", std::int64_t{0})}}},
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
  auto f = env.folders.Get(Hex(*id));
  if (!f.ok()) return f.status();
  if (!*f || (*f)->host != *host) return NotFound(*id);
  return **f;
}

StatusOr<HttpResponse> Usage(Env& env, RequestContext& ctx, bool bytes_only) {
  auto f = AdminTarget(env, ctx);
  if (!f.ok()) return f.status();
  auto u = Storage(env, *f, api::kFolderUsage);
  if (!u.ok()) return u.status();
  if (bytes_only) return JsonResponse({{"used_bytes", (*u)["used_bytes"]}});
  return JsonResponse({{"file_count", (*u)["file_count"]}, {"used_bytes", (*u)["used_bytes"]}});
}

StatusOr<HttpResponse> SetQuota(Env& env, RequestContext& ctx) {
  auto params = Params::From(ctx.request);
  if (!params.ok()) return params.status();
  auto host = params->String({"folder_host"}, true);
  auto id = params->String({"id"}, true);
  auto const* input = params->Raw({"input"});
  if (!input || !input->is_object()) params->Fail("input", "an object with size_bytes");
  if (auto s = params->Check(); !s.ok()) return s;
  auto f = Resolve(env, *ctx.identity, *id, false);
  if (!f.ok()) return f.status();
  if (f->folder.host != *host) return NotFound(*id);
  if (!ctx.identity->IsAdmin()) {
    return MakeProblemStatus(ProblemType::kInsufficientPrivilege, "Only admins set quotas.");
  }
  std::int64_t bytes = input->value("size_bytes", std::int64_t{0});
  std::int64_t files = input->value("max_files", std::int64_t{0});
  if (bytes < 0 || files < 0) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, "quotas are not negative");
  }
  if (auto s = env.folders.SetQuota(f->folder.quota_scope_id, bytes, files); !s.ok()) return s;
  return JsonResponse({{"size_bytes", bytes}, {"max_files", files}});
}

}  // namespace

void RegisterVFolderRoutes(ManagerApi& api, vfolders::StorageLinks const& links) {
  auto env = std::make_shared<Env>(Env{vfolders::FolderStore(api.store().db()), links});
  using L = AuthLevel;
  auto on = [env](StatusOr<HttpResponse> (*h)(Env&, RequestContext&)) -> SyncHandler {
    return [env, h](RequestContext& ctx) { return Guard([&] { return h(*env, ctx); }); };
  };
  auto by_body = [env](StatusOr<HttpResponse> (*h)(Env&, Found const&)) -> SyncHandler {
    return [env, h](RequestContext& ctx) {
      return Guard([&]() -> StatusOr<HttpResponse> {
        auto f = ById(*env, ctx);
        if (!f.ok()) return f.status();
        return h(*env, *f);
      });
    };
  };
  api.Add("POST", "/folders", L::kUser, on(Create));
  api.Add("GET", "/folders", L::kUser, on(List));
  api.Add("DELETE", "/folders", L::kUser, by_body(MoveToTrash));
  api.Add("GET", "/folders/_/id", L::kUser, on(IdOf));
  api.Add("GET", "/folders/_/hosts", L::kUser, on(Hosts));
  api.Add("GET", "/folders/_/all-hosts", L::kSuperadmin, on(AllHosts));
  api.Add("GET", "/folders/_/all_hosts", L::kSuperadmin, on(AllHosts));
  SyncHandler types = [](RequestContext&) { return JsonResponse(json::array({"user", "group"})); };
  api.Add("GET", "/folders/_/allowed-types", L::kUser, types);
  api.Add("GET", "/folders/_/allowed_types", L::kUser, types);
  api.Add("GET", "/folders/_/usage", L::kSuperadmin,
          on([](Env& e, RequestContext& c) { return Usage(e, c, false); }));
  api.Add("GET", "/folders/_/used-bytes", L::kSuperadmin,
          on([](Env& e, RequestContext& c) { return Usage(e, c, true); }));
  api.Add("GET", "/folders/_/quota", L::kUser, [](RequestContext&) {
    return server::ProblemResponse(MakeProblemStatus(
        ProblemType::kDeprecated, "Per-folder quota queries are deprecated; use quota scopes."));
  });
  api.Add("POST", "/folders/_/quota", L::kUser, on(SetQuota));
  api.Add("POST", "/folders/purge", L::kUser, by_body(Purge));
  api.Add("POST", "/folders/delete-from-trash-bin", L::kUser, by_body(Purge));
  api.Add("POST", "/folders/restore-from-trash-bin", L::kUser, by_body(Restore));
  api.Add("GET", "/folders/{name}", L::kUser, on(Info));
  api.Add("DELETE", "/folders/{name}", L::kUser,
          on([](Env& e, RequestContext& c) -> StatusOr<HttpResponse> {
            auto f = ResolveFor(e, c);
            if (!f.ok()) return f.status();
            return MoveToTrash(e, *f);
          }));
  api.Add("POST", "/folders/{name}/rename", L::kUser, on(Rename));
  api.Add("POST", "/folders/{name}/update-options", L::kUser, on(UpdateOptions));
  api.Add("POST", "/folders/{name}/mkdir", L::kUser, on(Mkdir));
  api.Add("GET", "/folders/{name}/files", L::kUser, on(Files));
  for (auto const* path : {"/folders/{name}/rename-file", "/folders/{name}/rename_file"}) {
    api.Add("POST", path, L::kUser, on([](Env& e, RequestContext& c) {
              return FileOp(e, c, api::kFileRename,
                            {{"target_path", "path"}, {"new_name", "new_name"}});
            }));
  }
  api.Add("POST", "/folders/{name}/move-file", L::kUser, on([](Env& e, RequestContext& c) {
            return FileOp(e, c, api::kFileMove, {{"src", "src"}, {"dst", "dst"}});
          }));
  api.Add("POST", "/folders/{name}/delete-files", L::kUser, on(DeleteFiles));
  api.Add("DELETE", "/folders/{name}/delete-files", L::kUser, on(DeleteFiles));
  api.Add("DELETE", "/folders/{name}/delete_files", L::kUser, on(DeleteFiles));
  api.Add("POST", "/folders/{name}/request-upload", L::kUser, on(RequestUpload));
  api.Add("POST", "/folders/{name}/request-download", L::kUser, on(RequestDownload));
}

}  // namespace bai::manager
