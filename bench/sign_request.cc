// SPDX-License-Identifier: Apache-2.0
// Prints the headers of a signed request, for load generators that replay one request
// (a signature stays valid for 15 minutes).
// Usage: bai_sign_request METHOD TARGET HOST ACCESS_KEY SECRET_KEY [CONTENT_TYPE]
#include "bai/protocol/api_version.h"
#include "bai/protocol/signing.h"

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::cerr << "usage: bai_sign_request METHOD TARGET HOST ACCESS_KEY SECRET_KEY "
                 "[CONTENT_TYPE]\n";
    return 2;
  }
  bai::protocol::SigningInput in;
  in.method = argv[1];
  in.request_target = argv[2];
  in.host = argv[3];
  in.date = bai::protocol::FormatRequestDate(std::chrono::system_clock::now());
  in.api_version = bai::protocol::kCurrentApiVersion.ToString();
  if (argc == 7) in.content_type = argv[6];
  auto sig = bai::protocol::Sign(in, argv[5]);
  if (!sig.ok()) {
    std::cerr << sig.status().message() << "\n";
    return 1;
  }
  if (in.content_type) std::cout << "Content-Type: " << *in.content_type << "\n";
  std::cout << "Date: " << in.date << "\n"
            << "X-BackendAI-Version: " << in.api_version << "\n"
            << "Authorization: " << bai::protocol::AuthorizationHeaderValue(argv[4], *sig, in.hash)
            << "\n";
  return 0;
}
