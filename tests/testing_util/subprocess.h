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
