// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/export.h"
#include "bai/protocol/graphql_wire.h"
#include "bai/protocol/pty_wire.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/service_ports.h"
#include "bai/protocol/session_files.h"
#include "bai/protocol/session_status.h"
#include "bai/protocol/session_wire.h"
#include "bai/status.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai {

/// What to create, what the server answered, and a session's info: the wire types
/// (bai/protocol/session_wire.h).
using SessionCreateRequest = protocol::SessionCreateRequest;
using SessionCreateResult = protocol::SessionCreateResult;
using SessionInfo = protocol::SessionInfo;

/// One Server-Sent Event of `/events/session`.
struct SessionEvent {
  std::string name;  ///< session_started, session_success, …
  std::string session_id;
  std::string session_name;
  std::optional<std::string> reason;
  std::optional<std::int64_t> exit_code;
  std::string raw_json;
};

/// `POST /session/{id}/commit`: the background task to follow and where the archive goes.
struct CommitResult {
  std::string task_id;
  std::string kernel_id;
  std::string path;  ///< on the session's agent, or FOLDER:FILE when committed into a folder
};

/// One event of `/events/background-task` (PROTOCOL.md §5.6).
struct TaskProgress {
  /// bgtask_updated, bgtask_done, bgtask_failed, bgtask_cancelled; "server_close" when the
  /// stream ended with no final event (24.09 sends only that for a failed task).
  std::string event;
  std::string task_id;
  std::string message;
  std::int64_t current_progress = 0;
  std::int64_t total_progress = 0;
  bool Finished() const { return event != "bgtask_updated"; }
  bool Succeeded() const { return event == "bgtask_done"; }
};

/// One execute step and what it returned: the wire types (bai/protocol/session_wire.h).
using ExecuteStep = protocol::ExecuteStep;
using ExecuteResult = protocol::ExecuteResult;

struct SessionEventFilter {
  std::optional<std::string> session_id;
  std::optional<std::string> session_name;
  std::optional<std::string> owner_access_key;
  std::optional<std::string> group;
};

/// How a session ended, as SessionClient::WaitForEnd saw it.
struct SessionEnd {
  std::string status;                     ///< "TERMINATED", "CANCELLED" or "ERROR"
  std::optional<std::int64_t> exit_code;  ///< the main process's, when known
  std::string reason;                     ///< why, in the server's words ("" when none)
};

/// What SessionClient::WaitForEnd does while it waits.
struct WaitOptions {
  /// Called once (on the waiting thread) when the session is seen running.
  std::function<void()> on_started;
  /// Checked about every 100 ms; true ends the wait with StatusCode::kCancelled (the session
  /// is left as it is). Suits a flag set by a signal handler.
  std::function<bool()> cancelled;
  /// How often the session's info is read while its event stream is quiet (or, every second at
  /// most, once the stream is gone): events are the fast path, the look is the safety net.
  std::chrono::milliseconds poll_interval{3000};
  /// Return as soon as the session runs (with status "RUNNING") instead of at its end.
  bool until_running = false;
  /// Called with the session's info each time it is read: a waiting session's status_info
  /// says why it waits.
  std::function<void(SessionInfo const&)> on_info;
};

/// Runs a GraphQL document at `POST /admin/gql` and returns its `data` as JSON text. A response
/// with errors is a kInvalidArgument (problem type graphql-error) carrying every message.
BAI_EXPORT StatusOr<std::string> RunGraphql(Client const& client,
                                            protocol::GraphqlRequest const& request);

using SessionListItem = protocol::SessionListItem;

/// What SessionClient::List lists.
struct SessionListOptions {
  std::vector<std::string> statuses;      ///< empty: every status
  std::string filter;                     ///< Backend.AI's filter language: `name ilike "%x%"`
  std::string order;                      ///< e.g. "-created_at" (default: newest first)
  std::optional<std::string> access_key;  ///< admins: another keypair's sessions
  int page_size = 100;                    ///< 1–1000
  std::optional<std::int64_t> limit;      ///< at most this many in all
  bool with_usage = false;                ///< fill each item's `use` from its kernels' live_stat
};

/// The pages of a session list, each fetched when it is asked for (one GraphQL request).
class BAI_EXPORT SessionPages {
 public:
  SessionPages(Client client, SessionListOptions options)
      : client_(std::move(client)), options_(std::move(options)) {}
  /// The next page; empty once every item has been returned.
  StatusOr<std::vector<SessionListItem>> Next();
  bool done() const { return done_; }
  /// The items matching, over all pages (known after the first Next()).
  std::int64_t total_count() const { return total_; }

 private:
  Client client_;
  SessionListOptions options_;
  std::int64_t offset_ = 0;
  std::int64_t total_ = 0;
  bool done_ = false;
};

/// Whether a session would fit now, as `POST /resource/check-presets` tells it.
struct FitCheck {
  bool fits = false;
  std::string reason;  ///< what is short, or what it fits within
};

/// What a copy did.
struct CopyReport {
  std::int64_t files = 0;            ///< files written
  std::int64_t bytes = 0;            ///< their bytes
  std::vector<std::string> written;  ///< where (paths on the receiving side)
  std::vector<std::string> skipped;  ///< left out, with why ("link: a symbolic link")
};

/// Compute sessions: create, inspect, destroy, logs, events. A thin typed layer over Client.
///
/// @par Example
/// @code
/// bai::SessionClient sessions(*client);
/// bai::SessionCreateRequest req;
/// req.image = "python";
/// req.type = "batch";
/// req.startup_command = "python3 train.py";
/// auto created = sessions.Create(req);
/// @endcode
/// A terminal in a running session (`/stream/session/{id}/pty`): a login shell as the session's
/// work user on a real pseudo-terminal. Write from one thread while another Reads; Cancel from
/// any.
class BAI_EXPORT Terminal {
 public:
  explicit Terminal(std::unique_ptr<WebSocketConnection> socket) : socket_(std::move(socket)) {}
  /// Sends keystrokes as typed (Ctrl-C is "\x03": it reaches the remote program).
  Status Write(std::string_view bytes);
  /// The terminal's new size (the remote program gets SIGWINCH).
  Status Resize(int rows, int cols);
  /// A fresh shell on the same terminal.
  Status Restart();
  struct Output {
    std::string data;              ///< what the terminal printed (empty when nothing came)
    std::optional<int> exit_code;  ///< the shell has ended with this code: nothing more comes
  };
  /// What the terminal printed within `timeout`. An error once the stream broke or the server
  /// ended it (its close status: the session ended, 1001 kUnavailable).
  StatusOr<Output> Read(std::chrono::milliseconds timeout);
  /// Ends the terminal from any thread (the remote shell is hung up).
  void Cancel() { socket_->Cancel(); }

 private:
  std::unique_ptr<WebSocketConnection> socket_;
};

struct AppTunnelOptions {
  std::string app;                               ///< the app's name (`/stream/session/{id}/apps`)
  std::optional<int> port;                       ///< one of the app's ports; default its first
  std::map<std::string, std::string> arguments;  ///< option → value ("" for a flag)
  std::map<std::string, std::string> envs;
  std::string bind_host = "127.0.0.1";
  int bind_port = 8080;  ///< 0: any free port (see port())
  /// A connection's failure (the app refused, the session ended): the local peer also gets an
  /// HTTP 503 naming it, as from the official client.
  std::function<void(Status const&)> on_error;
};

/// A local TCP listener whose every connection is tunnelled to an app of a running session, one
/// WebSocket (`/stream/session/{id}/tcpproxy`) per connection as the official client does:
/// nothing of the app is published anywhere but here. Serves on threads of its own until Stop
/// (or destruction).
class BAI_EXPORT AppTunnel {
 public:
  static StatusOr<std::unique_ptr<AppTunnel>> Open(Client client, std::string const& session,
                                                   AppTunnelOptions const& options);
  ~AppTunnel();
  AppTunnel(AppTunnel const&) = delete;
  AppTunnel& operator=(AppTunnel const&) = delete;
  int port() const;            ///< the local port listened on
  std::size_t served() const;  ///< connections tunnelled so far
  void Stop();                 ///< closes the listener and every connection

 private:
  struct Impl;
  explicit AppTunnel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class BAI_EXPORT SessionClient {
 public:
  explicit SessionClient(Client client) : client_(std::move(client)) {}

  StatusOr<SessionCreateResult> Create(SessionCreateRequest const& request) const;
  /// By id, name or unique prefix.
  StatusOr<SessionInfo> Info(std::string const& session) const;
  /// The caller's sessions (an admin's: their domain's), page by page.
  SessionPages List(SessionListOptions options = {}) const {
    return SessionPages(client_, std::move(options));
  }
  /// Every page of List, up to `options.limit`.
  StatusOr<std::vector<SessionListItem>> ListAll(SessionListOptions options = {}) const;
  Status Destroy(std::string const& session, bool forced = false) const;
  /// 24.09's answer: the stored output with stdout and stderr merged (and bai's notices).
  StatusOr<std::string> Logs(std::string const& session) const;
  /// The stored output with its streams apart, and the offset to follow on from.
  StatusOr<protocol::SessionOutput> Output(std::string const& session) const;
  /// Streams the session's output from byte `offset` as it is produced (stdout, stderr, and
  /// bai's notices such as the truncation marker) until the session ends, and returns how it
  /// ended. kUnavailable when the stream broke first (follow again from the offset reached);
  /// kCancelled when `keep_going` (asked while the stream is quiet) said stop.
  StatusOr<SessionEnd> FollowLogs(std::string const& session,
                                  std::function<void(protocol::LogEvent const&)> const& on_output,
                                  std::int64_t offset = 0,
                                  std::function<bool()> const& keep_going = {}) const;
  /// Status → time of entering it.
  StatusOr<std::map<std::string, std::string>> StatusHistory(std::string const& session) const;

  /// Compares the request's resources with what its keypair and its resource group (all of the
  /// caller's groups when it names none) have left; nothing is created. The group's figure is
  /// a total over its agents: a request may fit the total and still wait for one agent.
  StatusOr<FitCheck> CheckFit(SessionCreateRequest const& request) const;
  /// Renames a RUNNING session.
  Status Rename(std::string const& session, std::string const& new_name) const;
  /// Replaces the session's kernel with a fresh one of the same spec; returns once it runs.
  Status Restart(std::string const& session) const;
  /// Runs a shell command line in a RUNNING session (the execute API's batch mode): output is
  /// handed to `on_output(stream, text)` as it arrives ("stdout", "stderr"); returns the
  /// command's exit code. `cancelled` is asked between steps: true interrupts the command and
  /// ends the call with kCancelled.
  StatusOr<int> Exec(std::string const& session, std::string const& command,
                     std::function<void(std::string const&, std::string const&)> const& on_output,
                     std::function<bool()> const& cancelled = {}) const;

  /// Runs `command` (the program first, looked up in the kernel's PATH; no shell) in a RUNNING
  /// session on pipes, over bai's command stream (`/stream/session/{id}/exec`): its stdout and
  /// stderr reach `on_output(stream, text)` as it writes them; the bytes read from `stdin_fd`
  /// (-1: none) go to its stdin until their end, then its stdin closes. Both ways are held back
  /// by the slower side, so neither its output nor its input is ever held whole. Returns the
  /// command's exit code; kCancelled when `cancelled` (asked about 5 times a second) says so,
  /// which ends the command; kUnimplemented when the server is not bai-manager (use Exec).
  StatusOr<int> ExecPiped(
      std::string const& session, std::vector<std::string> const& command,
      std::function<void(std::string const& stream, std::string const& text)> const& on_output,
      int stdin_fd = -1, std::function<bool()> const& cancelled = {}) const;

  /// One execute step in a RUNNING session.
  StatusOr<ExecuteResult> Execute(std::string const& session, ExecuteStep const& step) const;

  /// Runs `code` over the streamed execute WebSocket (`/stream/session/{id}/execute`, one run
  /// per socket): output goes to `on_output(stream, text)` as the server relays it; when the
  /// code waits for input (`waiting-input`) `on_input(prompt, is_password)` gives the line (an
  /// error ends the run). Returns the run's exit code; a server error frame or a close before
  /// the end is an error Status (close codes as WebSocketCloseStatus). `cancel` ends it from
  /// another thread with kCancelled, and the server interrupts the run.
  struct StreamExecuteOptions {
    std::string mode = "query";                  ///< query | batch
    std::map<std::string, std::string> options;  ///< batch: clean, build, exec
    std::function<void(std::string const& stream, std::string const& text)> on_output;
    std::function<StatusOr<std::string>(std::string const& prompt, bool is_password)> on_input;
    std::shared_ptr<StreamCancel> cancel;
  };
  StatusOr<int> ExecuteStream(std::string const& session, std::string const& code,
                              StreamExecuteOptions const& options) const;

  /// Opens a terminal of `rows`×`cols` in a RUNNING session: a login shell, or `command` (the
  /// program first, looked up in the kernel's PATH) when given.
  StatusOr<std::unique_ptr<Terminal>> OpenTerminal(
      std::string const& session, int rows = 24, int cols = 80,
      std::vector<std::string> const& command = {}) const;

  /// The session's apps (service ports), `GET /stream/session/{id}/apps`.
  StatusOr<std::vector<protocol::ServicePort>> ListApps(std::string const& session) const;
  /// Ends an app's service (`POST /session/{id}/shutdown-service`); the next tunnel to it
  /// starts it again. Ok when it was not running.
  Status StopApp(std::string const& session, std::string const& app) const;

  /// Streams events until `on_event` returns false (ok), the stream ends, or `keep_going`
  /// (asked about once a second while the stream is quiet) returns false (ok). The stream is
  /// open once `on_open` runs (subscribe, then create, to miss nothing).
  /// `cancel` ends it at once from another thread (ok).
  Status WatchEvents(SessionEventFilter const& filter,
                     std::function<bool(SessionEvent const&)> const& on_event,
                     std::function<void()> const& on_open = {},
                     std::function<bool()> const& keep_going = {},
                     std::shared_ptr<StreamCancel> cancel = nullptr) const;

  /// Waits until the session `session_id` has ended (a batch job's exit code, for instance):
  /// follows its events and reads its info now and then, so neither a missed event nor a
  /// dropped stream makes it hang. A session that ended before the call is reported at once.
  /// Errors: kNotFound for an unknown session, kCancelled when `options.cancelled` said so.
  StatusOr<SessionEnd> WaitForEnd(std::string const& session_id,
                                  WaitOptions const& options = {}) const;

  /// Commits the kernel of a RUNNING session to a tar file on its agent, or into `folder` (one of
  /// the session owner's virtual folders they may write; bai's extension), where VFolderClient
  /// downloads and deletes it (`filename` empty: the server names it after the session and the
  /// task). Returns at once; follow the task.
  StatusOr<CommitResult> Commit(std::string const& session, std::string const& filename = {},
                                std::string const& folder = {}) const;

  /// Follows a background task to its end: `on_update` sees every event; returns the last one.
  /// An unknown task is kNotFound.
  StatusOr<TaskProgress> FollowTask(
      std::string const& task_id,
      std::function<void(TaskProgress const&)> const& on_update = {}) const;

  // --- a RUNNING session's files (/home/work; limits in bai/protocol/session_files.h) ---

  /// The entries of a directory (`path` relative to /home/work).
  StatusOr<protocol::SessionFileList> ListFiles(std::string const& session,
                                                std::string const& path = ".") const;
  /// Writes files in one request: (path in the session, bytes), at most 20, each under 1 MiB;
  /// parent directories are made.
  Status Upload(std::string const& session,
                std::vector<std::pair<std::string, std::string>> const& files) const;
  /// One tar archive per path (at most 5; 8 MiB together), members named from each path's last
  /// component.
  StatusOr<std::vector<std::string>> Download(std::string const& session,
                                              std::vector<std::string> const& paths) const;
  /// One file's bytes (at most 8 MiB).
  StatusOr<std::string> DownloadSingle(std::string const& session, std::string const& path) const;

  /// Copies local files into the session (what `bai session cp` does): `sources` are files (or,
  /// with `recursive`, directories); `destination` is a directory of the session when it ends
  /// in '/', exists as one or there are several sources, else the new name of the one source.
  /// Every file is checked before anything is sent. Symbolic links and special files in a
  /// directory are skipped (listed in the report); empty directories are not recreated.
  StatusOr<CopyReport> CopyToSession(std::string const& session,
                                     std::vector<std::string> const& sources,
                                     std::string const& destination, bool recursive) const;
  /// Copies files of the session to the local `destination`: into it when it is a directory
  /// (made when there are several sources), else as its new name. Directories need
  /// `recursive`. Archive members that would leave `destination` (absolute, "..", through a
  /// symbolic link) are refused; files appear under a temporary name and are renamed whole.
  StatusOr<CopyReport> CopyFromSession(std::string const& session,
                                       std::vector<std::string> const& sources,
                                       std::string const& destination, bool recursive) const;

  Client const& client() const { return client_; }

 private:
  Client client_;
};

/// Joins argv into one POSIX shell command line that reproduces exactly these arguments
/// ('…' quoting where needed).
BAI_EXPORT std::string ShellJoin(std::vector<std::string> const& argv);

}  // namespace bai
