// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"
#include "bai/options.h"
#include "bai/protocol/api_version.h"
#include "bai/status.h"
#include "bai/transport.h"

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai {

class Client;
namespace graphql {
struct SchemaFacts;
}  // namespace graphql
namespace internal {
class ClientImpl;
/// The server's GraphQL schema facts (read once, cached with its version), or nullptr when it
/// cannot be read or need not be (libbai/internal; RunGraphql adapts queries with it).
std::shared_ptr<graphql::SchemaFacts const> ServerSchema(Client const& client);
/// Replaces the server's facts with `learnt` (what its refusals taught), in memory and in the
/// cache; returns them.
std::shared_ptr<graphql::SchemaFacts const> LearnServerSchema(Client const& client,
                                                              graphql::SchemaFacts learnt);
}  // namespace internal

/// What `GET /` says about the server (bai/protocol/api_version.h).
using ServerInfo = protocol::ServerInfo;

/// What a server is and offers (Client::server()), for code that branches on it. One module
/// decides it (libbai/protocol/server_dialect.h): research code asks `has("…")` rather than
/// comparing versions.
struct ServerCapabilities {
  enum class Kind { kBackendAi, kBai, kOther };
  Kind kind = Kind::kOther;
  std::string api_version;         ///< the server's ("v7.20230615")
  std::string negotiated_version;  ///< what this client sends ("v7.20230615")
  std::string manager;             ///< "23.09.11", "bai-manager 0.1.0"
  int release_year = 0;            ///< Backend.AI's release: 23 for 23.09.11 (0: not Backend.AI)
  int release_month = 0;           ///< 9 for 23.09.11
  int release_patch = 0;           ///< 11 for 23.09.11
  /// Named features (server_dialect.h FeaturesOf): "session-name-optional",
  /// "usage-all-projects", "quota-scopes", "vfolder-trash", "session-priority",
  /// "graphql-introspection", "batch-timeout", "bai-extensions".
  std::set<std::string> features;
  bool has(std::string_view feature) const { return features.count(std::string(feature)) > 0; }
};

/// A connection to a Backend.AI manager: keep-alive connection pool, request signing, API
/// version negotiation, retries of idempotent requests and endpoint failover. Copies share one
/// pool. Thread-safe.
///
/// @par Example
/// @code
/// bai::Options options;
/// options.endpoints = {"http://127.0.0.1:8081"};
/// options.access_key = "AKIA…";
/// options.secret_key = "…";
/// auto client = bai::Client::Create(options);
/// if (!client) return 1;
/// auto response = client->Send({"GET", "/auth?echo=hi"});
/// @endcode
class BAI_EXPORT Client {
 public:
  /// Validates the options (endpoint URLs, credentials, version); touches no network.
  static StatusOr<Client> Create(Options options);

  /// Sends `request` (signed when the client has credentials). Fails only when no HTTP response
  /// arrived; any status code is returned as is. Use CheckResponse() to turn a non-2xx answer
  /// into a Status.
  StatusOr<ApiResponse> Send(ApiRequest const& request) const;

  /// Sends `request` and hands a 2xx body to `on_data` chunk by chunk as it arrives (event
  /// streams); returning false ends the stream. An empty chunk comes first, as soon as the 2xx
  /// headers arrived (the stream is open). Other answers are buffered in the returned response. Not
  /// retried; a refused connection still moves to the next endpoint.
  StatusOr<ApiResponse> SendStreaming(ApiRequest const& request,
                                      std::function<bool(std::string_view)> on_data) const;

  /// Sends `request` to `url`, an absolute URL another service is reached at (the storage
  /// proxy's `/upload` and `/download` URLs the manager hands out, with their query): never
  /// signed, no API version header, no retries or failover; `request.path` is ignored.
  StatusOr<ApiResponse> SendToUrl(std::string_view url, ApiRequest const& request) const;
  /// SendToUrl with a 2xx body handed to `on_data` as it arrives (see SendStreaming).
  StatusOr<ApiResponse> SendToUrlStreaming(std::string_view url, ApiRequest const& request,
                                           std::function<bool(std::string_view)> on_data) const;

  /// Opens a WebSocket to `request.path` (a GET upgrade, signed as PROTOCOL.md §2.2; method and
  /// body are ignored), moving to the next endpoint when a connection is refused. An upgrade the
  /// server refuses fails with its problem document as the Status (404 unknown session…).
  StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(ApiRequest const& request) const;
  /// `GET /`, fetched once and cached.
  StatusOr<ServerInfo> GetServerInfo() const;
  /// What the server is and offers, from `GET /` (no other request).
  StatusOr<ServerCapabilities> server() const;

  /// The API version sent with requests: the pinned one, or min(server, SDK) after `GET /`
  /// (the SDK's own version when the server does not answer like Backend.AI).
  std::string ApiVersion() const;

  Options const& options() const;

  /// Waits before retry `attempt` (1 for the first retry) as the client's own retries do:
  /// Options::backoff with full jitter, through Options::sleep; returns the wait. For loops of
  /// the SDK's own (resumable transfers) and of its users.
  std::chrono::milliseconds WaitToRetry(int attempt) const;

 private:
  explicit Client(std::shared_ptr<internal::ClientImpl> impl);
  friend std::shared_ptr<graphql::SchemaFacts const> internal::ServerSchema(Client const&);
  friend std::shared_ptr<graphql::SchemaFacts const> internal::LearnServerSchema(
      Client const&, graphql::SchemaFacts);
  std::shared_ptr<internal::ClientImpl> impl_;
};

/// Ok for a 2xx response; otherwise a Status with the problem+json details of the body (type,
/// title, msg, data), the HTTP status and a StatusCode from the shared error table.
BAI_EXPORT Status CheckResponse(ApiResponse const& response);

/// The libbai version string ("0.1.0").
BAI_EXPORT std::string_view LibraryVersion();

}  // namespace bai
