// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/config.h"

#include "server-reference/common/http/listen_address.h"

#include <toml++/toml.h>

namespace bai::manager {

Status SetListen(std::string const& text, ManagerConfig& config) {
  auto listen = server::ParseListenAddress(text);
  if (!listen.ok()) return listen.status();
  config.listen_address = listen->host;
  config.listen_port = listen->port;
  return {};
}

Status SetStorageListen(std::string const& text, ManagerConfig& config) {
  ManagerConfig scratch;
  if (auto s = SetListen(text, scratch); !s.ok()) return s;
  config.vfolders.listen_address = scratch.listen_address;
  config.vfolders.listen_port = scratch.listen_port;
  return {};
}

Status LoadManagerConfig(std::string const& path, ManagerConfig& config) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (toml::parse_error const& e) {
    return Status(StatusCode::kInvalidArgument, path + ":" + std::to_string(e.source().begin.line) +
                                                    ": " + std::string(e.description()));
  }
  auto bad = [&](std::string const& key, char const* want) {
    return Status(StatusCode::kInvalidArgument, path + ": " + key + " must be " + want);
  };
  for (auto const& [section, node] : doc) {
    auto const* table = node.as_table();
    std::string name(section.str());
    if (!table || (name != "server" && name != "storage" && name != "agents" && name != "auth" &&
                   name != "vfolders" && name != "scheduler" && name != "logging")) {
      return Status(StatusCode::kInvalidArgument, path + ": unknown section [" + name + "]");
    }
    for (auto const& [k, v] : *table) {
      std::string key = name + "." + std::string(k.str());
      if (key == "server.listen") {
        auto s = v.value<std::string>();
        if (!s) return bad(key, "a \"host:port\" string");
        if (auto st = SetListen(*s, config); !st.ok()) return st;
      } else if (key == "server.threads") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1 || *n > 256) return bad(key, "an integer from 1 to 256");
        config.threads = static_cast<int>(*n);
      } else if (key == "server.max_body_bytes") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1024) return bad(key, "an integer of at least 1024");
        config.max_body_bytes = static_cast<std::size_t>(*n);
      } else if (key == "storage.data_dir") {
        auto s = v.value<std::string>();
        if (!s || s->empty()) return bad(key, "a path");
        config.data_dir = *s;
      } else if (key == "storage.database") {
        auto s = v.value<std::string>();
        if (!s) return bad(key, "a path");
        config.database = *s;
      } else if (key == "agents.heartbeat_timeout" || key == "agents.lost_grace" ||
                 key == "agents.lost_forget") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1 || *n > 86400 * 7) return bad(key, "seconds from 1 to 604800");
        int& field = key == "agents.heartbeat_timeout" ? config.agent_heartbeat_timeout
                     : key == "agents.lost_grace"      ? config.agent_lost_grace
                                                       : config.agent_lost_forget;
        field = static_cast<int>(*n);
      } else if (key == "images.auto_pull") {
        auto s = v.value<std::string>();
        if (!s || (*s != "digest" && *s != "tag" && *s != "none"))
          return bad(key, "digest, tag or none");
        config.image_auto_pull = *s;
      } else if (key == "auth.allow_signup") {
        auto b = v.value<bool>();
        if (!b) return bad(key, "true or false");
        config.allow_signup = *b;
      } else if (key == "auth.login_attempts_per_address" ||
                 key == "auth.login_failures_per_user") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1 || *n > 1000000) return bad(key, "an integer from 1 to 1000000");
        (key == "auth.login_attempts_per_address" ? config.login_limits.per_address
                                                  : config.login_limits.failures_per_user) =
            static_cast<int>(*n);
      } else if (key == "scheduler.head_wait") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 0 || *n > 86400 * 7) return bad(key, "seconds from 0 to 604800");
        config.scheduler_head_wait = static_cast<int>(*n);
      } else if (key == "auth.trusted_proxies") {
        auto const* list = v.as_array();
        if (!list) return bad(key, "an array of IP addresses");
        for (auto const& item : *list) {
          auto address = item.value<std::string>();
          if (!address || !server::IsIpAddress(*address)) {
            return bad(key, "an array of IP addresses");
          }
          config.trusted_proxies.push_back(*address);
        }
      } else if (key == "auth.signups_per_address") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1 || *n > 1000000) return bad(key, "an integer from 1 to 1000000");
        config.signups_per_address = static_cast<int>(*n);
      } else if (key == "auth.max_streams_per_user") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 0 || *n > 1000000) return bad(key, "an integer from 0 to 1000000");
        config.max_streams_per_user = static_cast<int>(*n);
      } else if (key == "vfolders.embedded") {
        auto b = v.value<bool>();
        if (!b) return bad(key, "true or false");
        config.vfolders.embedded = *b;
      } else if (key == "vfolders.listen") {
        auto s = v.value<std::string>();
        if (!s) return bad(key, "a \"host:port\" string");
        if (auto st = SetStorageListen(*s, config); !st.ok()) return st;
      } else if (key == "vfolders.public_url" || key == "vfolders.default_host" ||
                 key == "vfolders.file_owner") {
        auto s = v.value<std::string>();
        if (!s) return bad(key, "a string");
        (key == "vfolders.public_url"     ? config.vfolders.public_url
         : key == "vfolders.default_host" ? config.vfolders.default_host
                                          : config.vfolders.file_owner) = *s;
      } else if (key == "vfolders.volumes") {
        auto const* t = v.as_table();
        if (!t) return bad(key, "a table of name = \"directory\"");
        for (auto const& [vk, vv] : *t) {
          auto dir = vv.value<std::string>();
          if (!dir || dir->empty()) return bad(key, "a table of name = \"directory\"");
          config.vfolders.volumes[std::string(vk.str())] = *dir;
        }
      } else if (key == "vfolders.proxies") {
        auto const* list = v.as_array();
        if (!list) return bad(key, "an array of tables");
        for (auto const& item : *list) {
          auto const* t = item.as_table();
          if (!t) return bad(key, "an array of tables");
          ManagerConfig::RemoteProxy proxy;
          proxy.name = (*t)["name"].value_or(std::string());
          proxy.url = (*t)["url"].value_or(std::string());
          proxy.secret_file = (*t)["secret_file"].value_or(std::string());
          if (proxy.name.empty() || proxy.url.empty() || proxy.secret_file.empty()) {
            return bad(key, "tables with name, url and secret_file");
          }
          config.vfolders.proxies.push_back(proxy);
        }
      } else if (key == "logging.level" || key == "logging.format" || key == "logging.file" ||
                 key == "logging.max_size") {
        auto s = v.value<std::string>();
        if (!s) return bad(key, "a string");
        (key == "logging.level"    ? config.logging.level
         : key == "logging.format" ? config.logging.format
         : key == "logging.file"   ? config.logging.file
                                   : config.logging.max_size) = *s;
      } else if (key == "logging.max_files") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1 || *n > 1000) return bad(key, "an integer from 1 to 1000");
        config.logging.max_files = static_cast<int>(*n);
      } else if (key == "auth.login_window") {
        auto n = v.value<std::int64_t>();
        if (!n || *n < 1 || *n > 86400) return bad(key, "seconds from 1 to 86400");
        config.login_limits.window = std::chrono::seconds(*n);
      } else {
        return Status(StatusCode::kInvalidArgument, path + ": unknown setting " + key);
      }
    }
  }
  return {};
}

}  // namespace bai::manager
