// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/agent/backend.h"
#include "server-reference/common/wire/agent_messages.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bai::agent {

struct AgentOptions {
  /// The manager, or several separated by commas (http:// only for now): the agent keeps a
  /// link to each, so any of them can reach it, and goes on through the others when one dies.
  std::string manager_url = "http://127.0.0.1:8081";
  std::string agent_id;
  std::string cluster_secret;
  std::string scaling_group = "default";
  std::string architecture = "x86_64";
  protocol::ResourceSlots slots;  ///< what the agent offers (cpu, mem, cuda.device…)
  /// Names and aliases offered (a runc agent reports its image store's; this default is what a
  /// simulated agent offers: the built-ins of a Debian 12 host).
  std::vector<std::string> images{"python", "python:latest", "python:3.11", "shell",
                                  "shell:latest"};
  /// Reads the image store (a runc agent's), sizes included: the first registration offers
  /// it, rescan_images reads it again for the later ones. Unset: `images` as given, sizes
  /// unknown (a simulated agent has no store).
  std::function<std::vector<server::agent_protocol::ImageInfo>()> list_images;
  /// purge_images: removes what it can of the images named (image_gc.h); unset (the simulated
  /// agent): every image is refused in words.
  std::function<server::agent_protocol::PurgeReply(server::agent_protocol::PurgeImages const&)>
      purge_images;
  std::vector<server::agent_protocol::DeviceInfo> devices;  ///< accelerators found
  std::string device_policy = "evenly";  ///< how fractions are placed on them (evenly, fill)
  /// A link on which nothing is heard for this long (pings go at half of it) is closed and
  /// dialled again; another link becomes primary meanwhile. The manager's own limit for a
  /// silent agent is 15 s.
  std::chrono::milliseconds link_timeout{15000};
  std::chrono::milliseconds reconnect_min{200};
  std::chrono::milliseconds reconnect_max{5000};
  /// Where kernels' output is kept (KernelLogs); empty: a temporary directory, removed with
  /// the agent.
  std::string logs_dir;
  std::int64_t max_log_bytes =
      64 << 20;  ///< per kernel: its first half and last quarter to half kept
  /// All kernels' logs together (0: no bound): past it the logs of ended kernels go, oldest
  /// first (KernelLogs).
  std::int64_t log_budget_bytes = 2ll << 30;
};

/// The agent's connections to its managers (docs/agent-protocol.md): dials each in, registers
/// with its capacity, images and kernels, heartbeats, runs create/destroy commands on the backend
/// and reports kernel states through its primary link. Reconnects with backoff when a manager
/// goes away; another linked manager becomes primary meanwhile; kernels keep running, and their
/// states are reported with the next primary registration.
class Agent {
 public:
  Agent(AgentOptions options, std::unique_ptr<KernelBackend> backend);
  ~Agent();
  Agent(Agent const&) = delete;
  Agent& operator=(Agent const&) = delete;

  void Start();
  /// Disconnects and stops; kernels stay with the backend object.
  void Stop();
  /// True while registered through a primary link.
  bool Registered() const;
  /// How many of its managers the agent is registered with now.
  int LinksRegistered() const;
  struct LinkState {
    std::string manager;  ///< its URL, as given
    bool registered = false;
    bool primary = false;
  };
  /// Each manager's link as last seen (empty before the first attempt).
  std::vector<LinkState> Links() const;
  /// Waits until registered (or `timeout`).
  bool WaitRegistered(std::chrono::milliseconds timeout) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The URLs of a comma-separated list (`--manager`), each once, trailing slashes dropped.
std::vector<std::string> ManagerUrls(std::string const& list);

/// CPU cores and memory of this machine as a slot map (memory minus `reserve_bytes`); GPUs add
/// theirs with AddGpuSlots (gpus.h).
protocol::ResourceSlots DiscoverSlots(std::int64_t reserve_bytes);

}  // namespace bai::agent
