// SPDX-License-Identifier: Apache-2.0
#pragma once
// Administration's wire types (streams-admin-console.md §B): what the manager's GraphQL answers
// for domains and a mutation's payload, one definition for the manager that writes them and the
// SDK that reads them.

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// A domain, as 24.09's `Domain` object.
struct Domain {
  std::string name;
  std::string description;
  bool is_active = true;
  std::string created_at;                    ///< RFC 3339
  std::string modified_at;                   ///< RFC 3339
  std::string total_resource_slots = "{}";   ///< JSON object text: slot → amount
  std::string allowed_vfolder_hosts = "{}";  ///< JSON text: host → permissions (or a list)
  std::vector<std::string> allowed_docker_registries;
  std::optional<std::string> integration_id;
  std::vector<std::string> scaling_groups;  ///< the resource groups associated with it
};

/// A project ("group"), as 24.09's `Group` object.
struct Group {
  std::string id;  ///< UUID
  std::string name;
  std::string description;
  bool is_active = true;
  std::string created_at;
  std::string modified_at;
  std::string domain_name;
  /// GENERAL or MODEL_STORE; absent from servers before 24.03 (23.09's Group has no type).
  std::optional<std::string> type = "GENERAL";
  std::string total_resource_slots = "{}";
  std::string allowed_vfolder_hosts = "{}";
  std::optional<std::string> integration_id;
  std::string resource_policy = "default";
  std::vector<std::string> scaling_groups;
};

BAI_EXPORT std::string EncodeGroup(Group const& group);
BAI_EXPORT StatusOr<Group> DecodeGroup(std::string_view json);

/// The JSON object text of a domain (24.09's field names; JSONString fields as text).
BAI_EXPORT std::string EncodeDomain(Domain const& domain);
BAI_EXPORT StatusOr<Domain> DecodeDomain(std::string_view json);

/// A project a user belongs to, as `User.groups { id name }`.
struct GroupRef {
  std::string id;
  std::string name;
};

/// A user, as 24.09's `User` object (the password is never read back).
struct User {
  std::string uuid;
  std::string username;
  std::string email;
  bool need_password_change = false;
  std::string full_name;
  std::string description;
  bool is_active = true;
  std::string status = "active";  ///< active, inactive, deleted, before-verification
  std::string status_info;
  std::string created_at;
  std::string modified_at;
  std::string domain_name;
  std::string role = "user";                   ///< superadmin, admin, user, monitor
  std::string resource_policy = "default";     ///< a user resource policy
  std::vector<std::string> allowed_client_ip;  ///< addresses or CIDR blocks; empty: any
  bool totp_activated = false;
  bool sudo_session_enabled = false;
  std::string main_access_key;
  std::vector<GroupRef> groups;
};

BAI_EXPORT std::string EncodeUser(User const& user);
BAI_EXPORT StatusOr<User> DecodeUser(std::string_view json);

/// A keypair, as 24.09's `KeyPair` object. `secret_key` is empty where the reader may not see
/// it (anyone but its owner and superadmins).
struct KeyPair {
  std::string access_key;
  std::string secret_key;
  std::string user_id;  ///< the owner's email (24.09's name)
  std::string user;     ///< the owner's UUID
  std::string full_name;
  bool is_active = true;
  bool is_admin = false;
  std::string resource_policy = "default";
  std::string created_at;
  std::string modified_at;
  std::string last_used;
  std::int64_t rate_limit = 0;
  std::int64_t num_queries = 0;
  std::string ssh_public_key;
  std::string domain_name;  ///< the owner's domain (not a 24.09 field of KeyPair; bai adds it)
};

BAI_EXPORT std::string EncodeKeyPair(KeyPair const& keypair);
BAI_EXPORT StatusOr<KeyPair> DecodeKeyPair(std::string_view json);

/// A keypair resource policy, as 24.09's `KeyPairResourcePolicy`. Zero means "no limit" for
/// counts and times, as in 24.09.
struct KeypairResourcePolicy {
  std::string name;
  std::string created_at;
  std::string default_for_unspecified = "UNLIMITED";  ///< or LIMITED
  std::string total_resource_slots = "{}";            ///< JSON object text
  std::int64_t max_session_lifetime = 0;              ///< seconds
  std::int64_t max_concurrent_sessions = 0;
  std::optional<std::int64_t> max_concurrent_sftp_sessions = 1;  ///< absent before 24.03
  std::int64_t max_containers_per_session = 1;
  std::int64_t idle_timeout = 0;             ///< seconds
  std::string allowed_vfolder_hosts = "{}";  ///< JSON text: host → permissions
  std::optional<std::int64_t> max_pending_session_count;
  std::optional<std::string> max_pending_session_resource_slots;  ///< JSON object text
  std::int64_t max_vfolder_count = 0;  ///< 22.03's field (24.09 moved it to user policies)
  std::int64_t max_vfolder_size = 0;   ///< 22.03's field, bytes
  std::int64_t max_quota_scope_size = 0;
};

BAI_EXPORT std::string EncodeKeypairResourcePolicy(KeypairResourcePolicy const& policy);
BAI_EXPORT StatusOr<KeypairResourcePolicy> DecodeKeypairResourcePolicy(std::string_view json);

/// A user (kind "user") or project (kind "project") resource policy: 24.09's
/// `UserResourcePolicy` / `ProjectResourcePolicy` (projects have only the first two limits).
struct ScopeResourcePolicy {
  std::string name;
  std::string created_at;
  std::int64_t max_vfolder_count = 0;     ///< 0: no limit
  std::int64_t max_quota_scope_size = 0;  ///< bytes; 0: no limit
  std::int64_t max_session_count_per_model_session = 0;
  std::int64_t max_customized_image_count = 3;
};

BAI_EXPORT std::string EncodeScopeResourcePolicy(ScopeResourcePolicy const& policy, bool user);
BAI_EXPORT StatusOr<ScopeResourcePolicy> DecodeScopeResourcePolicy(std::string_view json);

/// A classic mutation's answer (`{ok, msg, …}`): "success", "no matching <mutation>",
/// "integrity error: …", "no permission to execute <field>".
struct MutationResult {
  bool ok = false;
  std::string msg;
};

/// A dotfile (`/user-config/dotfiles`, `/group-config/…`, `/domain-config/…`): a file written
/// into every new kernel's /home/work — the domain's first, then the project's, then the
/// user's, each replacing a file of the same path.
struct Dotfile {
  std::string path;                ///< relative to /home/work (or absolute beneath it)
  std::string permission = "644";  ///< three octal digits
  std::string data;
};

/// The list answer: [{path, permission, data}].
BAI_EXPORT std::string EncodeDotfiles(std::vector<Dotfile> const& dotfiles);
BAI_EXPORT StatusOr<std::vector<Dotfile>> DecodeDotfiles(std::string_view json);
/// One dotfile as 24.09's get answers it: {path, perm, data} (also reads `permission`).
BAI_EXPORT std::string EncodeDotfile(Dotfile const& dotfile);
BAI_EXPORT StatusOr<Dotfile> DecodeDotfile(std::string_view json);

/// The most a user, project or domain keeps: 100 dotfiles, 64 KiB of them together (24.09).
inline constexpr std::size_t kMaxDotfiles = 100;
inline constexpr std::size_t kMaxDotfileBytes = 64 * 1024;

/// Whether a dotfile may have this path and permission: a path beneath /home/work ("a/b",
/// "/home/work/a/b"; no "..", no empty parts), not one bai writes itself (.terminfo, .jupyter,
/// .ssh, .ssh/authorized_keys, .local, .config), and three octal digits. The error says which.
BAI_EXPORT Status CheckDotfile(Dotfile const& dotfile);

/// A session template as `GET /template/session` lists it (24.09's shape): a stored task
/// template a session can be created from (`POST /session/_/create-from-template`).
struct SessionTemplateInfo {
  std::string id;  ///< 32 hex digits
  std::string name;
  std::string created_at;
  bool is_owner = false;  ///< the caller's own
  std::string user;       ///< the owner's uuid
  std::string group;      ///< the project's id
  std::string user_email;
  std::string group_name;
  std::string domain_name;
  std::string type = "task";
  std::string template_json = "{}";  ///< the checked template (apiVersion, kind, metadata, spec)
};

BAI_EXPORT std::string EncodeSessionTemplates(std::vector<SessionTemplateInfo> const& templates);
BAI_EXPORT StatusOr<std::vector<SessionTemplateInfo>> DecodeSessionTemplates(std::string_view json);

}  // namespace bai::protocol
