// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

/// Range requests (RFC 9110 §14) as a pure decision: which bytes of a file of `size` bytes a GET
/// answers with, given its `Range` and `If-Range` headers. The storage proxy's download path
/// asks here before it opens a body.
namespace bai::storage {

struct RangeVerdict {
  enum Kind { kWhole, kPartial, kUnsatisfiable } kind = kWhole;
  std::int64_t from = 0;    ///< first byte sent
  std::int64_t length = 0;  ///< bytes sent
};

/// kWhole without `Range`, for a malformed or multi-part one (a server may ignore those), or when
/// `If-Range` names neither `etag` nor `last_modified` (the file changed: start again);
/// kUnsatisfiable (416) when the range starts at or past the end; kPartial otherwise, clipped to
/// the file.
RangeVerdict DecideRange(std::optional<std::string_view> range,
                         std::optional<std::string_view> if_range, std::string_view etag,
                         std::string_view last_modified, std::int64_t size);

}  // namespace bai::storage
