// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/daemon/daemon.h"

#include <pthread.h>

#include <filesystem>
#include <iostream>
#include <utility>

namespace bai::server {

std::string ExecutableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

Daemon::Daemon(std::string name) : name_(std::move(name)) {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
}

Status Daemon::InitLog(log::Options const& options) {
  auto s = log::Init(name_, options);
  if (!s.ok()) {
    std::cerr << name_ << ": " << s.message() << "\n";
    return s;
  }
  log_to_file_ = !options.file.empty();
  return Status();
}

void Daemon::BlockStopSignals() { pthread_sigmask(SIG_BLOCK, &signals_, nullptr); }

void Daemon::WaitForStop() {
  int sig = 0;
  sigwait(&signals_, &sig);
  log::Info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
}

int Daemon::Fail(std::string const& message, int exit_code) {
  log::Error(message);
  if (log_to_file_) std::cerr << name_ << ": " << message << "\n";
  return exit_code;
}

}  // namespace bai::server
