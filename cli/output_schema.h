// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one definition of bai's `-o json` output: each noun's fields, their JSON types, in order.
// The commands write these shapes (session.cc, vfolder.cc), `bai help output` prints them from
// here, and tests/cli check every command's document against them. Header-only on purpose: the
// tests include it without linking the CLI.

#include <string_view>

namespace bai::cli::output_schema {

/// A field of a noun: its name and its JSON type ("string", "integer", "number", "boolean",
/// "object", "array"; a trailing "?" when it may be null).
struct Field {
  std::string_view name;
  std::string_view type;
};

/// A session, wherever one appears: `ps` / `session ls` items, `session info` (which adds
/// kSessionDetail), `run`, `session create` and `wait` results. Enumerations are upper case as
/// 24.09's GraphQL spells them; slot amounts are numbers, bytes integers.
inline constexpr Field kSession[] = {
    {"id", "string"},
    {"name", "string"},
    {"status", "string"},
    {"status_info", "string"},
    {"type", "string"},  // BATCH, INTERACTIVE, INFERENCE
    {"image", "string"},
    {"scaling_group", "string"},
    {"tag", "string?"},
    {"result", "string"},  // UNDEFINED, SUCCESS, FAILURE
    {"job_exit_code", "integer?"},
    {"created_at", "string"},
    {"terminated_at", "string?"},
    {"requested_slots", "object?"},  // null: the server does not say (23.09 lists)
    {"occupied_slots", "object"},
};

/// `session info` adds these.
inline constexpr Field kSessionDetail[] = {
    {"agent_id", "string?"},
    {"architecture", "string"},
    {"domain_name", "string"},
    {"group_id", "string"},
    {"user_id", "string"},
    {"environ", "object"},
    {"status_history", "object"},
    {"startup_command", "string?"},
    {"num_queries", "integer"},
    {"priority", "integer?"},  // absent before 24.09
    {"attached_devices", "array"},
    // How its kernel was set up where the session did not choose (null before it ran, and from
    // managers that do not say): "bridge" or "none"; {backing: disk|tmpfs, home_bytes,
    // tmp_bytes}.
    {"network", "string?"},
    {"scratch", "object?"},
    // What it uses now while RUNNING (null otherwise, or when nothing was reported): {cpu_pct,
    // mem_bytes, mem_limit_bytes, gpu_mem_bytes}; `ps --usage` items carry the same.
    {"use", "object?"},
};

/// A `session events` line (NDJSON): the event, the session named as everywhere, why and its
/// job's exit code where the event says; then the server's other fields of it in snake_case
/// (owner_access_key, kernel_id, …).
inline constexpr Field kEvent[] = {
    {"event", "string"},  // session_started, session_terminated, …
    {"id", "string"},    {"name", "string"}, {"reason", "string?"}, {"exit_code", "integer?"},
};

/// A virtual folder: `vfolder list` items (under "folders"), `vfolder info`, `vfolder create`.
inline constexpr Field kFolder[] = {
    {"id", "string"},
    {"name", "string"},
    {"host", "string"},
    {"status", "string"},
    {"usage_mode", "string"},
    {"permission", "string"},
    {"ownership_type", "string"},
    {"is_owner", "boolean"},
    {"cloneable", "boolean"},
    {"created_at", "string"},
    {"num_files", "integer?"},  // null: the server does not count (Backend.AI listings)
    {"used_bytes", "integer"},
    {"quota_bytes", "integer?"},  // the folder's own quota (null: none)
    {"quota_files", "integer?"},
};

// Administration nouns (`bai admin … ls`, and create where it answers the made thing). Slot maps
// are objects of numbers (null: unlimited), as a session's are; what GraphQL carries as JSON text
// is an object here.

/// A domain: `admin domain ls` items (under "domains"), `admin domain create` ("domain").
inline constexpr Field kDomain[] = {
    {"name", "string"},
    {"description", "string"},
    {"is_active", "boolean"},
    {"created_at", "string"},
    {"modified_at", "string"},
    {"total_resource_slots", "object"},
    {"allowed_vfolder_hosts", "object"},
    {"allowed_docker_registries", "array"},
    {"scaling_groups", "array"},
    {"integration_id", "string?"},
};

/// A project: `admin project ls` items (under "projects"), `admin project create` ("project").
inline constexpr Field kProject[] = {
    {"id", "string"},
    {"name", "string"},
    {"description", "string"},
    {"domain_name", "string"},
    {"type", "string"},  // GENERAL, MODEL_STORE
    {"is_active", "boolean"},
    {"resource_policy", "string"},
    {"created_at", "string"},
    {"modified_at", "string"},
    {"total_resource_slots", "object"},
    {"allowed_vfolder_hosts", "object"},
    {"scaling_groups", "array"},
    {"integration_id", "string?"},
};

/// A user: `admin user ls` items (under "users").
inline constexpr Field kUser[] = {
    {"uuid", "string"},
    {"email", "string"},
    {"username", "string"},
    {"full_name", "string"},
    {"domain_name", "string"},
    {"role", "string"},    // superadmin, admin, user, monitor
    {"status", "string"},  // active, inactive, deleted, before-verification
    {"is_active", "boolean"},
    {"need_password_change", "boolean"},
    {"main_access_key", "string?"},
    {"resource_policy", "string"},
    {"groups", "array"},  // [{id, name}]
    {"created_at", "string"},
};

/// A keypair: `admin keypair ls` items (under "keypairs"). user_id is the owner's e-mail and
/// user their uuid, as the server names them.
inline constexpr Field kKeypair[] = {
    {"access_key", "string"},  {"user_id", "string"},      {"user", "string"},
    {"is_active", "boolean"},  {"is_admin", "boolean"},    {"resource_policy", "string"},
    {"rate_limit", "integer"}, {"num_queries", "integer"}, {"created_at", "string"},
    {"last_used", "string?"},
};

/// A keypair resource policy: `admin policy ls` items (under "policies"). Durations in
/// seconds (0: never), counts and sizes 0 when unlimited.
inline constexpr Field kKeypairPolicy[] = {
    {"name", "string"},
    {"created_at", "string"},
    {"default_for_unspecified", "string"},  // LIMITED, UNLIMITED
    {"total_resource_slots", "object"},
    {"max_concurrent_sessions", "integer"},
    {"max_containers_per_session", "integer"},
    {"max_pending_session_count", "integer?"},
    {"max_pending_session_resource_slots", "object?"},
    {"idle_timeout", "integer"},
    {"max_session_lifetime", "integer"},
    {"allowed_vfolder_hosts", "object"},
};

/// A user or project resource policy: `admin user-policy ls`, `admin project-policy ls` items
/// (under "policies"); a user's also max_session_count_per_model_session and
/// max_customized_image_count.
inline constexpr Field kScopePolicy[] = {
    {"name", "string"},
    {"created_at", "string"},
    {"max_vfolder_count", "integer"},
    {"max_quota_scope_size", "integer"},
};

/// An agent: `admin agent ls` items (under "agents").
inline constexpr Field kAgent[] = {
    {"id", "string"},
    {"status", "string"},  // ALIVE, LOST, TERMINATED
    {"scaling_group", "string"},
    {"architecture", "string"},
    {"version", "string"},
    {"schedulable", "boolean"},
    {"available_slots", "object"},
    {"occupied_slots", "object"},
    {"first_contact", "string?"},
    {"lost_at", "string?"},
};

/// An image: `admin image ls` items (under "images").
inline constexpr Field kImage[] = {
    {"id", "string"},           {"name", "string"},
    {"tag", "string"},          {"registry", "string"},
    {"architecture", "string"}, {"aliases", "array"},
    {"installed", "boolean"},   {"installed_agents", "array"},
    {"size_bytes", "integer"},
};

/// A resource preset: `admin preset ls` items (under "presets").
inline constexpr Field kPreset[] = {
    {"name", "string"},
    {"resource_slots", "object"},
    {"shared_memory", "integer?"},
};

}  // namespace bai::cli::output_schema
