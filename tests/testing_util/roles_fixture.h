// SPDX-License-Identifier: Apache-2.0
#pragma once
// The users a scoping test needs, one per role, as a `fixture load` document (written with real
// password hashes by LoadFixture): alice, a user and a member of the default project; bob, a
// user of no project; dadmin, an admin of `default` with an admin keypair; oadmin, the admin of
// a domain `other` (made too); radmin, an admin by role whose keypair is not flagged admin.
// Names, access keys and ids carry a prefix so that two tests' users never meet.

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace bai::testing_util {

/// The role users' names.
inline std::vector<std::string> const& RoleUsers() {
  static std::vector<std::string> const kUsers = {"alice", "bob", "dadmin", "oadmin", "radmin"};
  return kUsers;
}

/// The keypair RolesFixture(prefix, …) gives `name` (one of RoleUsers()).
inline std::pair<std::string, std::string> RoleKeys(std::string const& prefix,
                                                    std::string const& name) {
  std::string access = "AKIA";
  for (char c : prefix + name)
    access += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  access.resize(20, '0');
  std::string secret = name + "-secret-";
  secret.resize(40, '0');
  return {access, secret};
}

/// The document; `default_group` is the id of the default domain's `default` project; `tag`
/// (one hex digit) tells the users' ids apart from another test's.
inline std::string RolesFixture(std::string const& default_group, std::string const& prefix,
                                char tag) {
  std::string users, keypairs;
  char letter = 'a';
  for (auto const& name : RoleUsers()) {
    std::string uuid = std::string("00000000-0000-4000-8000-0000000000") + letter + tag;
    ++letter;
    std::string domain = name == "oadmin" ? "other" : "default";
    std::string role = name == "alice" || name == "bob" ? "user" : "admin";
    auto [access, secret] = RoleKeys(prefix, name);
    users += std::string(users.empty() ? "" : ",") + R"({"uuid": ")" + uuid +
             R"(", "username": ")" + prefix + name + R"(", "role": ")" + role + R"(", "email": ")" +
             prefix + name + R"(@example.com", "password": ")" + name +
             R"(-password", "domain_name": ")" + domain + R"("})";
    bool flagged = name == "dadmin" || name == "oadmin";
    keypairs += std::string(keypairs.empty() ? "" : ",") + R"({"access_key": ")" + access +
                R"(", "secret_key": ")" + secret + R"(", "user_id": ")" + uuid +
                R"(", "resource_policy": "default")" + (flagged ? R"(, "is_admin": true})" : "}");
  }
  std::string alice = std::string("00000000-0000-4000-8000-0000000000a") + tag;
  return R"({"domains": [{"name": "other"}], "users": [)" + users +
         R"(], "association_groups_users": [{"group_id": ")" + default_group +
         R"(", "user_id": ")" + alice + R"("}], "keypairs": [)" + keypairs + "]}";
}

}  // namespace bai::testing_util
