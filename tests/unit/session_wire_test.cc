// SPDX-License-Identifier: Apache-2.0
// The session wire types' one codec: round trips, the spellings other clients and servers use,
// and refusals that name the field.
#include "bai/protocol/session_wire.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/session_status.h"

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

namespace bai::protocol {
namespace {

SessionCreateRequest FullRequest() {
  SessionCreateRequest r;
  r.name = "train-1";
  r.image = "python:3.12";
  r.type = "batch";
  r.startup_command = "python train.py";
  r.resources = {{"cpu", Decimal::FromInteger(2)},
                 {"mem", Decimal::FromInteger(4LL * 1024 * 1024 * 1024)}};
  r.environ = {{"EPOCHS", "3"}, {"LANG", "C.UTF-8"}};
  r.mounts = {"data", "models"};
  r.group = "research";
  r.domain = "default";
  r.scaling_group = "gpu";
  r.enqueue_only = true;
  r.max_wait_seconds = 30;
  r.reuse_if_exists = false;
  r.tag = "nightly";
  r.bootstrap_script = "pip install -r req.txt";
  r.batch_timeout_seconds = 3600;
  r.starts_at = "30m";
  r.dependencies = {"prep"};
  r.priority = 42;
  r.owner_access_key = "AKIAOTHER";
  r.architecture = "aarch64";
  r.mount_map = {{"data", "/home/work/input"}};
  r.resource_opts = {{"shmem", "1g"}};
  r.agent_list = {"agent-1"};
  r.callback_url = "https://ci.example/hook";
  return r;
}

TEST(SessionWireTest, CreateRequestRoundTripsEveryField) {
  auto in = FullRequest();
  auto out = DecodeSessionCreateRequest(EncodeSessionCreateRequest(in));
  ASSERT_TRUE(out.ok()) << out.status().message() << " " << out.status().error_info().data_json;
  EXPECT_EQ(out->name, in.name);
  EXPECT_EQ(out->image, in.image);
  EXPECT_EQ(out->type, in.type);
  EXPECT_EQ(out->startup_command, in.startup_command);
  EXPECT_EQ(out->resources, in.resources);
  EXPECT_EQ(out->environ, in.environ);
  EXPECT_EQ(out->mounts, in.mounts);
  EXPECT_EQ(out->group, in.group);
  EXPECT_EQ(out->domain, in.domain);
  EXPECT_EQ(out->scaling_group, in.scaling_group);
  EXPECT_EQ(out->enqueue_only, in.enqueue_only);
  EXPECT_EQ(out->max_wait_seconds, in.max_wait_seconds);
  EXPECT_EQ(out->reuse_if_exists, in.reuse_if_exists);
  EXPECT_EQ(out->tag, in.tag);
  EXPECT_EQ(out->bootstrap_script, in.bootstrap_script);
  EXPECT_EQ(out->batch_timeout_seconds, in.batch_timeout_seconds);
  EXPECT_EQ(out->starts_at, in.starts_at);
  EXPECT_EQ(out->dependencies, in.dependencies);
  EXPECT_EQ(out->priority, in.priority);
  EXPECT_EQ(out->owner_access_key, in.owner_access_key);
  EXPECT_EQ(out->architecture, in.architecture);
  EXPECT_EQ(out->mount_map, in.mount_map);
  EXPECT_EQ(out->resource_opts, in.resource_opts);
  EXPECT_EQ(out->agent_list, in.agent_list);
  EXPECT_EQ(out->callback_url, in.callback_url);
  EXPECT_EQ(out->cluster_size, 1);
  EXPECT_EQ(out->cluster_mode, "single-node");

  // A minimal request leaves the optional fields out rather than sending nulls.
  SessionCreateRequest minimal;
  minimal.image = "python";
  auto body = json::parse(EncodeSessionCreateRequest(minimal));
  for (char const* absent : {"name", "group", "domain", "startupCommand", "batch_timeout",
                             "priority", "owner_access_key", "dependencies", "architecture"}) {
    EXPECT_FALSE(body.contains(absent)) << absent;
  }
  EXPECT_FALSE(body["config"].contains("agent_list"));
}

TEST(SessionWireTest, CreateRequestReadsOtherClientsSpellingsAndLenientScalars) {
  // As the official client (and query parameters) may send it.
  auto out = DecodeSessionCreateRequest(R"({
      "clientSessionToken": "nb-one", "lang": "python", "sessionType": "interactive",
      "groupName": "default", "domainName": "default", "enqueue_only": "true",
      "max_wait_seconds": "15", "reuse_if_exists": 0, "startup_command": "echo",
      "batchTimeout": "2h", "clusterSize": 1, "clusterMode": "single-node",
      "config": {"scalingGroup": "default", "mountMap": {"a": "/a"},
                 "resourceOpts": {"shmem": 67108864}, "resources": {"cpu": 1, "mem": "2g"}},
      "someFutureField": {"ignored": true}})");
  ASSERT_TRUE(out.ok()) << out.status().error_info().data_json;
  EXPECT_EQ(out->name, "nb-one");
  EXPECT_EQ(out->image, "python");
  EXPECT_EQ(out->group, "default");
  EXPECT_TRUE(out->enqueue_only);
  EXPECT_EQ(out->max_wait_seconds, 15);
  EXPECT_FALSE(out->reuse_if_exists);
  EXPECT_EQ(out->batch_timeout_seconds, 7200);
  EXPECT_EQ(out->scaling_group, "default");
  EXPECT_EQ(out->mount_map.at("a"), "/a");
  EXPECT_EQ(out->resource_opts.at("shmem"), "67108864") << "non-string options keep their text";
  EXPECT_EQ(out->resources.at("mem"), Decimal::FromInteger(2LL * 1024 * 1024 * 1024));
}

TEST(SessionWireTest, CreateRequestNamesEveryBadField) {
  auto bad = DecodeSessionCreateRequest(R"({
      "name": "x", "type": "batch", "startupCommand": ["ls"], "priority": 101, "maxWaitSeconds": -1,
      "enqueueOnly": "perhaps", "starts_at": "tomorrow-ish", "batch_timeout": 0,
      "cluster_mode": "ring", "dependencies": [1],
      "config": {"environ": {"A": 1}, "mounts": "data", "resources": {"gpu": 1},
                 "agent_list": [""], "mount_map": []}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().error_info().type, ProblemTypeUrl(ProblemType::kInvalidApiParams));
  auto fields = FieldsOf(bad.status());
  for (char const* f :
       {"name", "image", "startupCommand", "priority", "maxWaitSeconds", "enqueueOnly", "starts_at",
        "batch_timeout", "cluster_mode", "dependencies", "config.environ", "config.mounts",
        "config.resources.gpu", "config.agent_list", "config.mount_map"}) {
    EXPECT_TRUE(fields.contains(f)) << f << " in " << fields;
  }
  // A slot known to the caller's lookup is accepted; amounts are checked.
  auto custom = DecodeSessionCreateRequest(R"({"image": "p", "config": {"resources": {"gpu": 1}}})",
                                           [](std::string const& slot) -> std::optional<SlotType> {
                                             if (slot == "gpu") return SlotType::kCount;
                                             return KnownSlotType(slot);
                                           });
  EXPECT_TRUE(custom.ok()) << custom.status().error_info().data_json;
  auto negative = DecodeSessionCreateRequest(R"({"image": "p", "config": {"resources":
      {"cpu": "-1"}}})");
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(FieldsOf(negative.status()).contains("config.resources"));
  EXPECT_FALSE(DecodeSessionCreateRequest("[1]").ok());
  EXPECT_FALSE(DecodeSessionCreateRequest(R"({"image": "p", "starts_at": "30m"})").ok())
      << "only batch sessions start later";
}

TEST(SessionWireTest, NamesAndDurations) {
  EXPECT_TRUE(ValidSessionName("nb_1.a-b"));
  EXPECT_FALSE(ValidSessionName("abc"));
  EXPECT_FALSE(ValidSessionName(std::string(65, 'x')));
  EXPECT_FALSE(ValidSessionName("-abc"));
  EXPECT_FALSE(ValidSessionName("from-template"));
  EXPECT_FALSE(ValidSessionName("bad name"));
  EXPECT_EQ(ParseDurationSeconds("90"), 90);
  EXPECT_EQ(ParseDurationSeconds("30s"), 30);
  EXPECT_EQ(ParseDurationSeconds("5m"), 300);
  EXPECT_EQ(ParseDurationSeconds("1h"), 3600);
  EXPECT_EQ(ParseDurationSeconds("2d"), 172800);
  EXPECT_EQ(ParseDurationSeconds("1w"), 604800);
  for (char const* bad : {"", "h", "1x", "-5m", "1.5h", "1234567890s"}) {
    EXPECT_FALSE(ParseDurationSeconds(bad)) << bad;
  }
}

TEST(SessionWireTest, CreateResultRoundTripsWithEitherServicePortsSpelling) {
  SessionCreateResult made{"id-1", "nb", "RUNNING", true};
  auto created = json::parse(EncodeSessionCreateResult(made));
  EXPECT_TRUE(created.contains("servicePorts"));
  auto back = DecodeSessionCreateResult(created.dump());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->id, "id-1");
  EXPECT_EQ(back->name, "nb");
  EXPECT_EQ(back->status, "RUNNING");
  EXPECT_TRUE(back->created);
  made.created = false;
  auto reused = json::parse(EncodeSessionCreateResult(made));
  EXPECT_TRUE(reused.contains("service_ports")) << "24.09's spelling for a reused session";
  EXPECT_FALSE(DecodeSessionCreateResult(reused.dump())->created);
  EXPECT_FALSE(DecodeSessionCreateResult(R"({"sessionId": 5})").ok());
}

TEST(SessionWireTest, InfoRoundTripsAndReadsA2409Answer) {
  SessionInfo in;
  in.id = "3f1c";
  in.name = "job";
  in.status = ParseSessionStatus("RUNNING");
  in.status_info = "";
  in.type = "batch";
  in.image = "python";
  in.exit_code = std::nullopt;
  in.agent_id = "agent-1";
  in.requested = {{"cpu", Decimal::FromInteger(1)}};
  in.occupied = in.requested;
  in.created_at = "2026-11-23T00:00:00Z";
  in.domain_name = "default";
  in.group_id = "g1";
  in.user_id = "u1";
  in.architecture = "x86_64";
  in.tag = "t";
  in.scaling_group = "default";
  in.environ = {{"A", "needs \"escaping\"\n"}};
  in.resource_opts = {{"shmem", "1g"}};
  in.status_history = {{"PENDING", "2026-11-23T00:00:00Z"}, {"RUNNING", "2026-11-23T00:00:01Z"}};
  in.age_ms = 1500;
  in.num_queries = 3;
  in.startup_command = "make";
  in.priority = 7;
  std::string text = EncodeSessionInfo(in);
  ASSERT_FALSE(json::parse(text, nullptr, false).is_discarded()) << text;
  auto out = DecodeSessionInfo(text);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->id, in.id);
  EXPECT_EQ(out->status.status, SessionStatus::kRunning);
  EXPECT_EQ(out->agent_id, in.agent_id);
  EXPECT_EQ(out->requested, in.requested);
  EXPECT_EQ(out->occupied, in.occupied);
  EXPECT_EQ(out->environ, in.environ);
  EXPECT_EQ(out->resource_opts, in.resource_opts);
  EXPECT_EQ(out->status_history, in.status_history);
  EXPECT_EQ(out->tag, in.tag);
  EXPECT_EQ(out->age_ms, 1500);
  EXPECT_EQ(out->num_queries, 3);
  EXPECT_EQ(out->startup_command, in.startup_command);
  EXPECT_EQ(out->priority, 7);
  EXPECT_EQ(out->exit_code, std::nullopt);
  EXPECT_EQ(out->raw_json, text);

  // 23.09 and 24.09 render slot maps as Python text and times with a space: read as what they
  // say (issue 44: they read as empty, and times as the server spelled them).
  auto legacy = DecodeSessionInfo(R"({"sessionId": "x", "status": "TERMINATED",
      "requestedSlots": "{'cpu': Decimal('1.5'), 'mem': Decimal('335544320')}", "exitCode": 3,
      "result": "failure", "creationTime": "2026-11-29 10:39:30.779739+00:00",
      "statusInfo": "None"})");
  ASSERT_TRUE(legacy.ok());
  ResourceSlots want;
  ASSERT_TRUE(ParseSlotAssignment("cpu=1.5,mem=335544320", want).ok());
  EXPECT_EQ(legacy->requested, want);
  EXPECT_EQ(legacy->created_at, "2026-11-29T10:39:30.779739+00:00");
  EXPECT_EQ(legacy->status_info, "");
  EXPECT_EQ(legacy->priority, std::nullopt);
  EXPECT_EQ(legacy->exit_code, 3);
  EXPECT_EQ(legacy->result, "failure");
  EXPECT_FALSE(DecodeSessionInfo("[]").ok());
}

// The output relay's hand-written codec reads back every byte sequence as nlohmann's would
// (bytes that are not UTF-8 become U+FFFD), and its events read with the general decoder too.
TEST(SessionWireTest, LogEventsCarryAnyBytes) {
  std::uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return static_cast<unsigned char>(seed >> 16);
  };
  std::vector<std::string> samples = {"",
                                      "plain ascii\n",
                                      "quote \" backslash \\ tab \t cr \r",
                                      std::string("nul \0 bell \a", 12),
                                      "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                      "\xff\xfe bad \xc3 cut \xed\xa0\x80 surrogate \xe0\x80\x80"};
  for (int i = 0; i < 200; ++i) {
    std::string s;
    for (int n = next() % 64; n > 0; --n) s.push_back(static_cast<char>(next()));
    samples.push_back(s);
  }
  for (auto const& bytes : samples) {
    LogEvent e{"output", "stderr", bytes, 123456789012LL, "", {}, ""};
    std::string frame = EncodeLogEvent(e);
    ASSERT_EQ(frame.rfind("event: output\r\ndata: ", 0), 0u);
    std::string data = frame.substr(21, frame.size() - 21 - 4);
    // What nlohmann makes of the same bytes, and of our text.
    std::string expected = json(bytes).dump(-1, ' ', false, json::error_handler_t::replace);
    json parsed = json::parse(data);
    EXPECT_EQ(json(parsed["data"]).dump(), expected)
        << json(bytes).dump(-1, ' ', false, json::error_handler_t::replace);
    auto back = DecodeLogEvent("output", data);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->data, parsed["data"].get<std::string>());
    EXPECT_EQ(back->stream, "stderr");
    EXPECT_EQ(back->offset, 123456789012LL);
  }
  // Other spellings of the same event (another server's, spaces, escapes) read the same.
  auto spaced = DecodeLogEvent(
      "output", R"({ "offset": 5, "data": "a\u00e9\ud83d\ude00\/", "stream": "stdout" })");
  ASSERT_TRUE(spaced.ok()) << spaced.status().message();
  EXPECT_EQ(spaced->data, "a\xc3\xa9\xf0\x9f\x98\x80/");
  EXPECT_EQ(spaced->offset, 5);
  EXPECT_FALSE(DecodeLogEvent("output", R"({"stream":"stdout","data":"\ud83d","offset":1})").ok());
  EXPECT_FALSE(
      DecodeLogEvent("output", "{\"stream\":\"stdout\",\"data\":\"a\x01\",\"offset\":1}").ok());
}

// A stored output read on from an offset: within the head, in the dropped middle, in the tail.
TEST(SessionWireTest, OutputFromAnOffsetSkipsWhatWasSeen) {
  SessionOutput o;
  // Head "abcde" (0-5), 90 bytes dropped, tail "vwxyz" (95-100) of stderr.
  o.chunks = {{"stdout", "abcde"}, {"notice", "[dropped]\n"}, {"stderr", "vwxyz"}};
  o.next_offset = 100;
  o.truncated = true;
  auto text = [&](std::int64_t from) {
    std::string s;
    for (auto const& [stream, t] : OutputFrom(o, from)) s += stream.substr(0, 1) + t + "|";
    return s;
  };
  EXPECT_EQ(text(0), "sabcde|n[dropped]\n|svwxyz|");
  EXPECT_EQ(text(3), "sde|n[dropped]\n|svwxyz|");
  EXPECT_EQ(text(40), "n[dropped]\n|svwxyz|") << "from the middle: the notice, the whole tail";
  EXPECT_EQ(text(95), "svwxyz|");
  EXPECT_EQ(text(98), "syz|");
  EXPECT_EQ(text(100), "");
  // The manager's fallback (the agent out of reach): a notice first, the text after it.
  SessionOutput f{{{"notice", "[out of reach]\n"}, {"stdout", "tail"}}, 4, true};
  EXPECT_EQ(OutputFrom(f, 0).size(), 2u);
  ASSERT_EQ(OutputFrom(f, 2).size(), 1u);
  EXPECT_EQ(OutputFrom(f, 2)[0].second, "il");
}

}  // namespace
// A pull's progress as PREPARING's status_info says it (issue 46): one text both ways.
TEST(PullInfoTest, StatusInfoOfAPullReadsBack) {
  protocol::PullInfo p{"127.0.0.1:5000/lab/app:1", 1024, 4096};
  std::string text = protocol::EncodePullInfo(p);
  EXPECT_EQ(text, "pulling 127.0.0.1:5000/lab/app:1 (1024/4096 bytes)");
  auto back = protocol::DecodePullInfo(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->image, p.image);
  EXPECT_EQ(back->done, 1024);
  EXPECT_EQ(back->total, 4096);
  for (char const* other : {"", "pulling", "pulling x (1/2 bytes", "pulling  (1/2 bytes)",
                            "pulling x (a/2 bytes)", "scheduled", "pulling x (1-2 bytes)"}) {
    EXPECT_FALSE(protocol::DecodePullInfo(other)) << other;
  }
}

}  // namespace bai::protocol
