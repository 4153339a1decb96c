// SPDX-License-Identifier: Apache-2.0
#pragma once
// The OCI hooks runc runs as `bai-agent hook NAME ARGS` (createRuntime), with the container's
// state document on stdin.

#include "bai/status.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::agent {

/// The container's pid in an OCI state document (`runc state`, or a hook's stdin).
std::optional<long long> StatePid(std::string const& state_json);

/// Runs an OCI hook of ours with the container state (JSON on stdin): `loopback-up` raises `lo`
/// in the container's new network namespace (network mode "none": loopback only);
/// `network-up ARGS` puts it on the agent's bridge (NetworkHookArgs).
Status RunHook(std::string const& name, std::string const& state_json,
               std::vector<std::string> const& args = {});

}  // namespace bai::agent
