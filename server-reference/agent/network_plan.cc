// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/network_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace bai::agent {

namespace {

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

std::uint32_t Mask(int prefix) { return prefix == 0 ? 0u : ~std::uint32_t{0} << (32 - prefix); }

std::uint32_t Broadcast(Ipv4Net const& net) { return net.address | ~Mask(net.prefix); }

}  // namespace

StatusOr<std::uint32_t> ParseIpv4(std::string_view text) {
  std::uint32_t out = 0;
  std::string_view rest = text;
  for (int i = 0; i < 4; ++i) {
    unsigned part = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), part);
    std::size_t used = static_cast<std::size_t>(end - rest.data());
    if (ec != std::errc() || used == 0 || used > 3 || part > 255) {
      return Invalid("not an IPv4 address: '" + std::string(text) + "'");
    }
    out = (out << 8) | part;
    rest.remove_prefix(used);
    if (i < 3) {
      if (rest.empty() || rest.front() != '.') {
        return Invalid("not an IPv4 address: '" + std::string(text) + "'");
      }
      rest.remove_prefix(1);
    }
  }
  if (!rest.empty()) return Invalid("not an IPv4 address: '" + std::string(text) + "'");
  return out;
}

StatusOr<Ipv4Net> ParseIpv4Net(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Invalid("'" + std::string(text) + "' is not a network: A.B.C.D/N, e.g. 10.220.0.0/16");
  }
  auto address = ParseIpv4(text.substr(0, slash));
  if (!address.ok()) return address.status();
  std::string_view p = text.substr(slash + 1);
  int prefix = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), prefix);
  if (ec != std::errc() || end != p.data() + p.size() || prefix < 8 || prefix > 30) {
    return Invalid("network '" + std::string(text) +
                   "': the prefix length must be 8 to 30 (room for a bridge and kernels)");
  }
  if ((*address & ~Mask(prefix)) != 0) {
    return Invalid("network '" + std::string(text) + "' has host bits set; did you mean " +
                   FormatIpv4(*address & Mask(prefix)) + "/" + std::to_string(prefix) + "?");
  }
  return Ipv4Net{*address, prefix};
}

std::string FormatIpv4(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
         std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}

std::string FormatIpv4Net(Ipv4Net const& net) {
  return FormatIpv4(net.address) + "/" + std::to_string(net.prefix);
}

bool ValidNetworkMode(std::string_view mode) {
  return mode == kNetworkNone || mode == kNetworkBridge;
}

Status ValidateBridgeConfig(BridgeConfig const& config) {
  auto const& b = config.bridge;
  bool ok = !b.empty() && b.size() <= 15 && std::all_of(b.begin(), b.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (!ok) {
    return Invalid("bridge name '" + b + "': 1 to 15 letters, digits, '_' or '-'");
  }
  if (config.pool.prefix < 8 || config.pool.prefix > 30 ||
      (config.pool.address & ~Mask(config.pool.prefix)) != 0) {
    return Invalid("network pool " + FormatIpv4Net(config.pool) + " is not a network");
  }
  return Status();
}

std::uint32_t Gateway(Ipv4Net const& pool) { return pool.address + 1; }

std::optional<std::uint32_t> PickAddress(Ipv4Net const& pool, std::set<std::uint32_t> const& used) {
  std::uint32_t last = Broadcast(pool);
  for (std::uint32_t a = Gateway(pool) + 1; a < last; ++a) {
    if (!used.count(a)) return a;
  }
  return std::nullopt;
}

std::string NftTableName(std::string const& bridge) {
  std::string name = "bai_" + bridge;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string NftRuleset(BridgeConfig const& c) {
  std::string t = NftTableName(c.bridge);
  std::string br = "\"" + c.bridge + "\"";
  std::ostringstream s;
  // Declaring the table first makes the delete valid when it does not exist yet; the three
  // lines are one transaction, so there is no moment without rules.
  s << "table inet " << t << "\n"
    << "delete table inet " << t << "\n"
    << "table inet " << t << " {\n"
    << "  chain input {\n"
    << "    type filter hook input priority filter; policy accept;\n"
    << "    iifname " << br << " ct state established,related accept\n"
    << "    iifname " << br << " drop\n"
    << "  }\n"
    << "  chain forward {\n"
    << "    type filter hook forward priority filter; policy accept;\n"
    << "    iifname " << br << " oifname " << br << " drop\n"
    << "    oifname " << br << " ct state established,related accept\n"
    << "    oifname " << br << " drop\n";
  if (!c.blocked.empty()) {
    s << "    iifname " << br << " ip daddr { ";
    for (std::size_t i = 0; i < c.blocked.size(); ++i) {
      s << (i ? ", " : "") << FormatIpv4(c.blocked[i]);
    }
    s << " } drop\n";
  }
  s << "    iifname " << br << " meta nfproto ipv6 drop\n"
    << "    iifname " << br << " accept\n"
    << "  }\n"
    << "  chain output {\n"
    << "    type filter hook output priority filter; policy accept;\n"
    << "    oifname " << br << " ct state established,related accept\n"
    << "    oifname " << br << " drop\n"
    << "  }\n";
  if (c.nat) {
    s << "  chain postrouting {\n"
      << "    type nat hook postrouting priority srcnat; policy accept;\n"
      << "    ip saddr " << FormatIpv4Net(c.pool) << " oifname != " << br << " masquerade\n"
      << "  }\n";
  }
  s << "}\n";
  return s.str();
}

std::string NftDeleteTable(std::string const& bridge) {
  std::string t = NftTableName(bridge);
  return "table inet " + t + "\ndelete table inet " + t + "\n";
}

std::string HostInterface(std::string const& session_id) {
  std::string hex;
  for (char c : session_id) {
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (hex.size() == 12) break;
  }
  return "bv" + hex;
}

std::vector<std::string> NetworkHookArgs(KernelNetwork const& n) {
  return {"bai-agent",
          "hook",
          "network-up",
          "--bridge",
          n.bridge,
          "--host-if",
          n.host_if,
          "--address",
          FormatIpv4(n.address) + "/" + std::to_string(n.prefix),
          "--gateway",
          FormatIpv4(n.gateway)};
}

StatusOr<KernelNetwork> ParseNetworkHookArgs(std::vector<std::string> const& args) {
  KernelNetwork n;
  bool address = false, gateway = false;
  for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
    std::string const& k = args[i];
    std::string const& v = args[i + 1];
    if (k == "--bridge") {
      n.bridge = v;
    } else if (k == "--host-if") {
      n.host_if = v;
    } else if (k == "--address") {
      auto slash = v.find('/');
      auto a = ParseIpv4(v.substr(0, slash));
      if (!a.ok() || slash == std::string::npos) return Invalid("--address: A.B.C.D/N");
      n.address = *a;
      n.prefix = std::atoi(v.c_str() + slash + 1);
      address = n.prefix >= 8 && n.prefix <= 30;
    } else if (k == "--gateway") {
      auto a = ParseIpv4(v);
      if (!a.ok()) return a.status();
      n.gateway = *a;
      gateway = true;
    } else {
      return Invalid("unknown network-up argument " + k);
    }
  }
  if (args.size() % 2 != 0) return Invalid("network-up: an argument without its value");
  if (n.bridge.empty() || n.host_if.empty() || !address || !gateway) {
    return Invalid("network-up needs --bridge, --host-if, --address and --gateway");
  }
  return n;
}

std::vector<std::vector<std::string>> HostSideCommands(KernelNetwork const& n, long pid) {
  return {{"link", "add", n.host_if, "type", "veth", "peer", "name", "eth0", "netns",
           std::to_string(pid)},
          {"link", "set", n.host_if, "master", n.bridge},
          {"link", "set", n.host_if, "type", "bridge_slave", "isolated", "on"},
          {"link", "set", n.host_if, "up"}};
}

std::vector<std::vector<std::string>> KernelSideCommands(KernelNetwork const& n) {
  return {{"link", "set", "lo", "up"},
          {"addr", "add", FormatIpv4(n.address) + "/" + std::to_string(n.prefix), "dev", "eth0"},
          {"link", "set", "eth0", "up"},
          {"route", "add", "default", "via", FormatIpv4(n.gateway), "dev", "eth0"}};
}

std::vector<std::vector<std::string>> BridgeCommands(BridgeConfig const& c) {
  return {{"addr", "replace", FormatIpv4(Gateway(c.pool)) + "/" + std::to_string(c.pool.prefix),
           "dev", c.bridge},
          {"link", "set", c.bridge, "up"}};
}

std::string KernelResolvConf(std::string_view host) {
  std::string out;
  int servers = 0;
  std::istringstream in{std::string(host)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key, value;
    words >> key >> value;
    if (key == "nameserver") {
      // 127.0.0.0/8 and ::1 are the host's own resolver, out of the kernel's reach.
      if (value.rfind("127.", 0) == 0 || value == "::1") continue;
      ++servers;
    }
    out += line + "\n";
  }
  if (servers == 0) {
    out += "# no name server: the host's are on its loopback, which kernels cannot reach\n";
  }
  return out;
}

}  // namespace bai::agent
