// SPDX-License-Identifier: Apache-2.0
#pragma once
// Administration over `POST /admin/gql` (streams-admin-console.md §B): domains, projects,
// users, keypairs and keypair resource policies, with the typed objects of
// bai/protocol/admin_wire.h (one codec with the manager). A mutation the server refuses
// (`{ok: false, msg}`) is an error Status carrying its message: kPermissionDenied for a role
// refusal, kNotFound for "no matching …", kAlreadyExists for a name or email taken,
// kFailedPrecondition for other integrity errors and
// refusals of purges, kInvalidArgument for the rest.

#include "bai/client.h"
#include "bai/export.h"
#include "bai/protocol/admin_wire.h"
#include "bai/protocol/cluster_wire.h"
#include "bai/protocol/session_wire.h"
#include "bai/protocol/usage_wire.h"
#include "bai/status.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai {

/// A new user: create_user's props. The main keypair is made by the server.
struct NewUserRequest {
  std::string email;
  std::string password;
  std::string username;  ///< "" = the email
  std::string full_name;
  std::string domain_name = "default";
  std::string role = "user";
  std::string resource_policy = "default";  ///< a user resource policy
  std::vector<std::string> project_ids;
  bool need_password_change = false;
};

/// modify_user's props: each field given changes.
struct UserUpdate {
  std::optional<std::string> password;
  std::optional<std::string> full_name;
  std::optional<std::string> role;
  std::optional<std::string> status;  ///< active, inactive
  std::optional<std::string> domain_name;
  std::optional<std::string> resource_policy;
  std::optional<bool> need_password_change;
  std::optional<std::vector<std::string>> project_ids;  ///< replaces the memberships
};

/// modify_domain's props: each field given changes.
struct DomainUpdate {
  std::optional<std::string> description;
  std::optional<bool> is_active;
  std::optional<std::string> total_resource_slots;  ///< JSON object text
  /// The registries its sessions' images may come from (empty: any; see docs/conformance.md).
  std::optional<std::vector<std::string>> allowed_docker_registries;
};

/// Which users to list (each narrows; empty: any).
struct UserFilter {
  std::string domain_name;
  std::string project_id;
  std::string status;
};

class BAI_EXPORT AdminClient {
 public:
  explicit AdminClient(Client client) : client_(std::move(client)) {}

  StatusOr<std::vector<protocol::Domain>> Domains() const;
  StatusOr<protocol::Domain> CreateDomain(protocol::Domain const& domain) const;
  StatusOr<protocol::Domain> ModifyDomain(std::string const& name,
                                          DomainUpdate const& update) const;
  /// Soft (inactive) unless `purge` (which the server refuses while the domain has users,
  /// projects or sessions).
  Status DeleteDomain(std::string const& name, bool purge) const;

  /// Projects of `domain_name` ("": the caller's, or every domain for a superadmin).
  StatusOr<std::vector<protocol::Group>> Projects(std::string const& domain_name = "") const;
  StatusOr<protocol::Group> CreateProject(protocol::Group const& project) const;
  /// By id; soft unless `purge`.
  Status DeleteProject(std::string const& id, bool purge) const;

  /// Every user matching `filter`, fetched a page at a time.
  StatusOr<std::vector<protocol::User>> Users(UserFilter const& filter = {}) const;
  /// The same users as one JSON array of the server's objects, passed through undecoded (what
  /// `-o json` prints: 10,000 users are 5 MB, and decoding them costs more than fetching).
  StatusOr<std::string> UsersJson(UserFilter const& filter = {}) const;
  /// The user of `email` ("": the caller); nullopt when there is none (or it is not visible).
  StatusOr<std::optional<protocol::User>> User(std::string const& email = "") const;
  StatusOr<protocol::User> CreateUser(NewUserRequest const& request) const;
  StatusOr<protocol::User> ModifyUser(std::string const& email, UserUpdate const& update) const;
  /// Soft (status deleted, keypairs inactive) unless `purge`.
  Status DeleteUser(std::string const& email, bool purge) const;

  /// Keypairs of `email` ("": every keypair the caller may see). Secrets are empty where the
  /// caller may not read them.
  StatusOr<std::vector<protocol::KeyPair>> Keypairs(std::string const& email = "") const;
  /// A new keypair for the user of `email`, with its secret (shown once).
  StatusOr<protocol::KeyPair> CreateKeypair(std::string const& email,
                                            std::string const& resource_policy = "default",
                                            std::int64_t rate_limit = 10000,
                                            bool is_admin = false) const;
  Status SetKeypairActive(std::string const& access_key, bool active) const;
  Status SetKeypairPolicy(std::string const& access_key, std::string const& policy) const;
  Status DeleteKeypair(std::string const& access_key) const;

  /// Lets a domain (kind "domain", by name), project ("project", by id) or keypair ("keypair",
  /// by access key) use resource group `group` (`on` false: no longer).
  Status AssociateResourceGroup(std::string const& group, std::string const& kind,
                                std::string const& target, bool on) const;
  /// The resource groups associated with a domain directly (superadmins).
  StatusOr<std::vector<std::string>> ResourceGroupsOfDomain(std::string const& domain) const;

  StatusOr<std::vector<protocol::KeypairResourcePolicy>> KeypairPolicies() const;
  /// Creates it with every field of `policy`.
  StatusOr<protocol::KeypairResourcePolicy> CreateKeypairPolicy(
      protocol::KeypairResourcePolicy const& policy) const;
  /// Sets every field of `policy` on the policy of its name.
  Status ModifyKeypairPolicy(protocol::KeypairResourcePolicy const& policy) const;
  Status DeleteKeypairPolicy(std::string const& name) const;

  /// User (`user` true) or project resource policies: how many folders an owner may have and
  /// the quota of all its folders together (max_quota_scope_size).
  StatusOr<std::vector<protocol::ScopeResourcePolicy>> ScopePolicies(bool user) const;
  /// Creates it with every field of `policy` (a project's: its two limits).
  Status CreateScopePolicy(protocol::ScopeResourcePolicy const& policy, bool user) const;
  /// Sets every field of `policy` on the policy of its name.
  Status ModifyScopePolicy(protocol::ScopeResourcePolicy const& policy, bool user) const;
  Status DeleteScopePolicy(std::string const& name, bool user) const;

  /// Whose dotfiles: the caller's own (both empty; any user), a project's (`project`, an id or
  /// a name in `domain` or the caller's domain) or a domain's (`domain` alone).
  struct DotfileOwner {
    std::string project;
    std::string domain;
  };
  StatusOr<std::vector<protocol::Dotfile>> Dotfiles(DotfileOwner const& owner = {}) const;
  /// Creates the dotfile, or with `replace` changes an existing one (kNotFound when there is
  /// none); a project's and a domain's need an admin.
  Status PutDotfile(protocol::Dotfile const& dotfile, bool replace,
                    DotfileOwner const& owner = {}) const;
  Status DeleteDotfile(std::string const& path, DotfileOwner const& owner = {}) const;

  /// Session templates: the caller's own, or with `all` every one an admin reaches.
  StatusOr<std::vector<protocol::SessionTemplateInfo>> Templates(bool all = false) const;
  /// One template as the server writes it: "yaml" or "json" text ({template, name, …}).
  StatusOr<std::string> TemplateText(std::string const& id, std::string const& format) const;
  /// Stores the templates of `payload` (YAML or JSON: a template, or a list of {name,
  /// template}) in `project` (empty: "default"); their ids.
  StatusOr<std::vector<std::string>> CreateTemplates(std::string const& payload,
                                                     std::string const& project = "") const;
  /// Replaces a template with the one of `payload`.
  Status UpdateTemplate(std::string const& id, std::string const& payload) const;
  Status DeleteTemplate(std::string const& id) const;
  /// Queues a session from a template: `overrides` are create fields that win over the
  /// template's (name, startupCommand, config.resources…). Answers at once (enqueueOnly).
  StatusOr<protocol::SessionCreateResult> CreateFromTemplate(
      std::string const& id, std::map<std::string, std::string> const& overrides = {}) const;

  // --- the cluster: images, agents, presets (superadmins change them) ---

  /// The images the ALIVE agents offer, one per name and architecture, with their aliases.
  StatusOr<std::vector<protocol::ImageEntry>> Images() const;
  /// Rescans images: every container registry's and every agent's store, or only the registry
  /// `registry` names; the background task's id (follow it with SessionClient::FollowTask: one
  /// step per registry and per agent).
  StatusOr<std::string> RescanImages(std::string const& registry = "") const;
  /// purge_images (25.4's): removes `images` (names, aliases or registry references) from the
  /// store of agent `agent_id` where no kernel uses them, and with `prune` the layers no image
  /// needs; a background task's id (follow it as a rescan's). Managers before 25.4 lack it.
  StatusOr<std::string> PurgeImages(std::string const& agent_id,
                                    std::vector<std::string> const& images,
                                    bool prune = true) const;

  /// Container registries (24.09's legacy GraphQL by hostname, which 23.09 serves too).
  StatusOr<std::vector<protocol::ContainerRegistryEntry>> Registries() const;
  /// What a registry add or update sets; unset fields are kept (update).
  struct RegistryProps {
    std::optional<std::string> url, type, project, username, password;
    std::optional<bool> ssl_verify;
  };
  Status CreateRegistry(std::string const& hostname, RegistryProps const& props) const;
  Status ModifyRegistry(std::string const& hostname, RegistryProps const& props) const;
  Status DeleteRegistry(std::string const& hostname) const;
  Status AliasImage(std::string const& alias, std::string const& target,
                    std::string const& architecture = "x86_64") const;
  Status DealiasImage(std::string const& alias, std::string const& architecture = "x86_64") const;
  /// forget_image: the manager forgets a registry image a rescan found (a reference or an
  /// alias), with the aliases of it; what agents pulled stays. kNotFound when no rescan found
  /// it; an agent's own image (host, imported) is refused in words.
  Status ForgetImage(std::string const& reference,
                     std::string const& architecture = "x86_64") const;
  /// clear_images: the manager forgets every image a rescan found in registry `registry`.
  Status ClearImages(std::string const& registry) const;
  /// `GET /manager/status`: the managers on the database and, for a superadmin, the cluster
  /// at a glance (database, sessions and agents by status, the queue by reason).
  StatusOr<protocol::ManagerStatus> ManagerStatus() const;
  /// Every agent the manager knows (ALIVE and LOST).
  StatusOr<std::vector<protocol::AgentEntry>> Agents() const;
  /// Whether the scheduler may place new sessions on the agent (its running ones stay).
  Status SetAgentSchedulable(std::string const& id, bool schedulable) const;
  StatusOr<std::vector<protocol::ResourcePreset>> Presets() const;
  /// `slots_json`: {"cpu": "2", "mem": "4g"}; `shared_memory`: "64m", "1g" or "" for none.
  Status CreatePreset(std::string const& name, std::string const& slots_json,
                      std::string const& shared_memory = "") const;
  Status DeletePreset(std::string const& name) const;

  /// What sessions used from `start` to `end` (dates "2026-11-01" or "20261101", both
  /// included; at most 100 days), of one project when `project_id` is given: GET
  /// /resource/usage/period (superadmins).
  StatusOr<std::vector<protocol::ProjectUsage>> Usage(std::string const& start,
                                                      std::string const& end,
                                                      std::string const& project_id = "") const;

 private:
  Client client_;
};

}  // namespace bai
