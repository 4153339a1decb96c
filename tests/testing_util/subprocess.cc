// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace bai::testing_util {

std::string ReadFileBytes(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteFileBytes(std::string const& path, std::string const& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

namespace {

// This process's environment with `env` applied: values set, empty values removed.
std::vector<std::string> MergedEnvironment(std::map<std::string, std::string> const& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto const& [k, v] : env) {
    if (v.empty()) {
      merged.erase(k);
    } else {
      merged[k] = v;
    }
  }
  std::vector<std::string> out;
  for (auto const& [k, v] : merged) out.push_back(k + "=" + v);
  return out;
}

// Strings as the NULL-terminated char* array that exec and posix_spawn take.
class CStrings {
 public:
  explicit CStrings(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (auto& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char* const* data() { return pointers_.data(); }
  char* operator[](std::size_t i) { return pointers_[i]; }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

}  // namespace

ProcessResult RunProcess(std::vector<std::string> const& argv,
                         std::map<std::string, std::string> const& env, std::string const& input) {
  CStrings envp(MergedEnvironment(env));
  CStrings argp(argv);

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC)) {
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProcessResult result;
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    result.err = std::string("spawn failed: ") + std::strerror(rc);
    return result;
  }
  std::size_t written = 0;
  if (input.empty()) ::close(in_pipe[1]);
  bool in_open = !input.empty();
  bool out_open = true, err_open = true;
  char buf[8192];
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    int out_i = -1, err_i = -1, in_i = -1;
    if (out_open) fds[out_i = n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[err_i = n++] = {err_pipe[0], POLLIN, 0};
    if (in_open) fds[in_i = n++] = {in_pipe[1], POLLOUT, 0};
    ::poll(fds, static_cast<nfds_t>(n), -1);
    if (in_i >= 0 && fds[in_i].revents) {
      auto w = ::write(in_pipe[1], input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<std::size_t>(w);
      if (w <= 0 || written == input.size()) {
        ::close(in_pipe[1]);
        in_open = false;
      }
    }
    for (auto [idx, fd, open, sink] : {std::tuple{out_i, out_pipe[0], &out_open, &result.out},
                                       std::tuple{err_i, err_pipe[0], &err_open, &result.err}}) {
      if (idx >= 0 && fds[idx].revents) {
        auto r = ::read(fd, buf, sizeof buf);
        if (r <= 0) {
          *open = false;
        } else {
          sink->append(buf, static_cast<std::size_t>(r));
        }
      }
    }
  }
  if (in_open) ::close(in_pipe[1]);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::map<std::string, std::string> ReadEnvFile(std::string const& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string BinPath(std::string const& name) {
  char const* dir = std::getenv("BAI_BIN");
  return std::string(dir ? dir : BAI_BIN_DIR) + "/" + name;
}

std::string DataPath(std::string const& name) {
  char const* dir = std::getenv("BAI_TEST_DATA");
  return std::string(dir ? dir : BAI_TEST_DATA_DIR) + "/" + name;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "bai-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace bai::testing_util

namespace bai::testing_util {

BackgroundProcess::BackgroundProcess(std::vector<std::string> const& argv,
                                     std::map<std::string, std::string> const& env) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  CStrings envp(MergedEnvironment(env));
  CStrings argp(argv);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    throw std::runtime_error(std::string("spawn failed: ") + std::strerror(rc));
  }
  pid_ = pid;
  out_fd_ = out_pipe[0];
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::string BackgroundProcess::WaitForLine(std::string const& needle, int timeout_ms) {
  char buf[4096];
  int waited = 0;
  while (waited < timeout_ms) {
    auto nl = pending_.find('\n');
    while (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (line.find(needle) != std::string::npos) return line;
      nl = pending_.find('\n');
    }
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      auto n = ::read(out_fd_, buf, sizeof buf);
      if (n <= 0) return "";
      pending_.append(buf, static_cast<std::size_t>(n));
      transcript_.append(buf, static_cast<std::size_t>(n));
      if (transcript_.size() > (128u << 10)) transcript_.erase(0, transcript_.size() - (64u << 10));
    } else {
      waited += 100;
    }
  }
  return "";
}

int BackgroundProcess::Stop(int signal, int timeout_ms) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    ::usleep(10000);
  }
  return -1;
}

}  // namespace bai::testing_util
