// SPDX-License-Identifier: Apache-2.0
#pragma once
// The three kinds of resource policies in the database (keypair, user, project; 24.09's
// KeyPairResourcePolicy, UserResourcePolicy, ProjectResourcePolicy): the shell under their
// mutations and queries. What each limit means when sessions are scheduled is the scheduler's
// (scheduler/scheduling.h); this file only stores them.

#include "bai/protocol/admin_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bai::manager {

enum class PolicyKind { kKeypair, kUser, kProject };

/// Column → value, columns only from the kind's field table.
using PolicyValues = std::vector<std::pair<std::string, server::SqlValue>>;

/// The columns a mutation's `props` set, checked and converted (pure): integers, slot maps
/// ("8g" → bytes, as create_domain), "LIMITED"/"UNLIMITED", JSON objects. Unknown fields are
/// ignored (the GraphQL schema already refused them); null means "not given". A bad value:
/// kInvalidArgument naming the field.
StatusOr<PolicyValues> PolicyValuesFromInput(PolicyKind kind, nlohmann::json const& props);

/// A JSONString input holding slot amounts ({"cpu": 2, "mem": "8g"}; JSON text or the object
/// itself), normalised as 24.09's ResourceSlot.from_user_input stores them: exact decimal
/// strings, sizes in bytes. The JSON object text, or kInvalidArgument naming `field`.
StatusOr<std::string> SlotMapInput(nlohmann::json const& value, std::string const& field);

class PolicyStore {
 public:
  explicit PolicyStore(server::Database& db) : db_(db) {}

  /// Every keypair policy (`name` given: that one only), by name.
  StatusOr<std::vector<protocol::KeypairResourcePolicy>> KeypairPolicies(
      std::optional<std::string> const& name = std::nullopt);
  /// The keypair policy of `access_key`'s keypair.
  StatusOr<std::optional<protocol::KeypairResourcePolicy>> KeypairPolicyOf(
      std::string const& access_key);
  /// User (kUser) or project (kProject) policies.
  StatusOr<std::vector<protocol::ScopeResourcePolicy>> ScopePolicies(
      PolicyKind kind, std::optional<std::string> const& name = std::nullopt);

  /// kAlreadyExists: the name is taken.
  Status Create(PolicyKind kind, std::string const& name, PolicyValues const& values);
  /// kNotFound: no such policy.
  Status Modify(PolicyKind kind, std::string const& name, PolicyValues const& values);
  /// kNotFound; kFailedPrecondition while keypairs, users or projects use it.
  Status Delete(PolicyKind kind, std::string const& name);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
