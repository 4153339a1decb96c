// SPDX-License-Identifier: Apache-2.0
#include "config.h"

#include <charconv>

namespace bai::gpushim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::string SetDeviceKey(Config& config, std::string_view key, std::string_view value) {
  // key = "N.field"
  auto dot = key.find('.');
  if (dot == std::string_view::npos) return "malformed device key";
  int index = 0;
  if (!ParseNumber(key.substr(0, dot), &index) || index < 0 || index >= kMaxDevices) {
    return "device index out of range 0-" + std::to_string(kMaxDevices - 1);
  }
  size_t const old_size = config.devices.size();
  if (old_size <= static_cast<size_t>(index)) {
    config.devices.resize(static_cast<size_t>(index) + 1);
    for (size_t i = old_size; i < config.devices.size(); ++i) config.devices[i].quanta.set();
  }
  DeviceLimits& dev = config.devices[static_cast<size_t>(index)];
  std::string_view field = key.substr(dot + 1);
  if (field == "uuid") {
    dev.uuid = std::string(value);
  } else if (field == "memory") {
    if (!ParseNumber(value, &dev.memory_bytes)) return "memory is not a byte count";
  } else if (field == "quanta") {
    if (!ParseQuanta(value, &dev.quanta) || dev.quanta.none()) {
      return "quanta must be ranges within 0-" + std::to_string(kQuantaPerPeriod - 1);
    }
  } else if (field == "activity") {
    dev.activity_dir = std::string(value);
  } else if (field == "activity_self") {
    if (value.empty() || value.find('/') != std::string_view::npos || value == "." ||
        value == "..") {
      return "activity_self must be a file name";
    }
    dev.activity_self = std::string(value);
  } else {
    return "unknown device field '" + std::string(field) + "'";
  }
  return {};
}

std::string SetKey(Config& config, std::string_view key, std::string_view value) {
  if (key == "mode") {
    if (value == "off")
      config.mode = SharingMode::kOff;
    else if (value == "timeslice")
      config.mode = SharingMode::kTimeslice;
    else if (value == "mps")
      config.mode = SharingMode::kMps;
    else
      return "mode must be off, timeslice or mps";
  } else if (key == "compute") {
    if (value == "hard")
      config.compute = ComputeMode::kHard;
    else if (value == "soft")
      config.compute = ComputeMode::kSoft;
    else
      return "compute must be hard or soft";
  } else if (key == "managed") {
    if (value == "count")
      config.managed = ManagedPolicy::kCount;
    else if (value == "refuse")
      config.managed = ManagedPolicy::kRefuse;
    else
      return "managed must be count or refuse";
  } else if (key == "ledger") {
    config.ledger_path = std::string(value);
  } else if (key == "context_bytes") {
    if (!ParseNumber(value, &config.context_bytes)) return "context_bytes is not a byte count";
  } else if (key == "period_ms") {
    if (!ParseNumber(value, &config.period_ms) || config.period_ms < 10 ||
        config.period_ms > 10000) {
      return "period_ms must be 10-10000";
    }
  } else if (key == "version") {
    if (value != "1") return "unsupported version (this shim reads version 1)";
  } else if (key.starts_with("device.")) {
    return SetDeviceKey(config, key.substr(7), value);
  }
  // Other keys (resource.txt's SLOTS, MOUNTS…) may share the file; they are not ours.
  return {};
}

}  // namespace

bool ParseQuanta(std::string_view text, std::bitset<kQuantaPerPeriod>* out) {
  std::bitset<kQuantaPerPeriod> bits;
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view part = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    auto dash = part.find('-');
    int lo = 0;
    int hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseNumber(part, &lo)) return false;
      hi = lo;
    } else if (!ParseNumber(part.substr(0, dash), &lo) ||
               !ParseNumber(part.substr(dash + 1), &hi)) {
      return false;
    }
    if (lo < 0 || hi >= kQuantaPerPeriod || lo > hi) return false;
    for (int q = lo; q <= hi; ++q) bits.set(static_cast<size_t>(q));
  }
  *out = bits;
  return true;
}

std::string FormatQuanta(std::bitset<kQuantaPerPeriod> const& quanta) {
  std::string out;
  int q = 0;
  while (q < kQuantaPerPeriod) {
    if (!quanta.test(static_cast<size_t>(q))) {
      ++q;
      continue;
    }
    int end = q;
    while (end + 1 < kQuantaPerPeriod && quanta.test(static_cast<size_t>(end + 1))) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(q);
    if (end > q) out += '-' + std::to_string(end);
    q = end + 1;
  }
  return out;
}

ParseResult ParseConfig(std::string_view text) {
  ParseResult result;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    auto nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      result.error = "line " + std::to_string(line_no) + ": expected key=value";
      return result;
    }
    std::string err = SetKey(result.config, Trim(line.substr(0, eq)), Trim(line.substr(eq + 1)));
    if (!err.empty()) {
      result.error = "line " + std::to_string(line_no) + ": " + err;
      return result;
    }
  }
  if (result.config.mode != SharingMode::kOff && result.config.ledger_path.empty()) {
    result.error = "ledger= is required when mode is not off";
  }
  return result;
}

}  // namespace bai::gpushim
