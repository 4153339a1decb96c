// SPDX-License-Identifier: Apache-2.0
// Error logs (PROTOCOL.md §9): `GET /logs/error` (a page of them, newest first, with `count`),
// `POST /logs/error` (a client files one: 24.09's web UI does), `POST /logs/error/{id}/clear`.
// The manager files its own (state/error_logs.h). Users reach their own, admins their domain's
// users', superadmins all.
#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"

#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/error_logs.h"

#include <nlohmann/json.hpp>

#include <cctype>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;

namespace {

ErrorLogScope ScopeOf(Identity const& who) {
  if (who.IsSuperadmin()) return {ErrorLogScope::Kind::kAll, ""};
  if (who.role == "admin") return {ErrorLogScope::Kind::kDomain, who.domain};
  return {ErrorLogScope::Kind::kUser, who.user_id};
}

json Opt(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }

// POST /logs/error
StatusOr<HttpResponse> Append(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  ErrorLogEntry e;
  e.severity = p->String({"severity"}, true).value_or("");
  for (auto& c : e.severity) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (e.severity != "critical" && e.severity != "error" && e.severity != "warning" &&
      e.severity != "info" && e.severity != "debug") {
    p->Fail("severity", "critical, error, warning, info or debug");
  }
  e.source = p->String({"source"}, true).value_or("");
  e.message = p->String({"message"}, true).value_or("");
  e.context_lang = p->String({"context_lang"}, true).value_or("");
  auto env = p->String({"context_env"}, true).value_or("{}");
  if (json::parse(env, nullptr, false).is_discarded()) p->Fail("context_env", "JSON text");
  e.context_env = env;
  e.request_url = p->String({"request_url"});
  e.request_status = p->Int({"request_status"}, 0, 999);
  e.traceback = p->String({"traceback"});
  if (e.message.size() > 64 * 1024 || (e.traceback && e.traceback->size() > 256 * 1024)) {
    p->Fail("message", "at most 64 KiB (traceback: 256 KiB)");
  }
  if (auto st = p->Check(); !st.ok()) return st;
  e.user_uuid = ctx.identity->user_id;
  if (auto st = InsertErrorLog(ctx.store.db(), std::move(e)); !st.ok()) return st;
  return JsonResponse({{"success", true}});
}

// GET /logs/error
StatusOr<HttpResponse> List(RequestContext& ctx) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  bool mark_read = p->Bool({"mark_read"}).value_or(false);
  auto page_size = p->Int({"page_size"}, 1, 100).value_or(20);
  auto page_no = p->Int({"page_no"}, 1, 1000000).value_or(1);
  if (auto st = p->Check(); !st.ok()) return st;
  auto scope = ScopeOf(*ctx.identity);
  ErrorLogStore store(ctx.store.db());
  auto page = store.List(scope, static_cast<int>(page_size), static_cast<int>(page_no), mark_read);
  if (!page.ok()) return std::move(page).status();
  json logs = json::array();
  for (auto const& e : page->logs) {
    auto at = protocol::ParseHttpDate(e.created_at);
    json item = {{"log_id", e.id},
                 {"created_at", at ? static_cast<double>(at->unix_seconds) : 0.0},
                 {"severity", e.severity},
                 {"source", e.source},
                 {"user", Opt(e.user_uuid)},
                 {"is_read", e.is_read},
                 {"message", e.message},
                 {"context_lang", e.context_lang},
                 {"context_env", e.context_env},
                 {"request_url", Opt(e.request_url)},
                 {"request_status", e.request_status ? json(*e.request_status) : json(nullptr)},
                 {"traceback", Opt(e.traceback)}};
    if (scope.kind != ErrorLogScope::Kind::kUser) item["is_cleared"] = e.is_cleared;
    logs.push_back(std::move(item));
  }
  return JsonResponse({{"logs", logs}, {"count", page->count}});
}

// POST /logs/error/{id}/clear
StatusOr<HttpResponse> Clear(RequestContext& ctx) {
  ErrorLogStore store(ctx.store.db());
  auto cleared = store.Clear(ScopeOf(*ctx.identity), ctx.params.at("id"));
  if (!cleared.ok()) return std::move(cleared).status();
  if (!*cleared) return MakeProblemStatus(ProblemType::kObjectNotFound, "No such error log.");
  return JsonResponse({{"success", true}});
}

}  // namespace

void RegisterErrorLogRoutes(ManagerApi& api) {
  using L = AuthLevel;
  api.Add("POST", "/logs/error", L::kUser, Guarded(&Append));
  api.Add("GET", "/logs/error", L::kUser, Guarded(&List));
  api.Add("POST", "/logs/error/{id}/clear", L::kUser, Guarded(&Clear));
}

}  // namespace bai::manager
