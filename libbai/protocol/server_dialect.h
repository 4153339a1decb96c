// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a server accepts and answers, by what it is and its API version: the one place libbai
// decides it (issue 44; docs/adr/0024, docs/api-versions.md). GraphQL fields come from the
// server's own schema (graphql_adapt.h); REST differences are decided here. Pure.

#include "bai/protocol/api_version.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// What kind of manager answered `GET /`.
enum class ServerKind { kBackendAi, kBai, kOther };

/// From `GET /`'s `manager` text: "bai-manager 0.1.0" is bai's own; a dotted release ("23.09.11",
/// "24.09.0rc1", "26.8.1") is Backend.AI's.
ServerKind KindOfManager(std::string_view manager);

/// A Backend.AI release ("23.09.11" → {23, 9, 11}); nullopt for anything else.
struct Release {
  int year = 0;
  int month = 0;
  int patch = 0;
};
std::optional<Release> ParseRelease(std::string_view manager);

/// Named features of a server (ServerCapabilities::features; the names are stable API):
///  - "session-name-optional": POST /session makes a name when none is given (bai's manager;
///    Backend.AI up to 26.x requires `name`, so the SDK makes one);
///  - "usage-all-projects": /resource/usage/period answers for every project without a
///    project id (24.09 and later, bai; 23.09 needs one project per request);
///  - "quota-scopes": v7.20230615 and later; "vfolder-trash": v8.20240315 and later;
///  - "session-priority": v8.20240915 and later;
///  - "graphql-introspection": the server's schema can be read (Backend.AI; bai's manager
///    serves every field bai asks for, so it is not asked);
///  - "batch-timeout": POST /session takes `batch_timeout` (Backend.AI 24.12 and later, whose
///    API version is still v8.20240915: decided by the release; bai);
///  - "bai-extensions": bai's own routes (fit check, app stop, session events as bai names them).
std::set<std::string> FeaturesOf(ServerKind kind, ApiVersion const& server_version,
                                 std::optional<Release> release = std::nullopt);

/// The oldest Backend.AI release with a named feature ("24.03" for "vfolder-trash"); "" for a
/// feature only bai's manager has.
std::string FirstReleaseWith(std::string_view feature);

/// How parameters go with a request that Backend.AI first routed as a DELETE or GET with a JSON
/// body (folder delete-files, unshare, invitations/delete: DELETE; session download and
/// download_single: GET), read from each release's sources:
///  - kPostBody: POST with the body. bai's manager; Backend.AI 24.03.7 and later added POST
///    routes (and stopped reading a GET's body).
///  - kBody: the old method with the body. Backend.AI 22.03 to 23.09.10 and 24.03.0 to 24.03.6
///    read a body whatever the method.
///  - kQuery: the old method with the parameters in the query string. Backend.AI 23.09.11 reads
///    a GET's or DELETE's parameters from the query only, where a list cannot be given: a
///    request with a list parameter cannot be made there at all.
enum class ParamsVia { kPostBody, kBody, kQuery };
ParamsVia ParamsViaFor(ServerKind kind, std::optional<Release> release);

/// A session name for a server that requires one, as the official client makes them: "bai-"
/// and 10 hex digits of `random` (4 to 64 characters of \w, '.', '-', as the server checks).
std::string GeneratedSessionName(std::uint64_t random);

/// Backend.AI's session-name rule (24.09 tx.SessionName, 23.09 the same regexp): 4 to 64
/// characters, word characters, '.' and '-', starting and ending with a word character. An
/// empty string when `name` passes, else the server's own message.
std::string CheckSessionName(std::string_view name);

/// A session-template payload as Backend.AI (22.03 to 26.x) reads it: a list of {name?,
/// template} (JSON) or YAML documents each with a `template` key. bai's own manager also takes a
/// bare template (the shape users write); for Backend.AI each bare template document is wrapped:
/// JSON as `[{"template": …}]`, YAML as `template:` with the document indented under it. Payloads
/// already in the list shape are returned as they are.
std::string TemplatePayloadForBackendAi(std::string_view payload);

}  // namespace bai::protocol
