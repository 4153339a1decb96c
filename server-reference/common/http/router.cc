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
  routes_.push_back({std::move(method), SplitPath(pattern), std::move(handler)});
}

void Router::Dispatch(std::shared_ptr<Exchange> const& exchange) const {
  auto const& req = exchange->request();
  auto segments = SplitPath(req.path);
  bool path_matched = false;
  // X-Method-Override re-dispatches as another method (PROTOCOL.md §1.2).
  std::string method = req.method;
  if (auto o = req.Header("x-method-override")) method = std::string(*o);
  if (method == "HEAD") method = "GET";
  for (auto const& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    PathParams params;
    bool ok = true;
    for (std::size_t i = 0; i < segments.size() && ok; ++i) {
      auto const& p = route.segments[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        auto decoded = PercentDecode(segments[i]);
        if (segments[i].empty() || !decoded) {
          ok = false;
        } else {
          params[p.substr(1, p.size() - 2)] = *decoded;
        }
      } else {
        ok = p == segments[i];
      }
    }
    if (!ok) continue;
    path_matched = true;
    if (route.method != method) continue;
    route.handler(exchange, params);
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
