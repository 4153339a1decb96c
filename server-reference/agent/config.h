// SPDX-License-Identifier: Apache-2.0
#pragma once
// bai-agent's configuration (issue 45): its flags (and the TOML file of the same names), then
// what they mean, checked, with what the host has (GPUs through NVML, CPUs and memory, the
// manager's addresses, the scratch backing). agent/main.cc is wiring around it.

#include "bai/status.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/agent/runc_options.h"
#include "server-reference/common/log/log_options.h"

#include <chrono>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace bai::agent {

/// The flags as given: texts where a value is checked or derived in LoadAgentConfig.
struct AgentFlags {
  AgentOptions agent;  ///< manager, id, scaling group, images as given
  RuncOptions runc;    ///< runner, runc, uid/gid, sizes, network default and bridge name
  std::string secret_file;
  std::string slots;
  std::string backend = "runc";
  std::string state_dir = "/var/lib/bai-agent";
  std::string scratch = "auto";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string gpu_shares = "1";
  std::string gpu_context = "0";
  std::string shim_path;
  std::string reconcile = "enforce";
  std::string reconcile_slack = "64m";
  int reconcile_ms = 2000;
  std::string network_pool = "10.220.0.0/16";
  std::string network_nat = "on";
  std::vector<std::string> sandbox_exceptions;
  bool stop_kernels = false;
  std::string mem_reserve = "1g";
  std::string max_log = "64m";
  int pull_stall_timeout = 300;  ///< seconds a pull may move no byte before it fails
  std::string log_budget = "2g";
  int dummy_prepare_ms = 100;
  int dummy_run_ms = 200;
  int dummy_exit_code = 0;
  std::string metrics_listen;
  std::string metrics_token_file;
  server::log::Options log;
};

/// Declares every option of `bai-agent` on `app`, writing into `flags` (defaults: the binary's
/// directory `self_dir` holds bai-kernel-runner and ../lib/libbai-gpushim.so).
void AddAgentFlags(CLI::App& app, AgentFlags& flags, std::string const& self_dir);

/// What the agent runs with.
struct AgentConfig {
  AgentOptions agent;  ///< with the secret, slots, devices and logs decided
  RuncOptions runc;    ///< complete but for `images` (the store main opens)
  DummyOptions dummy;
  std::string backend;
  std::string state_dir;
  std::chrono::seconds pull_stall_timeout{300};
  bool stop_kernels = false;
  std::string metrics_listen;
  std::string metrics_token;
  std::string nvml_library;
  std::vector<std::string> notes;     ///< for stdout (GPUs found)
  std::vector<std::string> warnings;  ///< for stderr (no shim, NVML refused)
};

/// The flags checked and made into a configuration. kInvalidArgument (exit 2): a flag's value
/// is wrong, said with the flag; kFailedPrecondition (exit 1): the host lacks something (the
/// secret file holds no secret).
StatusOr<AgentConfig> LoadAgentConfig(AgentFlags const& flags);

}  // namespace bai::agent
