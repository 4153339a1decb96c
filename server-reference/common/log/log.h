// SPDX-License-Identifier: Apache-2.0
#pragma once
// A daemon's log: one line per event, as text (for people) or JSON (for log collectors), to
// stderr or to a file rotated by size, through spdlog's sinks (docs/operations.md, "Logs").
// What a line says is pure (FormatText, FormatJson) and unit-tested; Init and Write are the
// shell. Until Init, lines go to stderr as text at info level.

#include "bai/status.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace bai::server::log {

enum class Level { kDebug, kInfo, kWarn, kError };

/// One key and its value; integers and booleans are written bare in JSON.
struct Field {
  std::string key;
  std::string value;
  bool bare = false;  ///< a JSON number or boolean, not a string

  Field(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  Field(std::string k, std::string_view v) : key(std::move(k)), value(v) {}
  Field(std::string k, char const* v) : key(std::move(k)), value(v) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  Field(std::string k, T v)
      : key(std::move(k)),
        value(std::is_same_v<T, bool> ? (v ? "true" : "false") : std::to_string(v)),
        bare(true) {}
};
using Fields = std::vector<Field>;

struct Record {
  std::chrono::system_clock::time_point time;
  Level level = Level::kInfo;
  std::string_view daemon;
  std::string_view message;
  Fields const* fields = nullptr;
};

/// `2026-11-28T01:40:00.123Z INFO bai-manager: message key=value key="two words"`: values with
/// spaces, quotes, `=` or control characters are quoted and escaped (logfmt).
std::string FormatText(Record const& record);
/// `{"time":"2026-11-28T01:40:00.123Z","level":"info","daemon":"bai-manager","msg":"…",…}`: the
/// fields follow in order; a field named like the four above is written as `field.NAME`.
std::string FormatJson(Record const& record);

std::string_view LevelName(Level level);  ///< debug, info, warn, error
StatusOr<Level> ParseLevel(std::string_view name);

struct Options {
  std::string level = "info";     ///< debug | info | warn | error
  std::string format = "text";    ///< text | json
  std::string file;               ///< "" = stderr
  std::string max_size = "100m";  ///< a file is rotated when it would pass this (FILE.1, …)
  int max_files = 5;              ///< rotated files kept besides the current one
};

/// Checks `options` and sends every later line where they say. The file is created (missing
/// directories too) and appended to; errors name the option.
Status Init(std::string daemon, Options const& options);

bool Enabled(Level level);
void Write(Level level, std::string_view message, Fields const& fields = {});
inline void Debug(std::string_view message, Fields const& fields = {}) {
  Write(Level::kDebug, message, fields);
}
inline void Info(std::string_view message, Fields const& fields = {}) {
  Write(Level::kInfo, message, fields);
}
inline void Warn(std::string_view message, Fields const& fields = {}) {
  Write(Level::kWarn, message, fields);
}
inline void Error(std::string_view message, Fields const& fields = {}) {
  Write(Level::kError, message, fields);
}

}  // namespace bai::server::log
