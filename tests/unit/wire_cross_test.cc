// SPDX-License-Identifier: Apache-2.0
// Each side accepts what the other emits: the manager's and agents' encoders against the SDK's
// decoders, and the SDK's execute step through the manager → agent message.
#include "bai/protocol/session_wire.h"

#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/state/bgtasks.h"

#include <gtest/gtest.h>

#include <variant>

namespace bai {
namespace {

namespace ap = server::agent_protocol;

TEST(WireCrossTest, TheSdkReadsTheManagersSessionAndTaskEvents) {
  manager::EventRecord e;
  e.name = "session_terminated";
  e.session_id = "s1";
  e.session_name = "job";
  e.access_key = "AK";
  e.kernel_id = "k1";
  e.reason = "task-done";
  e.exit_code = 7;
  auto event = protocol::DecodeSessionEventData(manager::EventHub::EventData(e));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->session_id, "s1");
  EXPECT_EQ(event->owner_access_key, "AK");
  EXPECT_EQ(event->exit_code, 7);
  EXPECT_EQ(event->reason, "task-done");

  manager::BackgroundTask t;
  t.id = "t1";
  t.status = protocol::TaskStatus::kDone;
  t.message = "written";
  t.current_progress = 1;
  t.total_progress = 1;
  auto task = protocol::DecodeTaskEventData(t.EventData());
  ASSERT_TRUE(task.ok()) << task.status().message();
  EXPECT_EQ(task->task_id, "t1");
  EXPECT_EQ(task->status, "done");
  t.status = protocol::TaskStatus::kOngoing;
  EXPECT_FALSE(protocol::DecodeTaskEventData(t.EventData())->status) << "only the end says";
}

TEST(WireCrossTest, AnSdkExecuteStepReachesTheAgentIntact) {
  protocol::ExecuteStep step;
  step.mode = "batch";
  step.run_id = "r9";
  step.options = {{"exec", "make"}};
  // SDK → manager: the request body.
  auto at_manager = protocol::DecodeExecuteStep(protocol::EncodeExecuteStep(step));
  ASSERT_TRUE(at_manager.ok());
  // Manager → agent: the execute message.
  ap::Execute message;
  static_cast<protocol::ExecuteStep&>(message) = *at_manager;
  message.request_id = "q1";
  message.session_id = "00000000-0000-4000-8000-0000000000d1";
  auto at_agent = ap::DecodeToAgent(ap::Encode(message));
  ASSERT_TRUE(at_agent.ok()) << at_agent.status().message();
  auto const* got = std::get_if<ap::Execute>(&*at_agent);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->mode, "batch");
  EXPECT_EQ(got->run_id, "r9");
  EXPECT_EQ(got->options, step.options);
  EXPECT_EQ(got->session_id, "00000000-0000-4000-8000-0000000000d1");
}

}  // namespace
}  // namespace bai
