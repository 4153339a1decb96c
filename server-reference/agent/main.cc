// SPDX-License-Identifier: Apache-2.0
// bai-agent: runs kernels for a bai-manager.
//   bai-agent --manager http://127.0.0.1:8081 --id agent-1 --cluster-secret-file FILE
//             [--backend dummy] [--slots cpu=4,mem=8g] [--scaling-group default]
#include "bai/protocol/resource.h"

#include "libbai/internal/json_codec.h"
#include "server-reference/agent/agent.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/common/agent_protocol.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"bai-agent: runs kernels for a bai-manager", "bai-agent"};
  bai::agent::AgentOptions options;
  std::string secret_file, slots, backend = "dummy";
  int prepare_ms = 100, run_ms = 200, exit_code = 0;
  app.add_option("--manager", options.manager_url, "Manager URL (http://HOST:PORT)");
  app.add_option("--id", options.agent_id, "Agent id (unique in the cluster)")->required();
  app.add_option("--cluster-secret-file", secret_file, "The manager's cluster-secret file")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--backend", backend, "Kernel backend")->check(CLI::IsMember({"dummy"}));
  app.add_option("--slots", slots, "Capacity, e.g. cpu=4,mem=8g (default: this machine)");
  app.add_option("--scaling-group", options.scaling_group, "Resource group to join");
  app.add_option("--images", options.images, "Images this agent offers")->delimiter(',');
  app.add_option("--dummy-prepare-ms", prepare_ms, "dummy: start-up time of a kernel");
  app.add_option("--dummy-run-ms", run_ms, "dummy: run time of a batch job");
  app.add_option("--dummy-exit-code", exit_code, "dummy: exit code without a trailing `exit N`");
  CLI11_PARSE(app, argc, argv);

  if (!bai::server::agent_protocol::ValidAgentId(options.agent_id)) {
    std::cerr << "bai-agent: invalid --id (1-64 of letters, digits, '.', '_', '-')\n";
    return 2;
  }
  std::ifstream in(secret_file);
  std::getline(in, options.cluster_secret);
  if (options.cluster_secret.size() < 32) {
    std::cerr << "bai-agent: " << secret_file << " does not hold a cluster secret\n";
    return 1;
  }
  if (slots.empty()) {
    options.slots_json = bai::agent::DiscoverSlots(1LL << 30);
  } else {
    bai::protocol::ResourceSlots parsed;
    if (auto s = bai::protocol::ParseSlotAssignment(slots, parsed); !s.ok()) {
      std::cerr << "bai-agent: --slots: " << s.message() << "\n";
      return 2;
    }
    options.slots_json = bai::internal::SlotsToJson(parsed).dump();
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  bai::agent::DummyOptions dummy;
  dummy.prepare_delay = std::chrono::milliseconds(prepare_ms);
  dummy.run_time = std::chrono::milliseconds(run_ms);
  dummy.default_exit_code = exit_code;
  bai::agent::Agent agent(options, std::make_unique<bai::agent::DummyBackend>(dummy));
  agent.Start();
  std::cout << "bai-agent " << options.agent_id << " connecting to " << options.manager_url
            << std::endl;
  int sig = 0;
  sigwait(&signals, &sig);
  agent.Stop();
  return 0;
}
