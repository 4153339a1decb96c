// SPDX-License-Identifier: Apache-2.0
// Any bytes as a Date header: parse or refuse, and a parsed date must be self-consistent.
#include "bai/protocol/dates.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view text(reinterpret_cast<char const*>(data), size);
  auto date = bai::protocol::ParseHttpDate(text);
  if (date) {
    int d = date->local_yyyymmdd;
    int month = d / 100 % 100;
    int day = d % 100;
    if (month < 1 || month > 12 || day < 1 || day > 31) std::abort();
    if (date->utc_offset_seconds <= -86400 || date->utc_offset_seconds >= 86400) std::abort();
  }
  return 0;
}
