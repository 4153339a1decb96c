// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/usage_wire.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace bai::internal {

nlohmann::json ResourceUsageJson(protocol::ResourceUsage const& u) {
  return {{"nfs", u.nfs},
          {"cpu_allocated", u.cpu_allocated},
          {"cpu_used", u.cpu_used},
          {"mem_allocated", u.mem_allocated},
          {"mem_used", u.mem_used},
          {"shared_memory", u.shared_memory},
          {"disk_allocated", u.disk_allocated},
          {"disk_used", u.disk_used},
          {"io_read", u.io_read},
          {"io_write", u.io_write},
          {"device_type", u.device_type},
          {"smp", u.smp},
          {"gpu_mem_allocated", u.gpu_mem_allocated},
          {"gpu_allocated", u.gpu_allocated}};
}

}  // namespace bai::internal

namespace bai::protocol {

using json = nlohmann::json;

namespace {

json Opt(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }
json Text(std::string const& v) { return v.empty() ? json(nullptr) : json(v); }

void Union(std::vector<std::string>& into, std::vector<std::string> const& from) {
  for (auto const& v : from) {
    if (std::find(into.begin(), into.end(), v) == into.end()) into.push_back(v);
  }
}

using internal::ResourceUsageJson;

ResourceUsage ReadUsage(json const& j) {
  ResourceUsage u;
  if (!j.is_object()) return u;
  internal::AnswerFields f(j);
  u.nfs = f.Strings("nfs");
  u.cpu_allocated = f.Num("cpu_allocated");
  u.cpu_used = f.Num("cpu_used");
  u.mem_allocated = f.Int("mem_allocated");
  u.mem_used = f.Int("mem_used");
  u.shared_memory = f.Int("shared_memory");
  u.disk_allocated = f.Int("disk_allocated");
  u.disk_used = f.Int("disk_used");
  u.io_read = f.Int("io_read");
  u.io_write = f.Int("io_write");
  u.device_type = f.Strings("device_type");
  u.smp = f.Num("smp");
  u.gpu_mem_allocated = f.Num("gpu_mem_allocated");
  u.gpu_allocated = f.Num("gpu_allocated");
  return u;
}

// 24.09's BaseResourceUsageGroup.to_json_base(): every field, null where the unit has none.
json Base(SessionUsage const* s, std::string const& project_id, std::string const& project_name,
          std::string const& domain_name) {
  json last_stat = nullptr;
  if (s) {
    auto parsed = internal::ParseJson(s->last_stat);
    if (parsed) last_stat = *parsed;
  }
  return {{"created_at", s ? Text(s->created_at) : json(nullptr)},
          {"used_time", s ? Opt(s->used_time) : json(nullptr)},
          {"used_days", s && s->used_days ? json(*s->used_days) : json(nullptr)},
          {"user_id", s ? Text(s->user_id) : json(nullptr)},
          {"user_email", s ? Text(s->user_email) : json(nullptr)},
          {"access_key", s ? Text(s->access_key) : json(nullptr)},
          {"project_id", Text(project_id)},
          {"project_name", Text(project_name)},
          {"kernel_id", nullptr},
          {"container_ids", json::array()},
          {"session_id", s ? Text(s->session_id) : json(nullptr)},
          {"session_name", s ? Text(s->session_name) : json(nullptr)},
          {"domain_name", Text(domain_name)},
          {"last_stat", last_stat},
          {"extra_info", json::object()},
          {"full_name", s ? Text(s->full_name) : json(nullptr)},
          {"images", s ? json(s->images) : json::array()},
          {"agents", s ? json(s->agents) : json::array()},
          {"status", s ? Text(s->status) : json(nullptr)},
          {"status_info", s ? Text(s->status_info) : json(nullptr)},
          {"status_history", nullptr},
          {"cluster_mode", s ? json("single-node") : json(nullptr)},
          {"scheduled_at", nullptr},
          {"terminated_at", s ? Opt(s->terminated_at) : json(nullptr)}};
}

}  // namespace

ResourceUsage& ResourceUsage::operator+=(ResourceUsage const& o) {
  cpu_allocated += o.cpu_allocated;
  cpu_used += o.cpu_used;
  mem_allocated += o.mem_allocated;
  mem_used += o.mem_used;
  shared_memory += o.shared_memory;
  disk_allocated += o.disk_allocated;
  disk_used += o.disk_used;
  io_read += o.io_read;
  io_write += o.io_write;
  Union(device_type, o.device_type);
  smp += o.smp;
  gpu_mem_allocated += o.gpu_mem_allocated;
  gpu_allocated += o.gpu_allocated;
  Union(nfs, o.nfs);
  return *this;
}

std::string EncodeProjectUsages(std::vector<ProjectUsage> const& projects) {
  json out = json::array();
  for (auto const& p : projects) {
    json sessions = json::object();
    for (auto const& s : p.sessions) {
      json kernel = Base(&s, p.project_id, p.project_name, p.domain_name);
      kernel["kernel_id"] = Text(s.kernel_id);
      kernel["agent"] = s.agents.empty() ? json(nullptr) : json(s.agents.front());
      kernel["group_unit"] = "kernel";
      kernel["total_usage"] = ResourceUsageJson(s.total_usage);
      json session = Base(&s, p.project_id, p.project_name, p.domain_name);
      session["group_unit"] = "session";
      session["total_usage"] = ResourceUsageJson(s.total_usage);
      session["kernels"] = json::object();
      if (!s.kernel_id.empty()) session["kernels"][s.kernel_id] = kernel;
      sessions[s.session_id] = session;
    }
    json project = Base(nullptr, p.project_id, p.project_name, p.domain_name);
    project["agents"] = p.agents;
    project["group_unit"] = "project";
    project["total_usage"] = ResourceUsageJson(p.total_usage);
    project["sessions"] = sessions;
    out.push_back(project);
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<std::vector<ProjectUsage>> DecodeProjectUsages(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_array()) {
    return Status(StatusCode::kInvalidArgument, "usage report: not a list");
  }
  std::vector<ProjectUsage> out;
  for (auto const& p : *j) {
    if (!p.is_object()) return Status(StatusCode::kInvalidArgument, "usage report: not a project");
    internal::AnswerFields pf(p);
    ProjectUsage project;
    project.project_id = pf.Str("project_id");
    project.project_name = pf.Str("project_name");
    project.domain_name = pf.Str("domain_name");
    project.agents = pf.Strings("agents");
    project.total_usage = ReadUsage(p.value("total_usage", json::object()));
    auto sessions = p.find("sessions");
    if (sessions != p.end() && sessions->is_object()) {
      for (auto const& [id, s] : sessions->items()) {
        if (!s.is_object()) continue;
        internal::AnswerFields f(s);
        SessionUsage u;
        u.session_id = id;
        u.session_name = f.Str("session_name");
        if (auto k = s.find("kernels"); k != s.end() && k->is_object() && !k->empty())
          u.kernel_id = k->begin().key();
        u.access_key = f.Str("access_key");
        u.user_id = f.Str("user_id");
        u.user_email = f.Str("user_email");
        u.full_name = f.Str("full_name");
        u.project_id = project.project_id;
        u.project_name = project.project_name;
        u.domain_name = f.Str("domain_name");
        u.status = f.Str("status");
        u.status_info = f.Str("status_info");
        u.created_at = f.Str("created_at");
        u.terminated_at = f.OptStr("terminated_at");
        u.used_time = f.OptStr("used_time");
        u.used_days = f.OptInt("used_days");
        u.images = f.Strings("images");
        u.agents = f.Strings("agents");
        if (auto st = s.find("last_stat"); st != s.end()) u.last_stat = st->dump();
        u.total_usage = ReadUsage(s.value("total_usage", json::object()));
        project.sessions.push_back(std::move(u));
      }
    }
    // A JSON object keeps no order: the sessions come back by start time.
    std::stable_sort(
        project.sessions.begin(), project.sessions.end(),
        [](SessionUsage const& a, SessionUsage const& b) { return a.created_at < b.created_at; });
    out.push_back(std::move(project));
  }
  return out;
}

}  // namespace bai::protocol
