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
    {"requested_slots", "object"},
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
    {"priority", "integer"},
    {"attached_devices", "array"},
    // How its kernel was set up where the session did not choose (null before it ran, and from
    // managers that do not say): "bridge" or "none"; {backing: disk|tmpfs, home_bytes,
    // tmp_bytes}.
    {"network", "string?"},
    {"scratch", "object?"},
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
    {"num_files", "integer"},
    {"used_bytes", "integer"},
    {"quota_bytes", "integer?"},  // the folder's own quota (null: none)
    {"quota_files", "integer?"},
};

}  // namespace bai::cli::output_schema
