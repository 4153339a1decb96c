// SPDX-License-Identifier: Apache-2.0
#pragma once
// A link of the test's own between a client and a server on 127.0.0.1: it forwards both ways,
// the server's bytes at a set rate (so a transfer takes long enough to be cut in the middle),
// and can be cut (the connections broken, the port refusing: what a client sees of a server
// that died) and healed (the same port accepting again: the server is back).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace bai::testing_util {

class TcpRelay {
 public:
  /// Forwards 127.0.0.1:port() to 127.0.0.1:`target_port`, the server's bytes at most
  /// `bytes_per_second` (0: as fast as they come).
  TcpRelay(int target_port, std::int64_t bytes_per_second);
  ~TcpRelay();
  TcpRelay(TcpRelay const&) = delete;
  TcpRelay& operator=(TcpRelay const&) = delete;

  int port() const { return port_; }  ///< 0: no port could be had
  /// Breaks every connection and closes the port (connections are refused) until Heal().
  void Cut();
  /// Listens on the same port again.
  void Heal();
  /// The server's bytes forwarded so far, over every connection.
  std::int64_t bytes_down() const { return bytes_down_; }
  /// Connections accepted so far.
  int connections() const { return connections_; }

 private:
  void Accept();
  void Relay(int client);
  int Listen();

  int target_port_;
  std::int64_t rate_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> bytes_down_{0};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::condition_variable changed_;
  bool want_open_ = true, open_ = false;
  std::set<int> live_;  ///< both ends of every connection, to break them
  std::vector<std::thread> relays_;
  std::thread acceptor_;
};

}  // namespace bai::testing_util
