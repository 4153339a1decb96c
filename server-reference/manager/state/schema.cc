// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/schema.h"

namespace bai::manager {
namespace {

server::Migration Principals() {
  return {
      1,
      "principals, policies, resource groups, presets, manager state",
      {
          "CREATE TABLE domains (name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '', "
          "is_active INTEGER NOT NULL DEFAULT 1, total_resource_slots TEXT NOT NULL DEFAULT '{}', "
          "created_at TEXT NOT NULL)",
          "CREATE TABLE keypair_resource_policies (name TEXT PRIMARY KEY, "
          "total_resource_slots TEXT NOT NULL DEFAULT '{}', "
          "default_for_unspecified TEXT NOT NULL DEFAULT 'UNLIMITED', "
          "max_concurrent_sessions INTEGER NOT NULL DEFAULT 0, "
          "max_containers_per_session INTEGER NOT NULL DEFAULT 1, "
          "max_session_lifetime INTEGER NOT NULL DEFAULT 0, "
          "idle_timeout INTEGER NOT NULL DEFAULT 0, max_pending_session_count INTEGER, "
          "created_at TEXT NOT NULL)",
          "CREATE TABLE groups (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
          "domain_name TEXT NOT NULL REFERENCES domains(name), "
          "description TEXT NOT NULL DEFAULT '', is_active INTEGER NOT NULL DEFAULT 1, "
          "total_resource_slots TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, "
          "UNIQUE (domain_name, name))",
          "CREATE TABLE users (uuid TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, "
          "email TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL, "
          "full_name TEXT NOT NULL DEFAULT '', role TEXT NOT NULL DEFAULT 'user', "
          "status TEXT NOT NULL DEFAULT 'active', "
          "domain_name TEXT NOT NULL REFERENCES domains(name), allowed_client_ip TEXT, "
          "created_at TEXT NOT NULL)",
          "CREATE TABLE association_groups_users ("
          "group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE, "
          "user_id TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE, "
          "PRIMARY KEY (group_id, user_id))",
          "CREATE TABLE keypairs (access_key TEXT PRIMARY KEY, secret_key TEXT NOT NULL, "
          "user_id TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE, "
          "is_active INTEGER NOT NULL DEFAULT 1, is_admin INTEGER NOT NULL DEFAULT 0, "
          "resource_policy TEXT NOT NULL REFERENCES keypair_resource_policies(name), "
          "rate_limit INTEGER NOT NULL DEFAULT 1000, bootstrap_script TEXT NOT NULL DEFAULT '', "
          "created_at TEXT NOT NULL)",
          "CREATE INDEX keypairs_user ON keypairs (user_id)",
          "CREATE TABLE scaling_groups (name TEXT PRIMARY KEY, "
          "description TEXT NOT NULL DEFAULT '', is_active INTEGER NOT NULL DEFAULT 1, "
          "is_public INTEGER NOT NULL DEFAULT 1, scheduler TEXT NOT NULL DEFAULT 'fifo', "
          "scheduler_opts TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL)",
          "CREATE TABLE sgroups_for_domains ("
          "scaling_group TEXT NOT NULL REFERENCES scaling_groups(name) ON DELETE CASCADE, "
          "domain TEXT NOT NULL REFERENCES domains(name) ON DELETE CASCADE, "
          "PRIMARY KEY (scaling_group, domain))",
          "CREATE TABLE sgroups_for_groups ("
          "scaling_group TEXT NOT NULL REFERENCES scaling_groups(name) ON DELETE CASCADE, "
          "group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE, "
          "PRIMARY KEY (scaling_group, group_id))",
          "CREATE TABLE sgroups_for_keypairs ("
          "scaling_group TEXT NOT NULL REFERENCES scaling_groups(name) ON DELETE CASCADE, "
          "access_key TEXT NOT NULL REFERENCES keypairs(access_key) ON DELETE CASCADE, "
          "PRIMARY KEY (scaling_group, access_key))",
          "CREATE TABLE resource_presets (name TEXT PRIMARY KEY, resource_slots TEXT NOT NULL, "
          "shared_memory TEXT)",
          "CREATE TABLE manager_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      }};
}

server::Migration Sessions() {
  return {2,
          "agents, sessions, kernels, event log",
          {
              "CREATE TABLE agents (id TEXT PRIMARY KEY, "
              "scaling_group TEXT NOT NULL REFERENCES scaling_groups(name), "
              "status TEXT NOT NULL, architecture TEXT NOT NULL DEFAULT 'x86_64', "
              "available_slots TEXT NOT NULL DEFAULT '{}', slot_types TEXT NOT NULL DEFAULT '{}', "
              "images TEXT NOT NULL DEFAULT '[]', version TEXT NOT NULL DEFAULT '', "
              "schedulable INTEGER NOT NULL DEFAULT 1, first_contact TEXT NOT NULL, "
              "last_heartbeat TEXT NOT NULL, lost_at TEXT)",
              "CREATE TABLE sessions (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, "
              "name TEXT NOT NULL, access_key TEXT NOT NULL REFERENCES keypairs(access_key), "
              "user_id TEXT NOT NULL, domain_name TEXT NOT NULL, group_id TEXT NOT NULL, "
              "scaling_group TEXT NOT NULL, type TEXT NOT NULL, image TEXT NOT NULL, "
              "architecture TEXT NOT NULL, cluster_size INTEGER NOT NULL DEFAULT 1, "
              "status TEXT NOT NULL, status_info TEXT NOT NULL DEFAULT '', "
              "status_data TEXT NOT NULL DEFAULT '{}', status_history TEXT NOT NULL DEFAULT '{}', "
              "requested_slots TEXT NOT NULL DEFAULT '{}', agent_id TEXT, "
              "environ TEXT NOT NULL DEFAULT '{}', mounts TEXT NOT NULL DEFAULT '[]', "
              "mount_map TEXT NOT NULL DEFAULT '{}', resource_opts TEXT NOT NULL DEFAULT '{}', "
              "startup_command TEXT, bootstrap_script TEXT, tag TEXT, "
              "priority INTEGER NOT NULL DEFAULT 10, starts_at TEXT, batch_timeout INTEGER, "
              "dependencies TEXT NOT NULL DEFAULT '[]', callback_url TEXT, "
              "result TEXT NOT NULL DEFAULT 'undefined', exit_code INTEGER, "
              "num_queries INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, "
              "terminated_at TEXT)",
              "CREATE INDEX sessions_queue ON sessions (scaling_group, status, seq)",
              "CREATE INDEX sessions_owner ON sessions (access_key, name)",
              "CREATE TABLE kernels (id TEXT PRIMARY KEY, "
              "session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, "
              "agent_id TEXT, cluster_role TEXT NOT NULL DEFAULT 'main', "
              "cluster_idx INTEGER NOT NULL DEFAULT 1, status TEXT NOT NULL, "
              "status_info TEXT NOT NULL DEFAULT '', container_id TEXT, exit_code INTEGER, "
              "logs TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, terminated_at TEXT)",
              "CREATE INDEX kernels_session ON kernels (session_id)",
              // Every lifecycle event, in order: SSE streams and waiting requests of every manager
              // tail this table. (INTEGER PRIMARY KEY numbers rows in SQLite; the PostgreSQL
              // migration declares it as an identity column.)
              "CREATE TABLE events (seq INTEGER PRIMARY KEY, name TEXT NOT NULL, "
              "session_id TEXT NOT NULL, session_name TEXT NOT NULL, kernel_id TEXT, "
              "access_key TEXT NOT NULL, domain_name TEXT NOT NULL, group_id TEXT NOT NULL, "
              "reason TEXT, exit_code INTEGER, created_at TEXT NOT NULL)",
          }};
}

server::Migration RateLimits() {
  return {3,
          "rate-limit windows shared by every manager",
          {
              "CREATE TABLE rate_limit_windows (access_key TEXT NOT NULL, "
              "window_start INTEGER NOT NULL, count INTEGER NOT NULL, "
              "PRIMARY KEY (access_key, window_start))",
          }};
}

server::Migration BackgroundTasks() {
  return {
      4,
      "background tasks (PROTOCOL.md /events/background-task)",
      {
          // `version` grows with every change, so streams on any manager see each update once.
          "CREATE TABLE background_tasks (id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
          "access_key TEXT NOT NULL, subject TEXT NOT NULL DEFAULT '', "
          "status TEXT NOT NULL DEFAULT 'ongoing', message TEXT NOT NULL DEFAULT '', "
          "current_progress INTEGER NOT NULL DEFAULT 0, total_progress INTEGER NOT NULL DEFAULT "
          "0, "
          "version INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT "
          "NULL)",
          "CREATE INDEX background_tasks_subject ON background_tasks (kind, subject, status)",
      }};
}

server::Migration AgentLists() {
  return {5,
          "sessions pinned to agents (a superadmin's config.agent_list)",
          {
              "ALTER TABLE sessions ADD COLUMN agent_list TEXT NOT NULL DEFAULT '[]'",
          }};
}

server::Migration VFolders() {
  return {6,
          "virtual folders, their sharing and invitations, quota scopes",
          {
              "CREATE TABLE vfolders (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
              "host TEXT NOT NULL, quota_scope_id TEXT NOT NULL, "
              "usage_mode TEXT NOT NULL DEFAULT 'general', "
              "permission TEXT NOT NULL DEFAULT 'rw', ownership_type TEXT NOT NULL, "
              "user_id TEXT REFERENCES users(uuid) ON DELETE CASCADE, "
              "group_id TEXT REFERENCES groups(id) ON DELETE CASCADE, creator TEXT NOT NULL, "
              "domain_name TEXT NOT NULL, cloneable INTEGER NOT NULL DEFAULT 0, "
              "status TEXT NOT NULL DEFAULT 'ready', created_at TEXT NOT NULL, "
              "last_used TEXT)",
              "CREATE INDEX vfolders_user ON vfolders (user_id)",
              "CREATE INDEX vfolders_group ON vfolders (group_id)",
              "CREATE TABLE vfolder_permissions ("
              "vfolder_id TEXT NOT NULL REFERENCES vfolders(id) ON DELETE CASCADE, "
              "user_id TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE, "
              "permission TEXT NOT NULL, PRIMARY KEY (vfolder_id, user_id))",
              "CREATE TABLE vfolder_invitations (id TEXT PRIMARY KEY, "
              "vfolder_id TEXT NOT NULL REFERENCES vfolders(id) ON DELETE CASCADE, "
              "inviter TEXT NOT NULL, invitee TEXT NOT NULL, permission TEXT NOT NULL, "
              "state TEXT NOT NULL DEFAULT 'pending', created_at TEXT NOT NULL, "
              "modified_at TEXT NOT NULL)",
              "CREATE TABLE quota_scopes (scope_id TEXT PRIMARY KEY, "
              "max_bytes INTEGER NOT NULL DEFAULT 0, max_files INTEGER NOT NULL DEFAULT 0)",
          }};
}

server::Migration SessionMounts() {
  return {7,
          "the folders a session mounts, resolved when it is created",
          {
              "ALTER TABLE sessions ADD COLUMN vfolder_mounts TEXT NOT NULL DEFAULT '[]'",
          }};
}

server::Migration Devices() {
  return {8,
          "agents' GPUs and the devices each session holds on them",
          {
              "ALTER TABLE agents ADD COLUMN devices TEXT NOT NULL DEFAULT '{}'",
              "ALTER TABLE sessions ADD COLUMN device_allocations TEXT NOT NULL DEFAULT '[]'",
          }};
}

server::Migration ServicePorts() {
  return {10,
          "each session's apps (service ports)",
          {
              "ALTER TABLE sessions ADD COLUMN service_ports TEXT NOT NULL DEFAULT '[]'",
          }};
}

server::Migration Networks() {
  return {11,
          "each session's network mode (bridge, none; empty: the agent's default)",
          {
              "ALTER TABLE sessions ADD COLUMN network TEXT NOT NULL DEFAULT ''",
          }};
}

server::Migration DomainFields() {
  return {12,
          "domains' vfolder hosts, registries, integration id and modification time",
          {
              "ALTER TABLE domains ADD COLUMN allowed_vfolder_hosts TEXT NOT NULL DEFAULT '{}'",
              "ALTER TABLE domains ADD COLUMN allowed_docker_registries TEXT NOT NULL DEFAULT '[]'",
              "ALTER TABLE domains ADD COLUMN integration_id TEXT",
              "ALTER TABLE domains ADD COLUMN modified_at TEXT",
          }};
}

server::Migration GroupFields() {
  return {13,
          "projects' type, vfolder hosts, integration id, policy and modification time",
          {
              "ALTER TABLE groups ADD COLUMN type TEXT NOT NULL DEFAULT 'GENERAL'",
              "ALTER TABLE groups ADD COLUMN allowed_vfolder_hosts TEXT NOT NULL DEFAULT '{}'",
              "ALTER TABLE groups ADD COLUMN integration_id TEXT",
              "ALTER TABLE groups ADD COLUMN resource_policy TEXT NOT NULL DEFAULT 'default'",
              "ALTER TABLE groups ADD COLUMN modified_at TEXT",
          }};
}

server::Migration UserFields() {
  return {
      14,
      "users' and keypairs' 24.09 fields; user and project resource policies",
      {
          "ALTER TABLE users ADD COLUMN need_password_change INTEGER NOT NULL DEFAULT 0",
          "ALTER TABLE users ADD COLUMN description TEXT NOT NULL DEFAULT ''",
          "ALTER TABLE users ADD COLUMN status_info TEXT",
          "ALTER TABLE users ADD COLUMN modified_at TEXT",
          "ALTER TABLE users ADD COLUMN password_changed_at TEXT",
          "ALTER TABLE users ADD COLUMN totp_activated INTEGER NOT NULL DEFAULT 0",
          "ALTER TABLE users ADD COLUMN sudo_session_enabled INTEGER NOT NULL DEFAULT 0",
          "ALTER TABLE users ADD COLUMN resource_policy TEXT NOT NULL DEFAULT 'default'",
          // NULL: the user's first keypair (admin keys first, then the oldest) is the main one.
          "ALTER TABLE users ADD COLUMN main_access_key TEXT",
          "ALTER TABLE keypairs ADD COLUMN modified_at TEXT",
          "ALTER TABLE keypairs ADD COLUMN last_used TEXT",
          "ALTER TABLE keypairs ADD COLUMN ssh_public_key TEXT",
          "ALTER TABLE keypairs ADD COLUMN ssh_private_key TEXT",
          "ALTER TABLE keypair_resource_policies ADD COLUMN max_concurrent_sftp_sessions "
          "INTEGER NOT NULL DEFAULT 1",
          "ALTER TABLE keypair_resource_policies ADD COLUMN allowed_vfolder_hosts TEXT NOT NULL "
          "DEFAULT '{}'",
          "ALTER TABLE keypair_resource_policies ADD COLUMN max_pending_session_resource_slots "
          "TEXT",
          "ALTER TABLE keypair_resource_policies ADD COLUMN max_vfolder_count INTEGER NOT NULL "
          "DEFAULT 0",
          "ALTER TABLE keypair_resource_policies ADD COLUMN max_vfolder_size INTEGER NOT NULL "
          "DEFAULT 0",
          "ALTER TABLE keypair_resource_policies ADD COLUMN max_quota_scope_size INTEGER NOT "
          "NULL DEFAULT 0",
          "CREATE TABLE user_resource_policies (name TEXT PRIMARY KEY, "
          "max_vfolder_count INTEGER NOT NULL DEFAULT 0, "
          "max_quota_scope_size INTEGER NOT NULL DEFAULT 0, "
          "max_session_count_per_model_session INTEGER NOT NULL DEFAULT 0, "
          "max_customized_image_count INTEGER NOT NULL DEFAULT 3, created_at TEXT NOT NULL)",
          "CREATE TABLE project_resource_policies (name TEXT PRIMARY KEY, "
          "max_vfolder_count INTEGER NOT NULL DEFAULT 0, "
          "max_quota_scope_size INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)",
          // A database made by an earlier release has a default keypair policy: its users and
          // projects get default policies of the same age (a new one gets them at bootstrap).
          "INSERT INTO user_resource_policies (name, created_at) SELECT name, created_at FROM "
          "keypair_resource_policies WHERE name = 'default'",
          "INSERT INTO project_resource_policies (name, created_at) SELECT name, created_at "
          "FROM keypair_resource_policies WHERE name = 'default'",
      }};
}

server::Migration SessionActivity() {
  return {15,
          "when each session last saw its user (execute, streams, apps, files)",
          {
              "ALTER TABLE sessions ADD COLUMN last_activity TEXT",
          }};
}

server::Migration ResourceGroupFields() {
  return {16,
          "resource groups' driver options, app-proxy address and host networking",
          {
              "ALTER TABLE scaling_groups ADD COLUMN driver_opts TEXT NOT NULL DEFAULT '{}'",
              "ALTER TABLE scaling_groups ADD COLUMN wsproxy_addr TEXT",
              "ALTER TABLE scaling_groups ADD COLUMN wsproxy_api_token TEXT",
              "ALTER TABLE scaling_groups ADD COLUMN use_host_network INTEGER NOT NULL DEFAULT 0",
          }};
}

server::Migration ImageAliases() {
  return {17,
          "image aliases a superadmin defines (alias_image)",
          {
              "CREATE TABLE image_aliases (alias TEXT PRIMARY KEY, target TEXT NOT NULL, "
              "architecture TEXT NOT NULL DEFAULT 'x86_64', created_at TEXT NOT NULL)",
          }};
}

server::Migration SessionStats() {
  return {18,
          "what each session used: live_stat while it runs, last_stat at its end",
          {
              "ALTER TABLE sessions ADD COLUMN live_stat TEXT",
              "ALTER TABLE sessions ADD COLUMN last_stat TEXT",
              "CREATE INDEX sessions_created ON sessions (created_at)",
          }};
}

server::Migration UserConfig() {
  return {19,
          "dotfiles of keypairs, projects and domains; session templates; error logs",
          {
              "CREATE TABLE dotfiles (scope TEXT NOT NULL, owner TEXT NOT NULL, "
              "path TEXT NOT NULL, permission TEXT NOT NULL, data TEXT NOT NULL, "
              "modified_at TEXT NOT NULL, PRIMARY KEY (scope, owner, path))",
              "CREATE TABLE session_templates (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
              "type TEXT NOT NULL DEFAULT 'task', is_active INTEGER NOT NULL DEFAULT 1, "
              "domain_name TEXT NOT NULL, group_id TEXT, user_uuid TEXT NOT NULL, "
              "template TEXT NOT NULL, created_at TEXT NOT NULL)",
              "CREATE INDEX session_templates_owner ON session_templates (user_uuid)",
              "CREATE TABLE error_logs (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, "
              "severity TEXT NOT NULL, source TEXT NOT NULL, user_uuid TEXT, "
              "is_read INTEGER NOT NULL DEFAULT 0, is_cleared INTEGER NOT NULL DEFAULT 0, "
              "message TEXT NOT NULL, context_lang TEXT NOT NULL DEFAULT '', "
              "context_env TEXT NOT NULL DEFAULT '{}', request_url TEXT, request_status INTEGER, "
              "traceback TEXT)",
              "CREATE INDEX error_logs_created ON error_logs (created_at)",
          }};
}

server::Migration Managers() {
  return {20,
          "the managers on the database, each beating while it runs (GET /manager/status)",
          {
              "CREATE TABLE managers (id TEXT PRIMARY KEY, url TEXT NOT NULL, "
              "version TEXT NOT NULL, started_at TEXT NOT NULL, last_seen TEXT NOT NULL)",
          }};
}

server::Migration AgentLoad() {
  return {9,
          "each agent's last reported CPU and memory load",
          {
              "ALTER TABLE agents ADD COLUMN live_stat TEXT",
          }};
}

server::Migration WebSessions() {
  return {21,
          "the web console's logins (bai-webserver, PROTOCOL.md 2.5): one row per signed-in "
          "browser or session-mode client, found by the hash of its cookie",
          {
              "CREATE TABLE web_sessions (token_hash TEXT PRIMARY KEY, "
              "access_key TEXT NOT NULL REFERENCES keypairs(access_key) ON DELETE CASCADE, "
              "username TEXT NOT NULL, role TEXT NOT NULL, status TEXT NOT NULL, "
              "csrf_token TEXT NOT NULL, peer TEXT NOT NULL DEFAULT '', "
              "created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
              "CREATE INDEX web_sessions_expiry ON web_sessions (expires_at)",
          }};
}

server::Migration KernelSetups() {
  return {22,
          "how each session's kernel was set up where it did not choose: network, scratch",
          {
              "ALTER TABLE sessions ADD COLUMN kernel_setup TEXT",
          }};
}

server::Migration FolderQuotas() {
  return {23,
          "each folder's own quota (POST /folders `quota`, POST /folders/_/quota); scope quotas "
          "come from the owners' resource policies (max_quota_scope_size), and the scope rows "
          "that POST /folders/_/quota used to write, which capped every folder of the owner, go",
          {
              "ALTER TABLE vfolders ADD COLUMN max_size INTEGER NOT NULL DEFAULT 0",
              "ALTER TABLE vfolders ADD COLUMN max_files INTEGER NOT NULL DEFAULT 0",
              "DELETE FROM quota_scopes",
          }};
}

server::Migration ContainerRegistries() {
  return {24,
          "container registries (24.09's container_registries: one row per registry and "
          "project) and the images a rescan found in them, one row per canonical name and "
          "architecture (issue 46)",
          {
              "CREATE TABLE container_registries (id TEXT PRIMARY KEY, url TEXT NOT NULL, "
              "registry_name TEXT NOT NULL, type TEXT NOT NULL DEFAULT 'docker', project TEXT, "
              "username TEXT, password TEXT, ssl_verify INTEGER NOT NULL DEFAULT 1, "
              "is_global INTEGER NOT NULL DEFAULT 1, extra TEXT, created_at TEXT NOT NULL, "
              "UNIQUE (registry_name, project))",
              "CREATE TABLE registry_images (canonical TEXT NOT NULL, architecture TEXT NOT NULL, "
              "registry TEXT NOT NULL, project TEXT NOT NULL DEFAULT '', name TEXT NOT NULL, "
              "tag TEXT NOT NULL, manifest_digest TEXT NOT NULL, config_digest TEXT NOT NULL, "
              "size_bytes INTEGER NOT NULL DEFAULT 0, labels TEXT NOT NULL DEFAULT '{}', "
              "scanned_at TEXT NOT NULL, PRIMARY KEY (canonical, architecture))",
          }};
}

}  // namespace

std::vector<server::Migration> const& Migrations() {
  static auto const* const kMigrations = new std::vector<server::Migration>{
      Principals(),   Sessions(),     RateLimits(),      BackgroundTasks(),
      AgentLists(),   VFolders(),     SessionMounts(),   Devices(),
      AgentLoad(),    ServicePorts(), Networks(),        DomainFields(),
      GroupFields(),  UserFields(),   SessionActivity(), ResourceGroupFields(),
      ImageAliases(), SessionStats(), UserConfig(),      Managers(),
      WebSessions(),  KernelSetups(), FolderQuotas(),    ContainerRegistries()};
  return *kMigrations;
}

}  // namespace bai::manager
