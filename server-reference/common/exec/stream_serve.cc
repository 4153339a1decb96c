// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/exec/stream_serve.h"

#include "bai/protocol/pty_wire.h"

#include "libbai/util/fd_io.h"
#include "server-reference/common/wire/runner_messages.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <pty.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace bai::server {
namespace {

namespace rp = runner_protocol;
using internal::WriteAll;
using protocol::PtyFrame;

constexpr std::size_t kBuffer = 256 << 10;  // per direction
constexpr std::size_t kMaxLine = 1 << 20;

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Reads up to the first '\n' within the deadline; what came after it stays in `rest`.
bool ReadLine(int fd, Clock::time_point deadline, std::string& line, std::string& rest) {
  std::string buf;
  while (true) {
    auto nl = buf.find('\n');
    if (nl != std::string::npos) {
      line = buf.substr(0, nl);
      rest = buf.substr(nl + 1);
      return true;
    }
    if (buf.size() > kMaxLine) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r <= 0) return false;
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(chunk, static_cast<std::size_t>(n));
  }
}

void Reply(int fd, bool ok, int code, std::string msg) {
  WriteAll(fd, rp::EncodeStreamReady({ok, code, std::move(msg), ""}) + "\n");
}

// Moves what `from` has into `to`'s buffer: false at the end of `from` (or an error).
bool ReadInto(int from, std::string& to) {
  char chunk[64 << 10];
  ssize_t n = read(from, chunk, std::min(sizeof chunk, kBuffer - std::min(kBuffer, to.size())));
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n == 0) return false;
  to.append(chunk, static_cast<std::size_t>(n));
  return true;
}

// Writes what it can of `buf` to `fd`; false on an error.
bool Flush(int fd, std::string& buf) {
  if (buf.empty()) return true;
  ssize_t n = send(fd, buf.data(), buf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0 && errno == ENOTSOCK) n = write(fd, buf.data(), buf.size());
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  buf.erase(0, static_cast<std::size_t>(n));
  return true;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// --- tcp ----------------------------------------------------------------------------------------

void ServeTcp(int fd, int port, bool pass_socket, std::string pending,
              StreamServeOptions const& o) {
  int peer = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int err = 0;
  if (connect(peer, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{peer, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(o.connect_timeout.count())) <= 0) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof err;
        getsockopt(peer, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
  }
  if (err != 0) {
    close(peer);
    if (err == ECONNREFUSED) {
      Reply(fd, false, 1013,
            "nothing listens on port " + std::to_string(port) + " in the kernel (yet)");
    } else {
      Reply(fd, false, 1011,
            "cannot connect to port " + std::to_string(port) + ": " + std::strerror(err));
    }
    close(fd);
    return;
  }
  if (pass_socket && pending.empty()) {
    // The agent relays the connection itself: one hop and two copies fewer per byte. The
    // socket goes with the answer's line; this process is done with it.
    rp::StreamReady ready;
    ready.ok = true;
    ready.passed = true;
    int flags = fcntl(peer, F_GETFL);
    fcntl(peer, F_SETFL, flags & ~O_NONBLOCK);
    internal::WriteAllWithDescriptor(fd, rp::EncodeStreamReady(ready) + "\n", peer);
    close(peer);
    close(fd);
    return;
  }
  Reply(fd, true, 0, "");
  SetNonBlocking(fd);
  std::string to_peer = std::move(pending), to_fd;
  bool fd_eof = false, peer_eof = false, fd_shut = false, peer_shut = false;
  while (true) {
    if (fd_eof && to_peer.empty() && !peer_shut) {
      shutdown(peer, SHUT_WR);
      peer_shut = true;
    }
    if (peer_eof && to_fd.empty() && !fd_shut) {
      shutdown(fd, SHUT_WR);
      fd_shut = true;
    }
    if (peer_shut && fd_shut) break;
    pollfd p[2] = {{fd, 0, 0}, {peer, 0, 0}};
    if (!fd_eof && to_peer.size() < kBuffer) p[0].events |= POLLIN;
    if (!to_fd.empty()) p[0].events |= POLLOUT;
    if (!peer_eof && to_fd.size() < kBuffer) p[1].events |= POLLIN;
    if (!to_peer.empty()) p[1].events |= POLLOUT;
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if ((p[0].revents & (POLLIN | POLLHUP)) && !fd_eof && !ReadInto(fd, to_peer)) fd_eof = true;
    if ((p[1].revents & (POLLIN | POLLHUP)) && !peer_eof && !ReadInto(peer, to_fd)) {
      peer_eof = true;
    }
    if (!Flush(peer, to_peer) || !Flush(fd, to_fd)) break;
    if ((p[0].revents & (POLLERR | POLLNVAL)) || (p[1].revents & (POLLERR | POLLNVAL))) break;
  }
  close(peer);
  close(fd);
}

// --- pty ----------------------------------------------------------------------------------------

struct Shell {
  pid_t pid = -1;
  int master = -1;
};

Shell StartShell(StreamServeOptions const& o, int rows, int cols,
                 std::vector<std::string> const& command) {
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  std::string shell = o.shell;
  if (shell.empty()) shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
  // Everything the child needs is made before the fork: the agent that serves simulated
  // kernels is multi-threaded, and a forked child may only exec.
  std::vector<std::string> env = o.env;
  env.push_back("TERM=xterm-256color");
  env.push_back("SHELL=" + shell);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string argv0 = "-" + shell.substr(shell.rfind('/') + 1);  // a login shell
  std::vector<std::string> args = command;
  if (args.empty()) args = {argv0};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string not_found = "bai: " + args[0] + ": cannot run it (not found or not executable)\r\n";
  Shell s;
  s.pid = forkpty(&s.master, nullptr, nullptr, &ws);
  if (s.pid == 0) {
    sigprocmask(SIG_SETMASK, &o.child_mask, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (chdir(o.workdir.c_str()) != 0 && chdir("/") != 0) _exit(127);
    if (command.empty()) {
      execve(shell.c_str(), argv.data(), envp.data());
    } else {
      execvpe(argv[0], argv.data(), envp.data());  // PATH from the kernel's environment
    }
    (void)!write(2, not_found.data(), not_found.size());
    _exit(127);
  }
  if (s.pid > 0) SetNonBlocking(s.master);
  return s;
}

int CodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void ServePty(int fd, rp::StreamOpen const& open, std::string pending,
              StreamServeOptions const& o) {
  Shell shell = StartShell(o, open.rows, open.cols, open.command);
  if (shell.pid < 0) {
    Reply(fd, false, 1011, std::string("cannot start a shell: ") + std::strerror(errno));
    close(fd);
    return;
  }
  Reply(fd, true, 0, "");
  SetNonBlocking(fd);
  std::string in = std::move(pending), to_master, to_fd;
  bool fd_eof = false, restarting = false;
  int exit_code = -1;
  while (true) {
    // Lines from the client.
    for (auto nl = in.find('\n'); nl != std::string::npos; nl = in.find('\n')) {
      auto frame = protocol::DecodePtyFrame(std::string_view(in).substr(0, nl));
      in.erase(0, nl + 1);
      if (!frame.ok()) {
        to_fd +=
            protocol::EncodePtyFrame({PtyFrame::Type::kError, frame.status().message()}) + "\n";
        continue;
      }
      switch (frame->type) {
        case PtyFrame::Type::kStdin:
          to_master += frame->data;
          break;
        case PtyFrame::Type::kResize: {
          winsize ws{};
          ws.ws_row = static_cast<unsigned short>(frame->rows);
          ws.ws_col = static_cast<unsigned short>(frame->cols);
          ioctl(shell.master, TIOCSWINSZ, &ws);  // the kernel sends SIGWINCH
          break;
        }
        case PtyFrame::Type::kRestart:
          restarting = true;
          kill(-shell.pid, SIGHUP);
          break;
        default:
          break;  // ping keeps nothing alive here; out/exit/error are not the client's
      }
    }
    if (in.size() > kMaxLine) break;
    if (fd_eof) break;
    // The shell's end: drain what the terminal still holds, then report (or restart).
    int status;
    if (exit_code < 0 && waitpid(shell.pid, &status, WNOHANG) == shell.pid) {
      exit_code = CodeOf(status);
    }
    if (exit_code >= 0) {
      std::string rest;
      while (ReadInto(shell.master, rest) && !rest.empty() && rest.size() < kBuffer) {
      }
      if (!rest.empty()) to_fd += protocol::EncodePtyFrame({PtyFrame::Type::kOut, rest}) + "\n";
      close(shell.master);
      if (restarting) {
        restarting = false;
        exit_code = -1;
        shell = StartShell(o, open.rows, open.cols, open.command);
        if (shell.pid < 0) break;
        continue;
      }
      to_fd += protocol::EncodePtyFrame({PtyFrame::Type::kExit, "", 0, 0, exit_code}) + "\n";
      SetNonBlocking(fd);
      auto deadline = Clock::now() + std::chrono::seconds(5);
      while (!to_fd.empty() && Clock::now() < deadline) {
        if (!Flush(fd, to_fd)) break;
        pollfd p{fd, POLLOUT, 0};
        poll(&p, 1, 100);
      }
      close(fd);
      return;
    }
    pollfd p[2] = {{fd, 0, 0}, {shell.master, 0, 0}};
    if (in.size() < kMaxLine) p[0].events |= POLLIN;
    if (!to_fd.empty()) p[0].events |= POLLOUT;
    if (to_fd.size() < kBuffer) p[1].events |= POLLIN;
    if (!to_master.empty()) p[1].events |= POLLOUT;
    if (poll(p, 2, 200) < 0 && errno != EINTR) break;
    if (p[0].revents & (POLLIN | POLLHUP)) {
      if (!ReadInto(fd, in)) fd_eof = true;
    }
    if (p[1].revents & POLLIN) {
      std::string out;
      if (ReadInto(shell.master, out) && !out.empty()) {
        to_fd += protocol::EncodePtyFrame({PtyFrame::Type::kOut, out}) + "\n";
      }
    }
    if (!Flush(shell.master, to_master)) to_master.clear();
    if (!Flush(fd, to_fd)) break;
    if (p[0].revents & (POLLERR | POLLNVAL)) break;
  }
  // The client went away: hang up the shell, as a terminal does when its line drops.
  kill(-shell.pid, SIGHUP);
  close(shell.master);
  for (int i = 0; i < 20; ++i) {
    int status;
    if (waitpid(shell.pid, &status, WNOHANG) == shell.pid) break;
    if (i == 10) kill(-shell.pid, SIGKILL);
    usleep(50000);
  }
  close(fd);
}

// --- exec ---------------------------------------------------------------------------------------

struct Command {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;  // its stdin (ours to write), stdout, stderr
};

// `command` with pipes for its three streams, in its own process group, in the work directory.
Command StartCommand(StreamServeOptions const& o, std::vector<std::string> const& command) {
  Command c;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return c;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return c;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return c;
  }
  // Made before the fork (the simulated agent is multi-threaded: its child may only exec).
  std::vector<std::string> env = o.env;
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string not_found = "bai: " + args[0] + ": cannot run it (not found or not executable)\n";
  c.pid = fork();
  if (c.pid == 0) {
    sigprocmask(SIG_SETMASK, &o.child_mask, nullptr);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (chdir(o.workdir.c_str()) != 0 && chdir("/") != 0) _exit(127);
    execvpe(argv[0], argv.data(), envp.data());  // PATH from the kernel's environment
    (void)!write(2, not_found.data(), not_found.size());
    _exit(127);
  }
  close(in[0]), close(out[1]), close(err[1]);
  if (c.pid < 0) {
    close(in[1]), close(out[0]), close(err[0]);
    return c;
  }
  c.in = in[1], c.out = out[0], c.err = err[0];
  for (int f : {c.in, c.out, c.err}) SetNonBlocking(f);
  return c;
}

// `bai exec` without a terminal: the command's stdout and stderr as `out` and `err` frames the
// moment it writes them, the client's `stdin` frames into its stdin and `eof` closing it, then
// `exit` with its code. Each direction holds at most kBuffer: a client that does not read stops
// the command's writes, a command that does not read stops the client's stdin (back-pressure
// end to end, never a whole output in memory). The client going away ends the command.
void ServeExec(int fd, rp::StreamOpen const& open, std::string pending,
               StreamServeOptions const& o) {
  if (open.command.empty()) {
    Reply(fd, false, 1008, "exec needs a command");
    close(fd);
    return;
  }
  Command c = StartCommand(o, open.command);
  if (c.pid < 0) {
    Reply(fd, false, 1011, std::string("cannot start the command: ") + std::strerror(errno));
    close(fd);
    return;
  }
  Reply(fd, true, 0, "");
  SetNonBlocking(fd);
  std::string in = std::move(pending), to_child, to_fd;
  bool fd_eof = false, stdin_done = false;
  int exit_code = -1;
  auto close_stdin = [&] {
    if (c.in >= 0) close(c.in);
    c.in = -1;
  };
  // Output goes out as frames of at most 64 KiB (a frame is a WebSocket message on its way).
  auto drain = [&](int& from, PtyFrame::Type type) {
    while (from >= 0 && to_fd.size() < kBuffer) {
      char chunk[48 << 10];
      ssize_t n = read(from, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        close(from);
        from = -1;
        return;
      }
      to_fd +=
          protocol::EncodePtyFrame({type, std::string(chunk, static_cast<std::size_t>(n))}) + "\n";
    }
  };
  while (true) {
    for (auto nl = in.find('\n'); nl != std::string::npos && to_child.size() < kBuffer;
         nl = in.find('\n')) {
      auto frame = protocol::DecodePtyFrame(std::string_view(in).substr(0, nl));
      in.erase(0, nl + 1);
      if (!frame.ok()) {
        to_fd +=
            protocol::EncodePtyFrame({PtyFrame::Type::kError, frame.status().message()}) + "\n";
      } else if (frame->type == PtyFrame::Type::kStdin && !stdin_done) {
        to_child += frame->data;
      } else if (frame->type == PtyFrame::Type::kEof) {
        stdin_done = true;
      }
    }
    if (in.size() > kMaxLine && in.find('\n') == std::string::npos) break;  // not our client
    if (stdin_done && to_child.empty()) close_stdin();
    if (c.in >= 0 && !to_child.empty()) {
      ssize_t n = write(c.in, to_child.data(), to_child.size());
      if (n > 0) {
        to_child.erase(0, static_cast<std::size_t>(n));
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        to_child.clear();  // it closed its stdin (EPIPE): the rest has nowhere to go
        stdin_done = true;
        close_stdin();
      }
    }
    if (exit_code < 0) {
      int status;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) exit_code = CodeOf(status);
    }
    // Its end once it has exited and its output is all read (as ssh, a background process
    // still holding the pipes is waited for).
    if (exit_code >= 0 && c.out < 0 && c.err < 0) {
      close_stdin();
      to_fd += protocol::EncodePtyFrame({PtyFrame::Type::kExit, "", 0, 0, exit_code}) + "\n";
      auto deadline = Clock::now() + std::chrono::seconds(30);
      while (!to_fd.empty() && Clock::now() < deadline) {
        if (!Flush(fd, to_fd)) break;
        pollfd p{fd, POLLOUT, 0};
        poll(&p, 1, 100);
      }
      close(fd);
      return;
    }
    if (fd_eof) break;
    pollfd p[4] = {{fd, 0, 0}, {c.out, 0, 0}, {c.err, 0, 0}, {c.in, 0, 0}};
    // Stdin frames are read only while the command takes what came before.
    if (in.size() <= kMaxLine && to_child.size() < kBuffer) p[0].events |= POLLIN;
    if (!to_fd.empty()) p[0].events |= POLLOUT;
    if (to_fd.size() < kBuffer) {
      p[1].events |= POLLIN;
      p[2].events |= POLLIN;
    }
    if (!to_child.empty()) p[3].events |= POLLOUT;
    if (poll(p, 4, 200) < 0 && errno != EINTR) break;
    if (p[0].revents & (POLLIN | POLLHUP)) {
      char chunk[64 << 10];
      ssize_t n = read(fd, chunk, sizeof chunk);
      if (n > 0) {
        in.append(chunk, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        fd_eof = true;
      }
    }
    if (p[1].revents & (POLLIN | POLLHUP)) drain(c.out, PtyFrame::Type::kOut);
    if (p[2].revents & (POLLIN | POLLHUP)) drain(c.err, PtyFrame::Type::kErr);
    if (!Flush(fd, to_fd)) break;
    if (p[0].revents & (POLLERR | POLLNVAL)) break;
  }
  // The client went away: end the command (its group), as a dropped terminal line would.
  close_stdin();
  for (int* f : {&c.out, &c.err}) {
    if (*f >= 0) close(*f);
  }
  kill(-c.pid, SIGHUP);
  for (int i = 0; exit_code < 0 && i < 40; ++i) {
    int status;
    if (waitpid(c.pid, &status, WNOHANG) == c.pid) break;
    if (i == 10) kill(-c.pid, SIGKILL);
    usleep(50000);
  }
  close(fd);
}

// --- service ------------------------------------------------------------------------------------

bool PortOpen(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool open = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(s);
  return open;
}

// "{ports[0]}", "{runtime_path}" in a definition's strings.
std::string Expand(std::string text, rp::StreamOpen const& open, StreamServeOptions const& o) {
  auto replace = [&text](std::string const& from, std::string const& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  replace("{ports[0]}", std::to_string(open.port));
  replace("{runtime_path}", o.runtime_path);
  return text;
}

std::string ReadFile(std::string const& path, std::size_t limit = 1 << 20) {
  std::string out;
  int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f < 0) return out;
  char buf[4096];
  ssize_t n;
  while (out.size() < limit && (n = read(f, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(f);
  return out;
}

bool IsSafeName(std::string const& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

// Why `open` cannot start (empty: it can), and the command and environment it runs with.
std::string PlanService(rp::StreamOpen const& open, StreamServeOptions const& o,
                        std::vector<std::string>& argv, std::vector<std::string>& env) {
  if (!IsSafeName(open.name)) return "no such app";
  std::string text = ReadFile(o.service_defs + "/" + open.name + ".json");
  if (text.empty()) return "the image has no service definition for " + open.name;
  auto def = nlohmann::json::parse(text, nullptr, false);
  if (!def.is_object()) return "the service definition of " + open.name + " is not a JSON object";
  auto allowed = [&def](char const* key, std::string const& what) {
    auto it = def.find(key);
    if (it == def.end() || !it->is_array()) return false;
    for (auto const& v : *it) {
      if (v.is_string() && v.get<std::string>() == what) return true;
    }
    return false;
  };
  for (auto const& [k, v] : open.arguments) {
    if (!allowed("allowed_arguments", k)) return "the argument " + k + " is not allowed";
  }
  for (auto const& [k, v] : open.envs) {
    if (!allowed("allowed_envs", k)) return "the environment variable " + k + " is not allowed";
  }
  auto command = def.find("command");
  if (command != def.end() && command->is_string()) {
    argv = {"/bin/sh", "-c", Expand(command->get<std::string>(), open, o)};
  } else if (command != def.end() && command->is_array() && !command->empty()) {
    for (auto const& c : *command) {
      if (!c.is_string()) return "the service definition's command is not a list of strings";
      argv.push_back(Expand(c.get<std::string>(), open, o));
    }
  } else {
    return "the service definition of " + open.name + " has no command";
  }
  for (auto const& [k, v] : open.arguments) {
    argv.push_back(k);
    if (!v.empty()) argv.push_back(v);
  }
  env = o.env;
  if (auto e = def.find("env"); e != def.end() && e->is_object()) {
    for (auto const& [k, v] : e->items()) {
      if (v.is_string()) env.push_back(k + "=" + Expand(v.get<std::string>(), open, o));
    }
  }
  for (auto const& [k, v] : open.envs) env.push_back(k + "=" + v);
  if (auto pre = def.find("prestart"); pre != def.end() && pre->is_array()) {
    for (auto const& action : *pre) {
      std::string kind = action.is_object() ? action.value("action", "") : "";
      auto args = action.is_object() ? action.value("args", nlohmann::json::object())
                                     : nlohmann::json::object();
      if (kind == "mkdir" && args.contains("path") && args["path"].is_string()) {
        (void)mkdir(Expand(args["path"], open, o).c_str(), 0755);
      } else if (kind == "write_file" && args.contains("filename") && args.contains("body")) {
        int f = ::open(Expand(args.value("filename", ""), open, o).c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (f < 0) return "prestart write_file failed";
        WriteAll(f, Expand(args.value("body", ""), open, o));
        close(f);
      } else if (kind == "log") {
        // Nothing to keep: the service's output is its log.
      } else {
        return "the service definition's prestart action \"" + kind + "\" is not supported";
      }
    }
  }
  return "";
}

// The session's service lock: one start or stop at a time, held while this lives.
class ServiceLock {
 public:
  explicit ServiceLock(std::string const& run_dir)
      : fd_(::open((run_dir + "/svc.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~ServiceLock() {
    if (fd_ >= 0) close(fd_);
  }
  ServiceLock(ServiceLock const&) = delete;
  ServiceLock& operator=(ServiceLock const&) = delete;

 private:
  int fd_;
};

// A service request's answer; the connection ends with it.
auto ServiceReply(int fd) {
  return [fd](bool ok, std::string status, std::string msg) {
    rp::StreamReady r{ok, ok ? 0 : 1011, std::move(msg), std::move(status)};
    WriteAll(fd, rp::EncodeStreamReady(r) + "\n");
    close(fd);
  };
}

void ServeService(int fd, rp::StreamOpen const& open, StreamServeOptions const& o) {
  auto reply = ServiceReply(fd);
  if (o.service_defs.empty()) return reply(true, "running", "");
  std::string pid_file = o.run_dir + "/svc-" + open.name + ".pid";
  // One start at a time per session; a service already up is not started again.
  ServiceLock lock(o.run_dir);
  if (IsSafeName(open.name)) {
    pid_t old = static_cast<pid_t>(std::atoi(ReadFile(pid_file, 32).c_str()));
    if (old > 0 && kill(old, 0) == 0) return reply(true, "running", "");
  }
  std::vector<std::string> argv, env;
  if (auto why = PlanService(open, o, argv, env); !why.empty()) return reply(false, "", why);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  std::string log = o.run_dir + "/svc-" + open.name + ".log";
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    sigprocmask(SIG_SETMASK, &o.child_mask, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    if (chdir(o.workdir.c_str()) != 0 && chdir("/") != 0) _exit(127);
    execvpe(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  if (pid < 0) return reply(false, "", std::string("fork failed: ") + std::strerror(errno));
  int pf = ::open(pid_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (pf >= 0) {
    WriteAll(pf, std::to_string(pid));
    close(pf);
  }
  auto deadline = Clock::now() + o.service_timeout;
  while (Clock::now() < deadline) {
    if (PortOpen(open.port)) return reply(true, "started", "");
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      unlink(pid_file.c_str());
      std::string tail = ReadFile(log);
      if (tail.size() > 400) tail = "…" + tail.substr(tail.size() - 400);
      return reply(false, "",
                   open.name + " exited with " + std::to_string(CodeOf(status)) +
                       " before its port " + std::to_string(open.port) + " opened: " + tail);
    }
    usleep(100000);
  }
  return reply(false, "",
               open.name + " did not open its port " + std::to_string(open.port) + " within " +
                   std::to_string(o.service_timeout.count() / 1000) + " s");
}

// A process that has exited and waits for its parent (init) to reap it.
bool IsZombie(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat", 512);
  auto close_paren = stat.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < stat.size() &&
         stat[close_paren + 2] == 'Z';
}

// Ends a service started by ServeService: its process group (it called setsid), SIGTERM and
// SIGKILL after 5 s; a second start then starts it afresh.
void StopService(int fd, rp::StreamOpen const& open, StreamServeOptions const& o) {
  auto reply = ServiceReply(fd);
  if (!IsSafeName(open.name)) return reply(false, "", "no such service " + open.name);
  std::string pid_file = o.run_dir + "/svc-" + open.name + ".pid";
  ServiceLock lock(o.run_dir);
  pid_t pid = static_cast<pid_t>(std::atoi(ReadFile(pid_file, 32).c_str()));
  if (pid <= 0 || kill(pid, 0) != 0) {
    unlink(pid_file.c_str());
    return reply(true, "not-running", "");
  }
  kill(-pid, SIGTERM);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  bool gone = false;
  while (!gone && Clock::now() < deadline) {
    int status;
    // The runner's child when this serve process started it; reaped here then.
    gone = waitpid(pid, &status, WNOHANG) == pid || kill(pid, 0) != 0 || IsZombie(pid);
    if (!gone) usleep(50000);
  }
  if (!gone) {
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, WNOHANG);
  }
  unlink(pid_file.c_str());
  reply(true, "stopped", "");
}

}  // namespace

void ServeStream(int fd, StreamServeOptions const& o) {
  std::string line, rest;
  if (!ReadLine(fd, Clock::now() + o.header_timeout, line, rest)) {
    close(fd);
    return;
  }
  auto open = rp::DecodeStreamOpen(line);
  if (!open.ok()) {
    Reply(fd, false, 1011, "bad stream request: " + open.status().message());
    close(fd);
    return;
  }
  if (open->kind == "service") {
    ServeService(fd, *open, o);
  } else if (open->kind == "service-stop") {
    StopService(fd, *open, o);
  } else if (open->kind == "tcp") {
    ServeTcp(fd, open->port, open->pass_socket, std::move(rest), o);
  } else if (open->kind == "exec") {
    ServeExec(fd, *open, std::move(rest), o);
  } else {
    ServePty(fd, *open, std::move(rest), o);
  }
}

}  // namespace bai::server
