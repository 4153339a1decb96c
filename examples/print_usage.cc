// SPDX-License-Identifier: Apache-2.0
// Prints what each project's sessions used over a period, as a superadmin would with
// AdminClient: CPU time, memory peak and I/O per session, and the project's totals.
// Usage: print_usage START END [PROJECT_ID]   (dates as 2026-11-01)
#include <bai/bai.h>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: print_usage START END [PROJECT_ID]  (dates as 2026-11-01)\n";
    return 2;
  }
  auto config = bai::ResolveConfig({});
  auto options = config.ok() ? config->ToOptions() : config.status();
  auto client = options.ok() ? bai::Client::Create(*options) : options.status();
  if (!client.ok()) {
    std::cerr << client.status().message() << "\n";
    return 1;
  }
  bai::AdminClient admin(*client);
  auto projects = admin.Usage(argv[1], argv[2], argc > 3 ? argv[3] : "");
  if (!projects.ok()) {
    std::cerr << projects.status().message() << "\n";
    return 1;
  }
  for (auto const& p : *projects) {
    std::printf("project %s (%s), %zu sessions\n", p.project_name.c_str(), p.domain_name.c_str(),
                p.sessions.size());
    for (auto const& s : p.sessions) {
      auto const& u = s.total_usage;
      std::printf("  %-20s %-24s cpu %.1fs  mem peak %lld B  read %lld B  written %lld B  %s\n",
                  s.session_name.c_str(), s.user_email.c_str(), u.cpu_used / 1000,
                  static_cast<long long>(u.mem_used), static_cast<long long>(u.io_read),
                  static_cast<long long>(u.io_write), s.status.c_str());
    }
    std::printf("  total cpu %.1fs, allocated %.1f cores\n", p.total_usage.cpu_used / 1000,
                p.total_usage.cpu_allocated);
  }
  return 0;
}
