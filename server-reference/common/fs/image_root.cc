// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/fs/image_root.h"

#include "server-reference/common/fs/confined_tree.h"
#include "server-reference/common/fs/unique_fd.h"
#include "server-reference/common/oci/manifest.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace bai::server {
namespace {

// Opens `rel` ("" = the root) inside `root` as the container will resolve it: symbolic links
// are followed, but within the root (an absolute target starts at the root, ".." stops there);
// no mount point is crossed.
int OpenInRoot(int root, std::string const& rel, int flags) {
  return OpenAt2(root, rel, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}

std::string Join(std::vector<std::string> const& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += '/';
    out += parts[i];
  }
  return out;
}

Status Refuse(std::string const& layer, std::string const& entry, std::string const& why) {
  return Status(StatusCode::kInvalidArgument, "layer " + layer + ": entry " + entry + ": " + why);
}

Status Failed(std::string const& layer, std::string const& entry, std::string const& what,
              int err) {
  if (err == ENOSPC || err == EDQUOT) {
    return Status(StatusCode::kResourceExhausted,
                  "layer " + layer + ": " + entry + ": no space left for the image");
  }
  return Status(StatusCode::kInternal,
                "layer " + layer + ": " + what + " " + entry + ": " + std::strerror(err));
}

// A tar member's name as components inside the root; "" components and "." dropped, a leading
// "/" taken as the root. nullopt for a ".." component.
std::optional<std::vector<std::string>> Components(char const* name) {
  std::vector<std::string> parts;
  std::string_view rest = name ? name : "";
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") return std::nullopt;
    parts.emplace_back(part);
  }
  return parts;
}

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveCloser>;

StatusOr<ArchivePtr> OpenArchive(std::string const& path) {
  ArchivePtr a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK) {
    return Status(StatusCode::kInvalidArgument,
                  "not a tar archive: " + path + " (" + archive_error_string(a.get()) + ")");
  }
  return a;
}

/// Applies entries beneath one root, remembering the last parent directory it resolved.
class LayerWriter {
 public:
  /// `overlay`: whiteouts are written as overlayfs reads them (a 0/0 character device, the
  /// opaque xattr on a directory) instead of being applied to what is below.
  LayerWriter(int root, std::string layer, bool overlay = false)
      : root_(root), layer_(std::move(layer)), overlay_(overlay) {}

  // The parent of `parts`, resolved in the root; made (0755) when `make` and missing.
  StatusOr<int> Parent(std::vector<std::string> const& parts, bool make, std::string const& name) {
    std::string rel = Join(parts, parts.size() - 1);
    if (parent_.fd >= 0 && rel == parent_rel_) return parent_.fd;
    parent_ = UniqueFd(OpenInRoot(root_, rel, O_PATH | O_DIRECTORY));
    if (parent_.fd < 0 && errno == ENOENT && make) {
      UniqueFd at(::dup(root_));
      for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        std::string prefix = Join(parts, i + 1);
        UniqueFd next(OpenInRoot(root_, prefix, O_PATH | O_DIRECTORY));
        if (next.fd < 0 && errno == ENOENT) {
          if (::mkdirat(at.fd, parts[i].c_str(), 0755) != 0) {
            if (errno == EEXIST) {
              return Refuse(layer_, name, prefix + " is a symbolic link to nothing in the image");
            }
            return Failed(layer_, name, "making", errno);
          }
          next = UniqueFd(OpenInRoot(root_, prefix, O_PATH | O_DIRECTORY));
        }
        if (next.fd < 0) break;
        at = std::move(next);
      }
      parent_ = UniqueFd(OpenInRoot(root_, rel, O_PATH | O_DIRECTORY));
    }
    if (parent_.fd < 0) {
      int err = errno;
      parent_rel_.clear();
      if (err == ENOTDIR) return Refuse(layer_, name, "beneath something that is not a directory");
      if (err == ENOENT) return Status(StatusCode::kNotFound, name + ": no such directory");
      if (err == EXDEV || err == ELOOP)
        return Refuse(layer_, name, "its directory cannot be reached");
      return Failed(layer_, name, "opening the directory of", err);
    }
    parent_rel_ = rel;
    return parent_.fd;
  }

  void Forget() {
    parent_ = UniqueFd();
    parent_rel_.clear();
  }

  // Removes `leaf` of `dir` whatever it is (a directory with its content); 0 or an errno. The
  // remembered parent is forgotten after (it may have been beneath what went; `dir` may be it).
  int Remove(int dir, char const* leaf) {
    int err = RemoveEntry(dir, leaf);
    Forget();
    return err;
  }

  static int RemoveEntry(int dir, char const* leaf) {
    struct stat st {};
    if (::fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : errno;
    if (S_ISDIR(st.st_mode)) {
      UniqueFd d(::openat(dir, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (d.fd < 0) return errno;
      if (int err = EmptyDirectoryAt(d.fd)) return err;
      return ::unlinkat(dir, leaf, AT_REMOVEDIR) == 0 ? 0 : errno;
    }
    return ::unlinkat(dir, leaf, 0) == 0 ? 0 : errno;
  }

  Status Whiteout(archive_entry* e) {
    char const* raw = archive_entry_pathname(e);
    auto parts = Components(raw);
    if (!parts) return Refuse(layer_, raw, "a \"..\" component leads out of the image");
    if (parts->empty() || parts->back().rfind(".wh.", 0) != 0) return Status();
    if (overlay_) return OverlayWhiteout(*parts, raw);
    auto dir = Parent(*parts, false, raw);
    if (dir.status().code() == StatusCode::kNotFound) return Status();  // nothing below to hide
    if (!dir.ok()) return dir.status();
    std::string const& leaf = parts->back();
    if (leaf == ".wh..wh..opq") {
      UniqueFd d(OpenInRoot(root_, Join(*parts, parts->size() - 1), O_RDONLY | O_DIRECTORY));
      if (d.fd < 0) return Failed(layer_, raw, "opening", errno);
      Forget();
      if (int err = EmptyDirectoryAt(d.fd)) return Failed(layer_, raw, "emptying", err);
      return Status();
    }
    std::string hidden = leaf.substr(4);
    if (hidden.empty() || hidden == "." || hidden == "..")
      return Refuse(layer_, raw, "a bad whiteout");
    if (int err = Remove(*dir, hidden.c_str())) return Failed(layer_, raw, "removing", err);
    return Status();
  }

  Status Entry(archive* a, archive_entry* e) {
    char const* raw = archive_entry_pathname(e);
    auto parts = Components(raw);
    if (!parts) return Refuse(layer_, raw ? raw : "", "a \"..\" component leads out of the image");
    if (parts->empty()) return Status();  // "./": the root keeps its own attributes
    if (parts->back().rfind(".wh.", 0) == 0) return Status();  // applied in the first pass
    auto dir = Parent(*parts, true, raw);
    if (!dir.ok()) return dir.status();
    int parent = *dir;
    char const* leaf = parts->back().c_str();
    mode_t type = archive_entry_filetype(e);
    char const* hardlink = archive_entry_hardlink(e);
    struct stat old {};
    bool exists = ::fstatat(parent, leaf, &old, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && !(type == AE_IFDIR && !hardlink && S_ISDIR(old.st_mode))) {
      if (int err = Remove(parent, leaf)) return Failed(layer_, raw, "replacing", err);
      auto again = Parent(*parts, true, raw);
      if (!again.ok()) return again.status();
      parent = *again;
      exists = false;
    }
    UniqueFd made;  // the entry, opened, for ownership and times
    if (hardlink) {
      auto target = Components(hardlink);
      if (!target || target->empty()) return Refuse(layer_, raw, "a hard link out of the image");
      UniqueFd tdir(OpenInRoot(root_, Join(*target, target->size() - 1), O_PATH | O_DIRECTORY));
      struct stat st {};
      if (tdir.fd < 0 ||
          ::fstatat(tdir.fd, target->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
        return Refuse(
            layer_, raw,
            std::string("a hard link to ") + hardlink + ", which is not a file of the image");
      }
      if (::linkat(tdir.fd, target->back().c_str(), parent, leaf, 0) != 0) {
        return Failed(layer_, raw, "linking", errno);
      }
      return Status();  // a hard link shares its target's owner, mode and times
    }
    switch (type) {
      case AE_IFDIR:
        if (!exists && ::mkdirat(parent, leaf, 0700) != 0)
          return Failed(layer_, raw, "making", errno);
        made = UniqueFd(::openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (made.fd < 0) return Failed(layer_, raw, "opening", errno);
        break;
      case AE_IFREG: {
        made = UniqueFd(
            ::openat(parent, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (made.fd < 0) return Failed(layer_, raw, "making", errno);
        if (auto s = CopyData(a, made.fd, raw); !s.ok()) return s;
        if (::ftruncate(made.fd, archive_entry_size(e)) != 0) {
          return Failed(layer_, raw, "writing", errno);
        }
        break;
      }
      case AE_IFLNK: {
        char const* target = archive_entry_symlink(e);
        if (::symlinkat(target ? target : "", parent, leaf) != 0) {
          return Failed(layer_, raw, "making the link", errno);
        }
        if (::geteuid() == 0) {
          ::fchownat(parent, leaf, static_cast<uid_t>(archive_entry_uid(e)),
                     static_cast<gid_t>(archive_entry_gid(e)), AT_SYMLINK_NOFOLLOW);
        }
        timespec times[2] = {{archive_entry_mtime(e), 0}, {archive_entry_mtime(e), 0}};
        ::utimensat(parent, leaf, times, AT_SYMLINK_NOFOLLOW);
        return Status();
      }
      case AE_IFIFO:
        if (::mkfifoat(parent, leaf, 0600) != 0) return Failed(layer_, raw, "making", errno);
        made = UniqueFd(::openat(parent, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (made.fd < 0) return Failed(layer_, raw, "opening", errno);
        return Own(made.fd, e, raw, /*by_path=*/true);
      default:  // character and block devices, sockets: runc gives the container its /dev
        return Status();
    }
    return Own(made.fd, e, raw, /*by_path=*/false);
  }

 private:
  // The whiteout `parts` (its last component `.wh.NAME` or `.wh..wh..opq`) as overlayfs marks
  // it in a layer's own directory, its parent directories made.
  Status OverlayWhiteout(std::vector<std::string> const& parts, char const* raw) {
    std::string const& leaf = parts.back();
    auto dir = Parent(parts, true, raw);
    if (!dir.ok()) return dir.status();
    if (leaf == ".wh..wh..opq") {
      UniqueFd d(OpenInRoot(root_, Join(parts, parts.size() - 1), O_RDONLY | O_DIRECTORY));
      if (d.fd < 0) return Failed(layer_, raw, "opening", errno);
      if (::fsetxattr(d.fd, "trusted.overlay.opaque", "y", 1, 0) != 0) {
        return Failed(layer_, raw, "marking opaque", errno);
      }
      return Status();
    }
    std::string hidden = leaf.substr(4);
    if (hidden.empty() || hidden == "." || hidden == ".." || hidden.rfind(".wh.", 0) == 0)
      return Refuse(layer_, raw, "a bad whiteout");
    if (::mknodat(*dir, hidden.c_str(), S_IFCHR | 0600, makedev(0, 0)) != 0 && errno != EEXIST) {
      return Failed(layer_, raw, "making the whiteout", errno);
    }
    return Status();
  }

  Status CopyData(archive* a, int fd, char const* name) {
    void const* buf = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    for (;;) {
      int r = archive_read_data_block(a, &buf, &size, &offset);
      if (r == ARCHIVE_EOF) return Status();
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
        return Refuse(layer_, name,
                      std::string("cannot read its data: ") + archive_error_string(a));
      }
      auto const* p = static_cast<char const*>(buf);
      while (size > 0) {
        ssize_t n = ::pwrite(fd, p, size, offset);
        if (n < 0) {
          if (errno == EINTR) continue;
          return Failed(layer_, name, "writing", errno);
        }
        p += n;
        offset += n;
        size -= static_cast<std::size_t>(n);
      }
    }
  }

  // Owner (when root), permission bits and modification time of an entry made and opened as
  // `fd` (an O_PATH descriptor when `by_path`: changed through /proc/self/fd, never by name).
  Status Own(int fd, archive_entry* e, char const* name, bool by_path) {
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::geteuid() == 0) {
      int r = by_path ? ::chown(self.c_str(), static_cast<uid_t>(archive_entry_uid(e)),
                                static_cast<gid_t>(archive_entry_gid(e)))
                      : ::fchown(fd, static_cast<uid_t>(archive_entry_uid(e)),
                                 static_cast<gid_t>(archive_entry_gid(e)));
      if (r != 0) return Failed(layer_, name, "giving away", errno);
    }
    mode_t mode = archive_entry_perm(e) & 07777;
    int r = by_path ? ::chmod(self.c_str(), mode) : ::fchmod(fd, mode);
    if (r != 0) return Failed(layer_, name, "setting the mode of", errno);
    timespec times[2] = {{archive_entry_mtime(e), 0}, {archive_entry_mtime(e), 0}};
    if (by_path) {
      ::utimensat(AT_FDCWD, self.c_str(), times, 0);
    } else {
      ::futimens(fd, times);
    }
    return Status();
  }

  int root_;
  std::string layer_;
  bool overlay_ = false;
  UniqueFd parent_;
  std::string parent_rel_;
};

// Runs `each` over every entry of the archive; an entry's data is skipped unless `each` read it.
template <typename Each>
Status ForEachEntry(std::string const& path, Each each) {
  auto a = OpenArchive(path);
  if (!a.ok()) return a.status();
  archive_entry* e = nullptr;
  for (;;) {
    int r = archive_read_next_header(a->get(), &e);
    if (r == ARCHIVE_EOF) return Status();
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      return Status(StatusCode::kInvalidArgument,
                    "layer " + path + ": " + archive_error_string(a->get()));
    }
    if (auto s = each(a->get(), e); !s.ok()) return s;
  }
}

StatusOr<UniqueFd> OpenRoot(std::string const& root) {
  UniqueFd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0) {
    return Status(StatusCode::kNotFound,
                  "cannot open the image root " + root + ": " + std::strerror(errno));
  }
  return fd;
}

}  // namespace

namespace {

Status WriteLayer(std::string const& archive, std::string const& root, bool overlay) {
  auto fd = OpenRoot(root);
  if (!fd.ok()) return fd.status();
  {
    LayerWriter whiteouts(fd->fd, archive, overlay);
    auto s = ForEachEntry(archive,
                          [&](struct archive*, archive_entry* e) { return whiteouts.Whiteout(e); });
    if (!s.ok()) return s;
  }
  LayerWriter files(fd->fd, archive, overlay);
  return ForEachEntry(archive,
                      [&](struct archive* a, archive_entry* e) { return files.Entry(a, e); });
}

}  // namespace

Status ApplyImageLayer(std::string const& archive, std::string const& root) {
  return WriteLayer(archive, root, /*overlay=*/false);
}

Status ExtractOverlayLayer(std::string const& archive, std::string const& dir) {
  return WriteLayer(archive, dir, /*overlay=*/true);
}

StatusOr<std::string> LayerDiffId(std::string const& path) {
  ArchivePtr a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_raw(a.get());
  archive_entry* e = nullptr;
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK ||
      archive_read_next_header(a.get(), &e) != ARCHIVE_OK) {
    return Status(StatusCode::kInvalidArgument,
                  "cannot read the layer " + path + ": " + archive_error_string(a.get()));
  }
  oci::DigestWriter digest;
  std::vector<char> buffer(1 << 16);
  for (;;) {
    auto n = archive_read_data(a.get(), buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot read the layer " + path + ": " + archive_error_string(a.get()));
    }
    digest.Update(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
  return digest.Finish();
}

Status MakeDirectoryInRoot(std::string const& root, std::string const& path, unsigned mode) {
  auto fd = OpenRoot(root);
  if (!fd.ok()) return fd.status();
  auto parts = Components(path.c_str());
  if (!parts) return Status(StatusCode::kInvalidArgument, path + ": leads out of the image");
  UniqueFd at(::dup(fd->fd));
  for (std::size_t i = 0; i < parts->size(); ++i) {
    std::string prefix = Join(*parts, i + 1);
    UniqueFd next(OpenInRoot(fd->fd, prefix, O_PATH | O_DIRECTORY));
    if (next.fd < 0 && errno == ENOENT) {
      if (::mkdirat(at.fd, (*parts)[i].c_str(), mode) != 0 && errno != EEXIST) {
        return Status(StatusCode::kInternal,
                      "cannot make " + prefix + " in " + root + ": " + std::strerror(errno));
      }
      next = UniqueFd(OpenInRoot(fd->fd, prefix, O_PATH | O_DIRECTORY));
    }
    if (next.fd < 0) {
      return Status(StatusCode::kFailedPrecondition,
                    "cannot make " + prefix + " in " + root + ": " + std::strerror(errno));
    }
    at = std::move(next);
  }
  return Status();
}

Status ChmodInRoot(std::string const& root, std::string const& path, unsigned mode) {
  auto fd = OpenRoot(root);
  if (!fd.ok()) return fd.status();
  UniqueFd target(OpenInRoot(fd->fd, path, O_PATH));
  if (target.fd < 0 || ::chmod(("/proc/self/fd/" + std::to_string(target.fd)).c_str(), mode) != 0) {
    return Status(StatusCode::kInternal, "cannot change the mode of " + path + " in " + root +
                                             ": " + std::strerror(errno));
  }
  return Status();
}

StatusOr<std::string> ReadFileInRoot(std::string const& root, std::string const& path,
                                     std::int64_t limit) {
  auto fd = OpenRoot(root);
  if (!fd.ok()) return fd.status();
  UniqueFd file(OpenInRoot(fd->fd, path, O_RDONLY | O_NONBLOCK));
  if (file.fd < 0) {
    return Status(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kPermissionDenied,
                  "cannot read " + path + " in the image: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(StatusCode::kFailedPrecondition, path + " in the image is not a regular file");
  }
  if (st.st_size > limit) {
    return Status(StatusCode::kResourceExhausted,
                  path + " in the image is larger than " + std::to_string(limit) + " bytes");
  }
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(file.fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace bai::server
