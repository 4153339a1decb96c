// SPDX-License-Identifier: Apache-2.0
// Copies between local files and a running session's /home/work, on top of the file calls of
// SessionClient (upload in batches within the protocol's limits; downloads as tar archives,
// extracted without ever leaving the destination).
#include "bai/copy_rule.h"
#include "bai/session_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace bai {
namespace {

namespace fs = std::filesystem;
namespace p = protocol;

Status Local(std::string const& what, std::string const& path, int err) {
  return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kFailedPrecondition,
                what + " " + path + ": " + std::strerror(err));
}

StatusOr<std::string> ReadFile(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Local("cannot read", path, errno);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One local file to upload: where it is, where it goes.
struct Item {
  std::string local;
  std::string remote;
  std::int64_t size = 0;
};

// Opens the directory `rel` (components separated by '/') beneath `root_fd`, making it when
// `make`; never follows a symbolic link on the way. -1 with errno set on failure.
int OpenDirBeneath(int root_fd, std::string const& rel, bool make) {
  int fd = ::dup(root_fd);
  std::stringstream parts(rel);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (make && ::mkdirat(fd, part.c_str(), 0755) != 0 && errno != EEXIST) {
      int err = errno;
      ::close(fd);
      errno = err;
      return -1;
    }
    int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    ::close(fd);
    if (next < 0) {
      errno = err;
      return -1;
    }
    fd = next;
  }
  return fd;
}

// A member name split into safe components; an error for absolute names and "..".
StatusOr<std::string> SafeMemberName(std::string const& name) {
  if (name.empty() || name.front() == '/') {
    return Status(StatusCode::kDataLoss, "refused archive member '" + name + "' (absolute)");
  }
  std::string out;
  std::stringstream parts(name);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return Status(StatusCode::kDataLoss, "refused archive member '" + name + "' ('..')");
    }
    out = out.empty() ? part : out + "/" + part;
  }
  if (out.empty()) return Status(StatusCode::kDataLoss, "refused an unnamed archive member");
  return out;
}

// Writes one member beneath `root_fd` as `rel`: a temporary name, then rename.
Status WriteMember(int root_fd, std::string const& root, std::string const& rel,
                   p::TarMember const& m) {
  auto slash = rel.rfind('/');
  std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
  std::string leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
  int dir = OpenDirBeneath(root_fd, parent, true);
  if (dir < 0) return Local("cannot make directory", JoinPath(root, parent), errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{dir};
  if (m.type == p::TarType::kDirectory) {
    if (::mkdirat(dir, leaf.c_str(), (m.mode & 0777) | 0700) != 0 && errno != EEXIST) {
      return Local("cannot make directory", JoinPath(root, rel), errno);
    }
    return Status();
  }
  std::random_device rd;
  std::string tmp = "." + leaf.substr(0, 200) + ".bai-" + std::to_string(rd());
  if (m.type == p::TarType::kSymlink) {
    if (::symlinkat(m.link.c_str(), dir, tmp.c_str()) != 0) {
      return Local("cannot make link", JoinPath(root, rel), errno);
    }
  } else {
    int fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      (m.mode & 0777) | 0600);
    if (fd < 0) return Local("cannot write", JoinPath(root, rel), errno);
    std::size_t off = 0;
    while (off < m.data.size()) {
      ssize_t w = ::write(fd, m.data.data() + off, m.data.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        int err = w < 0 ? errno : ENOSPC;
        ::close(fd);
        ::unlinkat(dir, tmp.c_str(), 0);
        return Local("cannot write", JoinPath(root, rel), err);
      }
      off += static_cast<std::size_t>(w);
    }
    ::close(fd);
  }
  struct stat st {};
  if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    ::unlinkat(dir, tmp.c_str(), 0);
    return Local("cannot replace", JoinPath(root, rel), EISDIR);
  }
  if (::renameat(dir, tmp.c_str(), dir, leaf.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    return Local("cannot write", JoinPath(root, rel), err);
  }
  return Status();
}

}  // namespace

StatusOr<CopyReport> SessionClient::CopyToSession(std::string const& session,
                                                  std::vector<std::string> const& sources,
                                                  std::string const& destination,
                                                  bool recursive) const {
  std::string dst = destination.empty() ? "." : destination;
  // An existing directory takes the sources inside (a file or nothing: listing fails).
  PathKind kind =
      dst == "." || ListFiles(session, dst).ok() ? PathKind::kDirectory : PathKind::kMissing;
  std::vector<CopySource> placed;
  for (auto const& src : sources) placed.push_back({src, LocalPathKind(src)});
  auto targets = PlaceCopies(placed, dst, kind, recursive);
  if (!targets.ok()) return targets.status();
  CopyReport report;
  std::vector<Item> items;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    auto const& src = sources[i];
    std::string const& top = (*targets)[i];
    std::error_code ec;
    if (placed[i].kind == PathKind::kDirectory) {
      for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        std::string rel = fs::relative(it->path(), src).generic_string();
        auto what = it->symlink_status();
        if (fs::is_directory(what)) continue;
        if (!fs::is_regular_file(what)) {
          report.skipped.push_back(it->path().string() +
                                   (fs::is_symlink(what) ? ": a symbolic link" : ": not a file"));
          continue;
        }
        items.push_back(
            {it->path().string(), JoinPath(top, rel), static_cast<std::int64_t>(it->file_size())});
      }
      if (ec) return Local("cannot read", src, ec.value());
    } else if (fs::is_regular_file(fs::status(src, ec))) {
      items.push_back({src, top, static_cast<std::int64_t>(fs::file_size(src, ec))});
    } else {
      return Status(StatusCode::kInvalidArgument, src + " is not a regular file");
    }
  }
  // Every file is checked before anything is sent.
  for (auto const& item : items) {
    if (item.size > p::kSessionUploadMaxFileBytes) {
      return Status(StatusCode::kInvalidArgument,
                    item.local + " has " + std::to_string(item.size) +
                        " bytes; a session takes files smaller than 1 MiB (put larger data in "
                        "a virtual folder and mount it)");
    }
  }
  for (std::size_t i = 0; i < items.size(); i += p::kSessionUploadMaxFiles) {
    std::vector<std::pair<std::string, std::string>> batch;
    for (std::size_t j = i; j < items.size() && j < i + p::kSessionUploadMaxFiles; ++j) {
      auto data = ReadFile(items[j].local);
      if (!data.ok()) return std::move(data).status();
      batch.emplace_back(items[j].remote, std::move(*data));
    }
    if (auto s = Upload(session, batch); !s.ok()) return s;
    for (auto const& [remote, data] : batch) {
      report.files += 1;
      report.bytes += static_cast<std::int64_t>(data.size());
      report.written.push_back(remote);
    }
  }
  return report;
}

StatusOr<CopyReport> SessionClient::CopyFromSession(std::string const& session,
                                                    std::vector<std::string> const& sources,
                                                    std::string const& destination,
                                                    bool recursive) const {
  if (sources.empty()) return Status(StatusCode::kInvalidArgument, "nothing to copy");
  std::string dst = destination.empty() ? "." : destination;
  // Everything arrives first (each archive is bounded): what a source is, file or directory,
  // is known from its archive, and nothing is written before every source was found.
  std::vector<std::vector<p::TarMember>> archives;
  std::vector<CopySource> placed;
  for (std::size_t i = 0; i < sources.size(); i += p::kSessionDownloadMaxFiles) {
    std::vector<std::string> batch(
        sources.begin() + static_cast<std::ptrdiff_t>(i),
        sources.begin() +
            static_cast<std::ptrdiff_t>(std::min(sources.size(), i + p::kSessionDownloadMaxFiles)));
    auto got = Download(session, batch);
    if (!got.ok()) return std::move(got).status();
    for (std::size_t k = 0; k < got->size(); ++k) {
      auto members = p::ReadTar((*got)[k]);
      if (!members.ok()) return std::move(members).status();
      bool dir = !members->empty() && members->front().type == p::TarType::kDirectory;
      placed.push_back({batch[k], dir ? PathKind::kDirectory : PathKind::kFile});
      archives.push_back(std::move(*members));
    }
  }
  PathKind kind = LocalPathKind(dst);
  auto targets = PlaceCopies(placed, dst, kind, recursive);
  if (!targets.ok()) return targets.status();
  bool into = CopiesInto(dst, kind);
  std::error_code ec;
  if (into && kind == PathKind::kMissing && !fs::create_directories(dst, ec) && ec) {
    return Local("cannot make", dst, ec.value());
  }
  // Members are written beneath this directory: `dst` itself, or the one that will hold it.
  std::string root = into ? dst : fs::path(dst).parent_path().string();
  if (root.empty()) root = ".";
  int root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return Local("cannot open", root, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{root_fd};
  CopyReport report;
  for (auto const& members : archives) {
    for (auto const& m : members) {
      auto name = SafeMemberName(m.name);
      if (!name.ok()) return std::move(name).status();
      std::string rel = *name;
      if (!into) {
        // The archive's top becomes the destination's name.
        auto slash = rel.find('/');
        rel = LastName(dst) + (slash == std::string::npos ? "" : rel.substr(slash));
      }
      if (auto s = WriteMember(root_fd, root, rel, m); !s.ok()) return s;
      if (m.type == p::TarType::kDirectory) continue;
      report.files += 1;
      report.bytes += static_cast<std::int64_t>(m.data.size());
      report.written.push_back(JoinPath(root, rel));
    }
  }
  return report;
}

}  // namespace bai
