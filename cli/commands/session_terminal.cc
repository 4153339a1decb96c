// SPDX-License-Identifier: Apache-2.0
// `bai shell SESSION`: a terminal in a running session, through /stream/session/{id}/pty.
#include "bai/session_client.h"

#include "cli/commands/session.h"
#include "cli/commands/session_util.h"
#include "cli/exit_codes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <thread>

namespace bai::cli {
namespace {

int winch_pipe[2] = {-1, -1};

extern "C" void OnWinch(int) {
  char c = 'w';
  (void)!write(winch_pipe[1], &c, 1);
}

// The local terminal in raw mode while the remote shell has it; restored however we leave.
// Never TCSAFLUSH: keys typed (or a command pasted) before the remote terminal is up wait in
// the input queue and are sent once it is, not thrown away.
class RawMode {
 public:
  RawMode() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawMode() {
    if (active_) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
  }

 private:
  termios saved_{};
  bool active_ = false;
};

std::pair<int, int> WindowSize() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
    return {ws.ws_row, ws.ws_col};
  }
  if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
    return {ws.ws_row, ws.ws_col};
  }
  return {24, 80};
}

// ssh's escape: "~." at the start of a line detaches; "~~" sends one "~".
class Escape {
 public:
  // The bytes to send for `in`; `detach` set when "~." was typed.
  std::string Filter(std::string_view in, bool& detach) {
    std::string out;
    for (char c : in) {
      if (tilde_) {
        tilde_ = false;
        if (c == '.') {
          detach = true;
          return out;
        }
        out.push_back('~');
        if (c == '~') {
          line_start_ = false;
          continue;
        }
      } else if (line_start_ && c == '~') {
        tilde_ = true;
        continue;
      }
      out.push_back(c);
      line_start_ = c == '\r' || c == '\n';
    }
    return out;
  }

 private:
  bool line_start_ = true;
  bool tilde_ = false;
};

}  // namespace

int RunShell(ShellOptions const& options, Context& ctx) {
  if (!ctx.stdin_tty()) {
    ctx.err() << "error: bai shell needs a terminal, and stdin is not one; to run a command "
                 "without one, use bai exec "
              << (options.session.empty() ? "SESSION" : options.session) << " -- CMD\n";
    return kExitUsage;
  }
  return RunTerminal(options.session, {}, ctx);
}

int RunTerminal(std::string const& session, std::vector<std::string> const& command, Context& ctx) {
  ShellOptions options{session};
  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  SessionClient sessions(*client);
  auto [rows, cols] = WindowSize();
  // Raw before the stream opens: what is typed meanwhile is neither echoed here nor lost.
  std::optional<RawMode> raw(std::in_place);
  auto terminal = sessions.OpenTerminal(options.session, rows, cols, command);
  if (!terminal.ok()) {
    raw.reset();
    return JobError(ctx, terminal.status());
  }
  auto& t = **terminal;

  if (winch_pipe[0] < 0 && pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    raw.reset();
    return JobError(ctx, Status(StatusCode::kInternal, "pipe failed"));
  }
  int stop_pipe[2];
  if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
    raw.reset();
    return JobError(ctx, Status(StatusCode::kInternal, "pipe failed"));
  }
  struct sigaction sa {};
  sa.sa_handler = OnWinch;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGWINCH, &sa, nullptr);

  std::optional<int> exit_code;
  std::atomic<bool> detached{false};
  Status failure;
  {
    // Keyboard → remote: raw bytes (Ctrl-C goes there as 0x03), window size changes, "~.".
    std::thread input([&] {
      Escape escape;
      while (true) {
        pollfd p[3] = {
            {STDIN_FILENO, POLLIN, 0}, {winch_pipe[0], POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
        if (poll(p, 3, -1) < 0 && errno != EINTR) break;
        if (p[2].revents) break;
        if (p[1].revents) {
          char drain[64];
          while (read(winch_pipe[0], drain, sizeof drain) > 0) {
          }
          auto [r, c] = WindowSize();
          (void)t.Resize(r, c);
        }
        if (p[0].revents) {
          char buf[4096];
          ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
          if (n <= 0) break;
          bool detach = false;
          auto bytes = escape.Filter(std::string_view(buf, static_cast<std::size_t>(n)), detach);
          if (!bytes.empty() && !t.Write(bytes).ok()) break;
          if (detach) {
            detached = true;
            t.Cancel();
            break;
          }
        }
      }
    });
    // Remote → screen.
    while (!detached) {
      auto out = t.Read(std::chrono::milliseconds(500));
      if (!out.ok()) {
        if (!detached) failure = out.status();
        break;
      }
      if (!out->data.empty()) {
        (void)!write(STDOUT_FILENO, out->data.data(), out->data.size());
      }
      if (out->exit_code) {
        exit_code = out->exit_code;
        break;
      }
    }
    (void)!write(stop_pipe[1], "x", 1);
    input.join();
    close(stop_pipe[0]);
    close(stop_pipe[1]);
    signal(SIGWINCH, SIG_DFL);
    t.Cancel();
  }
  raw.reset();  // the local terminal is itself again
  if (!failure.ok()) return JobError(ctx, failure);
  if (detached) {
    ctx.err() << "\ndetached from " << options.session << "\n";
    return kExitOk;
  }
  return exit_code.value_or(0) & 255;
}

}  // namespace bai::cli
