// SPDX-License-Identifier: Apache-2.0
// `bai admin user|keypair` (anyone's) and `bai user me`, `bai keypair` (one's own): users and
// their keypairs through AdminClient; secrets printed once, when they are made.
#include "bai/admin_client.h"
#include "bai/protocol/dates.h"

#include "cli/commands/admin_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sodium.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace bai::cli {

using nlohmann::json;

namespace {

// 18 random bytes as URL-safe text: a password made for the user, printed once.
std::string RandomPassword() {
  if (sodium_init() < 0) return "";
  unsigned char raw[18];
  randombytes_buf(raw, sizeof raw);
  char text[64];
  sodium_bin2base64(text, sizeof text, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  return text;
}

// ---- users ---------------------------------------------------------------------------------

json UserJson(protocol::User const& u) { return internal::UserToJson(u); }

void PrintUser(Context& ctx, protocol::User const& u) {
  std::string groups;
  for (auto const& g : u.groups) groups += (groups.empty() ? "" : ", ") + g.name;
  std::vector<std::vector<std::string>> rows{{"email", u.email},
                                             {"username", u.username},
                                             {"full name", u.full_name},
                                             {"role", u.role},
                                             {"status", u.status},
                                             {"domain", u.domain_name},
                                             {"projects", groups},
                                             {"resource policy", u.resource_policy},
                                             {"main access key", u.main_access_key},
                                             {"created", u.created_at},
                                             {"id", u.uuid}};
  PrintTable(ctx, rows);
}

// Project names or ids into ids (within `domain`).
StatusOr<std::vector<std::string>> ProjectIds(AdminClient& a, std::vector<std::string> const& refs,
                                              std::string const& domain) {
  std::vector<std::string> ids;
  for (auto const& ref : refs) {
    auto p = FindProject(a, ref, domain);
    if (!p.ok()) return p.status();
    ids.push_back(p->id);
  }
  return ids;
}

StatusOr<std::string> ReadPasswordStdin(Context& ctx) {
  std::string line;
  if (!std::getline(ctx.in(), line) || line.empty()) {
    return Status(StatusCode::kInvalidArgument, "--password-stdin: no password on stdin");
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

struct UserCreateOptions {
  NewUserRequest r;
  std::string password;
  bool password_stdin = false;
  std::vector<std::string> projects;
};

struct UserUpdateOptions {
  std::string email;
  UserUpdate u;
  std::string role, status, name, policy, domain;
  bool password_stdin = false;
  std::vector<std::string> projects;
};

struct UserRemoveOptions {
  std::string email;
  bool purge = false;
};

// bai admin user ls
Status RunUserList(UserFilter& filter, Context& ctx, AdminClient& a) {
  if (ctx.json()) {
    // The server's objects as they came (10,000 users are 5 MB): the document PrintJson
    // would write.
    auto users = a.UsersJson(filter);
    if (!users.ok()) return users.status();
    ctx.out() << "{\"exit_code\":0,\"users\":" << *users << "}\n";
    return Status();
  }
  auto all = a.Users(filter);
  if (!all.ok()) return all.status();
  std::vector<std::vector<std::string>> rows{
      {"EMAIL", "USERNAME", "ROLE", "STATUS", "DOMAIN", "POLICY", "CREATED"}};
  for (auto const& u : *all) {
    rows.push_back({u.email, u.username, u.role, u.status, u.domain_name, u.resource_policy,
                    u.created_at.substr(0, 19)});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin user info
Status RunUserInfo(std::string& email, Context& ctx, AdminClient& a) {
  auto u = a.User(email);
  if (!u.ok()) return u.status();
  if (!*u) return Status(StatusCode::kNotFound, "no user " + email);
  if (ctx.json()) {
    PrintJson(ctx, {{"user", UserJson(**u)}});
  } else {
    PrintUser(ctx, **u);
  }
  return Status();
}

// bai admin user create
Status RunUserCreate(UserCreateOptions& c, Context& ctx, AdminClient& a) {
  bool made_password = false;
  if (!c.password.empty()) {
    return UsageError(
        "--password takes no value on the command line (other users of this "
        "machine can read it there): pipe it to --password-stdin, or leave both "
        "out to have one made and printed once");
  }
  if (c.password_stdin) {
    auto p = ReadPasswordStdin(ctx);
    if (!p.ok()) return p.status();
    c.r.password = *p;
  } else {
    c.r.password = RandomPassword();
    made_password = true;
  }
  auto ids = ProjectIds(a, c.projects, c.r.domain_name);
  if (!ids.ok()) return ids.status();
  c.r.project_ids = *ids;
  auto made = a.CreateUser(c.r);
  if (!made.ok()) return made.status();
  // The main keypair's secret, read once now (superadmins read secrets).
  std::string secret;
  auto keys = a.Keypairs(made->email);
  if (keys.ok()) {
    for (auto const& k : *keys) {
      if (k.access_key == made->main_access_key) secret = k.secret_key;
    }
  }
  if (ctx.json()) {
    json doc = {
        {"user", UserJson(*made)}, {"access_key", made->main_access_key}, {"secret_key", secret}};
    if (made_password) doc["password"] = c.r.password;
    PrintJson(ctx, doc);
    return Status();
  }
  ctx.out() << "created user " << made->email << " in " << made->domain_name << "\n"
            << "access key: " << made->main_access_key << "\n"
            << "secret key: " << secret << "\n";
  if (made_password) ctx.out() << "password:   " << c.r.password << "\n";
  ctx.out() << "(shown once: keep them now)\n";
  return Status();
}

// bai admin user update
Status RunUserUpdate(UserUpdateOptions& up, Context& ctx, AdminClient& a) {
  if (!up.role.empty()) up.u.role = up.role;
  if (!up.status.empty()) up.u.status = up.status;
  if (!up.name.empty()) up.u.full_name = up.name;
  if (!up.policy.empty()) up.u.resource_policy = up.policy;
  if (!up.domain.empty()) up.u.domain_name = up.domain;
  if (up.password_stdin) {
    auto p = ReadPasswordStdin(ctx);
    if (!p.ok()) return p.status();
    up.u.password = *p;
  }
  if (!up.projects.empty()) {
    auto ids = ProjectIds(a, up.projects, up.domain);
    if (!ids.ok()) return ids.status();
    up.u.project_ids = *ids;
  }
  auto changed = a.ModifyUser(up.email, up.u);
  if (!changed.ok()) return changed.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"user", UserJson(*changed)}});
  } else {
    ctx.out() << "updated user " << changed->email << "\n";
  }
  return Status();
}

// bai admin user rm
Status RunUserRemove(UserRemoveOptions& r, Context& ctx, AdminClient& a) {
  auto s = a.DeleteUser(r.email, r.purge);
  if (s.ok()) PrintDone(ctx, (r.purge ? "purged user " : "deleted user ") + r.email);
  return s;
}

void AddUsers(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("user", "Users and their main keypairs");
  noun->require_subcommand(1);
  auto& filter = set.Keep<UserFilter>();
  auto* ls = noun->add_subcommand("ls", "List users");
  ls->alias("list");
  ls->add_option("--domain", filter.domain_name, "Only this domain's");
  ls->add_option("--project", filter.project_id, "Only this project's members (its id)");
  ls->add_option("--status", filter.status, "active, inactive, deleted");
  OnAdminRun(set, ls, [&filter, &ctx](AdminClient& a) { return RunUserList(filter, ctx, a); });
  auto& email = set.Keep<std::string>();
  auto* info = noun->add_subcommand("info", "A user's details");
  info->add_option("EMAIL", email, "The user's email")->required();
  OnAdminRun(set, info, [&email, &ctx](AdminClient& a) { return RunUserInfo(email, ctx, a); });
  auto& c = set.Keep<UserCreateOptions>();
  auto* create = noun->add_subcommand(
      "create", "Create a user and its main keypair; prints the secret key once");
  create->alias("add");
  create->add_option("EMAIL", c.r.email, "The user's email")->required();
  create->add_flag("--password-stdin", c.password_stdin,
                   "Read the password from stdin (without it: one is made and printed once)");
  // Hidden and refused (DECISIONS.md: secrets never on argv), so that the old spelling gets
  // a clear answer instead of "unknown option".
  create->add_option("--password", c.password, "")->group("");
  create->add_option("-u,--username", c.r.username, "Username (default: the email)");
  create->add_option("-n,--name", c.r.full_name, "Full name");
  create->add_option("--domain", c.r.domain_name, "Domain")->default_val("default");
  create->add_option("--role", c.r.role, "user, admin, superadmin, monitor")->default_val("user");
  create->add_option("--project", c.projects, "A project to join (name or id; repeatable)");
  create->add_option("--policy", c.r.resource_policy, "User resource policy")
      ->default_val("default");
  create->add_flag("--need-password-change", c.r.need_password_change,
                   "Ask for a new password at the first login");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunUserCreate(c, ctx, a); });
  auto& up = set.Keep<UserUpdateOptions>();
  auto* update = noun->add_subcommand("update", "Change a user (only the flags given)");
  update->add_option("EMAIL", up.email, "The user's email")->required();
  update->add_option("--role", up.role, "user, admin, superadmin, monitor");
  update->add_option("--status", up.status, "active, inactive");
  update->add_option("-n,--name", up.name, "Full name");
  update->add_option("--policy", up.policy, "User resource policy");
  update->add_option("--domain", up.domain, "Move to this domain");
  update->add_option("--project", up.projects, "Its projects, replacing the current ones");
  update->add_flag("--password-stdin", up.password_stdin, "A new password, read from stdin");
  OnAdminRun(set, update, [&up, &ctx](AdminClient& a) { return RunUserUpdate(up, ctx, a); });
  auto& r = set.Keep<UserRemoveOptions>();
  auto* rm = noun->add_subcommand(
      "rm", "Mark a user deleted and deactivate its keypairs (--purge: remove it for good)");
  rm->add_option("EMAIL", r.email, "The user's email")->required();
  rm->add_flag("--purge", r.purge, "Remove the user, its keypairs and ended sessions");
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunUserRemove(r, ctx, a); });
}

// ---- keypairs ------------------------------------------------------------------------------

// A keypair in listings: never its secret (shown once, at creation).
json KeypairJson(protocol::KeyPair k) {
  k.secret_key.clear();
  json j = internal::KeyPairToJson(k);
  j.erase("secret_key");
  return j;
}

// A keypair just made: its secret, shown this once.
void PrintNewKeypair(Context& ctx, protocol::KeyPair const& k) {
  if (ctx.json()) {
    PrintJson(ctx, {{"keypair", KeypairJson(k)}, {"secret_key", k.secret_key}});
  } else {
    ctx.out() << "access key: " << k.access_key << "\nsecret key: " << k.secret_key
              << "\n(shown once: keep it now)\n";
  }
}

void PrintKeypairs(Context& ctx, std::vector<protocol::KeyPair> const& keys) {
  if (ctx.json()) {
    json items = json::array();
    for (auto const& k : keys) items.push_back(KeypairJson(k));
    PrintJson(ctx, {{"keypairs", items}});
    return;
  }
  std::vector<std::vector<std::string>> rows{
      {"ACCESS KEY", "USER", "ACTIVE", "ADMIN", "POLICY", "RATE LIMIT", "CREATED"}};
  for (auto const& k : keys) {
    rows.push_back({k.access_key, k.user_id, YesNo(k.is_active), YesNo(k.is_admin),
                    k.resource_policy, std::to_string(k.rate_limit), k.created_at.substr(0, 19)});
  }
  PrintTable(ctx, rows);
}

struct KeypairCreateOptions {
  std::string email, policy = "default";
  std::int64_t rate_limit = 10000;
  bool admin = false;
};

struct KeypairUpdateOptions {
  std::string key, policy;
};

// bai admin keypair ls
Status RunKeypairList(std::string& user, Context& ctx, AdminClient& a) {
  auto keys = a.Keypairs(user);
  if (!keys.ok()) return keys.status();
  PrintKeypairs(ctx, *keys);
  return Status();
}

// bai admin keypair create
Status RunKeypairCreate(KeypairCreateOptions& c, Context& ctx, AdminClient& a) {
  auto k = a.CreateKeypair(c.email, c.policy, c.rate_limit, c.admin);
  if (!k.ok()) return k.status();
  PrintNewKeypair(ctx, *k);
  return Status();
}

// bai admin keypair update
Status RunKeypairUpdate(KeypairUpdateOptions& u, Context& ctx, AdminClient& a) {
  auto s = a.SetKeypairPolicy(u.key, u.policy);
  if (s.ok()) PrintDone(ctx, u.key + " now under " + u.policy);
  return s;
}

// bai admin keypair activate|deactivate
Status RunKeypairActivate(std::string const& key, bool active, Context& ctx, AdminClient& a) {
  auto s = a.SetKeypairActive(key, active);
  if (s.ok()) PrintDone(ctx, (active ? "activated " : "deactivated ") + key);
  return s;
}

void AddKeypairs(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("keypair", "Keypairs of any user");
  noun->require_subcommand(1);
  auto& user = set.Keep<std::string>();
  auto* ls = noun->add_subcommand("ls", "List keypairs (secrets are never listed)");
  ls->alias("list");
  ls->add_option("--user", user, "Only this user's (email)");
  OnAdminRun(set, ls, [&user, &ctx](AdminClient& a) { return RunKeypairList(user, ctx, a); });
  auto& c = set.Keep<KeypairCreateOptions>();
  auto* create = noun->add_subcommand("create", "A new keypair for a user; prints its secret once");
  create->alias("add");
  create->add_option("EMAIL", c.email, "The user's email")->required();
  create->add_option("--policy", c.policy, "Keypair resource policy")->default_val("default");
  create->add_option("--rate-limit", c.rate_limit, "Requests per 15 minutes")->default_val(10000);
  create->add_flag("--admin", c.admin, "An admin keypair");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunKeypairCreate(c, ctx, a); });
  auto& key = set.Keep<std::string>();
  for (auto [verb, help, active] :
       {std::tuple{"activate", "Let a keypair sign requests again", true},
        std::tuple{"deactivate", "Stop a keypair signing requests", false}}) {
    auto* cmd = noun->add_subcommand(verb, help);
    cmd->add_option("ACCESS_KEY", key, "The access key")->required();
    OnAdminRun(set, cmd, [&key, &ctx, active = active](AdminClient& a) {
      return RunKeypairActivate(key, active, ctx, a);
    });
  }
  auto& u = set.Keep<KeypairUpdateOptions>();
  auto* update = noun->add_subcommand("update", "Change a keypair's resource policy");
  update->add_option("ACCESS_KEY", u.key, "The access key")->required();
  update->add_option("--policy", u.policy, "Keypair resource policy")->required();
  OnAdminRun(set, update, [&u, &ctx](AdminClient& a) { return RunKeypairUpdate(u, ctx, a); });
  AddRemoveCommand(set, *noun, "Delete a keypair (not a user's main one)", "ACCESS_KEY",
                   "The access key", "deleted",
                   [](AdminClient& a, std::string const& k) { return a.DeleteKeypair(k); });
}

// bai user me
Status RunUserMe(Context& ctx, AdminClient& a) {
  auto u = a.User();
  if (!u.ok()) return u.status();
  if (!*u) return Status(StatusCode::kNotFound, "the server does not know this keypair's user");
  if (ctx.json()) {
    PrintJson(ctx, {{"user", UserJson(**u)}});
  } else {
    PrintUser(ctx, **u);
  }
  return Status();
}

// bai keypair ls (one's own)
Status RunOwnKeypairList(Context& ctx, AdminClient& a) {
  auto all = a.Keypairs();
  if (!all.ok()) return all.status();
  PrintKeypairs(ctx, *all);
  return Status();
}

// bai keypair create (one's own)
Status RunOwnKeypairCreate(Context& ctx, AdminClient& a) {
  auto self = a.User();
  if (!self.ok()) return self.status();
  if (!*self) return Status(StatusCode::kNotFound, "the server does not know this keypair's user");
  // The server gives the new key this one's policy and rate limit, whatever is asked.
  auto k = a.CreateKeypair((*self)->email);
  if (!k.ok()) return k.status();
  PrintNewKeypair(ctx, *k);
  return Status();
}

}  // namespace

void AddUserAdminCommands(CommandSet& set, CLI::App& admin) {
  AddUsers(set, admin);
  AddKeypairs(set, admin);
}

void AddUserCommands(CommandSet& set) {
  auto& ctx = set.ctx();
  static constexpr char kKeypairHelp[] = "Your own keypairs";
  auto* noun = set.root().add_subcommand("user", "Your own account");
  if (set.names_only()) {
    set.root().add_subcommand("keypair", kKeypairHelp);
    return;
  }
  noun->require_subcommand(1);
  auto* me = noun->add_subcommand("me", "Who you are: your user, role, domain and projects");
  OnAdminRun(set, me, [&ctx](AdminClient& a) { return RunUserMe(ctx, a); });

  // One's own keypairs (bai's self-service; `bai admin keypair` is the superadmin's).
  auto* keys = set.root().add_subcommand("keypair", kKeypairHelp);
  keys->require_subcommand(1);
  auto* ls = keys->add_subcommand("ls", "List your keypairs (secrets are never listed)");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunOwnKeypairList(ctx, a); });
  auto* create = keys->add_subcommand(
      "create", "A new keypair of yours, with this one's policy; prints its secret once");
  create->alias("add");
  OnAdminRun(set, create, [&ctx](AdminClient& a) { return RunOwnKeypairCreate(ctx, a); });
  AddRemoveCommand(set, *keys, "Delete one of your keypairs (not your main one)", "ACCESS_KEY",
                   "The access key", "deleted",
                   [](AdminClient& a, std::string const& k) { return a.DeleteKeypair(k); });
}

}  // namespace bai::cli
