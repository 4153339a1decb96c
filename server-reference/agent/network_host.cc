// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/network_host.h"

#include "server-reference/common/exec/process.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace bai::agent {

namespace {

// Hooks run with an empty environment (no PATH): the tools by their full path.
Status Ip(std::vector<std::string> args) {
  static std::string const ip = server::FindSystemTool("ip");
  args.insert(args.begin(), ip);
  return server::RunTool(args, std::chrono::seconds(10));
}

bool WriteSysctl(std::string const& path, char const* value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

void DeleteHostInterface(std::string const& host_if) {
  if (Ip({"link", "show", "dev", host_if}).ok()) (void)Ip({"link", "del", host_if});
}

Status BridgeToolsAvailable() {
  if (server::FindSystemTool("ip").empty())
    return Status(StatusCode::kFailedPrecondition, "no `ip` (iproute2)");
  if (server::FindSystemTool("nft").empty()) {
    return Status(StatusCode::kFailedPrecondition, "no `nft` (install Debian's nftables)");
  }
  return Status();
}

Status EnsureBridge(BridgeConfig const& config, std::string const& rules_file) {
  if (auto s = ValidateBridgeConfig(config); !s.ok()) return s;
  if (auto s = BridgeToolsAvailable(); !s.ok()) return s;
  // `ip link show` rather than /sys/class/net: sysfs shows the namespace it was mounted in.
  if (!Ip({"link", "show", "dev", config.bridge}).ok()) {
    if (auto s = Ip({"link", "add", config.bridge, "type", "bridge"}); !s.ok()) return s;
  }
  for (auto const& cmd : BridgeCommands(config)) {
    if (auto s = Ip(cmd); !s.ok()) return s;
  }
  if (!WriteSysctl("/proc/sys/net/ipv4/ip_forward", "1")) {
    return Status(StatusCode::kInternal, "cannot turn on IPv4 forwarding (/proc/sys/net)");
  }
  // No IPv6 address on the bridge (kernels are reached by IPv4 only; best effort: a host
  // without IPv6 has no such file).
  WriteSysctl("/proc/sys/net/ipv6/conf/" + config.bridge + "/disable_ipv6", "1");
  {
    std::ofstream out(rules_file, std::ios::trunc);
    out << NftRuleset(config);
    if (!out) return Status(StatusCode::kInternal, "cannot write " + rules_file);
  }
  server::ProcessOptions o;
  o.timeout = std::chrono::seconds(20);
  auto r = server::RunProcess({server::FindSystemTool("nft"), "-f", rules_file}, o);
  if (r.exit_code != 0) {
    return Status(StatusCode::kInternal, "nft -f " + rules_file + ": " + r.output);
  }
  return Status();
}

Status RunNetworkHook(long pid, std::vector<std::string> const& args) {
  auto net = ParseNetworkHookArgs(args);
  if (!net.ok()) return net.status();
  if (server::FindSystemTool("ip").empty())
    return Status(StatusCode::kFailedPrecondition, "no `ip` (iproute2)");
  for (auto const& cmd : HostSideCommands(*net, pid)) {
    if (auto s = Ip(cmd); !s.ok()) return s;
  }
  std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
  int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    return Status(StatusCode::kInternal, "cannot enter " + ns + ": " + std::strerror(err));
  }
  close(fd);
  // The `ip` children start in the container's namespace, as this process now is.
  for (auto const& cmd : KernelSideCommands(*net)) {
    if (auto s = Ip(cmd); !s.ok()) return s;
  }
  return Status();
}

}  // namespace bai::agent
