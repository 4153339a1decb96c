// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/scheduler/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace bai::manager::scheduler {
namespace {

using std::chrono::minutes;
using ::testing::HasSubstr;

ResourceSlots Slots(std::string const& text) {
  ResourceSlots s;
  EXPECT_TRUE(protocol::ParseSlotAssignment(text, s).ok()) << text;
  return s;
}

Agent MakeAgent(std::string id, std::string const& capacity) {
  Agent a;
  a.id = std::move(id);
  a.capacity = Slots(capacity);
  return a;
}

Session MakeSession(std::string id, std::string const& requested, std::int64_t seq,
                    std::string ak = "AK1") {
  Session s;
  s.id = std::move(id);
  s.requested = Slots(requested);
  s.enqueue_seq = seq;
  s.access_key = std::move(ak);
  return s;
}

std::map<std::string, Decision> ByID(std::vector<Decision> const& ds) {
  std::map<std::string, Decision> out;
  for (auto const& d : ds) out[d.session_id] = d;
  return out;
}

TEST(SchedulerTest, FifoFirstFitWithExactAccounting) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=1,mem=1g"), MakeAgent("a2", "cpu=4,mem=8g")};
  // Ten sessions of cpu=0.1 fill a1 exactly (no floating-point drift), the eleventh goes to a2.
  for (int i = 0; i < 11; ++i) {
    in.pending.push_back(MakeSession("s" + std::to_string(i), "cpu=0.1,mem=64m", i));
  }
  auto d = ByID(Schedule(in));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(d["s" + std::to_string(i)].agent_id, "a1") << i;
  EXPECT_EQ(d["s10"].agent_id, "a2");
}

TEST(SchedulerTest, NeverOverAllocates) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=2,mem=4g")};
  in.agents[0].occupied = Slots("cpu=1.5,mem=1g");
  in.pending = {MakeSession("big", "cpu=0.500001,mem=1g", 1),
                MakeSession("ok", "cpu=0.5,mem=3g", 2), MakeSession("late", "cpu=0.000001", 3)};
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["big"].agent_id);
  EXPECT_THAT(d["big"].status_info, HasSubstr("waiting: needs cpu=0.500001 mem=1g"));
  EXPECT_THAT(d["big"].status_info, HasSubstr("largest free agent has cpu=0.5 mem=3g"));
  EXPECT_EQ(d["ok"].agent_id, "a1");  // backfill: a later session that fits may start
  EXPECT_FALSE(d["late"].agent_id) << "cpu is exhausted after 'ok'";
}

TEST(SchedulerTest, UnknownSlotsAndArchitecturesDoNotFit) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=8,mem=8g")};
  Session gpu = MakeSession("gpu", "cpu=1,cuda.device=1", 1);
  Session arm = MakeSession("arm", "cpu=1", 2);
  arm.architecture = "aarch64";
  in.pending = {gpu, arm};
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["gpu"].agent_id);
  EXPECT_THAT(d["gpu"].status_info, HasSubstr("more than all agents of the resource group have"));
  EXPECT_FALSE(d["arm"].agent_id);
  EXPECT_THAT(d["arm"].status_info, HasSubstr("no schedulable aarch64 agent"));
}

TEST(SchedulerTest, SessionsGoOnlyToAgentsOfferingTheirImage) {
  Input in;
  Agent plain = MakeAgent("a1", "cpu=8,mem=8g");
  plain.images = {"python", "python:latest", "python:3.11", "shell"};
  Agent custom = MakeAgent("a2", "cpu=8,mem=8g");
  custom.images = {"myimage", "myimage:v1", "registry.example.com/team/myimage:v1"};
  in.agents = {plain, custom};
  Session mine = MakeSession("mine", "cpu=1", 1);
  mine.image = "registry.example.com/team/myimage:v1";
  Session py = MakeSession("py", "cpu=1", 2);
  py.image = "python:3.11";
  Session none = MakeSession("none", "cpu=1", 3);
  none.image = "tensorflow";
  in.pending = {mine, py, none};
  auto d = ByID(Schedule(in));
  EXPECT_EQ(d["mine"].agent_id, "a2");
  EXPECT_EQ(d["py"].agent_id, "a1");
  EXPECT_FALSE(d["none"].agent_id);
  EXPECT_THAT(d["none"].status_info,
              HasSubstr("no agent in the resource group offers image tensorflow"));
  // Agents that reported no images are not ruled out.
  EXPECT_TRUE(OffersImage({}, "anything"));
  EXPECT_FALSE(OffersImage({"python"}, "pythonic"));
  // A tag must be offered: exactly, as latest, or as a version with a platform suffix.
  EXPECT_TRUE(OffersImage({"python", "python:3.11"}, "python"));
  EXPECT_TRUE(OffersImage({"python"}, "python:latest"));
  EXPECT_TRUE(OffersImage({"python", "python:3.11"}, "python:3.11-ubuntu22.04"));
  EXPECT_FALSE(OffersImage({"python", "python:3.11"}, "python:3.9-ubuntu20.04"));
  // A registry reference is never a local image of the same last component (issue 46); the
  // image pulled from there is, however the reference is spelled.
  EXPECT_FALSE(
      OffersImage({"python", "python:3.11"}, "cr.backend.ai/stable/python:3.11-ubuntu22.04"));
  EXPECT_FALSE(OffersImage({"myimage:v1"}, "registry.example.com/team/myimage:v1"));
  EXPECT_TRUE(OffersImage({"app", "index.docker.io/lab/app:latest"}, "lab/app"));
  EXPECT_TRUE(OffersImage({"app", "index.docker.io/lab/app:latest"}, "docker.io/lab/app:latest"));
  EXPECT_FALSE(OffersImage({"app", "index.docker.io/lab/app:latest"}, "lab/app:2"));
  EXPECT_TRUE(OffersImage({"127.0.0.1:5000/lab/app:1"}, "127.0.0.1:5000/lab/app:1"));
  EXPECT_FALSE(OffersImage({"python", "python:3.11"}, "python:3.9"));
  EXPECT_FALSE(OffersImage({"python", "python:3.11"}, "python:-x"));
}

TEST(SchedulerTest, WhatCanNeverStartIsNamed) {
  std::vector<ResourceSlots> group = {Slots("cpu=4,mem=8g"), Slots("cpu=8,mem=4g")};
  EXPECT_EQ(WhyNeverFits(group, Slots("cpu=8,mem=4g"), false), "");
  EXPECT_EQ(WhyNeverFits({}, Slots("cpu=1000"), false), "") << "agents may still come";
  EXPECT_EQ(WhyNeverFits(group, Slots("cpu=1,cuda.shares=0.5"), false),
            "No agent of the resource group offers cuda.shares.");
  EXPECT_EQ(WhyNeverFits(group, Slots("cpu=1,cuda.shares=0.5"), true), "")
      << "enqueueOnly: an agent with GPUs may join";
  // Within the group's total, but on no single agent.
  EXPECT_EQ(WhyNeverFits(group, Slots("cpu=8,mem=8g"), false),
            "The request (cpu=8 mem=8g) is larger than any agent of the resource group holds: "
            "the group has cpu=12 mem=12g in all, its largest agent cpu=8 mem=8g.");
  EXPECT_THAT(WhyNeverFits(group, Slots("cpu=1000"), true), HasSubstr("cpu=12 in all"));
}

TEST(SchedulerTest, KeypairConcurrencyAndTotalSlots) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=64,mem=64g")};
  Keypair limited;
  limited.max_concurrent_sessions = 2;
  limited.active_sessions = 1;
  limited.total_resource_slots = Slots("cpu=4");
  limited.occupied = Slots("cpu=1");
  in.keypairs["AK1"] = limited;
  in.pending = {MakeSession("s1", "cpu=2", 1), MakeSession("s2", "cpu=1", 2),
                MakeSession("other", "cpu=8", 3, "AK2")};
  auto d = ByID(Schedule(in));
  EXPECT_EQ(d["s1"].agent_id, "a1");
  EXPECT_FALSE(d["s2"].agent_id);
  EXPECT_THAT(d["s2"].status_info, HasSubstr("already runs 2 sessions (limit 2)"));
  EXPECT_EQ(d["other"].agent_id, "a1") << "limits are per keypair";

  Input slots = in;
  slots.keypairs["AK1"].max_concurrent_sessions = 0;
  slots.pending = {MakeSession("s3", "cpu=3.5", 1)};
  auto d2 = ByID(Schedule(slots));
  EXPECT_FALSE(d2["s3"].agent_id);
  EXPECT_THAT(d2["s3"].status_info, HasSubstr("keypair limit cpu=4 (using cpu=1, needs cpu=3.5"));

  Input strict = in;
  strict.keypairs["AK1"] = Keypair{};
  strict.keypairs["AK1"].unspecified_unlimited = false;
  strict.keypairs["AK1"].total_resource_slots = Slots("cpu=8");
  strict.pending = {MakeSession("mem-hungry", "cpu=1,mem=1g", 1)};
  EXPECT_FALSE(Schedule(strict)[0].agent_id) << "mem is limited to 0 when unspecified is LIMITED";
}

TEST(SchedulerTest, HeadGuaranteeStopsBackfillAfterMaxWait) {
  Input in;
  in.now = std::chrono::system_clock::time_point(minutes(100));
  in.agents = {MakeAgent("a1", "cpu=4")};
  in.agents[0].occupied = Slots("cpu=3");
  Session head = MakeSession("head", "cpu=4", 1);  // the whole agent: no room to backfill
  head.enqueued_at = in.now - minutes(5);
  in.pending = {head, MakeSession("small", "cpu=1", 2)};
  EXPECT_EQ(ByID(Schedule(in))["small"].agent_id, "a1") << "backfill before max_head_wait";
  in.pending[0].enqueued_at = in.now - minutes(11);
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["small"].agent_id);
  EXPECT_THAT(d["small"].status_info, HasSubstr("older session"));
}

// Hardening (hostile, 7): past the head guarantee one user's request for a whole agent blocked
// every later session of the group, even with other agents free. The head now holds one agent;
// the others keep backfilling, and the reasons say who holds what.
TEST(SchedulerTest, AStarvingHeadHoldsOneAgentAndTheRestBackfill) {
  Input in;
  in.now = std::chrono::system_clock::time_point(minutes(100));
  in.max_head_wait = std::chrono::seconds(60);
  in.agents = {MakeAgent("a1", "cpu=4"), MakeAgent("a2", "cpu=4"), MakeAgent("a3", "cpu=4")};
  in.agents[0].occupied = Slots("cpu=3");  // the most free for a whole-agent request: none full
  in.agents[1].occupied = Slots("cpu=1");
  in.agents[2].occupied = Slots("cpu=2");
  Session whole = MakeSession("whole", "cpu=4", 1, "AK-big");
  whole.enqueued_at = in.now - minutes(30);
  in.pending = {whole};
  for (int i = 0; i < 4; ++i) {
    Session s = MakeSession("small" + std::to_string(i), "cpu=1", 2 + i);
    s.enqueued_at = in.now;
    in.pending.push_back(s);
  }
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["whole"].agent_id);
  EXPECT_THAT(d["whole"].status_info, HasSubstr("agent a2 is held for it"));
  EXPECT_THAT(d["whole"].status_info, HasSubstr("head guarantee after 60 s"));
  // a2 (the one nearest to free) takes nothing more; a1 and a3 take the small ones.
  int started = 0;
  for (int i = 0; i < 4; ++i) {
    auto const& one = d["small" + std::to_string(i)];
    if (one.agent_id) {
      ++started;
      EXPECT_NE(*one.agent_id, "a2") << i;
    }
  }
  EXPECT_EQ(started, 3) << "a1 has room for 1, a3 for 2";
  EXPECT_THAT(d["small3"].status_info, HasSubstr("agent a2 (held for whole)"));
  // Before the guarantee nothing is held: the small ones fill a2 as well.
  in.max_head_wait = std::chrono::seconds(3600);
  auto early = ByID(Schedule(in));
  EXPECT_EQ(early["small0"].agent_id, "a1");
  EXPECT_THAT(early["whole"].status_info, ::testing::Not(HasSubstr("held")));
  int early_started = 0;
  for (int i = 0; i < 4; ++i) early_started += early["small" + std::to_string(i)].agent_id ? 1 : 0;
  EXPECT_EQ(early_started, 4);
}

// Hardening (hostile, 7, the rest): a held agent used to take nothing more at all. What the
// starving session needs is now reserved beside the backfill placed since the hold began; later
// sessions that leave that room start there (they cannot delay it: it starts as soon as the
// sessions that were there before end), the others wait with the reason.
TEST(SchedulerTest, AHeldAgentTakesBackfillThatLeavesTheHeadItsRoom) {
  Input in;
  in.now = std::chrono::system_clock::time_point(minutes(100));
  in.max_head_wait = std::chrono::seconds(60);
  in.agents = {MakeAgent("a1", "cpu=8")};
  in.agents[0].occupied = Slots("cpu=6");  // an interactive session from before, never ending
  in.agents[0].placed = {{in.now - minutes(60), Slots("cpu=6"), {}}};
  Session head = MakeSession("head", "cpu=7", 1, "AK-big");
  head.enqueued_at = in.now - minutes(30);  // held since 29 minutes ago
  in.pending = {head, MakeSession("small0", "cpu=1", 2), MakeSession("small1", "cpu=1", 3)};
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["head"].agent_id);
  EXPECT_THAT(d["head"].status_info, HasSubstr("agent a1 is held for it"));
  EXPECT_THAT(d["head"].status_info, HasSubstr("its room is reserved there"));
  EXPECT_EQ(d["small0"].agent_id, "a1") << "1 + 7 fit 8 once the old session ends";
  EXPECT_FALSE(d["small1"].agent_id) << "2 + 7 would not";
  EXPECT_THAT(d["small1"].status_info, HasSubstr("agent a1 (held for head)"));

  // Next pass: small0 is placed there (since the hold began), so it counts as backfill; the
  // old session's room does not (it drains).
  in.agents[0].occupied = Slots("cpu=7");
  in.agents[0].placed.push_back({in.now - minutes(1), Slots("cpu=1"), {}});
  in.pending = {head, MakeSession("small1", "cpu=1", 3)};
  d = ByID(Schedule(in));
  EXPECT_FALSE(d["small1"].agent_id);
  // Backfill placed before the hold began drains like the rest: it does not count.
  in.agents[0].placed.back().scheduled_at = in.now - minutes(40);
  d = ByID(Schedule(in));
  EXPECT_EQ(d["small1"].agent_id, "a1");
}

// The same on GPUs: the room kept for the head is on its devices, not only in the agent's total.
TEST(SchedulerTest, AHeldAgentKeepsTheHeadsDevicesFree) {
  auto gpu = [](std::string uuid) {
    Device d;
    d.uuid = std::move(uuid);
    return d;
  };
  Input in;
  in.now = std::chrono::system_clock::time_point(minutes(100));
  in.max_head_wait = std::chrono::seconds(60);
  in.agents = {MakeAgent("a1", "cpu=8,cuda.shares=2")};
  in.agents[0].devices = {gpu("GPU-0"), gpu("GPU-1")};
  // An old session holds all of GPU-0.
  DeviceAllocation old{"cuda.shares", "GPU-0", Decimal::FromInteger(1)};
  in.agents[0].occupied = Slots("cpu=1,cuda.shares=1");
  in.agents[0].devices[0].used = Decimal::FromInteger(1);
  in.agents[0].placed = {{in.now - minutes(60), Slots("cpu=1,cuda.shares=1"), {old}}};
  Session head = MakeSession("head", "cpu=1,cuda.shares=2", 1, "AK-big");
  head.enqueued_at = in.now - minutes(30);
  in.pending = {head, MakeSession("gpu-half", "cpu=1,cuda.shares=0.5", 2),
                MakeSession("cpu-only", "cpu=1", 3)};
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["head"].agent_id);
  EXPECT_FALSE(d["gpu-half"].agent_id) << "GPU-1 has room now, but the head needs both devices";
  EXPECT_THAT(d["gpu-half"].status_info, HasSubstr("held for head"));
  EXPECT_EQ(d["cpu-only"].agent_id, "a1") << "it leaves the head its GPUs and CPUs";
}

TEST(SchedulerTest, NotReadySessionsWaitWithTheirReason) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=4")};
  Session later = MakeSession("later", "cpu=1", 1);
  later.ready = false;
  later.not_ready_reason = "waiting: starts at 2026-12-01T00:00:00Z";
  in.pending = {later, MakeSession("now", "cpu=1", 2)};
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["later"].agent_id);
  EXPECT_EQ(d["later"].status_info, "waiting: starts at 2026-12-01T00:00:00Z");
  EXPECT_EQ(d["now"].agent_id, "a1");
}

TEST(SchedulerTest, DescribesSlotsInBinaryUnits) {
  EXPECT_EQ(DescribeSlots(Slots("cpu=4,mem=8g")), "cpu=4 mem=8g");
  EXPECT_EQ(DescribeSlots(Slots("mem=1536m")), "mem=1536m");
  EXPECT_EQ(DescribeSlots(Slots("mem=1000")), "mem=1000");
  EXPECT_EQ(DescribeSlots({}), "nothing");
}

TEST(SchedulerTest, AnAgentListPinsTheSessionToThoseAgents) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=4,mem=8g"), MakeAgent("a2", "cpu=4,mem=8g"),
               MakeAgent("a3", "cpu=1,mem=1g")};
  in.pending = {MakeSession("pinned", "cpu=1,mem=1g", 1), MakeSession("free", "cpu=1,mem=1g", 2),
                MakeSession("gone", "cpu=1", 3), MakeSession("too-big", "cpu=2", 4)};
  in.pending[0].agent_list = {"a2"};
  in.pending[2].agent_list = {"a9", "a8"};
  in.pending[3].agent_list = {"a3"};
  auto d = ByID(Schedule(in));
  EXPECT_EQ(d["pinned"].agent_id, "a2") << "first fit alone would pick a1";
  EXPECT_EQ(d["free"].agent_id, "a1");
  EXPECT_FALSE(d["gone"].agent_id);
  EXPECT_EQ(d["gone"].status_info,
            "waiting: none of the requested agents (a9, a8) is alive and schedulable in the "
            "resource group");
  EXPECT_FALSE(d["too-big"].agent_id) << "a1 and a2 have room, but only a3 is allowed";
  EXPECT_THAT(d["too-big"].status_info, HasSubstr("more than the requested agents (a3)"));
}

}  // namespace
}  // namespace bai::manager::scheduler

namespace bai::manager::scheduler {
namespace {

TEST(SchedulerPolicyTest, DomainAndProjectLimitsHoldAndAreNamed) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=16,mem=64g")};
  auto in_scope = [](Session s, std::string domain, std::string project) {
    s.domain_name = std::move(domain);
    s.group_id = std::move(project);
    return s;
  };
  in.domains["lab"] = Scope{Slots("cpu=4"), Slots("cpu=3")};
  in.projects["p1"] = Scope{Slots("mem=8g"), Slots("mem=2g")};
  in.pending = {
      in_scope(MakeSession("d-over", "cpu=2,mem=1g", 1), "lab", "p0"),
      in_scope(MakeSession("d-fits", "cpu=1,mem=1g", 2), "lab", "p0"),
      in_scope(MakeSession("d-full", "cpu=1,mem=1g", 3), "lab", "p0"),  // the pass filled it
      in_scope(MakeSession("p-fits", "cpu=1,mem=6g", 4, "AK2"), "other", "p1"),
      in_scope(MakeSession("p-over", "cpu=1,mem=1g", 5, "AK2"), "other", "p1"),
      in_scope(MakeSession("free", "cpu=8,mem=8g", 6, "AK3"), "other", "p2"),
  };
  auto d = ByID(Schedule(in));
  EXPECT_FALSE(d["d-over"].agent_id);
  EXPECT_EQ(d["d-over"].status_info,
            "waiting: domain lab limit cpu=4 (using cpu=3, needs cpu=2 more)");
  EXPECT_EQ(d["d-fits"].agent_id, "a1");
  EXPECT_THAT(d["d-full"].status_info, HasSubstr("domain lab limit cpu=4 (using cpu=4"));
  EXPECT_EQ(d["p-fits"].agent_id, "a1");
  EXPECT_EQ(d["p-over"].status_info,
            "waiting: project limit mem=8g (using mem=8g, needs mem=1g more)");
  EXPECT_EQ(d["free"].agent_id, "a1");  // slots absent from a limit are unlimited
}

TEST(SchedulerPolicyTest, KeypairLimitsNameTheLimit) {
  Input in;
  in.agents = {MakeAgent("a1", "cpu=16,mem=64g")};
  Keypair k;
  k.max_concurrent_sessions = 1;
  in.keypairs["AK1"] = k;
  Keypair limited;
  limited.total_resource_slots = Slots("cpu=2");
  limited.unspecified_unlimited = false;  // LIMITED: mem, absent from the limit, is zero
  in.keypairs["AK2"] = limited;
  in.pending = {MakeSession("one", "cpu=1", 1), MakeSession("two", "cpu=1", 2),
                MakeSession("mem", "cpu=1,mem=1g", 3, "AK2"),
                MakeSession("cpu", "cpu=1", 4, "AK2")};
  auto d = ByID(Schedule(in));
  EXPECT_EQ(d["one"].agent_id, "a1");
  EXPECT_EQ(d["two"].status_info, "waiting: the keypair already runs 1 sessions (limit 1)");
  EXPECT_THAT(d["mem"].status_info, HasSubstr("keypair limit mem=0"));
  EXPECT_EQ(d["cpu"].agent_id, "a1");
}

TEST(SchedulerPolicyTest, AdmissionRefusesNamingTheLimit) {
  AdmissionLimits l;
  EXPECT_EQ(WhyRefused(l, {}, 8, Slots("cpu=100")), "");  // no limits
  l.max_containers_per_session = 1;
  EXPECT_THAT(WhyRefused(l, {}, 2, Slots("cpu=1")), HasSubstr("max_containers_per_session"));
  EXPECT_EQ(WhyRefused(l, {}, 1, Slots("cpu=1")), "");
  l.max_pending_session_count = 2;
  EXPECT_EQ(WhyRefused(l, {1, Slots("cpu=1")}, 1, Slots("cpu=1")), "");
  EXPECT_THAT(WhyRefused(l, {2, Slots("cpu=2")}, 1, Slots("cpu=1")),
              HasSubstr("more than 2 pending session(s)"));
  l.max_pending_session_count.reset();
  l.max_pending_session_resource_slots = Slots("cpu=4");
  EXPECT_EQ(WhyRefused(l, {5, Slots("cpu=3")}, 1, Slots("cpu=1,mem=1g")), "");
  EXPECT_THAT(WhyRefused(l, {5, Slots("cpu=3")}, 1, Slots("cpu=2")),
              HasSubstr("max_pending_session_resource_slots cpu=4"));
}

TEST(SchedulerPolicyTest, IdleAndLifetimeLimits) {
  using std::chrono::seconds;
  auto t0 = std::chrono::system_clock::time_point(seconds(1'000'000));
  LiveSession s;
  s.id = "s";
  s.running_since = t0;
  EXPECT_EQ(WhyExpired(s, t0 + seconds(100000)), "");  // no limits
  s.idle_timeout = 60;
  EXPECT_EQ(WhyExpired(s, t0 + seconds(59)), "");
  EXPECT_EQ(WhyExpired(s, t0 + seconds(60)), "idle-timeout");
  s.last_activity = t0 + seconds(50);  // activity starts the clock over
  EXPECT_EQ(WhyExpired(s, t0 + seconds(100)), "");
  EXPECT_EQ(WhyExpired(s, t0 + seconds(110)), "idle-timeout");
  s.batch = true;  // batch jobs are never idle
  EXPECT_EQ(WhyExpired(s, t0 + seconds(1000)), "");
  s.max_session_lifetime = 600;
  EXPECT_EQ(WhyExpired(s, t0 + seconds(599)), "");
  EXPECT_EQ(WhyExpired(s, t0 + seconds(600)), "max-session-lifetime");
}

}  // namespace
}  // namespace bai::manager::scheduler

namespace bai::manager::scheduler {
namespace {

// A long queue behind full agents (the pass reuses one shape's outcome while the agents have
// not changed): every waiting session of a shape gets the reason a walk over the agents gives;
// starving sessions each hold an agent of their own until none is left; a session of another
// shape that fits still starts, and the ones behind it see the agents as they are after it.
TEST(SchedulerTest, ALongQueueOfOneShapeGetsTheSameAnswersAsOneByOne) {
  Input in;
  in.now = std::chrono::system_clock::now();
  in.max_head_wait = std::chrono::seconds(600);
  for (int a = 0; a < 3; ++a) in.agents.push_back(MakeAgent("a" + std::to_string(a), "cpu=2"));
  int seq = 0;
  for (int i = 0; i < 6; ++i) {  // fill every agent
    in.pending.push_back(MakeSession("fill" + std::to_string(i), "cpu=1", ++seq));
  }
  for (int i = 0; i < 5; ++i) {  // starving: waited 30 minutes
    auto s = MakeSession("old" + std::to_string(i), "cpu=1", ++seq);
    s.enqueued_at = in.now - minutes(30);
    in.pending.push_back(s);
  }
  for (int i = 0; i < 3; ++i) {  // fresh
    auto s = MakeSession("new" + std::to_string(i), "cpu=1", ++seq);
    s.enqueued_at = in.now;
    in.pending.push_back(s);
  }
  auto d = ByID(Schedule(in));
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(d["fill" + std::to_string(i)].agent_id.has_value());
  // The first three starving sessions each hold one agent; the other two find none left.
  std::set<std::string> holders;
  for (int i = 0; i < 5; ++i) {
    auto const& info = d["old" + std::to_string(i)].status_info;
    EXPECT_FALSE(d["old" + std::to_string(i)].agent_id.has_value());
    EXPECT_THAT(info, HasSubstr("waiting: needs cpu=1; largest free agent has cpu=0")) << info;
    auto at = info.find("; agent ");
    if (i < 3) {
      ASSERT_NE(at, std::string::npos) << info;
      holders.insert(info.substr(at + 8, 2));
    } else {
      EXPECT_EQ(at, std::string::npos) << "no agent left to hold: " << info;
    }
  }
  EXPECT_EQ(holders, (std::set<std::string>{"a0", "a1", "a2"}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d["new" + std::to_string(i)].status_info,
              "waiting: needs cpu=1; largest free agent has cpu=0");
  }

  // Room on one agent for a small session between two waiting big ones: the big ones wait for
  // the same reason, the small one starts, and the big one after it sees the agent fuller.
  Input mixed;
  mixed.now = in.now;
  mixed.agents = {MakeAgent("b0", "cpu=2")};
  mixed.pending = {MakeSession("big1", "cpu=4", 1), MakeSession("small", "cpu=1", 2),
                   MakeSession("big2", "cpu=4", 3), MakeSession("big3", "cpu=2", 4)};
  for (auto& s : mixed.pending) s.enqueued_at = in.now;
  auto m = ByID(Schedule(mixed));
  EXPECT_EQ(m["small"].agent_id, "b0");
  EXPECT_EQ(m["big1"].status_info, m["big2"].status_info);
  EXPECT_THAT(m["big3"].status_info, HasSubstr("largest free agent has cpu=1"));
}

}  // namespace
}  // namespace bai::manager::scheduler
