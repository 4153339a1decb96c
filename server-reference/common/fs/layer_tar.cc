// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/fs/layer_tar.h"

#include "server-reference/common/fs/unique_fd.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

namespace bai::server {
namespace fs = std::filesystem;

namespace {

struct WriteCloser {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ReadCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

Status Failed(archive* a, std::string const& what) {
  char const* why = archive_error_string(a);
  return Status(StatusCode::kInternal, what + ": " + (why ? why : "libarchive failed"));
}

std::unique_ptr<archive_entry, EntryFree> EntryOf(std::string const& name, struct stat const& st) {
  std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
  archive_entry_set_pathname(e.get(), name.c_str());
  archive_entry_set_perm(e.get(), st.st_mode & 07777);
  archive_entry_set_uid(e.get(), st.st_uid);
  archive_entry_set_gid(e.get(), st.st_gid);
  archive_entry_set_mtime(e.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  return e;
}

}  // namespace

Status WriteTreeTar(std::string const& dir, std::string const& out, bool overlay_whiteouts) {
  std::error_code ec;
  std::vector<std::string> names;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    names.push_back(fs::relative(it->path(), dir, ec).string());
  }
  if (ec) return Status(StatusCode::kInternal, "cannot walk " + dir + ": " + ec.message());
  std::sort(names.begin(), names.end());
  std::unique_ptr<archive, WriteCloser> a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  if (archive_write_open_filename(a.get(), out.c_str()) != ARCHIVE_OK) {
    return Failed(a.get(), "cannot write " + out);
  }
  std::map<std::pair<dev_t, ino_t>, std::string> linked;  // a hard-linked file's first name
  std::vector<char> buffer(1 << 16);
  for (auto const& name : names) {
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // gone meanwhile
    auto e = EntryOf(name, st);
    bool file_data = false;
    if (S_ISDIR(st.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFDIR);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
      auto n = ::readlink(path.c_str(), target.data(), target.size());
      if (n < 0) return Status(StatusCode::kInternal, "cannot read the link " + path);
      target.resize(static_cast<std::size_t>(n));
      archive_entry_set_filetype(e.get(), AE_IFLNK);
      archive_entry_set_symlink(e.get(), target.c_str());
    } else if (S_ISREG(st.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFREG);
      auto key = std::make_pair(st.st_dev, st.st_ino);
      if (auto it = linked.find(key); st.st_nlink > 1 && it != linked.end()) {
        archive_entry_set_hardlink(e.get(), it->second.c_str());
        archive_entry_set_size(e.get(), 0);
      } else {
        if (st.st_nlink > 1) linked[key] = name;
        archive_entry_set_size(e.get(), st.st_size);
        file_data = true;
      }
    } else if (S_ISFIFO(st.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFIFO);
    } else if (overlay_whiteouts && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
      // overlayfs's whiteout: the OCI spec's `.wh.NAME`, an empty file.
      auto slash = name.rfind('/');
      std::string wh = slash == std::string::npos
                           ? ".wh." + name
                           : name.substr(0, slash + 1) + ".wh." + name.substr(slash + 1);
      archive_entry_set_pathname(e.get(), wh.c_str());
      archive_entry_set_filetype(e.get(), AE_IFREG);
      archive_entry_set_size(e.get(), 0);
    } else {
      continue;  // devices and sockets: runc makes /dev; no layer needs them
    }
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) {
      return Failed(a.get(), "cannot write " + name + " into " + out);
    }
    if (file_data) {
      UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      if (fd.fd < 0) return Status(StatusCode::kInternal, "cannot read " + path);
      for (;;) {
        auto n = ::read(fd.fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Status(StatusCode::kInternal, "cannot read " + path);
        if (n == 0) break;
        if (archive_write_data(a.get(), buffer.data(), static_cast<std::size_t>(n)) != n) {
          return Failed(a.get(), "cannot write " + name + " into " + out);
        }
      }
    }
    if (S_ISDIR(st.st_mode) && overlay_whiteouts) {
      char value[4] = {};
      auto n = ::lgetxattr(path.c_str(), "trusted.overlay.opaque", value, sizeof value);
      if (n == 1 && value[0] == 'y') {
        struct stat none = st;
        none.st_mode = S_IFREG | 0644;
        auto opq = EntryOf(name + "/.wh..wh..opq", none);
        archive_entry_set_filetype(opq.get(), AE_IFREG);
        archive_entry_set_size(opq.get(), 0);
        if (archive_write_header(a.get(), opq.get()) != ARCHIVE_OK) {
          return Failed(a.get(), "cannot write " + name + "/.wh..wh..opq into " + out);
        }
      }
    }
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return Failed(a.get(), "cannot finish " + out);
  return Status();
}

StatusOr<std::vector<std::string>> ArchiveMemberNames(std::string const& path, std::size_t max) {
  std::unique_ptr<archive, ReadCloser> a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK) {
    return Status(StatusCode::kInvalidArgument, "not a tar archive: " + path);
  }
  std::vector<std::string> out;
  archive_entry* e = nullptr;
  while (out.size() < max) {
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      if (out.empty()) return Status(StatusCode::kInvalidArgument, "not a tar archive: " + path);
      break;
    }
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    while (name.rfind("./", 0) == 0) name.erase(0, 2);
    while (!name.empty() && name.front() == '/') name.erase(0, 1);
    if (!name.empty()) out.push_back(name);
    archive_read_data_skip(a.get());
  }
  return out;
}

}  // namespace bai::server
