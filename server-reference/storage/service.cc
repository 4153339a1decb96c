// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/service.h"

#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/vfolder_wire.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/fs/unique_fd.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/common/wire/jwt.h"
#include "server-reference/storage/ranges.h"
#include "server-reference/storage/storage_api.h"
#include "server-reference/storage/tus.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace bai::storage {
namespace {

using nlohmann::json;

// A JSON argument that must be a string / a bool / a number.
StatusOr<std::string> Str(json const& args, char const* key, bool required = true) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) {
    if (!required) return std::string();
    return Status(StatusCode::kInvalidArgument, std::string("missing argument '") + key + "'");
  }
  if (!it->is_string()) {
    return Status(StatusCode::kInvalidArgument, std::string("'") + key + "' must be a string");
  }
  return it->get<std::string>();
}

std::string IsoTime(struct timespec t) {
  return protocol::FormatRfc3339(static_cast<std::int64_t>(t.tv_sec), t.tv_nsec / 1000);
}

// The query parameter `key`, decoded.
std::optional<std::string> QueryValue(server::HttpRequest const& request, std::string_view key) {
  for (auto& [k, v] : server::ParseQuery(request.query)) {
    if (k == key) return v;
  }
  return std::nullopt;
}

bool QueryFlag(server::HttpRequest const& request, std::string_view key) {
  auto v = QueryValue(request, key);
  return v && (*v == "true" || *v == "1" || *v == "yes");
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// `attachment;filename="<ascii>"; filename*=UTF-8''<percent-encoded>`.
std::string Disposition(std::string const& name) {
  std::string ascii;
  for (unsigned char c : name) {
    ascii += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? static_cast<char>(c) : '_';
  }
  return "attachment;filename=\"" + ascii + "\"; filename*=UTF-8''" + PercentEncode(name);
}

// An upload's answer headers.
void TusHeaders(server::HttpResponse& r) {
  r.headers.emplace_back(tus::kResumableHeader, tus::kVersion);
  r.headers.emplace_back("Cache-Control", "no-store");
}

// The storage proxy's own problems (its HTTP status and type), by code: one table.
server::HttpResponse FromStatus(Status const& s) {
  struct Row {
    std::vector<StatusCode> codes;
    int status;
    char const* type;
  };
  static std::vector<Row> const kRows = {
      {{StatusCode::kNotFound}, 404, "no-such-file"},
      {{StatusCode::kResourceExhausted}, 507, "insufficient-storage"},
      {{StatusCode::kAborted}, 409, "conflict"},
      {{StatusCode::kUnauthenticated}, 401, "invalid-token"},
      {{StatusCode::kInvalidArgument, StatusCode::kFailedPrecondition, StatusCode::kAlreadyExists},
       400,
       "invalid-request"}};
  for (auto const& row : kRows) {
    for (auto code : row.codes) {
      if (code == s.code()) return StorageProblem(row.status, row.type, s.message());
    }
  }
  return StorageProblem(500, "internal-error", s.message());
}

// An upload's refusal (a tus verdict) and failure (a status), with the upload's headers.
server::HttpResponse Refuse(tus::PatchVerdict const& v) {
  auto r = StorageProblem(v.status, v.problem.substr(v.problem.find('/') + 1), v.message);
  TusHeaders(r);
  return r;
}
server::HttpResponse Failed(Status const& st) {
  auto r = FromStatus(st);
  TusHeaders(r);
  return r;
}

// Writes a zip of `path` in `tree` to `out` (an open file).
Status ZipTree(server::ConfinedTree const& tree, std::string const& path, std::string const& name,
               int out) {
  struct Closer {
    void operator()(archive* a) const { archive_write_free(a); }
  };
  std::unique_ptr<archive, Closer> a(archive_write_new());
  archive_write_set_format_zip(a.get());
  archive_write_set_options(a.get(), "zip:compression=store");
  if (archive_write_open_fd(a.get(), out) != ARCHIVE_OK) {
    return Status(StatusCode::kInternal, archive_error_string(a.get()));
  }
  std::vector<char> buf(1 << 20);
  auto s = tree.Walk(
      path,
      [&](server::TreeEntry const& e) -> Status {
        struct EntryFree {
          void operator()(archive_entry* x) const { archive_entry_free(x); }
        };
        std::unique_ptr<archive_entry, EntryFree> entry(archive_entry_new());
        archive_entry_set_pathname_utf8(entry.get(), e.name.c_str());
        archive_entry_copy_stat(entry.get(), &e.st);
        if (S_ISLNK(e.st.st_mode)) {
          archive_entry_set_symlink_utf8(entry.get(), e.link.c_str());
          archive_entry_set_size(entry.get(), 0);
        } else if (S_ISDIR(e.st.st_mode)) {
          archive_entry_set_size(entry.get(), 0);
        }
        if (archive_write_header(a.get(), entry.get()) < ARCHIVE_WARN) {
          return Status(StatusCode::kInternal, archive_error_string(a.get()));
        }
        if (e.fd >= 0) {
          std::int64_t left = e.st.st_size;
          while (left > 0) {
            ssize_t n = ::read(e.fd, buf.data(),
                               static_cast<std::size_t>(std::min<std::int64_t>(left, buf.size())));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;  // shrank meanwhile: the header said more; libarchive pads
            if (archive_write_data(a.get(), buf.data(), static_cast<std::size_t>(n)) < 0) {
              return Status(StatusCode::kResourceExhausted, archive_error_string(a.get()));
            }
            left -= n;
          }
        }
        return Status();
      },
      name);
  if (!s.ok()) return s;
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return Status(StatusCode::kResourceExhausted, archive_error_string(a.get()));
  }
  return Status();
}

}  // namespace

server::HttpResponse StorageProblem(int status, std::string const& suffix,
                                    std::string const& message) {
  server::HttpResponse r;
  r.status = status;
  r.content_type = "application/problem+json";
  r.body = json{{"type", std::string(protocol::kProblemTypePrefix) + "storage/" + suffix},
                {"title", message},
                {"msg", message}}
               .dump();
  return r;
}

Status SetFileOwner(std::string_view text, StorageOptions& options) {
  if (text.empty()) {
    options.owner_uid = options.owner_gid = -1;
    return Status();
  }
  auto colon = text.find(':');
  auto number = [](std::string_view t) -> int {
    if (t.empty() || t.size() > 9) return -1;
    int n = 0;
    for (char c : t) {
      if (c < '0' || c > '9') return -1;
      n = n * 10 + (c - '0');
    }
    return n;
  };
  int uid = colon == std::string_view::npos ? -1 : number(text.substr(0, colon));
  int gid = colon == std::string_view::npos ? -1 : number(text.substr(colon + 1));
  if (uid < 0 || gid < 0) {
    return Status(StatusCode::kInvalidArgument,
                  "a file owner is UID:GID (numbers), not '" + std::string(text) + "'");
  }
  options.owner_uid = uid;
  options.owner_gid = gid;
  return Status();
}

StatusOr<std::unique_ptr<StorageService>> StorageService::Open(StorageOptions options) {
  if (options.secret.size() < 16) {
    return Status(StatusCode::kInvalidArgument, "the storage secret needs 16 characters or more");
  }
  if (options.volumes.empty()) {
    return Status(StatusCode::kInvalidArgument, "the storage proxy needs a volume");
  }
  std::unique_ptr<StorageService> s(new StorageService(std::move(options)));
  for (auto const& [name, root] : s->options_.volumes) {
    auto v = Volume::Open(name, root);
    if (!v.ok()) return v.status();
    if (s->options_.owner_uid >= 0) {
      (*v)->SetOwner(static_cast<uid_t>(s->options_.owner_uid),
                     static_cast<gid_t>(s->options_.owner_gid));
    }
    s->volumes_[name] = std::move(*v);
  }
  return s;
}

std::int64_t StorageService::Now() const {
  if (options_.now) return options_.now();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

StatusOr<Volume const*> StorageService::FindVolume(std::string const& name) const {
  auto it = volumes_.find(name);
  if (it == volumes_.end()) {
    return Status(StatusCode::kNotFound,
                  "no volume '" + name + "' on storage proxy '" + options_.name + "'");
  }
  return it->second.get();
}

int StorageService::ExpireUploads() const {
  int n = 0;
  for (auto const& [name, v] : volumes_)
    n += v->ExpireUploads(Now(), options_.upload_expire_seconds);
  return n;
}

// What an operation works on, resolved before its handler runs: its arguments, and as far as
// the operation needs them the volume, the folder and the folder's tree.
struct StorageService::Call {
  json const& args;
  Volume const* volume = nullptr;
  FolderRef folder;
  server::ConfinedTree* tree = nullptr;
};

namespace {

// Decodes the operation's arguments (storage_api.h), runs `body` on them and encodes its answer:
// every handler reads and writes the contract's types only.
template <class Op, class Body>
StatusOr<json> Typed(json const& args, Body body) {
  auto op = api::FromJson<Op>(args);
  if (!op.ok()) return op.status();
  StatusOr<typename Op::Answer> answer = body(*op);
  if (!answer.ok()) return answer.status();
  return api::ToJson(*answer);
}

}  // namespace

std::map<std::string_view, StorageService::Operation> const& StorageService::Operations() {
  static std::map<std::string_view, Operation> const kOps = {
      {api::ListVolumes::kOp, {Needs::kNothing, &StorageService::ListVolumes}},
      {api::GetScopeUsage::kOp, {Needs::kVolume, &StorageService::ScopeUsage}},
      {api::CreateFolder::kOp, {Needs::kFolder, &StorageService::CreateFolder}},
      {api::DeleteFolder::kOp, {Needs::kFolder, &StorageService::DeleteFolder}},
      {api::RevokeTokens::kOp, {Needs::kFolder, &StorageService::RevokeTokens}},
      {api::MountPath::kOp, {Needs::kFolder, &StorageService::MountPath}},
      {api::GetFolderUsage::kOp, {Needs::kTree, &StorageService::FolderUsage}},
      {api::CloneFolder::kOp, {Needs::kTree, &StorageService::CloneFolder}},
      {api::ListFiles::kOp, {Needs::kTree, &StorageService::ListFiles}},
      {api::MakeDirectory::kOp, {Needs::kTree, &StorageService::MakeDirectory}},
      {api::RenameFile::kOp, {Needs::kTree, &StorageService::RenameFile}},
      {api::MoveFile::kOp, {Needs::kTree, &StorageService::MoveFile}},
      {api::DeleteFiles::kOp, {Needs::kTree, &StorageService::DeleteFiles}},
      {api::StartUpload::kOp, {Needs::kFolder, &StorageService::StartUpload}},
      {api::CancelUpload::kOp, {Needs::kFolder, &StorageService::CancelUpload}},
      {api::StartDownload::kOp, {Needs::kTree, &StorageService::StartDownload}},
  };
  return kOps;
}

bool StorageService::IsOperation(std::string_view op) { return Operations().count(op) > 0; }

StatusOr<json> StorageService::Manage(std::string_view op, json const& args) const {
  auto const& ops = Operations();
  auto found = ops.find(op);
  if (found == ops.end()) {
    return Status(StatusCode::kNotFound, "no storage operation '" + std::string(op) + "'");
  }
  if (!args.is_object()) return Status(StatusCode::kInvalidArgument, "arguments are an object");
  Needs needs = found->second.needs;
  Call c{args, nullptr, {}, nullptr};
  if (needs == Needs::kNothing) return (this->*found->second.run)(c);
  auto volume_name = Str(args, "volume");
  if (!volume_name.ok()) return volume_name.status();
  auto volume = FindVolume(*volume_name);
  if (!volume.ok()) return volume.status();
  c.volume = *volume;
  if (needs == Needs::kVolume) return (this->*found->second.run)(c);
  auto address = api::FromJson<api::FolderAddress>(args);
  if (!address.ok()) return address.status();
  c.folder = FolderRef{address->scope, address->id};
  if (needs == Needs::kFolder) return (this->*found->second.run)(c);
  auto tree = c.volume->Tree(c.folder, "");
  if (!tree.ok()) {
    if (tree.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kNotFound,
                    "the folder's data is not on " + options_.name + ":" + *volume_name);
    }
    return tree.status();
  }
  c.tree = &*tree;
  return (this->*found->second.run)(c);
}

std::optional<api::VolumeUsage> FilesystemSpace(std::string const& root) {
  struct statvfs fs {};
  if (::statvfs(root.c_str(), &fs) != 0) return std::nullopt;
  api::VolumeUsage u;
  auto unit = static_cast<std::int64_t>(fs.f_frsize);
  u.total = static_cast<std::int64_t>(fs.f_blocks) * unit;
  u.free = static_cast<std::int64_t>(fs.f_bavail) * unit;
  u.used = u.total - static_cast<std::int64_t>(fs.f_bfree) * unit;
  u.percentage =
      u.total > 0 ? 100.0 * static_cast<double>(u.used) / static_cast<double>(u.total) : 0.0;
  return u;
}

StatusOr<json> StorageService::ListVolumes(Call const& c) const {
  return Typed<api::ListVolumes>(c.args, [&](api::ListVolumes const&) -> StatusOr<api::Volumes> {
    api::Volumes out;
    for (auto const& [name, v] : volumes_) {
      api::VolumeInfo info;
      info.name = name;
      info.path = v->root();
      info.capabilities = {"vfolder", "quota"};
      info.usage = FilesystemSpace(v->root());
      out.volumes.push_back(std::move(info));
    }
    return out;
  });
}

StatusOr<json> StorageService::ScopeUsage(Call const& c) const {
  return Typed<api::GetScopeUsage>(c.args,
                                   [&](api::GetScopeUsage const& op) -> StatusOr<api::Usage> {
                                     auto used = c.volume->ScopeUsage(op.scope);
                                     if (!used.ok()) return used.status();
                                     return api::Usage{used->files, used->bytes};
                                   });
}

StatusOr<json> StorageService::CreateFolder(Call const& c) const {
  return Typed<api::CreateFolder>(c.args, [&](api::CreateFolder const&) -> StatusOr<api::Nothing> {
    if (auto s = c.volume->CreateFolder(c.folder); !s.ok()) return s;
    return api::Nothing{};
  });
}

StatusOr<json> StorageService::DeleteFolder(Call const& c) const {
  return Typed<api::DeleteFolder>(c.args, [&](api::DeleteFolder const&) -> StatusOr<api::Nothing> {
    if (auto s = c.volume->DeleteFolder(c.folder); !s.ok()) return s;
    UsageChanged(c.volume->name(), c.folder);
    return api::Nothing{};
  });
}

StatusOr<json> StorageService::RevokeTokens(Call const& c) const {
  return Typed<api::RevokeTokens>(
      c.args, [&](api::RevokeTokens const& op) -> StatusOr<api::Nothing> {
        std::string key = op.user.empty() ? c.folder.id : c.folder.id + "/" + op.user;
        std::lock_guard<std::mutex> lock(revoked_mu_);
        ++revoked_[key];
        return api::Nothing{};
      });
}

StatusOr<json> StorageService::MountPath(Call const& c) const {
  return Typed<api::MountPath>(c.args, [&](api::MountPath const&) -> StatusOr<api::HostPath> {
    auto path = c.volume->FolderPath(c.folder);
    if (!path.ok()) return path.status();
    return api::HostPath{*path};
  });
}

namespace {
std::string UsageKey(std::string const& volume, FolderRef const& folder) {
  return volume + "/" + folder.scope + "/" + folder.id;
}
}  // namespace

void StorageService::UsageChanged(std::string const& volume, FolderRef const& folder) const {
  std::lock_guard<std::mutex> lock(usage_mu_);
  auto it = usage_.find(UsageKey(volume, folder));
  if (it == usage_.end()) return;
  it->second.valid = false;
  ++it->second.generation;  // a walk running now reports, but does not keep, its figures
}

// A folder's usage is a walk of its whole tree (200,000 files took seconds): kept for
// usage_cache_seconds, and askers at the same time share one walk (hostile finding 6).
StatusOr<json> StorageService::FolderUsage(Call const& c) const {
  return Typed<api::GetFolderUsage>(
      c.args, [&](api::GetFolderUsage const& op) -> StatusOr<api::Usage> {
        if (op.for_quota) {
          auto used = c.tree->Usage();
          if (!used.ok()) return used.status();
          auto pending = c.volume->PendingUploads(c.folder);
          return api::Usage{used->files + pending.files, used->bytes + pending.bytes};
        }
        auto const ttl = std::chrono::seconds(options_.usage_cache_seconds);
        std::string key = UsageKey(c.volume->name(), c.folder);
        std::uint64_t generation = 0;
        {
          std::unique_lock<std::mutex> lock(usage_mu_);
          for (;;) {
            auto& e = usage_[key];
            if (e.valid && std::chrono::steady_clock::now() < e.expires) {
              return api::Usage{e.files, e.bytes};
            }
            if (!e.walking || ttl.count() <= 0) {
              e.walking = ttl.count() > 0;
              generation = e.generation;
              break;
            }
            usage_cv_.wait(lock);
          }
        }
        auto used = c.tree->Usage();
        if (ttl.count() > 0) {
          std::lock_guard<std::mutex> lock(usage_mu_);
          auto& e = usage_[key];
          e.walking = false;
          if (used.ok() && e.generation == generation) {
            e.valid = true;
            e.files = used->files;
            e.bytes = used->bytes;
            e.expires = std::chrono::steady_clock::now() + ttl;
          }
          usage_cv_.notify_all();
        }
        if (!used.ok()) return used.status();
        return api::Usage{used->files, used->bytes};
      });
}

StatusOr<json> StorageService::CloneFolder(Call const& c) const {
  return Typed<api::CloneFolder>(c.args, [&](api::CloneFolder const& op) -> StatusOr<api::Nothing> {
    auto dst_volume = FindVolume(op.dst_volume);
    if (!dst_volume.ok()) return dst_volume.status();
    FolderRef dst{op.dst_scope, op.dst_id};
    if (auto s = (*dst_volume)->CreateFolder(dst); !s.ok()) return s;
    auto dst_tree = (*dst_volume)->Tree(dst, "");
    if (!dst_tree.ok()) return dst_tree.status();
    auto copied = c.tree->Walk("", [&](server::TreeEntry const& e) -> Status {
      auto slash = e.name.find('/');
      if (slash == std::string::npos) return Status();  // the root: made above
      std::string rel = e.name.substr(slash + 1);
      if (S_ISDIR(e.st.st_mode)) return dst_tree->Mkdir(rel, false, true);
      if (S_ISLNK(e.st.st_mode)) return dst_tree->Symlink(rel, e.link);
      return dst_tree->WriteFrom(rel, e.fd);
    });
    UsageChanged(op.dst_volume, dst);
    if (!copied.ok()) {
      (void)(*dst_volume)->DeleteFolder(dst);
      return copied;
    }
    return api::Nothing{};
  });
}

StatusOr<json> StorageService::ListFiles(Call const& c) const {
  return Typed<api::ListFiles>(c.args, [&](api::ListFiles const& op) -> StatusOr<api::Listing> {
    auto list = c.tree->List(op.path);
    if (!list.ok()) return list.status();
    api::Listing out;
    for (auto const& f : list->files) {
      // FIFOs, sockets and devices (made inside a container that mounts the folder) are no
      // data of a folder: listed as files, they invited downloads that cannot be served.
      if (f.mode.empty() || (f.mode[0] != '-' && f.mode[0] != 'd' && f.mode[0] != 'l')) continue;
      // Types and times from the entry itself (List gives ls -l modes).
      struct timespec created {
      }, modified{};
      created.tv_sec = static_cast<std::time_t>(f.ctime);
      created.tv_nsec = static_cast<long>((f.ctime - static_cast<double>(created.tv_sec)) * 1e9);
      modified.tv_sec = static_cast<std::time_t>(f.mtime);
      modified.tv_nsec = static_cast<long>((f.mtime - static_cast<double>(modified.tv_sec)) * 1e9);
      unsigned perm = 0;
      for (int i = 0; i < 9; ++i) {
        if (f.mode.size() > static_cast<std::size_t>(i + 1) && f.mode[i + 1] != '-' &&
            f.mode[i + 1] != 'S' && f.mode[i + 1] != 'T') {
          perm |= 1u << (8 - i);
        }
      }
      char octal[8];
      std::snprintf(octal, sizeof octal, "%03o", perm);
      protocol::VFolderFile item;
      item.name = f.filename;
      item.type = f.mode[0] == 'd' ? "DIRECTORY" : f.mode[0] == 'l' ? "SYMLINK" : "FILE";
      item.size = f.size;
      item.mode = octal;
      item.created = IsoTime(created);
      item.modified = IsoTime(modified);
      out.items.push_back(std::move(item));
    }
    return out;
  });
}

StatusOr<json> StorageService::MakeDirectory(Call const& c) const {
  return Typed<api::MakeDirectory>(
      c.args, [&](api::MakeDirectory const& op) -> StatusOr<api::Nothing> {
        if (auto s = c.tree->Mkdir(op.path, op.parents, op.exist_ok); !s.ok()) {
          return s;
        }
        UsageChanged(c.volume->name(), c.folder);
        return api::Nothing{};
      });
}

StatusOr<json> StorageService::RenameFile(Call const& c) const {
  return Typed<api::RenameFile>(c.args, [&](api::RenameFile const& op) -> StatusOr<api::Nothing> {
    if (auto s = c.tree->Rename(op.path, op.new_name); !s.ok()) return s;
    UsageChanged(c.volume->name(), c.folder);
    return api::Nothing{};
  });
}

StatusOr<json> StorageService::MoveFile(Call const& c) const {
  return Typed<api::MoveFile>(c.args, [&](api::MoveFile const& op) -> StatusOr<api::Nothing> {
    if (auto s = c.tree->Move(op.src, op.dst); !s.ok()) return s;
    UsageChanged(c.volume->name(), c.folder);
    return api::Nothing{};
  });
}

StatusOr<json> StorageService::DeleteFiles(Call const& c) const {
  return Typed<api::DeleteFiles>(c.args, [&](api::DeleteFiles const& op) -> StatusOr<api::Nothing> {
    // Every path is checked before any is removed.
    for (auto const& p : op.paths) {
      if (auto rel = server::RelativeBeneath(p, ""); !rel.ok()) return rel.status();
    }
    for (auto const& p : op.paths) {
      auto s = c.tree->Remove(p, op.recursive);
      UsageChanged(c.volume->name(), c.folder);  // what went before a failure is gone too
      if (!s.ok()) return s;
    }
    return api::Nothing{};
  });
}

// An unfinished upload of the same path and size goes on (the usage counts it already); a new
// one must fit op.quota, counted now: the folder's tree with its unfinished uploads at their
// full size, the scope's usage with what the manager holds there.
StatusOr<UploadSession> StorageService::StartWithinQuota(Call const& c,
                                                         api::StartUpload const& op) const {
  Volume const& v = *c.volume;
  if (!op.quota || v.FindUpload(c.folder, op.path, op.size).ok()) {
    return v.StartUpload(c.folder, op.path, op.size, true);
  }
  Held folder, scope;
  if (op.quota->FolderLimited()) {
    auto tree = v.Tree(c.folder, "");
    if (!tree.ok()) return tree.status();
    auto used = tree->Usage();
    if (!used.ok()) return used.status();
    auto pending = v.PendingUploads(c.folder);
    folder = {used->bytes + pending.bytes, used->files + pending.files};
  }
  if (op.quota->ScopeLimited()) {
    auto used = v.ScopeUsage(c.folder.scope);
    if (!used.ok()) return used.status();
    scope = {used->bytes, used->files};
  }
  auto why = WhyOverLimits(*op.quota, folder, scope, {op.size, 1});
  if (!why.empty()) return Status(StatusCode::kResourceExhausted, why);
  return v.StartUpload(c.folder, op.path, op.size, true);
}

StatusOr<json> StorageService::StartUpload(Call const& c) const {
  return Typed<api::StartUpload>(
      c.args, [&](api::StartUpload const& op) -> StatusOr<api::UploadTicket> {
        Volume const& v = *c.volume;
        auto session =
            op.resume_only ? v.FindUpload(c.folder, op.path, op.size) : StartWithinQuota(c, op);
        if (!session.ok()) return session.status();
        if (session->size == 0) {
          // Nothing to send: the empty file appears now.
          auto done = v.Append(session->id, 0, {}, {});
          if (!done.ok()) return done.status();
          UsageChanged(v.name(), c.folder);
        }
        json claims = {{"op", "upload"},
                       {"volume", v.name()},
                       {"scope", c.folder.scope},
                       {"id", c.folder.id},
                       {"relpath", session->relpath},
                       {"session", session->id},
                       {"size", session->size},
                       {"user", op.user},
                       {"rev", Generation(c.folder.id, op.user)},
                       {"exp", Now() + options_.token_seconds}};
        return api::UploadTicket{server::SignJwt(claims, options_.secret),
                                 options_.client_url + "/upload", session->id, session->offset};
      });
}

StatusOr<json> StorageService::CancelUpload(Call const& c) const {
  return Typed<api::CancelUpload>(c.args,
                                  [&](api::CancelUpload const& op) -> StatusOr<api::Nothing> {
                                    auto session = c.volume->FindUpload(c.folder, op.path, op.size);
                                    if (!session.ok()) return session.status();
                                    if (auto s = c.volume->CancelUpload(session->id); !s.ok())
                                      return s;
                                    return api::Nothing{};
                                  });
}

StatusOr<json> StorageService::StartDownload(Call const& c) const {
  return Typed<api::StartDownload>(
      c.args, [&](api::StartDownload const& op) -> StatusOr<api::DownloadTicket> {
        auto opened = c.tree->OpenFile(op.path);
        if (!opened.ok()) return opened.status();
        auto rel = server::RelativeBeneath(op.path, "");
        json claims = {{"op", "download"},
                       {"volume", c.volume->name()},
                       {"scope", c.folder.scope},
                       {"id", c.folder.id},
                       {"relpath", *rel},
                       {"user", op.user},
                       {"rev", Generation(c.folder.id, op.user)},
                       {"exp", Now() + options_.token_seconds}};
        return api::DownloadTicket{server::SignJwt(claims, options_.secret),
                                   options_.client_url + "/download", S_ISDIR(opened->st.st_mode)};
      });
}

server::HttpResponse StorageService::HandleManager(server::HttpRequest const& request) const {
  auto given = request.Header("x-backendai-storage-auth-token");
  if (!given || given->size() != options_.secret.size() ||
      CRYPTO_memcmp(given->data(), options_.secret.data(), given->size()) != 0) {
    return StorageProblem(401, "invalid-auth-token",
                          "the manager's storage secret is missing or wrong");
  }
  if (request.method != "POST") return StorageProblem(405, "method-not-allowed", "use POST");
  json args = request.body.empty()
                  ? json::object()
                  : internal::ParseJson(request.body).value_or(json(json::value_t::discarded));
  if (args.is_discarded() || !args.is_object()) {
    return StorageProblem(400, "malformed-body", "the body is not a JSON object");
  }
  std::string op = request.path.size() > 1 ? request.path.substr(1) : "";
  auto out = Manage(op, args);
  if (!out.ok()) return server::ProblemResponse(out.status());
  return server::HttpResponse::Json(200, out->dump());
}

namespace {

// A browser page (the web console) sends transfers here from its own origin: the token in the
// query is what authorizes, so any origin may, without credentials (CORS).
server::HttpResponse AllowPages(server::HttpRequest const& request, server::HttpResponse r) {
  if (request.Header("origin")) {
    r.headers.emplace_back("Access-Control-Allow-Origin", "*");
    r.headers.emplace_back("Access-Control-Allow-Methods", "GET, HEAD, PATCH, POST, OPTIONS");
    r.headers.emplace_back("Access-Control-Allow-Headers",
                           "Tus-Resumable, Upload-Offset, Upload-Length, Upload-Metadata, "
                           "Upload-Checksum, Upload-Concat, Content-Type, Range, If-Range");
    r.headers.emplace_back(
        "Access-Control-Expose-Headers",
        "Upload-Offset, Upload-Length, Upload-Concat, Tus-Resumable, Tus-Version, Tus-Max-Size, "
        "Tus-Extension, Location, Content-Disposition, Content-Range, Accept-Ranges");
    r.headers.emplace_back("Access-Control-Max-Age", "600");
  }
  return r;
}

}  // namespace

server::HttpResponse StorageService::HandleClient(server::HttpRequest const& request) const {
  bool upload = request.path == "/upload", download = request.path == "/download";
  if (!upload && !download)
    return StorageProblem(404, "url-not-found", "unknown path " + request.path);
  return AllowPages(request, download && request.method == "OPTIONS"
                                 ? server::HttpResponse::NoContent()
                             : upload ? Upload(request)
                                      : Download(request));
}

// A chunk without a checksum streams into its file as it arrives; one with a checksum is
// read whole (it counts only once its digest is checked).
class StorageService::UploadSink : public server::BodySink {
 public:
  UploadSink(StorageService const& service, server::HttpRequest const& head, std::int64_t length)
      : service_(service), head_(head), patch_(service.OpenPatch(head, length)) {}
  bool Accepts() const override { return patch_.chunk.has_value(); }
  bool Write(std::string_view bytes) override { return patch_.chunk->Write(bytes).ok(); }
  void Finish(bool, std::function<void(server::HttpResponse)> answer) override {
    answer(AllowPages(head_, patch_.chunk ? service_.EndPatch(patch_) : patch_.refusal));
  }

 private:
  StorageService const& service_;
  server::HttpRequest head_;
  Patch patch_;
};

std::unique_ptr<server::BodySink> StorageService::StreamClient(server::HttpRequest const& head,
                                                               std::uint64_t length) const {
  if (head.path != "/upload" || head.method != "PATCH" || head.Header(tus::kChecksumHeader)) {
    return nullptr;
  }
  return std::make_unique<UploadSink>(*this, head, static_cast<std::int64_t>(length));
}

StatusOr<json> StorageService::Claims(server::HttpRequest const& request,
                                      std::string_view op) const {
  auto token = QueryValue(request, "token");
  if (!token) return Status(StatusCode::kUnauthenticated, "no token");
  auto claims = server::VerifyJwt(*token, options_.secret, Now());
  if (!claims.ok()) return claims.status();
  if (claims->value("op", "") != op) {
    return Status(StatusCode::kUnauthenticated, "not a token for " + std::string(op));
  }
  auto text = [&](char const* key) {
    auto it = claims->find(key);
    return it != claims->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto rev = claims->find("rev");
  if (rev == claims->end() || !rev->is_number_integer() ||
      rev->get<std::int64_t>() != Generation(text("id"), text("user"))) {
    return Status(StatusCode::kUnauthenticated,
                  "the token was revoked: the folder was unshared, left or trashed since");
  }
  return claims;
}

std::int64_t StorageService::Generation(std::string const& id, std::string const& user) const {
  std::lock_guard<std::mutex> lock(revoked_mu_);
  std::int64_t g = 0;
  for (auto const& key : {id, id + "/" + user}) {
    auto it = revoked_.find(key);
    if (it != revoked_.end()) g += it->second;
  }
  return g;
}

server::HttpResponse StorageService::Upload(server::HttpRequest const& request) const {
  if (request.method == "OPTIONS") {
    server::HttpResponse r = server::HttpResponse::NoContent();
    r.headers.emplace_back(tus::kResumableHeader, tus::kVersion);
    r.headers.emplace_back(tus::kVersionHeader, tus::kVersion);
    r.headers.emplace_back(tus::kMaxSizeHeader, std::to_string(options_.max_chunk));
    r.headers.emplace_back(tus::kExtensionHeader, std::string(tus::kChecksumExtension) + "," +
                                                      tus::kConcatenationExtension);
    r.headers.emplace_back(tus::kChecksumAlgorithmHeader, tus::kChecksumAlgorithm);
    return r;
  }
  if (request.method == "PATCH") {
    std::int64_t length = request.Header("content-length") || !request.body.empty()
                              ? static_cast<std::int64_t>(request.body.size())
                              : -1;
    auto p = OpenPatch(request, length);
    if (!p.chunk) return p.refusal;
    if (!p.sha256.empty()) {
      tus::PatchVerdict v;
      v.sha256 = p.sha256;
      auto digest = tus::CheckChunkDigest(v, tus::Sha256(request.body));
      if (!digest.ok()) return Refuse(digest);
    }
    (void)p.chunk->Write(request.body);  // a failure is Close's, in EndPatch
    return EndPatch(p);
  }
  if (request.method != "HEAD" && request.method != "POST") {
    return StorageProblem(405, "method-not-allowed",
                          "/upload takes OPTIONS, HEAD, PATCH and POST (Upload-Concat)");
  }
  auto t = FindTarget(request, request.method == "HEAD");
  if (auto* refusal = std::get_if<server::HttpResponse>(&t)) return std::move(*refusal);
  auto& target = std::get<Target>(t);
  if (request.method == "POST") {
    return Concatenate(request, *target.volume, target.session, target.token, target.usage);
  }
  server::HttpResponse r;
  r.status = 200;
  r.content_type = "";
  auto const& part = target.part;
  r.headers.emplace_back(tus::kOffsetHeader,
                         std::to_string(part ? part->received : target.session.offset));
  r.headers.emplace_back(tus::kLengthHeader,
                         std::to_string(part ? part->length : target.session.size));
  if (part) r.headers.emplace_back(tus::kConcatHeader, "partial");
  TusHeaders(r);
  return r;
}

std::variant<StorageService::Target, server::HttpResponse> StorageService::FindTarget(
    server::HttpRequest const& request, bool with_part) const {
  auto claims = Claims(request, "upload");
  if (!claims.ok()) return StorageProblem(401, "invalid-token", claims.status().message());
  auto volume = FindVolume(claims->value("volume", ""));
  if (!volume.ok()) return FromStatus(volume.status());
  auto session = (*volume)->GetUpload(claims->value("session", ""));
  if (!session.ok()) {
    auto r = StorageProblem(404, "no-such-upload-session",
                            "the upload session is finished, cancelled or expired");
    TusHeaders(r);
    return r;
  }
  Target t;
  t.volume = *volume;
  t.session = std::move(*session);
  t.token = QueryValue(request, "token").value_or("");
  t.usage = {claims->value("scope", ""), claims->value("id", "")};
  auto k = with_part ? QueryValue(request, "part") : std::nullopt;
  if (!k) return t;
  // A part of an upload sent in parts: `?token=T&part=K`.
  auto parts = t.volume->Parts(t.session.id);
  if (!parts.ok()) return Failed(parts.status());
  int i = -1;
  auto [end, ec] = std::from_chars(k->data(), k->data() + k->size(), i);
  if (ec != std::errc() || end != k->data() + k->size() || i < 0 ||
      i >= static_cast<int>(parts->size())) {
    auto r = StorageProblem(404, "no-such-upload-session",
                            "no part=" + std::string(*k) + " in this upload");
    TusHeaders(r);
    return r;
  }
  t.index = i;
  t.part = (*parts)[static_cast<std::size_t>(i)];
  return t;
}

StorageService::Patch StorageService::OpenPatch(server::HttpRequest const& request,
                                                std::int64_t length) const {
  Patch p;
  auto t = FindTarget(request, true);
  if (auto* refusal = std::get_if<server::HttpResponse>(&t)) {
    p.refusal = std::move(*refusal);
    return p;
  }
  auto& target = std::get<Target>(t);
  tus::PatchHeaders h;
  if (auto v = request.Header(tus::kResumableHeader)) h.tus_resumable = std::string(*v);
  if (auto v = request.Header(tus::kOffsetHeader)) h.upload_offset = std::string(*v);
  if (auto v = request.Header("content-type")) h.content_type = std::string(*v);
  if (auto v = request.Header(tus::kChecksumHeader)) h.upload_checksum = std::string(*v);
  if (length >= 0) h.content_length = length;
  auto verdict = target.part ? tus::CheckPatch({target.part->length, target.part->received}, h)
                             : tus::CheckPatch({target.session.size, target.session.offset}, h);
  if (!verdict.ok()) {
    p.refusal = Refuse(verdict);
    return p;
  }
  auto chunk = target.volume->OpenChunk(target.session.id, target.index.value_or(-1),
                                        verdict.offset, verdict.length);
  if (!chunk.ok()) {
    p.refusal = Failed(chunk.status());
    return p;
  }
  p.chunk.emplace(std::move(*chunk));
  p.sha256 = verdict.sha256;
  p.volume = target.volume->name();
  p.usage = target.usage;
  return p;
}

server::HttpResponse StorageService::EndPatch(Patch& p) const {
  if (auto closed = p.chunk->Close(); !closed.ok()) return Failed(closed);
  std::int64_t offset = p.chunk->part() ? p.chunk->part()->received : p.chunk->session().offset;
  if (!p.chunk->part() && p.chunk->session().complete()) {  // the file is in its folder now
    UsageChanged(p.volume, p.usage);
  }
  server::HttpResponse r = server::HttpResponse::NoContent();
  r.headers.emplace_back(tus::kOffsetHeader, std::to_string(offset));
  TusHeaders(r);
  return r;
}

// tus concatenation (tus.h): `Upload-Concat: partial` makes the next part, answered 201 with its
// URL (a reference that keeps the request's path, so it holds through the console's relay);
// `Upload-Concat: final;…` makes the file whole from its parts.
server::HttpResponse StorageService::Concatenate(server::HttpRequest const& request,
                                                 Volume const& volume, UploadSession const& session,
                                                 std::string const& token,
                                                 FolderRef const& usage) const {
  if (request.Header(tus::kResumableHeader) != std::optional<std::string_view>(tus::kVersion)) {
    tus::PatchVerdict v;
    v.status = 412;
    v.problem = "storage/tus-version";
    v.message = std::string(tus::kResumableHeader) + ": " + tus::kVersion + " is required";
    return Refuse(v);
  }
  auto header = request.Header(tus::kConcatHeader);
  auto concat = header ? tus::ParseConcat(*header) : std::nullopt;
  if (!concat) {
    auto r = StorageProblem(
        400, "invalid-concatenation",
        "an upload is made by its ticket; POST takes Upload-Concat: partial (a new part) or "
        "final;URL… (every part's URL, ?token=…&part=K, in the order made)");
    TusHeaders(r);
    return r;
  }
  std::string self = "?token=" + PercentEncode(token);
  if (!concat->final) {
    std::optional<std::string> length;
    if (auto v = request.Header(tus::kLengthHeader)) length = std::string(*v);
    auto made = volume.AddPart(session.id, length);
    if (!made.ok()) return Failed(made.status());
    if (!made->verdict.ok()) return Refuse(made->verdict);
    server::HttpResponse r;
    r.status = 201;
    r.content_type = "";
    r.headers.emplace_back("Location", self + "&part=" + std::to_string(made->index));
    r.headers.emplace_back(tus::kConcatHeader, "partial");
    r.headers.emplace_back(tus::kOffsetHeader, "0");
    TusHeaders(r);
    return r;
  }
  auto done = volume.FinishParts(session.id, concat->parts);
  if (!done.ok()) return Failed(done.status());
  if (!done->ok()) return Refuse(*done);
  UsageChanged(volume.name(), usage);
  server::HttpResponse r;
  r.status = 201;
  r.content_type = "";
  r.headers.emplace_back("Location", self);
  r.headers.emplace_back(tus::kOffsetHeader, std::to_string(session.size));
  r.headers.emplace_back(tus::kLengthHeader, std::to_string(session.size));
  TusHeaders(r);
  return r;
}

server::HttpResponse StorageService::Download(server::HttpRequest const& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    return StorageProblem(405, "method-not-allowed", "/download takes GET and HEAD");
  }
  auto claims = Claims(request, "download");
  if (!claims.ok()) return StorageProblem(401, "invalid-token", claims.status().message());
  auto volume = FindVolume(claims->value("volume", ""));
  if (!volume.ok()) return FromStatus(volume.status());
  FolderRef folder{claims->value("scope", ""), claims->value("id", "")};
  auto tree = (*volume)->Tree(folder, "");
  if (!tree.ok()) return FromStatus(tree.status());
  std::string relpath = claims->value("relpath", "");
  auto opened = tree->OpenFile(relpath);
  if (!opened.ok()) return FromStatus(opened.status());
  std::string name = relpath.substr(relpath.rfind('/') + 1);
  if (name.empty()) name = "folder";
  server::HttpResponse r;
  r.headers.emplace_back("Cache-Control", QueryFlag(request, "no_cache") ? "no-store" : "private");
  if (S_ISDIR(opened->st.st_mode)) {
    if (!QueryFlag(request, "archive")) {
      return StorageProblem(400, "is-a-directory",
                            "'" + relpath + "' is a directory: download it with archive=true");
    }
    // The archive goes to an unnamed file on the volume, then out piece by piece.
    server::UniqueFd out(
        ::open(((*volume)->root() + "/.uploads").c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (out.fd < 0) return FromStatus(Status(StatusCode::kInternal, "cannot make an archive file"));
    if (auto s = ZipTree(*tree, relpath, name, out.fd); !s.ok()) return FromStatus(s);
    struct stat st {};
    ::fstat(out.fd, &st);
    r.content_type = "application/zip";
    r.headers.emplace_back("Content-Disposition", Disposition(name + ".zip"));
    r.file = std::make_shared<server::FileBody>(out.release(), 0, st.st_size);
    return r;
  }
  auto const& st = opened->st;
  std::int64_t size = st.st_size;
  std::string last_modified = protocol::FormatHttpDate(st.st_mtim.tv_sec);
  char etag[64];
  std::snprintf(etag, sizeof etag, "\"%llx-%llx\"", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000000ull +
                    static_cast<unsigned long long>(st.st_mtim.tv_nsec));
  r.content_type = "application/octet-stream";
  r.headers.emplace_back("Accept-Ranges", "bytes");
  r.headers.emplace_back("Last-Modified", last_modified);
  r.headers.emplace_back("ETag", etag);
  r.headers.emplace_back("Content-Disposition", Disposition(name));
  auto range =
      DecideRange(request.Header("range"), request.Header("if-range"), etag, last_modified, size);
  if (range.kind == RangeVerdict::kUnsatisfiable) {
    auto p = StorageProblem(416, "range-not-satisfiable",
                            "the file has " + std::to_string(size) + " bytes");
    p.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
    return p;
  }
  if (range.kind == RangeVerdict::kPartial) {
    r.status = 206;
    r.headers.emplace_back("Content-Range", "bytes " + std::to_string(range.from) + "-" +
                                                std::to_string(range.from + range.length - 1) +
                                                "/" + std::to_string(size));
  }
  r.file = std::make_shared<server::FileBody>(opened->fd.release(), range.from, range.length);
  return r;
}

}  // namespace bai::storage
