// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/test_http_server.h"

#include "bai/protocol/api_version.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "libbai/internal/json_codec.h"
#include "libbai/util/text.h"

#include <arpa/inet.h>
#include <boost/beast/http/status.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace bai::testing_util {
namespace {

// The standard reason phrase ("Too Many Requests"), from Beast's table.
std::string Reason(int status) {
  auto phrase = boost::beast::http::obsolete_reason(
      boost::beast::http::int_to_status(static_cast<unsigned>(status)));
  return phrase.empty() ? "Status" : std::string(phrase);
}

bool WriteAll(int fd, std::string const& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    auto n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

TestResponse Problem(Status const& status) {
  TestResponse r;
  r.status = status.error_info().http_status;
  r.content_type = "application/problem+json";
  r.body = internal::ProblemJson(status.error_info());
  return r;
}

}  // namespace

TestHttpServer::TestHttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("test server: cannot listen");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TestHttpServer::~TestHttpServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : workers_) t.join();
}

void TestHttpServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    client_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void TestHttpServer::Serve(int fd) {
  std::string buffer;
  char chunk[65536];
  while (!stopping_) {
    auto header_end = buffer.find("\r\n\r\n");
    if (header_end == std::string::npos) {
      auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    TestRequest request;
    std::string head = buffer.substr(0, header_end);
    auto line_end = head.find("\r\n");
    std::string request_line = head.substr(0, line_end);
    auto sp1 = request_line.find(' ');
    auto sp2 = request_line.rfind(' ');
    request.method = request_line.substr(0, sp1);
    request.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      auto eol = head.find("\r\n", pos);
      if (eol == std::string::npos) eol = head.size();
      std::string line = head.substr(pos, eol - pos);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = internal::AsciiLower(line.substr(0, colon));
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        request.headers.emplace(name, value);
      }
      pos = eol + 2;
    }
    std::size_t length = 0;
    if (auto const* cl = request.Header("content-length")) length = std::stoul(*cl);
    while (buffer.size() < header_end + 4 + length) {
      auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return void(::close(fd));
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    request.body = buffer.substr(header_end + 4, length);
    buffer.erase(0, header_end + 4 + length);
    ++requests_;
    TestResponse response = handler_(request);
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                      Reason(response.status) + "\r\nServer: BackendAI\r\n";
    if (!response.body.empty() || response.status != 204) {
      out += "Content-Type: " + response.content_type + "\r\n";
    }
    for (auto const& [k, v] : response.headers) out += k + ": " + v + "\r\n";
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n\r\n" + response.body;
    if (!WriteAll(fd, out)) break;
  }
  ::close(fd);
}

TestHttpServer::Handler VerifyingHandler(std::string server_version) {
  return [server_version](TestRequest const& req) -> TestResponse {
    if (req.method == "GET" && req.target == "/") {
      TestResponse r;
      r.body = nlohmann::json{{"version", server_version}, {"manager", "test-server"}}.dump();
      return r;
    }
    auto opt = [&req](char const* name) -> std::optional<std::string_view> {
      auto const* v = req.Header(name);
      if (!v) return std::nullopt;
      return std::string_view(*v);
    };
    protocol::ReceivedRequest received;
    received.method = req.method;
    received.raw_target = req.target;
    received.date = opt("date");
    received.backendai_date = opt("x-backendai-date");
    received.host = opt("host");
    received.content_type = opt("content-type");
    received.backendai_version = opt("x-backendai-version");
    received.authorization = opt("authorization");
    if (received.backendai_version &&
        !protocol::IsAcceptedApiVersion(*received.backendai_version)) {
      return Problem(protocol::MakeProblemStatus(protocol::ProblemType::kGenericBadRequest,
                                                 "Unsupported API version."));
    }
    auto pending = protocol::PrepareVerification(received, std::chrono::system_clock::now());
    if (!pending.ok()) return Problem(pending.status());
    if (pending->auth.access_key != kTestAccessKey) {
      return Problem(
          protocol::MakeProblemStatus(protocol::ProblemType::kAuthFailed, "Access key not found"));
    }
    auto verified = protocol::VerifySignature(*pending, kTestSecretKey);
    if (!verified.ok()) return Problem(verified);
    if (req.target.rfind("/status/", 0) == 0) {
      int status = std::stoi(req.target.substr(8));
      if (status >= 400) {
        TestResponse r = Problem(protocol::MakeProblemStatus(
            status == 404 ? protocol::ProblemType::kObjectNotFound
                          : (status == 503 ? protocol::ProblemType::kServiceUnavailable
                                           : protocol::ProblemType::kGenericBadRequest),
            "requested status " + std::to_string(status)));
        r.status = status;
        return r;
      }
      TestResponse r;
      r.status = status;
      return r;
    }
    TestResponse r;
    r.body = nlohmann::json{{"method", req.method},
                            {"target", req.target},
                            {"body", req.body},
                            {"api_version", pending->input.api_version}}
                 .dump();
    return r;
  };
}

}  // namespace bai::testing_util
