// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/http/router.h"

#include "bai/protocol/errors.h"

#include "server-reference/common/http/problem.h"

namespace bai::server {

std::vector<std::string> SplitPath(std::string const& path) {
  std::vector<std::string> out;
  if (path.empty() || path == "/") return out;
  std::size_t start = path[0] == '/' ? 1 : 0;
  while (true) {
    auto slash = path.find('/', start);
    out.push_back(path.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

void Router::Add(std::string method, std::string const& pattern, RouteHandler handler) {
  routes_.push_back({std::move(method), pattern, SplitPath(pattern), std::move(handler)});
}

std::string Router::MethodOf(HttpRequest const& request) {
  // X-Method-Override re-dispatches as another method (PROTOCOL.md §1.2).
  std::string method = request.method;
  if (auto o = request.Header("x-method-override")) method = std::string(*o);
  if (method == "HEAD") method = "GET";
  return method;
}

Router::Route const* Router::Match(std::string const& method,
                                   std::vector<std::string> const& segments, bool& path_matched,
                                   PathParams* params) const {
  for (auto const& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    PathParams found;
    bool ok = true;
    for (std::size_t i = 0; i < segments.size() && ok; ++i) {
      auto const& p = route.segments[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        auto decoded = PercentDecode(segments[i]);
        if (segments[i].empty() || !decoded) {
          ok = false;
        } else if (params) {
          found[p.substr(1, p.size() - 2)] = *decoded;
        }
      } else {
        ok = p == segments[i];
      }
    }
    if (!ok) continue;
    path_matched = true;
    if (route.method != method) continue;
    if (params) *params = std::move(found);
    return &route;
  }
  return nullptr;
}

std::string Router::PatternOf(HttpRequest const& request) const {
  bool path_matched = false;
  auto const* route = Match(MethodOf(request), SplitPath(request.path), path_matched, nullptr);
  return route ? route->pattern : std::string();
}

void Router::Dispatch(std::shared_ptr<Exchange> const& exchange) const {
  auto const& req = exchange->request();
  std::string method = MethodOf(req);
  bool path_matched = false;
  PathParams params;
  if (auto const* route = Match(method, SplitPath(req.path), path_matched, &params)) {
    route->handler(exchange, params);
    return;
  }
  if (path_matched) {
    exchange->Respond(ProblemResponse(protocol::MakeProblemStatus(
        protocol::ProblemType::kMethodNotAllowed, "Method " + method + " not allowed here.")));
  } else {
    exchange->Respond(ProblemResponse(protocol::MakeProblemStatus(
        protocol::ProblemType::kUrlNotFound, "Unknown URL path.", "\"" + req.path + "\"")));
  }
}

}  // namespace bai::server
