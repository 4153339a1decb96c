// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bai::internal {

/// Appends `text` as a JSON string (quoted, control characters, '"' and '\\' escaped).
void AppendJsonString(std::string& out, std::string_view text);
/// The same for bytes that need not be UTF-8 (a program's output): each byte that is not part
/// of a well-formed UTF-8 sequence becomes U+FFFD. Hundreds of MB/s: the log relay's hot path.
void AppendJsonBytes(std::string& out, std::string_view bytes);

/// Appends code point `cp` (at most U+10FFFF, not a surrogate) as UTF-8.
void AppendUtf8(std::string& out, std::uint32_t cp);

/// Reads the JSON string starting at `text[pos]` (its opening quote) into `out` and moves `pos`
/// past its closing quote; false (pos unspecified) for anything but a well-formed string.
bool ReadJsonString(std::string_view text, std::size_t& pos, std::string& out);

/// Writes one JSON object straight into a string, for answers that are encoded often (session
/// info): no intermediate tree. Keys are the caller's literals and are not escaped.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_.push_back('{'); }
  void Str(std::string_view key, std::string_view value) {
    Key(key);
    AppendJsonString(out_, value);
  }
  /// The string, or null.
  void OptStr(std::string_view key, std::optional<std::string> const& value);
  /// `json_text` must be valid JSON.
  void Raw(std::string_view key, std::string_view json_text) {
    Key(key);
    out_ += json_text;
  }
  void Int(std::string_view key, std::int64_t value) { Raw(key, std::to_string(value)); }
  void OptInt(std::string_view key, std::optional<std::int64_t> value);
  /// An object of strings.
  void StrMap(std::string_view key, std::map<std::string, std::string> const& values);
  void Close() { out_.push_back('}'); }

 private:
  void Key(std::string_view key) {
    out_ += first_ ? "\"" : ",\"";
    first_ = false;
    out_ += key;
    out_ += "\":";
  }
  std::string& out_;
  bool first_ = true;
};

}  // namespace bai::internal
