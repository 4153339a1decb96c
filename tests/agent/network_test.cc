// SPDX-License-Identifier: Apache-2.0
// Kernels on a network (bridge mode), for real: runc kernels on the agent's bridge, its
// nftables table, NAT to an "outside" host. Label `root`.
//
// Everything happens inside network namespaces this test makes (DECISIONS.md "Containers"):
// the whole process (in-process manager, bai-agent, bai, runc and its kernels) moves into a
// namespace of its own before the first test, and the outside is one more namespace behind a
// veth, at 198.18.0.2 (the benchmarking range, RFC 2544), serving a file over HTTP. Kernels take
// addresses from 198.19.0.0/24. Nothing on the host's own network is touched, and every namespace
// disappears with the process.
#include "server-reference/agent/network_plan.h"
#include "tests/agent/runc_fixture.h"
#include "tests/testing_util/private_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

namespace bai {
namespace {

using namespace runc_testing;  // NOLINT(build/namespaces)
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kBridge[] = "baitest0";
constexpr char kPool[] = "198.19.0.0/24";
constexpr char kGateway[] = "198.19.0.1";
constexpr char kOutside[] = "198.18.0.2";
constexpr char kContent[] = "hello from outside\n";

std::string Tool(char const* name) { return testing_util::SystemTool(name); }
using testing_util::PrivateNetwork;
auto* const kPrivateNetwork = ::testing::AddGlobalTestEnvironment(new PrivateNetwork);

// Whether a TCP connection to address:port opens within `timeout_ms`.
bool CanConnect(std::string const& address, int port, int timeout_ms = 2000) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, address.c_str(), &to.sin_addr);
  bool open = false;
  if (connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    open = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{s, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    open = poll(&p, 1, timeout_ms) == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
           err == 0;
  }
  close(s);
  return open;
}

// Python run in a kernel: probe("host", port) prints "open" or why not.
constexpr char kProbe[] =
    "import socket\n"
    "def probe(host, port):\n"
    "    try:\n"
    "        socket.create_connection((host, port), timeout=3).close()\n"
    "        return 'open'\n"
    "    except Exception as e:\n"
    "        return type(e).__name__\n";

class NetworkTest : public RuncTest {
 protected:
  static void SetUpTestSuite() {
    if (!PrivateNetwork::entered) return;
    // The outside: a namespace of its own behind a veth, serving kContent over HTTP.
    www_ = new testing_util::TempDir();
    std::ofstream(www_->path() + "/hello.txt") << kContent;
    outside_ns_ = new testing_util::BackgroundProcess({Tool("unshare"), "-n", "sleep", "3600"});
    std::string pid = std::to_string(outside_ns_->pid());
    for (int i = 0; i < 100; ++i) {  // unshare has made the namespace once sleep runs
      if (ReadFile("/proc/" + pid + "/comm") == "sleep\n") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<std::vector<std::string>> setup = {
        {Tool("ip"), "link", "add", "bout0", "type", "veth", "peer", "name", "eth0", "netns", pid},
        {Tool("ip"), "addr", "add", "198.18.0.1/24", "dev", "bout0"},
        {Tool("ip"), "link", "set", "bout0", "up"},
        {Tool("nsenter"), "-t", pid, "-n", "ip", "addr", "add", std::string(kOutside) + "/24",
         "dev", "eth0"},
        {Tool("nsenter"), "-t", pid, "-n", "ip", "link", "set", "eth0", "up"}};
    for (auto const& cmd : setup) {
      auto r = testing_util::RunProcess(cmd);
      if (r.exit_code != 0) {
        outside_error_ = cmd[0] + " " + cmd[1] + " " + cmd[2] + ": " + r.out + r.err;
        return;
      }
    }
    outside_ = new testing_util::BackgroundProcess({Tool("nsenter"), "-t", pid, "-n", "sh", "-c",
                                                    "exec python3 -u -m http.server 8080 --bind " +
                                                        std::string(kOutside) + " --directory " +
                                                        www_->path() + " 2>&1"});
    if (outside_->WaitForLine("Serving HTTP").empty()) outside_error_ = outside_->Transcript();
  }
  static void TearDownTestSuite() {
    delete outside_;
    delete outside_ns_;
    delete www_;
    outside_ = outside_ns_ = nullptr;
    www_ = nullptr;
  }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (label 'root'; CI runs it as root)";
    ASSERT_TRUE(PrivateNetwork::entered) << PrivateNetwork::error;
    ASSERT_TRUE(outside_error_.empty()) << outside_error_;
    RuncTest::SetUp();
  }

  std::vector<std::string> AgentArgs() const override {
    return {"--network-pool", kPool, "--network-bridge", kBridge};
  }

  // A kernel's address and veth, from what the agent keeps for it.
  json KernelNetwork(std::string const& session_id) {
    return internal::ParseJson(ReadFile(KernelDir(session_id) + "/kernel.json"))
        .value_or(json())
        .value("network", json());
  }

  // Query mode in a named session (created with `create` flags on first use).
  testing_util::ProcessResult Py(std::string const& name, std::string const& code,
                                 std::vector<std::string> create = {}) {
    std::vector<std::string> args{"run", "python", "--name", name};
    args.insert(args.end(), create.begin(), create.end());
    args.insert(args.end(), {"-c", std::string(kProbe) + code});
    return Bai(args);
  }

  static inline testing_util::TempDir* www_ = nullptr;
  static inline testing_util::BackgroundProcess* outside_ns_ = nullptr;
  static inline testing_util::BackgroundProcess* outside_ = nullptr;
  static inline std::string outside_error_;
};

constexpr char kFetch[] =
    "import urllib.request\n"
    "print(urllib.request.urlopen('http://198.18.0.2:8080/hello.txt', timeout=10).read()"
    ".decode(), end='')\n";

TEST_F(NetworkTest, ABridgeKernelReachesTheOutsideThroughTheAgentsNat) {
  // No --network: the agent's default (DECISIONS.md, "Containers") is the bridge.
  auto r =
      Bai({"run", "python", "-c",
           std::string(kFetch) + "import socket; print([n for _, n in socket.if_nameindex()])"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, std::string(kContent) + "['lo', 'eth0']\n");
  // The outside saw the host's address on its link, not the kernel's: masqueraded.
  std::string line = outside_->WaitForLine("GET /hello.txt");
  EXPECT_EQ(line.rfind("198.18.0.1 ", 0), 0u) << line;
  // The agent's rules are a table of their own.
  auto table = testing_util::RunProcess({Tool("nft"), "list", "table", "inet", "bai_baitest0"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("masquerade"));
}

TEST_F(NetworkTest, NoneGivesOnlyLoopbackAsSessionOrAgentDefault) {
  std::string code =
      "import socket, urllib.request\n"
      "print([n for _, n in socket.if_nameindex()])\n"
      "try:\n"
      "    urllib.request.urlopen('http://198.18.0.2:8080/hello.txt', timeout=5)\n"
      "    print('reached')\n"
      "except Exception:\n"
      "    print('unreachable')\n";
  auto none = Bai({"run", "--network", "none", "python", "-c", code});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "['lo']\nunreachable\n");
  // An agent started with --network none: its sessions that do not choose get loopback only,
  // and one that asks for the bridge still gets it.
  agent_.reset();
  StartAgent({"--network", "none"});
  auto plain = Bai({"run", "python", "-c", code});
  EXPECT_EQ(plain.out, "['lo']\nunreachable\n") << plain.err;
  auto asked = Bai({"run", "--network", "bridge", "python", "-c", kFetch});
  EXPECT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_EQ(asked.out, kContent);
  // A mode that does not exist is refused before anything is queued.
  auto bad = Bai({"api", "POST", "/session", "-d",
                  R"({"name":"badnet","image":"python","type":"interactive",)"
                  R"("config":{"network":"host"}})"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.out + bad.err, HasSubstr("config.network"));
}

TEST_F(NetworkTest, OnlyTheOwnerThroughTheManagerReachesAKernelsPort) {
  // B serves HTTP: the built-in image's `http` app on its port 8000.
  std::string b = Interactive("netb", R"({"cpu":1,"mem":"256m"})", {{"network", "bridge"}});
  ASSERT_FALSE(b.empty());
  auto started = Bai({"api", "POST", "/session/netb/start-service", "-d", R"({"app":"http"})"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  json net = KernelNetwork(b);
  std::string b_address = net.value("address", "");
  ASSERT_FALSE(b_address.empty()) << net.dump();
  // The app listens on the kernel's loopback only; a server of the user's own listens on every
  // interface, eth0 too (B reaches itself there): what keeps others out is the network.
  auto listening = Py("netb",
                      "import subprocess, time\n"
                      "subprocess.Popen(['python3', '-m', 'http.server', '8001', '--bind', "
                      "'0.0.0.0'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, "
                      "start_new_session=True)\n"
                      "for _ in range(50):\n"
                      "    if probe('" +
                          b_address +
                          "', 8001) == 'open': break\n"
                          "    time.sleep(0.2)\n"
                          "print(probe('" +
                          b_address + "', 8001))\n");
  ASSERT_EQ(listening.out, "open\n") << listening.err;

  // The owner, through the manager: the app answers (so what fails below is the network).
  int port = 0;
  {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    close(s);
  }
  std::vector<std::string> app_args{testing_util::BinPath("bai"),       "app", "netb", "http", "-b",
                                    "127.0.0.1:" + std::to_string(port)};
  {
    testing_util::BackgroundProcess app(app_args, env_);
    ASSERT_THAT(app.WaitForLine("http://"), HasSubstr(std::to_string(port))) << app.Transcript();
    auto fetched = testing_util::RunProcess(
        {Tool("python3"), "-c",
         "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:" +
             std::to_string(port) + "/', timeout=10).status)"});
    EXPECT_EQ(fetched.out, "200\n") << fetched.err;
  }

  // A stranger's keypair: not through the manager.
  auto stranger = manager_->store().SignUp("default", "eve@example.com", "eve", "x", "Eve");
  ASSERT_TRUE(stranger.ok()) << stranger.status().message();
  auto eve_env = env_;
  eve_env["BACKEND_ACCESS_KEY"] = stranger->first;
  eve_env["BACKEND_SECRET_KEY"] = stranger->second;
  eve_env["BAI_CONFIG_DIR"] = dir_.path() + "/cfg-eve";
  std::vector<std::string> eve_args = app_args;
  eve_args.back() = "127.0.0.1:0";
  auto eve = testing_util::RunProcess(eve_args, eve_env);
  EXPECT_NE(eve.exit_code, 0);
  EXPECT_THAT(eve.err, HasSubstr("No such session")) << eve.out;

  // A host process: not to the kernel's address (the host opens no connection to a kernel).
  EXPECT_FALSE(CanConnect(b_address, 8001));

  // A second session: not to B, not to the host's ports (the agent's, the manager's, any
  // service on the host's addresses), while the outside stays reachable from the same kernel.
  int host_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  socklen_t len = sizeof any;
  ASSERT_EQ(bind(host_listener, reinterpret_cast<sockaddr*>(&any), sizeof any), 0);
  ASSERT_EQ(listen(host_listener, 8), 0);
  getsockname(host_listener, reinterpret_cast<sockaddr*>(&any), &len);
  int host_port = ntohs(any.sin_port);
  ASSERT_TRUE(CanConnect(kGateway, host_port)) << "the host's own listener must be there";
  auto a = Py("neta",
              "print(probe('198.18.0.2', 8080), probe('" + b_address + "', 8001), probe('" +
                  kGateway + "', " + std::to_string(host_port) + "), probe('" + kGateway + "', " +
                  std::to_string(manager_->port()) + "), probe('127.0.0.1', " +
                  std::to_string(host_port) + "))",
              {"--network", "bridge"});
  close(host_listener);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  // Dropped, so a timeout (the host's loopback is the kernel's own: nothing listens there).
  EXPECT_EQ(a.out, "open TimeoutError TimeoutError TimeoutError ConnectionRefusedError\n");
  Bai({"rm", "neta"});
  Bai({"rm", "netb"});
}

TEST_F(NetworkTest, AKernelsNetworkGoesWithItAndSurvivesAnAgentRestart) {
  auto c = Py("netc", "print('up')", {"--network", "bridge"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string c_id = Info("netc").value("sessionId", "");
  ASSERT_FALSE(c_id.empty()) << Info("netc").dump();
  json net = KernelNetwork(c_id);
  std::string host_if = net.value("host_if", "");
  ASSERT_FALSE(host_if.empty()) << net.dump();
  EXPECT_EQ(testing_util::RunProcess({Tool("ip"), "link", "show", "dev", host_if}).exit_code, 0);

  // The agent dies; its kernel keeps running, on its network, and is re-adopted.
  EXPECT_EQ(agent_->Stop(SIGKILL), 128 + SIGKILL);
  agent_.reset();
  StartAgent();
  auto again = Py("netc", kFetch);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, kContent);
  // A new kernel does not get the re-adopted one's address.
  auto d = Py("netd", "print('up')", {"--network", "bridge"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  std::string d_id = Info("netd").value("sessionId", "");
  EXPECT_NE(KernelNetwork(d_id).value("address", ""), net.value("address", "x"));

  // Destroyed: its veth goes with it.
  ASSERT_EQ(Bai({"rm", "netc"}).exit_code, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = testing_util::RunProcess({Tool("ip"), "link", "show", "dev", host_if}).exit_code != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << host_if << " outlived its kernel";
  Bai({"rm", "netd"});
}

}  // namespace
}  // namespace bai
