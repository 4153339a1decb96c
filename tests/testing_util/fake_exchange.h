// SPDX-License-Identifier: Apache-2.0
#pragma once
// A server::Exchange without a socket, for calling manager handlers directly: the test builds the
// request, hands the exchange to ManagerApi::Handle and reads the response (now or, for handlers
// that answer later, by waiting for it).

#include "server-reference/common/http/http.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bai::testing_util {

class FakeExchange : public server::Exchange {
 public:
  explicit FakeExchange(server::HttpRequest request) : request_(std::move(request)) {}

  /// A request from `peer` with a JSON `body` (or none).
  static std::shared_ptr<FakeExchange> Make(std::string method, std::string target,
                                            std::string body = {},
                                            std::string peer = "192.0.2.10") {
    server::HttpRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    auto q = r.target.find('?');
    r.path = r.target.substr(0, q);
    r.query = q == std::string::npos ? "" : r.target.substr(q + 1);
    if (!body.empty()) r.headers.emplace_back("content-type", "application/json");
    r.body = std::move(body);
    r.peer_address = std::move(peer);
    return std::make_shared<FakeExchange>(std::move(r));
  }

  server::HttpRequest& mutable_request() { return request_; }
  server::HttpRequest const& request() const override { return request_; }

  void Respond(server::HttpResponse response) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (response_) return;
    response_ = std::move(response);
    responder_ = std::this_thread::get_id();
    cv_.notify_all();
  }

  /// The response, waiting up to `timeout` for one that comes later.
  std::optional<server::HttpResponse> Wait(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return response_.has_value(); });
    return response_;
  }
  /// The response if one was given already.
  std::optional<server::HttpResponse> Answered() {
    std::lock_guard<std::mutex> lock(mu_);
    return response_;
  }
  /// The thread that answered.
  std::thread::id responder() {
    std::lock_guard<std::mutex> lock(mu_);
    return responder_;
  }

  void StartEventStream(std::vector<std::pair<std::string, std::string>> headers) override {
    std::lock_guard<std::mutex> lock(mu_);
    stream_headers_ = std::move(headers);
    streaming_ = true;
    cv_.notify_all();
  }
  void StartChunked(int, std::vector<std::pair<std::string, std::string>> headers) override {
    std::lock_guard<std::mutex> lock(mu_);
    stream_headers_ = std::move(headers);
    streaming_ = true;
    cv_.notify_all();
  }
  bool WriteEvent(std::string chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    events_.push_back(std::move(chunk));
    cv_.notify_all();
    return true;
  }
  void EndEventStream() override { Close(); }
  void OnClose(std::function<void()> callback) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) {
      lock.unlock();
      callback();
      return;
    }
    on_close_.push_back(std::move(callback));
  }
  /// The client goes away: OnClose callbacks run (once).
  void Close() {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      closed_ = true;
      callbacks.swap(on_close_);
    }
    for (auto& c : callbacks) c();
  }
  bool streaming() {
    std::lock_guard<std::mutex> lock(mu_);
    return streaming_;
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

  bool IsWebSocketUpgrade() const override { return false; }
  void AcceptWebSocket(server::WebSocketHandlers) override {}

 private:
  server::HttpRequest request_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<server::HttpResponse> response_;
  std::thread::id responder_;
  bool streaming_ = false;
  bool closed_ = false;
  std::vector<std::pair<std::string, std::string>> stream_headers_;
  std::vector<std::string> events_;
  std::vector<std::function<void()>> on_close_;
};

}  // namespace bai::testing_util
