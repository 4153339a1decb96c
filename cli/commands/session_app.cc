// SPDX-License-Identifier: Apache-2.0
// `bai app SESSION APP`: a local port tunnelled to a session's app; `bai app ls SESSION`;
// `bai app stop SESSION APP`.
#include "bai/session_client.h"

#include "cli/commands/session.h"
#include "cli/commands/session_util.h"
#include "cli/exit_codes.h"

#include <nlohmann/json.hpp>

#include <thread>

namespace bai::cli {
namespace {

using nlohmann::json;

std::string Replace(std::string text, std::string const& from, std::string const& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// "-b 8080", "-b 0.0.0.0:8080", "-b [::1]:8080".
bool ParseBind(std::string const& bind, std::string& host, int& port) {
  std::string p = bind;
  auto colon = bind.rfind(':');
  if (colon != std::string::npos && bind.find(']', colon) == std::string::npos) {
    host = bind.substr(0, colon);
    p = bind.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
  }
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  port = std::stoi(p);
  return port <= 65535;
}

}  // namespace

int RunAppStop(AppOptions const& options, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  if (auto st = SessionClient(*client).StopApp(options.session, options.app); !st.ok()) {
    return JobError(ctx, st);
  }
  if (ctx.json()) {
    ctx.out() << json{{"session", options.session},
                      {"app", options.app},
                      {"stopped", true},
                      {"exit_code", 0}}
                     .dump()
              << "\n";
  } else {
    ctx.err() << options.app << " of " << options.session << " stopped\n";
  }
  return 0;
}

int RunAppList(AppOptions const& options, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  auto apps = SessionClient(*client).ListApps(options.session);
  if (!apps.ok()) return JobError(ctx, apps.status());
  if (ctx.json()) {
    json list = json::array();
    for (auto const& a : *apps) {
      list.push_back({{"name", a.name},
                      {"protocol", a.protocol},
                      {"ports", a.container_ports},
                      {"url_template", a.url_template ? json(*a.url_template) : json(nullptr)},
                      {"allowed_arguments", a.allowed_arguments},
                      {"allowed_envs", a.allowed_envs}});
    }
    ctx.out() << json{{"session", options.session}, {"apps", list}, {"exit_code", 0}}.dump()
              << "\n";
    return kExitOk;
  }
  for (auto const& a : *apps) {
    std::string ports;
    for (int p : a.container_ports) ports += (ports.empty() ? "" : ",") + std::to_string(p);
    ctx.out() << a.name << "\t" << a.protocol << "\t" << (ports.empty() ? "-" : ports);
    if (a.protocol == "pty") ctx.out() << "\t(bai shell " << options.session << ")";
    ctx.out() << "\n";
  }
  return kExitOk;
}

int RunApp(AppOptions const& options, Context& ctx) {
  std::string host = "127.0.0.1";
  int port = 8080;
  if (!options.bind.empty() && !ParseBind(options.bind, host, port)) {
    ctx.err() << "error: -b takes PORT or HOST:PORT, not \"" << options.bind << "\"\n";
    return kExitUsage;
  }
  AppTunnelOptions t;
  t.app = options.app;
  t.bind_host = host;
  t.bind_port = port;
  for (auto const& arg : options.arguments) {
    auto space = arg.find(' ');
    t.arguments[arg.substr(0, space)] = space == std::string::npos ? "" : arg.substr(space + 1);
  }
  if (!ReadEnvFlags(ctx, options.envs, t.envs)) return kExitUsage;
  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  SessionClient sessions(*client);
  auto apps = sessions.ListApps(options.session);
  if (!apps.ok()) return JobError(ctx, apps.status());
  auto app = std::find_if(apps->begin(), apps->end(),
                          [&](protocol::ServicePort const& a) { return a.name == options.app; });
  if (app == apps->end()) {
    std::string names;
    for (auto const& a : *apps) names += (names.empty() ? "" : ", ") + a.name;
    ctx.err() << "error: the app \"" << options.app << "\" is not served by " << options.session
              << " (its apps: " << (names.empty() ? "none" : names) << ")\n";
    return kExitNotFound;
  }
  if (app->protocol == "pty") {
    ctx.err() << "error: " << options.app << " is a terminal: use bai shell " << options.session
              << "\n";
    return kExitUsage;
  }
  // Started (once) before listening, so that a failure is said now, not to the first browser.
  ApiRequest start("POST", "/session/" + options.session + "/start-service");
  json body = {{"app", options.app}};
  if (!t.arguments.empty()) body["arguments"] = json(t.arguments).dump();
  if (!t.envs.empty()) body["envs"] = json(t.envs).dump();
  start.body = body.dump();
  auto started = client->Send(start);
  if (!started.ok()) return JobError(ctx, started.status());
  if (auto st = CheckResponse(*started); !st.ok()) return JobError(ctx, st);
  t.on_error = [&ctx](Status const& s) { ctx.err() << "warning: " << s.message() << "\n"; };
  CatchInterrupts();
  auto tunnel = AppTunnel::Open(*client, options.session, t);
  if (!tunnel.ok()) return JobError(ctx, tunnel.status());
  std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::string url = app->url_template ? Replace(Replace(*app->url_template, "{host}", shown_host),
                                                "{port}", std::to_string((*tunnel)->port()))
                                      : (app->protocol == "tcp" ? "tcp://" : "http://") +
                                            shown_host + ":" + std::to_string((*tunnel)->port());
  if (ctx.json()) {
    ctx.out() << json{{"session", options.session},
                      {"app", options.app},
                      {"url", url},
                      {"port", (*tunnel)->port()}}
                     .dump()
              << "\n"
              << std::flush;
  } else {
    ctx.out() << url << "\n" << std::flush;
    ctx.err() << options.app << " of " << options.session << " is at " << url
              << "; Ctrl-C stops the tunnel\n";
  }
  while (!Interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  (*tunnel)->Stop();
  return kExitInterrupted;
}

}  // namespace bai::cli
