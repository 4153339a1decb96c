// SPDX-License-Identifier: Apache-2.0
// Both daemons against hostile or broken peers on the control channel: malformed messages are
// refused and logged, the process and (where it can go on) the connection survive, a replayed
// handshake cannot displace the live agent, long-LOST agents are forgotten.
#include "server-reference/common/wire/agent_protocol.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace bai::manager {
namespace {

namespace ap = server::agent_protocol;
using testing_util::TempDir;

// Polls until `done` holds (or 10 s).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 200; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// A WebSocket without a socket: records what the registry sends.
class FakeSocket : public server::WebSocket {
 public:
  bool Send(std::string text) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back(std::move(text));
    return !closed_;
  }
  void Close(int, std::string) override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  std::vector<ap::ToAgent> Received() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ap::ToAgent> out;
    for (auto const& t : sent_) {
      auto m = ap::DecodeToAgent(t);
      EXPECT_TRUE(m.ok()) << t;
      if (m.ok()) out.push_back(*m);
    }
    return out;
  }
  template <class T>
  std::vector<T> All() {
    std::vector<T> out;
    for (auto const& m : Received()) {
      if (auto const* t = std::get_if<T>(&m)) out.push_back(*t);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> sent_;
  bool closed_ = false;
};

// One agent connection driven by hand through the registry's handlers.
struct FakeLink {
  FakeLink(AgentRegistry& registry, std::string agent_id)
      : id(std::move(agent_id)), handlers(registry.Handlers(id)) {
    handlers.on_open(socket);
  }
  ~FakeLink() {
    if (handlers.on_close) handlers.on_close(1000);
  }
  void Send(std::string const& text) { handlers.on_message(socket, std::string(text)); }
  std::string Nonce() {
    auto c = socket->All<ap::Challenge>();
    return c.empty() ? "" : c.front().nonce;
  }
  ap::Register RegisterFor(std::string const& secret) {
    ap::Register r;
    r.version = ap::kVersion;
    r.proof = ap::RegisterProof(id, secret, Nonce());
    EXPECT_TRUE(protocol::ParseSlotAssignment("cpu=2,mem=2g", r.slots).ok());
    r.images = {{"python", {}}};
    return r;
  }

  std::string id;
  std::shared_ptr<FakeSocket> socket = std::make_shared<FakeSocket>();
  server::WebSocketHandlers handlers;
};

class AgentProtocolTest : public testing_util::ManagerFixture {
 protected:
  bool ManagerAnswers() {
    return testing_util::RawHttp(manager_->port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n").status ==
           200;
  }
};

TEST_F(AgentProtocolTest, ManagerRefusesMalformedRegistrationsAndStaysUp) {
  for (char const* bad : {
           R"({"type":"register","version":"1"})",
           R"({"type":"register","version":2,"scaling_group":5})",
           R"({"type":"register","version":2,"kernels":[1,2]})",
           R"({"type":"register","version":2,"slots":{"cpu":"-4"}})",
           R"({"type":"register","version":2,"slots":{"mem":"1e400"}})",
       }) {
    FakeLink link(manager_->agents(), "hostile");
    ASSERT_FALSE(link.Nonce().empty());
    link.Send(bad);
    EXPECT_EQ(link.socket->All<ap::ErrorReport>().size(), 1u) << bad;
    EXPECT_TRUE(link.socket->closed()) << bad;
    EXPECT_TRUE(manager_->agents().Connected().empty());
  }
  EXPECT_TRUE(ManagerAnswers());
  auto rows = manager_->store().db().Query("SELECT 1 FROM agents WHERE id = 'hostile'");
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());  // nothing half-registered
}

TEST_F(AgentProtocolTest, ManagerRefusesMalformedMessagesOfARegisteredAgentAndKeepsIt) {
  FakeLink link(manager_->agents(), "agent-y");
  link.Send(ap::Encode(ap::ToManager(link.RegisterFor(manager_->cluster_secret()))));
  ASSERT_EQ(link.socket->All<ap::Registered>().size(), 1u);
  for (char const* bad : {
           R"({"type":"kernel_status","session_id":12,"status":"RUNNING"})",
           R"({"type":"response","request_id":7})",
           R"({"type":"bgtask","task_id":7})",
           R"({"type":"heartbeat","slots":{"cpu":"-1"}})",
           "not json at all",
       }) {
    link.Send(bad);
  }
  EXPECT_EQ(link.socket->All<ap::ErrorReport>().size(), 5u);
  EXPECT_FALSE(link.socket->closed());
  EXPECT_EQ(manager_->agents().Connected().count("agent-y"), 1u);
  EXPECT_TRUE(ManagerAnswers());
  // The bad heartbeat changed nothing.
  auto rows =
      manager_->store().db().Query("SELECT available_slots FROM agents WHERE id = 'agent-y'");
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  EXPECT_THAT(rows->front().Text(0), ::testing::HasSubstr("\"cpu\":\"2\""));
}

TEST_F(AgentProtocolTest, HeartbeatsKeepTheAgentAliveAndCarryCapacityChanges) {
  FakeLink link(manager_->agents(), "agent-h");
  link.Send(ap::Encode(ap::ToManager(link.RegisterFor(manager_->cluster_secret()))));
  ASSERT_EQ(link.socket->All<ap::Registered>().size(), 1u);
  auto& db = manager_->store().db();
  auto row = [&db] {
    auto rows = db.Query("SELECT available_slots, status, last_heartbeat FROM agents WHERE id = ?",
                         {std::string("agent-h")});
    EXPECT_TRUE(rows.ok() && rows->size() == 1u);
    return rows.ok() && rows->size() == 1u ? rows->front() : server::SqlRow({});
  };
  ASSERT_TRUE(db.Exec("UPDATE agents SET last_heartbeat = 'earlier' WHERE id = 'agent-h'").ok());
  protocol::ResourceSlots same;
  ASSERT_TRUE(protocol::ParseSlotAssignment("cpu=2,mem=2g", same).ok());
  link.Send(ap::Encode(ap::ToManager(ap::Heartbeat{same, std::nullopt})));
  EXPECT_NE(row().Text(2), "earlier") << "the same slots: still a heartbeat";
  EXPECT_THAT(row().Text(0), ::testing::HasSubstr("\"cpu\":\"2\""));
  protocol::ResourceSlots fewer;
  ASSERT_TRUE(protocol::ParseSlotAssignment("cpu=1,mem=2g", fewer).ok());
  ASSERT_TRUE(db.Exec("UPDATE agents SET last_heartbeat = 'earlier' WHERE id = 'agent-h'").ok());
  link.Send(ap::Encode(ap::ToManager(ap::Heartbeat{fewer, std::nullopt})));
  EXPECT_THAT(row().Text(0), ::testing::HasSubstr("\"cpu\":\"1\"")) << "new capacity stored";
  EXPECT_NE(row().Text(2), "earlier");
  EXPECT_EQ(row().Text(1), "ALIVE");
  link.Send(ap::Encode(ap::ToManager(ap::Heartbeat{})));
  EXPECT_THAT(row().Text(0), ::testing::HasSubstr("\"cpu\":\"1\"")) << "no slots: kept";
  // The node's load is kept for the agent's live_stat; a heartbeat without it keeps the last.
  auto load = [&db] {
    auto rows = db.Query("SELECT live_stat FROM agents WHERE id = 'agent-h'");
    return rows.ok() && rows->size() == 1u ? rows->front().OptText(0) : std::nullopt;
  };
  EXPECT_FALSE(load());
  link.Send(ap::Encode(
      ap::ToManager(ap::Heartbeat{std::nullopt, ap::NodeStats{12.5, {25, 0}, 1024, 4096}})));
  ASSERT_TRUE(load());
  auto stored = nlohmann::json::parse(*load());
  EXPECT_EQ(stored["cpu_pct"], 12.5);
  EXPECT_EQ(stored["mem_used"], 1024);
  link.Send(ap::Encode(ap::ToManager(ap::Heartbeat{})));
  EXPECT_TRUE(load()) << "kept";
}

TEST_F(AgentProtocolTest, AReplayedHandshakeCannotRegisterOrDisplaceTheLiveAgent) {
  FakeLink live(manager_->agents(), "agent-r");
  auto registration = ap::Encode(ap::ToManager(live.RegisterFor(manager_->cluster_secret())));
  live.Send(registration);
  ASSERT_EQ(manager_->agents().Connected().count("agent-r"), 1u);
  // Someone who captured the handshake header and the registration replays both: the upgrade
  // passes the header check, but the registration answers another connection's challenge.
  FakeLink replay(manager_->agents(), "agent-r");
  replay.Send(registration);
  EXPECT_TRUE(replay.socket->closed());
  EXPECT_TRUE(replay.socket->All<ap::Registered>().empty());
  EXPECT_FALSE(live.socket->closed());
  // Messages on the unregistered connection are refused, not taken as the agent's.
  FakeLink sneaky(manager_->agents(), "agent-r");
  sneaky.Send(ap::Encode(ap::ToManager(ap::KernelStatus{
      "00000000-0000-4000-8000-0000000000c9", protocol::KernelStatus::kRunning, {}, "", {}, {}})));
  EXPECT_EQ(sneaky.socket->All<ap::ErrorReport>().size(), 1u);
  EXPECT_EQ(manager_->agents().Connected().count("agent-r"), 1u);
  // The agent itself reconnecting (a new challenge, answered) does replace the old link.
  FakeLink again(manager_->agents(), "agent-r");
  again.Send(ap::Encode(ap::ToManager(again.RegisterFor(manager_->cluster_secret()))));
  EXPECT_EQ(again.socket->All<ap::Registered>().size(), 1u);
  EXPECT_TRUE(live.socket->closed());
}

TEST(AgentForgetTest, LongLostAgentsHoldingNothingAreForgotten) {
  TempDir dir;
  ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = testing_util::TestDatabase();
  config.listen_port = 0;
  config.agent_heartbeat_timeout = 1;
  config.agent_lost_grace = 1;
  config.agent_lost_forget = 1;
  auto m = Manager::Start(config);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto& manager = **m;
  {
    FakeLink link(manager.agents(), "fleeting");
    link.Send(ap::Encode(ap::ToManager(link.RegisterFor(manager.cluster_secret()))));
    ASSERT_EQ(manager.agents().Connected().count("fleeting"), 1u);
  }
  auto status = [&] {
    auto rows = manager.store().db().Query("SELECT status FROM agents WHERE id = 'fleeting'");
    return rows.ok() && !rows->empty() ? rows->front().Text(0) : std::string("gone");
  };
  EXPECT_TRUE(Eventually([&] { return status() == "LOST"; }));
  EXPECT_TRUE(Eventually([&] { return status() == "gone"; }));
}

// A stand-in manager: accepts one agent connection, challenges it, and lets the test send it
// anything and read what it answers.
class FakeManager {
 public:
  FakeManager() {
    server::HttpServerOptions o;
    o.port = 0;
    auto s = server::HttpServer::Start(o, [this](std::shared_ptr<server::Exchange> ex) {
      server::WebSocketHandlers h;
      h.on_open = [this](std::shared_ptr<server::WebSocket> const& ws) {
        std::lock_guard<std::mutex> lock(mu_);
        ++connections_;
        socket_ = ws;
        ws->Send(ap::Encode(ap::Challenge{"nonce-" + std::to_string(connections_)}));
      };
      h.on_message = [this](std::shared_ptr<server::WebSocket> const&, std::string const& t) {
        std::lock_guard<std::mutex> lock(mu_);
        received_.push_back(t);
        cv_.notify_all();
      };
      ex->AcceptWebSocket(std::move(h));
    });
    EXPECT_TRUE(s.ok());
    server_ = std::move(*s);
  }
  ~FakeManager() {
    // The socket belongs to the server's I/O context: let go of it before the server ends.
    {
      std::lock_guard<std::mutex> lock(mu_);
      socket_.reset();
    }
    server_.reset();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void Send(std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    if (socket_) socket_->Send(std::move(text));
  }
  /// The next message the agent sends that is a T (others are skipped), or nullopt after 5 s.
  template <class T>
  std::optional<T> Next() {
    std::unique_lock<std::mutex> lock(mu_);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      while (!received_.empty()) {
        auto m = ap::DecodeToManager(received_.front());
        received_.pop_front();
        if (m.ok() && std::holds_alternative<T>(*m)) return std::get<T>(*m);
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) return std::nullopt;
    }
  }
  int connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> received_;
  std::shared_ptr<server::WebSocket> socket_;
  int connections_ = 0;
  std::unique_ptr<server::HttpServer> server_;
};

TEST(AgentDaemonTest, AgentRefusesMalformedManagerMessagesAndKeepsWorking) {
  FakeManager manager;
  std::string secret(43, 'c');
  agent::AgentOptions o;
  o.manager_url = manager.Url();
  o.agent_id = "agent-z";
  o.cluster_secret = secret;
  ASSERT_TRUE(protocol::ParseSlotAssignment("cpu=1,mem=1g", o.slots).ok());
  agent::DummyOptions d;
  d.prepare_delay = std::chrono::milliseconds(10);
  agent::Agent a(o, std::make_unique<agent::DummyBackend>(d));
  a.Start();
  auto reg = manager.Next<ap::Register>();
  ASSERT_TRUE(reg);
  EXPECT_TRUE(ap::VerifyRegisterProof(reg->proof, "agent-z", secret, "nonce-1"));
  manager.Send(ap::Encode(ap::Registered{5000, "default"}));
  ASSERT_TRUE(a.WaitRegistered(std::chrono::seconds(5)));
  for (char const* bad : {
           R"({"type":"create_kernel","session_id":12,"image":"python"})",
           R"({"type":"destroy_kernel","session_id":12})",
           R"({"type":"registered","heartbeat_interval_ms":"5000"})",
           R"({"type":"execute","request_id":"r","session_id":"s","options":{"exec":[]}})",
           // Hardening: ids the agent would build paths and cgroup names from.
           R"({"type":"create_kernel","session_id":"../../../x","image":"python"})",
           R"({"type":"create_kernel","session_id":"a/b","image":"python"})",
           R"({"type":"destroy_kernel","session_id":".."})",
           "[1,2,3]",
       }) {
    manager.Send(bad);
    auto error = manager.Next<ap::ErrorReport>();
    ASSERT_TRUE(error) << bad;
  }
  // Still the same connection, and still doing its work.
  ap::CreateKernel create;
  create.session_id = "00000000-0000-4000-8000-0000000000b1";
  create.image = "python";
  manager.Send(ap::Encode(create));
  auto started = manager.Next<ap::KernelStatus>();
  ASSERT_TRUE(started);
  EXPECT_EQ(started->session_id, "00000000-0000-4000-8000-0000000000b1");
  EXPECT_EQ(manager.connections(), 1);
  EXPECT_TRUE(a.Registered());
  // Hardening (new user): destroying a kernel the agent does not run (it failed to start and was
  // reported) is answered TERMINATED at once; it was ignored, and `bai rm` of a session that
  // failed to start left it TERMINATING, holding its slots, until the agent restarted.
  manager.Send(ap::Encode(ap::DestroyKernel{"00000000-0000-4000-8000-0000000000b2", ""}));
  auto gone = manager.Next<ap::KernelStatus>();
  for (int i = 0; i < 5 && gone && gone->session_id != "00000000-0000-4000-8000-0000000000b2";
       ++i) {
    gone = manager.Next<ap::KernelStatus>();  // b1's own progress comes first
  }
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->session_id, "00000000-0000-4000-8000-0000000000b2");
  EXPECT_EQ(gone->status, protocol::KernelStatus::kTerminated);
  EXPECT_EQ(gone->reason, "user-requested");
  a.Stop();
}

}  // namespace
}  // namespace bai::manager
