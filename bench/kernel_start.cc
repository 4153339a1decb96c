// SPDX-License-Identifier: Apache-2.0
// create → RUNNING latency (issue "Reference agent…", target: runc median within 2.5x a bare
// `runc run` of a bundle with the same rootfs, measured in the same run).
//
//   kernel_start [-n RUNS]      (root: runc containers)
//
// Starts two managers in-process: one with a `bai-agent --backend runc` process, one with an
// in-process dummy agent. One sample = `POST /session` (interactive, image python, not
// enqueue-only) sent → 201 with status RUNNING received, which the manager answers only after
// the agent reported RUNNING, i.e. after the kernel runner's handshake. The session is then
// destroyed (not timed). The baseline is `runc run` (create, start, exit, delete) of a bundle
// with the same rootfs and the same OCI config, whose process is /bin/true.
#include "bai/client.h"

#include "libbai/util/json_parse.h"
#include "server-reference/agent/agent.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/runc_backend.h"
#include "server-reference/common/exec/process.h"
#include "server-reference/manager/manager.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::map<std::string, std::string> ReadEnv(std::string const& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos && line[0] != '#') out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

struct Stats {
  double median_ms = 0, p95_ms = 0;
};

Stats Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  if (v.empty()) return s;
  s.median_ms = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p95_ms =
      v[std::min(v.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(v.size())))];
  return s;
}

struct Cluster {
  std::unique_ptr<bai::manager::Manager> manager;
  std::optional<bai::Client> client;
};

Cluster StartManager(std::string const& dir) {
  bai::manager::ManagerConfig config;
  config.data_dir = dir;
  config.listen_port = 0;
  auto m = bai::manager::Manager::Start(config);
  if (!m.ok()) {
    std::cerr << "manager: " << m.status().message() << "\n";
    std::exit(1);
  }
  Cluster c;
  c.manager = std::move(*m);
  auto env = ReadEnv(c.manager->bootstrap().credentials_file);
  bai::Options o;
  o.endpoints = {"http://127.0.0.1:" + std::to_string(c.manager->port())};
  o.access_key = env["BACKEND_ACCESS_KEY"];
  o.secret_key = env["BACKEND_SECRET_KEY"];
  auto client = bai::Client::Create(o);
  if (!client.ok()) std::exit(1);
  c.client = *client;
  return c;
}

bool WaitAgent(bai::manager::Manager& m, std::string const& id) {
  for (int i = 0; i < 400; ++i) {
    if (m.agents().Connected().count(id)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// One create → RUNNING sample in milliseconds; -1 on failure.
double CreateToRunning(bai::Client const& client, int i) {
  std::string name = "bench-" + std::to_string(i);
  json body = {{"name", name},
               {"image", "python"},
               {"type", "interactive"},
               {"config", {{"resources", {{"cpu", "0.5"}, {"mem", "268435456"}}}}}};
  bai::ApiRequest req{"POST", "/session"};
  req.body = body.dump();
  auto t0 = Clock::now();
  auto r = client.Send(req);
  auto t1 = Clock::now();
  if (!r.ok() || r->status != 201) {
    std::cerr << "create failed: " << (r.ok() ? r->body : r.status().message()) << "\n";
    return -1;
  }
  auto j = bai::internal::ParseJson(r->body).value_or(json::object());
  if (j.value("status", "") != "RUNNING") {
    std::cerr << "create answered " << r->body << "\n";
    return -1;
  }
  (void)client.Send({"DELETE", "/session/" + name});
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// The baseline: `runc run` of the same bundle with /bin/true, to completion.
double BareRuncRun(std::string const& runc_root, std::string const& bundle, int i) {
  std::string id = "bench-bare-" + std::to_string(getpid()) + "-" + std::to_string(i);
  bai::server::ProcessOptions o;
  o.capture = false;
  auto t0 = Clock::now();
  auto r = bai::server::RunProcess({"runc", "--root", runc_root, "run", "--bundle", bundle, id}, o);
  auto t1 = Clock::now();
  if (r.exit_code != 0) {
    std::cerr << "bare runc run failed (" << r.exit_code << ")\n";
    return -1;
  }
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-n" && i + 1 < argc) runs = std::max(3, std::atoi(argv[++i]));
  }
  if (geteuid() != 0) {
    std::cerr << "kernel_start: needs root (runc containers)\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/bai-kstart-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  std::string bin = (self.parent_path() / "bin").string();
  std::string agent_id = "kstart" + std::to_string(getpid());

  // runc cluster: the agent as its own process, as deployed.
  Cluster runc_cluster = StartManager(dir + "/m1");
  std::string agent_state = dir + "/agent";
  pid_t agent_pid = -1;
  {
    std::vector<std::string> args = {
        bin + "/bai-agent",
        "--manager",
        "http://127.0.0.1:" + std::to_string(runc_cluster.manager->port()),
        "--id",
        agent_id,
        "--cluster-secret-file",
        dir + "/m1/cluster-secret",
        "--backend",
        "runc",
        "--state-dir",
        agent_state,
        "--slots",
        "cpu=2,mem=4g",
        "--stop-kernels-on-exit"};
    std::vector<char*> a;
    for (auto& s : args) a.push_back(s.data());
    a.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, (dir + "/agent.log").c_str(), O_WRONLY | O_CREAT,
                                     0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&agent_pid, a[0], &fa, nullptr, a.data(), environ) != 0) return 1;
    posix_spawn_file_actions_destroy(&fa);
  }
  if (!WaitAgent(*runc_cluster.manager, agent_id)) {
    std::cerr << "the runc agent did not register; see " << dir << "/agent.log\n";
    return 1;
  }

  // dummy cluster: an in-process agent whose kernels start at once.
  Cluster dummy_cluster = StartManager(dir + "/m2");
  bai::agent::AgentOptions ao;
  ao.manager_url = "http://127.0.0.1:" + std::to_string(dummy_cluster.manager->port());
  ao.agent_id = "kstart-dummy";
  ao.cluster_secret = dummy_cluster.manager->cluster_secret();
  (void)bai::protocol::ParseSlotAssignment("cpu=2,mem=4g", ao.slots);
  bai::agent::DummyOptions dopts;
  dopts.prepare_delay = std::chrono::milliseconds(0);
  bai::agent::Agent dummy(ao, std::make_unique<bai::agent::DummyBackend>(dopts));
  dummy.Start();
  if (!dummy.WaitRegistered(std::chrono::seconds(10))) return 1;

  // The baseline bundle: the agent's own image and OCI config, process /bin/true.
  bai::agent::ImageStore images(agent_state + "/images");
  auto image = images.Find("python");
  if (!image.ok()) return 1;
  bai::agent::KernelSpec spec;
  spec.session_id = "bare";
  spec.image = "python";
  (void)bai::protocol::ParseSlotAssignment("cpu=0.5,mem=256m", spec.resources);
  bai::agent::RuncOptions ro;
  ro.agent_id = agent_id;
  ro.hook_path = bin + "/bai-agent";
  std::string bundle = dir + "/bare";
  fs::create_directories(bundle + "/run");
  auto config = json::parse(bai::agent::OciConfig(
      spec, *image, ro,
      {bundle, agent_state + "/" + agent_id + "/bin", "/bai/" + agent_id + "/bare"}));
  config["process"]["args"] = {"/bin/true"};
  std::ofstream(bundle + "/config.json") << config.dump();
  std::string bare_root = dir + "/bare-runc";

  // Interleaved, so that machine noise hits all three alike; one warm-up round first.
  std::vector<double> runc_ms, dummy_ms, bare_ms;
  for (int i = -1; i < runs; ++i) {
    double b = BareRuncRun(bare_root, bundle, i + 1);
    double r = CreateToRunning(*runc_cluster.client, i + 1);
    double d = CreateToRunning(*dummy_cluster.client, i + 1);
    if (b < 0 || r < 0 || d < 0) return 1;
    if (i < 0) continue;
    bare_ms.push_back(b);
    runc_ms.push_back(r);
    dummy_ms.push_back(d);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let teardown finish
  }
  Stats bare = Summarise(bare_ms), runc = Summarise(runc_ms), dum = Summarise(dummy_ms);
  std::printf("create -> RUNNING latency (%d runs each, interleaved, same run)\n", runs);
  std::printf("  %-34s %10s %10s %14s\n", "path", "median ms", "p95 ms", "median ratio");
  std::printf("  %-34s %10.1f %10.1f %13.2fx\n", "bare `runc run` (baseline)", bare.median_ms,
              bare.p95_ms, 1.0);
  std::printf("  %-34s %10.1f %10.1f %13.2fx\n", "bai runc: POST /session -> RUNNING",
              runc.median_ms, runc.p95_ms, runc.median_ms / bare.median_ms);
  std::printf("  %-34s %10.1f %10.1f %13.2fx\n", "bai dummy: POST /session -> RUNNING",
              dum.median_ms, dum.p95_ms, dum.median_ms / bare.median_ms);
  double ratio = runc.median_ms / bare.median_ms;
  std::printf("\nrunc start target %s: %.2fx the bare runc run (limit 2.50x)\n",
              ratio <= 2.5 ? "met" : "MISSED", ratio);

  dummy.Stop();
  kill(agent_pid, SIGTERM);
  int st = 0;
  waitpid(agent_pid, &st, 0);
  runc_cluster.manager.reset();
  dummy_cluster.manager.reset();
  std::error_code ec;
  fs::remove_all(dir, ec);
  for (char const* c :
       {"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids"}) {
    fs::remove(fs::path("/sys/fs/cgroup") / c / "bai" / agent_id, ec);
  }
  return 0;
}
