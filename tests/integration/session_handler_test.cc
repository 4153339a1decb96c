// SPDX-License-Identifier: Apache-2.0
// The session handlers called directly through ManagerApi::Handle with signed FakeExchanges: no
// socket, no agent; the scheduling hook only records what it was asked.
#include "bai/protocol/api_version.h"
#include "bai/protocol/signing.h"

#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/state/bgtasks.h"
#include "server-reference/manager/state/sessions.h"
#include "tests/testing_util/fake_exchange.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::FakeExchange;

class SessionHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ManagerConfig config;
    config.data_dir = dir_.path() + "/data";
    auto state = OpenState(config);
    ASSERT_TRUE(state.ok()) << state.status().message();
    state_ = std::move(*state);
    auto creds = testing_util::ReadEnvFile(state_.bootstrap.credentials_file);
    access_key_ = creds["BACKEND_ACCESS_KEY"];
    secret_key_ = creds["BACKEND_SECRET_KEY"];
    sessions_ = std::make_unique<SessionStore>(*state_.db);
    tasks_ = std::make_unique<BackgroundTaskStore>(*state_.db);
    hub_ = std::make_unique<EventHub>(*sessions_, *tasks_);
    api_ = std::make_unique<ManagerApi>(*state_.store, ApiOptions{});
    RegisterSessionRoutes(*api_, *sessions_, *hub_,
                          [this](std::string const& group) { scheduled_.push_back(group); });
  }
  void TearDown() override {
    api_.reset();
    hub_.reset();
  }

  // A request signed with the superadmin's keypair (or unsigned), answered synchronously or
  // waited for.
  server::HttpResponse Call(std::string method, std::string target, json body = nullptr,
                            bool sign = true) {
    auto x = FakeExchange::Make(method, target, body.is_null() ? "" : body.dump());
    auto& r = x->mutable_request();
    std::string version = protocol::kCurrentApiVersion.ToString();
    r.headers.emplace_back("host", "manager.test");
    r.headers.emplace_back("x-backendai-version", version);
    if (body.is_null()) r.headers.emplace_back("content-type", "text/plain");
    if (sign) {
      protocol::SigningInput in;
      in.method = method;
      in.request_target = target;
      in.date = protocol::FormatRequestDate(std::chrono::system_clock::now());
      in.host = "manager.test";
      in.content_type = body.is_null() ? "text/plain" : "application/json";
      in.api_version = version;
      auto signature = protocol::Sign(in, secret_key_);
      EXPECT_TRUE(signature.ok());
      r.headers.emplace_back("date", in.date);
      r.headers.emplace_back("authorization",
                             protocol::AuthorizationHeaderValue(access_key_, *signature, in.hash));
    }
    api_->Handle(x);
    auto response = x->Wait(std::chrono::seconds(10));
    EXPECT_TRUE(response.has_value()) << method << " " << target << " was never answered";
    return response.value_or(server::HttpResponse{});
  }

  testing_util::TempDir dir_;
  OpenedState state_;
  std::string access_key_, secret_key_;
  std::unique_ptr<SessionStore> sessions_;
  std::unique_ptr<BackgroundTaskStore> tasks_;
  std::unique_ptr<EventHub> hub_;
  std::unique_ptr<ManagerApi> api_;
  std::vector<std::string> scheduled_;
};

TEST_F(SessionHandlerTest, CreateInfoAndDestroyWithoutASocket) {
  auto created = Call("POST", "/session",
                      {{"name", "direct"},
                       {"image", "python"},
                       {"enqueueOnly", true},
                       {"config", {{"resources", {{"cpu", "2"}, {"mem", "1g"}}}}}});
  ASSERT_EQ(created.status, 201) << created.body;
  auto body = json::parse(created.body);
  EXPECT_EQ(body["status"], "PENDING");
  EXPECT_EQ(body["created"], true);
  std::string id = body["sessionId"];
  EXPECT_EQ(scheduled_, std::vector<std::string>{"default"}) << "a create asks for a pass";

  auto info = Call("GET", "/session/direct");
  ASSERT_EQ(info.status, 200) << info.body;
  auto j = json::parse(info.body);
  EXPECT_EQ(j["sessionId"], id);
  EXPECT_EQ(j["status"], "PENDING");
  EXPECT_EQ(j["requestedSlots"]["cpu"], "2");

  auto again = Call("POST", "/session", {{"name", "direct"}, {"image", "python"}});
  EXPECT_EQ(again.status, 201) << "an active session of that name and image is reused";
  EXPECT_EQ(json::parse(again.body)["created"], false);

  auto destroyed = Call("DELETE", "/session/direct");
  EXPECT_EQ(destroyed.status, 200) << destroyed.body;
  auto record = sessions_->Get(id);
  ASSERT_TRUE(record.ok() && *record);
  EXPECT_EQ((*record)->status, "CANCELLED") << "a pending session is cancelled, not run";
  EXPECT_EQ(Call("GET", "/session/direct").status, 404) << "gone by name";
  EXPECT_EQ(Call("DELETE", "/session/" + id).status, 404) << "ended sessions cannot end again";
}

TEST_F(SessionHandlerTest, BadCreatesNameTheirFieldsAndUnsignedCallsAreRefused) {
  auto bad = Call("POST", "/session",
                  {{"name", "x"}, {"type", "batch"}, {"config", {{"resources", {{"cpu", "-1"}}}}}});
  ASSERT_EQ(bad.status, 400) << bad.body;
  auto data = json::parse(bad.body)["data"];
  EXPECT_TRUE(data.contains("name")) << data;
  EXPECT_TRUE(data.contains("image")) << data;
  EXPECT_TRUE(data.contains("startupCommand")) << data;
  EXPECT_TRUE(data.contains("config.resources")) << data;
  EXPECT_TRUE(scheduled_.empty());

  auto unsigned_call = Call("GET", "/session/anything", nullptr, /*sign=*/false);
  EXPECT_EQ(unsigned_call.status, 401) << unsigned_call.body;
  EXPECT_EQ(Call("GET", "/session/no-such-session").status, 404);
}

}  // namespace
}  // namespace bai::manager
