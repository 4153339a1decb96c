// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <string>
#include <vector>

namespace bai::testing_util {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `argv` with `env` added to (or, for empty values, removed from) this process's
/// environment, feeding `input` on stdin; waits for it and captures both outputs.
ProcessResult RunProcess(std::vector<std::string> const& argv,
                         std::map<std::string, std::string> const& env = {},
                         std::string const& input = {});

/// KEY=VALUE lines of a file such as bai-manager's admin-credentials.env ('#' lines skipped).
std::map<std::string, std::string> ReadEnvFile(std::string const& path);

/// A file's bytes ("" when it cannot be read).
std::string ReadFileBytes(std::string const& path);
/// Writes `data` to `path`, making its parent directories.
void WriteFileBytes(std::string const& path, std::string const& data);

/// Path of a built executable: $BAI_BIN/<name>.
std::string BinPath(std::string const& name);
/// Path of a test data file: $BAI_TEST_DATA/<name>.
std::string DataPath(std::string const& name);

/// A fresh temporary directory, removed with its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(TempDir const&) = delete;
  TempDir& operator=(TempDir const&) = delete;
  std::string const& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace bai::testing_util

namespace bai::testing_util {

/// A child process that keeps running while the test talks to it; killed (SIGKILL) and reaped
/// on destruction if still alive.
class BackgroundProcess {
 public:
  BackgroundProcess(std::vector<std::string> const& argv,
                    std::map<std::string, std::string> const& env = {});
  ~BackgroundProcess();
  BackgroundProcess(BackgroundProcess const&) = delete;
  BackgroundProcess& operator=(BackgroundProcess const&) = delete;

  /// Reads stdout until a line contains `needle` (or `timeout_ms` passes); returns that line or "".
  std::string WaitForLine(std::string const& needle, int timeout_ms = 10000);
  /// Sends `signal` and waits for the exit; returns the exit code (128+N for a signal death) or
  /// -1 after `timeout_ms`.
  int Stop(int signal, int timeout_ms = 10000);
  int pid() const { return pid_; }
  /// Everything read from stdout so far (the last 64 KiB), for failure messages.
  std::string const& Transcript() const { return transcript_; }

 private:
  int pid_ = -1;
  int out_fd_ = -1;
  std::string pending_;
  std::string transcript_;
};

}  // namespace bai::testing_util
