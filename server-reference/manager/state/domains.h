// SPDX-License-Identifier: Apache-2.0
#pragma once
// Domains in the database: the shell under administration's domain mutations and queries.

#include "bai/protocol/admin_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

/// What modify_domain changes: each field given (non-null) is set; the rest is kept.
struct DomainChanges {
  std::optional<std::string> name;  ///< a rename
  std::optional<std::string> description;
  std::optional<bool> is_active;
  std::optional<std::string> total_resource_slots;  ///< JSON object text
  std::optional<std::string> allowed_vfolder_hosts;
  std::optional<std::vector<std::string>> allowed_docker_registries;
  std::optional<std::string> integration_id;
};

class DomainStore {
 public:
  explicit DomainStore(server::Database& db) : db_(db) {}

  StatusOr<std::optional<protocol::Domain>> Get(std::string const& name);
  /// Every domain (`is_active`: only those), by name.
  StatusOr<std::vector<protocol::Domain>> List(std::optional<bool> is_active);
  /// kAlreadyExists when the name is taken.
  Status Create(protocol::Domain const& domain);
  /// kNotFound when there is no such domain; kAlreadyExists when a rename's name is taken.
  Status Modify(std::string const& name, DomainChanges const& changes);
  /// Deletes a domain that holds nothing: kFailedPrecondition (24.09's message) while it has
  /// running sessions, users or projects; kNotFound when there is none.
  Status Purge(std::string const& name);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
