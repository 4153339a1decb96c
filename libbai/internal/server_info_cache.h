// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `GET /` answered, remembered between processes so that a command sends one request
// (Options::server_info_cache). A JSON file: endpoint URL → {version, manager, checked_at}.

#include "bai/client.h"

#include <chrono>
#include <optional>
#include <string>

namespace bai::internal {

/// The remembered answer of `endpoint`, when the file has one checked less than `max_age`
/// before `now` (and not in the future); nullopt otherwise, also for a missing or unreadable
/// file.
std::optional<ServerInfo> LoadServerInfo(std::string const& path, std::string const& endpoint,
                                         std::chrono::system_clock::time_point now,
                                         std::chrono::seconds max_age);

/// Records `info` for `endpoint` (other endpoints kept), written to a temporary file and renamed
/// so readers never see half a file; creates the directory. Failures are ignored: the cache is
/// an optimisation.
void StoreServerInfo(std::string const& path, std::string const& endpoint, ServerInfo const& info,
                     std::chrono::system_clock::time_point now);

/// Forgets `endpoint`'s answer (the server refused the version it implied).
void ForgetServerInfo(std::string const& path, std::string const& endpoint);

/// A server's GraphQL schema facts (graphql_adapt.h EncodeSchemaFacts), kept beside `path` in a
/// file of their own per endpoint and manager version (a server upgrade is a new file); nullopt
/// when none is kept.
std::optional<std::string> LoadSchemaText(std::string const& path, std::string const& endpoint,
                                          std::string const& manager);
void StoreSchemaText(std::string const& path, std::string const& endpoint,
                     std::string const& manager, std::string const& text);

}  // namespace bai::internal
