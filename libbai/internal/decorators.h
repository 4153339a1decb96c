// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/transport.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace bai::internal {

/// Signs each request with `sign == true` (PROTOCOL.md §2.2): adds Date and Authorization over
/// exactly the target, Host and Content-Type that the inner transport will send.
std::unique_ptr<Transport> MakeSigningTransport(
    std::unique_ptr<Transport> inner, std::string access_key, std::string secret_key,
    std::function<std::chrono::system_clock::time_point()> clock = {});

/// Logs every request and response line to `sink`, with Authorization signatures and secret
/// keys redacted, and bodies cut at 4 KiB.
std::unique_ptr<Transport> MakeLoggingTransport(std::unique_ptr<Transport> inner,
                                                std::function<void(std::string_view)> sink);

/// The Authorization header value with its signature replaced by "<redacted>".
std::string RedactAuthorization(std::string_view value);

}  // namespace bai::internal
