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
  /// The pattern a request would be dispatched to ("/session/{id}/logs"), for labelling its
  /// metrics; "" when none matches.
  std::string PatternOf(HttpRequest const& request) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    RouteHandler handler;
  };
  /// The route `method` and `segments` match, or null; sets `path_matched` when any route's
  /// path matched, and fills `params` when given.
  Route const* Match(std::string const& method, std::vector<std::string> const& segments,
                     bool& path_matched, PathParams* params) const;
  static std::string MethodOf(HttpRequest const& request);
  std::vector<Route> routes_;
};

/// Splits "/a/b/c" into {"a","b","c"}; "/" into {}; keeps empty segments ("/a//b", "/a/").
std::vector<std::string> SplitPath(std::string const& path);

}  // namespace bai::server
