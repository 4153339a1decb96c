// SPDX-License-Identifier: Apache-2.0
// Kernels on a network (bridge mode): the pure part. What the agent's bridge, its nftables
// table and one kernel's veth look like, as data and command lines; network_host.* runs them.
// No I/O here, so every rule is unit-tested (tests/unit/network_plan_test.cc).
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace bai::agent {

/// An IPv4 network: its first address and prefix length ("10.220.0.0/16").
struct Ipv4Net {
  std::uint32_t address = 0;  ///< host order, host bits zero
  int prefix = 0;
};
/// "A.B.C.D/N" with 8 ≤ N ≤ 30 and no host bits set; anything else is refused with a message.
StatusOr<Ipv4Net> ParseIpv4Net(std::string_view text);
StatusOr<std::uint32_t> ParseIpv4(std::string_view text);
std::string FormatIpv4(std::uint32_t address);
std::string FormatIpv4Net(Ipv4Net const& net);

/// A kernel's network mode: `none` (DECISIONS.md's "private": loopback only) or `bridge`.
inline constexpr char kNetworkNone[] = "none";
inline constexpr char kNetworkBridge[] = "bridge";
bool ValidNetworkMode(std::string_view mode);

/// The agent's bridge mode: one Linux bridge, its address pool, NAT to the outside.
struct BridgeConfig {
  std::string bridge = "bai0";
  Ipv4Net pool{0x0ADC0000u, 16};  ///< 10.220.0.0/16; the bridge takes the first address
  bool nat = true;                ///< masquerade kernels' traffic leaving the host
  /// Addresses kernels must not reach through the host (the manager's, when it is remote); the
  /// host's own addresses are closed to them anyway.
  std::vector<std::uint32_t> blocked;
};
/// Bridge names: 1–15 of [A-Za-z0-9_-] (a Linux interface name the nft table name can carry).
Status ValidateBridgeConfig(BridgeConfig const& config);

/// The bridge's own address: the pool's first host address.
std::uint32_t Gateway(Ipv4Net const& pool);
/// The lowest host address of `pool` above the gateway that is not in `used`; nullopt when
/// the pool is full (the broadcast address is never given).
std::optional<std::uint32_t> PickAddress(Ipv4Net const& pool, std::set<std::uint32_t> const& used);

/// The agent's nftables table ("inet bai_<bridge>", '-' as '_').
std::string NftTableName(std::string const& bridge);
/// An nft script that replaces the agent's table in one transaction. What it says:
/// - input: from the bridge only replies (a kernel reaches no port of the host: not the
///   agent's, the manager's or any service listening on the host's addresses);
/// - forward: nothing between kernels (also kept apart at layer 2: isolated bridge ports), no
///   connection into a kernel from anywhere, kernels out to the world (not to `blocked`, not by
///   IPv6);
/// - output: the host opens no connection to a kernel (the manager reaches a kernel's ports
///   only through the runner's Unix socket);
/// - postrouting: masquerade for the pool when `nat`.
std::string NftRuleset(BridgeConfig const& config);
/// An nft script that removes the table (and nothing else).
std::string NftDeleteTable(std::string const& bridge);

/// One kernel's place on the bridge.
struct KernelNetwork {
  std::string bridge;
  std::string host_if;  ///< its veth's host end (HostInterface)
  std::uint32_t address = 0;
  int prefix = 0;
  std::uint32_t gateway = 0;
};
/// The host end of a kernel's veth: "bv" and 12 hex digits of the session id (IFNAMSIZ).
std::string HostInterface(std::string const& session_id);

/// The OCI hook's arguments for a kernel ("bai-agent", "hook", "network-up", ...), and back.
std::vector<std::string> NetworkHookArgs(KernelNetwork const& net);
StatusOr<KernelNetwork> ParseNetworkHookArgs(std::vector<std::string> const& args);

/// `ip` command lines (without the `ip` itself).
/// Host side, with the container's init at `pid`: the veth pair, its kernel end created
/// inside the container's network namespace as eth0, its host end on the bridge, isolated.
std::vector<std::vector<std::string>> HostSideCommands(KernelNetwork const& net, long pid);
/// Inside the container's network namespace: loopback, the address, the default route.
std::vector<std::vector<std::string>> KernelSideCommands(KernelNetwork const& net);
/// The bridge with its address, up (each idempotent: `ip addr replace`).
std::vector<std::vector<std::string>> BridgeCommands(BridgeConfig const& config);

/// A kernel's /etc/resolv.conf from the host's: loopback name servers (a local resolver the
/// kernel cannot reach) are left out, the rest kept; a comment says when none is left.
std::string KernelResolvConf(std::string_view host_resolv_conf);

}  // namespace bai::agent
