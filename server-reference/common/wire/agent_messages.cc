// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/agent_messages.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/base64.h"

#include <nlohmann/json.hpp>

#include <algorithm>

using bai::internal::Base64Decode;
using bai::internal::Base64Encode;

namespace bai::server::agent_protocol {

using internal::FieldReader;
using nlohmann::json;

json NodeStatsJson(NodeStats const& stats) {
  return {{"cpu_pct", stats.cpu_pct},
          {"core_pct", stats.core_pct},
          {"mem_used", stats.mem_used},
          {"mem_total", stats.mem_total}};
}

json KernelUsageJson(KernelUsage const& u) {
  json j = {{"cpu_used_ms", u.cpu_used_ms}, {"mem_current", u.mem_current},
            {"mem_peak", u.mem_peak},       {"mem_limit", u.mem_limit},
            {"io_read", u.io_read},         {"io_write", u.io_write}};
  if (u.gpu_mem) j["gpu_mem"] = *u.gpu_mem;
  return j;
}

json KernelSetupJson(KernelSetup const& s) {
  return {{"network", s.network},
          {"scratch", s.scratch},
          {"home_bytes", s.home_bytes},
          {"tmp_bytes", s.tmp_bytes}};
}

namespace {

// A session id from the manager: a UUID (8-4-4-4-12 hex digits). The agent builds paths and
// cgroup names from it, so "/" or ".." must never get through.
std::string SessionId(FieldReader& r) {
  std::string id = r.Required("session_id");
  bool ok = id.size() == 36;
  for (std::size_t i = 0; ok && i < id.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = id[i];
    ok = dash ? c == '-'
              : ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
  }
  if (r.ok() && !ok) r.Fail("session_id", "a UUID");
  return id;
}

// The message type names: spelled here and nowhere else.
constexpr char kRegister[] = "register";
constexpr char kHeartbeat[] = "heartbeat";
constexpr char kKernelStatus[] = "kernel_status";
constexpr char kResponse[] = "response";
constexpr char kBgtask[] = "bgtask";
constexpr char kError[] = "error";
constexpr char kChallenge[] = "challenge";
constexpr char kRegistered[] = "registered";
constexpr char kCreateKernel[] = "create_kernel";
constexpr char kDestroyKernel[] = "destroy_kernel";
constexpr char kExecute[] = "execute";
constexpr char kRestartKernel[] = "restart_kernel";
constexpr char kCommitKernel[] = "commit_kernel";
constexpr char kKernelOutput[] = "kernel_output";
constexpr char kReadLogs[] = "read_logs";
constexpr char kRescanImages[] = "rescan_images";
constexpr char kPurgeImages[] = "purge_images";
constexpr char kKernelFiles[] = "kernel_files";
constexpr char kOpenStream[] = "open_stream";
constexpr char kStartService[] = "start_service";

std::string Dump(json const& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

Status Malformed(std::string const& type, std::string const& why) {
  return Status(StatusCode::kInvalidArgument,
                (type.empty() ? std::string("message") : "'" + type + "' message") + ": " + why);
}

// --- pieces shared by several messages -------------------------------------------------------

json SlotsJson(protocol::ResourceSlots const& slots) { return internal::SlotsToJson(slots); }

// Amounts as strings or numbers, each a non-negative decimal (sizes allowed for byte slots);
// `types` gives slot types where the message carries them.
std::optional<protocol::ResourceSlots> ReadSlots(
    FieldReader& r, char const* key, std::map<std::string, protocol::SlotType> const& types = {}) {
  auto const* j = r.Object(key);
  if (j == nullptr) return std::nullopt;
  auto slots = internal::SlotsFromJson(*j, [&types](std::string const& name) {
    auto it = types.find(name);
    return it != types.end() ? std::optional(it->second) : protocol::KnownSlotType(name);
  });
  if (!slots.ok()) {
    r.Fail(key, "a map of non-negative slot amounts (" + slots.status().message() + ")");
    return std::nullopt;
  }
  for (auto const& [name, amount] : *slots) {
    if (amount.is_unlimited()) {
      r.Fail(std::string(key) + "." + name, "a finite amount");
      return std::nullopt;
    }
  }
  return *slots;
}

std::map<std::string, std::string> ReadStringMap(FieldReader& r, char const* key) {
  std::map<std::string, std::string> out;
  auto const* j = r.Object(key);
  if (j == nullptr) return out;
  for (auto const& [k, v] : j->items()) {
    if (!v.is_string()) {
      r.Fail(std::string(key) + "." + k, "a string");
      return {};
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

std::vector<std::string> ReadStringList(FieldReader& r, char const* key) {
  std::vector<std::string> out;
  auto const* j = r.Array(key);
  if (j == nullptr) return out;
  for (auto const& v : *j) {
    if (!v.is_string()) {
      r.Fail(key, "a list of strings");
      return {};
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

// Each element of the array at `key`, read by `read` from its own FieldReader.
template <class T, class Read>
std::vector<T> ReadList(FieldReader& r, char const* key, Read read) {
  std::vector<T> out;
  auto const* j = r.Array(key);
  if (j == nullptr) return out;
  for (std::size_t i = 0; i < j->size(); ++i) {
    std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!(*j)[i].is_object()) {
      r.Fail(where, "an object");
      return {};
    }
    FieldReader item((*j)[i]);
    out.push_back(read(item));
    if (!item.ok()) {
      r.Fail(where, "well-formed (" + item.error() + ")");
      return {};
    }
  }
  return out;
}

json KernelStatusJson(KernelStatus const& k) {
  json j = {{"session_id", k.session_id},
            {"status", std::string(protocol::ToString(k.status))},
            {"reason", k.reason}};
  if (k.exit_code) j["exit_code"] = *k.exit_code;
  if (k.logs) j["logs"] = *k.logs;
  if (!k.service_ports.empty())
    j["service_ports"] = json::parse(protocol::EncodeApps(k.service_ports));
  if (k.usage) j["usage"] = KernelUsageJson(*k.usage);
  if (k.setup) j["setup"] = KernelSetupJson(*k.setup);
  if (k.pull) {
    j["pull"] = {{"image", k.pull->image}, {"done", k.pull->done}, {"total", k.pull->total}};
  }
  return j;
}

std::optional<KernelSetup> ReadSetup(json const& j, FieldReader& r) {
  KernelSetup s;
  auto text = [&](char const* key, std::string& out, std::initializer_list<char const*> allowed) {
    auto it = j.find(key);
    if (it != j.end() && it->is_string()) {
      for (char const* a : allowed) {
        if (*it == a) {
          out = it->get<std::string>();
          return true;
        }
      }
    }
    r.Fail(std::string("setup.") + key, "one of its known words");
    return false;
  };
  auto bytes = [&](char const* key, std::int64_t& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) {
      r.Fail(std::string("setup.") + key, "a non-negative integer");
      return false;
    }
    out = it->get<std::int64_t>();
    return true;
  };
  bool ok = text("network", s.network, {"bridge", "none"});
  ok = text("scratch", s.scratch, {"disk", "tmpfs"}) && ok;
  ok = bytes("home_bytes", s.home_bytes) && ok;
  ok = bytes("tmp_bytes", s.tmp_bytes) && ok;
  if (!ok) return std::nullopt;
  return s;
}

// Usage figures: non-negative integers; `where` names the object in errors.
std::optional<KernelUsage> ReadUsage(json const& j, std::string const& where, FieldReader& r) {
  if (!j.is_object()) {
    r.Fail(where, "an object");
    return std::nullopt;
  }
  KernelUsage u;
  bool ok = true;
  auto field = [&](char const* key, std::int64_t& out, bool required) {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) {
        r.Fail(where + "." + key, "a non-negative integer");
        ok = false;
      }
      return false;
    }
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
      r.Fail(where + "." + key, "a non-negative integer");
      ok = false;
      return false;
    }
    out = it->get<std::int64_t>();
    return true;
  };
  field("cpu_used_ms", u.cpu_used_ms, true);
  field("mem_current", u.mem_current, true);
  field("mem_peak", u.mem_peak, true);
  field("mem_limit", u.mem_limit, false);
  field("io_read", u.io_read, true);
  field("io_write", u.io_write, true);
  std::int64_t gpu = 0;
  if (field("gpu_mem", gpu, false)) u.gpu_mem = gpu;
  if (!ok) return std::nullopt;
  return u;
}

KernelStatus ReadKernelStatus(FieldReader& r) {
  KernelStatus k;
  k.session_id = SessionId(r);
  using protocol::KernelStatus;
  auto status = r.Required("status");
  k.status = protocol::ParseKernelStatus(status).status;
  if (r.ok() && k.status != KernelStatus::kPreparing && k.status != KernelStatus::kRunning &&
      k.status != KernelStatus::kTerminated && k.status != KernelStatus::kError) {
    r.Fail("status", "PREPARING, RUNNING, TERMINATED or ERROR");
  }
  k.exit_code = r.OptInt("exit_code");
  k.reason = r.String("reason");
  k.logs = r.OptString("logs");
  if (auto const* ports = r.Array("service_ports")) {
    auto apps = protocol::DecodeApps(ports->dump());
    if (apps.ok()) {
      k.service_ports = std::move(*apps);
    } else {
      r.Fail("service_ports", "a list of apps (" + apps.status().message() + ")");
    }
  }
  if (auto const* usage = r.Object("usage")) k.usage = ReadUsage(*usage, "usage", r);
  if (auto const* setup = r.Object("setup")) k.setup = ReadSetup(*setup, r);
  if (auto const* pull = r.Object("pull")) {
    FieldReader p(*pull);
    k.pull = PullState{p.String("image"), p.Int("done", 0), p.Int("total", 0)};
    if (!p.ok()) r.Fail("pull", "{image, done, total}");
  }
  return k;
}

// --- encoders ---------------------------------------------------------------------------------

json ImagesJson(std::vector<ImageInfo> const& list) {
  json images = json::array();
  for (auto const& i : list) {
    json image = {{"name", i.name}, {"aliases", i.aliases}};
    if (i.size > 0) image["size"] = i.size;
    if (!i.kind.empty()) image["kind"] = i.kind;
    images.push_back(std::move(image));
  }
  return images;
}

std::vector<ImageInfo> ReadImages(FieldReader& r) {
  return ReadList<ImageInfo>(r, "images", [](FieldReader& item) {
    return ImageInfo{item.Required("name"), ReadStringList(item, "aliases"), item.Int("size", 0),
                     item.String("kind")};
  });
}

json ToJson(Register const& m) {
  json slot_types = json::object();
  for (auto const& [name, type] : m.slot_types) slot_types[name] = std::string(ToString(type));
  json devices = json::array();
  for (auto const& d : m.devices) {
    devices.push_back({{"kind", d.kind},
                       {"index", d.index},
                       {"uuid", d.uuid},
                       {"name", d.name},
                       {"memory", d.memory},
                       {"shares", d.shares.ToString()}});
  }
  json kernels = json::array();
  for (auto const& k : m.kernels) kernels.push_back(KernelStatusJson(k));
  return {{"type", kRegister},
          {"version", m.version},
          {"proof", m.proof},
          {"agent_version", m.agent_version},
          {"scaling_group", m.scaling_group},
          {"architecture", m.architecture},
          {"slots", SlotsJson(m.slots)},
          {"slot_types", slot_types},
          {"images", ImagesJson(m.images)},
          {"devices", devices},
          {"device_policy", m.device_policy},
          {"kernels", kernels},
          {"primary", m.primary}};
}

json ToJson(Heartbeat const& m) {
  json j = {{"type", kHeartbeat}};
  if (m.slots) j["slots"] = SlotsJson(*m.slots);
  if (m.stats) j["stats"] = NodeStatsJson(*m.stats);
  if (!m.usage.empty()) {
    json usage = json::object();
    for (auto const& [id, u] : m.usage) usage[id] = KernelUsageJson(u);
    j["usage"] = usage;
  }
  return j;
}

json ToJson(KernelStatus const& m) {
  json j = KernelStatusJson(m);
  j["type"] = kKernelStatus;
  return j;
}

json ToJson(Response const& m) {
  auto result = internal::ParseJson(m.result_json);
  return {{"type", kResponse},
          {"request_id", m.request_id},
          {"result", result && result->is_object() ? *result : json::object()}};
}

json ToJson(TaskReport const& m) {
  json j = {{"type", kBgtask},
            {"task_id", m.task_id},
            {"status", std::string(protocol::ToString(m.status))},
            {"message", m.message}};
  if (m.current_progress) j["current_progress"] = *m.current_progress;
  if (m.total_progress) j["total_progress"] = *m.total_progress;
  return j;
}

json ChunksJson(std::vector<OutputChunk> const& chunks) {
  json out = json::array();
  for (auto const& c : chunks) out.push_back(json::array({c.stream, c.data}));
  return out;
}

// [[stream, data], …] with stream stdout, stderr or notice.
std::vector<OutputChunk> ReadChunks(FieldReader& r, char const* key) {
  std::vector<OutputChunk> out;
  auto const* list = r.Array(key);
  if (list == nullptr) return out;
  for (auto const& c : *list) {
    if (!c.is_array() || c.size() != 2 || !c[0].is_string() || !c[1].is_string()) {
      r.Fail(key, "a list of [stream, text] pairs");
      return {};
    }
    auto stream = c[0].get<std::string>();
    if (stream != "stdout" && stream != "stderr" && stream != "notice") {
      r.Fail(key, "streams stdout, stderr or notice");
      return {};
    }
    out.push_back({std::move(stream), c[1].get<std::string>()});
  }
  return out;
}

// Framed chunks: [stream, size] pairs in the header, their bytes one after another after it.
std::pair<json, std::string> FrameChunks(std::vector<OutputChunk> const& chunks) {
  std::pair<json, std::string> out{json::array(), {}};
  for (auto const& c : chunks) {
    out.first.push_back(json::array({c.stream, c.data.size()}));
    out.second += c.data;
  }
  return out;
}

// Puts the bytes back into [stream, size] pairs (as [stream, text]); false unless the sizes
// cover `payload` exactly.
bool UnframeChunks(json& chunks, std::string_view payload) {
  if (!chunks.is_array()) return false;
  std::size_t at = 0;
  for (auto& c : chunks) {
    if (!c.is_array() || c.size() != 2 || !c[1].is_number_unsigned() ||
        c[1].get<std::uint64_t>() > payload.size() - at) {
      return false;
    }
    auto n = static_cast<std::size_t>(c[1].get<std::uint64_t>());
    c[1] = std::string(payload.substr(at, n));
    at += n;
  }
  return at == payload.size();
}

json ToJson(KernelOutput const& m) {
  return {{"type", kKernelOutput},
          {"session_id", m.session_id},
          {"offset", m.offset},
          {"chunks", ChunksJson(m.chunks)}};
}

json ToJson(PurgeImages const& m) {
  return {{"type", kPurgeImages},
          {"request_id", m.request_id},
          {"images", m.images},
          {"prune", m.prune}};
}

json ToJson(RescanImages const& m) {
  return {{"type", kRescanImages}, {"request_id", m.request_id}};
}

json ToJson(ReadLogs const& m) {
  return {{"type", kReadLogs},
          {"request_id", m.request_id},
          {"session_id", m.session_id},
          {"offset", m.offset},
          {"limit", m.limit}};
}

json ToJson(KernelFiles const& m) {
  json j = {{"type", kKernelFiles},
            {"request_id", m.request_id},
            {"session_id", m.session_id},
            {"action", m.action},
            {"path", m.path}};
  if (!m.data.empty()) j["data"] = Base64Encode(m.data);
  if (m.limit) j["limit"] = m.limit;
  return j;
}

json ToJson(OpenStream const& m) {
  return {{"type", kOpenStream}, {"stream_id", m.stream_id}, {"session_id", m.session_id},
          {"kind", m.kind},      {"rows", m.rows},           {"cols", m.cols},
          {"port", m.port},      {"command", m.command}};
}

json ToJson(StartService const& m) {
  return {{"type", kStartService},
          {"request_id", m.request_id},
          {"session_id", m.session_id},
          {"stop", m.stop},
          {"name", m.name},
          {"port", m.port},
          {"arguments", m.arguments},
          {"envs", m.envs}};
}

json ToJson(ErrorReport const& m) { return {{"type", kError}, {"msg", m.msg}}; }

json ToJson(Challenge const& m) { return {{"type", kChallenge}, {"nonce", m.nonce}}; }

json ToJson(Registered const& m) {
  return {{"type", kRegistered},
          {"heartbeat_interval_ms", m.heartbeat_interval_ms},
          {"scaling_group", m.scaling_group}};
}

json ToJson(CreateKernel const& m) {
  json mounts = json::array();
  for (auto const& v : m.mounts) {
    mounts.push_back({{"name", v.name},
                      {"host_path", v.host_path},
                      {"kernel_path", v.kernel_path},
                      {"permission", v.permission}});
  }
  auto optional = [](auto const& v) { return v ? json(*v) : json(nullptr); };
  return {{"type", kCreateKernel},
          {"session_id", m.session_id},
          {"session_name", m.session_name},
          {"session_type", m.session_type},
          {"image", m.image},
          {"architecture", m.architecture},
          {"resources", SlotsJson(m.resources)},
          {"environ", m.environ},
          {"mounts", mounts},
          {"startup_command", optional(m.startup_command)},
          {"bootstrap_script", optional(m.bootstrap_script)},
          {"batch_timeout", optional(m.batch_timeout)},
          {"access_key", m.access_key},
          {"devices", DeviceAllocationsToJson(m.devices)},
          {"preopen_ports", m.preopen_ports},
          {"network", m.network},
          {"dotfiles", json::parse(protocol::EncodeDotfiles(m.dotfiles))},
          {"registry", m.registry ? json{{"name", m.registry->name},
                                         {"url", m.registry->url},
                                         {"username", m.registry->username},
                                         {"password", m.registry->password},
                                         {"ssl_verify", m.registry->ssl_verify},
                                         {"auto_pull", m.registry->auto_pull},
                                         {"digest", m.registry->digest}}
                                  : json(nullptr)}};
}

json ToJson(DestroyKernel const& m) {
  return {{"type", kDestroyKernel}, {"session_id", m.session_id}, {"reason", m.reason}};
}

json ToJson(Execute const& m) {
  return {{"type", kExecute},     {"request_id", m.request_id}, {"session_id", m.session_id},
          {"mode", m.mode},       {"run_id", m.run_id},         {"code", m.code},
          {"options", m.options}, {"flush_ms", m.flush_ms}};
}

json ToJson(RestartKernel const& m) {
  return {{"type", kRestartKernel}, {"request_id", m.request_id}, {"session_id", m.session_id}};
}

json ToJson(CommitKernel const& m) {
  return {{"type", kCommitKernel}, {"request_id", m.request_id}, {"session_id", m.session_id},
          {"task_id", m.task_id},  {"filename", m.filename},     {"directory", m.directory}};
}

// --- decoders ---------------------------------------------------------------------------------

Register ReadRegister(FieldReader& r) {
  Register m;
  m.version = r.Int("version", 0);
  m.proof = r.String("proof");
  m.agent_version = r.String("agent_version");
  m.scaling_group = r.String("scaling_group", "default");
  m.architecture = r.String("architecture", "x86_64");
  for (auto const& [name, text] : ReadStringMap(r, "slot_types")) {
    auto type = protocol::ParseSlotType(text);
    if (!type) {
      r.Fail("slot_types." + name, "count, bytes or unique");
      break;
    }
    m.slot_types[name] = *type;
  }
  m.slots = ReadSlots(r, "slots", m.slot_types).value_or(protocol::ResourceSlots{});
  m.images = ReadImages(r);
  m.devices = ReadList<DeviceInfo>(r, "devices", [](FieldReader& item) {
    DeviceInfo d;
    d.kind = item.String("kind", "cuda");
    d.index = item.Int("index", 0);
    if (d.index < 0) item.Fail("index", "not negative");
    d.uuid = item.String("uuid");
    d.name = item.String("name");
    d.memory = item.Int("memory", 0);
    if (d.memory < 0) item.Fail("memory", "not negative");
    auto shares = protocol::Decimal::Parse(item.String("shares", "0"));
    if (!shares.ok() || shares->is_negative() || shares->is_unlimited()) {
      item.Fail("shares", "a non-negative decimal");
    } else {
      d.shares = *shares;
    }
    return d;
  });
  m.device_policy = r.String("device_policy", "evenly");
  if (m.device_policy != "evenly" && m.device_policy != "fill") {
    r.Fail("device_policy", "evenly or fill");
  }
  m.kernels = ReadList<KernelStatus>(r, "kernels", ReadKernelStatus);
  m.primary = r.Bool("primary", true);
  return m;
}

Heartbeat ReadHeartbeat(FieldReader& r) {
  Heartbeat m{ReadSlots(r, "slots"), std::nullopt, {}};
  if (auto const* usage = r.Object("usage")) {
    for (auto const& [id, u] : usage->items()) {
      // Keys are session ids: the same check as a message's session_id.
      json wrapped = {{"session_id", id}};
      FieldReader key(wrapped);
      SessionId(key);
      if (!key.ok()) {
        r.Fail("usage", "an object keyed by session ids");
        break;
      }
      auto read = ReadUsage(u, "usage." + id, r);
      if (!read) break;
      m.usage[id] = *read;
    }
  }
  auto const* stats = r.Object("stats");
  if (!stats) return m;
  auto number = [&](char const* key, double low, double high) -> std::optional<double> {
    auto it = stats->find(key);
    if (it == stats->end() || !it->is_number() || it->get<double>() < low ||
        it->get<double>() > high) {
      r.Fail(std::string("stats.") + key, "a number from " + std::to_string(low));
      return std::nullopt;
    }
    return it->get<double>();
  };
  NodeStats n;
  constexpr double kBytes = 9.0e18;  // within int64
  auto cpu = number("cpu_pct", 0, 100);
  auto used = number("mem_used", 0, kBytes);
  auto total = number("mem_total", 0, kBytes);
  auto cores = stats->find("core_pct");
  if (cores != stats->end()) {
    if (!cores->is_array() || cores->size() > 4096) {
      r.Fail("stats.core_pct", "a list of at most 4096 numbers");
    } else {
      for (auto const& c : *cores) {
        if (!c.is_number() || c.get<double>() < 0 || c.get<double>() > 100) {
          r.Fail("stats.core_pct", "numbers from 0 to 100");
          break;
        }
        n.core_pct.push_back(c.get<double>());
      }
    }
  }
  if (!cpu || !used || !total) return m;
  n.cpu_pct = *cpu;
  n.mem_used = static_cast<std::int64_t>(*used);
  n.mem_total = static_cast<std::int64_t>(*total);
  m.stats = std::move(n);
  return m;
}

Response ReadResponse(FieldReader& r) {
  Response m;
  m.request_id = r.Required("request_id");
  auto const* result = r.Object("result");
  m.result_json = result ? Dump(*result) : "{}";
  return m;
}

TaskReport ReadTaskReport(FieldReader& r) {
  TaskReport m;
  m.task_id = r.Required("task_id");
  m.status = protocol::ParseTaskStatus(r.String("status", "ongoing"));
  if (r.ok() && m.status == protocol::TaskStatus::kUnknown) {
    r.Fail("status", "ongoing, done, failed or cancelled");
  }
  m.message = r.String("message");
  m.current_progress = r.OptInt("current_progress");
  m.total_progress = r.OptInt("total_progress");
  return m;
}

KernelOutput ReadKernelOutput(FieldReader& r) {
  KernelOutput m;
  m.session_id = SessionId(r);
  m.offset = r.Int("offset", 0);
  if (m.offset < 0) r.Fail("offset", "not negative");
  m.chunks = ReadChunks(r, "chunks");
  return m;
}

RescanImages ReadRescanImages(FieldReader& r) { return RescanImages{r.Required("request_id")}; }

PurgeImages ReadPurgeImages(FieldReader& r) {
  return PurgeImages{r.Required("request_id"), ReadStringList(r, "images"), r.Bool("prune", true)};
}

ReadLogs ReadReadLogs(FieldReader& r) {
  ReadLogs m;
  m.request_id = r.Required("request_id");
  m.session_id = SessionId(r);
  m.offset = r.Int("offset", 0);
  m.limit = r.Int("limit", 4 << 20);
  if (m.offset < 0) r.Fail("offset", "not negative");
  if (m.limit <= 0) r.Fail("limit", "positive");
  return m;
}

OpenStream ReadOpenStream(FieldReader& r) {
  OpenStream m;
  m.stream_id = r.Required("stream_id");
  bool hex = m.stream_id.size() == 32;
  for (char c : m.stream_id) hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!hex) r.Fail("stream_id", "32 lowercase hex characters");
  m.session_id = SessionId(r);
  m.kind = r.Required("kind");
  if (m.kind != "pty" && m.kind != "exec" && m.kind != "tcp") r.Fail("kind", "pty, exec or tcp");
  m.rows = static_cast<int>(r.Int("rows", 24));
  m.cols = static_cast<int>(r.Int("cols", 80));
  m.port = static_cast<int>(r.Int("port", 0));
  if (m.rows < 1 || m.rows > 10000) r.Fail("rows", "1 to 10000");
  if (m.cols < 1 || m.cols > 10000) r.Fail("cols", "1 to 10000");
  if (m.kind == "tcp" && (m.port < 1 || m.port > 65535)) r.Fail("port", "1 to 65535");
  m.command = ReadStringList(r, "command");
  if (m.kind == "exec" && m.command.empty()) r.Fail("command", "required for exec");
  return m;
}

StartService ReadStartService(FieldReader& r) {
  StartService m;
  m.request_id = r.Required("request_id");
  m.session_id = SessionId(r);
  m.stop = r.Bool("stop", false);
  m.name = r.Required("name");
  m.port = static_cast<int>(r.Int("port", 0));
  if (m.port < 1 || m.port > 65535) r.Fail("port", "1 to 65535");
  m.arguments = ReadStringMap(r, "arguments");
  m.envs = ReadStringMap(r, "envs");
  return m;
}

KernelFiles ReadKernelFiles(FieldReader& r) {
  KernelFiles m;
  m.request_id = r.Required("request_id");
  m.session_id = SessionId(r);
  m.action = r.Required("action");
  m.path = r.String("path");
  auto data = Base64Decode(r.String("data"));
  if (!data) r.Fail("data", "Base64");
  m.data = data.value_or("");
  m.limit = r.Int("limit", 0);
  if (m.limit < 0) r.Fail("limit", "not negative");
  return m;
}

ErrorReport ReadError(FieldReader& r) { return ErrorReport{r.String("msg")}; }

Challenge ReadChallenge(FieldReader& r) { return Challenge{r.Required("nonce")}; }

Registered ReadRegistered(FieldReader& r) {
  Registered m;
  // Clamped to 100 ms … 10 min: 2^62 overflowed the timer and the agent busy-looped.
  m.heartbeat_interval_ms = std::clamp<std::int64_t>(r.Int("heartbeat_interval_ms", 5000),
                                                     kMinHeartbeatMs, kMaxHeartbeatMs);
  m.scaling_group = r.String("scaling_group");
  return m;
}

CreateKernel ReadCreateKernel(FieldReader& r) {
  CreateKernel m;
  m.session_id = SessionId(r);
  m.session_name = r.String("session_name");
  m.session_type = r.String("session_type", "interactive");
  m.image = r.Required("image");
  m.architecture = r.String("architecture", "x86_64");
  m.resources = ReadSlots(r, "resources").value_or(protocol::ResourceSlots{});
  m.environ = ReadStringMap(r, "environ");
  m.mounts = ReadList<Mount>(r, "mounts", [](FieldReader& item) {
    Mount v;
    v.name = item.String("name");
    v.host_path = item.Required("host_path");
    v.kernel_path = item.String("kernel_path");
    v.permission = item.String("permission", "ro");
    return v;
  });
  m.startup_command = r.OptString("startup_command");
  m.bootstrap_script = r.OptString("bootstrap_script");
  m.batch_timeout = r.OptInt("batch_timeout");
  m.access_key = r.String("access_key");
  if (auto const* devices = r.Array("devices")) {
    auto parsed = DeviceAllocationsFromJson(*devices);
    if (parsed.ok()) {
      m.devices = *parsed;
    } else {
      r.Fail("devices", "a list of device allocations (" + parsed.status().message() + ")");
    }
  }
  if (auto const* ports = r.Array("preopen_ports")) {
    for (auto const& p : *ports) {
      if (!p.is_number_integer() || p.get<std::int64_t>() <= 1024 ||
          p.get<std::int64_t>() >= 65535) {
        r.Fail("preopen_ports", "a list of ports above 1024 and below 65535");
        break;
      }
      m.preopen_ports.push_back(p.get<int>());
    }
  }
  if (auto const* registry = r.Object("registry")) {
    FieldReader g(*registry);
    ImageRegistry reg{g.Required("name"),         g.Required("url"),
                      g.String("username"),       g.String("password"),
                      g.Bool("ssl_verify", true), g.String("auto_pull", "digest"),
                      g.String("digest")};
    if (reg.auto_pull != "digest" && reg.auto_pull != "tag" && reg.auto_pull != "none") {
      r.Fail("registry.auto_pull", "digest, tag or none");
    } else if (!g.ok()) {
      r.Fail("registry", "{name, url, username, password, ssl_verify, auto_pull, digest}");
    } else {
      m.registry = std::move(reg);
    }
  }
  if (auto const* dotfiles = r.Array("dotfiles")) {
    auto parsed = protocol::DecodeDotfiles(dotfiles->dump());
    if (parsed.ok()) m.dotfiles = std::move(*parsed);
    for (auto const& d : m.dotfiles) {
      if (auto s = protocol::CheckDotfile(d); !s.ok()) {
        r.Fail("dotfiles", "dotfiles beneath /home/work (" + s.message() + ")");
        break;
      }
    }
  }
  m.network = r.String("network");
  if (!m.network.empty() && m.network != "bridge" && m.network != "none") {
    r.Fail("network", "bridge or none");
  }
  return m;
}

DestroyKernel ReadDestroyKernel(FieldReader& r) {
  auto session_id = SessionId(r);
  return DestroyKernel{session_id, r.String("reason")};
}

Execute ReadExecute(FieldReader& r) {
  Execute m;
  m.request_id = r.Required("request_id");
  m.session_id = SessionId(r);
  m.mode = r.String("mode", "query");
  m.run_id = r.String("run_id");
  m.code = r.String("code");
  m.options = ReadStringMap(r, "options");
  m.flush_ms = std::max<std::int64_t>(0, r.Int("flush_ms", 0));
  return m;
}

RestartKernel ReadRestartKernel(FieldReader& r) {
  auto request_id = r.Required("request_id");
  return RestartKernel{request_id, SessionId(r)};
}

CommitKernel ReadCommitKernel(FieldReader& r) {
  CommitKernel m;
  m.request_id = r.Required("request_id");
  m.session_id = SessionId(r);
  m.task_id = r.Required("task_id");
  m.filename = r.Required("filename");
  m.directory = r.String("directory");
  if (!m.directory.empty() && m.directory[0] != '/') r.Fail("directory", "an absolute path");
  return m;
}

// Parses `text` as an object with a string `type` and hands it to the decoder for that type.
template <class Variant>
struct Decoder {
  using Read = Variant (*)(FieldReader&);
  std::map<std::string, Read, std::less<>> by_type;

  StatusOr<Variant> operator()(std::string_view text) const {
    auto j = internal::ParseJson(text);
    if (!j || !j->is_object()) return Malformed("", "not a JSON object");
    FieldReader r(*j);
    std::string type = r.Required("type");
    if (!r.ok()) return Malformed("", r.error());
    auto it = by_type.find(type);
    if (it == by_type.end()) return Malformed(type, "unknown message type");
    Variant v = it->second(r);
    if (!r.ok()) return Malformed(type, r.error());
    return v;
  }
};

template <class Variant, class T, T (*Read)(FieldReader&)>
Variant As(FieldReader& r) {
  return Variant(Read(r));
}

}  // namespace

std::string Encode(ToManager const& message) {
  if (auto const* out = std::get_if<KernelOutput>(&message)) {
    auto [sizes, payload] = FrameChunks(out->chunks);
    json header = {{"type", kKernelOutput},
                   {"session_id", out->session_id},
                   {"offset", out->offset},
                   {"chunks", std::move(sizes)}};
    return Dump(header) + "\n" + payload;
  }
  if (auto const* response = std::get_if<Response>(&message)) {
    // The result travels as it is, after the header: never parsed and written again here.
    return Dump({{"type", kResponse}, {"request_id", response->request_id}}) + "\n" +
           response->result_json;
  }
  return Dump(std::visit([](auto const& m) { return ToJson(m); }, message));
}

std::string Encode(ToAgent const& message) {
  return Dump(std::visit([](auto const& m) { return ToJson(m); }, message));
}

namespace {

// A framed message: kernel_output (its chunks [stream, size], the bytes after the header) or
// response (its result after the header, as the agent wrote it).
StatusOr<ToManager> DecodeFramed(std::string_view header_text, std::string_view payload) {
  auto header = internal::ParseJson(header_text);
  if (!header || !header->is_object()) return Malformed("", "not a JSON object");
  std::string type = header->value("type", "");
  if (type == kResponse) {
    FieldReader r(*header);
    Response m;
    m.request_id = r.Required("request_id");
    if (!r.ok()) return Malformed(kResponse, r.error());
    m.result_json = std::string(payload);
    return ToManager(std::move(m));
  }
  if (type != kKernelOutput) return Malformed(type, "only kernel_output and response are framed");
  auto chunks = header->find("chunks");
  if (chunks == header->end() || !UnframeChunks(*chunks, payload)) {
    return Malformed(kKernelOutput, "chunks: [stream, size] pairs covering the bytes sent");
  }
  FieldReader r(*header);
  KernelOutput m = ReadKernelOutput(r);
  if (!r.ok()) return Malformed(kKernelOutput, r.error());
  return ToManager(std::move(m));
}

}  // namespace

StatusOr<ToManager> DecodeToManager(std::string_view text) {
  // JSON as this codec writes it has no raw newline: one means a framed message.
  if (auto eol = text.find('\n'); eol != std::string_view::npos) {
    return DecodeFramed(text.substr(0, eol), text.substr(eol + 1));
  }
  static Decoder<ToManager> const kDecode{{
      {kRegister, As<ToManager, Register, ReadRegister>},
      {kHeartbeat, As<ToManager, Heartbeat, ReadHeartbeat>},
      {kKernelStatus, As<ToManager, KernelStatus, ReadKernelStatus>},
      {kResponse, As<ToManager, Response, ReadResponse>},
      {kBgtask, As<ToManager, TaskReport, ReadTaskReport>},
      {kKernelOutput, As<ToManager, KernelOutput, ReadKernelOutput>},
      {kError, As<ToManager, ErrorReport, ReadError>},
  }};
  return kDecode(text);
}

StatusOr<ToAgent> DecodeToAgent(std::string_view text) {
  static Decoder<ToAgent> const kDecode{{
      {kChallenge, As<ToAgent, Challenge, ReadChallenge>},
      {kRegistered, As<ToAgent, Registered, ReadRegistered>},
      {kCreateKernel, As<ToAgent, CreateKernel, ReadCreateKernel>},
      {kDestroyKernel, As<ToAgent, DestroyKernel, ReadDestroyKernel>},
      {kExecute, As<ToAgent, Execute, ReadExecute>},
      {kRestartKernel, As<ToAgent, RestartKernel, ReadRestartKernel>},
      {kCommitKernel, As<ToAgent, CommitKernel, ReadCommitKernel>},
      {kReadLogs, As<ToAgent, ReadLogs, ReadReadLogs>},
      {kKernelFiles, As<ToAgent, KernelFiles, ReadKernelFiles>},
      {kOpenStream, As<ToAgent, OpenStream, ReadOpenStream>},
      {kStartService, As<ToAgent, StartService, ReadStartService>},
      {kRescanImages, As<ToAgent, RescanImages, ReadRescanImages>},
      {kPurgeImages, As<ToAgent, PurgeImages, ReadPurgeImages>},
      {kError, As<ToAgent, ErrorReport, ReadError>},
  }};
  return kDecode(text);
}

ToAgent WithRequestId(AgentRequest request, std::string request_id) {
  return std::visit(
      [&request_id](auto m) -> ToAgent {
        m.request_id = std::move(request_id);
        return m;
      },
      std::move(request));
}

std::string EncodeReply(PurgeReply const& reply) {
  return Dump({{"removed", reply.removed},
               {"errors", reply.errors},
               {"freed", reply.freed},
               {"images", ImagesJson(reply.images)}});
}

StatusOr<PurgeReply> DecodePurgeReply(std::string_view result_json) {
  auto j = internal::ParseJson(result_json);
  if (!j || !j->is_object()) return Malformed(kPurgeImages, "reply is not a JSON object");
  FieldReader r(*j);
  PurgeReply reply{ReadStringList(r, "removed"), ReadStringList(r, "errors"), r.Int("freed", 0),
                   ReadImages(r)};
  if (!r.ok()) return Malformed(kPurgeImages, "reply " + r.error());
  return reply;
}

std::string EncodeReply(ImagesReply const& reply) {
  return Dump({{"images", ImagesJson(reply.images)}});
}

StatusOr<ImagesReply> DecodeImagesReply(std::string_view result_json) {
  auto j = internal::ParseJson(result_json);
  if (!j || !j->is_object()) return Malformed(kRescanImages, "reply is not a JSON object");
  FieldReader r(*j);
  ImagesReply reply{ReadImages(r)};
  if (!r.ok()) return Malformed(kRescanImages, "reply " + r.error());
  return reply;
}

std::string EncodeReply(RestartReply const& reply) {
  json j = {{"ok", reply.ok}};
  if (!reply.ok) j["msg"] = reply.msg;
  return Dump(j);
}

std::string EncodeReply(CommitReply const& reply) {
  json j = {{"ok", reply.ok}};
  if (reply.ok) {
    j["path"] = reply.path;
  } else {
    j["msg"] = reply.msg;
    j["client_error"] = reply.client_error;
  }
  return Dump(j);
}

std::string EncodeReply(LogsReply const& reply) {
  json j = {{"ok", reply.ok}};
  if (!reply.ok) {
    j["msg"] = reply.msg;
    return Dump(j);
  }
  // Framed as kernel_output is: the chunks' bytes raw after the header line.
  auto [sizes, payload] = FrameChunks(reply.chunks);
  j["offset"] = reply.offset;
  j["chunks"] = std::move(sizes);
  j["size"] = reply.size;
  j["ended"] = reply.ended;
  j["truncated"] = reply.truncated;
  return Dump(j) + "\n" + payload;
}

StatusOr<LogsReply> DecodeLogsReply(std::string_view result) {
  auto eol = result.find('\n');
  auto j = internal::ParseJson(result.substr(0, eol));
  if (!j || !j->is_object()) return Malformed(kReadLogs, "reply is not a JSON object");
  if (eol != std::string_view::npos) {
    auto chunks = j->find("chunks");
    if (chunks == j->end() || !UnframeChunks(*chunks, result.substr(eol + 1))) {
      return Malformed(kReadLogs, "reply: chunks [stream, size] covering the bytes sent");
    }
  }
  FieldReader r(*j);
  LogsReply reply;
  reply.ok = r.Bool("ok", false);
  reply.msg = r.String("msg");
  reply.offset = r.Int("offset", 0);
  reply.chunks = ReadChunks(r, "chunks");
  reply.size = r.Int("size", 0);
  reply.ended = r.Bool("ended", false);
  reply.truncated = r.Bool("truncated", false);
  if (!r.ok()) return Malformed(kReadLogs, "reply " + r.error());
  return reply;
}

StatusOr<RestartReply> DecodeRestartReply(std::string_view result_json) {
  auto j = internal::ParseJson(result_json);
  if (!j || !j->is_object()) return Malformed(kRestartKernel, "reply is not a JSON object");
  FieldReader r(*j);
  RestartReply reply{r.Bool("ok", false), r.String("msg")};
  if (!r.ok()) return Malformed(kRestartKernel, "reply " + r.error());
  return reply;
}

StatusOr<CommitReply> DecodeCommitReply(std::string_view result_json) {
  auto j = internal::ParseJson(result_json);
  if (!j || !j->is_object()) return Malformed(kCommitKernel, "reply is not a JSON object");
  FieldReader r(*j);
  CommitReply reply;
  reply.ok = r.Bool("ok", false);
  reply.path = r.String("path");
  reply.msg = r.String("msg");
  reply.client_error = r.Bool("client_error", false);
  if (!r.ok()) return Malformed(kCommitKernel, "reply " + r.error());
  return reply;
}

}  // namespace bai::server::agent_protocol
