// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/bootstrap.h"

#include "libbai/util/json_parse.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace bai::manager {

using nlohmann::json;
using server::SqlExecutor;
using server::SqlValue;

namespace {

void EnsureSodium() {
  static bool const kReady = sodium_init() >= 0;
  (void)kReady;
}

std::string RandomBase64(std::size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  randombytes_buf(raw.data(), raw.size());
  std::string out(sodium_base64_ENCODED_LEN(bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), raw.data(), raw.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(std::strlen(out.c_str()));
  return out;
}

Status WriteSecretFile(std::string const& path, std::string const& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(StatusCode::kPermissionDenied,
                  "cannot write " + path + ": " + std::strerror(errno));
  }
  ::fchmod(fd, 0600);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok) return Status(StatusCode::kDataLoss, "cannot write " + path);
  return {};
}

Status Exec(SqlExecutor& tx, std::string const& sql, std::vector<SqlValue> params) {
  auto r = tx.Exec(sql, std::move(params));
  return r.ok() ? Status() : r.status();
}

}  // namespace

std::pair<std::string, std::string> GenerateKeypair() {
  EnsureSodium();
  static constexpr char kBase32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  unsigned char raw[10];
  randombytes_buf(raw, sizeof raw);
  std::string access = "AKIA";
  // 80 bits → 16 Base32 characters, 5 bits each.
  std::uint64_t hi = 0;
  for (int i = 0; i < 5; ++i) hi = (hi << 8) | raw[i];
  std::uint64_t lo = 0;
  for (int i = 5; i < 10; ++i) lo = (lo << 8) | raw[i];
  for (std::uint64_t part : {hi, lo}) {
    for (int shift = 35; shift >= 0; shift -= 5) access.push_back(kBase32[(part >> shift) & 31]);
  }
  return {access, RandomBase64(30)};
}

std::string GenerateUuid() {
  uuid_t id;
  uuid_generate_random(id);
  char text[37];
  uuid_unparse_lower(id, text);
  return text;
}

StatusOr<std::string> HashPassword(std::string const& password) {
  EnsureSodium();
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.c_str(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
    return Status(StatusCode::kResourceExhausted, "out of memory while hashing a password");
  }
  return std::string(out);
}

bool VerifyPassword(std::string const& hash, std::string const& password) {
  EnsureSodium();
  if (hash.empty() || hash.size() >= crypto_pwhash_STRBYTES) return false;
  return crypto_pwhash_str_verify(hash.c_str(), password.c_str(), password.size()) == 0;
}

void SpendPasswordCheck(std::string const& password) {
  static std::string const decoy = [] {
    auto hash = HashPassword("bai-decoy-" + RandomBase64(12));
    return hash.ok() ? *hash : std::string();
  }();
  (void)VerifyPassword(decoy, password);
}

StatusOr<BootstrapResult> Bootstrap(Store& store, std::string const& data_dir) {
  BootstrapResult result;
  result.credentials_file = data_dir + "/admin-credentials.env";
  auto done = store.GetSetting("bootstrapped_at");
  if (!done.ok()) return std::move(done).status();
  if (*done) return result;

  auto [access_key, secret_key] = GenerateKeypair();
  std::string password = RandomBase64(18);
  auto hash = HashPassword(password);
  if (!hash.ok()) return std::move(hash).status();
  std::string now = NowIso();
  std::string user_id = GenerateUuid();
  std::string group_id = GenerateUuid();
  // Managers starting together on one new database: the first bootstraps, the others find it
  // done under the scope (ADR 9) and start on it.
  bool already = false;
  auto status = store.db().Transaction({"bootstrap"}, [&](SqlExecutor& tx) -> Status {
    auto again = tx.Query("SELECT value FROM manager_settings WHERE key = 'bootstrapped_at'");
    if (!again.ok()) return again.status();
    if (!again->empty()) {
      already = true;
      return Status();
    }
    std::vector<std::pair<std::string, std::vector<SqlValue>>> steps = {
        {"INSERT INTO domains (name, description, created_at) VALUES ('default', "
         "'The default domain', ?) ON CONFLICT DO NOTHING",
         {now}},
        {"INSERT INTO keypair_resource_policies (name, max_concurrent_sessions, "
         "max_containers_per_session, created_at) VALUES ('default', 30, 1, ?) "
         "ON CONFLICT DO NOTHING",
         {now}},
        {"INSERT INTO user_resource_policies (name, created_at) VALUES ('default', ?) "
         "ON CONFLICT DO NOTHING",
         {now}},
        {"INSERT INTO project_resource_policies (name, created_at) VALUES ('default', ?) "
         "ON CONFLICT DO NOTHING",
         {now}},
        {"INSERT INTO groups (id, name, domain_name, description, created_at) VALUES (?, "
         "'default', 'default', 'The default project', ?) ON CONFLICT DO NOTHING",
         {group_id, now}},
        {"INSERT INTO scaling_groups (name, description, created_at) VALUES ('default', "
         "'The default resource group', ?) ON CONFLICT DO NOTHING",
         {now}},
        {"INSERT INTO sgroups_for_domains (scaling_group, domain) VALUES ('default', 'default') "
         "ON CONFLICT DO NOTHING",
         {}},
        {"INSERT INTO users (uuid, username, email, password_hash, full_name, role, status, "
         "domain_name, created_at) VALUES (?, 'admin', 'admin@bai.local', ?, 'Superadmin', "
         "'superadmin', 'active', 'default', ?)",
         {user_id, *hash, now}},
        {"INSERT INTO association_groups_users (group_id, user_id) "
         "SELECT id, ? FROM groups WHERE domain_name = 'default' AND name = 'default'",
         {user_id}},
        {"INSERT INTO keypairs (access_key, secret_key, user_id, is_active, is_admin, "
         "resource_policy, rate_limit, created_at) VALUES (?, ?, ?, 1, 1, 'default', 100000, ?)",
         {access_key, secret_key, user_id, now}},
        {"INSERT INTO manager_settings (key, value) VALUES ('bootstrapped_at', ?)", {now}},
    };
    for (auto& [sql, params] : steps) {
      if (auto s = Exec(tx, sql, params); !s.ok()) return s;
    }
    return Status();
  });
  if (!status.ok()) return status;
  if (already) return result;
  std::string text = "# bai-manager superadmin, created " + now +
                     "\nBACKEND_ACCESS_KEY=" + access_key + "\nBACKEND_SECRET_KEY=" + secret_key +
                     "\nBAI_ADMIN_USERNAME=admin\nBAI_ADMIN_EMAIL=admin@bai.local" +
                     "\nBAI_ADMIN_PASSWORD=" + password + "\n";
  if (auto s = WriteSecretFile(result.credentials_file, text); !s.ok()) return s;
  result.created = true;
  return result;
}

StatusOr<std::string> LoadOrCreateSecret(std::string const& path) {
  std::ifstream in(path);
  if (in) {
    std::string secret;
    std::getline(in, secret);
    if (secret.size() >= 32) return secret;
    return Status(StatusCode::kFailedPrecondition, path + " is too short to be a cluster secret");
  }
  std::string secret = RandomBase64(32);
  if (auto s = WriteSecretFile(path, secret + "\n"); !s.ok()) return s;
  return secret;
}

namespace {

struct TableSpec {
  char const* name;
  std::set<std::string> columns;
  std::set<std::string> json_columns;
  std::set<std::string> required;
};

// Load order respects foreign keys. Column names come only from these lists, never from input.
std::vector<TableSpec> const& FixtureTables() {
  static auto const* const kTables = new std::vector<TableSpec>{
      {"domains",
       {"name", "description", "is_active", "total_resource_slots"},
       {"total_resource_slots"},
       {"name"}},
      {"keypair_resource_policies",
       {"name", "total_resource_slots", "default_for_unspecified", "max_concurrent_sessions",
        "max_containers_per_session", "max_session_lifetime", "idle_timeout",
        "max_pending_session_count"},
       {"total_resource_slots"},
       {"name"}},
      {"groups",
       {"id", "name", "domain_name", "description", "is_active", "total_resource_slots"},
       {"total_resource_slots"},
       {"id", "name", "domain_name"}},
      {"users",
       {"uuid", "username", "email", "password", "full_name", "role", "status", "domain_name",
        "allowed_client_ip"},
       {"allowed_client_ip"},
       {"uuid", "email", "password", "domain_name"}},
      {"association_groups_users", {"group_id", "user_id"}, {}, {"group_id", "user_id"}},
      {"keypairs",
       {"access_key", "secret_key", "user_id", "user", "is_active", "is_admin", "resource_policy",
        "rate_limit"},
       {},
       {"access_key", "secret_key", "resource_policy"}},
      {"scaling_groups",
       {"name", "description", "is_active", "is_public", "scheduler", "scheduler_opts"},
       {"scheduler_opts"},
       {"name"}},
      {"sgroups_for_domains", {"scaling_group", "domain"}, {}, {"scaling_group", "domain"}},
      {"sgroups_for_groups", {"scaling_group", "group_id"}, {}, {"scaling_group", "group_id"}},
      {"sgroups_for_keypairs",
       {"scaling_group", "access_key"},
       {},
       {"scaling_group", "access_key"}},
      {"resource_presets",
       {"name", "resource_slots", "shared_memory"},
       {"resource_slots"},
       {"name", "resource_slots"}},
  };
  return *kTables;
}

StatusOr<SqlValue> ToSqlValue(json const& v, bool json_column) {
  if (v.is_null()) return SqlValue(nullptr);
  if (json_column && (v.is_object() || v.is_array())) return SqlValue(v.dump());
  if (v.is_boolean()) return SqlValue(static_cast<std::int64_t>(v.get<bool>() ? 1 : 0));
  if (v.is_number_integer()) return SqlValue(v.get<std::int64_t>());
  if (v.is_number()) return SqlValue(v.get<double>());
  if (v.is_string()) return SqlValue(v.get<std::string>());
  return Status(StatusCode::kInvalidArgument, "unsupported value " + v.dump());
}

}  // namespace

StatusOr<std::string> LoadFixture(Store& store, std::string const& json_text) {
  auto doc = internal::ParseJson(json_text);
  if (!doc || !doc->is_object()) {
    return Status(StatusCode::kInvalidArgument, "the fixture is not a JSON object");
  }
  std::set<std::string> known;
  for (auto const& t : FixtureTables()) known.insert(t.name);
  for (auto const& [key, value] : doc->items()) {
    if (!known.count(key)) {
      return Status(StatusCode::kInvalidArgument, "unknown fixture table \"" + key + "\"");
    }
    if (!value.is_array()) {
      return Status(StatusCode::kInvalidArgument, "fixture table \"" + key + "\" must be a list");
    }
  }
  int inserted = 0;
  int skipped = 0;
  std::string now = NowIso();
  // Passwords are hashed (Argon2, deliberately slow) before the transaction: inside it, a
  // fixture of a few users held the database for seconds, and agents' heartbeats waited.
  std::map<nlohmann::json const*, std::string> hashes;  // row → its password's hash
  for (auto const& table : FixtureTables()) {
    if (!doc->contains(table.name)) continue;
    for (auto const& row : (*doc)[table.name]) {
      if (!row.is_object() || !row.contains("password") || !row["password"].is_string()) continue;
      auto hash = HashPassword(row["password"].get<std::string>());
      if (!hash.ok()) return hash.status();
      hashes[&row] = *hash;
    }
  }
  auto status = store.db().Transaction([&](SqlExecutor& tx) -> Status {
    for (auto const& table : FixtureTables()) {
      if (!doc->contains(table.name)) continue;
      int index = 0;
      for (auto const& row : (*doc)[table.name]) {
        std::string where = std::string(table.name) + "[" + std::to_string(index++) + "]";
        if (!row.is_object())
          return Status(StatusCode::kInvalidArgument, where + " is not an object");
        for (auto const& req : table.required) {
          bool has = row.contains(req) || (req == "password" && row.contains("password_hash"));
          if (!has) return Status(StatusCode::kInvalidArgument, where + " lacks \"" + req + "\"");
        }
        std::vector<std::string> columns;
        std::vector<SqlValue> values;
        for (auto const& [col, v] : row.items()) {
          if (!table.columns.count(col)) {
            return Status(StatusCode::kInvalidArgument, where + ": unknown column \"" + col + "\"");
          }
          std::string column = col;
          SqlValue value;
          if (column == "password") {
            if (!v.is_string())
              return Status(StatusCode::kInvalidArgument, where + ": password must be a string");
            column = "password_hash";
            value = hashes.at(&row);
          } else {
            if (column == "user") column = "user_id";
            auto converted = ToSqlValue(v, table.json_columns.count(col) > 0);
            if (!converted.ok())
              return Status(StatusCode::kInvalidArgument,
                            where + "." + col + ": " + converted.status().message());
            value = *converted;
          }
          columns.push_back(column);
          values.push_back(std::move(value));
        }
        std::string name = table.name;
        if (name == "users" && !row.contains("username")) {
          columns.push_back("username");
          values.emplace_back(row["email"].get<std::string>());
        }
        bool timestamped = name == "domains" || name == "keypair_resource_policies" ||
                           name == "groups" || name == "users" || name == "keypairs" ||
                           name == "scaling_groups";
        if (timestamped) {
          columns.push_back("created_at");
          values.emplace_back(now);
        }
        std::string sql = "INSERT INTO " + name + " (";
        std::string marks;
        for (std::size_t i = 0; i < columns.size(); ++i) {
          sql += (i ? ", " : "") + columns[i];
          marks += i ? ", ?" : "?";
        }
        sql += ") VALUES (" + marks + ") ON CONFLICT DO NOTHING";
        auto r = tx.Exec(sql, values);
        if (!r.ok()) return Status(r.status().code(), where + ": " + r.status().message());
        (*r > 0 ? inserted : skipped) += 1;
      }
    }
    return Status();
  });
  if (!status.ok()) return status;
  return "fixture loaded: " + std::to_string(inserted) + " rows inserted, " +
         std::to_string(skipped) + " already present";
}

}  // namespace bai::manager
