// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <string>

namespace bai::server {

/// A listener's HOST:PORT as the daemons' flags and files give it (`[::1]:8081` for IPv6; port
/// 0 = any free port).
struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;
};
/// kInvalidArgument naming the text when it is not HOST:PORT with a port of 0-65535.
StatusOr<ListenAddress> ParseListenAddress(std::string const& text);

}  // namespace bai::server
