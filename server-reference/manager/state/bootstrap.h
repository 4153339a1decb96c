// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/manager/state/store.h"

#include <string>

namespace bai::manager {

/// A new keypair: access key "AKIA" + 16 Base32 characters, secret 40 URL-safe Base64
/// characters (PROTOCOL.md §2.1), from libsodium's CSPRNG.
std::pair<std::string, std::string> GenerateKeypair();
/// A random UUID (v4), lowercase with dashes.
std::string GenerateUuid();
/// Argon2id (libsodium `crypto_pwhash_str`), and its check.
StatusOr<std::string> HashPassword(std::string const& password);
bool VerifyPassword(std::string const& hash, std::string const& password);
/// Costs what VerifyPassword costs and accepts nothing: run for an unknown user, so the answer
/// time does not tell which users exist.
void SpendPasswordCheck(std::string const& password);

struct BootstrapResult {
  bool created = false;  ///< false when the database was already bootstrapped
  std::string credentials_file;
};

/// On the first start: domain, project, resource group and keypair resource policy `default`
/// (with their associations), and a superadmin user with a keypair and a random password, all
/// written to `<data_dir>/admin-credentials.env` (mode 0600). Idempotent.
StatusOr<BootstrapResult> Bootstrap(Store& store, std::string const& data_dir);

/// The secret in `path` (created with 32 random bytes, mode 0600, when missing).
StatusOr<std::string> LoadOrCreateSecret(std::string const& path);

/// Loads a fixture file: a JSON object whose keys are table names (domains, groups, users,
/// association_groups_users, keypair_resource_policies, keypairs, scaling_groups,
/// sgroups_for_domains, sgroups_for_groups, sgroups_for_keypairs, resource_presets) and whose
/// values are lists of rows, as Backend.AI's fixture loader takes them. Users carry a plain
/// `password`, stored hashed; JSON-valued columns may be objects. Rows that already exist are
/// skipped. All or nothing: one transaction. Returns a summary line.
StatusOr<std::string> LoadFixture(Store& store, std::string const& json_text);

}  // namespace bai::manager
