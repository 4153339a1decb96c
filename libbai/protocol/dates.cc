// SPDX-License-Identifier: Apache-2.0
// Dates and durations: the one place that reads and writes them (bai/protocol/dates.h).
#include "bai/protocol/dates.h"

#include "libbai/util/text.h"

#include <cstdio>
#include <ctime>

namespace bai::protocol {
namespace {

using internal::TrimSpaces;

// --- date parsing -------------------------------------------------------------------------

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool Eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  // Exactly n digits.
  bool Digits(int n, int& out) {
    out = 0;
    for (int k = 0; k < n; ++k) {
      char c = peek();
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
      ++i_;
    }
    return true;
  }
  // One or two digits.
  bool Digits12(int& out) {
    if (!Digits(1, out)) return false;
    int second = 0;
    char c = peek();
    if (c >= '0' && c <= '9') {
      Digits(1, second);
      out = out * 10 + second;
    }
    return true;
  }
  std::string_view Word() {
    std::size_t start = i_;
    while (!done() && ((peek() >= 'A' && peek() <= 'Z') || (peek() >= 'a' && peek() <= 'z'))) ++i_;
    return s_.substr(start, i_ - start);
  }
  void SkipSpaces() {
    while (peek() == ' ') ++i_;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

std::int64_t DaysFromCivil(int y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  int const era = (y >= 0 ? y : y - 399) / 400;
  int const yoe = y - era * 400;
  int const doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<std::int64_t>(era) * 146097 + doe - 719468;
}

bool ValidCivil(int y, int mo, int d, int h, int mi, int s) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  int days = kDays[mo - 1] + (mo == 2 && leap ? 1 : 0);
  return d <= days;
}

std::optional<HttpDate> MakeDate(int y, int mo, int d, int h, int mi, int s, int offset) {
  if (!ValidCivil(y, mo, d, h, mi, s)) return std::nullopt;
  if (offset <= -24 * 3600 || offset >= 24 * 3600) return std::nullopt;
  HttpDate out;
  out.unix_seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset;
  out.utc_offset_seconds = offset;
  out.local_yyyymmdd = y * 10000 + mo * 100 + d;
  return out;
}

// "+09:00", "-0530", "+09", "Z"; sets offset seconds. Empty input is UTC.
bool ParseNumericOffset(Cursor& c, int& offset) {
  offset = 0;
  if (c.done()) return true;
  if (c.Eat('Z') || c.Eat('z')) return c.done();
  int sign = 0;
  if (c.Eat('+')) {
    sign = 1;
  } else if (c.Eat('-')) {
    sign = -1;
  } else {
    return false;
  }
  int hh = 0, mm = 0;
  if (!c.Digits(2, hh)) return false;
  if (c.Eat(':')) {
    if (!c.Digits(2, mm)) return false;
  } else if (!c.done()) {
    if (!c.Digits(2, mm)) return false;
  }
  if (hh > 23 || mm > 59) return false;
  offset = sign * (hh * 3600 + mm * 60);
  return c.done();
}

bool ParseZoneName(std::string_view zone, int& offset) {
  struct Zone {
    std::string_view name;
    int hours;
  };
  static constexpr Zone kZones[] = {{"GMT", 0},  {"UTC", 0},  {"UT", 0},   {"Z", 0},
                                    {"EST", -5}, {"EDT", -4}, {"CST", -6}, {"CDT", -5},
                                    {"MST", -7}, {"MDT", -6}, {"PST", -8}, {"PDT", -7}};
  for (auto const& z : kZones) {
    if (z.name == zone) {
      offset = z.hours * 3600;
      return true;
    }
  }
  return false;
}

std::optional<HttpDate> ParseIso(std::string_view text) {
  Cursor c(text);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!c.Digits(4, y)) return std::nullopt;
  bool extended = c.Eat('-');
  if (!c.Digits(2, mo) || (extended && !c.Eat('-')) || !c.Digits(2, d)) return std::nullopt;
  if (!c.Eat('T') && !c.Eat('t') && !c.Eat(' ')) return std::nullopt;
  if (!c.Digits(2, h)) return std::nullopt;
  bool colon = c.Eat(':');
  if (!c.Digits(2, mi)) return std::nullopt;
  if (colon ? c.Eat(':') : (c.peek() >= '0' && c.peek() <= '9')) {
    if (!c.Digits(2, s)) return std::nullopt;
    if (c.Eat('.') || c.Eat(',')) {
      int digit = 0;
      int n = 0;
      while (c.Digits(1, digit)) ++n;
      if (n == 0 || n > 9) return std::nullopt;
    }
  }
  int offset = 0;
  c.SkipSpaces();
  Cursor zone_cursor = c;
  std::string_view word = zone_cursor.Word();
  if (!word.empty() && word != "Z" && word != "z") {
    if (!ParseZoneName(word, offset) || !zone_cursor.done()) return std::nullopt;
  } else if (!ParseNumericOffset(c, offset)) {
    return std::nullopt;
  }
  return MakeDate(y, mo, d, h, mi, s, offset);
}

std::optional<HttpDate> ParseRfc1123(std::string_view text) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  Cursor c(text);
  std::string_view weekday = c.Word();
  if (!weekday.empty()) {
    if (!c.Eat(',')) return std::nullopt;
    c.SkipSpaces();
  }
  int d = 0, mo = 0, y = 0, h = 0, mi = 0, s = 0;
  if (!c.Digits12(d)) return std::nullopt;
  if (!c.Eat(' ') && !c.Eat('-')) return std::nullopt;
  std::string_view month = c.Word();
  for (int i = 0; i < 12; ++i) {
    if (kMonths[i] == month) mo = i + 1;
  }
  if (mo == 0 || (!c.Eat(' ') && !c.Eat('-'))) return std::nullopt;
  if (!c.Digits(4, y) || !c.Eat(' ')) return std::nullopt;
  if (!c.Digits(2, h) || !c.Eat(':') || !c.Digits(2, mi)) return std::nullopt;
  if (c.Eat(':') && !c.Digits(2, s)) return std::nullopt;
  int offset = 0;
  c.SkipSpaces();
  if (c.peek() == '+' || c.peek() == '-') {
    if (!ParseNumericOffset(c, offset)) return std::nullopt;
  } else {
    std::string_view zone = c.Word();
    if (!c.done()) return std::nullopt;
    if (!zone.empty() && !ParseZoneName(zone, offset)) return std::nullopt;
  }
  return MakeDate(y, mo, d, h, mi, s, offset);
}

struct Civil {
  int year, month, day, hour, minute, second, weekday;
};

// The UTC calendar fields of `seconds` since the epoch (no time zone database involved).
Civil CivilFromSeconds(std::int64_t seconds) {
  std::int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  std::int64_t rest = seconds - days * 86400;
  // Howard Hinnant's civil_from_days.
  std::int64_t z = days + 719468;
  std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  std::int64_t doe = z - era * 146097;
  std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  std::int64_t mp = (5 * doy + 2) / 153;
  int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  int y = static_cast<int>(yoe + era * 400 + (m <= 2 ? 1 : 0));
  int weekday = static_cast<int>((days % 7 + 11) % 7);  // 1970-01-01 was a Thursday
  return {y,
          m,
          d,
          static_cast<int>(rest / 3600),
          static_cast<int>(rest % 3600 / 60),
          static_cast<int>(rest % 60),
          weekday};
}

}  // namespace

std::optional<HttpDate> ParseHttpDate(std::string_view text) {
  text = TrimSpaces(text);
  if (text.size() < 8 || text.size() > 64) return std::nullopt;
  if (text[0] >= '0' && text[0] <= '9' && text.size() > 4 && text[2] != ' ' && text[1] != ' ') {
    if (auto iso = ParseIso(text)) return iso;
  }
  return ParseRfc1123(text);
}

std::string FormatRequestDate(std::chrono::system_clock::time_point t) {
  return FormatRfc3339Seconds(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

std::optional<std::int64_t> ParseDurationSeconds(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t unit = 1;
  switch (text.back()) {
    case 's':
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 604800;
      break;
    default:
      unit = 0;
  }
  if (unit != 0) {
    text.remove_suffix(1);
  } else {
    unit = 1;
  }
  if (text.empty() || text.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n * unit;
}

std::string FormatRfc3339(std::int64_t seconds, std::int64_t micros) {
  Civil c = CivilFromSeconds(seconds);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld+00:00", c.year, c.month,
                c.day, c.hour, c.minute, c.second, static_cast<long long>(micros));
  return buf;
}

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::int64_t seconds = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  return FormatRfc3339(seconds, micros - seconds * 1000000);
}

std::string FormatRfc3339Seconds(std::int64_t seconds) {
  Civil c = CivilFromSeconds(seconds);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d+00:00", c.year, c.month, c.day,
                c.hour, c.minute, c.second);
  return buf;
}

std::string FormatHttpDate(std::int64_t seconds) {
  static constexpr char const* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr char const* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  Civil c = CivilFromSeconds(seconds);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[c.weekday], c.day,
                kMonths[c.month - 1], c.year, c.hour, c.minute, c.second);
  return buf;
}

std::string FormatStamp(std::chrono::system_clock::time_point t) {
  Civil c = CivilFromSeconds(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  char buf[24];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ", c.year, c.month, c.day, c.hour,
                c.minute, c.second);
  return buf;
}

}  // namespace bai::protocol
