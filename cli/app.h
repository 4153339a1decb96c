// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/transport.h"

#include <iosfwd>
#include <memory>

namespace bai::cli {

/// Parses argv, runs the command and returns the process exit code. `transport`, when given,
/// carries every request instead of libcurl (tests: bai/mocks/mock_transport.h; ADR 25).
int Main(int argc, char** argv, std::ostream& out, std::ostream& err, std::istream& in,
         std::shared_ptr<Transport> transport = nullptr);

}  // namespace bai::cli
