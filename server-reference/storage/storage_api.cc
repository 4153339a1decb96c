// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/storage_api.h"

#include "libbai/protocol/json_fields.h"

namespace bai::storage::api {
namespace {

using nlohmann::json;

// Reads one object with the protocol's field reader; errors become kInvalidArgument naming
// the field (the proxy answers them as 400).
template <class T, class Reader>
StatusOr<T> Read(json const& object, Reader read) {
  if (!object.is_object()) return Status(StatusCode::kInvalidArgument, "arguments are an object");
  internal::FieldReader r(object);
  T out;
  read(r, out);
  if (!r.ok()) return Status(StatusCode::kInvalidArgument, r.error());
  return out;
}

}  // namespace

json ToJson(Nothing const&) { return json::object(); }
template <>
StatusOr<Nothing> FromJson<Nothing>(json const& object) {
  return Read<Nothing>(object, [](internal::FieldReader&, Nothing&) {});
}

json ToJson(Usage const& u) { return {{"file_count", u.file_count}, {"used_bytes", u.used_bytes}}; }
template <>
StatusOr<Usage> FromJson<Usage>(json const& object) {
  return Read<Usage>(object, [](internal::FieldReader& r, Usage& u) {
    u.file_count = r.Int("file_count", 0);
    u.used_bytes = r.Int("used_bytes", 0);
  });
}

json ToJson(Volumes const& v) {
  json list = json::array();
  for (auto const& vol : v.volumes) {
    json usage = json::object();
    if (vol.usage) {
      usage = {{"total", vol.usage->total},
               {"used", vol.usage->used},
               {"free", vol.usage->free},
               {"percentage", vol.usage->percentage}};
    }
    list.push_back({{"name", vol.name},
                    {"backend", vol.backend},
                    {"path", vol.path},
                    {"capabilities", vol.capabilities},
                    {"usage", usage}});
  }
  return {{"volumes", list}};
}
template <>
StatusOr<Volumes> FromJson<Volumes>(json const& object) {
  return Read<Volumes>(object, [](internal::FieldReader& r, Volumes& v) {
    auto const* list = r.Array("volumes");
    if (list == nullptr) return r.Fail("volumes", "a list of volumes");
    for (auto const& item : *list) {
      if (!item.is_object()) return r.Fail("volumes", "a list of objects");
      internal::FieldReader one(item);
      VolumeInfo vol;
      vol.name = one.Required("name");
      vol.backend = one.String("backend", "vfs");
      vol.path = one.String("path");
      if (auto const* caps = one.Array("capabilities")) {
        for (auto const& c : *caps) {
          if (c.is_string()) vol.capabilities.push_back(c.get<std::string>());
        }
      }
      if (auto const* u = one.Object("usage"); u != nullptr && !u->empty()) {
        internal::FieldReader ur(*u);
        VolumeUsage usage;
        usage.total = ur.Int("total", 0);
        usage.used = ur.Int("used", 0);
        usage.free = ur.Int("free", 0);
        auto p = u->find("percentage");
        usage.percentage = p != u->end() && p->is_number() ? p->get<double>() : 0.0;
        if (!ur.ok()) return r.Refuse("volumes", ur.error());
        vol.usage = usage;
      }
      if (!one.ok()) return r.Refuse("volumes", one.error());
      v.volumes.push_back(std::move(vol));
    }
  });
}

json ToJson(HostPath const& p) { return {{"path", p.path}}; }
template <>
StatusOr<HostPath> FromJson<HostPath>(json const& object) {
  return Read<HostPath>(object,
                        [](internal::FieldReader& r, HostPath& p) { p.path = r.Required("path"); });
}

json ToJson(Listing const& l) {
  return {{"items", json::parse(protocol::EncodeVFolderFiles(l.items))}};
}
template <>
StatusOr<Listing> FromJson<Listing>(json const& object) {
  auto items = protocol::DecodeVFolderListing(object.dump());
  if (!items.ok()) return Status(StatusCode::kInvalidArgument, items.status().message());
  return Listing{*std::move(items)};
}

json ToJson(UploadTicket const& t) {
  return {{"token", t.token}, {"url", t.url}, {"session", t.session}, {"offset", t.offset}};
}
template <>
StatusOr<UploadTicket> FromJson<UploadTicket>(json const& object) {
  return Read<UploadTicket>(object, [](internal::FieldReader& r, UploadTicket& t) {
    t.token = r.Required("token");
    t.url = r.Required("url");
    t.session = r.String("session");
    t.offset = r.Int("offset", 0);
  });
}

json ToJson(DownloadTicket const& t) {
  return {{"token", t.token}, {"url", t.url}, {"is_dir", t.is_dir}};
}
template <>
StatusOr<DownloadTicket> FromJson<DownloadTicket>(json const& object) {
  return Read<DownloadTicket>(object, [](internal::FieldReader& r, DownloadTicket& t) {
    t.token = r.Required("token");
    t.url = r.Required("url");
    t.is_dir = r.Bool("is_dir", false);
  });
}

json ToJson(FolderAddress const& a) {
  return {{"volume", a.volume}, {"scope", a.scope}, {"id", a.id}};
}
template <>
StatusOr<FolderAddress> FromJson<FolderAddress>(json const& object) {
  return Read<FolderAddress>(object, [](internal::FieldReader& r, FolderAddress& a) {
    a.volume = r.Required("volume");
    a.scope = r.Required("scope");
    a.id = r.Required("id");
  });
}

json ToJson(ListVolumes const&) { return json::object(); }
template <>
StatusOr<ListVolumes> FromJson<ListVolumes>(json const& object) {
  return Read<ListVolumes>(object, [](internal::FieldReader&, ListVolumes&) {});
}

json ToJson(GetScopeUsage const& op) { return {{"scope", op.scope}}; }
template <>
StatusOr<GetScopeUsage> FromJson<GetScopeUsage>(json const& object) {
  return Read<GetScopeUsage>(
      object, [](internal::FieldReader& r, GetScopeUsage& op) { op.scope = r.Required("scope"); });
}

json ToJson(CreateFolder const&) { return json::object(); }
template <>
StatusOr<CreateFolder> FromJson<CreateFolder>(json const& object) {
  return Read<CreateFolder>(object, [](internal::FieldReader&, CreateFolder&) {});
}

json ToJson(DeleteFolder const&) { return json::object(); }
template <>
StatusOr<DeleteFolder> FromJson<DeleteFolder>(json const& object) {
  return Read<DeleteFolder>(object, [](internal::FieldReader&, DeleteFolder&) {});
}

json ToJson(RevokeTokens const& op) {
  json out = json::object();
  if (!op.user.empty()) out["user"] = op.user;
  return out;
}
template <>
StatusOr<RevokeTokens> FromJson<RevokeTokens>(json const& object) {
  return Read<RevokeTokens>(
      object, [](internal::FieldReader& r, RevokeTokens& op) { op.user = r.String("user"); });
}

json ToJson(MountPath const&) { return json::object(); }
template <>
StatusOr<MountPath> FromJson<MountPath>(json const& object) {
  return Read<MountPath>(object, [](internal::FieldReader&, MountPath&) {});
}

json ToJson(GetFolderUsage const& op) {
  return op.for_quota ? json{{"for_quota", true}} : json::object();
}
template <>
StatusOr<GetFolderUsage> FromJson<GetFolderUsage>(json const& object) {
  return Read<GetFolderUsage>(object, [](internal::FieldReader& r, GetFolderUsage& op) {
    op.for_quota = r.Bool("for_quota", false);
  });
}

json ToJson(CloneFolder const& op) {
  return {{"dst_volume", op.dst_volume}, {"dst_scope", op.dst_scope}, {"dst_id", op.dst_id}};
}
template <>
StatusOr<CloneFolder> FromJson<CloneFolder>(json const& object) {
  return Read<CloneFolder>(object, [](internal::FieldReader& r, CloneFolder& op) {
    op.dst_volume = r.Required("dst_volume");
    op.dst_scope = r.Required("dst_scope");
    op.dst_id = r.Required("dst_id");
  });
}

json ToJson(ListFiles const& op) { return {{"path", op.path}}; }
template <>
StatusOr<ListFiles> FromJson<ListFiles>(json const& object) {
  return Read<ListFiles>(
      object, [](internal::FieldReader& r, ListFiles& op) { op.path = r.String("path"); });
}

json ToJson(MakeDirectory const& op) {
  return {{"path", op.path}, {"parents", op.parents}, {"exist_ok", op.exist_ok}};
}
template <>
StatusOr<MakeDirectory> FromJson<MakeDirectory>(json const& object) {
  return Read<MakeDirectory>(object, [](internal::FieldReader& r, MakeDirectory& op) {
    op.path = r.Required("path");
    op.parents = r.Bool("parents", true);
    op.exist_ok = r.Bool("exist_ok", false);
  });
}

json ToJson(RenameFile const& op) { return {{"path", op.path}, {"new_name", op.new_name}}; }
template <>
StatusOr<RenameFile> FromJson<RenameFile>(json const& object) {
  return Read<RenameFile>(object, [](internal::FieldReader& r, RenameFile& op) {
    op.path = r.Required("path");
    op.new_name = r.Required("new_name");
  });
}

json ToJson(MoveFile const& op) { return {{"src", op.src}, {"dst", op.dst}}; }
template <>
StatusOr<MoveFile> FromJson<MoveFile>(json const& object) {
  return Read<MoveFile>(object, [](internal::FieldReader& r, MoveFile& op) {
    op.src = r.Required("src");
    op.dst = r.Required("dst");
  });
}

json ToJson(DeleteFiles const& op) { return {{"paths", op.paths}, {"recursive", op.recursive}}; }
template <>
StatusOr<DeleteFiles> FromJson<DeleteFiles>(json const& object) {
  return Read<DeleteFiles>(object, [](internal::FieldReader& r, DeleteFiles& op) {
    auto const* paths = r.Array("paths");
    if (paths == nullptr) return r.Fail("paths", "a list of paths");
    for (auto const& p : *paths) {
      if (!p.is_string()) return r.Fail("paths", "a list of strings");
      op.paths.push_back(p.get<std::string>());
    }
    op.recursive = r.Bool("recursive", false);
  });
}

namespace {

json QuotaJson(QuotaLimits const& q) {
  return {{"folder", q.folder},
          {"folder_max_bytes", q.folder_max_bytes},
          {"folder_max_files", q.folder_max_files},
          {"scope", q.scope},
          {"scope_max_bytes", q.scope_max_bytes},
          {"reserved_bytes", q.reserved.bytes},
          {"reserved_files", q.reserved.files}};
}

QuotaLimits QuotaOf(json const& object, internal::FieldReader& outer) {
  internal::FieldReader r(object);
  QuotaLimits q;
  q.folder = r.String("folder");
  q.folder_max_bytes = r.Int("folder_max_bytes", 0);
  q.folder_max_files = r.Int("folder_max_files", 0);
  q.scope = r.String("scope");
  q.scope_max_bytes = r.Int("scope_max_bytes", 0);
  q.reserved = {r.Int("reserved_bytes", 0), r.Int("reserved_files", 0)};
  for (auto const& [field, why] : r.field_errors()) outer.Refuse("quota." + field, why);
  return q;
}

}  // namespace

json ToJson(StartUpload const& op) {
  json out = {{"path", op.path}, {"size", op.size}};
  if (op.resume_only) out["resume_only"] = true;
  if (!op.user.empty()) out["user"] = op.user;
  if (op.quota) out["quota"] = QuotaJson(*op.quota);
  return out;
}
template <>
StatusOr<StartUpload> FromJson<StartUpload>(json const& object) {
  return Read<StartUpload>(object, [](internal::FieldReader& r, StartUpload& op) {
    op.path = r.Required("path");
    auto size = r.OptInt("size");
    if (!size || *size < 0) r.Fail("size", "a number of bytes");
    op.size = size.value_or(0);
    op.resume_only = r.Bool("resume_only", false);
    op.user = r.String("user");
    if (auto const* quota = r.Object("quota")) op.quota = QuotaOf(*quota, r);
  });
}

json ToJson(CancelUpload const& op) { return {{"path", op.path}, {"size", op.size}}; }
template <>
StatusOr<CancelUpload> FromJson<CancelUpload>(json const& object) {
  return Read<CancelUpload>(object, [](internal::FieldReader& r, CancelUpload& op) {
    op.path = r.Required("path");
    auto size = r.OptInt("size");
    if (!size || *size < 0) r.Fail("size", "a number of bytes");
    op.size = size.value_or(0);
  });
}

json ToJson(StartDownload const& op) {
  json out = {{"path", op.path}};
  if (!op.user.empty()) out["user"] = op.user;
  return out;
}
template <>
StatusOr<StartDownload> FromJson<StartDownload>(json const& object) {
  return Read<StartDownload>(object, [](internal::FieldReader& r, StartDownload& op) {
    auto path = r.OptString("path");  // "" is the folder's root (a zip of it)
    if (!path) r.Fail("path", "a string");
    op.path = path.value_or("");
    op.user = r.String("user");
  });
}

}  // namespace bai::storage::api
