// SPDX-License-Identifier: Apache-2.0
// Any bytes as a resource amount or size: parse or refuse; what parses must print and re-parse
// to the same value.
#include "bai/protocol/resource.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view text(reinterpret_cast<char const*>(data), size);
  for (auto parsed : {bai::protocol::Decimal::Parse(text), bai::protocol::ParseBinarySize(text)}) {
    if (!parsed.ok()) continue;
    auto again = bai::protocol::Decimal::Parse(parsed->ToString());
    if (!again.ok() || *again != *parsed) std::abort();
  }
  bai::protocol::ResourceSlots slots;
  (void)bai::protocol::ParseSlotAssignment(text, slots);
  return 0;
}
