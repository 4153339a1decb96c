// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"
#include "bai/options.h"
#include "bai/status.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai {

/// Where configuration comes from. Precedence, highest first: `flags` > BACKEND_* environment >
/// the selected profile > defaults. The profile is `profile`, else $BAI_PROFILE, else
/// `default_profile` of config.toml, else "default".
///
/// Files: `<config_dir>/config.toml` holds profiles as `[profile.NAME]` tables plus
/// `default_profile`; secrets live in `<config_dir>/credentials.toml` (mode 0600) under the same
/// table names. No `.env` file is ever read.
struct ConfigSources {
  /// Empty = $BAI_CONFIG_DIR, else $XDG_CONFIG_HOME/bai, else $HOME/.config/bai.
  std::string config_dir;
  std::optional<std::string> profile;
  /// Setting name → value given on the command line (highest precedence).
  std::map<std::string, std::string> flags;
  /// Variable name → value; nullopt = the process environment.
  std::optional<std::map<std::string, std::string>> environment;
};

/// One resolved setting and where its value came from.
struct ConfigValue {
  std::string value;
  std::string source;  ///< "flag", "env BACKEND_ENDPOINT", "profile local", "default"
};

/// The settings in effect.
struct BAI_EXPORT ResolvedConfig {
  std::string config_dir;
  std::string profile;
  std::map<std::string, ConfigValue> values;  ///< every key of ConfigKeys()
  std::vector<std::string> warnings;          ///< e.g. a credentials file readable by others

  /// The Options these settings describe (parse errors name the setting and its source).
  StatusOr<Options> ToOptions() const;
};

/// The setting names, in display order: endpoint, access_key, secret_key, api_version, domain,
/// group, connect_timeout, read_timeout, skip_tls_verify, ca_bundle, endpoint_type.
BAI_EXPORT std::vector<std::string> const& ConfigKeys();

/// True for settings stored in credentials.toml and masked when shown (secret_key).
BAI_EXPORT bool IsSecretConfigKey(std::string const& key);

/// Reads and merges every source. A malformed file is an error that names the file and line.
BAI_EXPORT StatusOr<ResolvedConfig> ResolveConfig(ConfigSources const& sources);

/// Stores `key = value` in `profile` (secrets in credentials.toml, created with mode 0600),
/// keeping every other entry. Unknown keys and invalid values are errors.
BAI_EXPORT Status SetConfigValue(std::string const& config_dir, std::string const& profile,
                                 std::string const& key, std::string const& value);

/// The directory ResolveConfig() uses when ConfigSources::config_dir is empty.
BAI_EXPORT std::string DefaultConfigDir();

/// Where `bai` keeps what it may forget (the servers' `GET /` answers): $BAI_CACHE_DIR, else
/// $BAI_CONFIG_DIR/cache when that is set, else $XDG_CACHE_HOME/bai, else ~/.cache/bai.
BAI_EXPORT std::string DefaultCacheDir();

/// "wJal…(40 chars)": a secret shown without revealing it.
BAI_EXPORT std::string MaskSecret(std::string const& secret);

}  // namespace bai
