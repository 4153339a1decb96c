// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

/// Every message between the agent and the kernel runner (docs/agent-protocol.md, "Agent ⇄
/// kernel runner": NDJSON over a Unix socket) as a struct, with the one codec both use. The
/// runner is linked statically into every container, so this codec needs only nlohmann-json.
/// Decoding never throws; unknown fields are ignored; wrongly typed fields refuse the message.
namespace bai::server::runner_protocol {

inline constexpr std::int64_t kVersion = 1;

// --- runner → agent ---------------------------------------------------------------------------

/// The first line on every connection.
struct Hello {
  std::int64_t version = kVersion;
  std::string runtime;  ///< python, shell
  std::int64_t pid = 0;
};

/// Output of a run, in order (`stdout` / `stderr`).
struct Output {
  std::string stream;  ///< stdout, stderr
  std::string run_id;
  std::string data;
};

/// The run called input().
struct WaitingInput {
  std::string run_id;
  std::string prompt;
  bool is_password = false;
};

struct Finished {
  std::string run_id;
  std::int64_t exit_code = 0;  ///< a signal N gives 128+N
};

/// The answer to a status request.
struct RunnerStatus {
  bool busy = false;
  std::int64_t queued = 0;
  std::string run_id;
};

/// The answer to a FileRequest.
struct FileResult {
  std::string request_id;
  Status status;           ///< why not (its code and message travel)
  std::string data;        ///< read: the file; archive: a tar archive
  std::string files_json;  ///< list: the SessionFileList as JSON (protocol/session_files.h)
};

/// A line the other side could not use (both directions).
struct Error {
  std::string msg;
};

// --- agent → runner ---------------------------------------------------------------------------

/// A snippet for the persistent interpreter.
struct Query {
  std::string run_id;
  std::string code;
};

/// Non-empty steps run in order under /bin/sh -c in /home/work.
struct Batch {
  std::string run_id;
  std::string clean;
  std::string build;
  std::string exec;
};

/// The line for a waiting-input run.
struct Input {
  std::string run_id;
  std::string text;
};

/// A file request on the kernel's /home/work (PROTOCOL.md §5.6), answered at once with a
/// FileResult, even while a run goes on.
struct FileRequest {
  std::string request_id;
  std::string action;      ///< one of the kFile* actions below
  std::string path;        ///< relative to /home/work (or absolute under it)
  std::string data;        ///< write: the file's bytes
  std::int64_t limit = 0;  ///< read, archive: the most bytes to answer with
  std::int64_t mode = 0;   ///< write: the file's permission bits (0: the default, 0644)
};
inline constexpr char kFileList[] = "list";
inline constexpr char kFileWrite[] = "write";
inline constexpr char kFileRead[] = "read";
inline constexpr char kFileArchive[] = "archive";

/// SIGINT to the run `run_id`, or (empty) to the running query and every batch run.
struct Interrupt {
  std::string run_id;
};
struct StatusRequest {};

using ToAgent =
    std::variant<Hello, Output, WaitingInput, Finished, RunnerStatus, FileResult, Error>;
using ToRunner = std::variant<Query, Batch, Input, Interrupt, StatusRequest, FileRequest>;

/// One line of JSON (without the newline); invalid UTF-8 is replaced. Except Output, which
/// travels framed, its bytes raw rather than escaped into a JSON string (a large output is
/// relayed at memory speed, byte for byte): the header line {"type":"stdout","run_id":…,
/// "size":N}, "\n", the N bytes — and the "\n" every line ends with, which the writer adds.
std::string Encode(ToAgent const& message);
std::string Encode(ToRunner const& message);
/// kInvalidArgument with the reason for a line that is not one well-formed message
/// ("unknown op" for an op this version does not know).
StatusOr<ToAgent> DecodeToAgent(std::string_view line);
StatusOr<ToRunner> DecodeToRunner(std::string_view line);
/// The first whole message at the front of `buffer` (a line, or a framed Output with its bytes
/// and final "\n"); `used` gets its length. nullopt while `buffer` holds less than that.
std::optional<StatusOr<ToAgent>> TakeToAgent(std::string_view buffer, std::size_t& used);

// --- the stream socket (`stream.sock` beside the runner's socket) ------------------------------

/// The first line on a connection to the stream socket: what the connection is for.
struct StreamOpen {
  std::string kind;  ///< pty | exec | tcp | service | service-stop
  int rows = 24;     ///< pty: the terminal's size
  int cols = 80;
  std::vector<std::string>
      command;   ///< pty: this program (PATH searched), not a login shell; exec: the command
  int port = 0;  ///< tcp: the container port to connect to (on 127.0.0.1); service: its port
  /// tcp: hand the connected socket over (SCM_RIGHTS, with the answer's line) instead of
  /// relaying its bytes; the answer says `passed` when it did. A runner that does not know it
  /// relays, as before.
  bool pass_socket = false;
  /// service: start the app `name` (its service definition) once, with the user's `arguments`
  /// (option → value, "" for a flag) and `envs`, each within the definition's allow-lists; the
  /// answer comes once its port accepts connections, and the connection ends. service-stop:
  /// end the app `name`'s process group (SIGTERM, SIGKILL after 5 s).
  std::string name;
  std::map<std::string, std::string> arguments;
  std::map<std::string, std::string> envs;
};
/// The runner's answer, one line; after an ok: pty frames (protocol::PtyFrame, one per line)
/// both ways, or the TCP connection's raw bytes both ways.
struct StreamReady {
  bool ok = false;
  int code = 0;  ///< when not ok: the WebSocket close code it means (1013 refused, 1011 other)
  std::string msg;
  std::string status;   ///< service: started | running; service-stop: stopped | not-running
  bool passed = false;  ///< tcp with pass_socket: the connected socket came with this line
};
std::string EncodeStreamOpen(StreamOpen const& m);
StatusOr<StreamOpen> DecodeStreamOpen(std::string_view line);
std::string EncodeStreamReady(StreamReady const& m);
StatusOr<StreamReady> DecodeStreamReady(std::string_view line);

/// A FileResult alone (the agent passes it to the manager as a request's result).
std::string EncodeFileResult(FileResult const& result);
StatusOr<FileResult> DecodeFileResult(std::string_view text);

}  // namespace bai::server::runner_protocol
