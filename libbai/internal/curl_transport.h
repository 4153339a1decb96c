// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/transport.h"

#include <chrono>
#include <memory>
#include <string>

namespace bai::internal {

struct CurlTransportOptions {
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds read_timeout{0};
  bool verify_tls = true;
  std::string ca_bundle;
  std::string user_agent;
};

/// libcurl transport. One connection pool (a CURLSH sharing the connection cache, DNS and TLS
/// sessions) per instance; easy handles are recycled so keep-alive connections are reused.
std::unique_ptr<Transport> MakeCurlTransport(CurlTransportOptions options);

/// True when a transport error means the request never reached the server (so even a
/// non-idempotent request may go to the next endpoint).
bool IsConnectFailure(Status const& status);

}  // namespace bai::internal
