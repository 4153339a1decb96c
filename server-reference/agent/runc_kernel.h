// SPDX-License-Identifier: Apache-2.0
#pragma once
// The runc backend's record of one kernel, shared by its files (runc_backend.cc: lifecycle;
// runc_runner.cc: the runner's socket; runc_exec.cc: execute, files, streams, commits).
// Private to agent/runc_*.cc.

#include "server-reference/agent/run_console.h"
#include "server-reference/agent/runc_backend.h"
#include "server-reference/common/wire/runner_messages.h"

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bai::agent {

inline constexpr std::size_t kMaxLog = 1u << 20;  // the tail of a kernel's output kept for /logs
inline constexpr char kBatchRunId[] = "batch-job";

struct RuncBackend::Kernel {
  KernelSpec spec;
  KernelReport state;
  std::string container_id;
  std::string dir;
  std::string cgroups_path;
  int sock = -1;
  bool tearing_down = false;
  std::string log;                           // tail of all output
  std::map<std::string, Quanta> gpu_quanta;  // GPU time quanta it holds, by device UUID
  std::vector<std::string> gpu_stamps;       // its activity stamp files (soft mode)
  std::vector<int> cpus;                     // its cpuset (PickCpus)
  KernelNetwork net;                         // bridge mode: its veth and address; else 0
  std::string image_command;                 // its image's Entrypoint/Cmd (ImageCommandLine)

  std::map<std::string, RunState> runs;
  /// File requests sent to the runner, by request id; the result once it came.
  std::map<std::string, std::optional<server::runner_protocol::FileResult>> files;
  std::mutex write_mu;  // one writer at a time on `sock`
};

}  // namespace bai::agent
