// SPDX-License-Identifier: Apache-2.0
#include "cli/context.h"

#include "cli/exit_codes.h"
#include "libbai/internal/server_request.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>
#include <termios.h>
#include <unistd.h>

#include <iostream>

namespace bai::cli {

ConfigSources Context::Sources() const {
  ConfigSources s;
  if (!globals_.profile.empty()) s.profile = globals_.profile;
  if (!globals_.endpoint.empty()) s.flags["endpoint"] = globals_.endpoint;
  return s;
}

StatusOr<ResolvedConfig> Context::Config() {
  if (config_) return *config_;
  auto config = ResolveConfig(Sources());
  if (!config.ok()) return config;
  for (auto const& w : config->warnings) err_ << "warning: " << w << "\n";
  if (globals_.debug) {
    err_ << "[debug] profile " << config->profile << " from " << config->config_dir << "\n";
    for (auto const& [key, v] : config->values) {
      err_ << "[debug]   " << key << " = "
           << (IsSecretConfigKey(key) ? MaskSecret(v.value) : v.value) << "  (" << v.source
           << ")\n";
    }
  }
  config_ = *config;
  return config;
}

StatusOr<Client> Context::MakeClient() {
  auto config = Config();
  if (!config.ok()) return std::move(config).status();
  auto options = config->ToOptions();
  if (!options.ok()) return std::move(options).status();
  options->warning_log = [this](std::string_view w) { err_ << "warning: " << w << "\n"; };
  // One request per command: the server's version is remembered between runs.
  options->server_info_cache = DefaultCacheDir() + "/servers.json";
  if (globals_.debug) {
    options->debug_log = [this](std::string_view line) { err_ << "[debug] " << line << "\n"; };
  }
  if (transport_) options->transport = transport_;
  return Client::Create(*std::move(options));
}

std::string FieldErrors(ErrorInfo const& info) {
  auto data = internal::ParseJson(info.data_json);
  if (!data || !data->is_object()) return "";
  std::string out;
  for (auto const& [field, why] : data->items()) {
    out += "  " + field + ": " + (why.is_string() ? why.get<std::string>() : why.dump()) + "\n";
  }
  return out;
}

nlohmann::json ErrorJson(Status const& status) {
  auto const& info = status.error_info();
  nlohmann::json error = {{"code", std::string(StatusCodeName(status.code()))},
                          {"message", status.message()}};
  if (info.http_status != 0) error["http_status"] = info.http_status;
  if (!info.type.empty()) error["type"] = info.type;
  if (!info.title.empty()) error["title"] = info.title;
  if (!info.detail.empty()) error["msg"] = info.detail;
  if (!info.data_json.empty()) {
    if (auto data = internal::ParseJson(info.data_json)) error["data"] = *data;
  }
  if (!info.request_id.empty()) error["request_id"] = info.request_id;
  return error;
}

namespace {

// A route an older Backend.AI does not have answers 404 "Unknown URL path" (or 405 where it has
// the path for another method): said plainly, as a command this server cannot serve (exit 1),
// not as a missing session or folder (issue 44).
Status Explained(Context& ctx, Status const& status) {
  auto const& info = status.error_info();
  bool no_route = info.http_status == 404 && info.type.find("url-not-found") != std::string::npos;
  // A route with the path but not the method (a POST form added later) answers 405.
  bool no_method =
      info.http_status == 405 && info.type.find("method-not-allowed") != std::string::npos;
  if (!no_route && !no_method) return status;
  auto client = ctx.MakeClient();
  if (!client.ok()) return status;
  auto server = client->server();  // remembered: no request
  if (!server.ok() || server->kind != ServerCapabilities::Kind::kBackendAi) return status;
  return Status(StatusCode::kUnimplemented,
                "this server (" + internal::DescribeServer(*server) +
                    ") does not serve this command (" + status.message() +
                    "); bai's own manager does, as a newer Backend.AI may");
}

}  // namespace

int ReportError(Context& ctx, Status const& given, bool explain_routes) {
  Status status = explain_routes ? Explained(ctx, given) : given;
  int code = ExitCodeFor(status);
  auto const& info = status.error_info();
  if (ctx.json()) {
    ctx.err() << nlohmann::json{{"error", ErrorJson(status)}, {"exit_code", code}}.dump() << "\n";
    return code;
  }
  ctx.err() << "error: " << status.message() << "\n" << FieldErrors(info);
  if (info.http_status != 0 && ctx.globals().debug) {
    ctx.err() << "  HTTP " << info.http_status << " " << info.type << "\n";
  }
  if (status.code() == StatusCode::kUnauthenticated) {
    ctx.err() << "hint: check the keypair with `bai config list`, or set BACKEND_ACCESS_KEY and "
                 "BACKEND_SECRET_KEY\n";
  } else if (code == kExitUnreachable) {
    ctx.err() << "hint: is the manager running? check the endpoint with `bai config list`\n";
  }
  return code;
}

std::optional<std::string> ReadSecret(Context& ctx, std::string const& prompt) {
  std::string line;
  if (ctx.stdin_tty()) {
    ctx.err() << prompt << std::flush;
    termios old{};
    bool restore = ::tcgetattr(STDIN_FILENO, &old) == 0;
    if (restore) {
      termios quiet = old;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    bool ok = static_cast<bool>(std::getline(ctx.in(), line));
    if (restore) ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
    ctx.err() << "\n";
    if (!ok) return std::nullopt;
  } else if (!std::getline(ctx.in(), line)) {
    return std::nullopt;
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace bai::cli
