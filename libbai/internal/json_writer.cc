// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/json_writer.h"

#include <array>

namespace bai::internal {
namespace {

// Which bytes JSON strings must escape: control characters, '"' and '\\'.
constexpr std::array<bool, 256> kNeedsEscape = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['"'] = true;
  t['\\'] = true;
  return t;
}();

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the pending stretch that needs no escaping
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (!kNeedsEscape[u]) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (u) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
        out.append(esc, sizeof esc);
      }
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

void ObjectWriter::OptStr(std::string_view key, std::optional<std::string> const& value) {
  if (value) {
    Str(key, *value);
  } else {
    Raw(key, "null");
  }
}

void ObjectWriter::OptInt(std::string_view key, std::optional<std::int64_t> value) {
  if (value) {
    Int(key, *value);
  } else {
    Raw(key, "null");
  }
}

void ObjectWriter::StrMap(std::string_view key, std::map<std::string, std::string> const& values) {
  Key(key);
  out_.push_back('{');
  bool first = true;
  for (auto const& [k, v] : values) {
    if (!first) out_.push_back(',');
    first = false;
    AppendJsonString(out_, k);
    out_.push_back(':');
    AppendJsonString(out_, v);
  }
  out_.push_back('}');
}

}  // namespace bai::internal
