// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/api/api.h"

#include "bai/protocol/api_version.h"
#include "bai/protocol/errors.h"

#include "server-reference/common/http/problem.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/state/error_logs.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;

ManagerApi::ManagerApi(Store& store, ApiOptions options)
    : store_(store), options_(std::move(options)) {
  if (!options_.clock) options_.clock = [] { return std::chrono::system_clock::now(); };
  slow_pool_ = std::make_unique<server::WorkPool>(options_.slow_workers, options_.slow_queue);
}

std::optional<HttpResponse> AnswerOnPool(server::WorkPool& pool,
                                         std::shared_ptr<server::Exchange> const& exchange,
                                         std::vector<std::pair<std::string, std::string>> headers,
                                         std::function<HttpResponse()> work,
                                         std::string const& busy_message) {
  bool queued = pool.TrySubmit([exchange, headers = std::move(headers), work = std::move(work)] {
    auto response = work();
    for (auto const& h : headers) response.headers.push_back(h);
    exchange->Respond(std::move(response));
  });
  if (queued) return std::nullopt;
  auto busy = ProblemResponse(MakeProblemStatus(ProblemType::kRateLimitExceeded, busy_message));
  busy.headers.emplace_back("Retry-After", "1");
  return busy;
}

void ManagerApi::AddPooled(std::string method, std::string const& pattern, AuthLevel level,
                           SyncHandler handler) {
  AddAsync(std::move(method), pattern, level,
           [this, handler = std::move(handler)](
               RequestContext& ctx,
               std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
             // What the context points at lives only for this call: the pool's copy owns it.
             auto params = std::make_shared<server::PathParams>(ctx.params);
             auto identity = ctx.identity ? std::make_shared<Identity>(*ctx.identity)
                                          : std::shared_ptr<Identity>();
             return AnswerOnPool(
                 *slow_pool_, exchange, ctx.response_headers,
                 [this, handler, exchange, params, identity] {
                   RequestContext late{exchange->request(), *params, identity.get(), store_, {}};
                   auto response = handler(late);
                   for (auto& h : late.response_headers) response.headers.push_back(h);
                   return response;
                 },
                 "The manager is busy with long requests; retry shortly.");
           });
}

namespace {

// A request the manager failed (5xx), filed under its caller for /logs/error.
void FileServerError(server::Database& db, server::HttpRequest const& req, Identity const& who,
                     HttpResponse const& response) {
  ErrorLogEntry e;
  e.source = "manager";
  e.user_uuid = who.user_id;
  e.request_url = req.method + " " + req.path;
  e.request_status = response.status;
  auto body = nlohmann::json::parse(response.body, nullptr, false);
  if (body.is_object() && body.contains("title") && body["title"].is_string()) {
    e.message = body["title"].get<std::string>();
    if (body.contains("msg") && body["msg"].is_string() && body["msg"] != body["title"]) {
      e.message += ": " + body["msg"].get<std::string>();
    }
  } else {
    e.message = "HTTP " + std::to_string(response.status);
  }
  (void)InsertErrorLog(db, std::move(e));  // filing it must not change the answer
}

}  // namespace

void ManagerApi::Handle(std::shared_ptr<server::Exchange> const& exchange) {
  auto const& req = exchange->request();
  if (auto version = req.Header("x-backendai-version")) {
    if (!protocol::IsAcceptedApiVersion(*version)) {
      auto r = ProblemResponse(
          MakeProblemStatus(ProblemType::kGenericBadRequest, "Unsupported API version."));
      exchange->Respond(std::move(r));
      return;
    }
  }
  router_.Dispatch(exchange);
}

void ManagerApi::Add(std::string method, std::string const& pattern, AuthLevel level,
                     SyncHandler handler) {
  AddAsync(std::move(method), pattern, level,
           [handler = std::move(handler)](RequestContext& ctx,
                                          std::shared_ptr<server::Exchange> const&) {
             return std::optional<HttpResponse>(handler(ctx));
           });
}

void ManagerApi::AddAsync(std::string method, std::string const& pattern, AuthLevel level,
                          AsyncHandler handler) {
  router_.Add(std::move(method), pattern,
              [this, level, handler = std::move(handler)](
                  std::shared_ptr<server::Exchange> exchange, server::PathParams const& params) {
                auto const& req = exchange->request();
                std::shared_ptr<KeypairRecord const> keypair;
                RateLimiter::Result limit{true, 1000, 1000};
                std::optional<HttpResponse> response;
                if (level != AuthLevel::kAnonymous) {
                  auto now = options_.clock();
                  auto who = Authenticate(req, store_, keypairs_, level, now);
                  if (!who.ok()) {
                    response = ProblemResponse(who.status());
                  } else {
                    keypair = *std::move(who);
                    limit = limiter_.Hit(keypair->identity.access_key, keypair->identity.rate_limit,
                                         now);
                    if (!limit.allowed) {
                      response = ProblemResponse(MakeProblemStatus(
                          ProblemType::kRateLimitExceeded,
                          "Over " + std::to_string(limit.limit) + " requests in 900 seconds."));
                    }
                  }
                }
                RequestContext ctx{req, params, keypair ? &keypair->identity : nullptr, store_, {}};
                ctx.response_headers = {{"X-RateLimit-Limit", std::to_string(limit.limit)},
                                        {"X-RateLimit-Remaining", std::to_string(limit.remaining)},
                                        {"X-RateLimit-Window", "900"}};
                if (!response) {
                  response = handler(ctx, exchange);
                  if (!response) return;  // the handler answers later
                  if (response->status >= 500 && keypair) {
                    FileServerError(store_.db(), req, keypair->identity, *response);
                  }
                }
                for (auto& h : ctx.response_headers) response->headers.push_back(h);
                exchange->Respond(*std::move(response));
              });
}

}  // namespace bai::manager
