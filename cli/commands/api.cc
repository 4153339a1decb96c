// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/api.h"

#include "cli/exit_codes.h"
#include "libbai/util/json_parse.h"
#include "libbai/util/text.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace bai::cli {
namespace {

StatusOr<std::string> LoadData(std::string const& data, Context& ctx) {
  if (data.empty() || data[0] != '@') return data;
  std::string path = data.substr(1);
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(ctx.in()), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kInvalidArgument, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsToken(std::string const& s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

int RunApi(ApiOptions const& options, Context& ctx) {
  ApiRequest request;
  request.method = internal::AsciiUpper(options.method);
  if (!IsToken(request.method)) {
    ctx.err() << "error: invalid method \"" << options.method << "\"\n";
    return kExitUsage;
  }
  if (options.path.empty() || options.path[0] != '/') {
    ctx.err() << "error: PATH must start with / (e.g. /auth?echo=hi)\n";
    return kExitUsage;
  }
  request.path = options.path;
  request.sign = !options.anonymous;
  bool has_content_type = false;
  for (auto const& h : options.headers) {
    auto colon = h.find(':');
    std::string name = h.substr(0, colon);
    if (colon == std::string::npos || !IsToken(name)) {
      ctx.err() << "error: invalid header \"" << h << "\" (expected -H 'Name: value')\n";
      return kExitUsage;
    }
    std::string value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (internal::EqualsIgnoreCase(name, "content-type")) {
      has_content_type = true;
      request.content_type = value;
    } else {
      request.headers.emplace_back(name, value);
    }
  }
  auto body = LoadData(options.data, ctx);
  if (!body.ok()) {
    ctx.err() << "error: " << body.status().message() << "\n";
    return kExitUsage;
  }
  request.body = *std::move(body);
  if (!request.body.empty() && !has_content_type && !internal::ParseJson(request.body)) {
    ctx.err() << "error: -d is not valid JSON (give -H 'Content-Type: …' to send other data)\n";
    return kExitUsage;
  }

  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto response = client->Send(request);
  if (!response.ok()) return ReportError(ctx, response.status());
  auto status = CheckResponse(*response);
  if (!status.ok()) {
    int code = ReportError(ctx, status, /*explain_routes=*/false);
    if (!ctx.json() && !response->body.empty()) ctx.err() << response->body << "\n";
    return code;
  }
  if (response->body.empty()) return 0;
  auto json = internal::ParseJson(response->body);
  if (!json) {
    ctx.out() << response->body;
    if (response->body.back() != '\n') ctx.out() << "\n";
  } else if (ctx.json() || !ctx.stdout_tty()) {
    ctx.out() << json->dump() << "\n";
  } else {
    ctx.out() << json->dump(2) << "\n";
  }
  return 0;
}

void AddApiCommands(CommandSet& set) {
  auto& o = set.Keep<ApiOptions>();
  auto* api =
      set.root().add_subcommand("api", "Send a raw signed request and print the response body");
  if (set.names_only()) return;
  api->add_option("METHOD", o.method, "HTTP method (GET, POST, …)")->required();
  api->add_option("PATH", o.path, "Path and query, e.g. /auth?echo=hi")->required();
  api->add_option("-d,--data", o.data, "Request body: JSON, @FILE, or @- for stdin");
  api->add_option("-H,--header", o.headers, "Extra header 'Name: value' (repeatable)")
      ->allow_extra_args(false);
  api->add_flag("--anonymous", o.anonymous, "Send the request unsigned");
  set.OnRun(api, [&o, &ctx = set.ctx()] { return RunApi(o, ctx); });
}
}  // namespace bai::cli
