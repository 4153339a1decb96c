// SPDX-License-Identifier: Apache-2.0
// Submits a batch job, waits for it to end and exits with its exit code, the way a CI job
// would. Usage: batch_submit IMAGE COMMAND [ARG…]   (settings as `bai` reads them)
#include <bai/bai.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: batch_submit IMAGE COMMAND [ARG...]\n";
    return 2;
  }
  auto config = bai::ResolveConfig({});
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 125;
  }
  auto options = config->ToOptions();
  auto client = options.ok() ? bai::Client::Create(*options) : options.status();
  if (!client.ok()) {
    std::cerr << client.status().message() << "\n";
    return 125;
  }
  bai::SessionClient sessions(*client);

  bai::SessionCreateRequest request;
  request.image = argv[1];
  request.type = "batch";
  request.startup_command = bai::ShellJoin(std::vector<std::string>(argv + 2, argv + argc));
  request.enqueue_only = true;  // answer at once; we follow the job ourselves
  auto created = sessions.Create(request);
  if (!created.ok()) {
    std::cerr << "cannot submit: " << created.status().message() << "\n";
    return 125;
  }
  std::cerr << "submitted " << created->name << " (" << created->id << ")\n";

  bai::WaitOptions wait;
  wait.on_info = [](bai::SessionInfo const& info) {
    if (!info.status_info.empty())
      std::cerr << info.status.text << ": " << info.status_info << "\n";
  };
  auto end = sessions.WaitForEnd(created->id, wait);
  if (!end.ok()) {
    std::cerr << "lost the job: " << end.status().message() << "\n";
    return 125;
  }
  if (auto logs = sessions.Logs(created->id); logs.ok()) std::cout << *logs;
  if (!end->exit_code) {
    std::cerr << "ended without an exit code: " << end->status << " " << end->reason << "\n";
    return 126;
  }
  return static_cast<int>(*end->exit_code & 255);
}
