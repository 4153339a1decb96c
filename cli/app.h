// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <iosfwd>

namespace bai::cli {

/// Parses argv, runs the command and returns the process exit code.
int Main(int argc, char** argv, std::ostream& out, std::ostream& err, std::istream& in);

}  // namespace bai::cli
