// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/work_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace bai::server {
namespace {

namespace p = protocol;

constexpr std::string_view kWork = p::kSessionWorkDir;
constexpr int kMaxDepth = 64;

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd const&) = delete;
  Fd& operator=(Fd const&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status Errno(std::string const& what, std::string const& rel, int err) {
  std::string where = rel.empty() ? std::string(kWork) : std::string(kWork) + "/" + rel;
  switch (err) {
    case ENOENT:
      return Status(StatusCode::kNotFound, where + ": no such file or directory");
    case ENOTDIR:
      return Status(StatusCode::kFailedPrecondition, where + ": not a directory");
    case EISDIR:
      return Status(StatusCode::kFailedPrecondition, where + ": is a directory");
    case EXDEV:
    case ELOOP:
      return Status(StatusCode::kInvalidArgument,
                    where + ": leads outside " + std::string(kWork) + " (a symbolic link)");
    case EACCES:
    case EPERM:
      return Status(StatusCode::kPermissionDenied, where + ": permission denied");
    case ENOSPC:
    case EDQUOT:
      return Status(StatusCode::kResourceExhausted,
                    where + ": no space left in " + std::string(kWork));
    case ENOSYS:
      return Status(StatusCode::kUnimplemented, "openat2 is not available (Linux 5.6 or later)");
    default:
      return Status(StatusCode::kInternal, what + " " + where + ": " + std::strerror(err));
  }
}

// Opens `rel` (relative, "" = the root itself) beneath `root`: nothing it names, including
// symbolic links met on the way, may lead out.
int OpenBeneath(int root, std::string const& rel, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  std::string path = rel.empty() ? "." : rel;
  int fd;
  do {
    fd = static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
  } while (fd < 0 && errno == EAGAIN);
  return fd;
}

std::pair<std::string, std::string> SplitParent(std::string const& rel) {
  auto slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

bool ReadAll(int fd, std::string& out, std::int64_t limit) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::int64_t>(out.size()) > limit) return true;
  }
}

Status TooLarge(std::string const& rel, std::int64_t limit) {
  return Status(StatusCode::kResourceExhausted,
                std::string(kWork) + (rel.empty() ? "" : "/" + rel) + " is larger than " +
                    std::to_string(limit) + " bytes (use a virtual folder for large data)");
}

// Appends the member `name` (the object `fd` refers to, opened with O_PATH|O_NOFOLLOW or as a
// directory) and, for a directory, everything in it.
Status AddMember(int parent, std::string const& entry, std::string const& name,
                 std::string const& rel, std::int64_t limit, int depth, std::string& out) {
  struct stat st {};
  if (::fstatat(parent, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno("stat", rel, errno);
  }
  p::TarMember m;
  m.name = name;
  m.mode = st.st_mode & 07777;
  m.mtime = st.st_mtim.tv_sec;
  if (S_ISLNK(st.st_mode)) {
    std::string target(4096, '\0');
    ssize_t n = ::readlinkat(parent, entry.c_str(), target.data(), target.size());
    if (n < 0) return Errno("readlink", rel, errno);
    target.resize(static_cast<std::size_t>(n));
    m.type = p::TarType::kSymlink;
    m.link = target;
    out += p::TarHeader(m, 0);
  } else if (S_ISDIR(st.st_mode)) {
    if (depth > kMaxDepth) {
      return Status(StatusCode::kFailedPrecondition, rel + ": directories nested too deeply");
    }
    Fd dir(::openat(parent, entry.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.fd < 0) return Errno("open", rel, errno);
    m.type = p::TarType::kDirectory;
    out += p::TarHeader(m, 0);
    DIR* d = ::fdopendir(::dup(dir.fd));
    if (!d) return Errno("read", rel, errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (auto const& child : names) {
      auto s = AddMember(dir.fd, child, name + "/" + child, rel.empty() ? child : rel + "/" + child,
                         limit, depth + 1, out);
      if (!s.ok()) return s;
    }
  } else if (S_ISREG(st.st_mode)) {
    Fd file(::openat(parent, entry.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (file.fd < 0) return Errno("open", rel, errno);
    std::string data;
    std::int64_t room = limit - static_cast<std::int64_t>(out.size());
    if (!ReadAll(file.fd, data, room)) return Errno("read", rel, errno);
    m.type = p::TarType::kFile;
    auto size = static_cast<std::int64_t>(data.size());
    out += p::TarHeader(m, size);
    out += data;
    out += p::TarPadding(size);
  }
  // Devices, FIFOs and sockets are left out (nothing a download could use).
  if (static_cast<std::int64_t>(out.size()) > limit) return TooLarge(rel, limit);
  return Status();
}

}  // namespace

StatusOr<std::string> WorkRelative(std::string_view path) {
  if (path.find('\0') != std::string_view::npos) {
    return Status(StatusCode::kInvalidArgument, "the path contains a NUL byte");
  }
  if (path.size() > 4095) {
    return Status(StatusCode::kInvalidArgument, "the path is longer than 4095 bytes");
  }
  if (!path.empty() && path.front() == '/') {
    if (path.substr(0, kWork.size()) != kWork ||
        (path.size() > kWork.size() && path[kWork.size()] != '/')) {
      return Status(StatusCode::kInvalidArgument,
                    "'" + std::string(path) + "' is outside " + std::string(kWork));
    }
    path.remove_prefix(kWork.size());
  }
  std::string out;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path.remove_prefix(slash == std::string_view::npos ? path.size() : slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return Status(StatusCode::kInvalidArgument, "the path may not contain '..'");
    }
    if (part.size() > 255) {
      return Status(StatusCode::kInvalidArgument, "a path component is longer than 255 bytes");
    }
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

StatusOr<WorkTree> WorkTree::Open(std::string const& root) {
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Status(StatusCode::kNotFound, root + ": " + std::strerror(errno));
  }
  return WorkTree(fd);
}

WorkTree::WorkTree(WorkTree&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

WorkTree& WorkTree::operator=(WorkTree&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

WorkTree::~WorkTree() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<p::SessionFileList> WorkTree::List(std::string_view path) const {
  auto rel = WorkRelative(path);
  if (!rel.ok()) return std::move(rel).status();
  Fd dir(OpenBeneath(fd_, *rel, O_RDONLY | O_DIRECTORY));
  if (dir.fd < 0) return Errno("open", *rel, errno);
  DIR* d = ::fdopendir(::dup(dir.fd));
  if (!d) return Errno("read", *rel, errno);
  p::SessionFileList list;
  list.abspath = std::string(kWork) + (rel->empty() ? "" : "/" + *rel);
  while (dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st {};
    if (::fstatat(dir.fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      list.errors += std::string(e->d_name) + ": " + std::strerror(errno) + "\n";
      continue;
    }
    p::SessionFile f;
    f.filename = e->d_name;
    f.mode = p::FileModeString(st.st_mode);
    f.size = st.st_size;
    auto secs = [](timespec const& t) { return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9; };
    f.ctime = secs(st.st_ctim);
    f.mtime = secs(st.st_mtim);
    f.atime = secs(st.st_atim);
    list.files.push_back(std::move(f));
  }
  ::closedir(d);
  std::sort(list.files.begin(), list.files.end(),
            [](auto const& a, auto const& b) { return a.filename < b.filename; });
  return list;
}

Status WorkTree::Write(std::string_view path, std::string_view data) const {
  auto rel = WorkRelative(path);
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return Errno("write", *rel, EISDIR);
  auto [parent, leaf] = SplitParent(*rel);
  // Parents, one level at a time, each resolved beneath the root (links inside it are fine).
  std::string made;
  std::string_view rest = parent;
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string part(rest.substr(0, slash));
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    Fd at(OpenBeneath(fd_, made, O_PATH | O_DIRECTORY));
    if (at.fd < 0) return Errno("open", made, errno);
    if (::mkdirat(at.fd, part.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno("mkdir", made.empty() ? part : made + "/" + part, errno);
    }
    made = made.empty() ? part : made + "/" + part;
  }
  Fd dir(OpenBeneath(fd_, parent, O_PATH | O_DIRECTORY));
  if (dir.fd < 0) return Errno("open", parent, errno);
  struct stat st {};
  if (::fstatat(dir.fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    return Errno("write", *rel, EISDIR);
  }
  std::random_device rd;
  std::string tmp = ".bai-upload-" + std::to_string(rd()) + std::to_string(::getpid());
  Fd file(
      ::openat(dir.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (file.fd < 0) return Errno("create", *rel, errno);
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::write(file.fd, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = w < 0 ? errno : ENOSPC;
      ::unlinkat(dir.fd, tmp.c_str(), 0);
      return Errno("write", *rel, err);
    }
    off += static_cast<std::size_t>(w);
  }
  // The rename replaces a file or a symbolic link of that name; it never follows the link.
  if (::renameat(dir.fd, tmp.c_str(), dir.fd, leaf.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    return Errno("rename", *rel, err);
  }
  return Status();
}

StatusOr<std::string> WorkTree::Read(std::string_view path, std::int64_t limit) const {
  auto rel = WorkRelative(path);
  if (!rel.ok()) return std::move(rel).status();
  Fd file(OpenBeneath(fd_, *rel, O_RDONLY | O_NONBLOCK));
  if (file.fd < 0) return Errno("open", *rel, errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return Errno("stat", *rel, errno);
  if (S_ISDIR(st.st_mode)) return Errno("read", *rel, EISDIR);
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kFailedPrecondition,
                  std::string(kWork) + "/" + *rel + ": not a regular file");
  }
  if (st.st_size > limit) return TooLarge(*rel, limit);
  std::string data;
  if (!ReadAll(file.fd, data, limit)) return Errno("read", *rel, errno);
  if (static_cast<std::int64_t>(data.size()) > limit) return TooLarge(*rel, limit);
  return data;
}

StatusOr<std::string> WorkTree::Archive(std::string_view path, std::int64_t limit) const {
  auto rel = WorkRelative(path);
  if (!rel.ok()) return std::move(rel).status();
  auto [parent, leaf] = SplitParent(*rel);
  std::string out;
  if (rel->empty()) {
    // The work directory itself, named as its last component.
    auto s = AddMember(fd_, ".", "work", "", limit, 0, out);
    if (!s.ok()) return s;
  } else {
    Fd dir(OpenBeneath(fd_, parent, O_PATH | O_DIRECTORY));
    if (dir.fd < 0) return Errno("open", parent, errno);
    auto s = AddMember(dir.fd, leaf, leaf, *rel, limit, 0, out);
    if (!s.ok()) return s;
  }
  out += p::TarEnd();
  if (static_cast<std::int64_t>(out.size()) > limit) return TooLarge(*rel, limit);
  return out;
}

runner_protocol::FileResult AnswerFileRequest(std::string const& root,
                                              runner_protocol::FileRequest const& request) {
  namespace rp = runner_protocol;
  rp::FileResult r;
  r.request_id = request.request_id;
  auto tree = WorkTree::Open(root);
  if (!tree.ok()) {
    r.status = tree.status();
  } else if (request.action == rp::kFileList) {
    auto list = tree->List(request.path);
    if (list.ok()) {
      r.files_json = p::EncodeSessionFileList(*list);
    } else {
      r.status = list.status();
    }
  } else if (request.action == rp::kFileWrite) {
    r.status = tree->Write(request.path, request.data);
  } else if (request.action == rp::kFileRead || request.action == rp::kFileArchive) {
    auto data = request.action == rp::kFileRead ? tree->Read(request.path, request.limit)
                                                : tree->Archive(request.path, request.limit);
    if (data.ok()) {
      r.data = std::move(*data);
    } else {
      r.status = data.status();
    }
  } else {
    r.status = Status(StatusCode::kInvalidArgument, "unknown file action '" + request.action + "'");
  }
  return r;
}

}  // namespace bai::server
