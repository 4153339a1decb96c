// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/version.h"

#include "bai/protocol/api_version.h"
#include "bai/version.h"

#include <CLI/CLI.hpp>

#include <ostream>

namespace bai::cli {

int RunVersion(Context& ctx) {
  std::string api = protocol::kCurrentApiVersion.ToString();
  if (ctx.json()) {
    // Hand-written on purpose: this path stays free of JSON library start-up work.
    ctx.out() << R"({"bai":")" << BAI_VERSION_STRING << R"(","libbai":")" << LibraryVersion()
              << R"(","api_version":")" << api << R"(","exit_code":0})"
              << "\n";
  } else {
    ctx.out() << "bai " << BAI_VERSION_STRING << " (libbai " << LibraryVersion() << ", API " << api
              << ")\n";
  }
  return 0;
}

void AddVersionCommands(CommandSet& set) {
  auto* version = set.root().add_subcommand("version", "Print the version of bai and libbai");
  set.OnRun(version, [&ctx = set.ctx()] { return RunVersion(ctx); });
}
}  // namespace bai::cli
