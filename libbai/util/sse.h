// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace bai::internal {

/// Splits a text/event-stream into events. Feed it chunks as they arrive; it calls `on_event`
/// with each complete event's name ("message" when none) and data (multi-line data joined with
/// '\n'). Lines may end in "\r\n" or "\n"; comment lines (": ping") are skipped. `on_event`
/// returns false to stop; Feed then returns false too.
class SseParser {
 public:
  using Handler = std::function<bool(std::string const& event, std::string const& data)>;
  explicit SseParser(Handler on_event) : on_event_(std::move(on_event)) {}

  bool Feed(std::string_view chunk);

 private:
  Handler on_event_;
  std::string pending_;
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace bai::internal
