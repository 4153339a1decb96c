// SPDX-License-Identifier: Apache-2.0
#include "cli/output.h"

#include <algorithm>
#include <cstdio>

namespace bai::cli {

// Left-aligned columns, two spaces apart.
void PrintTable(Context& ctx, std::vector<std::vector<std::string>> const& rows) {
  if (rows.empty()) return;
  if (ctx.csv()) {
    for (auto const& r : rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (i > 0) line += ',';
        if (r[i].find_first_of(",\"\r\n") == std::string::npos) {
          line += r[i];
          continue;
        }
        line += '"';
        for (char c : r[i]) line += c == '"' ? std::string("\"\"") : std::string(1, c);
        line += '"';
      }
      ctx.out() << line << "\n";
    }
    return;
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (auto const& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (auto const& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    ctx.out() << line << "\n";
  }
}

void PrintJson(Context& ctx, nlohmann::json doc) {
  doc["exit_code"] = 0;
  ctx.out() << doc.dump() << "\n";
}

void PrintDone(Context& ctx, std::string const& words) {
  if (ctx.json()) {
    ctx.out() << nlohmann::json{{"exit_code", 0}}.dump() << "\n";
  } else if (ctx.stdout_tty()) {
    ctx.out() << words << "\n";
  }
}

std::string YesNo(bool b) { return b ? "yes" : "no"; }

std::string HumanSeconds(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  char out[32];
  if (s >= 3600) {
    std::snprintf(out, sizeof out, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  } else if (s >= 60) {
    std::snprintf(out, sizeof out, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(out, sizeof out, "%llds", s);
  }
  return out;
}

std::string HumanBytes(double bytes) {
  static char const* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char out[32];
  std::snprintf(out, sizeof out, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return out;
}

std::string HumanSlotAmount(std::string const& slot, protocol::Decimal const& amount) {
  if (amount.is_unlimited() || protocol::KnownSlotType(slot) != protocol::SlotType::kBytes) {
    return amount.ToString();
  }
  static char const kUnits[] = {'K', 'M', 'G', 'T', 'P'};
  double value = amount.ToDouble();
  int unit = -1;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit < 0) return amount.ToString();
  char out[32];
  std::snprintf(out, sizeof out, "%.2f", value);
  std::string text = out;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text + kUnits[unit];
}

std::string HumanSlots(protocol::ResourceSlots const& slots) {
  std::string out;
  for (auto const& [k, v] : slots)
    out += (out.empty() ? "" : " ") + k + "=" + HumanSlotAmount(k, v);
  return out.empty() ? "-" : out;
}

}  // namespace bai::cli
