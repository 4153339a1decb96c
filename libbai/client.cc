// SPDX-License-Identifier: Apache-2.0
#include "bai/client.h"

#include "bai/protocol/api_version.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/graphql_wire.h"
#include "bai/version.h"

#include "libbai/internal/curl_transport.h"
#include "libbai/internal/decorators.h"
#include "libbai/internal/json_codec.h"
#include "libbai/internal/server_info_cache.h"
#include "libbai/protocol/graphql_adapt.h"
#include "libbai/protocol/server_dialect.h"
#include "libbai/util/fd_io.h"
#include "libbai/util/text.h"
#include "libbai/util/url.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

namespace bai {
namespace internal {
namespace {

// Retry-After in seconds (the delta-seconds form); nullopt when absent or not a number.
std::optional<double> RetryAfterSeconds(std::optional<std::string> const& header) {
  if (!header) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(header->c_str(), &end);
  if (end == header->c_str()) return std::nullopt;
  return seconds;
}

// Lets a caller-owned transport (Options::transport) sit under the Client's own layers.
class SharedTransport : public Transport {
 public:
  explicit SharedTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}
  StatusOr<ApiResponse> Send(TransportRequest const& request) override {
    return inner_->Send(request);
  }
  StatusOr<ApiResponse> SendStreaming(TransportRequest const& request,
                                      std::function<bool(std::string_view)> on_data) override {
    return inner_->SendStreaming(request, std::move(on_data));
  }
  StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(
      TransportRequest const& request) override {
    return inner_->OpenWebSocket(request);
  }

 private:
  std::shared_ptr<Transport> inner_;
};

}  // namespace

class ClientImpl {
 public:
  ClientImpl(Options options, std::vector<Endpoint> endpoints)
      : options_(std::move(options)), endpoints_(std::move(endpoints)) {}

  Options const& options() const { return options_; }

  std::chrono::milliseconds WaitToRetry(int attempt) {
    auto delay = Backoff(std::max(attempt, 1), std::nullopt);
    Sleep(delay);
    return delay;
  }

  StatusOr<ApiResponse> Send(ApiRequest const& request) {
    auto http = Prepare(request);
    bool idempotent = request.idempotent.value_or(IsIdempotentMethod(http.method));
    auto r = SendWithRetries(http, EncodeTarget(request.path), idempotent);
    // A remembered version the server no longer takes (it was downgraded or replaced): ask it
    // again and resend once. The request was refused before it did anything.
    if (r.ok() && r->status == 400 && IsVersionRefusal(r->body) && ForgetRememberedVersion()) {
      http = Prepare(request);
      r = SendWithRetries(http, EncodeTarget(request.path), idempotent);
    }
    return r;
  }

  StatusOr<ApiResponse> SendStreaming(ApiRequest const& request,
                                      std::function<bool(std::string_view)> on_data) {
    auto http = Prepare(request);
    return SendWithRetries(http, EncodeTarget(request.path), /*idempotent=*/false, on_data);
  }

  // A WebSocket upgrade of GET `path`: signed with no Content-Type (so as
  // application/octet-stream, PROTOCOL.md §2.2), moving to the next endpoint when a connection is
  // refused. An upgrade refused with an HTTP status is asked again as a plain GET, whose answer
  // (the server's problem document: unknown session, bad parameter, auth) becomes the Status.
  StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(ApiRequest const& request) {
    TransportRequest http;
    http.method = "GET";
    http.headers = request.headers;
    http.sign = request.sign && !options_.access_key.empty();
    http.api_version = ApiVersion();
    http.headers.emplace_back("X-BackendAI-Version", http.api_version);
    std::string target = EncodeTarget(request.path);
    std::size_t failovers = 0;
    while (true) {
      std::size_t index = Aim(http, target);
      auto socket = Wire().OpenWebSocket(http);
      if (socket.ok()) return socket;
      if (FailOver(socket.status(), index, failovers)) continue;
      if (socket.status().error_info().http_status >= 400) {
        ApiRequest plain("GET", request.path);
        plain.headers = request.headers;
        plain.sign = request.sign;
        if (auto answer = Send(plain); answer.ok()) {
          if (auto st = CheckResponse(*answer); !st.ok()) return st;
        }
      }
      return socket;
    }
  }

  // A request to a URL the manager handed out: never signed, no API version, no failover.
  StatusOr<ApiResponse> SendToUrl(std::string_view url, ApiRequest const& request,
                                  std::function<bool(std::string_view)> const& on_data) {
    auto query_at = url.find('?');
    auto endpoint = ParseEndpoint(url.substr(0, query_at));
    if (!endpoint.ok()) return endpoint.status();
    TransportRequest http;
    http.method = request.method;
    http.origin = endpoint->origin;
    http.host = endpoint->host;
    http.target = EncodeTarget(
        endpoint->base_path +
        std::string(url.substr(query_at == std::string_view::npos ? url.size() : query_at)));
    if (http.target.empty() || http.target[0] != '/') http.target = "/" + http.target;
    http.headers = request.headers;
    http.body = request.body;
    if (!request.body.empty()) http.headers.emplace_back("Content-Type", request.content_type);
    http.sign = false;
    http.cancel = request.cancel;
    return on_data ? Wire().SendStreaming(http, on_data) : Wire().Send(http);
  }

  StatusOr<ServerInfo> GetServerInfo() {
    std::lock_guard<std::mutex> lock(info_mu_);
    if (server_info_) return *server_info_;
    auto now = options_.clock ? options_.clock() : std::chrono::system_clock::now();
    if (!options_.server_info_cache.empty() && !skip_cache_) {
      if (auto remembered = LoadServerInfo(options_.server_info_cache, CurrentEndpoint().url, now,
                                           options_.server_info_max_age)) {
        from_cache_ = true;
        server_info_ = std::move(remembered);
        return *server_info_;
      }
    }
    TransportRequest http;
    http.method = "GET";
    http.sign = false;
    http.api_version = protocol::kCurrentApiVersion.ToString();
    auto response = SendWithRetries(http, "/", /*idempotent=*/true);
    if (!response.ok()) return std::move(response).status();
    if (response->status != 200) {
      auto status = CheckResponse(*response);
      if (!status.ok()) return status;
    }
    server_info_ = protocol::DecodeServerInfo(response->body);
    from_cache_ = false;
    if (!options_.server_info_cache.empty() && server_info_->is_backend_ai) {
      StoreServerInfo(options_.server_info_cache, CurrentEndpoint().url, *server_info_, now);
    }
    return *server_info_;
  }

  StatusOr<ServerCapabilities> Capabilities() {
    auto info = GetServerInfo();
    if (!info.ok()) return info.status();
    ServerCapabilities c;
    c.api_version = info->version;
    c.negotiated_version = ApiVersion();
    c.manager = info->manager;
    auto kind =
        info->is_backend_ai ? protocol::KindOfManager(info->manager) : protocol::ServerKind::kOther;
    c.kind = kind == protocol::ServerKind::kBai         ? ServerCapabilities::Kind::kBai
             : kind == protocol::ServerKind::kBackendAi ? ServerCapabilities::Kind::kBackendAi
                                                        : ServerCapabilities::Kind::kOther;
    if (auto r = protocol::ParseRelease(info->manager)) {
      c.release_year = r->year;
      c.release_month = r->month;
      c.release_patch = r->patch;
    }
    auto version = protocol::ApiVersion::Parse(info->version);
    c.features = protocol::FeaturesOf(kind, version.value_or(protocol::kCurrentApiVersion),
                                      protocol::ParseRelease(info->manager));
    return c;
  }

  // The server's GraphQL schema facts: once per process, from the cache file when this manager
  // version's are kept there, else by introspection (one request). nullptr when the server does
  // not need it (bai's own manager) or will not say: queries then go as written.
  std::shared_ptr<graphql::SchemaFacts const> Schema(Client const& client) {
    std::lock_guard<std::mutex> lock(schema_mu_);
    if (schema_tried_) return schema_;
    schema_tried_ = true;
    auto caps = Capabilities();
    if (!caps.ok() || !caps->has("graphql-introspection")) return nullptr;
    std::string const& endpoint = CurrentEndpoint().url;
    if (!options_.server_info_cache.empty()) {
      if (auto text = LoadSchemaText(options_.server_info_cache, endpoint, caps->manager)) {
        if (auto facts = graphql::DecodeSchemaFacts(*text); facts.ok()) {
          schema_ = std::make_shared<graphql::SchemaFacts const>(*std::move(facts));
          return schema_;
        }
      }
    }
    ApiRequest call("POST", "/admin/gql");
    call.body = nlohmann::json{{"query", std::string(graphql::kIntrospectionQuery)}}.dump();
    call.idempotent = true;
    auto response = client.Send(call);
    if (!response.ok() || !CheckResponse(*response).ok()) return nullptr;
    auto decoded = protocol::DecodeGraphqlResponse(response->body);
    if (!decoded.ok()) return nullptr;
    // Introspection off (Backend.AI outside debug mode): facts are learnt from refusals instead.
    auto facts = decoded->errors.empty() ? graphql::ReadIntrospection(decoded->data_json)
                                         : StatusOr<graphql::SchemaFacts>(graphql::SchemaFacts{});
    if (!facts.ok()) return nullptr;
    if (!options_.server_info_cache.empty()) {
      StoreSchemaText(options_.server_info_cache, endpoint, caps->manager,
                      graphql::EncodeSchemaFacts(*facts));
    }
    schema_ = std::make_shared<graphql::SchemaFacts const>(*std::move(facts));
    return schema_;
  }

  std::shared_ptr<graphql::SchemaFacts const> Learn(graphql::SchemaFacts learnt) {
    std::lock_guard<std::mutex> lock(schema_mu_);
    schema_ = std::make_shared<graphql::SchemaFacts const>(std::move(learnt));
    schema_tried_ = true;
    std::optional<ServerInfo> info;
    {
      std::lock_guard<std::mutex> info_lock(info_mu_);  // schema_mu_ first, as everywhere
      info = server_info_;
    }
    if (!options_.server_info_cache.empty() && info) {
      StoreSchemaText(options_.server_info_cache, CurrentEndpoint().url, info->manager,
                      graphql::EncodeSchemaFacts(*schema_));
    }
    return schema_;
  }

  std::string ApiVersion() {
    if (options_.api_version) return *options_.api_version;
    std::lock_guard<std::mutex> lock(negotiate_mu_);
    if (!negotiated_) negotiated_ = Negotiate();
    return *negotiated_;
  }

  // After the server refused the version: true when it came from the cache (now forgotten, and
  // the next request negotiates afresh), false when it was the server's own answer.
  bool ForgetRememberedVersion() {
    {
      std::lock_guard<std::mutex> lock(info_mu_);
      if (!from_cache_) return false;
      ForgetServerInfo(options_.server_info_cache, CurrentEndpoint().url);
      server_info_.reset();
      from_cache_ = false;
      skip_cache_ = true;
    }
    std::lock_guard<std::mutex> lock(negotiate_mu_);
    negotiated_.reset();
    return true;
  }

  static bool IsVersionRefusal(std::string const& body) {
    return body.find("Unsupported API version") != std::string::npos;
  }

 private:
  TransportRequest Prepare(ApiRequest const& request) {
    TransportRequest http;
    http.method = AsciiUpper(request.method);
    http.headers = request.headers;
    if (!request.body.empty()) {
      http.headers.emplace_back("Content-Type", request.content_type);
      http.body = request.body;
    } else {
      http.headers.emplace_back("Content-Type", "text/plain");  // as the Python SDK does
    }
    http.sign = request.sign && !options_.access_key.empty();
    http.cancel = request.cancel;
    http.api_version = ApiVersion();
    http.headers.emplace_back("X-BackendAI-Version", http.api_version);
    return http;
  }

  static bool IsIdempotentMethod(std::string const& m) {
    return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS";
  }

  void Warn(std::string const& text) const {
    if (options_.warning_log) options_.warning_log(text);
  }

  std::string Negotiate() {
    auto client_version = protocol::kCurrentApiVersion;
    auto info = GetServerInfo();
    if (!info.ok()) return client_version.ToString();  // the real request will report the error
    if (!info->is_backend_ai) {
      Warn("the server at " + CurrentEndpoint().url +
           " did not answer GET / like a Backend.AI manager; assuming API " +
           client_version.ToString());
      return client_version.ToString();
    }
    auto server_version = *protocol::ApiVersion::Parse(info->version);
    if (server_version < protocol::kOldestRecommendedApiVersion) {
      Warn("the server speaks API " + info->version + ", older than " +
           protocol::kOldestRecommendedApiVersion.ToString() + "; some commands may fail");
    }
    return protocol::NegotiateApiVersion(server_version, client_version).ToString();
  }

  // Signing over logging over the wire: the caller's transport, or libcurl.
  Transport& Wire() {
    std::call_once(transport_once_, [this] {
      std::unique_ptr<Transport> t;
      if (options_.transport) {
        t = std::make_unique<SharedTransport>(options_.transport);
      } else {
        CurlTransportOptions o;
        o.connect_timeout = options_.connect_timeout;
        o.read_timeout = options_.read_timeout;
        o.verify_tls = options_.verify_tls;
        o.ca_bundle = options_.ca_bundle;
        o.user_agent = options_.user_agent.empty() ? std::string("bai/") + BAI_VERSION_STRING
                                                   : options_.user_agent;
        t = MakeCurlTransport(std::move(o));
      }
      if (options_.debug_log) t = MakeLoggingTransport(std::move(t), options_.debug_log);
      transport_ = MakeSigningTransport(std::move(t), options_.access_key, options_.secret_key,
                                        options_.clock);
    });
    return *transport_;
  }

  Endpoint const& CurrentEndpoint() const {
    return endpoints_[current_endpoint_.load() % endpoints_.size()];
  }

  // Points `http` at the current endpoint (origin, Host, base path + `target`); returns its index.
  std::size_t Aim(TransportRequest& http, std::string const& target) {
    std::size_t index = current_endpoint_.load();
    Endpoint const& endpoint = endpoints_[index % endpoints_.size()];
    http.origin = endpoint.origin;
    http.host = endpoint.host;
    http.target = endpoint.base_path + target;
    return index;
  }

  // After `failure` on endpoint `index`: a refused connection means nothing was sent, so any
  // request may move to the next endpoint (true, and it becomes current) while one is left.
  bool FailOver(Status const& failure, std::size_t index, std::size_t& failovers) {
    if (!IsConnectFailure(failure) || failovers + 1 >= endpoints_.size()) return false;
    ++failovers;
    current_endpoint_.compare_exchange_strong(index, index + 1);
    Warn(failure.message() + "; trying " + CurrentEndpoint().url);
    return true;
  }

  static bool Retryable(ApiResponse const& r) {
    return r.status == 502 || r.status == 503 || r.status == 504 ||
           (r.status == 429 && r.Header("retry-after"));
  }

  std::chrono::milliseconds Backoff(int attempt, std::optional<std::string> const& retry_after) {
    auto const& b = options_.backoff;
    double ceiling = static_cast<double>(b.initial_delay.count());
    for (int i = 1; i < attempt; ++i) ceiling *= b.multiplier;
    ceiling = std::min(ceiling, static_cast<double>(b.max_delay.count()));
    thread_local std::mt19937_64 rng{std::random_device{}()};
    auto delay = std::chrono::milliseconds(static_cast<std::int64_t>(
        std::uniform_real_distribution<double>(0, std::max(1.0, ceiling))(rng)));
    if (auto seconds = RetryAfterSeconds(retry_after); seconds && *seconds > 0) {
      delay =
          std::max(delay, std::chrono::milliseconds(static_cast<std::int64_t>(*seconds * 1000)));
    }
    return std::min(delay, b.max_delay);
  }

  void Sleep(std::chrono::milliseconds delay) {
    if (options_.sleep) {
      options_.sleep(delay);
    } else {
      std::this_thread::sleep_for(delay);
    }
  }

  StatusOr<ApiResponse> SendWithRetries(TransportRequest http, std::string const& target,
                                        bool idempotent,
                                        std::function<bool(std::string_view)> const& on_data = {}) {
    auto const start = std::chrono::steady_clock::now();
    // With an injected sleep no real time passes: the waits count as elapsed all the same.
    std::chrono::steady_clock::duration waited{0};
    int attempt = 0;
    std::size_t failovers = 0;
    while (true) {
      std::size_t index = Aim(http, target);
      ++attempt;
      auto response = on_data ? Wire().SendStreaming(http, on_data) : Wire().Send(http);
      if (!response.ok() && FailOver(response.status(), index, failovers)) {
        --attempt;
        continue;
      }
      bool transient = response.ok() ? Retryable(*response)
                                     : response.status().code() == StatusCode::kUnavailable;
      auto elapsed = std::max(std::chrono::steady_clock::now() - start, waited);
      if (!transient || !idempotent || attempt >= options_.retry.max_attempts ||
          elapsed >= options_.retry.max_elapsed) {
        return response;
      }
      auto delay = Backoff(attempt, response.ok() ? response->Header("retry-after") : std::nullopt);
      if (elapsed + delay >= options_.retry.max_elapsed) return response;
      Sleep(delay);
      waited += delay;
    }
  }

  Options options_;
  std::vector<Endpoint> endpoints_;
  std::atomic<std::size_t> current_endpoint_{0};
  std::once_flag transport_once_;
  std::unique_ptr<Transport> transport_;
  std::mutex negotiate_mu_;  // taken before info_mu_, never after
  std::optional<std::string> negotiated_;
  std::mutex info_mu_;
  std::optional<ServerInfo> server_info_;
  bool from_cache_ = false;  // server_info_ came from Options::server_info_cache
  bool skip_cache_ = false;  // the cache was wrong once: ask the server from now on
  std::mutex schema_mu_;     // taken before the others, never after
  bool schema_tried_ = false;
  std::shared_ptr<graphql::SchemaFacts const> schema_;
};

}  // namespace internal

Transport::~Transport() = default;

StatusOr<std::unique_ptr<WebSocketConnection>> Transport::OpenWebSocket(TransportRequest const&) {
  return Status(StatusCode::kUnimplemented, "this transport does not open WebSockets");
}

WebSocketConnection::~WebSocketConnection() = default;

WebSocketEvent WebSocketConnection::ReceiveInto(int out, std::chrono::milliseconds timeout,
                                                bool& out_failed) {
  auto e = Receive(timeout);
  if (e.kind == WebSocketEvent::Kind::kMessage && e.message.binary) {
    out_failed = !internal::WriteAll(out, e.message.data);
    e.message.data.clear();
  }
  return e;
}

Status WebSocketCloseStatus(int code, std::string_view reason) {
  if (code == 1000) return Status();
  std::string text = "the WebSocket closed with " + std::to_string(code);
  if (!reason.empty()) text += " (" + std::string(reason) + ")";
  switch (code) {
    case 1001:
      return Status(StatusCode::kUnavailable, text + ": the server side went away");
    case 1013:
      return Status(StatusCode::kUnavailable, text + ": try again later");
    case 1006:
      return Status(StatusCode::kUnavailable, text + ": the connection was lost");
    case 1008:
      return Status(StatusCode::kPermissionDenied, text);
    case 1009:
      return Status(StatusCode::kResourceExhausted, text + ": a message was too large");
    case 1011:
      return Status(StatusCode::kInternal, text + ": the server met an error");
    default:
      return Status(StatusCode::kUnknown, text);
  }
}

void StreamCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (wake_) wake_();
}

bool StreamCancel::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void StreamCancel::Attach(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = std::move(wake);
}

void StreamCancel::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = nullptr;
}

std::optional<std::string> ApiResponse::Header(std::string_view name) const {
  return internal::FindHeader(headers, name);
}

StatusOr<Client> Client::Create(Options options) {
  if (options.endpoints.empty()) {
    return Status(StatusCode::kInvalidArgument, "no endpoint configured (set BACKEND_ENDPOINT)");
  }
  std::vector<internal::Endpoint> endpoints;
  for (auto const& url : options.endpoints) {
    auto e = internal::ParseEndpoint(url);
    if (!e.ok()) return std::move(e).status();
    endpoints.push_back(std::move(*e));
  }
  if (!options.access_key.empty() && options.secret_key.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "an access key is set but no secret key (run `bai config set secret_key` or "
                  "set BACKEND_SECRET_KEY)");
  }
  if (options.api_version && !protocol::ApiVersion::Parse(*options.api_version)) {
    return Status(StatusCode::kInvalidArgument,
                  "invalid API version \"" + *options.api_version + "\" (expected vX.YYYYMMDD)");
  }
  if (options.retry.max_attempts < 1) options.retry.max_attempts = 1;
  return Client(std::make_shared<internal::ClientImpl>(std::move(options), std::move(endpoints)));
}

Client::Client(std::shared_ptr<internal::ClientImpl> impl) : impl_(std::move(impl)) {}

StatusOr<ApiResponse> Client::Send(ApiRequest const& request) const { return impl_->Send(request); }
StatusOr<ApiResponse> Client::SendStreaming(ApiRequest const& request,
                                            std::function<bool(std::string_view)> on_data) const {
  return impl_->SendStreaming(request, std::move(on_data));
}
StatusOr<ApiResponse> Client::SendToUrl(std::string_view url, ApiRequest const& request) const {
  return impl_->SendToUrl(url, request, {});
}
StatusOr<ApiResponse> Client::SendToUrlStreaming(
    std::string_view url, ApiRequest const& request,
    std::function<bool(std::string_view)> on_data) const {
  return impl_->SendToUrl(url, request, on_data);
}
StatusOr<std::unique_ptr<WebSocketConnection>> Client::OpenWebSocket(
    ApiRequest const& request) const {
  return impl_->OpenWebSocket(request);
}

StatusOr<ServerInfo> Client::GetServerInfo() const { return impl_->GetServerInfo(); }
StatusOr<ServerCapabilities> Client::server() const { return impl_->Capabilities(); }

std::shared_ptr<graphql::SchemaFacts const> internal::ServerSchema(Client const& client) {
  return client.impl_->Schema(client);
}

std::shared_ptr<graphql::SchemaFacts const> internal::LearnServerSchema(
    Client const& client, graphql::SchemaFacts learnt) {
  return client.impl_->Learn(std::move(learnt));
}
std::string Client::ApiVersion() const { return impl_->ApiVersion(); }
Options const& Client::options() const { return impl_->options(); }
std::chrono::milliseconds Client::WaitToRetry(int attempt) const {
  return impl_->WaitToRetry(attempt);
}

Status CheckResponse(ApiResponse const& response) {
  if (response.status >= 200 && response.status < 300) return {};
  ErrorInfo info;
  info.http_status = response.status;
  if (auto id = response.Header("x-backendai-requestid")) info.request_id = *id;
  info.retry_after_seconds = internal::RetryAfterSeconds(response.Header("retry-after"));
  StatusCode code = protocol::StatusCodeFromHttpStatus(response.status);
  std::string message;
  if (internal::ParseProblem(response.body, info)) {
    if (auto known = protocol::FindProblemType(info.type)) {
      code = protocol::GetProblemTypeInfo(*known).code;
    }
    message = info.title;
    if (!info.detail.empty() && info.detail != info.title) {
      message += message.empty() ? info.detail : " (" + info.detail + ")";
    }
  }
  if (message.empty()) {
    message = "HTTP " + std::to_string(response.status);
    std::string_view body = response.body;
    if (!body.empty()) message += ": " + std::string(body.substr(0, 200));
  }
  return Status(code, std::move(message), std::move(info));
}

std::string_view LibraryVersion() { return BAI_VERSION_STRING; }

}  // namespace bai
