// SPDX-License-Identifier: Apache-2.0
#include "cli/app.h"

#include <iostream>

int main(int argc, char** argv) {
  return bai::cli::Main(argc, argv, std::cout, std::cerr, std::cin);
}
