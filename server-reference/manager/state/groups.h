// SPDX-License-Identifier: Apache-2.0
#pragma once
// Projects ("groups") in the database: the shell under administration's group mutations and
// queries, with their membership.

#include "bai/protocol/admin_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

/// What modify_group changes: each field given is set; the rest is kept.
struct GroupChanges {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<bool> is_active;
  std::optional<std::string> domain_name;
  std::optional<std::string> total_resource_slots;  ///< JSON object text
  std::optional<std::string> allowed_vfolder_hosts;
  std::optional<std::string> integration_id;  ///< "" clears it
  std::optional<std::string> resource_policy;
  /// Membership: users added ("add") or removed ("remove").
  std::string user_update_mode;
  std::vector<std::string> user_uuids;
};

class GroupStore {
 public:
  explicit GroupStore(server::Database& db) : db_(db) {}

  StatusOr<std::optional<protocol::Group>> Get(std::string const& id);
  /// Projects of `domain` (empty: every domain) named `name` (empty: any), active ones only
  /// when `is_active` says so; by domain, then name.
  StatusOr<std::vector<protocol::Group>> List(std::string const& domain, std::string const& name,
                                              std::optional<bool> is_active);
  /// The new project's id. kAlreadyExists when its domain has one of that name; kNotFound when
  /// the domain does not exist.
  StatusOr<std::string> Create(protocol::Group const& group);
  /// kNotFound: no such project; kAlreadyExists: the new name is taken in its domain;
  /// kInvalidArgument: a user to add is not of the project's domain or does not exist.
  Status Modify(std::string const& id, GroupChanges const& changes);
  /// Deletes a project without running sessions (kFailedPrecondition, 24.09's sentence) and
  /// without folders (kFailedPrecondition: bai never deletes data as a side effect); its ended
  /// sessions and memberships go with it.
  Status Purge(std::string const& id);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
