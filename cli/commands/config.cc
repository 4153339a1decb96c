// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/config.h"

#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

namespace bai::cli {
namespace {

std::string Shown(std::string const& key, std::string const& value, bool reveal = false) {
  return IsSecretConfigKey(key) && !reveal ? MaskSecret(value) : value;
}

}  // namespace

int RunConfigList(Context& ctx) {
  auto config = ctx.Config();
  if (!config.ok()) return ReportError(ctx, config.status());
  // The server's answer is part of "what am I talking to"; a dead server is reported, not fatal.
  std::string server_version, manager, negotiated, server_error;
  if (auto client = ctx.MakeClient(); client.ok()) {
    if (auto info = client->GetServerInfo(); info.ok()) {
      server_version = info->version;
      manager = info->manager;
      negotiated = client->ApiVersion();
    } else {
      server_error = info.status().message();
    }
  } else {
    server_error = client.status().message();
  }
  if (ctx.json()) {
    nlohmann::json settings = nlohmann::json::object();
    for (auto const& key : ConfigKeys()) {
      auto const& v = config->values.at(key);
      settings[key] = {{"value", Shown(key, v.value)}, {"source", v.source}};
    }
    nlohmann::json out = {
        {"profile", config->profile}, {"config_dir", config->config_dir}, {"settings", settings}};
    nlohmann::json server = nlohmann::json::object();
    if (server_error.empty()) {
      server = {{"api_version", server_version},
                {"manager", manager},
                {"negotiated_api_version", negotiated}};
    } else {
      server = {{"error", server_error}};
    }
    out["server"] = server;
    out["exit_code"] = 0;
    ctx.out() << out.dump() << "\n";
    return 0;
  }
  ctx.out() << "profile      " << config->profile << "\n"
            << "config dir   " << config->config_dir << "\n";
  for (auto const& key : ConfigKeys()) {
    auto const& v = config->values.at(key);
    std::string shown = Shown(key, v.value);
    ctx.out() << key << std::string(key.size() < 16 ? 16 - key.size() : 1, ' ')
              << (shown.empty() ? "-" : shown) << "\t(" << v.source << ")\n";
  }
  if (server_error.empty()) {
    ctx.out() << "server          " << manager << ", API " << server_version << "\n"
              << "negotiated API  " << negotiated << "\n";
  } else {
    ctx.out() << "server          unreachable: " << server_error << "\n";
  }
  return 0;
}

int RunConfigGet(ConfigGetOptions const& options, Context& ctx) {
  auto config = ctx.Config();
  if (!config.ok()) return ReportError(ctx, config.status());
  auto it = config->values.find(options.key);
  if (it == config->values.end()) {
    ReportError(ctx,
                Status(StatusCode::kInvalidArgument, "unknown setting \"" + options.key + "\""));
    return kExitUsage;
  }
  std::string shown = Shown(options.key, it->second.value, options.reveal);
  if (ctx.json()) {
    ctx.out() << nlohmann::json{{"key", options.key},
                                {"value", shown},
                                {"source", it->second.source},
                                {"exit_code", 0}}
                     .dump()
              << "\n";
  } else {
    ctx.out() << shown << "\n";
  }
  return 0;
}

int RunConfigSet(ConfigSetOptions const& options, Context& ctx) {
  std::string profile = ctx.globals().profile;
  if (profile.empty()) {
    // The profile in effect (BAI_PROFILE, default_profile or "default"), but an explicitly
    // named profile that does not exist yet is fine: set creates it.
    ConfigSources sources;
    auto config = ResolveConfig(sources);
    profile = config.ok() ? config->profile : "default";
  }
  std::string value;
  if (IsSecretConfigKey(options.key)) {
    if (options.value) {
      ctx.err() << "error: secrets are never taken from the command line (they would land in "
                   "shell history and process lists); run `bai config set "
                << options.key << "` and type it, or pipe it on stdin\n";
      return kExitUsage;
    }
    auto secret = ReadSecret(ctx, options.key + ": ");
    if (!secret || secret->empty()) {
      ctx.err() << "error: no " << options.key << " given on stdin\n";
      return kExitUsage;
    }
    value = *secret;
  } else {
    if (!options.value) {
      ctx.err() << "error: `bai config set " << options.key << "` needs a VALUE\n";
      return kExitUsage;
    }
    value = *options.value;
  }
  auto config_dir =
      ctx.Sources().config_dir.empty() ? DefaultConfigDir() : ctx.Sources().config_dir;
  auto status = SetConfigValue(config_dir, profile, options.key, value);
  if (!status.ok()) {
    int code = ReportError(ctx, status);
    return status.code() == StatusCode::kInvalidArgument ? kExitUsage : code;
  }
  if (ctx.json()) {
    ctx.out() << nlohmann::json{{"profile", profile},
                                {"key", options.key},
                                {"value", Shown(options.key, value)},
                                {"exit_code", 0}}
                     .dump()
              << "\n";
  } else if (ctx.stdout_tty()) {
    ctx.out() << "set " << options.key << " in profile " << profile << "\n";
  }
  return 0;
}

void AddConfigCommands(CommandSet& set) {
  Context& ctx = set.ctx();
  auto* config = set.root().add_subcommand("config", "Show and change settings");
  if (set.names_only()) return;
  config->require_subcommand(0, 1);
  set.OnRunDefault(config, [&ctx] { return RunConfigList(ctx); });
  auto* list = config->add_subcommand("list", "Show every setting, its source and the server");
  set.OnRun(list, [&ctx] { return RunConfigList(ctx); });

  auto& get_options = set.Keep<ConfigGetOptions>();
  auto* get = config->add_subcommand("get", "Print one setting");
  get->add_option("KEY", get_options.key, "Setting name")->required();
  get->add_flag("--reveal", get_options.reveal, "Print a secret in clear");
  set.OnRun(get, [&] { return RunConfigGet(get_options, ctx); });

  auto& set_options = set.Keep<ConfigSetOptions>();
  auto& value = set.Keep<std::string>();
  auto* put = config->add_subcommand(
      "set", "Store a setting in the profile (secrets are read from a prompt or stdin)");
  put->add_option("KEY", set_options.key, "Setting name")->required();
  auto* value_opt = put->add_option("VALUE", value, "Value (not for secrets)");
  set.OnRun(put, [&, value_opt] {
    if (value_opt->count() > 0) set_options.value = value;
    return RunConfigSet(set_options, ctx);
  });
}
}  // namespace bai::cli
