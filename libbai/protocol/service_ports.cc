// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/service_ports.h"

#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <set>

namespace bai::protocol {
namespace {

using json = nlohmann::json;

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;  // Python's \w takes non-ASCII letters too
}

// Reads a run of `ok` characters from `s` at `i`.
template <class Ok>
std::string_view Run(std::string_view s, std::size_t& i, Ok ok) {
  std::size_t start = i;
  while (i < s.size() && ok(s[i])) ++i;
  return s.substr(start, i - start);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsReservedServicePort(int port) {
  return (port >= 2000 && port <= 2003) || port == 2200 || port == 7681;
}

StatusOr<std::vector<ServicePort>> ParseServicePortsLabel(std::string_view label,
                                                          std::string_view endpoint_ports) {
  std::set<std::string, std::less<>> inference;
  for (std::size_t i = 0; i <= endpoint_ports.size();) {
    auto comma = endpoint_ports.find(',', i);
    if (comma == std::string_view::npos) comma = endpoint_ports.size();
    inference.emplace(endpoint_ports.substr(i, comma - i));
    i = comma + 1;
  }
  std::vector<ServicePort> out;
  std::set<int> used;
  std::size_t i = 0;
  while (i < label.size()) {
    // NAME:PROTO:(PORT|[P,P…]) then ',' or the end, or the whole label is malformed.
    auto name = Run(label, i, [](char c) { return IsWordChar(c) || c == '-'; });
    if (name.empty() || i >= label.size() || label[i] != ':') {
      return Invalid("Invalid service-ports format");
    }
    ++i;
    auto proto = Run(label, i, IsWordChar);
    if (proto.empty() || i >= label.size() || label[i] != ':') {
      return Invalid("Invalid service-ports format");
    }
    ++i;
    std::vector<std::string_view> numbers;
    if (i < label.size() && label[i] == '[') {
      ++i;
      while (true) {
        auto n = Run(label, i, IsDigit);
        if (n.empty()) return Invalid("Invalid service-ports format");
        numbers.push_back(n);
        if (i < label.size() && label[i] == ',') {
          ++i;
          continue;
        }
        if (i < label.size() && label[i] == ']') {
          ++i;
          break;
        }
        return Invalid("Invalid service-ports format");
      }
    } else {
      auto n = Run(label, i, IsDigit);
      if (n.empty()) return Invalid("Invalid service-ports format");
      numbers.push_back(n);
    }
    if (i < label.size()) {
      if (label[i] != ',') return Invalid("Invalid service-ports format");
      ++i;
    }
    if (proto == "pty") continue;  // unsupported, skipped as 24.09 does
    if (proto != "tcp" && proto != "http" && proto != "preopen") {
      return Invalid("Unsupported service port protocol: " + std::string(proto));
    }
    ServicePort sp;
    sp.name = std::string(name);
    sp.protocol = std::string(proto);
    sp.is_inference = inference.count(name) != 0;
    for (auto n : numbers) {
      // Digits only: more than 6 of them is past 65535 whatever they say.
      int p = n.size() > 6 ? 1000000 : std::stoi(std::string(n));
      if (used.count(p)) {
        return Invalid("The port " + std::to_string(p) +
                       " is already used by another service port.");
      }
      if (p <= 1024) {
        return Invalid("The service port number " + std::to_string(p) +
                       " must be larger than 1024 to run without the root privilege.");
      }
      if (p >= 65535) {
        return Invalid("The service port number " + std::to_string(p) +
                       " must be smaller than 65535.");
      }
      if (IsReservedServicePort(p)) {
        return Invalid(
            "The service ports 2000 to 2003, 2200 and 7681 are reserved for internal use.");
      }
      used.insert(p);
      sp.container_ports.push_back(p);
    }
    out.push_back(std::move(sp));
  }
  return out;
}

std::string EncodeApps(std::vector<ServicePort> const& ports) {
  json out = json::array();
  for (auto const& p : ports) {
    json item = {{"name", p.name}, {"protocol", p.protocol}, {"ports", p.container_ports}};
    if (p.url_template) item["url_template"] = *p.url_template;
    if (!p.allowed_arguments.empty()) item["allowed_arguments"] = p.allowed_arguments;
    if (!p.allowed_envs.empty()) item["allowed_envs"] = p.allowed_envs;
    out.push_back(std::move(item));
  }
  return out.dump();
}

StatusOr<std::vector<ServicePort>> DecodeApps(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_array()) return Invalid("the apps answer is not a JSON array");
  std::vector<ServicePort> out;
  for (auto const& item : *j) {
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) {
      return Invalid("an app without a name");
    }
    ServicePort p;
    p.name = item["name"].get<std::string>();
    if (auto it = item.find("protocol"); it != item.end() && it->is_string()) p.protocol = *it;
    if (auto it = item.find("ports"); it != item.end() && it->is_array()) {
      for (auto const& n : *it) {
        if (n.is_number_integer()) p.container_ports.push_back(n.get<int>());
      }
    }
    if (auto it = item.find("url_template"); it != item.end() && it->is_string()) {
      p.url_template = it->get<std::string>();
    }
    for (auto [key, field] : {std::pair{"allowed_arguments", &p.allowed_arguments},
                              std::pair{"allowed_envs", &p.allowed_envs}}) {
      if (auto it = item.find(key); it != item.end() && it->is_array()) {
        for (auto const& v : *it) {
          if (v.is_string()) field->push_back(v.get<std::string>());
        }
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace bai::protocol
