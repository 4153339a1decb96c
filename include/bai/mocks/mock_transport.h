// SPDX-License-Identifier: Apache-2.0
#pragma once
// A GoogleMock transport for testing code that uses bai::Client or bai::SessionClient without a
// server: put it in Options::transport, script the answers, and check what was sent (requests
// arrive signed, with the target and headers that would go on the wire). Needs GoogleMock.
//
//   auto transport = std::make_shared<bai::mocks::MockTransport>();
//   EXPECT_CALL(*transport, Send(::testing::Field(&bai::TransportRequest::target, "/session/x")))
//       .WillOnce(::testing::Return(bai::mocks::JsonAnswer(200, R"({"status":"RUNNING"})")));
//   bai::Options options;
//   options.api_version = "v8.20240915";  // no GET / negotiation to script
//   options.transport = transport;

#include "bai/transport.h"

#include <gmock/gmock.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace bai::mocks {

class MockTransport : public Transport {
 public:
  MOCK_METHOD(StatusOr<ApiResponse>, Send, (TransportRequest const& request), (override));
  MOCK_METHOD(StatusOr<ApiResponse>, SendStreaming,
              (TransportRequest const& request, std::function<bool(std::string_view)> on_data),
              (override));
  MOCK_METHOD(StatusOr<std::unique_ptr<WebSocketConnection>>, OpenWebSocket,
              (TransportRequest const& request), (override));
};

/// A response with `status` and a JSON body.
inline ApiResponse JsonAnswer(int status, std::string body) {
  ApiResponse r;
  r.status = status;
  r.headers = {{"content-type", status >= 400 ? "application/problem+json" : "application/json"}};
  r.body = std::move(body);
  return r;
}

/// A streaming answer for SendStreaming: opens the stream (the empty chunk), feeds `chunks` in
/// order, then keeps the quiet stream open with an empty chunk every `tick` until the consumer
/// stops it or `quiet_ticks` run out; answers 200.
inline auto StreamAnswer(std::vector<std::string> chunks, int quiet_ticks = 1000,
                         std::chrono::milliseconds tick = std::chrono::milliseconds(10)) {
  return [chunks = std::move(chunks), quiet_ticks, tick](
             TransportRequest const&,
             std::function<bool(std::string_view)> const& on_data) -> StatusOr<ApiResponse> {
    ApiResponse r;
    r.status = 200;
    r.headers = {{"content-type", "text/event-stream"}};
    if (!on_data(std::string_view())) return r;
    for (auto const& chunk : chunks) {
      if (!on_data(chunk)) return r;
    }
    for (int i = 0; i < quiet_ticks; ++i) {
      std::this_thread::sleep_for(tick);
      if (!on_data(std::string_view())) return r;
    }
    return r;
  };
}

}  // namespace bai::mocks
