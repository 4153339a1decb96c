// SPDX-License-Identifier: Apache-2.0
#pragma once
// The log's command-line options, the same on every daemon (and, by their long names, in its
// TOML file): --log-level, --log-format, --log-file, --log-max-size, --log-max-files.

#include "server-reference/common/log/log.h"

#include <CLI/CLI.hpp>

namespace bai::server::log {

inline void AddOptions(CLI::App& app, Options& options) {
  app.add_option("--log-level", options.level, "debug | info | warn | error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--log-format", options.format, "text (for people) | json (one object a line)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--log-file", options.file, "Write the log here instead of stderr");
  app.add_option("--log-max-size", options.max_size,
                 "Rotate the file when it would pass this size (FILE.1, FILE.2, …)");
  app.add_option("--log-max-files", options.max_files, "Rotated files kept")
      ->check(CLI::Range(1, 1000));
}

/// The options given on the command line, over `into` (a daemon's TOML file's [logging]).
inline void ApplyGiven(CLI::App const& app, Options const& given, Options& into) {
  if (app.count("--log-level") > 0) into.level = given.level;
  if (app.count("--log-format") > 0) into.format = given.format;
  if (app.count("--log-file") > 0) into.file = given.file;
  if (app.count("--log-max-size") > 0) into.max_size = given.max_size;
  if (app.count("--log-max-files") > 0) into.max_files = given.max_files;
}

}  // namespace bai::server::log
