// SPDX-License-Identifier: Apache-2.0
// bai-test-server: the verifying test server as a process, for trying `bai api` by hand.
// Prints its URL, then serves until killed.
#include "tests/testing_util/test_http_server.h"

#include <unistd.h>

#include <iostream>

int main() {
  bai::testing_util::TestHttpServer server(bai::testing_util::VerifyingHandler());
  std::cout << server.url() << std::endl;
  std::cerr << "access key " << bai::testing_util::kTestAccessKey << ", secret key "
            << bai::testing_util::kTestSecretKey << "\n";
  while (true) ::pause();
}
