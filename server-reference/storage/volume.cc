// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/volume.h"

#include "bai/protocol/tus_wire.h"

#include "server-reference/common/fs/unique_fd.h"
#include "server-reference/common/wire/agent_protocol.h"

#include <dirent.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::storage {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kUploads[] = ".uploads";

bool Hex32(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status CheckRef(FolderRef const& f) {
  auto dash = f.scope.find('-');
  std::string_view kind = std::string_view(f.scope).substr(0, dash);
  if (dash == std::string::npos || (kind != "user" && kind != "project") ||
      !Hex32(std::string_view(f.scope).substr(dash + 1)) || !Hex32(f.id)) {
    return Status(StatusCode::kInvalidArgument,
                  "a folder is named by a scope (user-/project- and 32 hex digits) and 32 hex "
                  "digits");
  }
  return Status();
}

std::int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status Io(std::string const& what, int err) {
  if (err == ENOSPC || err == EDQUOT) {
    return Status(StatusCode::kResourceExhausted, what + ": no space left on the volume");
  }
  return Status(StatusCode::kInternal, what + ": " + std::strerror(err));
}

// Writes all of `data` at `at`: 0, or the errno of the failure (ENOSPC for a write of nothing).
int WriteAt(int fd, std::string_view data, std::int64_t at) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::pwrite(fd, data.data() + done, data.size() - done,
                         static_cast<off_t>(at) + static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : ENOSPC;
    done += static_cast<std::size_t>(w);
  }
  return 0;
}

// A session's data file, open for writing and locked (`how`, flock's): kAborted saying `busy`
// when a LOCK_NB lock is held elsewhere.
StatusOr<server::UniqueFd> LockedData(std::string const& dir, int how, char const* busy) {
  server::UniqueFd data(::open((dir + "/data").c_str(), O_WRONLY | O_CLOEXEC));
  if (data.fd < 0) return Status(StatusCode::kNotFound, "no such upload session");
  if (::flock(data.fd, how) != 0) {
    if (errno == EWOULDBLOCK) return Status(StatusCode::kAborted, busy);
    return Io("lock upload", errno);
  }
  return data;
}

json MetaJson(UploadSession const& s) {
  return {{"folder_scope", s.folder.scope},
          {"folder_id", s.folder.id},
          {"relpath", s.relpath},
          {"size", s.size},
          {"created", s.created}};
}

}  // namespace

StatusOr<std::unique_ptr<Volume>> Volume::Open(std::string name, std::string root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Status(StatusCode::kNotFound, "volume " + name + ": " + root + " is not a directory");
  }
  fs::create_directories(root + "/" + kUploads, ec);
  if (ec) return Status(StatusCode::kInternal, "volume " + name + ": " + ec.message());
  ::chmod((root + "/" + kUploads).c_str(), 0700);
  return std::unique_ptr<Volume>(new Volume(std::move(name), std::move(root)));
}

StatusOr<std::string> Volume::FolderPath(FolderRef const& f) const {
  if (auto s = CheckRef(f); !s.ok()) return s;
  return root_ + "/" + f.scope + "/" + f.id.substr(0, 2) + "/" + f.id.substr(2, 2) + "/" +
         f.id.substr(4);
}

Status Volume::CreateFolder(FolderRef const& f) const {
  auto path = FolderPath(f);
  if (!path.ok()) return path.status();
  std::error_code ec;
  fs::create_directories(fs::path(*path).parent_path(), ec);
  if (ec) return Io("create " + Shown(*path), ec.value());
  if (::mkdir(path->c_str(), 0755) != 0) {
    if (errno == EEXIST) return Status(StatusCode::kAlreadyExists, "the folder exists");
    return Io("create " + Shown(*path), errno);
  }
  if (owner_uid_ >= 0 &&
      ::chown(path->c_str(), static_cast<uid_t>(owner_uid_), static_cast<gid_t>(owner_gid_)) != 0) {
    int err = errno;
    ::rmdir(path->c_str());
    return Io("chown " + Shown(*path), err);
  }
  return Status();
}

Status Volume::DeleteFolder(FolderRef const& f) const {
  auto path = FolderPath(f);
  if (!path.ok()) return path.status();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(*path, ec))) {
    return Status(StatusCode::kNotFound, "no such folder on " + name_);
  }
  fs::remove_all(*path, ec);  // removes links themselves, never what they point at
  if (ec) return Io("delete " + Shown(*path), ec.value());
  // Its unfinished uploads go with it (they were kept, and counted, for days).
  for (auto const& u : Sessions()) {
    if (u.folder.scope == f.scope && u.folder.id == f.id) {
      fs::remove_all(root_ + "/" + kUploads + "/" + u.id, ec);
    }
  }
  return Status();
}

StatusOr<server::ConfinedTree> Volume::Tree(FolderRef const& f, std::string display) const {
  auto path = FolderPath(f);
  if (!path.ok()) return path.status();
  auto tree = server::ConfinedTree::Open(*path, "", std::move(display));
  if (tree.ok() && owner_uid_ >= 0) {
    tree->SetOwner(static_cast<uid_t>(owner_uid_), static_cast<gid_t>(owner_gid_));
  }
  return tree;
}

StatusOr<server::TreeUsage> Volume::ScopeUsage(std::string_view scope) const {
  if (auto s = CheckRef({std::string(scope), std::string(32, '0')}); !s.ok()) return s;
  server::TreeUsage usage;
  std::string dir = root_ + "/" + std::string(scope);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    auto tree = server::ConfinedTree::Open(dir, "", name_);
    if (!tree.ok()) return tree.status();
    auto used = tree->Usage();
    if (!used.ok()) return used.status();
    usage = *used;
  }
  for (auto const& s : Sessions()) {
    if (s.folder.scope == scope) {
      usage.files += 1;
      usage.bytes += s.size;
    }
  }
  return usage;
}

server::TreeUsage Volume::PendingUploads(FolderRef const& folder) const {
  server::TreeUsage usage;
  for (auto const& s : Sessions()) {
    if (s.folder.scope == folder.scope && s.folder.id == folder.id) {
      usage.files += 1;
      usage.bytes += s.size;
    }
  }
  return usage;
}

StatusOr<std::int64_t> Volume::FreeBytes() const {
  struct statvfs v {};
  if (::statvfs(root_.c_str(), &v) != 0) return Io("statvfs " + name_, errno);
  return static_cast<std::int64_t>(v.f_bavail) * static_cast<std::int64_t>(v.f_frsize);
}

std::vector<UploadSession> Volume::Sessions() const {
  std::vector<UploadSession> out;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator(root_ + "/" + kUploads, ec)) {
    auto s = GetUpload(e.path().filename().string());
    if (s.ok()) out.push_back(*s);
  }
  return out;
}

StatusOr<UploadSession> Volume::StartUpload(FolderRef const& f, std::string_view path,
                                            std::int64_t size, bool resume) const {
  if (size < 0) return Status(StatusCode::kInvalidArgument, "the size must not be negative");
  auto rel = server::RelativeBeneath(path, "");
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return Status(StatusCode::kInvalidArgument, "an upload needs a file name");
  auto folder = FolderPath(f);
  if (!folder.ok()) return folder.status();
  std::error_code ec;
  if (!fs::is_directory(*folder, ec)) {
    return Status(StatusCode::kNotFound, "no such folder on " + name_);
  }
  // Where it goes must be possible now, not only when the last byte came.
  auto tree = Tree(f, "");
  if (!tree.ok()) return tree.status();
  if (auto writable = tree->CheckWritable(*rel); !writable.ok()) return writable;
  if (resume) {
    if (auto s = FindUpload(f, *rel, size); s.ok()) return s;
  }
  auto free = FreeBytes();
  if (!free.ok()) return free.status();
  if (size > *free) {
    return Status(StatusCode::kResourceExhausted, "the file has " + std::to_string(size) +
                                                      " bytes but the volume has " +
                                                      std::to_string(*free) + " free");
  }
  UploadSession s;
  s.id = server::agent_protocol::MakeNonce();  // 128 random bits, 32 hex digits
  s.folder = f;
  s.relpath = *rel;
  s.size = size;
  s.created = Now();
  std::string dir = root_ + "/" + kUploads + "/" + s.id;
  if (::mkdir(dir.c_str(), 0700) != 0) return Io("create " + Shown(dir), errno);
  server::UniqueFd data(
      ::open((dir + "/data").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (data.fd < 0) return Io("create upload", errno);
  // meta.json last (a temporary name, then rename): a session without it never counts.
  std::string meta = MetaJson(s).dump();
  {
    std::ofstream out(dir + "/meta.json.tmp", std::ios::binary);
    out << meta;
    if (!out.flush()) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
      return Io("write upload metadata", ENOSPC);
    }
  }
  if (::rename((dir + "/meta.json.tmp").c_str(), (dir + "/meta.json").c_str()) != 0) {
    return Io("write upload metadata", errno);
  }
  return s;
}

StatusOr<UploadSession> Volume::FindUpload(FolderRef const& f, std::string_view path,
                                           std::int64_t size) const {
  auto rel = server::RelativeBeneath(path, "");
  if (!rel.ok()) return rel.status();
  for (auto const& s : Sessions()) {
    if (s.folder.scope == f.scope && s.folder.id == f.id && s.relpath == *rel && s.size == size) {
      return s;
    }
  }
  return Status(StatusCode::kNotFound, "no unfinished upload of that file");
}

StatusOr<UploadSession> Volume::GetUpload(std::string_view session_id) const {
  if (!Hex32(session_id)) return Status(StatusCode::kNotFound, "no such upload session");
  std::string dir = root_ + "/" + kUploads + "/" + std::string(session_id);
  std::ifstream in(dir + "/meta.json", std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "no such upload session");
  std::stringstream text;
  text << in.rdbuf();
  json meta = json::parse(text.str(), nullptr, false);
  struct stat st {};
  if (!meta.is_object() || ::stat((dir + "/data").c_str(), &st) != 0) {
    return Status(StatusCode::kNotFound, "no such upload session (damaged)");
  }
  UploadSession s;
  s.id = std::string(session_id);
  s.folder.scope = meta.value("folder_scope", "");
  s.folder.id = meta.value("folder_id", "");
  s.relpath = meta.value("relpath", "");
  s.size = meta.value("size", std::int64_t{0});
  s.created = meta.value("created", std::int64_t{0});
  s.parts = static_cast<int>(PartFiles(dir).size());
  s.offset = s.parts > 0 ? 0 : st.st_size;
  return s;
}

std::vector<std::pair<std::string, tus::Part>> Volume::PartFiles(std::string const& dir) const {
  std::vector<std::pair<int, std::pair<std::string, tus::Part>>> found;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    int index = 0;
    long long start = 0, length = 0;
    int used = 0;
    if (std::sscanf(name.c_str(), "part-%d-%lld-%lld%n", &index, &start, &length, &used) != 3 ||
        used != static_cast<int>(name.size()) || index < 0) {
      continue;
    }
    struct stat st {};
    if (::stat((dir + "/" + name).c_str(), &st) != 0) continue;
    found.push_back({index, {name, tus::Part{start, length, st.st_size}}});
  }
  std::sort(found.begin(), found.end(),
            [](auto const& a, auto const& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, tus::Part>> out;
  for (auto& [index, part] : found) {
    if (index != static_cast<int>(out.size())) break;  // parts are made 0, 1, 2…
    out.push_back(std::move(part));
  }
  return out;
}

StatusOr<std::vector<tus::Part>> Volume::Parts(std::string_view session_id) const {
  auto s = GetUpload(session_id);
  if (!s.ok()) return s.status();
  return PartsIn(root_ + "/" + kUploads + "/" + s->id);
}

std::vector<tus::Part> Volume::PartsIn(std::string const& dir) const {
  std::vector<tus::Part> out;
  for (auto& [name, part] : PartFiles(dir)) out.push_back(part);
  return out;
}

StatusOr<Volume::PartMade> Volume::AddPart(std::string_view session_id,
                                           std::optional<std::string> const& length) const {
  auto s = GetUpload(session_id);
  if (!s.ok()) return s.status();
  std::string dir = root_ + "/" + kUploads + "/" + s->id;
  // Alone while the parts are counted and the next one made (writers of parts wait a moment).
  auto data = LockedData(dir, LOCK_EX, "");
  if (!data.ok()) return data.status();
  struct stat st {};
  if (::fstat(data->fd, &st) != 0) return Io("stat upload", errno);
  auto parts = PartsIn(dir);
  PartMade made;
  made.verdict = tus::PlanPart(s->size, parts.empty() ? st.st_size : 0, parts, length);
  if (!made.verdict.ok()) return made;
  made.index = static_cast<int>(parts.size());
  std::string name = "part-" + std::to_string(made.index) + "-" +
                     std::to_string(made.verdict.offset) + "-" +
                     std::to_string(made.verdict.length);
  server::UniqueFd part(
      ::open((dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (part.fd < 0) return Io("create upload part", errno);
  return made;
}

StatusOr<tus::Part> Volume::AppendPart(std::string_view session_id, int index, std::int64_t offset,
                                       std::string_view data, std::string_view sha256) const {
  if (index < 0) return Status(StatusCode::kNotFound, "no part=" + std::to_string(index));
  auto chunk = WriteChunk(session_id, index, offset, data, sha256);
  if (!chunk.ok()) return chunk.status();
  return *chunk->part();
}

StatusOr<Volume::Chunk> Volume::WriteChunk(std::string_view session_id, int index,
                                           std::int64_t offset, std::string_view data,
                                           std::string_view sha256) const {
  auto chunk = OpenChunk(session_id, index, offset, static_cast<std::int64_t>(data.size()));
  if (!chunk.ok()) return chunk.status();
  if (!sha256.empty() && protocol::tus::Sha256(data) != sha256) {
    return Status(StatusCode::kDataLoss, "the chunk's sha256 differs from its checksum");
  }
  if (auto w = chunk->Write(data); !w.ok()) return w;
  if (auto c = chunk->Close(); !c.ok()) return c;
  return chunk;
}

StatusOr<tus::PatchVerdict> Volume::FinishParts(std::string_view session_id,
                                                std::vector<int> const& named) const {
  auto s = GetUpload(session_id);
  if (!s.ok()) return s.status();
  std::string dir = root_ + "/" + kUploads + "/" + s->id;
  auto file = LockedData(dir, LOCK_EX | LOCK_NB, "parts of this upload are still being written");
  if (!file.ok()) return file.status();
  auto verdict = tus::CheckFinal(s->size, PartsIn(dir), named);
  if (!verdict.ok()) return verdict;
  if (::ftruncate(file->fd, static_cast<off_t>(s->size)) != 0) return Io("finish upload", errno);
  if (auto moved = Adopt(*s, dir); !moved.ok()) return moved;
  return verdict;
}

StatusOr<Volume::Chunk> Volume::OpenChunk(std::string_view session_id, int index,
                                          std::int64_t offset, std::int64_t length) const {
  auto s = GetUpload(session_id);
  if (!s.ok()) return s.status();
  Chunk c;
  c.volume_ = this;
  c.dir_ = root_ + "/" + kUploads + "/" + s->id;
  c.length_ = length;
  if (index >= 0) {
    auto files = PartFiles(c.dir_);
    if (index >= static_cast<int>(files.size())) {
      return Status(StatusCode::kNotFound, "no part=" + std::to_string(index) + " in this upload");
    }
    auto [name, part] = files[static_cast<std::size_t>(index)];
    c.progress_ = server::UniqueFd(::open((c.dir_ + "/" + name).c_str(), O_WRONLY | O_CLOEXEC));
    if (c.progress_.fd < 0) return Status(StatusCode::kNotFound, "no such upload part");
    if (::flock(c.progress_.fd, LOCK_EX | LOCK_NB) != 0) {
      return Status(StatusCode::kAborted, "another request is writing to this part");
    }
    // Shared with the other parts' writers; a whole-file PATCH or the final request waits.
    auto data = LockedData(c.dir_, LOCK_SH, "");
    if (!data.ok()) return data.status();
    c.data_ = std::move(*data);
    struct stat st {};
    if (::fstat(c.progress_.fd, &st) != 0) return Io("stat upload part", errno);
    if (st.st_nlink == 0) {
      return Status(StatusCode::kNotFound, "the upload was taken back from its parts");
    }
    part.received = st.st_size;
    if (offset != part.received) {
      return Status(StatusCode::kAborted, "the part has " + std::to_string(part.received) +
                                              " bytes, not " + std::to_string(offset));
    }
    if (length > part.length - part.received) {
      return Status(StatusCode::kFailedPrecondition, "the chunk would pass the part's length");
    }
    c.start_ = part.start + offset;
    c.part_ = part;
    c.session_ = std::move(*s);
    return c;
  }
  // One writer at a time; the offset is read again under the lock.
  auto data = LockedData(c.dir_, LOCK_EX | LOCK_NB, "another request is writing to this upload");
  if (!data.ok()) return data.status();
  c.data_ = std::move(*data);
  struct stat st {};
  if (::fstat(c.data_.fd, &st) != 0) return Io("stat upload", errno);
  s->offset = st.st_size;
  if (s->parts > 0) {
    if (offset != 0) {
      return Status(StatusCode::kAborted,
                    "the upload is being sent in parts; a whole-file upload starts at 0");
    }
    // Taken back from its parts: what they wrote is dropped.
    for (auto& [name, part] : PartFiles(c.dir_)) ::unlink((c.dir_ + "/" + name).c_str());
    if (::ftruncate(c.data_.fd, 0) != 0) return Io("restart upload", errno);
    s->offset = 0;
    s->parts = 0;
  }
  if (offset != s->offset) {
    return Status(StatusCode::kAborted, "the upload has " + std::to_string(s->offset) +
                                            " bytes, not " + std::to_string(offset));
  }
  if (length > s->size - s->offset) {
    return Status(StatusCode::kFailedPrecondition, "the chunk would pass the upload's size");
  }
  c.start_ = offset;
  c.session_ = std::move(*s);
  return c;
}

Volume::Chunk::Chunk(Chunk&& other) noexcept
    : volume_(other.volume_),
      session_(std::move(other.session_)),
      part_(std::move(other.part_)),
      dir_(std::move(other.dir_)),
      data_(std::move(other.data_)),
      progress_(std::move(other.progress_)),
      start_(other.start_),
      length_(other.length_),
      written_(other.written_),
      failed_(std::move(other.failed_)),
      closed_(std::exchange(other.closed_, true)) {}

Volume::Chunk::~Chunk() {
  if (!closed_) (void)Close();
}

Status Volume::Chunk::Write(std::string_view bytes) {
  if (!failed_.ok()) return failed_;
  if (closed_) return Status(StatusCode::kFailedPrecondition, "the chunk is closed");
  if (static_cast<std::int64_t>(bytes.size()) > length_ - written_) {
    return Status(StatusCode::kFailedPrecondition, "more bytes than the chunk's length");
  }
  if (int err = WriteAt(data_.fd, bytes, start_ + written_); err != 0) {
    failed_ = Io("write upload", err);
    // Nothing of a failed chunk stays: the client sends it again from the same offset (a part's
    // bytes past its count are not its bytes yet).
    if (!part_) (void)!::ftruncate(data_.fd, static_cast<off_t>(start_));
    return failed_;
  }
  written_ += static_cast<std::int64_t>(bytes.size());
  return Status();
}

Status Volume::Chunk::Close() {
  if (closed_) return failed_;
  closed_ = true;
  if (!failed_.ok()) return failed_;
  if (part_) {
    // The bytes first, then the count that says they are there.
    part_->received += written_;
    if (written_ > 0 && ::ftruncate(progress_.fd, static_cast<off_t>(part_->received)) != 0) {
      part_->received -= written_;
      return failed_ = Io("record upload part", errno);
    }
    return Status();
  }
  session_.offset = start_ + written_;
  if (!session_.complete()) return Status();
  if (auto moved = volume_->Adopt(session_, dir_); !moved.ok()) return failed_ = moved;
  return Status();
}

StatusOr<UploadSession> Volume::Append(std::string_view session_id, std::int64_t offset,
                                       std::string_view data, std::string_view sha256) const {
  auto chunk = WriteChunk(session_id, -1, offset, data, sha256);
  if (!chunk.ok()) return chunk.status();
  return chunk->session();
}

Status Volume::Adopt(UploadSession const& s, std::string const& dir) const {
  // Whole: into the folder under its name, then the session is gone.
  auto tree = Tree(s.folder, "");
  if (!tree.ok()) return tree.status();
  server::UniqueFd uploads(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (auto moved = tree->Adopt(uploads.fd, "data", s.relpath); !moved.ok()) return moved;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return Status();
}

Status Volume::CancelUpload(std::string_view session_id) const {
  auto s = GetUpload(session_id);
  if (!s.ok()) return s.status();
  std::error_code ec;
  fs::remove_all(root_ + "/" + kUploads + "/" + s->id, ec);
  if (ec) return Io("remove upload", ec.value());
  return Status();
}

int Volume::ExpireUploads(std::int64_t now, std::int64_t max_age_seconds) const {
  int removed = 0;
  for (auto const& s : Sessions()) {
    if (now - s.created > max_age_seconds && CancelUpload(s.id).ok()) ++removed;
  }
  return removed;
}

}  // namespace bai::storage
