// SPDX-License-Identifier: Apache-2.0
#pragma once
// Resource groups (24.09's scaling groups) with their associations to domains, projects and
// keypairs, resource presets, and the agent settings an administrator changes: the shell under
// their mutations (streams-admin-console.md §B.2).

#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/state/store.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

/// What modify_scaling_group changes.
struct ResourceGroupChanges {
  std::optional<std::string> description;
  std::optional<bool> is_active;
  std::optional<bool> is_public;
  std::optional<std::string> scheduler;
  std::optional<std::string> scheduler_opts;  ///< JSON text
  std::optional<std::string> driver_opts;     ///< JSON text
  std::optional<std::string> wsproxy_addr;    ///< "" clears it
  std::optional<std::string> wsproxy_api_token;
  std::optional<bool> use_host_network;
};

/// Who a resource group is associated with.
enum class AssociationKind { kDomain, kProject, kKeypair };

class ResourceGroupStore {
 public:
  explicit ResourceGroupStore(server::Database& db) : db_(db) {}

  /// kAlreadyExists: the name is taken.
  Status Create(ScalingGroupRecord const& group);
  /// kNotFound: no such group.
  Status Modify(std::string const& name, ResourceGroupChanges const& c);
  /// kNotFound; kFailedPrecondition while agents belong to it or sessions not ended use it.
  Status Delete(std::string const& name);
  /// Associates (or with `on` false dissociates) `group` with a domain name, project id or
  /// access key. kNotFound: no such group or target. Associating twice is not an error.
  Status Associate(AssociationKind kind, std::string const& group, std::string const& target,
                   bool on);
  /// Every association of the target.
  Status DissociateAll(AssociationKind kind, std::string const& target);
  /// The groups associated with the target directly (not through its domain or projects).
  StatusOr<std::vector<std::string>> AssociatedWith(AssociationKind kind,
                                                    std::string const& target);

  /// modify_agent: kNotFound for an unknown agent or group. Moving an agent holds both groups'
  /// scheduling scopes (its capacity leaves one and joins the other).
  Status ModifyAgent(std::string const& agent_id, std::optional<bool> schedulable,
                     std::optional<std::string> const& scaling_group);

 private:
  server::Database& db_;
};

class PresetStore {
 public:
  explicit PresetStore(server::Database& db) : db_(db) {}
  /// kAlreadyExists. `slots` is JSON object text (normalised by the caller).
  Status Create(std::string const& name, std::string const& slots,
                std::optional<std::string> const& shared_memory);
  /// kNotFound. Unset fields are kept.
  Status Modify(std::string const& name, std::optional<std::string> const& slots,
                std::optional<std::string> const& shared_memory);
  /// kNotFound.
  Status Delete(std::string const& name);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
