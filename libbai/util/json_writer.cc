// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/json_writer.h"

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

namespace {

// At `p` (of `n` bytes left): the length of the well-formed UTF-8 sequence there, or, when
// there is none, minus the length of its maximal subpart (the bytes that began a sequence
// before one broke it: one U+FFFD replaces them, as Unicode recommends).
int Utf8Sequence(unsigned char const* p, std::size_t n) {
  unsigned char c = p[0];
  int len;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return -1;
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<std::size_t>(i) >= n) return -i;
    unsigned char b = p[i];
    bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -i;
  }
  return len;
}

void AppendEscape(std::string& out, unsigned char u) {
  static constexpr char kHex[] = "0123456789abcdef";
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

bool Hex4(std::string_view text, std::size_t at, std::uint32_t& value) {
  if (at + 4 > text.size()) return false;
  value = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    char c = text[i];
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      value |= static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      value |= static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendJsonBytes(std::string& out, std::string_view bytes) {
  out.reserve(out.size() + bytes.size() + 2);
  out.push_back('"');
  auto const* p = reinterpret_cast<unsigned char const*>(bytes.data());
  std::size_t const n = bytes.size();
  std::size_t run = 0;  // start of the pending stretch copied as it is
  std::size_t i = 0;
  while (i < n) {
    unsigned char u = p[i];
    if (u < 0x80) {
      if (!kNeedsEscape[u]) {
        ++i;
        continue;
      }
      out.append(bytes.data() + run, i - run);
      AppendEscape(out, u);
      run = ++i;
      continue;
    }
    int len = Utf8Sequence(p + i, n - i);
    if (len > 0) {
      i += static_cast<std::size_t>(len);
      continue;
    }
    out.append(bytes.data() + run, i - run);
    out += "\xEF\xBF\xBD";  // U+FFFD
    i += static_cast<std::size_t>(-len);
    run = i;
  }
  out.append(bytes.data() + run, n - run);
  out.push_back('"');
}

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t run = 0;  // start of the pending stretch that needs no escaping
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (!kNeedsEscape[u]) continue;
    out.append(text.data() + run, i - run);
    AppendEscape(out, u);
    run = i + 1;
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

bool ReadJsonString(std::string_view text, std::size_t& pos, std::string& out) {
  if (pos >= text.size() || text[pos] != '"') return false;
  ++pos;
  for (;;) {
    std::size_t start = pos;
    while (pos < text.size()) {
      auto u = static_cast<unsigned char>(text[pos]);
      if (u == '"' || u == '\\' || u < 0x20) break;
      ++pos;
    }
    out.append(text.data() + start, pos - start);
    if (pos >= text.size()) return false;
    char c = text[pos];
    if (c == '"') {
      ++pos;
      return true;
    }
    if (c != '\\' || pos + 1 >= text.size()) return false;  // a raw control character
    char e = text[pos + 1];
    pos += 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out.push_back(e);
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        std::uint32_t cp;
        if (!Hex4(text, pos, cp)) return false;
        pos += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its low half must follow
          std::uint32_t low;
          if (pos + 2 > text.size() || text[pos] != '\\' || text[pos + 1] != 'u' ||
              !Hex4(text, pos + 2, low) || low < 0xDC00 || low > 0xDFFF) {
            return false;
          }
          pos += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return false;
        }
        AppendUtf8(out, cp);
        break;
      }
      default:
        return false;
    }
  }
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
