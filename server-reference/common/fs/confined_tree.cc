// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/fs/confined_tree.h"

#include "server-reference/common/fs/unique_fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace bai::server {
namespace {

namespace p = protocol;

constexpr int kMaxDepth = 64;

Status Errno(std::string_view root, std::string const& what, std::string const& rel, int err) {
  std::string where = rel.empty() ? std::string(root) : std::string(root) + "/" + rel;
  switch (err) {
    case ENOENT:
      return Status(StatusCode::kNotFound, where + ": no such file or directory");
    case ENOTDIR:
      return Status(StatusCode::kFailedPrecondition, where + ": not a directory");
    case EEXIST:
      return Status(StatusCode::kAlreadyExists, where + ": already exists");
    case ENOTEMPTY:
      return Status(StatusCode::kFailedPrecondition, where + ": not empty");
    case ENAMETOOLONG:
      return Status(StatusCode::kInvalidArgument, where + ": name too long");
    case EISDIR:
      return Status(StatusCode::kFailedPrecondition, where + ": is a directory");
    case EXDEV:
    case ELOOP:
      return Status(StatusCode::kInvalidArgument,
                    where + ": leads outside " + std::string(root) + " (a symbolic link)");
    case EACCES:
    case EPERM:
      return Status(StatusCode::kPermissionDenied, where + ": permission denied");
    case ENOSPC:
    case EDQUOT:
      return Status(StatusCode::kResourceExhausted,
                    where + ": no space left in " + std::string(root));
    case ENOSYS:
      return Status(StatusCode::kUnimplemented, "openat2 is not available (Linux 5.6 or later)");
    default:
      return Status(StatusCode::kInternal, what + " " + where + ": " + std::strerror(err));
  }
}

// Opens `rel` (relative, "" = the root itself) beneath `root`: nothing it names, including
// symbolic links met on the way, may lead out.
int OpenBeneath(int root, std::string const& rel, int flags) {
  return OpenAt2(root, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
}

std::pair<std::string, std::string> SplitParent(std::string const& rel) {
  auto slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

// Writes all `n` bytes; 0, or the errno (ENOSPC for a write that wrote nothing).
int WriteAll(int fd, char const* data, std::size_t n) {
  std::size_t off = 0;
  while (off < n) {
    ssize_t w = ::write(fd, data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : ENOSPC;
    off += static_cast<std::size_t>(w);
  }
  return 0;
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

Status TooLarge(std::string_view root, std::string const& rel, std::int64_t limit) {
  return Status(StatusCode::kResourceExhausted, std::string(root) + (rel.empty() ? "" : "/" + rel) +
                                                    " is larger than " + std::to_string(limit) +
                                                    " bytes (use a virtual folder for large data)");
}

// Visits the entry `entry` of `parent` as `name` and, for a directory, everything in it.
Status WalkEntry(std::string_view root, int parent, std::string const& entry,
                 std::string const& name, std::string const& rel, int depth,
                 TreeVisitor const& visit) {
  TreeEntry e;
  e.name = name;
  if (::fstatat(parent, entry.c_str(), &e.st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno(root, "stat", rel, errno);
  }
  if (S_ISLNK(e.st.st_mode)) {
    std::string target(4096, '\0');
    ssize_t n = ::readlinkat(parent, entry.c_str(), target.data(), target.size());
    if (n < 0) return Errno(root, "readlink", rel, errno);
    target.resize(static_cast<std::size_t>(n));
    e.link = std::move(target);
    return visit(e);
  }
  if (S_ISDIR(e.st.st_mode)) {
    if (depth > kMaxDepth) {
      return Status(StatusCode::kFailedPrecondition, rel + ": directories nested too deeply");
    }
    UniqueFd dir(::openat(parent, entry.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.fd < 0) return Errno(root, "open", rel, errno);
    if (auto s = visit(e); !s.ok()) return s;
    DIR* d = ::fdopendir(::dup(dir.fd));
    if (!d) return Errno(root, "read", rel, errno);
    std::vector<std::string> names;
    while (dirent* de = ::readdir(d)) {
      if (std::strcmp(de->d_name, ".") && std::strcmp(de->d_name, "..")) {
        names.push_back(de->d_name);
      }
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (auto const& child : names) {
      auto s = WalkEntry(root, dir.fd, child, name + "/" + child,
                         rel.empty() ? child : rel + "/" + child, depth + 1, visit);
      if (!s.ok()) return s;
    }
    return Status();
  }
  if (S_ISREG(e.st.st_mode)) {
    UniqueFd file(::openat(parent, entry.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (file.fd < 0) return Errno(root, "open", rel, errno);
    e.fd = file.fd;
    return visit(e);
  }
  return Status();  // devices, FIFOs and sockets: nothing a copy could use
}

}  // namespace

StatusOr<std::string> RelativeBeneath(std::string_view path, std::string_view absolute_root) {
  if (path.find('\0') != std::string_view::npos) {
    return Status(StatusCode::kInvalidArgument, "the path contains a NUL byte");
  }
  if (path.size() > 4095) {
    return Status(StatusCode::kInvalidArgument, "the path is longer than 4095 bytes");
  }
  if (!path.empty() && path.front() == '/') {
    std::string_view root = absolute_root;
    if (root.empty() || path.substr(0, root.size()) != root ||
        (path.size() > root.size() && path[root.size()] != '/')) {
      return Status(
          StatusCode::kInvalidArgument,
          "'" + std::string(path) + "' is " +
              (root.empty() ? std::string("an absolute path") : "outside " + std::string(root)));
    }
    path.remove_prefix(root.size());
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

StatusOr<ConfinedTree> ConfinedTree::Open(std::string const& root, std::string absolute_root,
                                          std::string display) {
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    // Named as its users know it: the host path is no business of an API client (a folder
    // purged during an upload answered with it).
    std::string shown = !display.empty()         ? display
                        : !absolute_root.empty() ? absolute_root
                                                 : std::string("the directory");
    return Status(StatusCode::kNotFound, shown + ": " + std::strerror(errno));
  }
  ConfinedTree tree(fd);
  tree.absolute_root_ = std::move(absolute_root);
  tree.display_ = display.empty() ? tree.absolute_root_ : std::move(display);
  return tree;
}

ConfinedTree::ConfinedTree(ConfinedTree&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      owner_uid_(other.owner_uid_),
      owner_gid_(other.owner_gid_),
      absolute_root_(std::move(other.absolute_root_)),
      display_(std::move(other.display_)) {}

ConfinedTree& ConfinedTree::operator=(ConfinedTree&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    owner_uid_ = other.owner_uid_;
    owner_gid_ = other.owner_gid_;
    absolute_root_ = std::move(other.absolute_root_);
    display_ = std::move(other.display_);
  }
  return *this;
}

ConfinedTree::~ConfinedTree() {
  if (fd_ >= 0) ::close(fd_);
}

int ConfinedTree::Own(int dir, std::string const& name) const {
  if (owner_uid_ < 0) return 0;
  if (::fchownat(dir, name.c_str(), static_cast<uid_t>(owner_uid_), static_cast<gid_t>(owner_gid_),
                 AT_SYMLINK_NOFOLLOW) != 0) {
    return errno;
  }
  return 0;
}

StatusOr<p::SessionFileList> ConfinedTree::List(std::string_view path) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return std::move(rel).status();
  UniqueFd dir(OpenBeneath(fd_, *rel, O_RDONLY | O_DIRECTORY));
  if (dir.fd < 0) return Errno(display_, "open", *rel, errno);
  DIR* d = ::fdopendir(::dup(dir.fd));
  if (!d) return Errno(display_, "read", *rel, errno);
  p::SessionFileList list;
  list.abspath = display_ + (rel->empty() ? "" : "/" + *rel);
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

// The directory that will hold `rel`'s leaf, its parents made one level at a time, each
// resolved beneath the root (links inside the tree are fine); its descriptor, or an error.
StatusOr<int> ConfinedTree::ParentFor(std::string const& rel) const {
  if (rel.empty()) return Errno(display_, "write", rel, EISDIR);
  auto [parent, leaf] = SplitParent(rel);
  std::string made;
  std::string_view rest = parent;
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string part(rest.substr(0, slash));
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    UniqueFd at(OpenBeneath(fd_, made, O_PATH | O_DIRECTORY));
    if (at.fd < 0) return Errno(display_, "open", made, errno);
    if (::mkdirat(at.fd, part.c_str(), 0755) == 0) {
      if (int err = Own(at.fd, part)) return Errno(display_, "chown", part, err);
    } else if (errno != EEXIST) {
      return Errno(display_, "mkdir", made.empty() ? part : made + "/" + part, errno);
    }
    made = made.empty() ? part : made + "/" + part;
  }
  int dir = OpenBeneath(fd_, parent, O_PATH | O_DIRECTORY);
  if (dir < 0) return Errno(display_, "open", parent, errno);
  struct stat st {};
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    ::close(dir);
    return Errno(display_, "write", rel, EISDIR);
  }
  return dir;
}

Status ConfinedTree::WriteWith(std::string_view path,
                               std::function<int(int file)> const& fill) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  auto parent_fd = ParentFor(*rel);
  if (!parent_fd.ok()) return parent_fd.status();
  UniqueFd dir(*parent_fd);
  std::string leaf = SplitParent(*rel).second;
  std::random_device rd;
  std::string tmp = ".bai-write-" + std::to_string(rd()) + std::to_string(::getpid());
  UniqueFd file(
      ::openat(dir.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (file.fd < 0) return Errno(display_, "create", *rel, errno);
  if (int err = fill(file.fd)) {
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    return Errno(display_, "write", *rel, err);
  }
  if (int err = Own(dir.fd, tmp)) {
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    return Errno(display_, "chown", *rel, err);
  }
  // The rename replaces a file or a symbolic link of that name; it never follows the link.
  if (::renameat(dir.fd, tmp.c_str(), dir.fd, leaf.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    return Errno(display_, "rename", *rel, err);
  }
  return Status();
}

Status ConfinedTree::Write(std::string_view path, std::string_view data) const {
  return WriteWith(path, [data](int file) { return WriteAll(file, data.data(), data.size()); });
}

Status ConfinedTree::Write(std::string_view path, std::string_view data, mode_t mode) const {
  return WriteWith(path, [data, mode](int file) {
    if (int err = WriteAll(file, data.data(), data.size())) return err;
    return ::fchmod(file, mode & 07777) == 0 ? 0 : errno;
  });
}

Status ConfinedTree::CheckWritable(std::string_view path) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return Errno(display_, "write", *rel, EISDIR);
  // Each existing level must be a directory beneath the root; missing ones will be made.
  std::string prefix;
  std::string_view rest = *rel;
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string part(rest.substr(0, slash));
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    prefix = prefix.empty() ? part : prefix + "/" + part;
    bool leaf = rest.empty();
    UniqueFd at(OpenBeneath(fd_, prefix, O_PATH | (leaf ? 0 : O_DIRECTORY)));
    if (at.fd < 0) {
      if (errno == ENOENT) return Status();
      return Errno(display_, "open", prefix, errno);
    }
    struct stat st {};
    if (leaf && ::fstat(at.fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      return Errno(display_, "write", *rel, EISDIR);
    }
  }
  return Status();
}

Status ConfinedTree::Adopt(int from_dir, std::string const& from_name,
                           std::string_view path) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  auto parent_fd = ParentFor(*rel);
  if (!parent_fd.ok()) return parent_fd.status();
  UniqueFd dir(*parent_fd);
  std::string leaf = SplitParent(*rel).second;
  if (int err = Own(from_dir, from_name)) return Errno(display_, "chown", *rel, err);
  if (::renameat(from_dir, from_name.c_str(), dir.fd, leaf.c_str()) != 0) {
    return Errno(display_, "rename", *rel, errno);
  }
  return Status();
}

StatusOr<std::string> ConfinedTree::Read(std::string_view path, std::int64_t limit) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return std::move(rel).status();
  UniqueFd file(OpenBeneath(fd_, *rel, O_RDONLY | O_NONBLOCK));
  if (file.fd < 0) return Errno(display_, "open", *rel, errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return Errno(display_, "stat", *rel, errno);
  if (S_ISDIR(st.st_mode)) return Errno(display_, "read", *rel, EISDIR);
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kFailedPrecondition, display_ + "/" + *rel + ": not a regular file");
  }
  if (st.st_size > limit) return TooLarge(display_, *rel, limit);
  std::string data;
  if (!ReadAll(file.fd, data, limit)) return Errno(display_, "read", *rel, errno);
  if (static_cast<std::int64_t>(data.size()) > limit) return TooLarge(display_, *rel, limit);
  return data;
}

Status ConfinedTree::Walk(std::string_view path, TreeVisitor const& visit,
                          std::string const& root_name) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return WalkEntry(display_, fd_, ".", root_name, "", 0, visit);
  auto [parent, leaf] = SplitParent(*rel);
  UniqueFd dir(OpenBeneath(fd_, parent, O_PATH | O_DIRECTORY));
  if (dir.fd < 0) return Errno(display_, "open", parent, errno);
  return WalkEntry(display_, dir.fd, leaf, leaf, *rel, 0, visit);
}

StatusOr<std::string> ConfinedTree::Archive(std::string_view path, std::int64_t limit) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return std::move(rel).status();
  std::string out;
  auto too_large = [&] { return TooLarge(display_, *rel, limit); };
  auto s = Walk(*rel, [&](TreeEntry const& e) -> Status {
    p::TarMember m;
    m.name = e.name;
    m.mode = e.st.st_mode & 07777;
    m.mtime = e.st.st_mtim.tv_sec;
    if (S_ISLNK(e.st.st_mode)) {
      m.type = p::TarType::kSymlink;
      m.link = e.link;
      out += p::TarHeader(m, 0);
    } else if (S_ISDIR(e.st.st_mode)) {
      m.type = p::TarType::kDirectory;
      out += p::TarHeader(m, 0);
    } else {
      std::string data;
      std::int64_t room = limit - static_cast<std::int64_t>(out.size());
      if (!ReadAll(e.fd, data, room)) return Errno(display_, "read", *rel, errno);
      m.type = p::TarType::kFile;
      auto size = static_cast<std::int64_t>(data.size());
      out += p::TarHeader(m, size);
      out += data;
      out += p::TarPadding(size);
    }
    if (static_cast<std::int64_t>(out.size()) > limit) return too_large();
    return Status();
  });
  if (!s.ok()) return s;
  out += p::TarEnd();
  if (static_cast<std::int64_t>(out.size()) > limit) return too_large();
  return out;
}

StatusOr<OpenedFile> ConfinedTree::OpenFile(std::string_view path) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return std::move(rel).status();
  OpenedFile f;
  f.fd = UniqueFd(OpenBeneath(fd_, *rel, O_RDONLY | O_NONBLOCK));
  if (f.fd.fd < 0) return Errno(display_, "open", *rel, errno);
  if (::fstat(f.fd.fd, &f.st) != 0) return Errno(display_, "stat", *rel, errno);
  if (!S_ISREG(f.st.st_mode) && !S_ISDIR(f.st.st_mode)) {
    return Status(StatusCode::kFailedPrecondition, display_ + "/" + *rel + ": not a regular file");
  }
  return f;
}

Status ConfinedTree::WriteFrom(std::string_view path, int source) const {
  return WriteWith(path, [source](int file) {
    loff_t in = 0;
    for (;;) {
      ssize_t n = ::copy_file_range(source, &in, file, nullptr, 1 << 30, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        break;  // another filesystem, or one without the call: plain reads and writes below
      }
      if (n < 0) return errno;
      if (n == 0) return 0;
    }
    char buf[65536];
    for (;;) {
      ssize_t r = ::pread(source, buf, sizeof buf, in);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return errno;
      if (r == 0) return 0;
      in += r;
      if (int err = WriteAll(file, buf, static_cast<std::size_t>(r))) return err;
    }
  });
}

Status ConfinedTree::Symlink(std::string_view path, std::string const& target) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  auto parent_fd = ParentFor(*rel);
  if (!parent_fd.ok()) return parent_fd.status();
  UniqueFd dir(*parent_fd);
  std::string leaf = SplitParent(*rel).second;
  if (::symlinkat(target.c_str(), dir.fd, leaf.c_str()) != 0) {
    return Errno(display_, "link", *rel, errno);
  }
  if (int err = Own(dir.fd, leaf)) return Errno(display_, "chown", *rel, err);
  return Status();
}

Status ConfinedTree::Mkdir(std::string_view path, bool parents, bool exist_ok) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return exist_ok ? Status() : Errno(display_, "mkdir", *rel, EEXIST);
  std::string made;
  std::string_view rest = *rel;
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string part(rest.substr(0, slash));
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    bool last = rest.empty();
    UniqueFd at(OpenBeneath(fd_, made, O_PATH | O_DIRECTORY));
    if (at.fd < 0) return Errno(display_, "open", made, errno);
    std::string here = made.empty() ? part : made + "/" + part;
    if (::mkdirat(at.fd, part.c_str(), 0755) != 0) {
      int err = errno;
      if (err != EEXIST || (last && !exist_ok)) return Errno(display_, "mkdir", here, err);
      struct stat st {};
      if (::fstatat(at.fd, part.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode)) {
        return Errno(display_, "mkdir", here, ENOTDIR);
      }
    } else if (!last && !parents) {
      // Made a parent that was missing: only `parents` allows that.
      ::unlinkat(at.fd, part.c_str(), AT_REMOVEDIR);
      return Errno(display_, "mkdir", here, ENOENT);
    } else if (int err = Own(at.fd, part)) {
      return Errno(display_, "chown", here, err);
    }
    made = here;
  }
  return Status();
}

Status ConfinedTree::Rename(std::string_view path, std::string_view new_name) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return Status(StatusCode::kInvalidArgument, "the root cannot be renamed");
  if (new_name.empty() || new_name == "." || new_name == ".." ||
      new_name.find('/') != std::string_view::npos ||
      new_name.find('\0') != std::string_view::npos || new_name.size() > 255) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + std::string(new_name.substr(0, 80)) + "' is not a bare file name");
  }
  auto [parent, leaf] = SplitParent(*rel);
  UniqueFd dir(OpenBeneath(fd_, parent, O_PATH | O_DIRECTORY));
  if (dir.fd < 0) return Errno(display_, "open", parent, errno);
  std::string target(new_name);
  if (::renameat2(dir.fd, leaf.c_str(), dir.fd, target.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    return Errno(display_, "rename",
                 err == EEXIST ? (parent.empty() ? target : parent + "/" + target) : *rel, err);
  }
  return Status();
}

Status ConfinedTree::Move(std::string_view src, std::string_view dst) const {
  auto from = RelativeBeneath(src, absolute_root_);
  if (!from.ok()) return from.status();
  auto to = RelativeBeneath(dst, absolute_root_);
  if (!to.ok()) return to.status();
  if (from->empty()) return Status(StatusCode::kInvalidArgument, "the root cannot be moved");
  auto [src_parent, src_leaf] = SplitParent(*from);
  UniqueFd src_dir(OpenBeneath(fd_, src_parent, O_PATH | O_DIRECTORY));
  if (src_dir.fd < 0) return Errno(display_, "open", src_parent, errno);
  // Into `dst` when it is a directory, else as `dst`.
  std::string target = *to;
  UniqueFd existing(OpenBeneath(fd_, target, O_PATH | O_DIRECTORY));
  if (existing.fd >= 0) target = target.empty() ? src_leaf : target + "/" + src_leaf;
  if (target == *from) return Status();
  if (target.rfind(*from + "/", 0) == 0) {
    return Status(StatusCode::kInvalidArgument,
                  display_ + "/" + *from + " cannot move into itself");
  }
  auto [dst_parent, dst_leaf] = SplitParent(target);
  UniqueFd dst_dir(OpenBeneath(fd_, dst_parent, O_PATH | O_DIRECTORY));
  if (dst_dir.fd < 0) return Errno(display_, "open", dst_parent, errno);
  if (::renameat2(src_dir.fd, src_leaf.c_str(), dst_dir.fd, dst_leaf.c_str(), RENAME_NOREPLACE) !=
      0) {
    int err = errno;
    return Errno(display_, "move", err == EEXIST ? target : *from, err);
  }
  return Status();
}

namespace {

int EmptyDirectory(int dir, int depth) {
  if (depth > 256) return ELOOP;
  DIR* d = ::fdopendir(::dup(dir));
  if (!d) return errno;
  std::vector<std::pair<std::string, bool>> entries;
  while (dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st {};
    bool is_dir = ::fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    entries.emplace_back(e->d_name, is_dir);
  }
  ::closedir(d);
  for (auto const& [name, is_dir] : entries) {
    if (is_dir) {
      UniqueFd child(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (child.fd < 0) return errno;
      if (int err = EmptyDirectory(child.fd, depth + 1)) return err;
    }
    if (::unlinkat(dir, name.c_str(), is_dir ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT) {
      return errno;
    }
  }
  return 0;
}

}  // namespace

int EmptyDirectoryAt(int dir) { return EmptyDirectory(dir, 0); }

int OpenAt2(int root, std::string const& rel, int flags, std::uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.resolve = resolve;
  std::string path = rel.empty() ? "." : rel;
  int fd;
  do {
    fd = static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
  } while (fd < 0 && errno == EAGAIN);
  return fd;
}

namespace {

int Measure(int dir, TreeUsage& usage, int depth) {
  if (depth > 256) return ELOOP;
  DIR* d = ::fdopendir(::dup(dir));
  if (!d) return errno;
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st {};
    if (::fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(e->d_name);
    } else {
      usage.files += 1;
      usage.bytes += st.st_size;
    }
  }
  ::closedir(d);
  for (auto const& name : subdirs) {
    UniqueFd child(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (child.fd < 0) continue;  // gone meanwhile
    if (int err = Measure(child.fd, usage, depth + 1)) return err;
  }
  return 0;
}

}  // namespace

Status ConfinedTree::Remove(std::string_view path, bool recursive) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  if (rel->empty()) return Status(StatusCode::kInvalidArgument, "the root cannot be removed");
  auto [parent, leaf] = SplitParent(*rel);
  UniqueFd dir(OpenBeneath(fd_, parent, O_PATH | O_DIRECTORY));
  if (dir.fd < 0) return Errno(display_, "open", parent, errno);
  struct stat st {};
  if (::fstatat(dir.fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno(display_, "remove", *rel, errno);
  }
  if (S_ISDIR(st.st_mode)) {
    if (recursive) {
      UniqueFd target(
          ::openat(dir.fd, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (target.fd < 0) return Errno(display_, "open", *rel, errno);
      if (int err = EmptyDirectory(target.fd, 0)) return Errno(display_, "remove", *rel, err);
    }
    if (::unlinkat(dir.fd, leaf.c_str(), AT_REMOVEDIR) != 0) {
      int err = errno;
      if (err == ENOTEMPTY || err == EEXIST) {
        return Status(
            StatusCode::kFailedPrecondition,
            display_ + "/" + *rel + ": a directory that is not empty (remove it recursively)");
      }
      return Errno(display_, "remove", *rel, err);
    }
    return Status();
  }
  if (::unlinkat(dir.fd, leaf.c_str(), 0) != 0) return Errno(display_, "remove", *rel, errno);
  return Status();
}

StatusOr<TreeUsage> ConfinedTree::Usage(std::string_view path) const {
  auto rel = RelativeBeneath(path, absolute_root_);
  if (!rel.ok()) return rel.status();
  UniqueFd dir(OpenBeneath(fd_, *rel, O_RDONLY | O_DIRECTORY));
  if (dir.fd < 0) return Errno(display_, "open", *rel, errno);
  TreeUsage usage;
  if (int err = Measure(dir.fd, usage, 0)) return Errno(display_, "read", *rel, err);
  return usage;
}

}  // namespace bai::server
