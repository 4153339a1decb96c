// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/exec/process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace bai::server {

ProcessResult RunProcess(std::vector<std::string> const& argv, ProcessOptions const& options) {
  ProcessResult result;
  if (argv.empty()) return result;
  int out[2] = {-1, -1}, in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) return result;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  if (options.capture) {
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (options.merge_stderr) posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  } else {
    std::string path = options.log_path.empty() ? "/dev/null" : options.log_path;
    posix_spawn_file_actions_addopen(&fa, 1, path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(in[0]);
  if (rc != 0) {
    close(out[0]);
    close(in[1]);
    result.output = "cannot run " + argv[0];
    return result;
  }
  // Small inputs only (configs, state): a write that would block is not expected.
  std::size_t off = 0;
  while (off < options.stdin_data.size()) {
    ssize_t w = write(in[1], options.stdin_data.data() + off, options.stdin_data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += static_cast<std::size_t>(w);
  }
  close(in[1]);
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  char buf[16384];
  bool open = true;
  while (open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t r = read(out[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      open = false;
    else if (result.output.size() < (16u << 20))
      result.output.append(buf, static_cast<std::size_t>(r));
  }
  close(out[0]);
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (!result.timed_out && std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
    }
    usleep(1000);
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

std::string FindSystemTool(char const* name) {
  for (char const* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    std::string path = std::string(dir) + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

Status RunTool(std::vector<std::string> const& argv, std::chrono::seconds timeout) {
  ProcessOptions o;
  o.timeout = timeout;
  auto r = RunProcess(argv, o);
  if (r.exit_code == 0) return Status();
  std::string line;
  for (auto const& a : argv) line += (line.empty() ? "" : " ") + a;
  return Status(StatusCode::kInternal,
                line + " (exit " + std::to_string(r.exit_code) + "): " + r.output);
}

}  // namespace bai::server
