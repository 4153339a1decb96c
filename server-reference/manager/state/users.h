// SPDX-License-Identifier: Apache-2.0
#pragma once
// Users and their keypairs in the database: the shell under administration's user and keypair
// mutations and queries (24.09's semantics; streams-admin-console.md §B.2).

#include "bai/protocol/admin_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/graphql/minilang.h"
#include "server-reference/manager/state/page.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

/// What create_user stores. The password arrives hashed.
struct NewUser {
  protocol::User user;  ///< uuid, created_at, main_access_key and groups are filled in
  std::string password_hash;
  std::vector<std::string> group_ids;  ///< projects to join (those of other domains are skipped)
};

/// What modify_user changes: each field given is set; the rest is kept.
struct UserChanges {
  std::optional<std::string> username;
  std::optional<std::string> password_hash;
  std::optional<bool> need_password_change;
  std::optional<std::string> full_name;
  std::optional<std::string> description;
  std::optional<std::string> status;  ///< is_active maps here (active / inactive)
  std::optional<std::string> domain_name;
  std::optional<std::string> role;
  std::optional<std::vector<std::string>> allowed_client_ip;
  std::optional<bool> totp_activated;
  std::optional<std::string> resource_policy;
  std::optional<bool> sudo_session_enabled;
  std::optional<std::string> main_access_key;
  /// Replaces the user's projects (within the user's domain) when given.
  std::optional<std::vector<std::string>> group_ids;

  bool Empty() const {
    return !username && !password_hash && !need_password_change && !full_name && !description &&
           !status && !domain_name && !role && !allowed_client_ip && !totp_activated &&
           !resource_policy && !sudo_session_enabled && !main_access_key && !group_ids;
  }
};

/// What create_keypair and modify_keypair set.
struct KeypairChanges {
  std::optional<bool> is_active;
  std::optional<bool> is_admin;
  std::optional<std::string> resource_policy;
  std::optional<std::int64_t> rate_limit;
};

class UserStore {
 public:
  explicit UserStore(server::Database& db) : db_(db) {}

  StatusOr<std::optional<protocol::User>> ByEmail(std::string const& email);
  StatusOr<std::optional<protocol::User>> ByUuid(std::string const& uuid);
  /// One page of users; conditions over `u` (users). Default order: created_at, email.
  StatusOr<Page<protocol::User>> List(ListQuery const& q);
  /// The fields user_list filters and orders by, over List's query.
  static graphql::ColumnMap const& Columns();
  /// Narrows List's query to members of the project `group_id`.
  static void WhereMemberOf(ListQuery& q, std::string const& group_id);

  /// Creates the user, its main keypair (the default keypair policy, admin when the role is),
  /// its memberships (plus the domain's model-store project, if any). The new user and its
  /// keypair's secret. kAlreadyExists: the email or username is taken; kNotFound: no such
  /// domain or resource policy.
  StatusOr<std::pair<protocol::User, protocol::KeyPair>> Create(NewUser const& u);
  /// kNotFound: no such user; kInvalidArgument: a main key that is not the user's;
  /// kAlreadyExists: the username is taken. A role change makes the main keypair admin (or
  /// not) as 24.09 does.
  Status Modify(std::string const& email, UserChanges const& c);
  /// 24.09's delete_user: status "deleted", every keypair inactive.
  Status SoftDelete(std::string const& email);
  /// Removes the user and what is theirs. kFailedPrecondition (nothing removed) while they have
  /// sessions not ended or own folders (bai never deletes data as a side effect: delete or
  /// move the folders first).
  Status Purge(std::string const& email);

 private:
  StatusOr<std::optional<protocol::User>> One(char const* where, std::string const& value);
  server::Database& db_;
};

class KeypairStore {
 public:
  explicit KeypairStore(server::Database& db) : db_(db) {}

  StatusOr<std::optional<protocol::KeyPair>> Get(std::string const& access_key);
  /// One page of keypairs; conditions over `k` (keypairs) and `u` (their users).
  StatusOr<Page<protocol::KeyPair>> List(ListQuery const& q);
  static graphql::ColumnMap const& Columns();
  /// The sessions not ended (TERMINATED, CANCELLED, ERROR) of each of `access_keys` (at most
  /// a page's 1,000); keys with none are absent.
  StatusOr<std::map<std::string, std::int64_t>> ActiveSessionCounts(
      std::vector<std::string> const& access_keys);

  /// A new keypair for the user of `email`. kNotFound: no such user or policy.
  StatusOr<protocol::KeyPair> Create(std::string const& email, KeypairChanges const& c);
  /// kNotFound: no such keypair or policy.
  Status Modify(std::string const& access_key, KeypairChanges const& c);
  /// kNotFound; kFailedPrecondition while sessions not ended use the keypair, or it is its
  /// user's main keypair (24.09 refuses that too).
  Status Delete(std::string const& access_key);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
