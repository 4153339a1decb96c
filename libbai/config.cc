// SPDX-License-Identifier: Apache-2.0
#include "bai/config.h"

#include "bai/protocol/api_version.h"

#include "libbai/util/text.h"
#include "libbai/util/url.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace bai {
namespace {

struct KeySpec {
  char const* key;
  char const* env;  // BACKEND_<env>, falling back to SORNA_<env>; nullptr = none
  char const* fallback;
};

constexpr KeySpec kKeys[] = {
    {"endpoint", "ENDPOINT", "http://127.0.0.1:8081"},
    {"access_key", "ACCESS_KEY", ""},
    {"secret_key", "SECRET_KEY", ""},
    {"api_version", nullptr, ""},
    {"domain", "DOMAIN", ""},  // "": the user's own domain
    {"group", "GROUP", "default"},
    {"connect_timeout", "CONNECTION_TIMEOUT", "10"},
    {"read_timeout", "READ_TIMEOUT", "0"},
    {"skip_tls_verify", "SKIP_SSLCERT_VALIDATION", "no"},
    {"ca_bundle", nullptr, ""},
    {"endpoint_type", "ENDPOINT_TYPE", "api"},
};

KeySpec const* FindKey(std::string const& key) {
  for (auto const& k : kKeys) {
    if (key == k.key) return &k;
  }
  return nullptr;
}

std::optional<bool> ParseBool(std::string const& v) {
  std::string s = internal::AsciiLower(v);
  if (s == "y" || s == "yes" || s == "t" || s == "true" || s == "1" || s == "on") return true;
  if (s == "n" || s == "no" || s == "f" || s == "false" || s == "0" || s == "off" || s.empty()) {
    return false;
  }
  return std::nullopt;
}

std::optional<double> ParseSeconds(std::string const& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || !(d >= 0) || d > 1e7) return std::nullopt;
  return d;
}

std::vector<std::string> SplitEndpoints(std::string const& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

Status Invalid(std::string const& key, std::string const& value, std::string const& source,
               std::string const& why) {
  return Status(StatusCode::kInvalidArgument,
                "invalid " + key + " \"" + value + "\" (from " + source + "): " + why);
}

Status ValidateValue(std::string const& key, std::string const& value, std::string const& source) {
  if (key == "endpoint") {
    auto endpoints = SplitEndpoints(value);
    if (endpoints.empty()) return Invalid(key, value, source, "no URL given");
    for (auto const& e : endpoints) {
      auto parsed = internal::ParseEndpoint(e);
      if (!parsed.ok()) return Invalid(key, value, source, parsed.status().message());
    }
  } else if (key == "api_version") {
    if (!value.empty() && !protocol::ApiVersion::Parse(value)) {
      return Invalid(key, value, source, "expected vX.YYYYMMDD, e.g. v8.20240915");
    }
  } else if (key == "connect_timeout" || key == "read_timeout") {
    if (!ParseSeconds(value))
      return Invalid(key, value, source, "expected seconds (e.g. 10 or 2.5)");
  } else if (key == "skip_tls_verify") {
    if (!ParseBool(value)) return Invalid(key, value, source, "expected yes or no");
  } else if (key == "endpoint_type") {
    if (value != "api") {
      return Invalid(key, value, source,
                     "only \"api\" (keypair signing) is supported; webserver session mode is not");
    }
  }
  return {};
}

std::string EnvLookup(ConfigSources const& sources, std::string const& name) {
  if (sources.environment) {
    auto it = sources.environment->find(name);
    return it == sources.environment->end() ? std::string() : it->second;
  }
  char const* v = std::getenv(name.c_str());
  return v ? v : "";
}

std::optional<std::string> TomlToString(toml::node const& node) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto f = node.as_floating_point()) {
    std::ostringstream os;
    os << f->get();
    return os.str();
  }
  if (auto b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::nullopt;
}

StatusOr<toml::table> ReadToml(std::string const& path, bool& exists) {
  struct stat st {};
  exists = ::stat(path.c_str(), &st) == 0;
  if (!exists) return toml::table{};
  std::ifstream in(path);
  if (!in)
    return Status(StatusCode::kPermissionDenied,
                  "cannot read " + path + ": " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  // Debian's toml++ is built with exceptions: contain them here.
  try {
    return toml::parse(buffer.str(), path);
  } catch (toml::parse_error const& err) {
    return Status(StatusCode::kInvalidArgument, path + ":" +
                                                    std::to_string(err.source().begin.line) + ": " +
                                                    std::string(err.description()));
  }
}

Status WriteFileAtomically(std::string const& path, std::string const& text, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return Status(StatusCode::kPermissionDenied,
                  "cannot write " + tmp + ": " + std::strerror(errno));
  ::fchmod(fd, mode);
  std::size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(StatusCode::kDataLoss, "cannot write " + tmp + ": " + err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status(StatusCode::kDataLoss, "cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status(StatusCode::kDataLoss, "cannot replace " + path + ": " + std::strerror(errno));
  }
  return {};
}

Status MakeDirs(std::string const& dir) {
  std::string partial;
  std::stringstream ss(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/') partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(StatusCode::kPermissionDenied,
                    "cannot create " + partial + ": " + std::strerror(errno));
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> const& ConfigKeys() {
  static auto const* const kNames = [] {
    auto* v = new std::vector<std::string>;
    for (auto const& k : kKeys) v->emplace_back(k.key);
    return v;
  }();
  return *kNames;
}

bool IsSecretConfigKey(std::string const& key) { return key == "secret_key"; }

std::string DefaultConfigDir() {
  if (char const* d = std::getenv("BAI_CONFIG_DIR"); d && *d) return d;
  if (char const* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/bai";
  char const* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/bai";
}

std::string DefaultCacheDir() {
  if (char const* d = std::getenv("BAI_CACHE_DIR"); d && *d) return d;
  if (char const* d = std::getenv("BAI_CONFIG_DIR"); d && *d) return std::string(d) + "/cache";
  if (char const* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/bai";
  char const* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/bai";
}

std::string MaskSecret(std::string const& secret) {
  if (secret.empty()) return "";
  if (secret.size() < 12) return "****";
  return secret.substr(0, 4) + "…(" + std::to_string(secret.size()) + " chars)";
}

StatusOr<ResolvedConfig> ResolveConfig(ConfigSources const& sources) {
  ResolvedConfig out;
  out.config_dir = sources.config_dir.empty() ? DefaultConfigDir() : sources.config_dir;
  bool config_exists = false;
  bool creds_exists = false;
  std::string config_path = out.config_dir + "/config.toml";
  std::string creds_path = out.config_dir + "/credentials.toml";
  auto config = ReadToml(config_path, config_exists);
  if (!config.ok()) return std::move(config).status();
  auto creds = ReadToml(creds_path, creds_exists);
  if (!creds.ok()) return std::move(creds).status();
  if (creds_exists) {
    struct stat st {};
    if (::stat(creds_path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      out.warnings.push_back(creds_path + " is readable by other users; run: chmod 600 " +
                             creds_path);
    }
  }

  if (sources.profile && !sources.profile->empty()) {
    out.profile = *sources.profile;
  } else if (auto env = EnvLookup(sources, "BAI_PROFILE"); !env.empty()) {
    out.profile = env;
  } else if (auto d = (*config)["default_profile"].value<std::string>()) {
    out.profile = *d;
  } else {
    out.profile = "default";
  }
  auto const* profile_table = (*config)["profile"][out.profile].as_table();
  auto const* creds_table = (*creds)["profile"][out.profile].as_table();
  bool explicit_profile =
      (sources.profile && !sources.profile->empty()) || !EnvLookup(sources, "BAI_PROFILE").empty();
  if (explicit_profile && !profile_table && !creds_table) {
    return Status(StatusCode::kNotFound, "no profile \"" + out.profile + "\" in " + config_path +
                                             " (create it with `bai config set --profile " +
                                             out.profile + " endpoint URL`)");
  }

  for (auto const& spec : kKeys) {
    std::string key = spec.key;
    ConfigValue value{spec.fallback, "default"};
    auto const* table = IsSecretConfigKey(key) ? creds_table : profile_table;
    if (table) {
      if (auto const* node = table->get(key)) {
        auto text = TomlToString(*node);
        if (!text) {
          return Status(StatusCode::kInvalidArgument,
                        (IsSecretConfigKey(key) ? creds_path : config_path) + ": " + key +
                            " in profile " + out.profile + " must be a string, number or boolean");
        }
        value = {*text, "profile " + out.profile};
      }
    }
    if (spec.env) {
      for (char const* prefix : {"BACKEND_", "SORNA_"}) {
        std::string name = std::string(prefix) + spec.env;
        auto env = EnvLookup(sources, name);
        if (!env.empty()) {
          value = {env, "env " + name};
          break;
        }
      }
    }
    if (auto flag = sources.flags.find(key); flag != sources.flags.end()) {
      value = {flag->second, "flag"};
    }
    if (auto st = ValidateValue(key, value.value, value.source); !st.ok()) return st;
    out.values[key] = std::move(value);
  }
  return out;
}

StatusOr<Options> ResolvedConfig::ToOptions() const {
  auto get = [this](char const* key) -> std::string const& { return values.at(key).value; };
  Options o;
  o.endpoints = SplitEndpoints(get("endpoint"));
  o.access_key = get("access_key");
  o.secret_key = get("secret_key");
  if (!get("api_version").empty()) o.api_version = get("api_version");
  o.domain = get("domain");
  o.group = get("group");
  o.connect_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(*ParseSeconds(get("connect_timeout")) * 1000));
  o.read_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(*ParseSeconds(get("read_timeout")) * 1000));
  o.verify_tls = !*ParseBool(get("skip_tls_verify"));
  o.ca_bundle = get("ca_bundle");
  return o;
}

Status SetConfigValue(std::string const& config_dir, std::string const& profile,
                      std::string const& key, std::string const& value) {
  bool is_default_profile = key == "default_profile";
  if (!is_default_profile && !FindKey(key)) {
    std::string known;
    for (auto const& k : kKeys) known += std::string(known.empty() ? "" : ", ") + k.key;
    return Status(StatusCode::kInvalidArgument,
                  "unknown setting \"" + key + "\" (known: default_profile, " + known + ")");
  }
  if (profile.empty() || profile.find_first_of(".\"'[] \t") != std::string::npos) {
    return Status(StatusCode::kInvalidArgument, "invalid profile name \"" + profile + "\"");
  }
  if (!is_default_profile) {
    if (auto st = ValidateValue(key, value, "the command line"); !st.ok()) return st;
  }
  if (auto st = MakeDirs(config_dir); !st.ok()) return st;
  bool secret = IsSecretConfigKey(key);
  std::string path = config_dir + (secret ? "/credentials.toml" : "/config.toml");
  bool exists = false;
  auto doc = ReadToml(path, exists);
  if (!doc.ok()) return std::move(doc).status();
  if (is_default_profile) {
    doc->insert_or_assign("default_profile", value);
  } else {
    if (!(*doc)["profile"].as_table()) doc->insert_or_assign("profile", toml::table{});
    auto* profiles = (*doc)["profile"].as_table();
    if (!(*profiles)[profile].as_table()) profiles->insert_or_assign(profile, toml::table{});
    (*profiles)[profile].as_table()->insert_or_assign(key, value);
  }
  std::ostringstream os;
  os << *doc << "\n";
  return WriteFileAtomically(path, os.str(), secret ? 0600 : 0644);
}

}  // namespace bai
