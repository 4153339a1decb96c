// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/decorators.h"

#include "bai/protocol/signing.h"

#include "libbai/util/json_parse.h"
#include "libbai/util/text.h"

namespace bai::internal {
namespace {

// Plain requests stay plain for the inner transport (a mock scripts Send and SendStreaming
// apart).
StatusOr<ApiResponse> Forward(Transport& inner, TransportRequest const& request,
                              std::function<bool(std::string_view)> const& on_data) {
  return on_data ? inner.SendStreaming(request, on_data) : inner.Send(request);
}

class SigningTransport : public Transport {
 public:
  SigningTransport(std::unique_ptr<Transport> inner, std::string access_key, std::string secret_key,
                   std::function<std::chrono::system_clock::time_point()> clock)
      : inner_(std::move(inner)),
        access_key_(std::move(access_key)),
        secret_key_(std::move(secret_key)),
        clock_(clock ? std::move(clock) : [] { return std::chrono::system_clock::now(); }) {}

  StatusOr<ApiResponse> Send(TransportRequest const& request) override {
    return SendStreaming(request, {});
  }

  StatusOr<ApiResponse> SendStreaming(TransportRequest const& request,
                                      std::function<bool(std::string_view)> on_data) override {
    auto signed_request = Signed(request);
    if (!signed_request.ok()) return std::move(signed_request).status();
    return Forward(*inner_, *signed_request, on_data);
  }

  // The upgrade is signed like any GET; without a Content-Type it is signed as
  // application/octet-stream (PROTOCOL.md §2.2).
  StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(
      TransportRequest const& request) override {
    auto signed_request = Signed(request);
    if (!signed_request.ok()) return std::move(signed_request).status();
    return inner_->OpenWebSocket(*signed_request);
  }

 private:
  StatusOr<TransportRequest> Signed(TransportRequest const& request) {
    if (!request.sign || access_key_.empty()) return request;
    TransportRequest signed_request = request;
    protocol::SigningInput input;
    input.method = request.method;
    input.request_target = request.target;
    input.date = protocol::FormatRequestDate(clock_());
    input.host = request.host;
    input.content_type = FindHeader(request.headers, "content-type");
    input.api_version = request.api_version;
    auto signature = protocol::Sign(input, secret_key_);
    if (!signature.ok()) return std::move(signature).status();
    signed_request.headers.emplace_back("Date", input.date);
    signed_request.headers.emplace_back(
        "Authorization", protocol::AuthorizationHeaderValue(access_key_, *signature, input.hash));
    return signed_request;
  }

  std::unique_ptr<Transport> inner_;
  std::string access_key_;
  std::string secret_key_;
  std::function<std::chrono::system_clock::time_point()> clock_;
};

bool IsSecretKey(std::string const& key) {
  return key == "secret_key" || key == "secretKey" || key == "password" || key == "new_password" ||
         key == "new_password2" || key == "old_password" || key == "current_password" ||
         key == "ssh_private_key" || key == "privkey";
}

void RedactJson(nlohmann::json& j) {
  if (j.is_object()) {
    for (auto& [key, value] : j.items()) {
      if (IsSecretKey(key) && value.is_string()) {
        value = "<redacted>";
      } else {
        RedactJson(value);
      }
    }
  } else if (j.is_array()) {
    for (auto& v : j) RedactJson(v);
  }
}

std::string Cut(std::string_view raw) {
  // Bodies may carry secrets too (/auth/authorize answers with a secret key).
  std::string redacted;
  std::string_view body = raw;
  if (auto j = ParseJson(raw)) {
    RedactJson(*j);
    redacted = j->dump();
    body = redacted;
  }
  constexpr std::size_t kMax = 4096;
  if (body.size() <= kMax) return std::string(body);
  return std::string(body.substr(0, kMax)) + "… (" + std::to_string(body.size()) + " bytes)";
}

class LoggingTransport : public Transport {
 public:
  LoggingTransport(std::unique_ptr<Transport> inner, std::function<void(std::string_view)> sink)
      : inner_(std::move(inner)), sink_(std::move(sink)) {}

  StatusOr<ApiResponse> Send(TransportRequest const& request) override {
    return SendStreaming(request, {});
  }

  StatusOr<ApiResponse> SendStreaming(TransportRequest const& request,
                                      std::function<bool(std::string_view)> on_data) override {
    sink_("> " + request.method + " " + request.origin + request.target);
    sink_("> Host: " + request.host);
    for (auto const& [k, v] : request.headers) {
      bool auth = EqualsIgnoreCase(k, "authorization");
      sink_("> " + k + ": " + (auth ? RedactAuthorization(v) : v));
    }
    if (!request.body.empty()) sink_("> " + Cut(request.body));
    std::function<bool(std::string_view)> logged;
    if (on_data) {
      logged = [this, &on_data](std::string_view chunk) {
        sink_("< (stream) " + Cut(chunk));
        return on_data(chunk);
      };
    }
    auto response = Forward(*inner_, request, logged);
    if (!response.ok()) {
      sink_("! " + response.status().message());
      return response;
    }
    sink_("< HTTP " + std::to_string(response->status));
    for (auto const& [k, v] : response->headers) sink_("< " + k + ": " + v);
    if (!response->body.empty()) sink_("< " + Cut(response->body));
    return response;
  }

  StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(
      TransportRequest const& request) override {
    sink_("> " + request.method + " " + request.origin + request.target + " (WebSocket)");
    sink_("> Host: " + request.host);
    for (auto const& [k, v] : request.headers) {
      bool auth = EqualsIgnoreCase(k, "authorization");
      sink_("> " + k + ": " + (auth ? RedactAuthorization(v) : v));
    }
    auto socket = inner_->OpenWebSocket(request);
    sink_(socket.ok() ? std::string("< HTTP 101 (WebSocket open)")
                      : "! " + socket.status().message());
    return socket;
  }

 private:
  std::unique_ptr<Transport> inner_;
  std::function<void(std::string_view)> sink_;
};

}  // namespace

std::unique_ptr<Transport> MakeSigningTransport(
    std::unique_ptr<Transport> inner, std::string access_key, std::string secret_key,
    std::function<std::chrono::system_clock::time_point()> clock) {
  return std::make_unique<SigningTransport>(std::move(inner), std::move(access_key),
                                            std::move(secret_key), std::move(clock));
}

std::unique_ptr<Transport> MakeLoggingTransport(std::unique_ptr<Transport> inner,
                                                std::function<void(std::string_view)> sink) {
  return std::make_unique<LoggingTransport>(std::move(inner), std::move(sink));
}

std::string RedactAuthorization(std::string_view value) {
  auto colon = value.rfind(':');
  if (colon == std::string_view::npos) return "<redacted>";
  return std::string(value.substr(0, colon + 1)) + "<redacted>";
}

}  // namespace bai::internal
