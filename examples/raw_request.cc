// SPDX-License-Identifier: Apache-2.0
// Sends one signed request with the settings `bai` uses (profiles, BACKEND_* variables) and
// prints the answer. Usage: raw_request [PATH]   (default: /auth?echo=hello)
#include <bai/bai.h>

#include <iostream>

int main(int argc, char** argv) {
  auto config = bai::ResolveConfig({});
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
  auto options = config->ToOptions();
  if (!options.ok()) {
    std::cerr << options.status().message() << "\n";
    return 1;
  }
  auto client = bai::Client::Create(*options);
  if (!client.ok()) {
    std::cerr << client.status().message() << "\n";
    return 1;
  }
  auto response = client->Send({"GET", argc > 1 ? argv[1] : "/auth?echo=hello"});
  if (!response.ok()) {
    std::cerr << response.status().message() << "\n";
    return 1;
  }
  if (auto status = bai::CheckResponse(*response); !status.ok()) {
    std::cerr << "HTTP " << response->status << ": " << status.message() << "\n";
    return 1;
  }
  std::cout << response->body << "\n";
  return 0;
}
