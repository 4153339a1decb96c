// SPDX-License-Identifier: Apache-2.0
// The auth handlers called directly through ManagerApi::Handle with a FakeExchange: no socket,
// a clock the test moves.
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/fake_exchange.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::FakeExchange;

class AuthHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ManagerConfig config;
    config.data_dir = dir_.path() + "/data";
    auto state = OpenState(config);
    ASSERT_TRUE(state.ok()) << state.status().message();
    state_ = std::move(*state);
    password_ = testing_util::ReadEnvFile(state_.bootstrap.credentials_file)["BAI_ADMIN_PASSWORD"];
    ASSERT_FALSE(password_.empty());
  }

  std::unique_ptr<ManagerApi> MakeApi(ApiOptions options) {
    options.clock = [this] { return now_.load(); };
    auto api = std::make_unique<ManagerApi>(*state_.store, std::move(options));
    RegisterAuthRoutes(*api);
    return api;
  }

  static std::shared_ptr<FakeExchange> Login(std::string const& user, std::string const& password,
                                             std::string const& peer) {
    return FakeExchange::Make("POST", "/auth/authorize",
                              json({{"type", "keypair"},
                                    {"domain", "default"},
                                    {"username", user},
                                    {"password", password}})
                                  .dump(),
                              peer);
  }
  /// Sends a login and waits for its answer.
  static server::HttpResponse Try(ManagerApi& api, std::string const& user,
                                  std::string const& password, std::string const& peer) {
    auto x = Login(user, password, peer);
    api.Handle(x);
    auto r = x->Wait();
    EXPECT_TRUE(r.has_value()) << "no answer";
    return r.value_or(server::HttpResponse{});
  }
  static std::string HeaderOf(server::HttpResponse const& r, std::string const& name) {
    for (auto const& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  testing_util::TempDir dir_;
  OpenedState state_;
  std::string password_;
  std::atomic<std::chrono::system_clock::time_point> now_{std::chrono::system_clock::now()};
};

TEST_F(AuthHandlerTest, PasswordGuessingIsThrottledPerAccountAndPerAddress) {
  ApiOptions o;
  o.login_limits = {.per_address = 6, .failures_per_user = 3, .window = std::chrono::seconds(300)};
  auto api = MakeApi(o);
  for (int i = 0; i < 3; ++i) {
    auto wrong = Try(*api, "admin", "guess-" + std::to_string(i), "198.51.100.1");
    EXPECT_EQ(wrong.status, 401) << wrong.body;
  }
  // The account is now refused from everywhere, even with the right password.
  for (char const* peer : {"198.51.100.1", "198.51.100.2"}) {
    auto locked = Try(*api, "admin", password_, peer);
    EXPECT_EQ(locked.status, 429) << locked.body;
    EXPECT_EQ(json::parse(locked.body)["type"], "https://api.backend.ai/probs/rate-limit-exceeded");
    EXPECT_EQ(HeaderOf(locked, "Retry-After"), "300");
  }
  // One address cannot spread its guesses over many accounts either: 3 attempts are counted
  // for 198.51.100.1 already.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Try(*api, "user" + std::to_string(i), "x", "198.51.100.1").status, 401);
  }
  auto spread = Try(*api, "user9", "x", "198.51.100.1");
  EXPECT_EQ(spread.status, 429);
  EXPECT_THAT(spread.body, HasSubstr("Too many login attempts"));
  // Once the failures leave the window the right password works, and resets the account.
  now_ = now_.load() + std::chrono::seconds(301);
  auto ok = Try(*api, "admin", password_, "198.51.100.1");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_TRUE(json::parse(ok.body)["data"].contains("secret_key"));
}

TEST_F(AuthHandlerTest, PasswordChecksRunOnABoundedPoolNotOnTheCallingThread) {
  ApiOptions o;
  o.password_workers = 1;
  o.password_queue = 1;
  auto api = MakeApi(o);
  // Each wrong guess costs one Argon2 check (tens of milliseconds); twenty arrive at once.
  std::vector<std::shared_ptr<FakeExchange>> logins;
  for (int i = 0; i < 20; ++i) {
    logins.push_back(Login("admin", "guess", "203.0.113." + std::to_string(i)));
    api->Handle(logins.back());
  }
  int deferred = 0, busy = 0;
  for (auto& x : logins) {
    auto now = x->Answered();
    if (!now) {
      ++deferred;
      auto later = x->Wait();
      ASSERT_TRUE(later.has_value());
      EXPECT_EQ(later->status, 401) << later->body;
      EXPECT_NE(x->responder(), std::this_thread::get_id()) << "hashed on the calling thread";
    } else {
      ++busy;
      EXPECT_EQ(now->status, 429) << now->body;
      EXPECT_THAT(now->body, HasSubstr("in progress"));
      EXPECT_EQ(HeaderOf(*now, "Retry-After"), "1");
    }
  }
  EXPECT_GE(deferred, 1);
  EXPECT_GE(busy, 1) << "a queue of one must refuse some of twenty simultaneous checks";
  // An unknown user costs a check too (the answer time does not reveal who exists).
  auto unknown = Login("nobody", "guess", "203.0.113.99");
  api->Handle(unknown);
  auto r = unknown->Wait();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->status == 401 || r->status == 429) << r->body;
}

}  // namespace
}  // namespace bai::manager
