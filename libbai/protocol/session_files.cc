// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/session_files.h"

#include "bai/protocol/errors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>

namespace bai::protocol {
namespace {

using nlohmann::json;

Status Malformed(std::string what) {
  return MakeProblemStatus(ProblemType::kInvalidApiParams, std::move(what));
}

// --- tar fields ---

constexpr std::size_t kBlock = 512;

void PutString(std::string& block, std::size_t at, std::size_t width, std::string_view s) {
  std::memcpy(block.data() + at, s.data(), std::min(width, s.size()));
}

// An octal field of `width` bytes: width-1 digits and a NUL.
void PutOctal(std::string& block, std::size_t at, std::size_t width, std::uint64_t v) {
  std::string digits(width - 1, '0');
  for (std::size_t i = width - 1; i-- > 0 && v;) {
    digits[i] = static_cast<char>('0' + (v & 7));
    v >>= 3;
  }
  PutString(block, at, width - 1, digits);
}

std::string Block(TarMember const& m, char type, std::int64_t size, std::string_view name,
                  std::string_view link) {
  std::string b(kBlock, '\0');
  PutString(b, 0, 100, name);
  PutOctal(b, 100, 8, m.mode & 07777);
  PutOctal(b, 108, 8, 0);  // uid, gid: the extracting user owns what it extracts
  PutOctal(b, 116, 8, 0);
  PutOctal(b, 124, 12, static_cast<std::uint64_t>(size));
  PutOctal(b, 136, 12, static_cast<std::uint64_t>(std::max<std::int64_t>(0, m.mtime)));
  b[156] = type;
  PutString(b, 157, 100, link);
  PutString(b, 257, 6, "ustar");  // "ustar\0" "00"
  PutString(b, 263, 2, "00");
  unsigned sum = 0;
  std::memset(b.data() + 148, ' ', 8);
  for (unsigned char c : b) sum += c;
  PutOctal(b, 148, 7, sum);
  b[155] = ' ';
  return b;
}

// One pax record "LEN key=value\n", LEN counting itself.
std::string PaxRecord(std::string_view key, std::string_view value) {
  std::size_t body = 1 + key.size() + 1 + value.size() + 1;  // ' ' key '=' value '\n'
  std::size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

std::uint64_t ReadOctal(std::string_view field) {
  std::uint64_t v = 0;
  for (char c : field) {
    if (c == '\0' || c == ' ') {
      if (v) break;
      continue;
    }
    if (c < '0' || c > '7') break;
    v = (v << 3) | static_cast<unsigned>(c - '0');
  }
  return v;
}

std::string CString(std::string_view field) {
  return std::string(field.substr(0, std::min(field.size(), field.find('\0'))));
}

// The records of a pax header: key → value.
std::vector<std::pair<std::string, std::string>> ParsePax(std::string_view data) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!data.empty()) {
    std::size_t sp = data.find(' ');
    if (sp == std::string_view::npos) break;
    std::size_t len = std::strtoul(std::string(data.substr(0, sp)).c_str(), nullptr, 10);
    if (len <= sp + 1 || len > data.size()) break;
    std::string_view rec = data.substr(sp + 1, len - sp - 2);  // without the newline
    std::size_t eq = rec.find('=');
    if (eq != std::string_view::npos) {
      out.emplace_back(std::string(rec.substr(0, eq)), std::string(rec.substr(eq + 1)));
    }
    data.remove_prefix(len);
  }
  return out;
}

// --- multipart ---

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The parameters of a header value "type; a=b; c="d"" (names lowercased, quotes removed).
std::vector<std::pair<std::string, std::string>> HeaderParams(std::string_view value) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = value.find(';');
  while (i != std::string_view::npos && i < value.size()) {
    ++i;
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) ++i;
    std::size_t eq = value.find('=', i);
    if (eq == std::string_view::npos) break;
    std::string name = Lower(Trim(value.substr(i, eq - i)));
    std::string v;
    std::size_t j = eq + 1;
    if (j < value.size() && value[j] == '"') {
      for (++j; j < value.size() && value[j] != '"'; ++j) {
        if (value[j] == '\\' && j + 1 < value.size()) ++j;
        v.push_back(value[j]);
      }
      i = value.find(';', j);
    } else {
      std::size_t end = value.find(';', j);
      v = std::string(Trim(value.substr(j, end == std::string_view::npos ? end : end - j)));
      i = end;
    }
    out.emplace_back(std::move(name), std::move(v));
  }
  return out;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 5987 `charset'lang'pct-encoded` (UTF-8 or ASCII); nullopt when not that.
// %XX sequences decoded; anything else kept as it is.
std::string PercentDecode(std::string_view v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && Hex(v[i + 1]) >= 0 && Hex(v[i + 2]) >= 0) {
      out.push_back(static_cast<char>(Hex(v[i + 1]) * 16 + Hex(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

std::optional<std::string> ExtValue(std::string_view v) {
  std::size_t q1 = v.find('\'');
  std::size_t q2 = q1 == std::string_view::npos ? q1 : v.find('\'', q1 + 1);
  if (q2 == std::string_view::npos) return std::nullopt;
  std::string charset = Lower(v.substr(0, q1));
  if (charset != "utf-8" && charset != "us-ascii") return std::nullopt;
  return PercentDecode(v.substr(q2 + 1));
}

std::string QuoteParam(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\r' || c == '\n') continue;
    out.push_back(c);
  }
  return out + "\"";
}

std::string PercentEncode(std::string_view v) {
  static char const kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || std::strchr("!#$&+-.^_`|~", c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

}  // namespace

std::string EncodeSessionFiles(std::vector<SessionFile> const& files) {
  json a = json::array();
  for (auto const& f : files) {
    a.push_back({{"mode", f.mode},
                 {"size", f.size},
                 {"ctime", f.ctime},
                 {"mtime", f.mtime},
                 {"atime", f.atime},
                 {"filename", f.filename}});
  }
  return a.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<std::vector<SessionFile>> DecodeSessionFiles(std::string_view json_array) {
  json a = json::parse(json_array, nullptr, false);
  if (!a.is_array()) return Malformed("files: not a JSON array");
  std::vector<SessionFile> out;
  for (auto const& e : a) {
    if (!e.is_object() || !e.contains("filename") || !e["filename"].is_string()) {
      return Malformed("files: an entry without a filename");
    }
    SessionFile f;
    f.filename = e["filename"].get<std::string>();
    if (auto it = e.find("mode"); it != e.end() && it->is_string()) f.mode = *it;
    if (auto it = e.find("size"); it != e.end() && it->is_number()) {
      f.size = it->get<std::int64_t>();
    }
    for (auto [key, field] : {std::pair{"ctime", &f.ctime}, std::pair{"mtime", &f.mtime},
                              std::pair{"atime", &f.atime}}) {
      if (auto it = e.find(key); it != e.end() && it->is_number()) *field = it->get<double>();
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string EncodeSessionFileList(SessionFileList const& list) {
  json j = {{"files", EncodeSessionFiles(list.files)},
            {"errors", list.errors},
            {"abspath", list.abspath}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<SessionFileList> DecodeSessionFileList(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return Malformed("file list: not a JSON object");
  SessionFileList out;
  auto files = j.find("files");
  if (files == j.end()) return Malformed("file list: no files");
  // The 24.09 manager sends the list as a JSON string; accept an array too.
  auto decoded = files->is_string() ? DecodeSessionFiles(files->get<std::string>())
                                    : DecodeSessionFiles(files->dump());
  if (!decoded.ok()) return std::move(decoded).status();
  out.files = std::move(*decoded);
  if (auto it = j.find("errors"); it != j.end() && it->is_string()) out.errors = *it;
  if (auto it = j.find("abspath"); it != j.end() && it->is_string()) out.abspath = *it;
  return out;
}

std::string FileModeString(std::uint32_t m) {
  std::string s = "?rwxrwxrwx";
  switch (m & 0170000) {
    case 0040000:
      s[0] = 'd';
      break;
    case 0100000:
      s[0] = '-';
      break;
    case 0120000:
      s[0] = 'l';
      break;
    case 0020000:
      s[0] = 'c';
      break;
    case 0060000:
      s[0] = 'b';
      break;
    case 0010000:
      s[0] = 'p';
      break;
    case 0140000:
      s[0] = 's';
      break;
    default:
      break;
  }
  for (int i = 0; i < 9; ++i) {
    if (!(m & (0400u >> i))) s[1 + i] = '-';
  }
  auto special = [&](std::uint32_t bit, int pos, char set, char unset) {
    if (m & bit) s[pos] = s[pos] == '-' ? unset : set;
  };
  special(04000, 3, 's', 'S');
  special(02000, 6, 's', 'S');
  special(01000, 9, 't', 'T');
  return s;
}

std::string TarHeader(TarMember const& member, std::int64_t size) {
  std::string name = member.name;
  if (member.type == TarType::kDirectory && (name.empty() || name.back() != '/')) name += '/';
  char type = member.type == TarType::kDirectory ? '5'
              : member.type == TarType::kSymlink ? '2'
                                                 : '0';
  std::int64_t data_size = member.type == TarType::kFile ? size : 0;
  std::string pax;
  if (name.size() > 100) pax += PaxRecord("path", name);
  if (member.link.size() > 100) pax += PaxRecord("linkpath", member.link);
  if (data_size >= (std::int64_t{1} << 33)) pax += PaxRecord("size", std::to_string(data_size));
  std::string out;
  if (!pax.empty()) {
    TarMember header;
    header.mode = 0644;
    header.mtime = member.mtime;
    out += Block(header, 'x', static_cast<std::int64_t>(pax.size()), "PaxHeader", "");
    out += pax + TarPadding(static_cast<std::int64_t>(pax.size()));
  }
  out +=
      Block(member, type, data_size >= (std::int64_t{1} << 33) ? 0 : data_size, name, member.link);
  return out;
}

std::string TarPadding(std::int64_t size) {
  std::size_t rest = static_cast<std::size_t>(size) % kBlock;
  return std::string(rest ? kBlock - rest : 0, '\0');
}

std::string TarEnd() { return std::string(2 * kBlock, '\0'); }

StatusOr<std::vector<TarMember>> ReadTar(std::string_view a) {
  std::vector<TarMember> out;
  std::string long_name, long_link;
  std::int64_t pax_size = -1;  // a pax record's size for the next member
  std::size_t at = 0;
  while (true) {
    if (a.size() - at < kBlock) {
      if (at == a.size()) return out;  // no end blocks: tolerated
      return Status(StatusCode::kDataLoss, "tar archive cut short");
    }
    std::string_view b = a.substr(at, kBlock);
    if (b.find_first_not_of('\0') == std::string_view::npos) return out;
    unsigned sum = 0;
    for (std::size_t i = 0; i < kBlock; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(b[i]);
    }
    if (sum != ReadOctal(b.substr(148, 8))) {
      return Status(StatusCode::kDataLoss, "tar archive damaged (bad header checksum)");
    }
    std::int64_t size = static_cast<std::int64_t>(ReadOctal(b.substr(124, 12)));
    if (pax_size >= 0) size = pax_size;
    char type = b[156];
    at += kBlock;
    if (size < 0 || static_cast<std::uint64_t>(size) > a.size() - at) {
      return Status(StatusCode::kDataLoss, "tar archive cut short");
    }
    std::string_view data = a.substr(at, static_cast<std::size_t>(size));
    at += static_cast<std::size_t>(size) + TarPadding(size).size();
    if (at > a.size()) at = a.size();
    if (type == 'x') {
      for (auto& [k, v] : ParsePax(data)) {
        if (k == "path") long_name = v;
        if (k == "linkpath") long_link = v;
        if (k == "size") pax_size = std::strtoll(v.c_str(), nullptr, 10);
      }
      continue;
    }
    if (type == 'L' || type == 'K') {
      (type == 'L' ? long_name : long_link) = CString(data);
      continue;
    }
    pax_size = -1;
    if (type == 'g') continue;
    TarMember m;
    std::string prefix = CString(b.substr(345, 155));
    m.name = !long_name.empty() ? long_name
             : prefix.empty()   ? CString(b.substr(0, 100))
                                : prefix + "/" + CString(b.substr(0, 100));
    m.link = !long_link.empty() ? long_link : CString(b.substr(157, 100));
    long_name.clear();
    long_link.clear();
    while (m.name.size() > 1 && m.name.back() == '/') m.name.pop_back();
    m.mode = static_cast<std::uint32_t>(ReadOctal(b.substr(100, 8)) & 07777);
    m.mtime = static_cast<std::int64_t>(ReadOctal(b.substr(136, 12)));
    if (type == '0' || type == '\0' || type == '7') {
      m.type = TarType::kFile;
      m.data = std::string(data);
    } else if (type == '5') {
      m.type = TarType::kDirectory;
    } else if (type == '2') {
      m.type = TarType::kSymlink;
    } else {
      continue;  // hard links, devices, FIFOs: not transferred
    }
    out.push_back(std::move(m));
  }
}

std::string EncodeMultipart(std::vector<MultipartPart> const& parts, std::string const& boundary) {
  std::string out;
  for (auto const& p : parts) {
    out += "--" + boundary + "\r\n";
    if (!p.name.empty()) {
      out += "Content-Disposition: form-data; name=" + QuoteParam(p.name);
      if (!p.filename.empty()) {
        out += "; filename=" + QuoteParam(p.filename);
        bool ascii = std::all_of(p.filename.begin(), p.filename.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
        if (!ascii) out += "; filename*=UTF-8''" + PercentEncode(p.filename);
      }
      out += "\r\n";
    }
    if (!p.content_type.empty()) out += "Content-Type: " + p.content_type + "\r\n";
    for (auto const& [k, v] : p.headers) out += k + ": " + v + "\r\n";
    out += "\r\n" + p.body + "\r\n";
  }
  out += "--" + boundary + "--\r\n";
  return out;
}

StatusOr<std::vector<MultipartPart>> DecodeMultipart(std::string_view content_type,
                                                     std::string_view body) {
  std::string boundary;
  if (Lower(content_type).rfind("multipart/", 0) != 0) {
    return Malformed("expected a multipart body, got '" + std::string(content_type) + "'");
  }
  for (auto& [k, v] : HeaderParams(content_type)) {
    if (k == "boundary") boundary = v;
  }
  if (boundary.empty() || boundary.size() > 200) return Malformed("multipart: no boundary");
  std::string delim = "--" + boundary;
  std::size_t at = body.find(delim);
  if (at == std::string_view::npos) return Malformed("multipart: no part");
  std::vector<MultipartPart> parts;
  while (true) {
    at += delim.size();
    if (body.substr(at, 2) == "--") return parts;  // the closing delimiter
    std::size_t line_end = body.find("\r\n", at);
    if (line_end == std::string_view::npos) return Malformed("multipart: cut short");
    std::size_t head_end = body.find("\r\n\r\n", line_end);
    if (head_end == std::string_view::npos) return Malformed("multipart: part without headers");
    MultipartPart part;
    part.content_type.clear();
    std::string_view head = head_end > line_end ? body.substr(line_end + 2, head_end - line_end - 2)
                                                : std::string_view();
    std::size_t pos = 0;
    while (pos <= head.size() && !head.empty()) {
      std::size_t e = head.find("\r\n", pos);
      std::string_view line = head.substr(pos, e == std::string_view::npos ? e : e - pos);
      std::size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        std::string name = Lower(Trim(line.substr(0, colon)));
        std::string_view value = Trim(line.substr(colon + 1));
        if (name == "content-disposition") {
          std::optional<std::string> ext;
          for (auto& [k, v] : HeaderParams(value)) {
            if (k == "name") part.name = v;
            // aiohttp (the official client) percent-encodes it ("up%2Fdata.bin") and reads
            // it back decoded, as 24.09's manager does: decode it too.
            if (k == "filename") part.filename = PercentDecode(v);
            if (k == "filename*") ext = ExtValue(v);
          }
          if (ext) part.filename = *ext;
        } else if (name == "content-type") {
          part.content_type = std::string(value);
        } else {
          part.headers.emplace_back(name, std::string(value));
        }
      }
      if (e == std::string_view::npos) break;
      pos = e + 2;
    }
    std::size_t data = head_end + 4;
    std::size_t next = body.find("\r\n" + delim, data);
    if (next == std::string_view::npos) return Malformed("multipart: a part is not closed");
    part.body = std::string(body.substr(data, next - data));
    parts.push_back(std::move(part));
    at = next + 2;
  }
}

}  // namespace bai::protocol
