// SPDX-License-Identifier: Apache-2.0
// Kernels on a network (bridge mode): the thin shell that runs network_plan's commands with
// iproute2's `ip` and nftables' `nft` (Debian's iproute2 and nftables packages).
#pragma once

#include "bai/status.h"

#include "server-reference/agent/network_plan.h"

#include <string>
#include <vector>

namespace bai::agent {

/// Creates the bridge when it is missing (kept when it exists: re-adopted kernels are on it),
/// gives it its address, turns IPv4 forwarding on and IPv6 off on it, and (re)loads the
/// agent's nftables table from `rules_file` (written there first: the admin can read it).
Status EnsureBridge(BridgeConfig const& config, std::string const& rules_file);

/// The OCI createRuntime hook `network-up` for the container whose init is `pid`:
/// HostSideCommands in the agent's network namespace, then KernelSideCommands inside the
/// container's.
Status RunNetworkHook(long pid, std::vector<std::string> const& args);

/// Removes a kernel's veth (both ends go); nothing when it is already gone.
void DeleteHostInterface(std::string const& host_if);

/// Whether this host has what bridge mode needs (`ip` and `nft`); the message says what not.
Status BridgeToolsAvailable();

}  // namespace bai::agent
