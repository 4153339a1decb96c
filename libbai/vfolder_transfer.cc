// SPDX-License-Identifier: Apache-2.0
// VFolderClient's transfers. Uploads: request-upload, then tus 1.0 core against the storage
// proxy (HEAD for the offset, PATCH chunks with an sha256 Upload-Checksum), several files at once;
// a journal file per unfinished upload remembers which local file it came from, so a later
// process resumes it only for the same file (else it asks bai's manager to start it again;
// Backend.AI starts a new upload for every request-upload).
// Downloads: request-download, HEAD (Backend.AI: GET bytes=0-0) to learn the size and ETag, GET
// with Range/If-Range into a `.bai-part` file renamed when complete; a dropped connection
// resumes where the file ends.
#include "bai/copy_rule.h"
#include "bai/protocol/tus_wire.h"
#include "bai/vfolder_client.h"

#include "libbai/util/url.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

namespace bai {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Consecutive failures a file survives (any progress starts the count again): a transfer resumes
// where it stands, so it outlasts more drops than one request (Options::retry); the waits are
// the client's own (Client::WaitToRetry: Options::backoff, Options::sleep).
constexpr int kAttempts = 20;

std::vector<CopySource> LocalSources(std::vector<std::string> const& paths) {
  std::vector<CopySource> sources;
  for (auto const& p : paths) sources.push_back({p, LocalPathKind(p)});
  return sources;
}

Status Local(std::string const& what, std::string const& path, int err) {
  return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kFailedPrecondition,
                what + " " + path + ": " + std::strerror(err));
}

std::string Hex(std::string const& raw) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool Cancelled(TransferOptions const& o) { return o.cancel && o.cancel->load(); }

template <class Request>
StatusOr<protocol::TransferTicket> Ticket(Client const& client, std::string const& folder,
                                          std::string const& op, Request const& request) {
  ApiRequest r("POST", "/folders/" + internal::EncodeSegment(folder) + "/" + op);
  r.body = protocol::EncodeVFolderRequest(request);
  auto response = client.Send(r);
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return protocol::DecodeTransferTicket(response->body);
}

std::string JournalDir(TransferOptions const& o) {
  if (!o.journal_dir.empty()) return o.journal_dir;
  if (char const* x = std::getenv("XDG_STATE_HOME"); x && *x)
    return std::string(x) + "/bai/uploads";
  if (char const* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.local/state/bai/uploads";
  return "/tmp/bai-uploads-" + std::to_string(::getuid());
}

// One local file and where it goes.
struct UploadItem {
  std::string local, remote;
  struct stat st {};
};

// What identifies a local file for resuming: the same path, size and modification time.
json Identity(UploadItem const& item) {
  return {{"local", item.local},
          {"size", static_cast<std::int64_t>(item.st.st_size)},
          {"mtime_ns", static_cast<std::int64_t>(item.st.st_mtim.tv_sec) * 1000000000 +
                           item.st.st_mtim.tv_nsec},
          {"ino", static_cast<std::int64_t>(item.st.st_ino)}};
}

// `want` bytes of a file from `offset` (fewer if it is shorter now) and their sha256 for the
// tus checksum header.
struct Chunk {
  std::int64_t offset = -1;
  std::string data;
  std::string checksum;  ///< its Upload-Checksum value
};

Chunk ReadChunk(int fd, std::int64_t offset, std::size_t want) {
  Chunk c;
  c.offset = offset;
  c.data.resize(want);
  std::size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd, c.data.data() + got, want - got, static_cast<off_t>(offset) + got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  c.data.resize(got);
  c.checksum = protocol::tus::ChunkChecksum(c.data);
  return c;
}

// Where a download stands before its GET: the file's size and ETag, and whether the `have`
// bytes of a part made from `etag` can be kept. bai's storage proxy answers HEAD with
// Range/If-Range; Backend.AI's (22.03 to 26.x) routes /download for GET only (HEAD is 405), and
// its aiohttp 3.8 honours a Range whatever the If-Range ETag says, so there the probe is
// `GET Range: bytes=0-0` and the ETags are compared here.
struct DownloadProbe {
  std::int64_t total = 0;
  std::string etag;
  bool resume = false;
};

StatusOr<DownloadProbe> ProbeDownload(Client const& client, std::string const& target,
                                      std::string const& etag, std::int64_t have) {
  DownloadProbe out;
  // A dropped connection or a 5xx is worth another try (kUnavailable); anything else is the
  // answer.
  auto send = [&client, &target](ApiRequest const& request) -> StatusOr<ApiResponse> {
    auto r = client.SendToUrl(target, request);
    if (!r.ok()) return Status(StatusCode::kUnavailable, r.status().message());
    if (r->status >= 500)
      return Status(StatusCode::kUnavailable, "HTTP " + std::to_string(r->status));
    return r;
  };
  ApiRequest head("HEAD", "/");
  if (have > 0 && !etag.empty()) {
    head.headers = {{"Range", "bytes=" + std::to_string(have) + "-"}, {"If-Range", etag}};
  }
  auto h = send(head);
  if (!h.ok()) return h.status();
  if (h->status != 405) {
    if (h->status == 416) {  // the part is already whole (or longer): start again
      head.headers.clear();
      h = send(head);
      if (!h.ok()) return h.status();
    }
    if (auto s = CheckResponse(*h); !s.ok()) return s;
    out.resume = h->status == 206;
    out.total = (out.resume ? have : 0) + std::stoll(h->Header("content-length").value_or("0"));
    out.etag = h->Header("etag").value_or("");
    return out;
  }
  ApiRequest get("GET", "/");
  get.headers = {{"Range", "bytes=0-0"}};
  auto g = send(get);
  if (!g.ok()) return g.status();
  if (g->status == 200) {  // no ranges at all: the whole body came
    out.total = static_cast<std::int64_t>(g->body.size());
  } else if (g->status == 206 || g->status == 416) {
    // "bytes 0-0/6", or "bytes */0" for an empty file
    auto range = g->Header("content-range").value_or("");
    auto slash = range.rfind('/');
    if (slash == std::string::npos || slash + 1 >= range.size()) {
      return Status(StatusCode::kInternal,
                    "the storage proxy's Content-Range is unreadable: " + range);
    }
    out.total = std::stoll(range.substr(slash + 1));
  } else if (auto s = CheckResponse(*g); !s.ok()) {
    return s;
  }
  out.etag = g->Header("etag").value_or("");
  out.resume = have > 0 && have < out.total && !etag.empty() && out.etag == etag;
  return out;
}

class Uploader {
 public:
  Uploader(Client const& client, std::string folder, TransferOptions const& options)
      : client_(client), folder_(std::move(folder)), options_(options) {}

  Status One(UploadItem const& item, TransferReport& report) {
    std::int64_t size = item.st.st_size;
    std::string journal =
        JournalDir(options_) + "/" + Hex(protocol::tus::Sha256(JournalKey(item))) + ".json";
    bool same_file = false;
    {
      std::ifstream in(journal);
      std::stringstream text;
      text << in.rdbuf();
      auto j = json::parse(text.str(), nullptr, false);
      same_file = in && !j.is_discarded() && j == Identity(item);
    }
    if (size > 0) {
      std::error_code ec;
      fs::create_directories(fs::path(journal).parent_path(), ec);
      std::ofstream(journal) << Identity(item).dump();
    }
    protocol::VFolderUploadRequest ask{item.remote, size, std::nullopt};
    // bai's storage proxy keeps an upload across requests and starts it again when asked, and
    // makes an empty file at once; Backend.AI's refuses the key (every request-upload is a new
    // upload there) and makes a file only on a PATCH.
    auto caps = client_.server();
    bool bai_proxy = caps.ok() && caps->has("bai-extensions");
    if (bai_proxy) ask.restart = !same_file;
    auto ticket = Ticket(client_, folder_, "request-upload", ask);
    if (!ticket.ok()) return ticket.status();
    std::string target = ticket->Target();
    if (size == 0 && !bai_proxy) {
      ApiRequest patch("PATCH", "/");
      patch.content_type = protocol::tus::kChunkType;
      patch.headers = {{protocol::tus::kResumableHeader, protocol::tus::kVersion},
                       {protocol::tus::kOffsetHeader, "0"}};
      auto p = client_.SendToUrl(target, patch);
      if (!p.ok()) return p.status();
      if (auto s = CheckResponse(*p); !s.ok()) return s;
    }
    int fd = ::open(item.local.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Local("cannot read", item.local, errno);
    // A chunk, or the whole file when smaller (a 16 MiB buffer per small file costs more than
    // sending it).
    auto const chunk =
        static_cast<std::size_t>(std::max<std::int64_t>(std::min(options_.chunk_bytes, size), 1));
    // The next chunk is read and hashed while this one is on the wire.
    std::future<Chunk> ahead;
    Status result;
    // A restarted upload is fresh (offset 0): no need to ask where it stands.
    std::int64_t offset = same_file ? -1 : 0, sent = 0;
    bool first = same_file;
    for (int attempt = 0; size > 0;) {
      if (Cancelled(options_)) {
        result = Status(StatusCode::kCancelled, "cancelled");
        break;
      }
      if (offset < 0) {
        ApiRequest head("HEAD", "/");
        head.headers = {{protocol::tus::kResumableHeader, protocol::tus::kVersion}};
        auto h = client_.SendToUrl(target, head);
        if (!h.ok() || h->status >= 500) {
          if (++attempt >= kAttempts) {
            result = h.ok() ? CheckResponse(*h) : h.status();
            break;
          }
          client_.WaitToRetry(attempt);
          continue;
        }
        if (auto s = CheckResponse(*h); !s.ok()) {
          result = s;
          break;
        }
        offset = std::stoll(h->Header(protocol::tus::kOffsetHeader).value_or("0"));
        if (first && offset > 0) {
          std::lock_guard<std::mutex> lock(mu_);
          ++report.resumed;
        }
        first = false;
        if (offset >= size) break;
      }
      auto want = static_cast<std::size_t>(std::min<std::int64_t>(chunk, size - offset));
      Chunk c = ahead.valid() ? ahead.get() : Chunk{};
      if (c.offset != offset || c.data.size() != want) c = ReadChunk(fd, offset, want);
      if (c.data.size() < want) {
        result = Status(StatusCode::kFailedPrecondition,
                        item.local + " changed while it was uploaded (shorter than " +
                            std::to_string(size) + " bytes)");
        break;
      }
      ApiRequest patch("PATCH", "/");
      patch.content_type = protocol::tus::kChunkType;
      patch.headers = {{protocol::tus::kResumableHeader, protocol::tus::kVersion},
                       {protocol::tus::kOffsetHeader, std::to_string(offset)},
                       {protocol::tus::kChecksumHeader, c.checksum}};
      patch.body = std::move(c.data);
      if (auto next = offset + static_cast<std::int64_t>(want); next < size) {
        auto next_want = static_cast<std::size_t>(std::min<std::int64_t>(chunk, size - next));
        ahead = std::async(std::launch::async,
                           [fd, next, next_want] { return ReadChunk(fd, next, next_want); });
      }
      auto p = client_.SendToUrl(target, patch);
      if (!p.ok() || p->status >= 500 || p->status == 409 || p->status == 460) {
        // Dropped, refused for now, or out of step: ask where the upload stands and go on.
        if (++attempt >= kAttempts) {
          result = p.ok() ? CheckResponse(*p) : p.status();
          break;
        }
        offset = -1;
        client_.WaitToRetry(attempt);
        continue;
      }
      if (auto s = CheckResponse(*p); !s.ok()) {
        result = s;
        break;
      }
      attempt = 0;
      std::int64_t now = std::stoll(p->Header("upload-offset").value_or("0"));
      sent += now - offset;
      offset = now;
      if (options_.progress) options_.progress({item.remote, offset, size, offset >= size});
      if (offset >= size) break;
    }
    if (ahead.valid()) ahead.wait();  // it reads `fd`
    ::close(fd);
    if (!result.ok()) return result;
    std::error_code ec;
    fs::remove(journal, ec);
    if (size == 0 && options_.progress) options_.progress({item.remote, 0, 0, true});
    std::lock_guard<std::mutex> lock(mu_);
    report.files += 1;
    report.bytes += sent;
    report.written.push_back(item.remote);
    return Status();
  }

 private:
  std::string JournalKey(UploadItem const& item) const {
    return client_.options().endpoints.front() + "\n" + folder_ + "\n" + item.remote + "\n" +
           std::to_string(item.st.st_size);
  }

  Client const& client_;
  std::string folder_;
  TransferOptions const& options_;
  std::mutex mu_;
};

// Runs `work(i)` for i in [0, n) on up to `parallel` threads; the first error wins and stops
// the rest from starting.
Status RunParallel(std::size_t n, int parallel, std::function<Status(std::size_t)> const& work) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  Status first;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (std::size_t i; !failed && (i = next++) < n;) {
      auto s = work(i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  int count =
      static_cast<int>(std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, parallel))));
  for (int t = 1; t < count; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return first;
}

// A remote name from a listing that may become a local one: one component, not "." or "..".
bool SafeName(std::string const& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

struct DownloadItem {
  std::string remote, local;
};

}  // namespace

StatusOr<TransferReport> VFolderClient::Upload(std::string const& folder,
                                               std::vector<std::string> const& local_paths,
                                               TransferOptions const& options) const {
  auto targets = PlaceCopies(LocalSources(local_paths), options.remote_dir, PathKind::kDirectory,
                             options.recursive);
  if (!targets.ok()) return targets.status();
  return UploadPlaced(folder, local_paths, *targets, options);
}

StatusOr<TransferReport> VFolderClient::CopyToFolder(std::string const& folder,
                                                     std::vector<std::string> const& local_paths,
                                                     std::string const& destination,
                                                     TransferOptions const& options) const {
  std::string dst = destination;
  while (!dst.empty() && dst.front() == '/') dst.erase(0, 1);
  auto kind = RemoteKind(folder, dst);
  if (!kind.ok()) return kind.status();
  auto targets = PlaceCopies(LocalSources(local_paths), dst, *kind, options.recursive);
  if (!targets.ok()) return targets.status();
  if (*kind == PathKind::kMissing && !dst.empty() && dst.back() == '/') {
    if (auto s = Mkdir(folder, dst, true, true); !s.ok()) return s;
  }
  return UploadPlaced(folder, local_paths, *targets, options);
}

StatusOr<TransferReport> VFolderClient::UploadPlaced(std::string const& folder,
                                                     std::vector<std::string> const& local_paths,
                                                     std::vector<std::string> const& targets,
                                                     TransferOptions const& options) const {
  std::vector<UploadItem> items;
  std::vector<std::string> dirs;
  // Every source is looked at before any byte goes.
  for (std::size_t i = 0; i < local_paths.size(); ++i) {
    auto const& src = local_paths[i];
    struct stat st {};
    if (::stat(src.c_str(), &st) != 0) return Local("cannot read", src, errno);
    std::string const& remote = targets[i];
    if (S_ISREG(st.st_mode)) {
      items.push_back({src, remote, st});
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      return Status(StatusCode::kInvalidArgument, src + " is not a regular file or a directory");
    }
    dirs.push_back(remote);
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      auto rel = fs::relative(it->path(), src, ec).generic_string();
      struct stat est {};
      if (::lstat(it->path().c_str(), &est) != 0) return Local("cannot read", it->path(), errno);
      if (S_ISDIR(est.st_mode)) {
        dirs.push_back(JoinPath(remote, rel));
      } else if (S_ISREG(est.st_mode)) {
        items.push_back({it->path().string(), JoinPath(remote, rel), est});
      }  // links and special files are not uploaded
    }
    if (ec) return Local("cannot read", src, ec.value());
  }
  for (auto const& d : dirs) {
    if (auto s = Mkdir(folder, d, true, true); !s.ok()) return s;
  }
  TransferReport report;
  Uploader uploader(client_, folder, options);
  auto s = RunParallel(items.size(), options.parallel,
                       [&](std::size_t i) { return uploader.One(items[i], report); });
  if (!s.ok()) return s;
  std::sort(report.written.begin(), report.written.end());
  return report;
}

StatusOr<PathKind> VFolderClient::RemoteKind(std::string const& folder,
                                             std::string const& path) const {
  std::string p = path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  if (p.empty() || p == ".") return PathKind::kDirectory;
  auto slash = p.rfind('/');
  auto list = Files(folder, slash == std::string::npos ? "" : p.substr(0, slash));
  if (!list.ok()) {
    if (list.status().code() == StatusCode::kNotFound) return PathKind::kMissing;
    return list.status();
  }
  std::string name = LastName(p);
  for (auto const& f : *list) {
    if (f.name == name) return f.IsDirectory() ? PathKind::kDirectory : PathKind::kFile;
  }
  return PathKind::kMissing;
}

StatusOr<std::vector<CopySource>> VFolderClient::RemoteSources(
    std::string const& folder, std::vector<std::string> const& remote_paths) const {
  std::vector<CopySource> sources;
  for (auto const& src : remote_paths) {
    std::string path = src;
    while (!path.empty() && path.back() == '/') path.pop_back();
    while (!path.empty() && path.front() == '/') path.erase(0, 1);
    if (path.empty() || !SafeName(LastName(path))) {
      return Status(StatusCode::kInvalidArgument, "name a file or directory in the folder");
    }
    auto kind = RemoteKind(folder, path);
    if (!kind.ok()) return kind.status();
    if (*kind == PathKind::kMissing) {
      return Status(StatusCode::kNotFound, "no " + path + " in " + folder);
    }
    sources.push_back({path, *kind});
  }
  return sources;
}

StatusOr<TransferReport> VFolderClient::Download(std::string const& folder,
                                                 std::vector<std::string> const& remote_paths,
                                                 std::string const& local_dir,
                                                 TransferOptions const& options) const {
  auto sources = RemoteSources(folder, remote_paths);
  if (!sources.ok()) return sources.status();
  auto targets = PlaceCopies(*sources, local_dir, PathKind::kDirectory, options.recursive);
  if (!targets.ok()) return targets.status();
  return DownloadPlaced(folder, *sources, *targets, local_dir, options);
}

StatusOr<TransferReport> VFolderClient::CopyFromFolder(std::string const& folder,
                                                       std::vector<std::string> const& remote_paths,
                                                       std::string const& destination,
                                                       TransferOptions const& options) const {
  auto sources = RemoteSources(folder, remote_paths);
  if (!sources.ok()) return sources.status();
  std::string dst = destination.empty() ? "." : destination;
  PathKind kind = LocalPathKind(dst);
  auto targets = PlaceCopies(*sources, dst, kind, options.recursive);
  if (!targets.ok()) return targets.status();
  std::string make = CopiesInto(dst, kind) ? dst : "";
  if (make.empty()) {
    // A new name in a directory that must exist already (as for cp).
    std::string parent = fs::path(dst).parent_path().string();
    if (!parent.empty() && LocalPathKind(parent) != PathKind::kDirectory) {
      return Status(StatusCode::kNotFound, "no directory " + parent + " to copy into");
    }
  }
  return DownloadPlaced(folder, *sources, *targets, make, options);
}

StatusOr<TransferReport> VFolderClient::DownloadPlaced(std::string const& folder,
                                                       std::vector<CopySource> const& sources,
                                                       std::vector<std::string> const& targets,
                                                       std::string const& make_dir,
                                                       TransferOptions const& options) const {
  std::error_code ec;
  std::vector<DownloadItem> items;
  std::vector<std::pair<std::string, std::int64_t>> sizes;
  // What each path is: found in its parent's listing.
  std::function<Status(std::string const&, std::string const&)> add_dir;
  std::vector<std::string> local_dirs;
  add_dir = [&](std::string const& remote, std::string const& local) -> Status {
    local_dirs.push_back(local);
    auto list = Files(folder, remote);
    if (!list.ok()) return list.status();
    for (auto const& f : *list) {
      if (!SafeName(f.name)) {
        return Status(StatusCode::kInvalidArgument, "the server listed a bad name: " + f.name);
      }
      if (f.IsDirectory()) {
        if (auto s = add_dir(JoinPath(remote, f.name), JoinPath(local, f.name)); !s.ok()) return s;
      } else if (f.type == "FILE") {
        items.push_back({JoinPath(remote, f.name), JoinPath(local, f.name)});
      }
    }
    return Status();
  };
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].kind == PathKind::kDirectory) {
      if (auto s = add_dir(sources[i].path, targets[i]); !s.ok()) return s;
    } else {
      items.push_back({sources[i].path, targets[i]});
    }
  }
  // Made only once every source was found.
  if (!make_dir.empty()) {
    fs::create_directories(make_dir, ec);
    if (ec) return Local("cannot make", make_dir, ec.value());
  }
  for (auto const& d : local_dirs) {
    fs::create_directories(d, ec);
    if (ec) return Local("cannot make", d, ec.value());
  }
  TransferReport report;
  std::mutex mu;
  auto one = [&](std::size_t i) -> Status {
    auto const& item = items[i];
    std::string part = item.local + ".bai-part", meta = item.local + ".bai-part.json";
    std::int64_t sent = 0;
    bool counted_resume = false;
    for (int attempt = 0;; ++attempt) {
      if (Cancelled(options)) return Status(StatusCode::kCancelled, "cancelled");
      if (attempt >= kAttempts) {
        return Status(StatusCode::kUnavailable, "gave up downloading " + item.remote);
      }
      if (attempt > 0) client_.WaitToRetry(attempt);
      auto ticket = Ticket(client_, folder, "request-download",
                           protocol::VFolderDownloadRequest{item.remote});
      if (!ticket.ok()) return ticket.status();
      std::string target = ticket->Target();
      // What we have: a part file and the ETag it was made from.
      std::int64_t have = 0;
      std::string etag;
      struct stat pst {};
      if (::stat(part.c_str(), &pst) == 0) {
        std::ifstream in(meta);
        std::stringstream text;
        text << in.rdbuf();
        auto j = json::parse(text.str(), nullptr, false);
        if (j.is_object() && j.value("remote", "") == item.remote) {
          have = pst.st_size;
          etag = j.value("etag", "");
        }
      }
      // What the server has now: its size, its ETag, and whether the part can go on.
      auto probe = ProbeDownload(client_, target, have > 0 ? etag : std::string(), have);
      if (!probe.ok()) {
        if (probe.status().code() == StatusCode::kUnavailable) continue;
        return probe.status();
      }
      bool partial = probe->resume;
      if (!partial) have = 0;
      if (partial && !counted_resume) {
        std::lock_guard<std::mutex> lock(mu);
        ++report.resumed;
        counted_resume = true;
      }
      // The part goes on only from the bytes and ETag the probe agreed to.
      std::vector<std::pair<std::string, std::string>> range;
      if (partial) {
        range = {{"Range", "bytes=" + std::to_string(have) + "-"}, {"If-Range", probe->etag}};
      }
      std::int64_t total = probe->total;
      {
        std::ofstream out(meta, std::ios::trunc);
        out << json{{"remote", item.remote}, {"etag", probe->etag}}.dump();
      }
      int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (partial ? 0 : O_TRUNC), 0644);
      if (fd < 0) return Local("cannot write", part, errno);
      std::int64_t at = have;
      int werr = 0;
      ApiRequest get("GET", "/");
      get.headers = range;
      auto g = client_.SendToUrlStreaming(target, get, [&](std::string_view data) {
        if (data.empty()) return !Cancelled(options);
        std::size_t off = 0;
        while (off < data.size()) {
          ssize_t w = ::pwrite(fd, data.data() + off, data.size() - off, static_cast<off_t>(at));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            werr = w < 0 ? errno : ENOSPC;
            return false;
          }
          off += static_cast<std::size_t>(w);
          at += w;
        }
        sent += static_cast<std::int64_t>(data.size());
        if (options.progress) options.progress({item.local, at, total, false});
        return !Cancelled(options);
      });
      ::close(fd);
      if (werr) return Local("cannot write", part, werr);
      if (!g.ok()) continue;  // dropped: resume from what arrived
      auto now_etag = g->Header("etag");
      bool same = !now_etag || *now_etag == probe->etag;
      if (g->status != (partial ? 206 : 200) || (partial && !same)) {
        // Not the bytes the part was waiting for (the file changed between the probe and the
        // GET): what was written is wrong, so start this file again.
        if (g->status == 200 || g->status == 206) {
          fs::remove(part, ec);
          fs::remove(meta, ec);
          continue;
        }
        if (g->status >= 500) continue;
        return CheckResponse(*g);
      }
      if (at != total) continue;  // ended early (or the file changed): ask again
      if (::rename(part.c_str(), item.local.c_str()) != 0) {
        return Local("cannot write", item.local, errno);
      }
      fs::remove(meta, ec);
      if (options.progress) options.progress({item.local, total, total, true});
      std::lock_guard<std::mutex> lock(mu);
      report.files += 1;
      report.bytes += sent;
      report.written.push_back(item.local);
      return Status();
    }
  };
  auto s = RunParallel(items.size(), options.parallel, one);
  if (!s.ok()) return s;
  std::sort(report.written.begin(), report.written.end());
  return report;
}

}  // namespace bai
