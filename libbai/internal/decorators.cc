// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/decorators.h"

#include "bai/protocol/signing.h"

#include <strings.h>

namespace bai::internal {
namespace {

std::optional<std::string> FindHeader(HttpRequest const& request, std::string_view name) {
  for (auto const& [k, v] : request.headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return v;
  }
  return std::nullopt;
}

class SigningTransport : public HttpTransport {
 public:
  SigningTransport(std::unique_ptr<HttpTransport> inner, std::string access_key,
                   std::string secret_key,
                   std::function<std::chrono::system_clock::time_point()> clock)
      : inner_(std::move(inner)),
        access_key_(std::move(access_key)),
        secret_key_(std::move(secret_key)),
        clock_(clock ? std::move(clock) : [] { return std::chrono::system_clock::now(); }) {}

  StatusOr<ApiResponse> Send(HttpRequest const& request) override {
    if (!request.sign || access_key_.empty()) return inner_->Send(request);
    HttpRequest signed_request = request;
    protocol::SigningInput input;
    input.method = request.method;
    input.request_target = request.target;
    input.date = protocol::FormatRequestDate(clock_());
    input.host = request.host;
    input.content_type = FindHeader(request, "content-type");
    input.api_version = request.api_version;
    auto signature = protocol::Sign(input, secret_key_);
    if (!signature.ok()) return std::move(signature).status();
    signed_request.headers.emplace_back("Date", input.date);
    signed_request.headers.emplace_back(
        "Authorization", protocol::AuthorizationHeaderValue(access_key_, *signature, input.hash));
    return inner_->Send(signed_request);
  }

 private:
  std::unique_ptr<HttpTransport> inner_;
  std::string access_key_;
  std::string secret_key_;
  std::function<std::chrono::system_clock::time_point()> clock_;
};

std::string Cut(std::string_view body) {
  constexpr std::size_t kMax = 4096;
  if (body.size() <= kMax) return std::string(body);
  return std::string(body.substr(0, kMax)) + "… (" + std::to_string(body.size()) + " bytes)";
}

class LoggingTransport : public HttpTransport {
 public:
  LoggingTransport(std::unique_ptr<HttpTransport> inner, std::function<void(std::string_view)> sink)
      : inner_(std::move(inner)), sink_(std::move(sink)) {}

  StatusOr<ApiResponse> Send(HttpRequest const& request) override {
    sink_("> " + request.method + " " + request.origin + request.target);
    sink_("> Host: " + request.host);
    for (auto const& [k, v] : request.headers) {
      bool auth = strcasecmp(k.c_str(), "authorization") == 0;
      sink_("> " + k + ": " + (auth ? RedactAuthorization(v) : v));
    }
    if (!request.body.empty()) sink_("> " + Cut(request.body));
    auto response = inner_->Send(request);
    if (!response.ok()) {
      sink_("! " + response.status().message());
      return response;
    }
    sink_("< HTTP " + std::to_string(response->status));
    for (auto const& [k, v] : response->headers) sink_("< " + k + ": " + v);
    if (!response->body.empty()) sink_("< " + Cut(response->body));
    return response;
  }

 private:
  std::unique_ptr<HttpTransport> inner_;
  std::function<void(std::string_view)> sink_;
};

}  // namespace

std::unique_ptr<HttpTransport> MakeSigningTransport(
    std::unique_ptr<HttpTransport> inner, std::string access_key, std::string secret_key,
    std::function<std::chrono::system_clock::time_point()> clock) {
  return std::make_unique<SigningTransport>(std::move(inner), std::move(access_key),
                                            std::move(secret_key), std::move(clock));
}

std::unique_ptr<HttpTransport> MakeLoggingTransport(std::unique_ptr<HttpTransport> inner,
                                                    std::function<void(std::string_view)> sink) {
  return std::make_unique<LoggingTransport>(std::move(inner), std::move(sink));
}

std::string RedactAuthorization(std::string_view value) {
  auto colon = value.rfind(':');
  if (colon == std::string_view::npos) return "<redacted>";
  return std::string(value.substr(0, colon + 1)) + "<redacted>";
}

}  // namespace bai::internal
