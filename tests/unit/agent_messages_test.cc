// SPDX-License-Identifier: Apache-2.0
// The internal protocol codecs: manager ⇄ agent and agent ⇄ kernel runner.
#include "server-reference/common/wire/agent_messages.h"

#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/common/wire/runner_messages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::server {
namespace {

namespace ap = agent_protocol;
namespace rp = runner_protocol;
using nlohmann::json;
using ::testing::HasSubstr;

protocol::ResourceSlots Slots(std::string const& text) {
  protocol::ResourceSlots slots;
  EXPECT_TRUE(protocol::ParseSlotAssignment(text, slots).ok());
  return slots;
}

template <class T, class Variant>
T Only(StatusOr<Variant> const& decoded) {
  EXPECT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_TRUE(decoded.ok() && std::holds_alternative<T>(*decoded));
  return decoded.ok() && std::holds_alternative<T>(*decoded) ? std::get<T>(*decoded) : T{};
}

TEST(AgentMessagesTest, RegisterRoundTrips) {
  ap::Register m;
  m.version = ap::kVersion;
  m.proof = "abc";
  m.agent_version = "0.1.0";
  m.scaling_group = "gpu";
  m.slots = Slots("cpu=4,mem=8g,cuda.shares=2.5");
  m.slot_types = {{"cpu", protocol::SlotType::kCount}, {"mem", protocol::SlotType::kBytes}};
  m.images = {{"python", {"py", "python3"}}};
  m.devices = {{"cuda", 0, "GPU-1", "H100", 85899345920, *protocol::Decimal::Parse("2.5")}};
  m.device_policy = "fill";
  m.kernels = {{"00000000-0000-4000-8000-0000000000a1",
                protocol::KernelStatus::kRunning,
                std::nullopt,
                "",
                std::nullopt,
                {{"web", "http", {8080}, false, "http://{host}:{port}/", {}, {}}}},
               {"00000000-0000-4000-8000-0000000000a2",
                protocol::KernelStatus::kTerminated,
                3,
                "task-failed",
                std::string("out\n"),
                {}}};
  auto back = Only<ap::Register>(ap::DecodeToManager(ap::Encode(ap::ToManager(m))));
  EXPECT_EQ(back.version, ap::kVersion);
  EXPECT_EQ(back.proof, "abc");
  EXPECT_EQ(back.scaling_group, "gpu");
  EXPECT_EQ(back.slots, m.slots);
  EXPECT_EQ(back.slot_types, m.slot_types);
  ASSERT_EQ(back.images.size(), 1u);
  EXPECT_EQ(back.images[0].aliases, (std::vector<std::string>{"py", "python3"}));
  ASSERT_EQ(back.devices.size(), 1u);
  EXPECT_EQ(back.devices[0].memory, 85899345920);
  EXPECT_EQ(back.devices[0].uuid, "GPU-1");
  EXPECT_EQ(back.devices[0].shares.ToString(), "2.5");
  EXPECT_EQ(back.device_policy, "fill");
  ASSERT_EQ(back.kernels.size(), 2u);
  EXPECT_EQ(back.kernels[0].status, protocol::KernelStatus::kRunning);
  EXPECT_EQ(back.kernels[1].status, protocol::KernelStatus::kTerminated);
  EXPECT_EQ(back.kernels[1].exit_code, 3);
  EXPECT_EQ(back.kernels[1].logs, "out\n");
  EXPECT_FALSE(back.kernels[0].exit_code);
  ASSERT_EQ(back.kernels[0].service_ports.size(), 1u);
  EXPECT_EQ(back.kernels[0].service_ports[0].url_template, "http://{host}:{port}/");
  EXPECT_EQ(back.kernels[0].service_ports[0].container_ports, std::vector<int>{8080});
  EXPECT_TRUE(back.primary);
  // A secondary link's registration; an agent that does not say is primary (one manager).
  m.primary = false;
  EXPECT_FALSE(Only<ap::Register>(ap::DecodeToManager(ap::Encode(ap::ToManager(m)))).primary);
  auto plain = ap::DecodeToManager(R"({"type":"register","version":)" +
                                   std::to_string(ap::kVersion) + R"(,"proof":"p"})");
  EXPECT_TRUE(Only<ap::Register>(plain).primary);
}

TEST(AgentMessagesTest, EveryOtherMessageRoundTrips) {
  auto status = Only<ap::KernelStatus>(ap::DecodeToManager(
      ap::Encode(ap::ToManager(ap::KernelStatus{"00000000-0000-4000-8000-00000000000a",
                                                protocol::KernelStatus::kError,
                                                137,
                                                "oom-killed",
                                                "x",
                                                {}}))));
  EXPECT_EQ(status.status, protocol::KernelStatus::kError);
  EXPECT_TRUE(status.Ended());
  EXPECT_EQ(status.exit_code, 137);
  EXPECT_EQ(status.reason, "oom-killed");
  EXPECT_FALSE(status.setup);
  ap::KernelStatus running{"00000000-0000-4000-8000-00000000000a",
                           protocol::KernelStatus::kRunning,
                           std::nullopt,
                           "",
                           std::nullopt,
                           {}};
  running.setup = ap::KernelSetup{"bridge", "disk", 1 << 30, 256 << 20};
  auto setup = Only<ap::KernelStatus>(ap::DecodeToManager(ap::Encode(ap::ToManager(running))))
                   .setup.value_or(ap::KernelSetup{});
  EXPECT_EQ(setup.network, "bridge");
  EXPECT_EQ(setup.scratch, "disk");
  EXPECT_EQ(setup.home_bytes, 1 << 30);
  EXPECT_EQ(setup.tmp_bytes, 256 << 20);
  auto beat = Only<ap::Heartbeat>(
      ap::DecodeToManager(ap::Encode(ap::ToManager(ap::Heartbeat{Slots("cpu=2"), std::nullopt}))));
  EXPECT_EQ(beat.slots, Slots("cpu=2"));
  EXPECT_FALSE(Only<ap::Heartbeat>(ap::DecodeToManager(R"({"type":"heartbeat"})")).slots);
  auto response = Only<ap::Response>(
      ap::DecodeToManager(ap::Encode(ap::ToManager(ap::Response{"r1", R"({"ok":true})"}))));
  EXPECT_EQ(response.request_id, "r1");
  EXPECT_EQ(json::parse(response.result_json), json({{"ok", true}}));
  auto task = Only<ap::TaskReport>(ap::DecodeToManager(
      ap::Encode(ap::ToManager(ap::TaskReport{"t", protocol::TaskStatus::kDone, "ok", 1, 1}))));
  EXPECT_EQ(task.status, protocol::TaskStatus::kDone);
  EXPECT_EQ(task.total_progress, 1);

  // A pull's progress while PREPARING (issue 46).
  ap::KernelStatus pulling{"00000000-0000-4000-8000-00000000000a",
                           protocol::KernelStatus::kPreparing,
                           std::nullopt,
                           "",
                           std::nullopt,
                           {}};
  pulling.pull = ap::PullState{"127.0.0.1:5000/lab/app:1", 512, 2048};
  auto pull = Only<ap::KernelStatus>(ap::DecodeToManager(ap::Encode(ap::ToManager(pulling))))
                  .pull.value_or(ap::PullState{});
  EXPECT_EQ(pull.image, "127.0.0.1:5000/lab/app:1");
  EXPECT_EQ(pull.done, 512);
  EXPECT_EQ(pull.total, 2048);

  ap::CreateKernel create;
  create.session_id = "00000000-0000-4000-8000-00000000000a";
  create.image = "python";
  create.resources = Slots("cpu=0.5,mem=256m");
  create.environ = {{"A", "b"}};
  create.mounts = {{"data", "/vf/data", "", "rw"}};
  create.startup_command = "make";
  create.batch_timeout = 60;
  create.devices = {{"cuda.shares", "GPU-1", *protocol::Decimal::Parse("0.25")},
                    {"cuda.device", "GPU-2", protocol::Decimal::FromInteger(1)}};
  auto c = Only<ap::CreateKernel>(ap::DecodeToAgent(ap::Encode(ap::ToAgent(create))));
  EXPECT_EQ(c.resources, create.resources);
  EXPECT_EQ(c.environ, create.environ);
  ASSERT_EQ(c.mounts.size(), 1u);
  EXPECT_EQ(c.mounts[0].permission, "rw");
  EXPECT_EQ(c.startup_command, "make");
  EXPECT_FALSE(c.bootstrap_script);
  EXPECT_EQ(c.batch_timeout, 60);
  EXPECT_EQ(c.devices, create.devices);
  EXPECT_FALSE(c.registry);
  // A registry image's source (issue 46), its credentials with it; a bad policy refused.
  create.registry = ap::ImageRegistry{"127.0.0.1:5000",
                                      "http://127.0.0.1:5000",
                                      "bot",
                                      "pw",
                                      false,
                                      "tag",
                                      "sha256:" + std::string(64, 'e')};
  auto r = Only<ap::CreateKernel>(ap::DecodeToAgent(ap::Encode(ap::ToAgent(create))))
               .registry.value_or(ap::ImageRegistry{});
  EXPECT_EQ(r.url, "http://127.0.0.1:5000");
  EXPECT_EQ(r.password, "pw");
  EXPECT_FALSE(r.ssl_verify);
  EXPECT_EQ(r.auto_pull, "tag");
  EXPECT_EQ(r.digest, create.registry->digest);
  auto wire = json::parse(ap::Encode(ap::ToAgent(create)));
  wire["registry"]["auto_pull"] = "always";
  auto refused = ap::DecodeToAgent(wire.dump());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("registry.auto_pull"));

  auto destroy = Only<ap::DestroyKernel>(ap::DecodeToAgent(ap::Encode(
      ap::ToAgent(ap::DestroyKernel{"00000000-0000-4000-8000-00000000000a", "user-requested"}))));
  EXPECT_EQ(destroy.reason, "user-requested");
  ap::Execute exec;
  exec.session_id = "00000000-0000-4000-8000-00000000000a";
  exec.mode = "batch";
  exec.options = {{"exec", "make test"}};
  auto e = Only<ap::Execute>(ap::DecodeToAgent(ap::Encode(ap::WithRequestId(exec, "r9"))));
  EXPECT_EQ(e.request_id, "r9");
  EXPECT_EQ(e.options.at("exec"), "make test");
  auto commit = Only<ap::CommitKernel>(ap::DecodeToAgent(ap::Encode(ap::WithRequestId(
      ap::CommitKernel{"", "00000000-0000-4000-8000-00000000000a", "t", "f.tar", "/srv/v1/x"},
      "r2"))));
  EXPECT_EQ(commit.filename, "f.tar");
  EXPECT_EQ(commit.request_id, "r2");
  EXPECT_EQ(commit.directory, "/srv/v1/x");
  EXPECT_FALSE(ap::DecodeToAgent(ap::Encode(ap::WithRequestId(
                                     ap::CommitKernel{"", "00000000-0000-4000-8000-00000000000a",
                                                      "t", "f.tar", "relative/dir"},
                                     "r3")))
                   .ok())
      << "a folder's directory is an absolute path";
  EXPECT_EQ(Only<ap::Registered>(ap::DecodeToAgent(ap::Encode(ap::Registered{7000, "g"})))
                .heartbeat_interval_ms,
            7000);
  EXPECT_EQ(Only<ap::Challenge>(ap::DecodeToAgent(ap::Encode(ap::Challenge{"n"}))).nonce, "n");
  // Heartbeats carry the node's load (the agent's live_stat).
  ap::Heartbeat loaded{std::nullopt, ap::NodeStats{37.5, {75.0, 0.0}, 3 << 20, 8 << 20}};
  auto back = Only<ap::Heartbeat>(ap::DecodeToManager(ap::Encode(ap::ToManager(loaded))));
  ASSERT_TRUE(back.stats);
  EXPECT_EQ(*back.stats, *loaded.stats);
  EXPECT_FALSE(Only<ap::Heartbeat>(ap::DecodeToManager(R"({"type":"heartbeat"})")).stats);
  // Hardening: 2^62 ms overflowed the agent's timer (72k heartbeats in 3 s); 0 spun too.
  EXPECT_EQ(
      Only<ap::Registered>(
          ap::DecodeToAgent(R"({"type":"registered","heartbeat_interval_ms":4611686018427387904})"))
          .heartbeat_interval_ms,
      ap::kMaxHeartbeatMs);
  EXPECT_EQ(
      Only<ap::Registered>(ap::DecodeToAgent(R"({"type":"registered","heartbeat_interval_ms":0})"))
          .heartbeat_interval_ms,
      ap::kMinHeartbeatMs);

  auto restart = ap::DecodeRestartReply(ap::EncodeReply(ap::RestartReply{false, "gone"}));
  ASSERT_TRUE(restart.ok());
  EXPECT_EQ(restart->msg, "gone");
  auto reply = ap::DecodeCommitReply(ap::EncodeReply(ap::CommitReply{false, "", "taken", true}));
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->client_error);

  // rescan_images and its answer.
  auto rescan = ap::DecodeToAgent(ap::Encode(ap::WithRequestId(ap::RescanImages{}, "r-9")));
  EXPECT_EQ(Only<ap::RescanImages>(rescan).request_id, "r-9");
  auto images = ap::DecodeImagesReply(ap::EncodeReply(ap::ImagesReply{
      {{"python", {"python:3.11"}, 5000000000, ap::kImageKindHost}, {"tool", {}}}}));
  ASSERT_TRUE(images.ok()) << images.status().message();
  ASSERT_EQ(images->images.size(), 2u);
  EXPECT_EQ(images->images[0].kind, "host");
  EXPECT_EQ(images->images[1].kind, "") << "not said: an older agent's";
  EXPECT_EQ(images->images[0].aliases, std::vector<std::string>{"python:3.11"});
  EXPECT_EQ(images->images[0].size, 5000000000);  // past 32 bits
  EXPECT_EQ(images->images[1].name, "tool");
  EXPECT_EQ(images->images[1].size, 0);  // unknown: not sent, read as 0
  EXPECT_EQ(ap::EncodeReply(ap::ImagesReply{{{"tool", {}}}}).find("size"), std::string::npos);
  EXPECT_FALSE(ap::DecodeImagesReply(R"({"images":[{"aliases":[]}]})").ok());  // no name

  // purge_images and its answer.
  auto purge = ap::DecodeToAgent(
      ap::Encode(ap::WithRequestId(ap::PurgeImages{"", {"app1", "reg/lab/app:2"}, false}, "p-1")));
  ASSERT_TRUE(purge.ok()) << purge.status().message();
  EXPECT_EQ(Only<ap::PurgeImages>(purge).images,
            (std::vector<std::string>{"app1", "reg/lab/app:2"}));
  EXPECT_FALSE(Only<ap::PurgeImages>(purge).prune);
  auto purged = ap::DecodePurgeReply(ap::EncodeReply(
      ap::PurgeReply{{"app1"}, {"reg/lab/app:2: in use"}, 5000000000, {{"python", {}, 1}}}));
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(purged->removed, std::vector<std::string>{"app1"});
  EXPECT_EQ(purged->errors, std::vector<std::string>{"reg/lab/app:2: in use"});
  EXPECT_EQ(purged->freed, 5000000000);
  EXPECT_EQ(purged->images.size(), 1u);
}

TEST(AgentMessagesTest, UnknownFieldsAreIgnored) {
  auto d = ap::DecodeToAgent(
      R"({"type":"destroy_kernel","session_id":"00000000-0000-4000-8000-00000000000a","reason":"r","future":{"x":[1]}})");
  EXPECT_EQ(Only<ap::DestroyKernel>(d).session_id, "00000000-0000-4000-8000-00000000000a");
}

// Each of these once aborted a daemon (nlohmann's type_error escaped the WebSocket read);
// they are refused with a reason naming the field.
TEST(AgentMessagesTest, WronglyTypedFieldsAreRefusedNamingTheField) {
  struct Case {
    char const* text;
    char const* field;
  };
  for (
      auto const& c : std::vector<Case>{
          {R"({"type":"register","version":"1"})", "version"},
          {R"({"type":"register","version":2,"scaling_group":5})", "scaling_group"},
          {R"({"type":"register","version":2,"kernels":[1,2]})", "kernels[0]"},
          {R"({"type":"register","version":2,"slots":{"cpu":"-4"}})", "slots"},
          {R"({"type":"register","version":2,"slots":{"cpu":"1e400"}})", "slots"},
          {R"({"type":"register","version":2,"slots":{"cpu":"Infinity"}})", "slots.cpu"},
          {R"({"type":"register","version":2,"images":[{"name":"p","aliases":[3]}]})", "images[0]"},
          {R"({"type":"kernel_status","session_id":12,"status":"RUNNING"})", "session_id"},
          {R"({"type":"kernel_status","session_id":"00000000-0000-4000-8000-00000000000a","status":"DANCING"})",
           "status"},
          {R"({"type":"kernel_status","session_id":"00000000-0000-4000-8000-00000000000a","status":"BUILDING"})",
           "status"},
          {R"({"type":"response","request_id":7})", "request_id"},
          {R"({"type":"bgtask","task_id":7})", "task_id"},
          {R"({"type":"heartbeat","slots":[1]})", "slots"},
          {R"({"type":"register","version":2,"devices":[{"uuid":"G","shares":"-1"}]})",
           "devices[0]"},
          {R"({"type":"register","version":2,"device_policy":"random"})", "device_policy"},
          // Hardening: negative device indexes and memory.
          {R"({"type":"register","version":2,"devices":[{"uuid":"G","index":-1}]})", "devices[0]"},
          {R"({"type":"register","version":2,"devices":[{"uuid":"G","memory":-5}]})", "devices[0]"},
          {R"({"type":"kernel_status","session_id":"../x","status":"RUNNING"})", "session_id"},
          {R"({"type":"kernel_status","session_id":"00000000-0000-4000-8000-00000000000a",)"
           R"("status":"RUNNING","setup":{"network":"host","scratch":"disk","home_bytes":1,)"
           R"("tmp_bytes":1}})",
           "setup.network"},
          {R"({"type":"kernel_status","session_id":"00000000-0000-4000-8000-00000000000a",)"
           R"("status":"RUNNING","setup":{"network":"none","scratch":"disk","home_bytes":-1,)"
           R"("tmp_bytes":1}})",
           "setup.home_bytes"},
          {R"({"type":"heartbeat","stats":{"cpu_pct":101,"mem_used":1,"mem_total":2}})",
           "stats.cpu_pct"},
          {R"({"type":"heartbeat","stats":{"cpu_pct":1,"mem_used":-1,"mem_total":2}})",
           "stats.mem_used"},
          {R"({"type":"heartbeat","stats":{"cpu_pct":1,"mem_used":1,"mem_total":2,)"
           R"("core_pct":[1,"x"]}})",
           "stats.core_pct"},
      }) {
    auto d = ap::DecodeToManager(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr(std::string("'") + c.field + "'")) << c.text;
  }
  for (
      auto const& c : std::vector<Case>{
          {R"({"type":"create_kernel","session_id":5,"image":"python"})", "session_id"},
          // Hardening: the agent builds paths and cgroup names from session ids.
          {R"({"type":"create_kernel","session_id":"../../../x","image":"python"})", "session_id"},
          {R"({"type":"destroy_kernel","session_id":"00000000-0000-4000-8000-00000000000a/.."})",
           "session_id"},
          {R"({"type":"create_kernel","session_id":"00000000-0000-4000-8000-00000000000a","image":"p","environ":{"A":1}})",
           "environ.A"},
          {R"({"type":"create_kernel","session_id":"00000000-0000-4000-8000-00000000000a","image":"p","resources":{"cpu":"x"}})",
           "resources"},
          {R"({"type":"create_kernel","session_id":"00000000-0000-4000-8000-00000000000a","image":"p","devices":[{"slot":"cuda.shares",)"
           R"("uuid":"G","amount":"0"}]})",
           "devices"},
          {R"({"type":"create_kernel","session_id":"00000000-0000-4000-8000-00000000000a","image":"p","devices":{"a":1}})",
           "devices"},
          {R"({"type":"destroy_kernel","session_id":5})", "session_id"},
          {R"({"type":"registered","heartbeat_interval_ms":"5000"})", "heartbeat_interval_ms"},
          {R"({"type":"execute","request_id":"r","session_id":"00000000-0000-4000-8000-00000000000a","options":{"exec":1}})",
           "options.exec"},
          {R"({"type":"commit_kernel","request_id":"r","session_id":"00000000-0000-4000-8000-00000000000a","task_id":"t"})",
           "filename"},
          // Data streams: the id is 32 lowercase hex, the kind pty or tcp, sizes and ports sane.
          {R"({"type":"open_stream","stream_id":"../x","session_id":"00000000-0000-4000-8000-00000000000a","kind":"pty"})",
           "stream_id"},
          {R"({"type":"open_stream","stream_id":"0123456789abcdef0123456789abcdef","session_id":"00000000-0000-4000-8000-00000000000a","kind":"udp"})",
           "kind"},
          {R"({"type":"open_stream","stream_id":"0123456789abcdef0123456789abcdef","session_id":"00000000-0000-4000-8000-00000000000a","kind":"tcp","port":70000})",
           "port"},
          {R"({"type":"open_stream","stream_id":"0123456789abcdef0123456789abcdef","session_id":"00000000-0000-4000-8000-00000000000a","kind":"pty","rows":0})",
           "rows"},
      }) {
    auto d = ap::DecodeToAgent(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_THAT(d.status().message(), HasSubstr(std::string("'") + c.field + "'")) << c.text;
  }
}

TEST(AgentMessagesTest, TextThatIsNoMessageIsRefused) {
  for (char const* text : {"", "not json", "[1,2]", R"({"no":"type"})", R"({"type":3})"}) {
    EXPECT_FALSE(ap::DecodeToManager(text).ok()) << text;
    EXPECT_FALSE(ap::DecodeToAgent(text).ok()) << text;
  }
  auto unknown = ap::DecodeToManager(R"({"type":"create_kernel"})");
  ASSERT_FALSE(unknown.ok());  // a manager → agent type is no agent → manager message
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown message type"));
  EXPECT_FALSE(ap::DecodeCommitReply("[]").ok());
  EXPECT_FALSE(ap::DecodeRestartReply(R"({"ok":"yes"})").ok());
}

// Output travels framed (its bytes raw after a header): bytes that are not UTF-8, newlines and
// quotes arrive exactly as written, and frames whose sizes do not cover their bytes are refused.
TEST(AgentMessagesTest, OutputAndResponsesTravelFramedByteForByte) {
  std::string bytes = std::string("line \"one\"\n\xff\xfe\0 two\n", 18);
  ap::KernelOutput out{
      "3f2b8a9e-1111-4222-8333-444455556666", 42, {{"stdout", bytes}, {"stderr", "err\n"}}};
  std::string text = ap::Encode(ap::ToManager(out));
  ASSERT_NE(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.substr(text.find('\n') + 1), bytes + "err\n") << "the bytes follow raw";
  auto back = Only<ap::KernelOutput>(ap::DecodeToManager(text));
  EXPECT_EQ(back.offset, 42);
  ASSERT_EQ(back.chunks.size(), 2u);
  EXPECT_EQ(back.chunks[0].data, bytes);
  EXPECT_EQ(back.chunks[1].stream, "stderr");
  // Sizes that overrun or fall short of the bytes, a framed type that is not framed.
  std::string header = text.substr(0, text.find('\n') + 1);
  EXPECT_FALSE(ap::DecodeToManager(header + bytes).ok()) << "short";
  EXPECT_FALSE(ap::DecodeToManager(text + "x").ok()) << "bytes past the chunks";
  EXPECT_FALSE(ap::DecodeToManager(R"({"type":"heartbeat"})"
                                   "\nxyz")
                   .ok());
  EXPECT_FALSE(ap::DecodeToManager(R"({"type":"kernel_output","session_id":"3f2b8a9e-1111-4222-)"
                                   R"(8333-444455556666","chunks":[["stdout",-1]]})"
                                   "\n")
                   .ok());
  // A logs reply in a response: framed the same way, its result passed on untouched.
  ap::LogsReply reply;
  reply.ok = true;
  reply.offset = 7;
  reply.size = 100;
  reply.truncated = true;
  reply.chunks = {{"notice", "[bai: dropped]\n"}, {"stdout", bytes}};
  auto response = Only<ap::Response>(
      ap::DecodeToManager(ap::Encode(ap::ToManager(ap::Response{"r1", ap::EncodeReply(reply)}))));
  EXPECT_EQ(response.request_id, "r1");
  auto logs = ap::DecodeLogsReply(response.result_json);
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  EXPECT_EQ(logs->offset, 7);
  EXPECT_TRUE(logs->truncated);
  ASSERT_EQ(logs->chunks.size(), 2u);
  EXPECT_EQ(logs->chunks[1].data, bytes);
  // The runner's output: header line, bytes, newline; taken only once whole.
  std::string line = rp::Encode(rp::ToAgent(rp::Output{"stdout", "run1", bytes})) + "\n";
  std::string stream = line + rp::Encode(rp::ToAgent(rp::Finished{"run1", 3})) + "\n";
  std::size_t used = 0;
  for (std::size_t cut = 0; cut < line.size(); ++cut) {
    EXPECT_FALSE(rp::TakeToAgent(std::string_view(stream).substr(0, cut), used)) << cut;
  }
  auto first = rp::TakeToAgent(stream, used);
  ASSERT_TRUE(first && first->ok());
  EXPECT_EQ(used, line.size());
  EXPECT_EQ(std::get<rp::Output>(**first).data, bytes);
  auto second = rp::TakeToAgent(std::string_view(stream).substr(used), used);
  ASSERT_TRUE(second && second->ok());
  EXPECT_EQ(std::get<rp::Finished>(**second).exit_code, 3);
  // A size that does not end at a newline, and a size past the limit, are refused.
  std::string bad = R"({"type":"stdout","run_id":"r","size":2})"
                    "\nabc\n";
  auto refused = rp::TakeToAgent(bad, used);
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->ok());
  auto huge = rp::TakeToAgent(R"({"type":"stdout","run_id":"r","size":99999999999})"
                              "\n",
                              used);
  ASSERT_TRUE(huge);
  EXPECT_FALSE(huge->ok());
}

TEST(AgentMessagesTest, RegisterProofBindsSecretAgentAndNonce) {
  std::string secret(43, 's');
  auto proof = ap::RegisterProof("a1", secret, "n1");
  EXPECT_TRUE(ap::VerifyRegisterProof(proof, "a1", secret, "n1"));
  EXPECT_FALSE(ap::VerifyRegisterProof(proof, "a1", secret, "n2"));
  EXPECT_FALSE(ap::VerifyRegisterProof(proof, "a2", secret, "n1"));
  EXPECT_FALSE(ap::VerifyRegisterProof(proof, "a1", std::string(43, 't'), "n1"));
  EXPECT_FALSE(ap::VerifyRegisterProof(ap::RegisterProof("a1", secret, ""), "a1", secret, ""));
  EXPECT_NE(ap::MakeNonce(), ap::MakeNonce());
  EXPECT_EQ(ap::MakeNonce().size(), 32u);
}

TEST(RunnerMessagesTest, EveryMessageRoundTrips) {
  auto hello = Only<rp::Hello>(rp::DecodeToAgent(rp::Encode(rp::Hello{1, "python", 42})));
  EXPECT_EQ(hello.runtime, "python");
  EXPECT_EQ(hello.pid, 42);
  auto take = [](std::string line) {
    std::size_t used = 0;
    auto m = rp::TakeToAgent(line + "\n", used);
    EXPECT_TRUE(m.has_value());
    return m ? *m : StatusOr<rp::ToAgent>(Status(StatusCode::kInternal, "incomplete"));
  };
  auto out = Only<rp::Output>(take(rp::Encode(rp::Output{"stderr", "r", "x"})));
  EXPECT_EQ(out.stream, "stderr");
  EXPECT_EQ(out.data, "x");
  auto wait =
      Only<rp::WaitingInput>(rp::DecodeToAgent(rp::Encode(rp::WaitingInput{"r", "name? ", false})));
  EXPECT_EQ(wait.prompt, "name? ");
  EXPECT_EQ(Only<rp::Finished>(rp::DecodeToAgent(rp::Encode(rp::Finished{"r", 130}))).exit_code,
            130);
  EXPECT_EQ(
      Only<rp::RunnerStatus>(rp::DecodeToAgent(rp::Encode(rp::RunnerStatus{true, 2, "r"}))).queued,
      2);
  EXPECT_EQ(Only<rp::Query>(rp::DecodeToRunner(rp::Encode(rp::Query{"r", "1+1"}))).code, "1+1");
  auto batch =
      Only<rp::Batch>(rp::DecodeToRunner(rp::Encode(rp::Batch{"r", "", "make", "make test"})));
  EXPECT_EQ(batch.build, "make");
  EXPECT_EQ(batch.exec, "make test");
  EXPECT_EQ(Only<rp::Input>(rp::DecodeToRunner(rp::Encode(rp::Input{"r", "bob"}))).text, "bob");
  Only<rp::Interrupt>(rp::DecodeToRunner(rp::Encode(rp::Interrupt{})));
  Only<rp::StatusRequest>(rp::DecodeToRunner(rp::Encode(rp::StatusRequest{})));
  // A program's output that is not UTF-8 travels as it is, never a throw.
  EXPECT_EQ(Only<rp::Output>(take(rp::Encode(rp::Output{"stdout", "r", "\xff\xfe"}))).data,
            "\xff\xfe");
}

TEST(RunnerMessagesTest, MalformedLinesAreRefused) {
  EXPECT_FALSE(rp::DecodeToAgent(R"({"type":"finished","run_id":"r","exitCode":"0"})").ok());
  EXPECT_FALSE(rp::DecodeToAgent(R"({"type":"stdout","data":5})").ok());
  EXPECT_FALSE(rp::DecodeToRunner("[1,2]").ok());
  auto unknown = rp::DecodeToRunner(R"({"op":"pty"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown op pty"));
}

}  // namespace
}  // namespace bai::server
