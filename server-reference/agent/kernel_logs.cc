// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/kernel_logs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace bai::agent {

namespace fs = std::filesystem;
using server::agent_protocol::LogsReply;
using server::agent_protocol::OutputChunk;

namespace {

char StreamCode(std::string const& stream) {
  return stream == "stderr" ? 'e' : stream == "notice" ? 'n' : 'o';
}

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

std::string MiB(std::int64_t bytes) { return std::to_string(bytes / (1 << 20)) + " MiB"; }

}  // namespace

KernelLogs::KernelLogs(std::string dir, std::int64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  fs::permissions(dir_, fs::perms::owner_all, ec);
}

std::string KernelLogs::Path(std::string const& session_id) const {
  return dir_ + "/" + session_id + ".log";
}

KernelLogs::State& KernelLogs::StateOf(std::string const& session_id) {
  auto it = states_.find(session_id);
  if (it != states_.end()) return it->second;
  State st;
  // A log from before a restart: its sizes from its records.
  std::ifstream in(Path(session_id), std::ios::binary);
  char stream;
  std::int64_t length;
  while (in && ReadHeader(in, stream, length)) {
    if (stream == 'n') {
      st.truncated = true;
    } else {
      st.stored += length;
    }
    in.seekg(length, std::ios::cur);
  }
  st.produced = st.stored;
  return states_.emplace(session_id, st).first->second;
}

KernelLogs::Appended KernelLogs::Append(std::string const& session_id, std::string const& stream,
                                        std::string const& data) {
  Appended out;
  if (!SafeId(session_id) || data.empty()) return out;
  std::lock_guard<std::mutex> lock(mu_);
  State& st = StateOf(session_id);
  out.offset = st.produced;
  st.produced += static_cast<std::int64_t>(data.size());
  st.ended = false;
  if (st.truncated) return out;
  int fd = ::open(Path(session_id).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return out;
  std::int64_t room = max_bytes_ - st.stored;
  std::size_t keep = static_cast<std::size_t>(std::min<std::int64_t>(room, data.size()));
  std::string record;
  if (keep > 0) {
    record = std::string(1, StreamCode(stream)) + " " + std::to_string(keep) + "\n";
    record.append(data, 0, keep);
    st.stored += static_cast<std::int64_t>(keep);
  }
  if (keep < data.size()) {
    std::string text = "[bai: output truncated: the log keeps the first " + MiB(max_bytes_) +
                       " of this kernel's output; later output is shown live but not stored]\n";
    record += "n " + std::to_string(text.size()) + "\n" + text;
    st.truncated = true;
    out.notice = OutputChunk{"notice", text};
  }
  (void)WriteAll(fd, record);
  ::close(fd);
  return out;
}

StatusOr<LogsReply> KernelLogs::Read(std::string const& session_id, std::int64_t offset,
                                     std::int64_t limit) {
  if (!SafeId(session_id)) return Status(StatusCode::kNotFound, "no log of that session here");
  std::ifstream in(Path(session_id), std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "no log of that session here");
  LogsReply out;
  out.ok = true;
  out.offset = offset;
  {
    std::lock_guard<std::mutex> lock(mu_);
    State& st = StateOf(session_id);
    out.size = st.stored;
    out.truncated = st.truncated;
    out.ended = st.ended;
  }
  std::int64_t pos = 0;
  std::int64_t taken = 0;
  char stream;
  std::int64_t length;
  auto add = [&out](char code, std::string data) {
    std::string name = StreamName(code);
    if (!out.chunks.empty() && out.chunks.back().stream == name && name != "notice") {
      out.chunks.back().data += data;
    } else {
      out.chunks.push_back({name, std::move(data)});
    }
  };
  while (taken < limit && ReadHeader(in, stream, length)) {
    if (stream == 'n' || pos + length <= offset) {
      if (stream == 'n' && pos >= offset) {
        std::string text(static_cast<std::size_t>(length), '\0');
        if (!in.read(text.data(), length)) break;
        add(stream, std::move(text));
      } else {
        in.seekg(length, std::ios::cur);
        if (stream != 'n') pos += length;
      }
      continue;
    }
    std::int64_t skip = std::max<std::int64_t>(offset - pos, 0);
    std::int64_t take = std::min(length - skip, limit - taken);
    in.seekg(skip, std::ios::cur);
    std::string data(static_cast<std::size_t>(take), '\0');
    if (!in.read(data.data(), take)) break;  // a record still being written
    add(stream, std::move(data));
    taken += take;
    if (skip + take < length) break;
    pos += length;
  }
  return out;
}

void KernelLogs::MarkEnded(std::string const& session_id, std::chrono::hours keep) {
  std::lock_guard<std::mutex> lock(mu_);
  if (SafeId(session_id)) StateOf(session_id).ended = true;
  // Logs of kernels that ended long ago go (their sessions are history by then).
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (auto const& entry : fs::directory_iterator(dir_, ec)) {
    if (entry.path().extension() != ".log") continue;
    std::string id = entry.path().stem().string();
    auto it = states_.find(id);
    if (it != states_.end() && !it->second.ended) continue;
    auto age = now - fs::last_write_time(entry.path(), ec);
    if (!ec && age > keep) {
      fs::remove(entry.path(), ec);
      states_.erase(id);
    }
  }
}

}  // namespace bai::agent
