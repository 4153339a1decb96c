// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/session_util.h"

#include "bai/protocol/session_wire.h"

#include "cli/exit_codes.h"
#include "cli/output.h"

#include <nlohmann/json.hpp>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace bai::cli {
using nlohmann::json;
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};

void OnInterrupt(int sig) {
  g_signal = sig;
  g_interrupted = true;
}

}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

Place ParsePlace(std::string const& arg) {
  auto colon = arg.find(':');
  if (colon == std::string::npos || colon == 0 ||
      arg.substr(0, colon).find('/') != std::string::npos) {
    return {"", arg};
  }
  return {arg.substr(0, colon), arg.substr(colon + 1)};
}

bool Interrupted() { return g_interrupted.load(); }
int InterruptSignal() { return g_signal.load(); }
std::atomic<bool> const* InterruptFlag() { return &g_interrupted; }

bool ReadEnvFlags(Context& ctx, std::vector<std::string> const& flags,
                  std::map<std::string, std::string>& into) {
  for (auto const& e : flags) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      ctx.err() << "error: -e " << e << ": expected KEY=VALUE\n";
      return false;
    }
    into[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return true;
}

std::optional<std::int64_t> DurationFlag(Context& ctx, char const* flag, std::string const& value) {
  auto seconds = protocol::ParseDurationSeconds(value);
  if (!seconds || *seconds <= 0) {
    ctx.err() << "error: " << flag << " " << value
              << ": expected a duration such as 30s, 5m, 1h, 2d (or seconds)\n";
    return std::nullopt;
  }
  return seconds;
}

int JobError(Context& ctx, Status const& status) {
  if (ctx.json()) {
    ctx.err() << nlohmann::json{{"exit_code", kJobBaiError}, {"error", ErrorJson(status)}}.dump()
              << "\n";
  } else {
    ctx.err() << "error: " << status.message() << "\n" << FieldErrors(status.error_info());
  }
  return kJobBaiError;
}

namespace {

// Slot amounts as JSON numbers: integers when whole (bytes always are), else decimals.
json SlotNumbers(protocol::ResourceSlots const& slots) {
  json out = json::object();
  for (auto const& [k, v] : slots) {
    if (v.is_unlimited()) {
      out[k] = nullptr;
    } else if (v.Floor() == v) {
      out[k] = static_cast<std::int64_t>(v.units() / protocol::Decimal::kUnitsPerOne);
    } else {
      out[k] = v.ToDouble();
    }
  }
  return out;
}

std::string Upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), ::toupper);
  return text;
}

json OptJson(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }

// A session's fields in bai's one shape (cli/output_schema.h kSession, `bai help output`),
// from what a listing and what `session info` know alike.
json SessionJson(std::string const& id, std::string const& name, std::string const& status,
                 std::string const& status_info, std::string const& type, std::string const& image,
                 std::string const& scaling_group, std::optional<std::string> const& tag,
                 std::string const& result, std::optional<std::int64_t> exit_code,
                 std::string const& created_at, std::optional<std::string> const& terminated_at,
                 std::optional<protocol::ResourceSlots> const& requested,
                 protocol::ResourceSlots const& occupied) {
  return {{"id", id},
          {"name", name},
          {"status", status},
          {"status_info", status_info},
          {"type", Upper(type)},
          {"image", image},
          {"scaling_group", scaling_group},
          {"tag", OptJson(tag)},
          {"result", Upper(result)},
          {"job_exit_code", exit_code ? json(*exit_code) : json(nullptr)},
          {"created_at", created_at},
          {"terminated_at", OptJson(terminated_at)},
          {"requested_slots", requested ? SlotNumbers(*requested) : json()},
          {"occupied_slots", SlotNumbers(occupied)}};
}

}  // namespace

json ItemJson(SessionListItem const& s) {
  json j = SessionJson(s.id, s.name, s.status.text, s.status_info, s.type, s.image, s.scaling_group,
                       s.tag, s.result, s.exit_code, s.created_at, s.terminated_at, s.requested,
                       s.occupied);
  j["access_key"] = s.access_key;  // a listing's own: whose session (admins list others')
  return j;
}

json InfoJson(SessionInfo const& s) {
  json j = SessionJson(s.id, s.name, s.status.text, s.status_info, s.type, s.image, s.scaling_group,
                       s.tag, s.result, s.exit_code, s.created_at, s.terminated_at, s.requested,
                       s.occupied);
  json devices = json::array();
  for (auto const& d : s.attached_devices) {
    devices.push_back({{"kind", d.kind},
                       {"device_id", d.device_id},
                       {"slot", d.slot},
                       {"amount", d.amount.ToDouble()}});
  }
  j["agent_id"] = OptJson(s.agent_id);
  j["architecture"] = s.architecture;
  j["domain_name"] = s.domain_name;
  j["group_id"] = s.group_id;
  j["user_id"] = s.user_id;
  j["environ"] = s.environ;
  j["status_history"] = s.status_history;
  j["startup_command"] = OptJson(s.startup_command);
  j["num_queries"] = s.num_queries;
  j["priority"] = s.priority ? json(*s.priority) : json();
  j["attached_devices"] = std::move(devices);
  if (s.kernel_setup) {
    j["network"] = s.kernel_setup->network;
    j["scratch"] = {{"backing", s.kernel_setup->scratch},
                    {"home_bytes", s.kernel_setup->home_bytes},
                    {"tmp_bytes", s.kernel_setup->tmp_bytes}};
  } else {
    j["network"] = nullptr;
    j["scratch"] = nullptr;
  }
  return j;
}

void PrintOutputFrom(protocol::SessionOutput const& output, std::int64_t offset,
                     std::function<void(std::string const&, std::string const&)> const& print) {
  for (auto const& [stream, text] : protocol::OutputFrom(output, offset)) print(stream, text);
}

FollowedJob FollowToEnd(SessionClient const& sessions, std::string const& id,
                        std::function<void(std::string const&, std::string const&)> const& print,
                        std::int64_t offset) {
  FollowedJob out;
  for (int failures = 0; failures < 3; ++failures) {
    auto r = sessions.FollowLogs(
        id,
        [&](protocol::LogEvent const& e) {
          print(e.stream, e.data);
          if (e.stream != "notice") offset = e.offset + static_cast<std::int64_t>(e.data.size());
        },
        offset, [] { return !Interrupted(); });
    if (r.ok()) {
      out.end = *r;
      return out;
    }
    if (r.status().code() == StatusCode::kCancelled || Interrupted()) {
      out.interrupted = true;
      return out;
    }
    if (r.status().code() == StatusCode::kNotFound) {
      out.error = r.status();
      return out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // No stream (an agent out of this manager's reach): wait for the end, then print the rest.
  WaitOptions wait;
  wait.cancelled = [] { return Interrupted(); };
  auto end = sessions.WaitForEnd(id, wait);
  if (!end.ok()) {
    out.interrupted = end.status().code() == StatusCode::kCancelled;
    if (!out.interrupted) out.error = end.status();
    return out;
  }
  auto logs = sessions.Output(id);
  if (logs.ok()) PrintOutputFrom(*logs, offset, print);
  out.end = *end;
  return out;
}

std::string UseText(std::optional<protocol::SessionUse> const& use) {
  if (!use) return "-";
  std::string out;
  auto add = [&](std::string const& part) { out += (out.empty() ? "" : " ") + part; };
  if (use->cpu_pct) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", *use->cpu_pct);
    add(std::string("cpu=") + buf);
  }
  auto bytes = [](std::int64_t n) {
    return HumanSlotAmount("mem", protocol::Decimal::FromInteger(n));
  };
  if (use->mem_bytes) {
    add("mem=" + bytes(*use->mem_bytes) +
        (use->mem_limit_bytes ? "/" + bytes(*use->mem_limit_bytes) : ""));
  }
  if (use->gpu_mem_bytes) add("cuda.mem=" + bytes(*use->gpu_mem_bytes));
  return out.empty() ? "-" : out;
}

nlohmann::json UseJson(std::optional<protocol::SessionUse> const& use) {
  if (!use) return nullptr;
  auto opt = [](auto const& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"cpu_pct", opt(use->cpu_pct)},
          {"mem_bytes", opt(use->mem_bytes)},
          {"mem_limit_bytes", opt(use->mem_limit_bytes)},
          {"gpu_mem_bytes", opt(use->gpu_mem_bytes)}};
}

}  // namespace bai::cli
