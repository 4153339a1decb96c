// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

namespace bai::server {

struct StreamServeOptions {
  std::string shell;  ///< "" → /bin/bash where it exists, else /bin/sh
  std::string workdir = "/home/work";
  std::vector<std::string> env;  ///< the shell's environment (KEY=VALUE); TERM is added
  sigset_t child_mask{};         ///< the signal mask a shell starts with
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds connect_timeout{5000};
  /// service: where the image's service definitions are, and where a started service's pid and
  /// output files go (`svc-NAME.pid`, `svc-NAME.log`); empty `service_defs`: services are not
  /// started here (the simulated agent's are its host's) and the answer is "running".
  std::string service_defs = "/etc/backend.ai/service-defs";
  std::string run_dir = "/opt/bai/run";
  std::string runtime_path = "/usr/bin/python3";
  std::chrono::milliseconds service_timeout{30000};  ///< for its port to open
};

/// Serves one connection to the kernel runner's stream socket (docs/agent-protocol.md, "Data
/// streams"): reads its StreamOpen line, answers StreamReady, then relays until both sides are
/// done. `service`: starts an app from its service definition once (a pid file in `run_dir`
/// says whether it runs), waits for its port, answers `started` or `running` (or why it failed)
/// and ends. `pty`: a login shell on a new pseudo-terminal, PtyFrame lines both ways (stdin,
/// resize, ping, restart in; out, then exit with the shell's code). `tcp`: a connection to
/// 127.0.0.1:PORT, its bytes raw both ways, each direction buffered at most 256 KiB (a slow side
/// holds the other back), half-closes passed on. `exec`: a command on pipes (bai exec without a
/// terminal): PtyFrame lines both ways (stdin and eof in; out, err, then exit out), each
/// direction buffered at most 256 KiB, so a slow reader holds the command's output back and a
/// command that does not read holds the client's stdin back. Blocks; closes `fd`. Used by the
/// runner (in a process of its own per stream) and by the simulated agent (in a thread).
void ServeStream(int fd, StreamServeOptions const& options);

}  // namespace bai::server
