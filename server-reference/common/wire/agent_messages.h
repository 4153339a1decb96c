// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/admin_wire.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/service_ports.h"
#include "bai/protocol/session_status.h"
#include "bai/protocol/session_wire.h"
#include "bai/status.h"

#include "server-reference/common/wire/device_allocation.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

/// Every message of the manager ⇄ agent control channel (docs/agent-protocol.md) as a struct,
/// with the one codec both daemons use. Decoding never throws: unknown fields are ignored, a
/// missing required field or a field of the wrong type refuses the whole message with a reason
/// that names the field, and slot amounts must be non-negative decimals.
namespace bai::server::agent_protocol {

// --- agent → manager --------------------------------------------------------------------------

struct ImageInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::int64_t size = 0;  ///< bytes; 0: unknown (a simulated agent's, an older agent's)
  /// What it is (ImageKind* below); "": not said (a simulated or older agent).
  std::string kind = {};
};
/// A built-in image whose /usr is the agent host's own (not from any registry).
inline constexpr char kImageKindHost[] = "host";
/// Imported by `bai-agent image import` (an OCI layout or a tarball).
inline constexpr char kImageKindImported[] = "imported";
/// Pulled from a registry.
inline constexpr char kImageKindPulled[] = "pulled";

/// An accelerator the agent found (NVML).
struct DeviceInfo {
  std::string kind = "cuda";
  std::int64_t index = 0;
  std::string uuid;
  std::string name;
  std::int64_t memory = 0;  ///< bytes
  /// What the whole device is worth in cuda.shares (the agent's fractional unit); zero: the
  /// device is offered whole only.
  protocol::Decimal shares;
};

/// What a kernel has used, read from its cgroup (and the GPU reconciler's figures): CPU time,
/// memory now and at its peak, bytes read and written on block devices, GPU memory held.
struct KernelUsage {
  std::int64_t cpu_used_ms = 0;
  std::int64_t mem_current = 0;
  std::int64_t mem_peak = 0;
  std::int64_t mem_limit = 0;  ///< 0: none known
  std::int64_t io_read = 0;
  std::int64_t io_write = 0;
  std::optional<std::int64_t> gpu_mem;  ///< absent: the kernel has no GPU
  bool operator==(KernelUsage const&) const = default;
};

nlohmann::json KernelUsageJson(KernelUsage const& usage);

/// How a running kernel was set up where its session did not choose (the agent's defaults),
/// the type session info carries to clients: {"network", "scratch", "home_bytes", "tmp_bytes"}.
using protocol::KernelSetup;
nlohmann::json KernelSetupJson(KernelSetup const& setup);

/// A kernel's state: the `kernel_status` message, and an entry of `register.kernels`.
/// Where a kernel's image is pulled from while it prepares (issue 46).
struct PullState {
  std::string image;       ///< the reference being pulled
  std::int64_t done = 0;   ///< bytes of its layers held
  std::int64_t total = 0;  ///< bytes of its layers in all
};

struct KernelStatus {
  std::string session_id;
  /// PREPARING, RUNNING, TERMINATED or ERROR on the wire; other values are refused.
  protocol::KernelStatus status = protocol::KernelStatus::kPreparing;
  std::optional<std::int64_t> exit_code;
  std::string reason;
  std::optional<std::string> logs;
  /// RUNNING: the kernel's apps (image labels, preopen ports, the intrinsic terminal).
  std::vector<protocol::ServicePort> service_ports;
  /// TERMINATED or ERROR: what it used, read just before its cgroup went (its last_stat).
  std::optional<KernelUsage> usage = std::nullopt;
  /// RUNNING: its network and scratch (runc kernels).
  std::optional<KernelSetup> setup = std::nullopt;
  /// PREPARING: the image being pulled for it, and how far.
  std::optional<PullState> pull = std::nullopt;

  /// TERMINATED or ERROR: the kernel is gone.
  bool Ended() const {
    return status == protocol::KernelStatus::kTerminated ||
           status == protocol::KernelStatus::kError;
  }
};

struct Register {
  std::int64_t version = 0;  ///< the protocol version the agent speaks (kVersion)
  std::string proof;         ///< RegisterProof() of this connection's challenge
  std::string agent_version;
  std::string scaling_group = "default";
  std::string architecture = "x86_64";
  protocol::ResourceSlots slots;
  std::map<std::string, protocol::SlotType> slot_types;
  std::vector<ImageInfo> images;
  std::vector<DeviceInfo> devices;
  /// How fractions are placed on the devices: "evenly" or "fill" (scheduler/devices.h).
  std::string device_policy = "evenly";
  std::vector<KernelStatus> kernels;
  /// An agent linked to several managers (docs/agent-protocol.md, "Several managers") registers
  /// on each; one link at a time is its primary: the one its kernel states and heartbeats go
  /// through, and the one whose registration reconciles its kernels. A link that becomes
  /// primary later registers again on the same connection. An agent of one manager: true.
  bool primary = true;
};

/// The node's load when the heartbeat left: CPU busy percent over the last interval (0–100,
/// for the whole node and for each core) and memory in use (total minus available), from /proc.
struct NodeStats {
  double cpu_pct = 0;
  std::vector<double> core_pct;
  std::int64_t mem_used = 0;
  std::int64_t mem_total = 0;
  bool operator==(NodeStats const&) const = default;
};

/// {cpu_pct, core_pct, mem_used, mem_total}: the heartbeat's `stats`, and what the manager keeps
/// as the agent's load.
nlohmann::json NodeStatsJson(NodeStats const& stats);

struct Heartbeat {
  std::optional<protocol::ResourceSlots> slots;
  std::optional<NodeStats> stats;  ///< absent from agents that cannot read /proc
  /// Each running kernel's usage so far, by session id (their live_stat).
  std::map<std::string, KernelUsage> usage = {};
};

/// The answer to a request the manager sent (execute, restart_kernel, commit_kernel); the
/// result's shape depends on the request (ExecuteReply text, RestartReply, CommitReply).
struct Response {
  std::string request_id;
  std::string result_json = "{}";
};

/// Progress or the end of a background task the agent runs (the `bgtask` message).
struct TaskReport {
  std::string task_id;
  protocol::TaskStatus status = protocol::TaskStatus::kOngoing;
  std::string message;
  std::optional<std::int64_t> current_progress;
  std::optional<std::int64_t> total_progress;
};

/// A piece of a kernel's output: `stream` is stdout, stderr, or notice (bai's own words, such as
/// the truncation marker; clients show them on stderr).
struct OutputChunk {
  std::string stream;
  std::string data;
};

/// Output as the kernel produces it (batched for a few milliseconds), for followers.
/// `offset`: how many bytes of output the kernel had produced before the first chunk.
struct KernelOutput {
  std::string session_id;
  std::int64_t offset = 0;
  std::vector<OutputChunk> chunks;
};

/// A message the other side could not use (both directions).
struct ErrorReport {
  std::string msg;
};

// --- manager → agent --------------------------------------------------------------------------

/// The first message on every connection: `register` must prove the cluster secret over this
/// nonce, which binds the registration to this connection (a replayed handshake cannot answer).
struct Challenge {
  std::string nonce;
};

inline constexpr std::int64_t kMinHeartbeatMs = 100;
inline constexpr std::int64_t kMaxHeartbeatMs = 600'000;

struct Registered {
  std::int64_t heartbeat_interval_ms = 5000;  ///< clamped to kMin/kMaxHeartbeatMs when read
  std::string scaling_group;
};

/// A vfolder to bind into the kernel. `kernel_path` empty: /home/work/NAME.
struct Mount {
  std::string name;
  std::string host_path;
  std::string kernel_path;
  std::string permission = "ro";  ///< ro, rw, wd
};

/// A registry image's source (24.09's ImageConfig.registry and auto_pull): where the agent
/// pulls it from when its store lacks it, with the registry's credentials.
struct ImageRegistry {
  std::string name;  ///< "127.0.0.1:5000": the canonical names' first part
  std::string url;   ///< "http://127.0.0.1:5000"
  std::string username, password;
  bool ssl_verify = true;
  /// digest: pull when absent or when the rescan's manifest digest differs from the one held;
  /// tag: only when absent; none: never (an absent image fails the kernel).
  std::string auto_pull = "digest";
  std::string digest;  ///< the manifest digest the last rescan found ("" unknown)
};

struct CreateKernel {
  std::string session_id;
  std::string session_name;
  std::string session_type = "interactive";  ///< interactive, batch, inference
  std::string image;
  std::string architecture = "x86_64";
  protocol::ResourceSlots resources;
  std::map<std::string, std::string> environ;
  std::vector<Mount> mounts;
  std::optional<std::string> startup_command;
  std::optional<std::string> bootstrap_script;
  std::optional<std::int64_t> batch_timeout;
  std::string access_key;
  std::vector<DeviceAllocation> devices;  ///< the GPUs the scheduler gave this kernel
  std::vector<int> preopen_ports;         ///< config.preopen_ports: apps of protocol preopen
  /// config.network: "bridge", "none", or empty for the agent's default (--network).
  std::string network;
  /// Written into /home/work before the kernel is RUNNING, in order (the domain's, the
  /// project's, the user's): each checked again with CheckDotfile by the agent.
  std::vector<protocol::Dotfile> dotfiles;
  /// Set for an image of a registry the manager knows: the agent may pull it.
  std::optional<ImageRegistry> registry;
};

struct DestroyKernel {
  std::string session_id;
  std::string reason;
};

/// One execute step (PROTOCOL.md §5.5); mode `interrupt` sends SIGINT to the running snippet.
/// The client's execute step (the public wire type; the agent also takes mode `interrupt`),
/// for the kernel of one session.
struct Execute : protocol::ExecuteStep {
  std::string request_id;
  std::string session_id;
  /// When above 0, the agent answers `continued` as soon as the run has output and this long
  /// has passed (a streamed execute relays output as it comes); 0: only at the end of its
  /// wait, as for a REST step.
  std::int64_t flush_ms = 0;
};

struct RestartKernel {
  std::string request_id;
  std::string session_id;
};

struct CommitKernel {
  std::string request_id;
  std::string session_id;
  std::string task_id;
  std::string filename;
  /// "" = the agent's own commit store; else the host directory of a virtual folder (the
  /// manager resolved it for the session's owner) that the tar goes into.
  std::string directory;
};

/// The kernel's stored output from byte `offset`, at most `limit` bytes (the agent keeps it on
/// disk after the kernel ends, until the session is forgotten).
struct ReadLogs {
  std::string request_id;
  std::string session_id;
  std::int64_t offset = 0;
  std::int64_t limit = 4 << 20;
};

/// A file request on the session's kernel (/home/work), relayed to its kernel runner; the agent
/// answers with a `response` whose `result` is a runner_protocol::FileResult.
struct KernelFiles {
  std::string request_id;
  std::string session_id;
  std::string action;  ///< runner_protocol::kFileList, kFileWrite, kFileRead, kFileArchive
  std::string path;
  std::string data;  ///< write: the bytes (Base64 on the wire)
  std::int64_t limit = 0;
};

/// Open a data stream to the session's kernel (docs/agent-protocol.md, "Data streams"): the
/// agent connects to the kernel's stream socket (`kind` pty: a login shell of `rows`×`cols`;
/// tcp: 127.0.0.1:`port` in the kernel) and opens the WebSocket `/agent/stream/<stream_id>`.
struct OpenStream {
  std::string stream_id;  ///< 32 hex characters
  std::string session_id;
  std::string kind;  ///< pty | tcp
  int rows = 24;
  int cols = 80;
  int port = 0;
  std::vector<std::string> command;  ///< pty: run this (bai exec -it), not a login shell
};

/// Start an app of the session's kernel once (POST /session/{id}/start-service, and before a
/// tunnel to it): its service definition's command with the user's allowed `arguments` and
/// `envs`; the agent answers with `response`, `result` {`status`: started | running | failed,
/// `error`?} once its port accepts connections. With `stop` (POST …/shutdown-service), its
/// process group is ended instead: `status` stopped | not-running | failed.
struct StartService {
  std::string request_id;
  std::string session_id;
  bool stop = false;
  std::string name;
  int port = 0;
  std::map<std::string, std::string> arguments;
  std::map<std::string, std::string> envs;
};

/// Asks the agent to read its image store again (images imported while it runs, removed ones
/// gone); answered with a `response` whose result is an ImagesReply. The manager keeps the
/// list as the agent's images.
struct RescanImages {
  std::string request_id;
};

/// Removes images from the agent's store (purge_images, 25.4's mutation): each one `images`
/// names (a name, alias or registry reference) that no kernel uses, with the layers nothing
/// else needs; with `prune`, layers no image needs as well. Answered with a PurgeReply.
struct PurgeImages {
  std::string request_id;
  std::vector<std::string> images;
  bool prune = true;
};

using ToManager = std::variant<Register, Heartbeat, KernelStatus, Response, TaskReport,
                               KernelOutput, ErrorReport>;
using ToAgent = std::variant<Challenge, Registered, CreateKernel, DestroyKernel, Execute,
                             RestartKernel, CommitKernel, ReadLogs, KernelFiles, OpenStream,
                             StartService, RescanImages, PurgeImages, ErrorReport>;
/// The manager's requests that the agent answers with a Response.
using AgentRequest = std::variant<Execute, RestartKernel, CommitKernel, ReadLogs, KernelFiles,
                                  StartService, RescanImages, PurgeImages>;

/// JSON text of one message, with its `type`. Except KernelOutput, which is framed (its bytes
/// raw, not escaped into JSON strings; sent as a binary WebSocket frame): the JSON header with
/// `chunks` as [stream, size] pairs, "\n", then the chunks' bytes one after another.
std::string Encode(ToManager const& message);
std::string Encode(ToAgent const& message);
/// kInvalidArgument with the reason for text that is not one well-formed message.
StatusOr<ToManager> DecodeToManager(std::string_view text);
StatusOr<ToAgent> DecodeToAgent(std::string_view text);

/// The request with its request id set.
ToAgent WithRequestId(AgentRequest request, std::string request_id);

// --- results carried in Response ----------------------------------------------------------------

struct RestartReply {
  bool ok = false;
  std::string msg;
};

struct CommitReply {
  bool ok = false;
  std::string path;           ///< where the archive goes (ok)
  std::string msg;            ///< why not (not ok)
  bool client_error = false;  ///< the caller's mistake: a taken or unusable name, no kernel
};

/// What read_logs answers: chunks from `offset`, and what is known of the whole.
struct LogsReply {
  bool ok = false;
  std::string msg;  ///< why not (no log of that session here)
  std::int64_t offset = 0;
  std::vector<OutputChunk> chunks;
  std::int64_t size = 0;   ///< bytes stored so far
  bool ended = false;      ///< the kernel has ended: nothing more will be added
  bool truncated = false;  ///< the output passed the size limit (a notice chunk says so)
};

/// What rescan_images answers: the images the agent offers now.
struct ImagesReply {
  std::vector<ImageInfo> images;
};

/// What purge_images answers: what went, what did not and why, the bytes freed, and the images
/// the agent offers now.
struct PurgeReply {
  std::vector<std::string> removed;
  std::vector<std::string> errors;  ///< "IMAGE: why" (in use, not here, a host image…)
  std::int64_t freed = 0;
  std::vector<ImageInfo> images;
};

std::string EncodeReply(PurgeReply const& reply);
StatusOr<PurgeReply> DecodePurgeReply(std::string_view result_json);
std::string EncodeReply(ImagesReply const& reply);
StatusOr<ImagesReply> DecodeImagesReply(std::string_view result_json);
std::string EncodeReply(RestartReply const& reply);
std::string EncodeReply(LogsReply const& reply);
StatusOr<LogsReply> DecodeLogsReply(std::string_view result_json);
std::string EncodeReply(CommitReply const& reply);
StatusOr<RestartReply> DecodeRestartReply(std::string_view result_json);
StatusOr<CommitReply> DecodeCommitReply(std::string_view result_json);

}  // namespace bai::server::agent_protocol
