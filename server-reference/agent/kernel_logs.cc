// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/kernel_logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

namespace bai::agent {

namespace fs = std::filesystem;
using server::agent_protocol::LogsReply;

namespace {

char StreamCode(std::string const& stream) { return stream == "stderr" ? 'e' : 'o'; }

std::string StreamName(char code) {
  return code == 'e' ? "stderr" : code == 'n' ? "notice" : "stdout";
}

// Session ids come from the manager; only what a UUID is made of may become a file name.
bool SafeId(std::string const& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-')) {
      return false;
    }
  }
  return true;
}

bool WriteAll(int fd, std::string const& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// One record's header: "o 123\n"; false at the end or on a torn record.
bool ReadHeader(std::istream& in, char& stream, std::int64_t& length) {
  std::string line;
  if (!std::getline(in, line) || line.size() < 3 || line[1] != ' ') return false;
  stream = line[0];
  char* end = nullptr;
  length = std::strtoll(line.c_str() + 2, &end, 10);
  return end != nullptr && *end == '\0' && length >= 0;
}

std::string MiB(std::int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes / (1 << 20)) + " MiB"
                            : std::to_string(bytes) + " bytes";
}

std::string Header(std::string const& stream, std::size_t length) {
  return std::string(1, StreamCode(stream)) + " " + std::to_string(length) + "\n";
}

// A file's data bytes (and, for a tail segment, its start record); false if unreadable.
bool Scan(std::string const& path, bool segment, std::int64_t& start, std::int64_t& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char stream;
  std::int64_t length;
  start = 0;
  bytes = 0;
  if (segment && (!ReadHeader(in, stream, length) || stream != 's')) return false;
  if (segment) start = length;
  while (in && ReadHeader(in, stream, length)) {
    if (stream != 'n') bytes += length;  // 'n': a notice record of an older release
    in.seekg(length, std::ios::cur);
  }
  return true;
}

}  // namespace

KernelLogs::KernelLogs(std::string dir, std::int64_t max_bytes, std::int64_t budget_bytes)
    : dir_(std::move(dir)),
      head_max_(std::max<std::int64_t>(max_bytes / 2, 1)),
      segment_max_(std::max<std::int64_t>(max_bytes / 4, 1)),
      budget_(std::max<std::int64_t>(budget_bytes, 0)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  fs::permissions(dir_, fs::perms::owner_all, ec);
  if (budget_ == 0) return;
  // Logs of an earlier run count against the budget from the start: ended (a kernel that is
  // still running writes again, which says otherwise), in the order their files last changed.
  for (auto const& entry : fs::directory_iterator(dir_, ec)) {
    if (entry.path().extension() != ".log") continue;
    std::string id = entry.path().stem().string();
    if (!SafeId(id)) continue;
    State& st = StateOf(id);
    st.ended = true;
    auto changed = fs::last_write_time(entry.path(), ec);
    st.ended_at =
        ec ? 0
           : std::chrono::duration_cast<std::chrono::seconds>(changed.time_since_epoch()).count();
  }
}

namespace {

std::int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             fs::file_time_type::clock::now().time_since_epoch())
      .count();
}

}  // namespace

void KernelLogs::Remove(std::string const& session_id) {
  std::error_code ec;
  for (int i = -1; i < 2; ++i) fs::remove(Path(session_id, i), ec);
  auto it = states_.find(session_id);
  if (it == states_.end()) return;
  if (it->second.fd >= 0) ::close(it->second.fd);
  stored_ -= it->second.Stored();
  states_.erase(it);
}

void KernelLogs::KeepBudget(std::string const& writer) {
  if (budget_ == 0 || stored_ <= budget_) return;
  std::vector<std::pair<std::int64_t, std::string>> ended;
  for (auto const& [id, st] : states_) {
    if (st.ended && id != writer) ended.emplace_back(st.ended_at, id);
  }
  std::sort(ended.begin(), ended.end());
  for (auto const& [when, id] : ended) {
    if (stored_ <= budget_) return;
    Remove(id);
  }
  if (stored_ <= budget_) return;
  // Running kernels alone fill it: the one writing stores no more.
  State& st = states_.at(writer);
  st.lost = true;
  st.over_budget = true;
}

KernelLogs::~KernelLogs() {
  for (auto& [id, st] : states_) {
    if (st.fd >= 0) ::close(st.fd);
  }
}

std::string KernelLogs::Path(std::string const& session_id, int segment) const {
  return dir_ + "/" + session_id + (segment < 0 ? ".log" : ".tail" + std::to_string(segment));
}

KernelLogs::State& KernelLogs::StateOf(std::string const& session_id) {
  auto it = states_.find(session_id);
  if (it != states_.end()) return it->second;
  // A log from before a restart: its sizes from its records.
  State st;
  std::int64_t start = 0;
  (void)Scan(Path(session_id), false, start, st.head);
  st.produced = st.head;
  for (int i = 0; i < 2; ++i) {
    Segment& seg = st.tail[i];
    seg.valid = Scan(Path(session_id, i), true, seg.start, seg.bytes);
    if (seg.valid && (st.current < 0 || seg.start > st.tail[st.current].start)) st.current = i;
  }
  if (st.current >= 0) st.produced = st.tail[st.current].start + st.tail[st.current].bytes;
  stored_ += st.Stored();
  return states_.emplace(session_id, st).first->second;
}

bool KernelLogs::Write(State& st, std::string const& record) {
  if (st.lost || st.fd < 0) return false;
  off_t before = ::lseek(st.fd, 0, SEEK_END);
  if (WriteAll(st.fd, record)) return true;
  // A full disk: the torn record goes, and nothing more is stored (Read says so).
  if (before >= 0) (void)::ftruncate(st.fd, before);
  st.lost = true;
  return false;
}

bool KernelLogs::StartSegment(State& st, std::string const& session_id, int index) {
  if (st.fd >= 0) ::close(st.fd);
  st.fd = ::open(Path(session_id, index).c_str(),
                 O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  stored_ -= st.tail[index].valid ? st.tail[index].bytes : 0;  // the segment starts empty
  st.tail[index] = Segment{true, st.produced, 0};
  st.current = index;
  if (st.fd < 0) st.lost = true;
  return Write(st, "s " + std::to_string(st.produced) + "\n");
}

std::int64_t KernelLogs::Append(std::string const& session_id, std::string const& stream,
                                std::string const& data) {
  if (!SafeId(session_id) || data.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  State& st = StateOf(session_id);
  std::int64_t const offset = st.produced;
  st.ended = false;
  std::size_t at = 0;
  while (at < data.size() && !st.lost) {
    if (st.fd < 0) {
      std::string path = st.current < 0 ? Path(session_id) : Path(session_id, st.current);
      st.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (st.fd < 0) {
        st.lost = true;
        break;
      }
    }
    std::int64_t room =
        st.current < 0 ? head_max_ - st.head : segment_max_ - st.tail[st.current].bytes;
    if (room <= 0) {
      // The head is full: the tail begins; a tail segment is full: the other one continues.
      if (!StartSegment(st, session_id, st.current < 0 ? 0 : 1 - st.current)) break;
      continue;
    }
    std::size_t take = static_cast<std::size_t>(std::min<std::int64_t>(room, data.size() - at));
    std::string record = Header(stream, take);
    record.append(data, at, take);
    if (!Write(st, record)) break;
    (st.current < 0 ? st.head : st.tail[st.current].bytes) += static_cast<std::int64_t>(take);
    stored_ += static_cast<std::int64_t>(take);
    st.produced += static_cast<std::int64_t>(take);
    at += take;
  }
  st.produced = offset + static_cast<std::int64_t>(data.size());
  KeepBudget(session_id);
  return offset;
}

StatusOr<LogsReply> KernelLogs::Read(std::string const& session_id, std::int64_t offset,
                                     std::int64_t limit) {
  if (!SafeId(session_id) || (!fs::exists(Path(session_id)) && !fs::exists(Path(session_id, 0)))) {
    return Status(StatusCode::kNotFound, "no log of that session here");
  }
  // Held while reading: a tail segment may be emptied and rewritten by Append meanwhile.
  std::lock_guard<std::mutex> lock(mu_);
  State& st = StateOf(session_id);
  LogsReply out;
  out.ok = true;
  out.offset = offset;
  out.size = st.produced;
  out.ended = st.ended;
  // The pieces in offset order: the head, then the tail's segments, older first.
  struct Piece {
    std::string path;
    bool segment;
    std::int64_t start;
    std::int64_t bytes;
  };
  std::vector<Piece> pieces{{Path(session_id), false, 0, st.head}};
  if (st.current >= 0) {
    int older = 1 - st.current;
    if (st.tail[older].valid) {
      pieces.push_back({Path(session_id, older), true, st.tail[older].start, st.tail[older].bytes});
    }
    Segment const& cur = st.tail[st.current];
    pieces.push_back({Path(session_id, st.current), true, cur.start, cur.bytes});
  }
  std::int64_t kept_end = pieces.back().start + pieces.back().bytes;
  std::int64_t gap = pieces.size() > 1 ? pieces[1].start - st.head : 0;
  out.truncated = gap > 0 || st.lost;
  auto notice = [&](std::string text) { out.chunks.push_back({"notice", std::move(text)}); };
  Piece const* piece = nullptr;
  for (auto const& p : pieces) {
    if (p.bytes > 0 && p.start + p.bytes > offset) {
      piece = &p;
      break;
    }
  }
  if (piece == nullptr) {
    if (st.lost && offset <= kept_end) {
      notice(st.over_budget
                 ? "[bai: running kernels filled this agent's log space (" + MiB(budget_) +
                       "): output after " + std::to_string(kept_end) + " bytes was not stored]\n"
                 : "[bai: the log could not be written further (is the disk full?): output "
                   "after " +
                       std::to_string(kept_end) + " bytes was not stored]\n");
    }
    return out;
  }
  if (offset < piece->start) {
    notice("[bai: " + std::to_string(piece->start - st.head) +
           " bytes of output dropped here; the log keeps a kernel's first " + MiB(head_max_) +
           " and its last " + MiB(segment_max_) + " to " + MiB(2 * segment_max_) + "]\n");
    offset = piece->start;
    out.offset = offset;
  }
  std::ifstream in(piece->path, std::ios::binary);
  if (!in) return out;
  char stream;
  std::int64_t length;
  if (piece->segment && !ReadHeader(in, stream, length)) return out;  // its start record
  std::int64_t pos = piece->start;
  std::int64_t taken = 0;
  std::int64_t const end = piece->start + piece->bytes;
  auto add = [&out](char code, std::string data) {
    std::string name = StreamName(code);
    if (!out.chunks.empty() && out.chunks.back().stream == name && name != "notice") {
      out.chunks.back().data += data;
    } else {
      out.chunks.push_back({name, std::move(data)});
    }
  };
  while (taken < limit && pos < end && ReadHeader(in, stream, length)) {
    if (stream == 'n') {  // a notice record of an older release
      std::string text(static_cast<std::size_t>(length), '\0');
      if (!in.read(text.data(), length)) break;
      if (pos >= offset) add(stream, std::move(text));
      continue;
    }
    if (pos + length <= offset) {
      in.seekg(length, std::ios::cur);
      pos += length;
      continue;
    }
    std::int64_t skip = std::max<std::int64_t>(offset - pos, 0);
    std::int64_t take = std::min(length - skip, limit - taken);
    in.seekg(skip, std::ios::cur);
    std::string data(static_cast<std::size_t>(take), '\0');
    if (!in.read(data.data(), take)) break;
    add(stream, std::move(data));
    taken += take;
    if (skip + take < length) break;
    pos += length;
  }
  return out;
}

void KernelLogs::MarkEnded(std::string const& session_id, std::chrono::hours keep) {
  std::lock_guard<std::mutex> lock(mu_);
  if (SafeId(session_id)) {
    State& st = StateOf(session_id);
    st.ended = true;
    st.ended_at = NowSeconds();
    if (st.fd >= 0) ::close(st.fd);
    st.fd = -1;
  }
  // Logs of kernels that ended long ago go (their sessions are history by then).
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (auto const& entry : fs::directory_iterator(dir_, ec)) {
    if (entry.path().extension() != ".log") continue;
    std::string id = entry.path().stem().string();
    auto it = states_.find(id);
    if (it != states_.end() && !it->second.ended) continue;
    auto age = now - fs::last_write_time(entry.path(), ec);
    if (!ec && age > keep) Remove(id);
  }
}

}  // namespace bai::agent
