// SPDX-License-Identifier: Apache-2.0
// bai-kernel-runner: the helper inside every container (docs/agent-protocol.md, "Agent ⇄ kernel
// runner"). It is the container's first process: it listens on a Unix socket in the per-kernel
// directory, runs query snippets in one persistent interpreter and batch commands under
// /bin/sh -c, streams their output as NDJSON, reaps orphans, and ends its children on SIGTERM.
// Linked statically so that any image can run it.
#include "server-reference/common/exec/stream_serve.h"
#include "server-reference/common/fs/work_files.h"
#include "server-reference/common/wire/runner_messages.h"
#include "server-reference/kernel-runner/drivers.h"

#include <errno.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
namespace rp = bai::server::runner_protocol;

constexpr std::size_t kMaxBacklog = 8u << 20;  // output kept while no agent is connected
constexpr std::size_t kOutputMessage = 256u
                                       << 10;  // output sent as one message once this much waits

struct Step {
  char const* kind;  // clean | build | exec
  std::string const& command;
};

// A batch step's shell command. "*" asks for the runtime's default, as Backend.AI's kernel
// runners decide it: clean does nothing; build runs `make` where there is a Makefile, else (python)
// installs a setup.py project; exec runs main.py (python) or main.sh (shell), 127 without one.
std::string StepCommand(Step const& step, std::string const& runtime) {
  if (step.command != "*") return step.command;
  std::string kind = step.kind;
  bool python = runtime == "python";
  if (kind == "build") {
    return python ? "if [ -f Makefile ]; then make; "
                    "elif [ -f setup.py ]; then python3 -u -m pip install --user -e .; fi"
                  : "if [ -f Makefile ]; then make; fi";
  }
  if (kind == "exec") {
    std::string main = python ? "main.py" : "main.sh";
    std::string run = python ? "exec python3 -u main.py" : "exec /bin/sh main.sh";
    return "if [ -f " + main + " ]; then " + run + "; else echo 'cannot find the main script (\"" +
           main + "\").' >&2; exit 127; fi";
  }
  return "";
}

struct Options {
  std::string socket_path = "/opt/bai/run/runner.sock";
  std::string runtime = "shell";  // python | shell
  std::string python = "/usr/bin/python3";
  std::string shell = "/bin/sh";
  std::string workdir = "/home/work";
};

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

/// Length of the longest prefix of `s` that does not end inside a UTF-8 sequence.
std::size_t Utf8SafePrefix(std::string const& s) {
  std::size_t n = s.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

struct Child {
  pid_t pid = -1;
  int in = -1;   // python: snippet frames (fd 3); shell: its stdin
  int out = -1;  // stdout
  int err = -1;  // stderr
  int ctl = -1;  // driver reports (fd 4)
  std::string out_pending, err_pending, ctl_pending;
  bool Alive() const { return pid > 0; }
};

struct Run {
  std::string run_id;
  std::string mode;                // query | batch
  std::vector<std::string> steps;  // batch: the commands still to run
  std::string code;
};

/// A batch run: its own shell processes, running beside the others (the session's job and any
/// command `bai exec` starts meanwhile).
struct BatchRun {
  Run run;
  Child child;
};

class Runner {
 public:
  explicit Runner(Options options) : o_(std::move(options)) {}

  int Main() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
    sigprocmask(SIG_BLOCK, &mask, &old_mask_);
    signal(SIGPIPE, SIG_IGN);
    sigfd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd_ < 0) return Fail("signalfd");
    if (!Listen()) return 1;
    while (!stopping_ || interp_.Alive() || AnyBatchAlive()) {
      std::vector<pollfd> fds;
      fds.push_back({sigfd_, POLLIN, 0});
      if (!stopping_) fds.push_back({listen_fd_, POLLIN, 0});
      if (!stopping_) fds.push_back({stream_fd_, POLLIN, 0});
      if (client_ >= 0) fds.push_back({client_, POLLIN, 0});
      for (Child* c : Children()) {
        for (int fd : {c->out, c->err, c->ctl}) {
          if (fd >= 0) fds.push_back({fd, POLLIN, 0});
        }
      }
      int timeout = stopping_ ? 100 : -1;
      int n = poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) return Fail("poll");
      if (stopping_ && n == 0 && ++stop_ticks_ > 20) break;  // 2 s after SIGTERM
      for (auto const& p : fds) {
        if (!p.revents) continue;
        if (p.fd == sigfd_) {
          OnSignal();
        } else if (p.fd == listen_fd_) {
          Accept();
        } else if (p.fd == stream_fd_) {
          AcceptStream();
        } else if (p.fd == client_) {
          ReadClient();
        } else {
          OnChildFd(p.fd);
        }
      }
      StartNext();
    }
    unlink(o_.socket_path.c_str());
    unlink(stream_path_.c_str());
    return 0;
  }

 private:
  std::vector<Child*> Children() {
    std::vector<Child*> out{&interp_};
    for (auto& [id, b] : batches_) out.push_back(&b.child);
    return out;
  }

  bool AnyBatchAlive() const {
    for (auto const& [id, b] : batches_) {
      if (b.child.Alive()) return true;
    }
    return false;
  }

  static int Fail(char const* what) {
    std::fprintf(stderr, "bai-kernel-runner: %s: %s\n", what, std::strerror(errno));
    return 1;
  }

  // The control socket, and beside it the stream socket (terminals, service ports). The agent
  // connects to the control socket only after it listens: the stream socket is made first.
  bool Listen() {
    auto slash = o_.socket_path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : o_.socket_path.substr(0, slash);
    stream_path_ = dir + "/stream.sock";
    stream_fd_ = ListenAt(stream_path_);
    listen_fd_ = ListenAt(o_.socket_path);
    return stream_fd_ >= 0 && listen_fd_ >= 0;
  }

  int ListenAt(std::string const& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
      std::fprintf(stderr, "bai-kernel-runner: socket path too long\n");
      return -1;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    unlink(path.c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::string tmp = path + ".tmp";
    // Bind under a temporary name and rename, so the agent never connects to a socket that is
    // not listening yet.
    sockaddr_un tmp_addr = addr;
    if (tmp.size() >= sizeof(tmp_addr.sun_path)) tmp = path;
    std::memcpy(tmp_addr.sun_path, tmp.c_str(), tmp.size() + 1);
    unlink(tmp.c_str());
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&tmp_addr), sizeof(tmp_addr)) != 0 ||
        listen(fd, 16) != 0) {
      Fail("listen");
      return -1;
    }
    chmod(tmp.c_str(), 0600);
    if (tmp != path && rename(tmp.c_str(), path.c_str()) != 0) {
      Fail("rename socket");
      return -1;
    }
    return fd;
  }

  // A stream connection is served by a process of its own (server::ServeStream), so a busy
  // terminal or tunnel never holds up the runs; the runner reaps it like any child.
  void AcceptStream() {
    int fd = accept4(stream_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    pid_t pid = fork();
    if (pid == 0) {
      for (int* own : {&listen_fd_, &stream_fd_, &client_, &sigfd_}) CloseFd(*own);
      for (Child* c : Children()) {
        for (int* p : {&c->in, &c->out, &c->err, &c->ctl}) CloseFd(*p);
      }
      sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      signal(SIGPIPE, SIG_IGN);
      bai::server::StreamServeOptions so;
      so.workdir = o_.workdir;
      so.run_dir = stream_path_.substr(0, stream_path_.rfind('/'));
      so.runtime_path = o_.runtime == "python" ? o_.python : o_.shell;
      for (char** e = environ; *e; ++e) so.env.emplace_back(*e);
      so.child_mask = old_mask_;
      bai::server::ServeStream(fd, so);
      _exit(0);
    }
    if (pid > 0) stream_helpers_.push_back(pid);
    close(fd);
  }

  void Accept() {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    CloseFd(client_);  // a newer agent connection replaces the old one (agent restart)
    client_ = fd;
    in_buf_.clear();
    WriteLine(rp::Encode(rp::Hello{rp::kVersion, o_.runtime, getpid()}));
    while (client_ >= 0 && !backlog_.empty()) {
      std::string line = std::move(backlog_.front());
      backlog_.pop_front();
      backlog_bytes_ -= line.size();
      WriteLine(line);
    }
  }

  void Send(rp::ToAgent const& message) {
    std::string line = rp::Encode(message);
    if (client_ >= 0) {
      WriteLine(line);
      if (client_ >= 0) return;
    }
    backlog_bytes_ += line.size();
    backlog_.push_back(std::move(line));
    while (backlog_bytes_ > kMaxBacklog && backlog_.size() > 1) {
      backlog_bytes_ -= backlog_.front().size();
      backlog_.pop_front();
    }
  }

  void WriteLine(std::string line) {
    line.push_back('\n');
    std::size_t off = 0;
    while (off < line.size() && client_ >= 0) {
      ssize_t w = ::send(client_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        CloseFd(client_);
        return;
      }
      off += static_cast<std::size_t>(w);
    }
  }

  void ReadClient() {
    char buf[65536];
    ssize_t n = read(client_, buf, sizeof buf);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) return;
      CloseFd(client_);
      return;
    }
    in_buf_.append(buf, static_cast<std::size_t>(n));
    std::size_t pos;
    while ((pos = in_buf_.find('\n')) != std::string::npos) {
      std::string line = in_buf_.substr(0, pos);
      in_buf_.erase(0, pos + 1);
      auto msg = rp::DecodeToRunner(line);
      if (!msg.ok()) {
        Send(rp::Error{msg.status().message()});
        continue;
      }
      std::visit([this](auto const& m) { On(m); }, *msg);
    }
    if (in_buf_.size() > (64u << 20)) CloseFd(client_);  // a line this long is not ours
  }

  void On(rp::Query const& m) {
    Run r;
    r.run_id = m.run_id;
    r.mode = "query";
    r.code = m.code;
    queue_.push_back(std::move(r));
  }

  // Batch runs start at once, each in its own shell: a command exec'd into a batch session
  // runs beside the session's job instead of waiting for it.
  void On(rp::Batch const& m) {
    if (stopping_ || batches_.count(m.run_id) || (current_ && current_->run_id == m.run_id)) {
      Send(rp::Error{"run " + m.run_id + " is already running"});
      return;
    }
    BatchRun b;
    b.run.run_id = m.run_id;
    b.run.mode = "batch";
    for (auto step : {Step{"clean", m.clean}, Step{"build", m.build}, Step{"exec", m.exec}}) {
      if (auto command = StepCommand(step, o_.runtime); !command.empty()) {
        b.run.steps.push_back(std::move(command));
      }
    }
    batches_.emplace(m.run_id, std::move(b));
    NextBatchStep(m.run_id);
  }

  void On(rp::Input const& m) {
    if (current_ && waiting_input_ && interp_.in >= 0) {
      waiting_input_ = false;
      std::string frame = std::to_string(m.text.size()) + "\n" + m.text;
      WriteAll(interp_.in, frame);
    }
  }

  // SIGINT to the named run, or (no run named) to the query and every batch run.
  void On(rp::Interrupt const& m) {
    bool all = m.run_id.empty();
    if (current_ && (all || current_->run_id == m.run_id) && interp_.Alive()) {
      kill(-interp_.pid, SIGINT);
    }
    for (auto& [id, b] : batches_) {
      if ((all || id == m.run_id) && b.child.Alive()) kill(-b.child.pid, SIGINT);
    }
  }

  void On(rp::StatusRequest const&) {
    std::string running = current_           ? current_->run_id
                          : batches_.empty() ? std::string()
                                             : batches_.begin()->first;
    Send(rp::RunnerStatus{current_.has_value() || !batches_.empty(),
                          static_cast<std::int64_t>(queue_.size()), running});
  }

  // File requests are answered at once, between runs or during one: they touch only
  // /home/work, resolved beneath it, as the work user the runner runs as.
  void On(rp::FileRequest const& m) { Send(bai::server::AnswerFileRequest(o_.workdir, m)); }

  static void WriteAll(int fd, std::string const& data) {
    std::size_t off = 0;
    while (off < data.size()) {
      ssize_t w = write(fd, data.data() + off, data.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      off += static_cast<std::size_t>(w);
    }
  }

  /// Starts `argv` with stdout/stderr on pipes, fd 0 from `in_read` (or /dev/null), fd 3 from
  /// `fd3` and fd 4 to `fd4` when given; in its own process group.
  Child Spawn(std::vector<std::string> const& argv, bool with_control, bool stdin_is_code) {
    Child c;
    int out[2], err[2], code[2] = {-1, -1}, ctl[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return c;
    if (with_control && (pipe2(code, O_CLOEXEC) || pipe2(ctl, O_CLOEXEC))) return c;
    pid_t pid = fork();
    if (pid == 0) {
      sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      signal(SIGPIPE, SIG_DFL);
      setpgid(0, 0);
      if (chdir(o_.workdir.c_str()) != 0 && chdir("/") != 0) _exit(127);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(stdin_is_code ? code[0] : devnull, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      if (with_control) {
        dup2(code[0], 3);
        dup2(ctl[1], 4);
      }
      std::vector<char*> args;
      for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      std::fprintf(stderr, "bai-kernel-runner: cannot run %s: %s\n", args[0], std::strerror(errno));
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (with_control) {
      close(code[0]);
      close(ctl[1]);
    }
    if (pid < 0) {
      close(out[0]);
      close(err[0]);
      if (with_control) {
        close(code[1]);
        close(ctl[0]);
      }
      return c;
    }
    c.pid = pid;
    c.out = out[0];
    c.err = err[0];
    c.in = with_control ? code[1] : -1;
    c.ctl = with_control ? ctl[0] : -1;
    for (int fd : {c.out, c.err, c.ctl}) {
      if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return c;
  }

  void StartNext() {
    if (current_ || queue_.empty() || stopping_) return;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    waiting_input_ = false;
    if (!interp_.Alive()) {
      if (o_.runtime == "python") {
        interp_ = Spawn({o_.python, "-u", "-c", bai::runner::kPythonDriver}, true, false);
      } else {
        interp_ = Spawn({o_.shell}, true, true);
      }
      if (!interp_.Alive()) {
        Finish(127, "cannot start the " + o_.runtime + " interpreter\n");
        return;
      }
    }
    if (o_.runtime == "python") {
      WriteAll(interp_.in, std::to_string(current_->code.size()) + "\n" + current_->code);
    } else {
      // The snippet is sourced from a file, so that it runs in the persistent shell (variables
      // and the working directory stay) while its stdin is not our command stream.
      std::string path = "/tmp/.bai-snippet-" + std::to_string(getpid());
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) {
        Finish(127, "cannot write " + path + ": " + std::strerror(errno) + "\n");
        return;
      }
      WriteAll(fd, current_->code + "\n");
      close(fd);
      WriteAll(interp_.in, ". " + path + " </dev/null; echo \"done $?\" >&4\n");
    }
  }

  void NextBatchStep(std::string const& run_id) {
    auto it = batches_.find(run_id);
    if (it == batches_.end()) return;
    auto& b = it->second;
    if (b.run.steps.empty()) return FinishBatch(run_id, 0, "");
    std::string cmd = b.run.steps.front();
    b.run.steps.erase(b.run.steps.begin());
    b.child = Spawn({o_.shell, "-c", cmd}, false, false);
    if (!b.child.Alive()) FinishBatch(run_id, 127, "cannot start " + o_.shell + "\n");
  }

  void FinishBatch(std::string const& run_id, int exit_code, std::string const& stderr_text) {
    if (!stderr_text.empty()) Send(rp::Output{"stderr", run_id, stderr_text});
    Send(rp::Finished{run_id, exit_code});
    batches_.erase(run_id);
  }

  void Finish(int exit_code, std::string const& stderr_text) {
    if (!current_) return;
    if (!stderr_text.empty()) {
      Send(rp::Output{"stderr", current_->run_id, stderr_text});
    }
    Send(rp::Finished{current_->run_id, exit_code});
    current_.reset();
    waiting_input_ = false;
  }

  /// Reads what is there on one of a child's descriptors; `final` drains to EAGAIN/EOF.
  void Pump(Child& c, int& fd, std::string& pending, char const* type, std::string const& run_id) {
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          if (!pending.empty()) EmitOutput(type, pending, true, run_id);
          CloseFd(fd);
        } else if (!pending.empty()) {
          // Drained for now: what came goes as one message (a fast writer's many small
          // writes are not one message each).
          EmitOutput(type, pending, false, run_id);
        }
        return;
      }
      pending.append(buf, static_cast<std::size_t>(n));
      if (std::strcmp(type, "ctl") == 0) {
        HandleControl(c);
      } else if (pending.size() >= kOutputMessage) {
        EmitOutput(type, pending, false, run_id);
      }
    }
  }

  void EmitOutput(char const* type, std::string& pending, bool all, std::string const& run_id) {
    if (std::strcmp(type, "ctl") == 0) return;
    std::size_t n = all ? pending.size() : Utf8SafePrefix(pending);
    if (n == 0) return;
    Send(rp::Output{type, run_id, pending.substr(0, n)});
    pending.erase(0, n);
  }

  // The run a child's output belongs to: the query for the interpreter, else its batch run.
  std::string RunOf(Child const& c) const {
    if (&c == &interp_) return current_ ? current_->run_id : std::string();
    for (auto const& [id, b] : batches_) {
      if (&b.child == &c) return id;
    }
    return {};
  }

  void DrainOutput(Child& c) {
    std::string run_id = RunOf(c);
    if (c.out >= 0) Pump(c, c.out, c.out_pending, "stdout", run_id);
    if (c.err >= 0) Pump(c, c.err, c.err_pending, "stderr", run_id);
    if (!c.out_pending.empty()) EmitOutput("stdout", c.out_pending, true, run_id);
    if (!c.err_pending.empty()) EmitOutput("stderr", c.err_pending, true, run_id);
  }

  void HandleControl(Child& c) {
    std::size_t pos;
    while ((pos = c.ctl_pending.find('\n')) != std::string::npos) {
      std::string line = c.ctl_pending.substr(0, pos);
      c.ctl_pending.erase(0, pos + 1);
      if (!current_ || current_->mode != "query") continue;
      if (line.rfind("done ", 0) == 0) {
        DrainOutput(c);
        int code = std::atoi(line.c_str() + 5);
        Finish(code, "");
      } else if (line.rfind("input ", 0) == 0) {
        DrainOutput(c);
        auto prompt = json::parse(line.substr(6), nullptr, false);
        waiting_input_ = true;
        Send(rp::WaitingInput{current_->run_id, prompt.is_string() ? prompt.get<std::string>() : "",
                              false});
      }
    }
  }

  void OnChildFd(int fd) {
    for (Child* c : Children()) {
      if (fd == c->out)
        Pump(*c, c->out, c->out_pending, "stdout", RunOf(*c));
      else if (fd == c->err)
        Pump(*c, c->err, c->err_pending, "stderr", RunOf(*c));
      else if (fd == c->ctl)
        Pump(*c, c->ctl, c->ctl_pending, "ctl", RunOf(*c));
    }
  }

  static int ExitCodeOf(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
  }

  void Ended(Child& c, int status) {
    DrainOutput(c);
    if (c.ctl >= 0) Pump(c, c.ctl, c.ctl_pending, "ctl", RunOf(c));
    for (int* fd : {&c.in, &c.out, &c.err, &c.ctl}) CloseFd(*fd);
    c = Child{};
    return (void)status;
  }

  void OnSignal() {
    signalfd_siginfo si;
    while (read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP) {
        stopping_ = true;
        for (Child* c : Children()) {
          if (c->Alive()) kill(-c->pid, SIGTERM);
        }
        for (pid_t helper : stream_helpers_) kill(helper, SIGTERM);
      }
    }
    // Reap everything: our own children and, as PID 1, every orphan of the container.
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      std::erase(stream_helpers_, pid);
      std::string batch_id;
      for (auto const& [id, b] : batches_) {
        if (b.child.pid == pid) batch_id = id;
      }
      if (!batch_id.empty()) {
        auto& b = batches_.at(batch_id);
        Ended(b.child, status);
        int code = ExitCodeOf(status);
        if (code != 0 || b.run.steps.empty()) {
          FinishBatch(batch_id, code, "");
        } else {
          NextBatchStep(batch_id);
        }
      } else if (pid == interp_.pid) {
        Ended(interp_, status);
        // A query still waiting for "done" ends with the interpreter's own exit code.
        if (current_ && current_->mode == "query") Finish(ExitCodeOf(status), "");
      }
    }
  }

  Options o_;
  sigset_t old_mask_{};
  int sigfd_ = -1, listen_fd_ = -1, client_ = -1, stream_fd_ = -1;
  std::string stream_path_;
  std::vector<pid_t> stream_helpers_;  ///< processes serving stream connections
  std::string in_buf_;
  std::deque<std::string> backlog_;
  std::size_t backlog_bytes_ = 0;
  std::deque<Run> queue_;
  std::optional<Run> current_;
  bool waiting_input_ = false;
  bool stopping_ = false;
  int stop_ticks_ = 0;
  Child interp_;
  std::map<std::string, BatchRun> batches_;  ///< by run id
};

}  // namespace

int main(int argc, char** argv) {
  // The runner is the kernel's pid 1 and runs as the work user: without this, the user's own
  // processes could ptrace it or read its memory and environment (/proc/1/mem, environ). The
  // programs it starts are dumpable again after their exec (gdb and py-spy work on them).
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bai-kernel-runner: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--socket")
      o.socket_path = value();
    else if (a == "--runtime")
      o.runtime = value();
    else if (a == "--python")
      o.python = value();
    else if (a == "--shell")
      o.shell = value();
    else if (a == "--workdir")
      o.workdir = value();
    else {
      std::fprintf(stderr,
                   "usage: bai-kernel-runner [--socket PATH] [--runtime python|shell] "
                   "[--python PATH] [--shell PATH] [--workdir DIR]\n");
      return 2;
    }
  }
  if (o.runtime != "python" && o.runtime != "shell") {
    std::fprintf(stderr, "bai-kernel-runner: --runtime must be python or shell\n");
    return 2;
  }
  return Runner(o).Main();
}
