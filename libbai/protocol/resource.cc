// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/resource.h"

#include "libbai/util/text.h"

#include <cmath>

namespace bai::protocol {
namespace {

// |units| stays below 10^37 (values below 10^31): a sum of two in-range values cannot overflow
// the 128-bit integer, so range checks after each operation are enough.
constexpr Int128 Pow10(int n) {
  Int128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}
constexpr Int128 kMaxUnits = Pow10(37);
constexpr int kMaxSignificantDigits = 36;

bool InRange(Int128 units) { return units < kMaxUnits && units > -kMaxUnits; }

Status Invalid(std::string what, std::string_view text) {
  return Status(StatusCode::kInvalidArgument, what + ": \"" + std::string(text) + "\"");
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string UnsignedToString(Int128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return s;
}

}  // namespace

std::optional<Decimal> Decimal::FromUnits(Int128 units) {
  if (!InRange(units)) return std::nullopt;
  return Decimal(units);
}

StatusOr<Decimal> Decimal::Parse(std::string_view text) {
  std::string_view rest = text;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  if (internal::EqualsIgnoreCase(rest, "infinity") || internal::EqualsIgnoreCase(rest, "inf")) {
    if (negative) return Invalid("negative infinity is not an amount", text);
    return Unlimited();
  }
  Int128 mantissa = 0;
  int significant = 0;
  int fraction_digits = 0;
  bool any_digit = false;
  bool in_fraction = false;
  std::size_t i = 0;
  for (; i < rest.size(); ++i) {
    char c = rest[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (!IsDigit(c)) break;
    any_digit = true;
    if (mantissa != 0 || c != '0') ++significant;
    if (significant > kMaxSignificantDigits) return Invalid("number has too many digits", text);
    mantissa = mantissa * 10 + (c - '0');
    if (in_fraction) ++fraction_digits;
  }
  if (!any_digit) return Invalid("not a number", text);
  int exponent = 0;
  if (i < rest.size() && (rest[i] == 'e' || rest[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < rest.size() && (rest[i] == '+' || rest[i] == '-')) exp_negative = rest[i++] == '-';
    std::size_t exp_start = i;
    for (; i < rest.size() && IsDigit(rest[i]); ++i) {
      exponent = exponent * 10 + (rest[i] - '0');
      if (exponent > 100) return Invalid("exponent out of range", text);
    }
    if (i == exp_start) return Invalid("not a number", text);
    if (exp_negative) exponent = -exponent;
  }
  if (i != rest.size()) return Invalid("not a number", text);

  int shift = kScale + exponent - fraction_digits;  // units = mantissa * 10^shift
  Int128 units = mantissa;
  if (shift < 0) {
    Int128 divisor = Pow10(-shift > 38 ? 38 : -shift);
    if (-shift > 38 || units % divisor != 0) {
      if (units != 0) return Invalid("more than 6 fractional digits", text);
      units = 0;
    } else {
      units /= divisor;
    }
  } else if (units != 0) {
    if (shift > 37 || significant + shift > 37) return Invalid("number out of range", text);
    units *= Pow10(shift);
  }
  if (!InRange(units)) return Invalid("number out of range", text);
  return Decimal(negative ? -units : units);
}

std::string Decimal::ToString() const {
  if (unlimited_) return "Infinity";
  Int128 magnitude = units_ < 0 ? -units_ : units_;
  std::string out = units_ < 0 ? "-" : "";
  out += UnsignedToString(magnitude / kUnitsPerOne);
  auto frac = static_cast<std::int64_t>(magnitude % kUnitsPerOne);
  if (frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, static_cast<std::size_t>(kScale) - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out;
}

Decimal Decimal::Floor() const {
  if (unlimited_) return *this;
  Int128 rem = units_ % kUnitsPerOne;
  if (rem == 0) return *this;
  return Decimal(units_ - rem - (rem < 0 ? kUnitsPerOne : 0));
}

double Decimal::ToDouble() const {
  if (unlimited_) return HUGE_VAL;
  return static_cast<double>(units_) / static_cast<double>(kUnitsPerOne);
}

std::optional<Decimal> Decimal::Add(Decimal other) const {
  if (unlimited_ || other.unlimited_) return Unlimited();
  return FromUnits(units_ + other.units_);
}

std::optional<Decimal> Decimal::Sub(Decimal other) const {
  if (other.unlimited_) return std::nullopt;
  if (unlimited_) return Unlimited();
  return FromUnits(units_ - other.units_);
}

StatusOr<Decimal> ParseBinarySize(std::string_view text) {
  std::string_view number = text;
  int power = 0;
  if (!number.empty() && (number.back() == 'b' || number.back() == 'B')) number.remove_suffix(1);
  bool has_i = false;
  if (!number.empty() && (number.back() == 'i' || number.back() == 'I')) {
    number.remove_suffix(1);
    has_i = true;
  }
  if (!number.empty()) {
    constexpr std::string_view kSuffixes = "kmgtpe";
    auto pos = kSuffixes.find(internal::AsciiLower(number.substr(number.size() - 1))[0]);
    if (pos != std::string_view::npos) {
      power = static_cast<int>(pos) + 1;
      number.remove_suffix(1);
    }
  }
  if (has_i && power == 0) return Invalid("invalid size (\"i\" needs a k/m/g/t/p/e unit)", text);
  bool digits_only = !number.empty() && number.front() != '.' && number.back() != '.';
  int dots = 0;
  for (char c : number) {
    if (c == '.') {
      ++dots;
    } else if (!IsDigit(c)) {
      digits_only = false;
    }
  }
  if (!digits_only || dots > 1) {
    return Invalid("invalid size (expected a number with an optional k/m/g/t/p/e unit)", text);
  }
  auto value = Decimal::Parse(number);
  if (!value.ok()) return Invalid("invalid size (" + value.status().message() + ")", text);
  Int128 units = value->units();
  for (int i = 0; i < power; ++i) {
    units *= 1024;
    if (!InRange(units)) return Invalid("size out of range", text);
  }
  return Decimal::FromUnits(units)->Floor();
}

std::string_view ToString(SlotType type) {
  switch (type) {
    case SlotType::kCount:
      return "count";
    case SlotType::kBytes:
      return "bytes";
    case SlotType::kUnique:
      return "unique";
  }
  return "count";
}

std::optional<SlotType> ParseSlotType(std::string_view text) {
  if (text == "count") return SlotType::kCount;
  if (text == "bytes") return SlotType::kBytes;
  if (text == "unique") return SlotType::kUnique;
  return std::nullopt;
}

std::optional<SlotType> KnownSlotType(std::string_view slot_name) {
  if (slot_name == "mem" || slot_name == "cuda.mem" || slot_name == "rocm.mem") {
    return SlotType::kBytes;
  }
  if (slot_name == "cpu" || slot_name == "cuda.device" || slot_name == "cuda.shares" ||
      slot_name == "rocm.device" || slot_name == "tpu.device" || slot_name == "ipu.device" ||
      slot_name == "atom.device" || slot_name == "warboy.device") {
    return SlotType::kCount;
  }
  return std::nullopt;
}

StatusOr<Decimal> ParseSlotAmount(SlotType type, std::string_view text) {
  auto value = type == SlotType::kBytes ? ParseBinarySize(text) : Decimal::Parse(text);
  if (!value.ok()) return value;
  if (value->is_negative()) return Invalid("negative resource amount", text);
  return value;
}

void AddInto(ResourceSlots& total, ResourceSlots const& more) {
  for (auto const& [slot, amount] : more) {
    auto have = total.find(slot);
    auto sum = (have == total.end() ? Decimal() : have->second).Add(amount);
    total[slot] = sum ? *sum : Decimal::Unlimited();
  }
}

ResourceSlots DefaultSessionSlots() {
  return {{"cpu", Decimal::FromInteger(1)}, {"mem", Decimal::FromInteger(1024LL * 1024 * 1024)}};
}

Status ParseSlotAssignment(std::string_view text, ResourceSlots& slots) {
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return Invalid("expected SLOT=AMOUNT", item);
    }
    std::string_view name = item.substr(0, eq);
    for (char c : name) {
      bool ok = (c >= 'a' && c <= 'z') || IsDigit(c) || c == '.' || c == '_' || c == '-';
      if (!ok) return Invalid("invalid slot name", name);
    }
    auto amount =
        ParseSlotAmount(KnownSlotType(name).value_or(SlotType::kCount), item.substr(eq + 1));
    if (!amount.ok()) return amount.status();
    slots[std::string(name)] = *amount;
  }
  return {};
}

}  // namespace bai::protocol
