// SPDX-License-Identifier: Apache-2.0
#pragma once
// What every daemon's main does around its own work (bai-manager, bai-agent, bai-storage,
// bai-webserver): the log started from its options, SIGTERM and SIGINT taken synchronously by the
// main thread, and fatal errors reported where whoever started it sees them.

#include "bai/status.h"

#include "server-reference/common/log/log.h"

#include <signal.h>

#include <string>

namespace bai::server {

/// The directory of the running program's binary (/proc/self/exe), "." when it cannot be
/// read: where a daemon finds its companions (the agent its runner and shim, the webserver its
/// console), installed or in a build tree.
std::string ExecutableDir();

class Daemon {
 public:
  /// `name`: the program's ("bai-storage"), the prefix of what it writes to stderr.
  explicit Daemon(std::string name);

  /// Starts the log; a bad option is written to stderr as "NAME: message" (returned too).
  Status InitLog(log::Options const& options);

  /// Blocks SIGTERM and SIGINT in this thread, and so in every thread it starts after: the
  /// server threads never see them, WaitForStop takes them. Call before starting any.
  void BlockStopSignals();
  /// Waits for SIGTERM or SIGINT and logs "shutting down" with it.
  void WaitForStop();

  /// A fatal error: logged, and written to stderr as "NAME: message" when the log goes to a
  /// file (for whoever started the daemon). Returns `exit_code`.
  int Fail(std::string const& message, int exit_code = 1);

 private:
  std::string name_;
  bool log_to_file_ = false;
  sigset_t signals_{};
};

}  // namespace bai::server
