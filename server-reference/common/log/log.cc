// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/log/log.h"

#include "bai/protocol/resource.h"

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>

namespace bai::server::log {
namespace {

std::string Timestamp(std::chrono::system_clock::time_point time) {
  auto since = time.time_since_epoch();
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds).count();
  std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return text;
}

std::string JsonString(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) return true;
  }
  return false;
}

// The message of a text line: one line whatever it holds.
std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < ' ' && c != '\t') {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

struct Sink {
  std::string daemon = "bai";
  Level level = Level::kInfo;
  bool json = false;
  std::shared_ptr<spdlog::logger> logger;
};

// Never destroyed: a thread still writing while the process exits finds them intact.
std::mutex& SinkMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::shared_ptr<Sink const>& CurrentSink() {
  static auto* sink = new std::shared_ptr<Sink const>;
  return *sink;
}
std::atomic<int> min_level{static_cast<int>(Level::kInfo)};

std::shared_ptr<Sink const> Current() {
  std::lock_guard<std::mutex> lock(SinkMutex());
  auto& current = CurrentSink();
  if (!current) {
    auto sink = std::make_shared<Sink>();
    sink->logger =
        std::make_shared<spdlog::logger>("bai", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    sink->logger->set_pattern("%v");
    sink->logger->flush_on(spdlog::level::trace);
    current = sink;
  }
  return current;
}

}  // namespace

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

StatusOr<Level> ParseLevel(std::string_view name) {
  for (auto level : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
    if (name == LevelName(level)) return level;
  }
  return Status(
      StatusCode::kInvalidArgument,
      "--log-level: expected debug, info, warn or error, not '" + std::string(name) + "'");
}

std::string FormatText(Record const& record) {
  std::string level(LevelName(record.level));
  for (auto& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string out = Timestamp(record.time) + " " + level + " " + std::string(record.daemon) + ": " +
                    OneLine(record.message);
  if (record.fields == nullptr) return out;
  for (auto const& f : *record.fields) {
    out += ' ';
    out += OneLine(f.key);
    out += '=';
    out += NeedsQuotes(f.value) ? JsonString(f.value) : f.value;
  }
  return out;
}

std::string FormatJson(Record const& record) {
  std::string out = "{\"time\":\"" + Timestamp(record.time) + "\",\"level\":\"" +
                    std::string(LevelName(record.level)) +
                    "\",\"daemon\":" + JsonString(record.daemon) +
                    ",\"msg\":" + JsonString(record.message);
  if (record.fields != nullptr) {
    for (auto const& f : *record.fields) {
      bool reserved = f.key == "time" || f.key == "level" || f.key == "daemon" || f.key == "msg";
      out += ',';
      out += JsonString(reserved ? "field." + f.key : f.key);
      out += ':';
      out += f.bare ? f.value : JsonString(f.value);
    }
  }
  out += '}';
  return out;
}

Status Init(std::string daemon, Options const& options) {
  auto level = ParseLevel(options.level);
  if (!level.ok()) return level.status();
  if (options.format != "text" && options.format != "json") {
    return Status(StatusCode::kInvalidArgument,
                  "--log-format: expected text or json, not '" + options.format + "'");
  }
  auto max_size = protocol::ParseBinarySize(options.max_size);
  if (!max_size.ok() || max_size->units() / protocol::Decimal::kUnitsPerOne < 4096) {
    return Status(StatusCode::kInvalidArgument,
                  "--log-max-size: expected a size of at least 4k, such as 100m, not '" +
                      options.max_size + "'");
  }
  if (options.max_files < 1 || options.max_files > 1000) {
    return Status(StatusCode::kInvalidArgument, "--log-max-files: expected 1 to 1000");
  }
  auto sink = std::make_shared<Sink>();
  sink->daemon = std::move(daemon);
  sink->level = *level;
  sink->json = options.format == "json";
  try {
    spdlog::sink_ptr out;
    if (options.file.empty()) {
      out = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    } else {
      out = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
          options.file,
          static_cast<std::size_t>(max_size->units() / protocol::Decimal::kUnitsPerOne),
          static_cast<std::size_t>(options.max_files));
    }
    sink->logger = std::make_shared<spdlog::logger>(sink->daemon, std::move(out));
  } catch (std::exception const& e) {
    return Status(StatusCode::kInvalidArgument, "--log-file: " + std::string(e.what()));
  }
  sink->logger->set_pattern("%v");
  sink->logger->set_level(spdlog::level::trace);
  sink->logger->flush_on(spdlog::level::trace);  // a line is on disk when Write returns
  std::lock_guard<std::mutex> lock(SinkMutex());
  CurrentSink() = std::move(sink);
  min_level = static_cast<int>(*level);
  return {};
}

bool Enabled(Level level) { return static_cast<int>(level) >= min_level.load(); }

void Write(Level level, std::string_view message, Fields const& fields) {
  if (!Enabled(level)) return;
  auto sink = Current();
  Record record{std::chrono::system_clock::now(), level, sink->daemon, message, &fields};
  std::string line = sink->json ? FormatJson(record) : FormatText(record);
  try {
    sink->logger->log(spdlog::level::info, spdlog::string_view_t(line.data(), line.size()));
  } catch (...) {
    // A log that cannot be written (a full disk) must not take the daemon down.
  }
}

}  // namespace bai::server::log
