// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace bai::testing_util {

/// A request as the test server received it; header names lowercased.
struct TestRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;
  std::string body;

  std::string const* Header(std::string const& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? nullptr : &it->second;
  }
};

struct TestResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// A small HTTP/1.1 server on 127.0.0.1 (port chosen by the kernel) with keep-alive, one
/// thread per connection. It counts accepted TCP connections, so tests can prove reuse.
class TestHttpServer {
 public:
  using Handler = std::function<TestResponse(TestRequest const&)>;
  explicit TestHttpServer(Handler handler);
  ~TestHttpServer();
  TestHttpServer(TestHttpServer const&) = delete;
  TestHttpServer& operator=(TestHttpServer const&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  int requests() const { return requests_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> client_fds_;
};

/// The keypair of the verifying handler (the PROTOCOL.md §2.3 example keys).
inline constexpr char kTestAccessKey[] = "AKIAIOSFODNN7EXAMPLE";
inline constexpr char kTestSecretKey[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

/// A handler that behaves like a manager's front door: `GET /` answers the version probe;
/// every other request must carry a valid signature (PROTOCOL.md §2.2, verified with libbai's
/// verifier) by kTestAccessKey, or it gets the problem+json error a manager would send.
/// Verified requests get 200 {"method","target","body","api_version"}; the target
/// /status/NNN answers with that status instead (and a problem body for errors).
TestHttpServer::Handler VerifyingHandler(std::string server_version = "v8.20240915");

}  // namespace bai::testing_util
