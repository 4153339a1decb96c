// SPDX-License-Identifier: Apache-2.0
// Usage REST (streams-admin-console.md §B.3), the shell around usage/usage.h: read the sessions
// a window covers, answer 24.09's shapes.
#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/usage_wire.h"

#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/sessions.h"
#include "server-reference/manager/usage/usage.h"

#include <nlohmann/json.hpp>

#include <chrono>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;

namespace {

std::string Iso(std::int64_t seconds) { return protocol::FormatRfc3339(seconds, 0); }

Status BadParam(Status const& s) {
  return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
}

// The project ids a request names: a list, or one id, or ids separated by commas.
std::vector<std::string> GroupIds(Params& p) {
  std::vector<std::string> out;
  auto const* raw = p.Raw({"group_ids", "project_ids"});
  if (raw == nullptr || raw->is_null()) return out;
  auto add = [&](std::string const& text) {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      auto comma = text.find(',', pos);
      if (comma == std::string::npos) comma = text.size();
      if (comma > pos) out.push_back(text.substr(pos, comma - pos));
      pos = comma + 1;
    }
  };
  if (raw->is_string()) {
    add(raw->get<std::string>());
  } else if (raw->is_array()) {
    for (auto const& v : *raw) {
      if (!v.is_string()) {
        p.Fail("group_ids", "a list of project ids");
        return {};
      }
      add(v.get<std::string>());
    }
  } else {
    p.Fail("group_ids", "a list of project ids");
  }
  return out;
}

StatusOr<std::vector<protocol::ProjectUsage>> Projects(SessionStore& sessions,
                                                       usage::Window const& w,
                                                       std::vector<std::string> const& groups) {
  std::vector<protocol::ProjectUsage> out;
  if (groups.empty()) {
    auto rows = sessions.Usage({Iso(w.start), Iso(w.end), std::nullopt, std::nullopt});
    if (!rows.ok()) return std::move(rows).status();
    return usage::ProjectUsages(*rows);
  }
  for (auto const& g : groups) {
    auto rows = sessions.Usage({Iso(w.start), Iso(w.end), g, std::nullopt});
    if (!rows.ok()) return std::move(rows).status();
    for (auto& p : usage::ProjectUsages(*rows)) out.push_back(std::move(p));
  }
  return out;
}

// GET /resource/usage/month {month: YYYYMM, group_ids?}: per project, 22.03's and 24.09's
// g_*/c_infos shape.
StatusOr<HttpResponse> GetUsageMonth(RequestContext& ctx, SessionStore& sessions) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  auto month = p->String({"month"}, true);
  auto groups = GroupIds(*p);
  if (auto s = p->Check(); !s.ok()) return s;
  auto window = usage::MonthWindow(*month);
  if (!window.ok()) return BadParam(window.status());
  auto projects = Projects(sessions, *window, groups);
  if (!projects.ok()) return std::move(projects).status();
  return JsonResponse(usage::MonthGroups(*projects));
}

// GET /resource/usage/period {project_id|group_id?, start_date, end_date: YYYYMMDD}: 24.09's
// list of projects with their sessions.
StatusOr<HttpResponse> GetUsagePeriod(RequestContext& ctx, SessionStore& sessions) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  auto project = p->String({"project_id", "group_id"});
  auto start = p->String({"start_date"}, true);
  auto end = p->String({"end_date"}, true);
  if (auto s = p->Check(); !s.ok()) return s;
  auto window = usage::PeriodWindow(*start, *end);
  if (!window.ok()) return BadParam(window.status());
  std::vector<std::string> groups;
  if (project && !project->empty()) groups.push_back(*project);
  auto projects = Projects(sessions, *window, groups);
  if (!projects.ok()) return std::move(projects).status();
  return HttpResponse::Json(200, protocol::EncodeProjectUsages(*projects));
}

// GET /resource/stats/{user,admin}/month: 15-minute bins over the last 30 days.
StatusOr<HttpResponse> GetMonthStats(RequestContext& ctx, SessionStore& sessions, bool all) {
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  std::optional<std::string> user;
  if (!all) user = ctx.identity->user_id;
  auto rows = sessions.Usage({Iso(now - 30 * 86400), Iso(now + 1), std::nullopt, user});
  if (!rows.ok()) return std::move(rows).status();
  return JsonResponse(usage::MonthlyBins(*rows, now));
}

// POST /resource/recalculate-usage: 24.09 recounts agents' and keypairs' occupied slots from
// the kernels; bai derives occupancy from the sessions table on every read, so there is nothing
// to recount. Answers as 24.09 does.
StatusOr<HttpResponse> PostRecalculateUsage(RequestContext&) {
  return JsonResponse(json::object());
}

}  // namespace

void RegisterUsageRoutes(ManagerApi& api, SessionStore& sessions) {
  using L = AuthLevel;
  api.Add("GET", "/resource/usage/month", L::kSuperadmin, [&sessions](RequestContext& ctx) {
    return Guard([&] { return GetUsageMonth(ctx, sessions); });
  });
  api.Add("GET", "/resource/usage/period", L::kSuperadmin, [&sessions](RequestContext& ctx) {
    return Guard([&] { return GetUsagePeriod(ctx, sessions); });
  });
  api.Add("GET", "/resource/stats/user/month", L::kUser, [&sessions](RequestContext& ctx) {
    return Guard([&] { return GetMonthStats(ctx, sessions, false); });
  });
  api.Add("GET", "/resource/stats/admin/month", L::kSuperadmin, [&sessions](RequestContext& ctx) {
    return Guard([&] { return GetMonthStats(ctx, sessions, true); });
  });
  api.Add("POST", "/resource/recalculate-usage", L::kSuperadmin, Guarded(PostRecalculateUsage));
}

}  // namespace bai::manager
