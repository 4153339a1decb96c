// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bai::protocol {

__extension__ typedef __int128 Int128;  // NOLINT(modernize-use-using): __extension__ needs typedef

/// An exact resource amount: a signed decimal with 6 fractional digits, or "unlimited"
/// (`"Infinity"` on the wire). Values are never rounded; arithmetic reports overflow.
class BAI_EXPORT Decimal {
 public:
  static constexpr int kScale = 6;
  static constexpr std::int64_t kUnitsPerOne = 1000000;

  /// Zero.
  constexpr Decimal() = default;
  static Decimal FromInteger(std::int64_t value) { return Decimal(Int128(value) * kUnitsPerOne); }
  static Decimal Unlimited() {
    Decimal d;
    d.unlimited_ = true;
    return d;
  }
  /// From a count of millionths; nullopt when outside the supported range.
  static std::optional<Decimal> FromUnits(Int128 units);

  /// Parses "2", "-0.5", "1.25e3", "+4", "Infinity" (also "inf", any case). More than 6
  /// fractional digits, NaN, "-Infinity", stray characters and values of 10^31 or more are
  /// errors (kInvalidArgument) naming the bad text.
  static StatusOr<Decimal> Parse(std::string_view text);

  bool is_unlimited() const { return unlimited_; }
  bool is_zero() const { return !unlimited_ && units_ == 0; }
  bool is_negative() const { return !unlimited_ && units_ < 0; }
  /// Millionths; meaningless for unlimited values.
  Int128 units() const { return units_; }

  /// Canonical text: "1.5", "2", "-0.000001", "Infinity".
  std::string ToString() const;
  /// The largest integer not above this value (whole bytes for byte slots).
  Decimal Floor() const;
  /// For display and ratios only; never for accounting.
  double ToDouble() const;

  /// Sum/difference, or nullopt on overflow or an undefined result (unlimited minus unlimited,
  /// anything minus unlimited). Unlimited plus or minus a finite value stays unlimited.
  std::optional<Decimal> Add(Decimal other) const;
  std::optional<Decimal> Sub(Decimal other) const;

  friend bool operator==(Decimal a, Decimal b) {
    return a.unlimited_ == b.unlimited_ && (a.unlimited_ || a.units_ == b.units_);
  }
  friend bool operator!=(Decimal a, Decimal b) { return !(a == b); }
  friend bool operator<(Decimal a, Decimal b) {
    if (a.unlimited_) return false;
    if (b.unlimited_) return true;
    return a.units_ < b.units_;
  }
  friend bool operator>(Decimal a, Decimal b) { return b < a; }
  friend bool operator<=(Decimal a, Decimal b) { return !(b < a); }
  friend bool operator>=(Decimal a, Decimal b) { return !(a < b); }

 private:
  explicit constexpr Decimal(Int128 units) : units_(units) {}
  Int128 units_ = 0;
  bool unlimited_ = false;
};

/// Parses a binary size: a decimal number, then optionally one of `k m g t p e` (either case,
/// powers of 1024), then optionally `i` and/or `b`/`B` ("512m", "4GiB", "1.5t", "4096").
/// The result is rounded down to a whole byte. Errors name the bad text.
BAI_EXPORT StatusOr<Decimal> ParseBinarySize(std::string_view text);

/// How a slot's amounts are measured.
enum class SlotType { kCount, kBytes, kUnique };

/// "count", "bytes", "unique".
BAI_EXPORT std::string_view ToString(SlotType type);
BAI_EXPORT std::optional<SlotType> ParseSlotType(std::string_view text);
/// The type of a well-known slot (`cpu`, `mem`, `cuda.device`, `cuda.shares`, `cuda.mem`, …);
/// nullopt for other names. Servers publish the authoritative list at /config/resource-slots.
BAI_EXPORT std::optional<SlotType> KnownSlotType(std::string_view slot_name);

/// Parses one slot amount given as text: a size for kBytes slots (rounded down to whole bytes),
/// a decimal otherwise. Negative amounts are refused.
BAI_EXPORT StatusOr<Decimal> ParseSlotAmount(SlotType type, std::string_view text);

/// Slot name → amount, ordered by name.
using ResourceSlots = std::map<std::string, Decimal>;

/// Adds `more` into `total`, slot by slot (a slot missing from `total` counts as 0; a sum past
/// the largest amount saturates to unlimited).
BAI_EXPORT void AddInto(ResourceSlots& total, ResourceSlots const& more);

/// What a session gets of the slots its request leaves out: cpu 1 and mem 1 GiB (the manager
/// fills them in; `--dry-run` checks with them).
BAI_EXPORT ResourceSlots DefaultSessionSlots();

/// Parses "cpu=2,mem=4g" (the CLI's -r syntax, also one pair at a time) into `slots`, using
/// KnownSlotType or `kCount` for unknown names.
BAI_EXPORT Status ParseSlotAssignment(std::string_view text, ResourceSlots& slots);

}  // namespace bai::protocol
