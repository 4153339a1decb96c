// SPDX-License-Identifier: Apache-2.0
// The session wire types' one codec: round trips, the spellings other clients and servers use,
// and refusals that name the field.
#include "bai/protocol/session_wire.h"

#include "bai/protocol/errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::protocol {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json FieldsOf(Status const& s) { return json::parse(s.error_info().data_json); }

TEST(SessionWireTest, ExecuteStepRoundTripsAndNamesBadFields) {
  ExecuteStep step;
  step.mode = "batch";
  step.run_id = "r1";
  step.code = "";
  step.options = {{"exec", "make test"}, {"build", "make"}};
  auto back = DecodeExecuteStep(EncodeExecuteStep(step));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->mode, "batch");
  EXPECT_EQ(back->run_id, "r1");
  EXPECT_EQ(back->options, step.options);

  auto snake = DecodeExecuteStep(R"({"mode":"continue","run_id":"r2","options":{"n":1}})");
  ASSERT_TRUE(snake.ok()) << snake.status().message();
  EXPECT_EQ(snake->run_id, "r2");
  EXPECT_TRUE(snake->options.empty()) << "non-string options mean nothing here";

  auto bad = DecodeExecuteStep(R"({"mode":"dance","code":5})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().error_info().http_status, 400);
  auto fields = FieldsOf(bad.status());
  EXPECT_TRUE(fields.contains("mode")) << fields;
  EXPECT_TRUE(fields.contains("code")) << fields;
  auto no_run = DecodeExecuteStep(R"({"mode":"input","code":"yes"})");
  ASSERT_FALSE(no_run.ok());
  EXPECT_TRUE(FieldsOf(no_run.status()).contains("runId"));
  EXPECT_FALSE(DecodeExecuteStep("[1]").ok());
  EXPECT_FALSE(DecodeExecuteStep("{").ok());
}

TEST(SessionWireTest, ExecuteResultRoundTripsAndReadsApiV1Answers) {
  ExecuteResult r;
  r.run_id = "r1";
  r.status = "finished";
  r.exit_code = 3;
  r.console = {{"stdout", "hi\n"}, {"stderr", "oops\n"}};
  auto back = DecodeExecuteResult(EncodeExecuteResult(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->run_id, "r1");
  EXPECT_EQ(back->status, "finished");
  EXPECT_EQ(back->exit_code, 3);
  EXPECT_EQ(back->console, r.console);

  ExecuteResult continued;
  continued.run_id = "r1";
  continued.status = "continued";
  auto open = DecodeExecuteResult(EncodeExecuteResult(continued));
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->exit_code) << "no exit code until the run finishes";

  auto v1 = DecodeExecuteResult(R"({"status":"finished","stdout":"out","stderr":""})");
  ASSERT_TRUE(v1.ok());
  ASSERT_EQ(v1->console.size(), 1u);
  EXPECT_EQ(v1->console[0].second, "out");
  EXPECT_FALSE(DecodeExecuteResult(R"({"runId":"r"})").ok()) << "a result needs a status";
}

TEST(SessionWireTest, EventDataRoundTrips) {
  SessionEventData e;
  e.session_id = "s1";
  e.session_name = "job";
  e.owner_access_key = "AK";
  e.kernel_id = "k1";
  e.reason = "task-finished";
  e.exit_code = 0;
  auto back = DecodeSessionEventData(EncodeSessionEventData(e));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->session_id, "s1");
  EXPECT_EQ(back->session_name, "job");
  EXPECT_EQ(back->owner_access_key, "AK");
  EXPECT_EQ(back->kernel_id, "k1");
  EXPECT_EQ(back->reason, "task-finished");
  EXPECT_EQ(back->exit_code, 0);
  EXPECT_THAT(EncodeSessionEventData(e), HasSubstr(R"("clusterRole":"main")"));
  SessionEventData bare;
  auto none = DecodeSessionEventData(EncodeSessionEventData(bare));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->reason);
  EXPECT_FALSE(none->exit_code);
  EXPECT_FALSE(DecodeSessionEventData(R"({"exitCode":"zero"})").ok());
}

TEST(SessionWireTest, TaskEventDataRoundTripsAndReadsStringNumbers) {
  TaskEventData t;
  t.task_id = "t1";
  t.message = "half";
  t.current_progress = 2;
  t.total_progress = 4;
  auto back = DecodeTaskEventData(EncodeTaskEventData(t));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->current_progress, 2);
  EXPECT_EQ(back->total_progress, 4);
  EXPECT_FALSE(back->status);
  // Backend.AI 24.09 ends a task with its numbers as strings.
  auto done = DecodeTaskEventData(
      R"({"task_id":"t1","message":"","current_progress":"4","total_progress":"4","status":"done"})");
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->current_progress, 4);
  EXPECT_EQ(done->status, "done");
  auto bad = DecodeTaskEventData(R"({"current_progress":"lots"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(FieldsOf(bad.status()).contains("current_progress"));
}

}  // namespace
}  // namespace bai::protocol
