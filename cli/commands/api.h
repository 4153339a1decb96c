// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

#include <string>
#include <vector>

namespace bai::cli {

struct ApiOptions {
  std::string method;
  std::string path;
  std::string data;                  ///< -d: JSON text, @FILE, or @- for stdin
  std::vector<std::string> headers;  ///< -H "Name: value"
  bool anonymous = false;            ///< --anonymous: send unsigned
};

/// `bai api METHOD PATH`: one raw signed request; prints the response body. A non-2xx answer
/// prints the problem on stderr and exits with the code for its type.
int RunApi(ApiOptions const& options, Context& ctx);

/// `bai api METHOD PATH …`.
void AddApiCommands(CommandSet& set);
}  // namespace bai::cli
