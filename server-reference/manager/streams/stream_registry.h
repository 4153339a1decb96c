// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace bai::manager::streams {

/// The WebSocket streams open on this manager, by session, so that every stream of a session
/// ends when the session does (24.09 cancels a kernel's stream handlers when it starts
/// terminating). Thread-safe.
class StreamRegistry {
 public:
  /// `end` runs once, on the hub's thread, if the session ends while the stream is registered.
  using Ender = std::function<void(std::string const& why)>;

  /// Registers a stream of `session_id`, opened by the keypair `owner`; the token removes it.
  std::uint64_t Add(std::string const& session_id, Ender end, std::string owner = {});
  /// Streams open now that `owner` opened (the per-user cap).
  std::size_t CountFor(std::string const& owner);
  /// The stream has closed by itself.
  void Remove(std::uint64_t token);
  /// A session event (any manager's): a session that is ending ends its streams.
  void OnEvent(std::string const& session_id, std::string const& event);
  /// Streams open now (tests, /manager/status).
  std::size_t Count();

  /// Whether `event` means the session's kernel is going away.
  static bool IsEnding(std::string_view event);

 private:
  struct Entry {
    std::string session_id;
    Ender end;
    std::string owner;
  };
  std::mutex mu_;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, Entry> streams_;
};

}  // namespace bai::manager::streams
