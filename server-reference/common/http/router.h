// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/http/http.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bai::server {

/// Path parameters of a matched route ("{id}" → value, percent-decoded).
using PathParams = std::map<std::string, std::string>;

/// Method + path pattern → handler. Patterns are exact ("/session/{id}/logs"); a `{name}`
/// segment matches one non-empty path segment. Unknown paths get 404 url-not-found, a known path
/// with another method 405 method-not-allowed (both problem+json).
class Router {
 public:
  using RouteHandler = std::function<void(std::shared_ptr<Exchange>, PathParams const&)>;

  void Add(std::string method, std::string const& pattern, RouteHandler handler);
  void Dispatch(std::shared_ptr<Exchange> const& exchange) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    RouteHandler handler;
  };
  std::vector<Route> routes_;
};

/// Splits "/a/b/c" into {"a","b","c"}; "/" into {}; keeps empty segments ("/a//b", "/a/").
std::vector<std::string> SplitPath(std::string const& path);

}  // namespace bai::server
