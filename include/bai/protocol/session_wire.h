// SPDX-License-Identifier: Apache-2.0
#pragma once
// Session wire types with their one JSON codec, shared by the SDK (which encodes requests and
// decodes answers) and the reference manager and agents (which decode requests and encode
// answers). Decoders ignore unknown fields, accept the spellings Backend.AI's own clients and
// servers use, and refuse a malformed document with a 400 invalid-api-params problem whose
// data names each bad field.

#include "bai/export.h"
#include "bai/protocol/dates.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/service_ports.h"
#include "bai/protocol/session_status.h"
#include "bai/status.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::protocol {

/// The longest `startupCommand` (and `bootstrap_script`) a manager of ours stores, in bytes.
inline constexpr std::size_t kMaxStartupCommandBytes = 64 * 1024;

/// `POST /session` (PROTOCOL.md §5.2): what to start. The encoder leaves unset optional fields
/// and empty lists out; the decoder also reads Backend.AI's other spellings (`lang`,
/// `clientSessionToken`, camelCase or snake_case) and lenient scalars ("true", "30").
struct SessionCreateRequest {
  std::string name;  ///< empty: the server picks one
  std::string image;
  std::string type = "interactive";            ///< interactive, batch, inference
  std::optional<std::string> startup_command;  ///< required for batch
  ResourceSlots resources;                     ///< empty: the server's default
  std::map<std::string, std::string> environ;
  std::vector<std::string> mounts;  ///< vfolder names
  std::string group;                ///< empty: the caller's default project ("default")
  std::string domain;               ///< empty: the owner's domain
  std::optional<std::string> scaling_group;
  bool enqueue_only = false;
  std::int64_t max_wait_seconds = 0;  ///< 0: wait until it starts
  bool reuse_if_exists = true;
  std::optional<std::string> tag;
  std::optional<std::string> bootstrap_script;
  std::optional<std::int64_t> batch_timeout_seconds;  ///< on the wire: seconds or "1h"
  std::optional<std::string> starts_at;   ///< batch only: a time (ISO 8601) or a delay ("30m")
  std::vector<std::string> dependencies;  ///< session ids or names that must succeed first
  std::optional<int> priority;            ///< 0–100
  std::optional<std::string> owner_access_key;   ///< admins: create for this keypair
  std::string architecture;                      ///< empty: x86_64
  std::map<std::string, std::string> mount_map;  ///< vfolder → path in the container
  /// vfolder → ro, rw or wd (`config.mount_options[vfolder].permission`); absent: what the
  /// folder grants.
  std::map<std::string, std::string> mount_permissions;
  std::map<std::string, std::string> resource_opts;  ///< e.g. {"shmem": "1g"}
  std::vector<std::string> agent_list;               ///< superadmins: only these agents
  /// Container ports to serve as apps of protocol `preopen` (`config.preopen_ports`): each
  /// above 1024, below 65535, not reserved (IsReservedServicePort), no repeats.
  std::vector<int> preopen_ports;
  /// The kernel's network (`config.network`, a bai extension): "bridge" (its own address on
  /// the agent's bridge, NAT to the outside) or "none" (loopback only); empty: the agent's
  /// default, "none" unless its operator chose otherwise.
  std::string network;
  std::optional<std::string> callback_url;
  int cluster_size = 1;
  std::string cluster_mode = "single-node";  ///< or multi-node
};
/// Each requested slot's type; nullopt refuses the slot as unknown.
using SlotTypeLookup = std::function<std::optional<SlotType>(std::string const&)>;
BAI_EXPORT std::string EncodeSessionCreateRequest(SessionCreateRequest const& request);
/// Checks what the protocol fixes (name syntax, image, type, batch needs a startup command,
/// ranges, shapes); who may do what is the server's business. `slot_types` defaults to
/// KnownSlotType.
BAI_EXPORT StatusOr<SessionCreateRequest> DecodeSessionCreateRequest(
    std::string_view json, SlotTypeLookup const& slot_types = {});

/// True for a valid session name: 4–64 ASCII letters, digits, '_', '.', '-', starting and
/// ending with a letter, digit or '_', and not the reserved "from-template".
BAI_EXPORT bool ValidSessionName(std::string_view name);
// ParseDurationSeconds: bai/protocol/dates.h.

/// The answer to `POST /session` (201 created or reused, 200 still pending).
struct SessionCreateResult {
  std::string id;
  std::string name;
  std::string status;   ///< PENDING, RUNNING, TIMEOUT, …
  bool created = true;  ///< false: an existing session was reused
};
BAI_EXPORT std::string EncodeSessionCreateResult(SessionCreateResult const& result);
BAI_EXPORT StatusOr<SessionCreateResult> DecodeSessionCreateResult(std::string_view json);

/// `GET /session/{id}` (PROTOCOL.md §5.4). Slot maps and environ are JSON objects (24.09 sends
/// Python renderings of them as strings: those decode as empty, the rest still reads).
/// A device a session's kernel holds: an entry of `attachedDevices` (Backend.AI's kernel
/// `attached_devices`: {"cuda": [{"device_id", "data": {slot: amount}}]}).
struct AttachedDevice {
  std::string kind = "cuda";
  std::string device_id;  ///< the GPU's UUID
  std::string slot;       ///< "cuda.device" (the whole device) or "cuda.shares"
  Decimal amount;
};

/// How a running session's kernel was set up where the session did not choose (bai's
/// `kernelSetup`, reported by the agent when the kernel starts): its network and its scratch
/// space, /home/work and /tmp.
struct KernelSetup {
  std::string network;          ///< "bridge" or "none"
  std::string scratch;          ///< "disk" (the size is a quota) or "tmpfs" (counts as memory)
  std::int64_t home_bytes = 0;  ///< /home/work's size
  std::int64_t tmp_bytes = 0;   ///< /tmp's size (disk: in the same image as /home/work)
};

struct SessionInfo {
  std::string id;
  std::string name;
  SessionStatusValue status;
  std::string status_info;
  std::string type;
  std::string image;
  std::string result = "undefined";  ///< undefined, success, failure
  std::optional<std::int64_t> exit_code;
  std::optional<std::string> agent_id;
  ResourceSlots requested;
  std::string created_at;
  std::optional<std::string> terminated_at;
  std::string raw_json;  ///< as decoded (empty when encoding)
  std::string domain_name;
  std::string group_id;
  std::string user_id;
  std::string architecture;
  std::optional<std::string> tag;
  std::string scaling_group;
  ResourceSlots occupied;  ///< what the agent holds for it (empty until placed)
  std::map<std::string, std::string> environ;
  std::map<std::string, std::string> resource_opts;
  std::map<std::string, std::string> status_history;  ///< STATUS → when it was entered
  std::int64_t age_ms = 0;
  std::int64_t num_queries = 0;
  std::optional<std::string> startup_command;
  std::optional<int> priority;  ///< absent from servers before 24.09 (API v8.20240915)
  std::vector<AttachedDevice> attached_devices;  ///< GPUs it holds, per device
  /// bai's `servicePorts`: the apps of the main kernel (as `/stream/session/{id}/apps` lists
  /// them), once it runs.
  std::vector<ServicePort> service_ports;
  std::optional<KernelSetup> kernel_setup;  ///< once it has run (bai's managers only)
};
/// Written directly rather than through a JSON tree: clients poll this while they wait.
BAI_EXPORT std::string EncodeSessionInfo(SessionInfo const& info);
/// Lenient: a field of an unexpected type reads as its default; only a document that is not
/// an object is refused.
BAI_EXPORT StatusOr<SessionInfo> DecodeSessionInfo(std::string_view json);

/// One `ComputeSession` of the GraphQL `compute_session_list` (PROTOCOL.md §8.2), as bai reads
/// it. The manager's schema names the fields; kSessionListItemFields is the selection that fills
/// this struct, and the decoder reads the answer (slot maps arrive as JSON strings).
/// What a session uses now, from its kernels' live_stat (24.09's shape; `bai ps --usage`): the
/// figures its manager reported, summed over kernels; unset where none was.
struct SessionUse {
  std::optional<double> cpu_pct;  ///< percent of one core over the agent's last interval
  std::optional<std::int64_t> mem_bytes;
  std::optional<std::int64_t> mem_limit_bytes;
  std::optional<std::int64_t> gpu_mem_bytes;
};
/// Adds one kernel's live_stat (JSON text, or its object as text) into `use`; text that is no
/// stat adds nothing.
BAI_EXPORT void AddLiveStat(std::string_view live_stat, SessionUse& use);

struct SessionListItem {
  std::string id;
  std::string name;
  SessionStatusValue status;
  std::string status_info;
  std::string type;  ///< as GraphQL spells it: INTERACTIVE, BATCH
  std::string image;
  std::string access_key;
  std::string scaling_group;
  std::optional<std::string> tag;
  std::string result;  ///< UNDEFINED, SUCCESS, FAILURE
  std::optional<std::int64_t> exit_code;
  std::string created_at;
  std::optional<std::string> status_changed;
  std::optional<std::string> terminated_at;
  std::optional<ResourceSlots> requested;  ///< absent from 23.09 (its ComputeSession has none)
  ResourceSlots occupied;
  std::vector<std::string> agent_ids;
  /// Set when the list asked for it (SessionListOptions::with_usage) and some kernel reported.
  std::optional<SessionUse> use;
};
BAI_EXPORT extern char const kSessionListItemFields[];
/// What a list asks for beside kSessionListItemFields to fill SessionListItem::use.
BAI_EXPORT extern char const kSessionUseFields[];
/// One item object of the list; lenient as DecodeSessionInfo.
BAI_EXPORT StatusOr<SessionListItem> DecodeSessionListItem(std::string_view json);

/// `GET /session/{id}/logs?streams=true` (bai's extension; without `streams`, 24.09's
/// `{"result": {"logs": TEXT}}` with everything merged): the stored output with its streams
/// apart, in order. A stream is stdout, stderr or notice (bai's own words, such as the marker
/// where the middle of a long output was dropped). `next_offset`: the output offset after the
/// last byte, to follow on from (`?follow=true&offset=`).
struct SessionOutput {
  std::vector<std::pair<std::string, std::string>> chunks;  ///< [stream, text]
  std::int64_t next_offset = 0;
  bool truncated = false;  ///< part of the output is not in it (a notice says where)
};
/// The part of `output` after output offset `offset` (all of it from 0 or less), chunk by chunk:
/// a notice counts no bytes, and where one marks a dropped middle the output after it resumes
/// so as to end at next_offset (it is kept when `offset` falls before that point).
BAI_EXPORT std::vector<std::pair<std::string, std::string>> OutputFrom(SessionOutput const& output,
                                                                       std::int64_t offset);
/// The whole response body.
BAI_EXPORT std::string EncodeSessionOutput(SessionOutput const& output);
BAI_EXPORT StatusOr<SessionOutput> DecodeSessionOutput(std::string_view body);

/// One event of `GET /session/{id}/logs?follow=true` (bai's extension, an event stream): the
/// kernel's output as it is produced (`output`), then `end` once the session has ended.
struct LogEvent {
  std::string kind = "output";  ///< output or end
  std::string stream;           ///< output: stdout, stderr, or notice (bai's own words)
  std::string data;             ///< output: the bytes
  std::int64_t offset = 0;      ///< output: bytes of output before these (notices count none)
  std::string status;           ///< end: the session's status then
  std::optional<std::int64_t> exit_code;  ///< end: the job's, when it has one
  std::string status_info;                ///< end: why it ended (task-finished, oom-killed, …)
};
/// The whole event-stream frame: "event: output\r\ndata: {…}\r\n\r\n".
BAI_EXPORT std::string EncodeLogEvent(LogEvent const& event);
/// From the frame's event name and data.
BAI_EXPORT StatusOr<LogEvent> DecodeLogEvent(std::string_view event, std::string_view data);

/// `POST /session/{id}` (PROTOCOL.md §5.5): one execute step. `query` runs code, `batch` runs
/// options.exec, `continue` and `input` go on with a run, `complete` asks for completions.
struct ExecuteStep {
  std::string mode = "query";
  std::string run_id;  ///< empty on the first step: the server assigns one
  std::string code;
  std::map<std::string, std::string> options;  ///< e.g. {"exec": "make test"} for batch
};
BAI_EXPORT std::string EncodeExecuteStep(ExecuteStep const& step);
BAI_EXPORT StatusOr<ExecuteStep> DecodeExecuteStep(std::string_view json);

/// What one step returned (the `result` object of the answer). Keep calling with mode
/// `continue` (or `input` for `waiting-input`) and the same run id until `status` is `finished`.
struct ExecuteResult {
  std::string run_id;
  std::string status;  ///< continued, waiting-input, finished, exec-timeout, …
  std::optional<std::int64_t> exit_code;
  std::vector<std::pair<std::string, std::string>> console;  ///< [stream, text], in order
  /// `options` of a `waiting-input` result: the prompt `input()` printed and whether the
  /// answer should not be echoed (getpass).
  std::string prompt;
  bool is_password = false;
  /// Why, for the statuses a streamed execute ends with on failure: `error`,
  /// `server-restarting` (PROTOCOL.md §5.7).
  std::string msg;
  std::string raw_json;  ///< as decoded (empty when encoding)
};
/// The `result` object of `POST /session/{id}`, and each frame of the streamed execute
/// (`/stream/session/{id}/execute`, where 24.09 sends the same fields but `runId`).
BAI_EXPORT std::string EncodeExecuteResult(ExecuteResult const& result);
/// Also reads API v1 answers (stdout/stderr fields instead of a console list). A result
/// without a status is refused.
BAI_EXPORT StatusOr<ExecuteResult> DecodeExecuteResult(std::string_view json);

/// The data of one `/events/session` event (PROTOCOL.md §5.6); the event's name travels as
/// the SSE event name.
struct SessionEventData {
  std::string session_id;
  std::string session_name;
  std::string owner_access_key;
  std::optional<std::string> kernel_id;  ///< kernel events (with clusterRole "main")
  std::optional<std::string> reason;
  std::optional<std::int64_t> exit_code;
};
BAI_EXPORT std::string EncodeSessionEventData(SessionEventData const& data);
BAI_EXPORT StatusOr<SessionEventData> DecodeSessionEventData(std::string_view json);

/// The data of one `/events/background-task` event.
struct TaskEventData {
  std::string task_id;
  std::string message;
  std::int64_t current_progress = 0;
  std::int64_t total_progress = 0;
  std::optional<std::string> status;  ///< on the last event: done, failed or cancelled
};
BAI_EXPORT std::string EncodeTaskEventData(TaskEventData const& data);
/// Also reads the progress numbers as strings, as Backend.AI 24.09 sends them at the end.
BAI_EXPORT StatusOr<TaskEventData> DecodeTaskEventData(std::string_view json);

}  // namespace bai::protocol
