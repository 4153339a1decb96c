// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai {

class Transport;  // bai/transport.h

/// How often a failed idempotent request is tried again. Requests that are not idempotent
/// (session creation, code execution) are never retried after they reached the server: a
/// duplicated GPU session costs real resources.
struct RetryPolicy {
  int max_attempts = 3;  ///< total attempts, including the first; 1 disables retries
  std::chrono::milliseconds max_elapsed{60000};  ///< stop retrying after this much time
};

/// Exponential backoff with full jitter between retries. A Retry-After from the server wins
/// when it is longer, up to max_delay.
struct BackoffPolicy {
  std::chrono::milliseconds initial_delay{200};
  std::chrono::milliseconds max_delay{10000};
  double multiplier = 2.0;
};

/// Everything a Client needs. Build it by hand, or with ResolveConfig() (config.h), which reads
/// profiles, credentials and BACKEND_* variables the way the `bai` tool does.
struct Options {
  /// Manager URLs, tried in order; on a connection failure the client moves to the next one.
  /// A URL may carry a base path ("https://gw.example.com/backend").
  std::vector<std::string> endpoints{"http://127.0.0.1:8081"};
  std::string access_key;  ///< empty = anonymous (unsigned) requests
  std::string secret_key;
  /// Pin the API version (e.g. "v8.20240915") instead of negotiating it with `GET /`.
  std::optional<std::string> api_version;
  /// A file remembering each endpoint's `GET /` answer for `server_info_max_age`, so that a
  /// short-lived process (a CLI command) sends one request instead of two; a server that
  /// refuses the remembered version is asked again and the request resent once. Empty = ask
  /// once per Client. The `bai` tool uses DefaultCacheDir()/servers.json.
  std::string server_info_cache;
  std::chrono::seconds server_info_max_age{86400};
  /// The domain sessions are created in; "" (the default) sends none: the user's own domain.
  std::string domain;
  std::string group = "default";  ///< default project (group) for session creation
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds read_timeout{0};  ///< longest silence while reading; 0 = none
  bool verify_tls = true;
  std::string ca_bundle;  ///< PEM file with the CAs to trust; empty = system default
  RetryPolicy retry;
  BackoffPolicy backoff;
  std::string user_agent;  ///< empty = "bai/<version>"
  /// Receives one line per request and response with secrets and signatures redacted; unset =
  /// no logging. Called on the thread that sends the request.
  std::function<void(std::string_view)> debug_log;
  /// Receives warnings (e.g. a server that does not look like Backend.AI); unset = dropped.
  std::function<void(std::string_view)> warning_log;

  /// Sends the requests instead of libcurl (a test double such as bai/mocks/mock_transport.h,
  /// or another HTTP stack); the Client still negotiates, signs, logs and retries around it.
  /// Unset = libcurl with the settings above.
  std::shared_ptr<Transport> transport;
  /// Waits between retries; unset = sleeping. Tests pass one that records the delays.
  std::function<void(std::chrono::milliseconds)> sleep;
  /// The time requests are signed with (the Date header); unset = the system clock.
  std::function<std::chrono::system_clock::time_point()> clock;
};

}  // namespace bai
