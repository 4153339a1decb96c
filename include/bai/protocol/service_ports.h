// SPDX-License-Identifier: Apache-2.0
#pragma once
// Service ports ("apps"): what a session's main kernel serves, declared by its image's
// `ai.backend.service-ports` label and by `preopen_ports` at creation, and listed by
// `GET /stream/session/{id}/apps` (PROTOCOL.md §5.7; streams-admin-console.md §A.4).

#include "bai/export.h"
#include "bai/status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// One service port of a kernel.
struct ServicePort {
  std::string name;                         ///< "jupyter", "tensorboard", "8080" (a preopen port)
  std::string protocol;                     ///< tcp | http | preopen
  std::vector<int> container_ports;         ///< the first is the app's; others are secondary
  bool is_inference = false;                ///< named by `ai.backend.endpoint-ports`
  std::optional<std::string> url_template;  ///< from its service definition
  std::vector<std::string> allowed_arguments;
  std::vector<std::string> allowed_envs;
};

/// Container ports a service may not use: the kernel runner's and the intrinsic apps' (24.09:
/// 2000–2003, 2200 sshd, 7681 ttyd).
BAI_EXPORT bool IsReservedServicePort(int port);

/// Parses an `ai.backend.service-ports` label as 24.09 does: `NAME:PROTO:PORT` or
/// `NAME:PROTO:[P1,P2]` items joined by commas; protocol tcp, http or preopen (`pty` items are
/// skipped); ports above 1024, below 65535, not reserved and not used twice. `endpoint_ports`
/// (the `ai.backend.endpoint-ports` label, comma-separated names) marks inference apps.
/// Refusals are kInvalidArgument with 24.09's message.
BAI_EXPORT StatusOr<std::vector<ServicePort>> ParseServicePortsLabel(
    std::string_view label, std::string_view endpoint_ports = {});

/// The answer of `GET /stream/session/{id}/apps`: a JSON array of `{name, protocol, ports,
/// url_template?, allowed_arguments?, allowed_envs?}`.
BAI_EXPORT std::string EncodeApps(std::vector<ServicePort> const& ports);
BAI_EXPORT StatusOr<std::vector<ServicePort>> DecodeApps(std::string_view json);

}  // namespace bai::protocol
