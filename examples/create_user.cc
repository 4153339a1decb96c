// SPDX-License-Identifier: Apache-2.0
// Creates a user (and so its main keypair) and a second keypair for it, as a superadmin would
// with AdminClient, and prints the keys once.
// Usage: create_user EMAIL [DOMAIN]   (the password is read from stdin)
#include <bai/bai.h>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: create_user EMAIL [DOMAIN]  (password on stdin)\n";
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
  bai::NewUserRequest request;
  request.email = argv[1];
  if (argc > 2) request.domain_name = argv[2];
  if (!std::getline(std::cin, request.password) || request.password.empty()) {
    std::cerr << "no password on stdin\n";
    return 2;
  }
  auto user = admin.CreateUser(request);
  if (!user.ok()) {
    std::cerr << user.status().message() << "\n";
    return 1;
  }
  std::cout << "user " << user->email << " (" << user->uuid << ") in " << user->domain_name
            << ", main access key " << user->main_access_key << "\n";
  auto second = admin.CreateKeypair(user->email, "default", 1000);
  if (!second.ok()) {
    std::cerr << second.status().message() << "\n";
    return 1;
  }
  std::cout << "second keypair " << second->access_key << " " << second->secret_key << "\n";
  auto keys = admin.Keypairs(user->email);
  if (!keys.ok()) {
    std::cerr << keys.status().message() << "\n";
    return 1;
  }
  std::cout << keys->size() << " keypairs\n";
  return 0;
}
