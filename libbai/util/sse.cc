// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/sse.h"

namespace bai::internal {

bool SseParser::Feed(std::string_view chunk) {
  pending_.append(chunk);
  std::size_t start = 0;
  while (true) {
    auto nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(pending_.data() + start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (has_data_ || !event_.empty()) {
        std::string name = event_.empty() ? "message" : event_;
        bool go_on = on_event_(name, data_);
        event_.clear();
        data_.clear();
        has_data_ = false;
        if (!go_on) {
          pending_.erase(0, start);
          return false;
        }
      }
      continue;
    }
    if (line.front() == ':') continue;
    auto colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value =
        colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "event") {
      event_ = std::string(value);
    } else if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    }
  }
  pending_.erase(0, start);
  return true;
}

}  // namespace bai::internal
