// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/resource.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

/// Who a verified request comes from.
struct Identity {
  std::string access_key;
  std::string user_id;
  std::string email;
  std::string role;  ///< superadmin, admin, user, monitor
  std::string domain;
  bool is_admin = false;  ///< the keypair's flag (admin_required handlers)
  std::int64_t rate_limit = 1000;

  bool IsSuperadmin() const { return role == "superadmin"; }
  /// May act for other keypairs: superadmins anywhere, admins (by role or by the keypair's
  /// flag) within their domain.
  bool IsAdmin() const { return IsSuperadmin() || is_admin || role == "admin"; }
};

/// What authentication needs to know about an access key.
struct KeypairRecord {
  Identity identity;
  std::string secret_key;
  bool keypair_active = false;
  std::string user_status;
  /// The user's allowed client addresses (CIDRs or addresses); empty: any. A stored value that
  /// is not a list reads as {""}, which admits no address.
  std::vector<std::string> allowed_client_ip;
};

struct LoginRecord {
  std::string user_id;
  std::string password_hash;
  std::string role;
  std::string status;
};

struct PresetRecord {
  std::string name;
  protocol::ResourceSlots resource_slots;
  std::optional<std::string> shared_memory;
};

/// What GraphQL's KeyPair shows beyond authentication's record.
struct KeypairDetails {
  KeypairRecord record;
  std::string full_name;
  std::string resource_policy;
  std::string created_at;
  std::string bootstrap_script;
};

struct ScalingGroupRecord {
  std::string name;
  std::string description;
  bool is_active = true;
  bool is_public = true;
  std::string scheduler;
  std::string scheduler_opts;  ///< JSON text
  std::string created_at;
  std::string driver_opts = "{}";  ///< JSON text
  std::optional<std::string> wsproxy_addr;
  std::optional<std::string> wsproxy_api_token;
  bool use_host_network = false;
};

/// Typed queries over the manager's database. Every method is one statement or one
/// transaction; nothing is cached, so several managers can share one database.
class Store {
 public:
  explicit Store(server::Database& db) : db_(db) {}
  server::Database& db() { return db_; }

  StatusOr<std::optional<KeypairRecord>> FindKeypair(std::string const& access_key);
  /// Whether the database answers.
  Status Ping();
  /// Adds request counts (key → (window start, count)) to the shared rate-limit windows, drops
  /// windows older than the one before `window_start`, and returns every key's totals:
  /// key → (count in the window starting at `window_start`, count in the one before).
  StatusOr<std::map<std::string, std::pair<std::int64_t, std::int64_t>>> AddRequestCounts(
      std::map<std::string, std::pair<std::int64_t, std::int64_t>> const& counts,
      std::int64_t window_start, std::int64_t window_seconds);
  /// By username or email within a domain.
  StatusOr<std::optional<LoginRecord>> FindLogin(std::string const& domain,
                                                 std::string const& username);
  /// The user's active keypair, admin keypairs first.
  StatusOr<std::optional<std::pair<std::string, std::string>>> ActiveKeypairOf(
      std::string const& user_id);
  /// A new active user of role `user` in an active `domain`, a member of the domain's
  /// `default` project when there is one, with a fresh keypair (policy `default`, 1000 requests
  /// per 15 minutes); returns (access key, secret key). 400 invalid-api-params for an unknown
  /// domain or a taken email or user name.
  StatusOr<std::pair<std::string, std::string>> SignUp(std::string const& domain,
                                                       std::string const& email,
                                                       std::string const& username,
                                                       std::string const& password_hash,
                                                       std::string const& full_name);

  StatusOr<std::optional<KeypairDetails>> FindKeypairDetails(std::string const& access_key);
  /// Every resource group, by name.
  StatusOr<std::vector<ScalingGroupRecord>> ScalingGroups();

  StatusOr<std::vector<PresetRecord>> ListPresets();
  /// Names of the active resource groups the requester may use (domain ∪ project ∪ keypair),
  /// sorted; `group` (project name or id) narrows the project part, "" = every project of the
  /// user.
  StatusOr<std::vector<std::string>> AllowedScalingGroups(Identity const& who,
                                                          std::string const& group);
  /// The project (by id or name within the domain) if it exists: id.
  StatusOr<std::optional<std::string>> FindGroup(std::string const& domain,
                                                 std::string const& name_or_id);
  StatusOr<bool> IsMember(std::string const& group_id, std::string const& user_id);
  /// The active projects of `domain` the user belongs to: (id, name), sorted by name.
  StatusOr<std::vector<std::pair<std::string, std::string>>> ProjectsOf(std::string const& domain,
                                                                        std::string const& user_id);
  /// The project a request acts in: `requested` (name or id) when the owner is a member
  /// (superadmins: any of the domain). "" or "default" (what clients send when the user named
  /// none) is the owner's only project when they are not in `default`. Otherwise 404
  /// object-not-found naming the owner's projects, so the user knows what to choose.
  StatusOr<std::string> ResolveProject(std::string const& domain, std::string const& user_id,
                                       std::string const& requested, bool superadmin);

  /// Slot name → type for the whole cluster: cpu and mem, plus what registered agents report.
  StatusOr<std::map<std::string, std::string>> ClusterSlotTypes();
  /// Sessions that are not TERMINATED or CANCELLED.
  StatusOr<std::int64_t> ActiveSessionCount();

  StatusOr<std::optional<std::string>> GetSetting(std::string const& key);
  /// 503 server-frozen while an administrator has frozen the manager (PUT /manager/status):
  /// what changes state (new sessions, folders, administration) waits for the unfreeze.
  Status RefuseWhileFrozen();
  Status SetSetting(std::string const& key, std::string const& value);
  StatusOr<std::string> GetBootstrapScript(std::string const& access_key);
  /// A user's new password hash; need_password_change cleared. Returns the time of the change.
  StatusOr<std::string> SetPasswordHash(std::string const& user_id, std::string const& hash);
  /// The keypair's SSH public key (nullopt: none made yet).
  StatusOr<std::optional<std::string>> SshPublicKey(std::string const& access_key);
  Status SetSshKeypair(std::string const& access_key, std::string const& public_key,
                       std::string const& private_key);
  /// The user's resource policy's name (nullopt for an unknown user).
  StatusOr<std::optional<std::string>> UserResourcePolicy(std::string const& user_id);
  /// The project with id `id_or_name`, or named so within `domain`: (id, its domain).
  StatusOr<std::optional<std::pair<std::string, std::string>>> FindGroupAnywhere(
      std::string const& id_or_name, std::string const& domain);
  /// Whether an agent with this id has registered (alive or not).
  StatusOr<bool> AgentKnown(std::string const& agent_id);
  /// The newest schema migration applied (0 before any).
  StatusOr<std::int64_t> SchemaVersion();
  Status SetBootstrapScript(std::string const& access_key, std::string const& script);

 private:
  server::Database& db_;
};

/// `t` as ISO 8601 UTC with microseconds, the format of every time column. The width is fixed,
/// so these strings compare in time order.
std::string IsoTime(std::chrono::system_clock::time_point t);
/// IsoTime of now.
std::string NowIso();

/// Statuses in which a session holds slots on its agent (an SQL list).
extern char const kHoldingStatuses[];

/// The lock scope (server::LockScopes) of `scaling_group`'s scheduling state: taken by every
/// scheduling pass over the group and by whatever shrinks its agents' capacity.
std::string SchedulingScope(std::string const& scaling_group);

}  // namespace bai::manager
