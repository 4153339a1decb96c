// SPDX-License-Identifier: Apache-2.0
#pragma once
// What differs between the API versions the manager accepts (v4.20181215 … v8.20240915), decided
// in one place: handlers ask their request's Dialect instead of comparing versions themselves.
// Each rule is 24.09's (docs/api-versions.md lists them with what 24.09 does and the tests);
// the wire types stay one per noun, and the SDK converts on its side (issue 21, item 3).
// Pure: no I/O.

#include "bai/protocol/api_version.h"

#include "server-reference/common/http/http.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace bai::manager {

/// The version a request speaks: its X-BackendAI-Version, or v5.20191215 when it sends none
/// (as 24.09; only unsigned requests may omit it). The API's middleware refused unknown ones.
protocol::ApiVersion RequestVersion(server::HttpRequest const& request);

struct Dialect {
  protocol::ApiVersion version;
  /// The keys `config` of a session creation takes, each with its aliases: 24.09 checks it
  /// with creation_config_v2 (before v4.20190315: instance* sizes, no resources),
  /// creation_config_v3 (v4.20190315: resources, scaling_group), creation_config_v4 (v5:
  /// mount_map, preopen_ports) or creation_config_v5 (v6 and later: mount_options, agent_list;
  /// cluster_size moved to the top level). Other keys are refused.
  std::vector<std::vector<std::string>> create_config_keys;

  /// The caller's own version as 24.09's `GET /manager/status` shows it in `nodes[].api_version`:
  /// the pair [major, "YYYYMMDD"].
  nlohmann::json VersionPair() const;
};

Dialect DialectOf(protocol::ApiVersion version);
inline Dialect DialectOf(server::HttpRequest const& request) {
  return DialectOf(RequestVersion(request));
}

/// The keys of a creation's `config` that `dialect` does not take → why (field errors, as
/// `config.KEY`), empty when all are taken.
std::map<std::string, std::string> RefusedConfigKeys(Dialect const& dialect,
                                                     nlohmann::json const& config);

}  // namespace bai::manager
