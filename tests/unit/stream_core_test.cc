// SPDX-License-Identifier: Apache-2.0
// The pure cores of the manager's WebSocket streams (server-reference/manager/streams/),
// driven without sockets or agents.
#include "server-reference/manager/streams/execute_run.h"
#include "server-reference/manager/streams/stream_broker.h"
#include "server-reference/manager/streams/stream_registry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::manager::streams {
namespace {

using json = nlohmann::json;
using Kind = ExecuteAction::Kind;

protocol::ExecuteResult Result(std::string status,
                               std::vector<std::pair<std::string, std::string>> console = {},
                               std::optional<std::int64_t> exit_code = std::nullopt) {
  protocol::ExecuteResult r;
  r.status = std::move(status);
  r.console = std::move(console);
  r.exit_code = exit_code;
  return r;
}

TEST(ExecuteRunTest, AQueryRunsToFinishedRelayingEachAnswerThenCloses) {
  ExecuteRun run("0123456789abcdef");
  auto a = run.OnText(R"j({"code": "print(6*7)", "mode": "query", "options": {}})j");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Kind::kExecute);
  EXPECT_EQ(a[0].step.mode, "query");
  EXPECT_EQ(a[0].step.code, "print(6*7)");
  EXPECT_EQ(a[0].step.run_id, "0123456789abcdef");

  a = run.OnResult(Result("continued", {{"stdout", "4"}}));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].kind, Kind::kSend);
  auto frame = json::parse(a[0].text);
  EXPECT_EQ(frame["status"], "continued");
  EXPECT_EQ(frame["console"], json::parse(R"j([["stdout", "4"]])j"));
  EXPECT_TRUE(frame["exitCode"].is_null());
  EXPECT_TRUE(frame["options"].is_object());
  EXPECT_TRUE(frame["files"].is_array());
  EXPECT_EQ(a[1].kind, Kind::kExecute);
  EXPECT_EQ(a[1].step.mode, "continue");
  EXPECT_EQ(a[1].step.code, "");

  a = run.OnResult(Result("finished", {{"stdout", "2\n"}}, 0));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(json::parse(a[0].text)["exitCode"], 0);
  EXPECT_EQ(a[1].kind, Kind::kClose);
  EXPECT_EQ(a[1].code, 1000);
  EXPECT_TRUE(run.done());
  // Gone after the end: nothing to interrupt.
  EXPECT_TRUE(run.OnClientGone().empty());
}

TEST(ExecuteRunTest, WaitingInputTakesTheNextFrameAsPlainText) {
  ExecuteRun run("r1");
  run.OnText(R"j({"code": "input()", "mode": "query"})j");
  auto r = Result("waiting-input");
  r.prompt = "name? ";
  r.is_password = true;
  auto a = run.OnResult(r);
  ASSERT_EQ(a.size(), 1u);  // nothing more until the client answers
  auto frame = json::parse(a[0].text);
  EXPECT_EQ(frame["options"]["prompt"], "name? ");
  EXPECT_EQ(frame["options"]["is_password"], true);
  a = run.OnText("{\"not\": \"json to decode\"}");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].step.mode, "input");
  EXPECT_EQ(a[0].step.code, "{\"not\": \"json to decode\"}");
  // While the run goes on, a frame is typed-ahead input: nothing now, the next prompt's answer.
  EXPECT_TRUE(run.OnText("ahead").empty());
  a = run.OnResult(Result("waiting-input"));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].kind, Kind::kSend);
  EXPECT_EQ(json::parse(a[0].text)["status"], "waiting-input");
  EXPECT_EQ(a[1].kind, Kind::kExecute);
  EXPECT_EQ(a[1].step.mode, "input");
  EXPECT_EQ(a[1].step.code, "ahead");
}

// Issue 43, 5h: 2,000 frames during a run neither grow the manager nor change the run: the
// first kMaxFramesAhead wait, in order, as answers to prompts; the rest are dropped.
TEST(ExecuteRunTest, AFloodOfFramesDuringARunIsBoundedAndChangesNothingElse) {
  ExecuteRun run("r9");
  run.OnText(R"j({"code": "print(input())", "mode": "query"})j");
  for (int i = 0; i < 2000; ++i) EXPECT_TRUE(run.OnText("extra " + std::to_string(i)).empty());
  EXPECT_EQ(run.frames_ahead(), ExecuteRun::kMaxFramesAhead);
  // Output and continues pass through as they would without the flood.
  auto a = run.OnResult(Result("continued", {{"stdout", "x"}}));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].step.mode, "continue");
  a = run.OnResult(Result("waiting-input"));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].step.code, "extra 0");
  a = run.OnResult(Result("finished", {{"stdout", "extra 0\n"}}, 0));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(json::parse(a[0].text)["exitCode"], 0);
  EXPECT_EQ(a[1].kind, Kind::kClose);
  EXPECT_TRUE(run.done());
  EXPECT_TRUE(run.OnText("late").empty());
  // Bytes are bounded too: one 1 MiB frame fills what may wait.
  ExecuteRun big("r10");
  big.OnText(R"j({"code": "input()", "mode": "query"})j");
  big.OnText(std::string(ExecuteRun::kMaxBytesAhead, 'b'));
  big.OnText("c");
  EXPECT_EQ(big.frames_ahead(), 1u);
}

TEST(ExecuteRunTest, BatchCarriesItsOptionsOnTheFirstStepOnly) {
  ExecuteRun run("r2");
  auto a = run.OnText(
      R"j({"code": "", "mode": "batch", "options": {"clean": "*", "build": null, "buildLog": false, "exec": "python3 main.py"}})j");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].step.mode, "batch");
  EXPECT_EQ(a[0].step.options.at("exec"), "python3 main.py");
  EXPECT_EQ(a[0].step.options.at("clean"), "*");
  EXPECT_EQ(a[0].step.options.count("build"), 0u);
  a = run.OnResult(Result("build-finished", {}, 0));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].step.mode, "continue");
  EXPECT_TRUE(a[1].step.options.empty());
}

TEST(ExecuteRunTest, ABadFirstFrameIsAnsweredWithAnErrorAndClosed) {
  for (std::string bad :
       {"not json", R"j({"code": "x"})j", R"j({"code": "x", "mode": "continue"})j",
        R"j({"code": 5, "mode": "query"})j", "[]"}) {
    ExecuteRun run("r3");
    auto a = run.OnText(bad);
    ASSERT_EQ(a.size(), 2u) << bad;
    auto frame = json::parse(a[0].text);
    EXPECT_EQ(frame["status"], "error") << bad;
    EXPECT_EQ(frame["msg"].get<std::string>().rfind("Invalid API parameters: ", 0), 0u) << bad;
    EXPECT_EQ(a[1].kind, Kind::kClose);
    EXPECT_TRUE(run.done());
    EXPECT_TRUE(run.OnClientGone().empty()) << "nothing ran";
  }
}

TEST(ExecuteRunTest, AnAgentFailureIsABackendErrorAndCloses1011) {
  ExecuteRun run("r4");
  run.OnText(R"j({"code": "1", "mode": "query"})j");
  auto a = run.OnResult(Status(StatusCode::kUnavailable, "agent agent-1 is not connected"));
  ASSERT_EQ(a.size(), 2u);
  auto frame = json::parse(a[0].text);
  EXPECT_EQ(frame["status"], "error");
  EXPECT_NE(frame["msg"].get<std::string>().find("BackendError: agent agent-1"), std::string::npos);
  EXPECT_EQ(a[1].code, 1011);
}

TEST(ExecuteRunTest, AClientGoneMidRunInterruptsThatRun) {
  for (bool waiting : {false, true}) {
    ExecuteRun run("r5");
    run.OnText(R"j({"code": "while True: pass", "mode": "query"})j");
    if (waiting) run.OnResult(Result("waiting-input"));
    auto a = run.OnClientGone();
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].kind, Kind::kInterrupt);
    EXPECT_EQ(a[0].step.run_id, "r5");
    // The answer to the last step, arriving after, goes nowhere.
    EXPECT_TRUE(run.OnResult(Result("continued")).empty());
  }
}

TEST(ExecuteRunTest, ASessionThatEndsClosesTheStreamWith1001) {
  ExecuteRun run("r6");
  run.OnText(R"j({"code": "1", "mode": "query"})j");
  auto a = run.OnSessionEnded("session_terminating");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NE(json::parse(a[0].text)["msg"].get<std::string>().find("session_terminating"),
            std::string::npos);
  EXPECT_EQ(a[1].kind, Kind::kClose);
  EXPECT_EQ(a[1].code, 1001);
  EXPECT_TRUE(run.OnSessionEnded("session_terminated").empty());
}

TEST(StreamRegistryTest, EndsEveryStreamOfAnEndingSessionOnce) {
  StreamRegistry reg;
  std::vector<std::string> ended;
  reg.Add("s1", [&](std::string const& why) { ended.push_back("a:" + why); });
  auto b = reg.Add("s1", [&](std::string const& why) { ended.push_back("b:" + why); });
  reg.Add("s2", [&](std::string const& why) { ended.push_back("c:" + why); });
  auto d = reg.Add("s1", [&](std::string const& why) { ended.push_back("d:" + why); });
  reg.Remove(d);
  EXPECT_EQ(reg.Count(), 3u);
  reg.OnEvent("s1", "session_started");  // not an end
  EXPECT_TRUE(ended.empty());
  reg.OnEvent("s1", "session_terminating");
  EXPECT_EQ(ended, (std::vector<std::string>{"a:session_terminating", "b:session_terminating"}));
  reg.OnEvent("s1", "session_terminated");  // already ended
  EXPECT_EQ(ended.size(), 2u);
  reg.Remove(b);  // a late close of an ended stream is harmless
  EXPECT_EQ(reg.Count(), 1u);
  for (auto e : {"session_cancelled", "session_failure", "session_success", "session_terminated"}) {
    EXPECT_TRUE(StreamRegistry::IsEnding(e)) << e;
  }
  EXPECT_FALSE(StreamRegistry::IsEnding("session_scheduled"));
}

TEST(StreamBrokerTest, AStreamIsClaimedOnceByItsAgentBeforeItsDeadline) {
  StreamBroker<int> broker;
  auto t0 = StreamBroker<int>::Clock::now();
  auto deadline = t0 + std::chrono::seconds(15);
  broker.Expect("s1", "agent-a", deadline, 1);
  broker.Expect("s2", "agent-a", deadline, 2);
  broker.Expect("s3", "agent-b", deadline, 3);
  // Another agent cannot take it, and that uses nothing up.
  EXPECT_EQ(broker.Claim("s1", "agent-b", t0).status().code(), StatusCode::kPermissionDenied);
  auto w = broker.Claim("s1", "agent-a", t0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, 1);
  EXPECT_EQ(broker.Claim("s1", "agent-a", t0).status().code(), StatusCode::kNotFound)
      << "used once";
  EXPECT_EQ(broker.Claim("nope", "agent-a", t0).status().code(), StatusCode::kNotFound);
  // Late: refused, and handed back by Expire to end its client.
  EXPECT_EQ(broker.Claim("s2", "agent-a", deadline + std::chrono::seconds(1)).status().code(),
            StatusCode::kNotFound);
  broker.Forget("s3");
  EXPECT_EQ(broker.Pending(), 1u);
  auto expired = broker.Expire(deadline + std::chrono::seconds(1));
  EXPECT_EQ(expired, std::vector<int>{2});
  EXPECT_EQ(broker.Pending(), 0u);
}

}  // namespace
}  // namespace bai::manager::streams
