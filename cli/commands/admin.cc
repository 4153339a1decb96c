// SPDX-License-Identifier: Apache-2.0
// `bai admin domain|project|user|keypair|policy …` and `bai user me`: administration through
// AdminClient. Tables on a terminal, `-o json` documents with the 24.09 field names, secrets
// printed once, when they are made.
#include "cli/commands/admin.h"

#include "bai/admin_client.h"
#include "bai/protocol/dates.h"

#include "cli/commands/admin_util.h"
#include "cli/commands/session_util.h"
#include "cli/commands/vfolder.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sodium.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace bai::cli {

using nlohmann::json;

int WithAdmin(Context& ctx, std::function<Status(AdminClient&)> const& body) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  AdminClient admin(*client);
  Status s = body(admin);
  if (!s.ok()) return ReportError(ctx, s);
  return 0;
}

json SlotsObject(std::string const& text) {
  auto j = internal::ParseJson(text);
  json out = json::object();
  if (!j || !j->is_object()) return out;
  for (auto const& [k, v] : j->items()) {
    if (v.is_number()) {
      out[k] = v;
      continue;
    }
    auto amount = v.is_string()
                      ? protocol::Decimal::Parse(v.get<std::string>())
                      : StatusOr<protocol::Decimal>(Status(StatusCode::kInvalidArgument, ""));
    if (!amount.ok()) {
      out[k] = v;
    } else if (amount->is_unlimited()) {
      out[k] = nullptr;
    } else if (amount->Floor() == *amount) {
      out[k] = static_cast<std::int64_t>(amount->units() / protocol::Decimal::kUnitsPerOne);
    } else {
      out[k] = amount->ToDouble();
    }
  }
  return out;
}

json JsonOrText(std::string const& text) {
  auto j = internal::ParseJson(text);
  return j ? *j : json(text);
}

// A domain or project as -o json shows it: its slot map and folder hosts as objects, not the JSON
// text GraphQL carries them in (issue 43, item 11).
json DomainJson(protocol::Domain const& d) {
  json j = json::parse(protocol::EncodeDomain(d));
  j["total_resource_slots"] = SlotsObject(d.total_resource_slots);
  j["allowed_vfolder_hosts"] = JsonOrText(d.allowed_vfolder_hosts);
  return j;
}

json ProjectJson(protocol::Group const& g) {
  json j = json::parse(protocol::EncodeGroup(g));
  j["total_resource_slots"] = SlotsObject(g.total_resource_slots);
  j["allowed_vfolder_hosts"] = JsonOrText(g.allowed_vfolder_hosts);
  return j;
}

std::string SlotsWords(std::string const& text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object() || j->empty()) return "-";
  std::string out;
  for (auto const& [k, v] : j->items()) {
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

StatusOr<std::string> SlotsFlag(std::string const& flag, std::string const& value) {
  if (value.empty()) return std::string("{}");
  if (value.front() == '{') {
    auto j = internal::ParseJson(value);
    if (!j || !j->is_object()) {
      return UsageError(flag + ": not a JSON object");
    }
    return j->dump();
  }
  protocol::ResourceSlots slots;
  if (auto s = protocol::ParseSlotAssignment(value, slots); !s.ok()) {
    return UsageError(flag + ": " + s.message());
  }
  return internal::SlotsToJson(slots).dump();
}

void AddRemoveCommand(CommandSet& set, CLI::App& noun, std::string const& help,
                      std::string const& arg, std::string const& arg_help, std::string const& done,
                      std::function<Status(AdminClient&, std::string const&)> remove) {
  auto& ctx = set.ctx();
  auto& value = set.Keep<std::string>();
  auto* rm = noun.add_subcommand("rm", help);
  rm->add_option(arg, value, arg_help)->required();
  set.OnRun(rm, [&ctx, &value, done, remove = std::move(remove)] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto s = remove(a, value);
      if (s.ok()) PrintDone(ctx, done + " " + value);
      return s;
    });
  });
}

namespace {

std::string YesNo(bool b) { return b ? "yes" : "no"; }

// 18 random bytes as URL-safe text: a password made for the user, printed once.
std::string RandomPassword() {
  if (sodium_init() < 0) return "";
  unsigned char raw[18];
  randombytes_buf(raw, sizeof raw);
  char text[64];
  sodium_bin2base64(text, sizeof text, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  return text;
}

// ---- domains -------------------------------------------------------------------------------

struct DomainCreateOptions {
  protocol::Domain d;
  std::string slots;
};

struct DomainRemoveOptions {
  std::string name;
  bool purge = false;
};

// bai admin domain ls
Status RunDomainList(Context& ctx, AdminClient& a) {
  auto all = a.Domains();
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& d : *all) items.push_back(DomainJson(d));
    PrintJson(ctx, {{"domains", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{
      {"NAME", "ACTIVE", "TOTAL SLOTS", "RESOURCE GROUPS", "DESCRIPTION"}};
  for (auto const& d : *all) {
    std::string groups;
    for (auto const& g : d.scaling_groups) groups += (groups.empty() ? "" : ",") + g;
    rows.push_back({d.name, YesNo(d.is_active), SlotsWords(d.total_resource_slots),
                    groups.empty() ? "-" : groups, d.description});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin domain create
Status RunDomainCreate(DomainCreateOptions& c, Context& ctx, AdminClient& a) {
  auto slots = SlotsFlag("--slots", c.slots);
  if (!slots.ok()) return slots.status();
  c.d.total_resource_slots = *slots;
  auto made = a.CreateDomain(c.d);
  if (!made.ok()) return made.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"domain", DomainJson(*made)}});
  } else {
    ctx.out() << "created domain " << made->name << "\n";
  }
  return Status();
}

// bai admin domain rm
Status RunDomainRemove(DomainRemoveOptions& r, Context& ctx, AdminClient& a) {
  auto s = a.DeleteDomain(r.name, r.purge);
  if (s.ok()) PrintDone(ctx, (r.purge ? "purged domain " : "deactivated domain ") + r.name);
  return s;
}

void AddDomains(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("domain", "Domains (superadmins)");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List domains");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunDomainList(ctx, a); });
  auto& c = set.Keep<DomainCreateOptions>();
  auto* create = noun->add_subcommand("create", "Create a domain");
  create->alias("add");
  create->add_option("NAME", c.d.name, "Domain name")->required();
  create->add_option("-d,--description", c.d.description, "Description");
  create->add_option("--slots", c.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunDomainCreate(c, ctx, a); });
  auto& r = set.Keep<DomainRemoveOptions>();
  auto* rm = noun->add_subcommand("rm", "Deactivate a domain (--purge: delete it, when empty)");
  rm->add_option("NAME", r.name, "Domain name")->required();
  rm->add_flag("--purge", r.purge, "Delete it for good");
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunDomainRemove(r, ctx, a); });
}

// ---- projects ------------------------------------------------------------------------------

// A project by id or name (within `domain`, "" = the caller's view).
StatusOr<protocol::Group> FindProject(AdminClient& a, std::string const& ref,
                                      std::string const& domain) {
  auto all = a.Projects(domain);
  if (!all.ok()) return all.status();
  std::vector<protocol::Group> named;
  for (auto const& g : *all) {
    if (g.id == ref) return g;
    if (g.name == ref) named.push_back(g);
  }
  if (named.size() == 1) return named.front();
  if (named.empty()) return Status(StatusCode::kNotFound, "no project " + ref);
  return Status(StatusCode::kInvalidArgument,
                "several domains have a project " + ref + ": give --domain or its id");
}

struct ProjectCreateOptions {
  protocol::Group g;
  std::string slots;
};

struct ProjectRemoveOptions {
  std::string ref, domain;
  bool purge = false;
};

// bai admin project ls
Status RunProjectList(std::string& domain, Context& ctx, AdminClient& a) {
  auto all = a.Projects(domain);
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& g : *all) items.push_back(ProjectJson(g));
    PrintJson(ctx, {{"projects", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{
      {"NAME", "DOMAIN", "ACTIVE", "TOTAL SLOTS", "ID", "DESCRIPTION"}};
  for (auto const& g : *all) {
    rows.push_back({g.name, g.domain_name, YesNo(g.is_active), SlotsWords(g.total_resource_slots),
                    g.id, g.description});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin project create
Status RunProjectCreate(ProjectCreateOptions& c, Context& ctx, AdminClient& a) {
  auto slots = SlotsFlag("--slots", c.slots);
  if (!slots.ok()) return slots.status();
  c.g.total_resource_slots = *slots;
  auto made = a.CreateProject(c.g);
  if (!made.ok()) return made.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"project", ProjectJson(*made)}});
  } else {
    ctx.out() << "created project " << made->name << " (" << made->id << ") in "
              << made->domain_name << "\n";
  }
  return Status();
}

// bai admin project rm
Status RunProjectRemove(ProjectRemoveOptions& r, Context& ctx, AdminClient& a) {
  auto p = FindProject(a, r.ref, r.domain);
  if (!p.ok()) return p.status();
  auto s = a.DeleteProject(p->id, r.purge);
  if (s.ok()) PrintDone(ctx, (r.purge ? "purged project " : "deactivated project ") + r.ref);
  return s;
}

void AddProjects(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("project", "Projects (groups) and their members");
  noun->alias("group");
  noun->require_subcommand(1);
  auto& domain = set.Keep<std::string>();
  auto* ls = noun->add_subcommand("ls", "List projects");
  ls->alias("list");
  ls->add_option("--domain", domain, "Only this domain's");
  OnAdminRun(set, ls, [&domain, &ctx](AdminClient& a) { return RunProjectList(domain, ctx, a); });
  auto& c = set.Keep<ProjectCreateOptions>();
  auto* create = noun->add_subcommand("create", "Create a project");
  create->alias("add");
  create->add_option("NAME", c.g.name, "Project name")->required();
  create->add_option("--domain", c.g.domain_name, "Its domain")->default_val("default");
  create->add_option("-d,--description", c.g.description, "Description");
  create->add_option("--slots", c.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunProjectCreate(c, ctx, a); });
  auto& r = set.Keep<ProjectRemoveOptions>();
  auto* rm = noun->add_subcommand("rm", "Deactivate a project (--purge: delete it, when empty)");
  rm->add_option("PROJECT", r.ref, "Name or id")->required();
  rm->add_option("--domain", r.domain, "Its domain (when the name is in several)");
  rm->add_flag("--purge", r.purge, "Delete it for good");
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunProjectRemove(r, ctx, a); });
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
    set.OnRun(cmd, [&ctx, &key, active = active] {
      return WithAdmin(ctx, [&](AdminClient& a) -> Status {
        auto s = a.SetKeypairActive(key, active);
        if (s.ok()) PrintDone(ctx, (active ? "activated " : "deactivated ") + key);
        return s;
      });
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

// ---- keypair resource policies -------------------------------------------------------------

struct PolicyFlags {
  std::string name, slots, unspecified, idle, lifetime;
  std::optional<std::int64_t> max_sessions, max_pending, max_containers;
};

void AddPolicyFlags(CLI::App* cmd, PolicyFlags& f) {
  cmd->add_option("NAME", f.name, "Policy name")->required();
  cmd->add_option("--slots", f.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  cmd->add_option("--unspecified", f.unspecified,
                  "Slots not in --slots: unlimited or limited (none)");
  cmd->add_option("--max-sessions", f.max_sessions, "Sessions at once (0: no limit)");
  cmd->add_option("--max-pending", f.max_pending, "Sessions waiting at once");
  cmd->add_option("--max-containers", f.max_containers, "Containers per session");
  cmd->add_option("--idle-timeout", f.idle, "End sessions idle this long (30m, 2h; 0: never)");
  cmd->add_option("--max-lifetime", f.lifetime, "End sessions after this long (0: never)");
}

// The flags given, applied to `p`; a usage error names the flag.
Status ApplyPolicyFlags(PolicyFlags const& f, protocol::KeypairResourcePolicy& p) {
  if (!f.slots.empty()) {
    auto slots = SlotsFlag("--slots", f.slots);
    if (!slots.ok()) return slots.status();
    p.total_resource_slots = *slots;
  }
  if (!f.unspecified.empty()) {
    if (f.unspecified != "limited" && f.unspecified != "unlimited") {
      return UsageError("--unspecified: limited or unlimited");
    }
    p.default_for_unspecified = f.unspecified == "limited" ? "LIMITED" : "UNLIMITED";
  }
  if (f.max_sessions) p.max_concurrent_sessions = *f.max_sessions;
  if (f.max_pending) p.max_pending_session_count = *f.max_pending;
  if (f.max_containers) p.max_containers_per_session = *f.max_containers;
  for (auto [flag, text, target] :
       {std::tuple{"--idle-timeout", &f.idle, &p.idle_timeout},
        std::tuple{"--max-lifetime", &f.lifetime, &p.max_session_lifetime}}) {
    if (text->empty()) continue;
    auto seconds = protocol::ParseDurationSeconds(*text);  // 0: never, as the help says
    if (!seconds || *seconds < 0) {
      return UsageError(std::string(flag) + " " + *text +
                        ": expected a duration such as 30m, 2h, 1d (or seconds; 0: never)");
    }
    *target = *seconds;
  }
  return Status();
}

void PrintPolicies(Context& ctx, std::vector<protocol::KeypairResourcePolicy> const& all) {
  if (ctx.json()) {
    json items = json::array();
    for (auto const& p : all) {
      // Objects, not the JSON text GraphQL carries them in (issue 43, item 11).
      json j = internal::KeypairResourcePolicyToJson(p);
      j["total_resource_slots"] = SlotsObject(p.total_resource_slots);
      j["allowed_vfolder_hosts"] = JsonOrText(p.allowed_vfolder_hosts);
      if (p.max_pending_session_resource_slots) {
        j["max_pending_session_resource_slots"] =
            SlotsObject(*p.max_pending_session_resource_slots);
      }
      items.push_back(std::move(j));
    }
    PrintJson(ctx, {{"policies", items}});
    return;
  }
  std::vector<std::vector<std::string>> rows{{"NAME", "TOTAL SLOTS", "UNSPECIFIED", "SESSIONS",
                                              "PENDING", "CONTAINERS", "IDLE", "LIFETIME"}};
  auto secs = [](std::int64_t s) { return s == 0 ? std::string("-") : std::to_string(s) + "s"; };
  for (auto const& p : all) {
    rows.push_back(
        {p.name, SlotsWords(p.total_resource_slots),
         p.default_for_unspecified == "LIMITED" ? "none" : "unlimited",
         p.max_concurrent_sessions ? std::to_string(p.max_concurrent_sessions) : "-",
         p.max_pending_session_count ? std::to_string(*p.max_pending_session_count) : "-",
         std::to_string(p.max_containers_per_session), secs(p.idle_timeout),
         secs(p.max_session_lifetime)});
  }
  PrintTable(ctx, rows);
}

// bai admin policy ls
Status RunPolicyList(Context& ctx, AdminClient& a) {
  auto all = a.KeypairPolicies();
  if (!all.ok()) return all.status();
  PrintPolicies(ctx, *all);
  return Status();
}

// bai admin policy create
Status RunPolicyCreate(PolicyFlags& c, Context& ctx, AdminClient& a) {
  protocol::KeypairResourcePolicy p;
  p.name = c.name;
  p.max_concurrent_sessions = 30;  // 24.09's CLI default
  if (auto s = ApplyPolicyFlags(c, p); !s.ok()) return s;
  auto made = a.CreateKeypairPolicy(p);
  if (!made.ok()) return made.status();
  PrintPolicies(ctx, {*made});
  return Status();
}

// bai admin policy update
Status RunPolicyUpdate(PolicyFlags& u, Context& ctx, AdminClient& a) {
  auto all = a.KeypairPolicies();
  if (!all.ok()) return all.status();
  auto it = std::find_if(all->begin(), all->end(), [&](auto const& p) { return p.name == u.name; });
  if (it == all->end()) return Status(StatusCode::kNotFound, "no policy " + u.name);
  protocol::KeypairResourcePolicy p = *it;
  if (auto s = ApplyPolicyFlags(u, p); !s.ok()) return s;
  if (auto s = a.ModifyKeypairPolicy(p); !s.ok()) return s;
  PrintPolicies(ctx, {p});
  return Status();
}

void AddPolicies(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("policy", "Keypair resource policies (what a key may use)");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List keypair resource policies");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunPolicyList(ctx, a); });
  auto& c = set.Keep<PolicyFlags>();
  auto* create = noun->add_subcommand("create", "Create a keypair resource policy");
  create->alias("add");
  AddPolicyFlags(create, c);
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunPolicyCreate(c, ctx, a); });
  auto& u = set.Keep<PolicyFlags>();
  auto* update = noun->add_subcommand("update", "Change a policy (only the flags given)");
  AddPolicyFlags(update, u);
  OnAdminRun(set, update, [&u, &ctx](AdminClient& a) { return RunPolicyUpdate(u, ctx, a); });
  AddRemoveCommand(
      set, *noun, "Delete a policy no keypair uses", "NAME", "Policy name", "deleted policy",
      [](AdminClient& a, std::string const& name) { return a.DeleteKeypairPolicy(name); });
}

// User and project resource policies: an owner's folders (how many, and their quota together).
void AddScopePolicies(CommandSet& set, CLI::App& admin, bool user) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand(
      user ? "user-policy" : "project-policy",
      user ? "User resource policies: how many folders a user may own, and their quota together"
           : "Project resource policies: how many folders a project may own, and their quota "
             "together");
  noun->require_subcommand(1);
  auto print = [&ctx, user](std::vector<protocol::ScopeResourcePolicy> const& all) {
    if (ctx.json()) {
      json items = json::array();
      for (auto const& p : all) items.push_back(internal::ScopeResourcePolicyToJson(p, user));
      PrintJson(ctx, {{"policies", items}});
      return;
    }
    std::vector<std::vector<std::string>> rows{{"NAME", "FOLDERS", "QUOTA (ALL FOLDERS)"}};
    for (auto const& p : all) {
      // 0 (and 23.09's -1) is no limit.
      rows.push_back({p.name, p.max_vfolder_count > 0 ? std::to_string(p.max_vfolder_count) : "-",
                      p.max_quota_scope_size > 0
                          ? HumanBytes(static_cast<double>(p.max_quota_scope_size))
                          : "-"});
    }
    PrintTable(ctx, rows);
  };
  auto* ls = noun->add_subcommand("ls", "List them");
  ls->alias("list");
  set.OnRun(ls, [&ctx, print, user] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto all = a.ScopePolicies(user);
      if (!all.ok()) return all.status();
      print(*all);
      return Status();
    });
  });
  struct Flags {
    std::string name, quota;
    std::optional<std::int64_t> folders;
  };
  // The flags given, applied to `p`.
  auto apply = [](Flags const& f, protocol::ScopeResourcePolicy& p) -> Status {
    if (f.folders) p.max_vfolder_count = *f.folders;
    if (!f.quota.empty()) {
      auto size =
          f.quota == "none" ? protocol::ParseBinarySize("0") : protocol::ParseBinarySize(f.quota);
      if (!size.ok() || size->is_unlimited()) {
        return UsageError("--quota: a size such as 100g (0 or none: no quota), not '" + f.quota +
                          "'");
      }
      p.max_quota_scope_size =
          static_cast<std::int64_t>(size->units() / protocol::Decimal::kUnitsPerOne);
    }
    return Status();
  };
  for (bool create : {true, false}) {
    auto& f = set.Keep<Flags>();
    auto* cmd = noun->add_subcommand(create ? "create" : "update",
                                     create ? "Create one" : "Change one (only the flags given)");
    if (create) cmd->alias("add");
    cmd->add_option("NAME", f.name, "Policy name")->required();
    cmd->add_option("--max-folders", f.folders, "Folders an owner may have (0: no limit)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--quota", f.quota,
                    "All of an owner's folders together, e.g. 100g (0 or none: no quota)");
    set.OnRun(cmd, [&ctx, &f, apply, print, user, create] {
      return WithAdmin(ctx, [&](AdminClient& a) -> Status {
        protocol::ScopeResourcePolicy p;
        p.name = f.name;
        if (!create) {
          auto all = a.ScopePolicies(user);
          if (!all.ok()) return all.status();
          auto it = std::find_if(all->begin(), all->end(),
                                 [&](auto const& q) { return q.name == f.name; });
          if (it == all->end()) return Status(StatusCode::kNotFound, "no policy " + f.name);
          p = *it;
        }
        if (auto s = apply(f, p); !s.ok()) return s;
        auto s = create ? a.CreateScopePolicy(p, user) : a.ModifyScopePolicy(p, user);
        if (!s.ok()) return s;
        auto all = a.ScopePolicies(user);
        if (!all.ok()) return all.status();
        std::vector<protocol::ScopeResourcePolicy> shown;
        for (auto const& q : *all) {
          if (q.name == f.name) shown.push_back(q);
        }
        // A manager may take a field and keep nothing (23.09 stores no max_vfolder_count).
        if (!shown.empty() && f.folders && shown.front().max_vfolder_count != *f.folders) {
          ctx.err() << "bai: warning: the manager kept no folder limit for " << f.name
                    << " (it answers " << shown.front().max_vfolder_count
                    << "); this server version does not enforce --max-folders\n";
        }
        print(shown);
        return Status();
      });
    });
  }
  AddRemoveCommand(
      set, *noun, "Delete a policy no one uses", "NAME", "Policy name", "deleted policy",
      [user](AdminClient& a, std::string const& name) { return a.DeleteScopePolicy(name, user); });
}

// ---- resource groups -----------------------------------------------------------------------

struct ResourceGroupAssocOptions {
  std::string group, domain, project, keypair;
};

void AddResourceGroups(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("resource-group", "Who may use which resource group");
  noun->alias("sgroup");
  noun->require_subcommand(1);
  for (bool on : {true, false}) {
    auto& a = set.Keep<ResourceGroupAssocOptions>();
    auto* cmd =
        noun->add_subcommand(on ? "associate" : "dissociate",
                             on ? "Let a domain, project or keypair use a resource group"
                                : "Stop a domain, project or keypair using a resource group");
    cmd->add_option("GROUP", a.group, "Resource group")->required();
    auto* d = cmd->add_option("--domain", a.domain, "A domain");
    auto* p = cmd->add_option("--project", a.project, "A project (name or id)");
    auto* k = cmd->add_option("--keypair", a.keypair, "An access key");
    d->excludes(p)->excludes(k);
    p->excludes(k);
    set.OnRun(cmd, [&ctx, &a, on] {
      return WithAdmin(ctx, [&](AdminClient& admin_client) -> Status {
        std::string kind = !a.domain.empty()    ? "domain"
                           : !a.project.empty() ? "project"
                           : !a.keypair.empty() ? "keypair"
                                                : "";
        if (kind.empty()) {
          return Status(StatusCode::kInvalidArgument, "give --domain, --project or --keypair");
        }
        std::string target = kind == "domain" ? a.domain : a.keypair;
        if (kind == "project") {
          auto found = FindProject(admin_client, a.project, "");
          if (!found.ok()) return found.status();
          target = found->id;
        }
        auto s = admin_client.AssociateResourceGroup(a.group, kind, target, on);
        if (s.ok()) {
          PrintDone(ctx, std::string(on ? "associated " : "dissociated ") + a.group +
                             (on ? " with " : " from ") + kind + " " +
                             (kind == "project" ? a.project : target));
        }
        return s;
      });
    });
  }
}

// ---- usage ---------------------------------------------------------------------------------

// "2026-11-01..2026-11-30" (or "20261101..20261130") → its two dates; "2026-11" → that month.
StatusOr<std::pair<std::string, std::string>> PeriodFlag(std::string const& text) {
  auto dots = text.find("..");
  if (dots != std::string::npos) return std::make_pair(text.substr(0, dots), text.substr(dots + 2));
  int y = 0, m = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d%c", &y, &m, &rest) == 2) {
    char first[16];
    std::snprintf(first, sizeof first, "%04d-%02d-01", y, m);
    if (auto start = protocol::ParseHttpDate(std::string(first) + "T00:00:00Z")) {
      // The last day: the one before the next month's first (31 days on always lands in it).
      std::string next = protocol::FormatRfc3339(start->unix_seconds + 31 * 86400, 0);
      auto after = protocol::ParseHttpDate(next.substr(0, 8) + "01T00:00:00Z");
      return std::make_pair(std::string(first),
                            protocol::FormatRfc3339(after->unix_seconds - 86400, 0).substr(0, 10));
    }
  }
  return Status(
      StatusCode::kInvalidArgument,
      "--period: START..END (2026-11-01..2026-11-30) or a month (2026-11), not \"" + text + "\"");
}

// "1:02:03" from 24.09's "1:02:03.250000" (whole seconds read better in a table).
std::string ShortDuration(std::optional<std::string> const& text) {
  if (!text) return "running";
  auto dot = text->find('.');
  return dot == std::string::npos ? *text : text->substr(0, dot);
}

std::string Number(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

struct UsageOptions {
  std::string period, project;
};

// bai admin usage (the report of a period)
Status RunUsage(UsageOptions& f, Context& ctx, AdminClient& a) {
  auto period = PeriodFlag(f.period);
  if (!period.ok()) return period.status();
  std::string project_id;
  if (!f.project.empty()) {
    auto found = FindProject(a, f.project, "");
    if (!found.ok()) return found.status();
    project_id = found->id;
  }
  auto usage = a.Usage(period->first, period->second, project_id);
  if (!usage.ok()) return usage.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"period", {{"start", period->first}, {"end", period->second}}},
                    {"projects", json::parse(protocol::EncodeProjectUsages(*usage))}});
    return Status();
  }
  // CSV keeps raw units (bytes, CPU milliseconds) for spreadsheets; the table reads easily.
  bool raw = ctx.csv();
  auto bytes = [raw](std::int64_t b) {
    return raw ? std::to_string(b) : HumanBytes(static_cast<double>(b));
  };
  auto cpu = [raw](double ms) { return raw ? Number(ms, 0) : Number(ms / 1000, 1) + "s"; };
  std::vector<std::vector<std::string>> rows{
      {"PROJECT", "SESSION", "USER", "STARTED", "DURATION", "STATUS", raw ? "CPU_ALLOCATED" : "CPU",
       raw ? "CPU_TIME_MS" : "CPU TIME", raw ? "MEM_ALLOCATED" : "MEM",
       raw ? "MEM_PEAK" : "MEM PEAK", raw ? "IO_READ" : "READ", raw ? "IO_WRITE" : "WRITTEN",
       "GPU"}};
  for (auto const& p : *usage) {
    for (auto const& s : p.sessions) {
      auto const& u = s.total_usage;
      rows.push_back({p.project_name, s.session_name, s.user_email,
                      raw ? s.created_at : s.created_at.substr(0, 16), ShortDuration(s.used_time),
                      s.status, Number(u.cpu_allocated, 1), cpu(u.cpu_used), bytes(u.mem_allocated),
                      bytes(u.mem_used), bytes(u.io_read), bytes(u.io_write),
                      Number(u.gpu_allocated, 2)});
    }
    if (!raw) {
      auto const& t = p.total_usage;
      rows.push_back({p.project_name,
                      "(" + std::to_string(p.sessions.size()) +
                          (p.sessions.size() == 1 ? " session)" : " sessions)"),
                      "", "", "", "total", Number(t.cpu_allocated, 1), cpu(t.cpu_used),
                      bytes(t.mem_allocated), bytes(t.mem_used), bytes(t.io_read),
                      bytes(t.io_write), Number(t.gpu_allocated, 2)});
    }
  }
  if (usage->empty() && !raw) {
    ctx.out() << "no sessions from " << period->first << " to " << period->second << "\n";
    return Status();
  }
  PrintTable(ctx, rows);
  return Status();
}

void AddUsage(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto& f = set.Keep<UsageOptions>();
  auto* cmd = admin.add_subcommand(
      "usage", "What sessions used over a period: CPU time, memory peak, I/O, per project");
  cmd->add_option("--period", f.period, "START..END (2026-11-01..2026-11-30) or a month (2026-11)")
      ->required();
  cmd->add_option("--project", f.project, "Only this project (name or id)");
  OnAdminRun(set, cmd, [&f, &ctx](AdminClient& a) { return RunUsage(f, ctx, a); });
}

}  // namespace

void AddAdminCommands(CommandSet& set) {
  auto* admin = set.root().add_subcommand("admin",
                                          "Administration: domains, projects, users, "
                                          "keypairs, policies, resource groups, images, "
                                          "agents, presets, usage");
  if (set.names_only()) return;
  admin->require_subcommand(1);
  AddDomains(set, *admin);
  AddProjects(set, *admin);
  AddUsers(set, *admin);
  AddKeypairs(set, *admin);
  AddPolicies(set, *admin);
  AddScopePolicies(set, *admin, true);
  AddScopePolicies(set, *admin, false);
  AddResourceGroups(set, *admin);
  AddClusterAdminCommands(set, *admin);
  AddUsage(set, *admin);
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

void AddDotfileCommands(CommandSet& set) {
  auto& ctx = set.ctx();
  auto* noun = set.root().add_subcommand(
      "dotfile",
      "Files written into each new session's /home/work: yours, a project's, a domain's");
  if (set.names_only()) return;
  noun->require_subcommand(1);
  struct Flags {
    std::string path, file, data, perm = "644", project, domain;
    bool has_data = false;
  };
  auto owner_flags = [](CLI::App* cmd, Flags& f) {
    auto* p = cmd->add_option("--project", f.project, "A project's (admins write; members read)");
    cmd->add_option("--domain", f.domain, "A domain's (or the project's domain)");
    (void)p;
  };
  auto owner = [](Flags const& f) { return AdminClient::DotfileOwner{f.project, f.domain}; };

  auto& l = set.Keep<Flags>();
  auto* ls = noun->add_subcommand("ls", "List dotfiles");
  ls->alias("list");
  owner_flags(ls, l);
  set.OnRun(ls, [&ctx, &l, owner] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto all = a.Dotfiles(owner(l));
      if (!all.ok()) return all.status();
      if (ctx.json()) {
        PrintJson(ctx, {{"dotfiles", json::parse(protocol::EncodeDotfiles(*all))}});
        return Status();
      }
      std::vector<std::vector<std::string>> rows{{"PATH", "PERMISSION", "SIZE"}};
      for (auto const& d : *all) {
        rows.push_back({d.path, d.permission, std::to_string(d.data.size())});
      }
      PrintTable(ctx, rows);
      return Status();
    });
  });

  auto& g = set.Keep<Flags>();
  auto* get = noun->add_subcommand("get", "Print a dotfile's contents");
  get->add_option("PATH", g.path, "Its path (.bashrc, /home/work/.vimrc)")->required();
  owner_flags(get, g);
  set.OnRun(get, [&ctx, &g, owner] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto all = a.Dotfiles(owner(g));
      if (!all.ok()) return all.status();
      std::string wanted = g.path.rfind("/home/work/", 0) == 0 ? g.path.substr(11) : g.path;
      for (auto const& d : *all) {
        if (d.path != wanted) continue;
        if (ctx.json()) {
          PrintJson(ctx, {{"dotfile", json::parse(protocol::EncodeDotfiles({d}))[0]}});
        } else {
          ctx.out() << d.data;
        }
        return Status();
      }
      return Status(StatusCode::kNotFound, "no dotfile " + g.path);
    });
  });

  auto& s = set.Keep<Flags>();
  auto* put = noun->add_subcommand(
      "set", "Create or replace a dotfile from a file, --data, or standard input");
  put->add_option("PATH", s.path, "Its path in /home/work (.bashrc)")->required();
  auto* from = put->add_option("-f,--file", s.file, "Read the contents from this file");
  put->add_option("--data", s.data, "The contents")->excludes(from);
  put->add_option("--perm", s.perm, "Permission bits, three octal digits")->capture_default_str();
  owner_flags(put, s);
  set.OnRun(put, [&ctx, &s, owner, put] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      protocol::Dotfile d{s.path, s.perm, s.data};
      if (!s.file.empty()) {
        std::ifstream in(s.file, std::ios::binary);
        if (!in) return Status(StatusCode::kNotFound, "cannot read " + s.file);
        d.data.assign(std::istreambuf_iterator<char>(in), {});
      } else if (put->count("--data") == 0) {
        if (ctx.stdin_tty()) {
          return Status(StatusCode::kInvalidArgument,
                        "give the contents with -f FILE or --data, or pipe them in");
        }
        d.data.assign(std::istreambuf_iterator<char>(ctx.in()), {});
      }
      auto made = a.PutDotfile(d, false, owner(s));
      if (made.code() == StatusCode::kInvalidArgument &&
          made.message().find("already exists") != std::string::npos) {
        made = a.PutDotfile(d, true, owner(s));
      }
      if (made.ok()) PrintDone(ctx, "dotfile " + d.path + " set");
      return made;
    });
  });

  auto& r = set.Keep<Flags>();
  auto* rm = noun->add_subcommand("rm", "Delete a dotfile");
  rm->add_option("PATH", r.path, "Its path")->required();
  owner_flags(rm, r);
  set.OnRun(rm, [&ctx, &r, owner] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto done = a.DeleteDotfile(r.path, owner(r));
      if (done.ok()) PrintDone(ctx, "dotfile " + r.path + " deleted");
      return done;
    });
  });
}

// A template named by its id or its name (unique among those the caller may see): its id.
StatusOr<std::string> TemplateId(AdminClient& a, std::string const& ref) {
  auto all = a.Templates(false);
  if (!all.ok()) return all.status();
  std::vector<std::string> named;
  for (auto const& t : *all) {
    if (t.id == ref) return t.id;
    if (t.name == ref) named.push_back(t.id);
  }
  if (named.size() == 1) return named.front();
  if (named.empty()) {
    // An id the caller may use but not list (a project's): the server decides. Anything else
    // names nothing (a real manager answers 500 for an id that is not one).
    std::string hex;
    for (char ch : ref) {
      if (ch != '-') hex += ch;
    }
    bool id =
        hex.size() == 32 && hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
    if (id) return ref;
    return Status(StatusCode::kNotFound, "no template named " + ref + " (nor with that id)");
  }
  std::string ids;
  for (auto const& id : named) ids += (ids.empty() ? "" : ", ") + id;
  return Status(StatusCode::kFailedPrecondition,
                "several templates are named " + ref + " (" + ids + "): give the id");
}

struct TemplateOptions {
  std::string id, file, project, format = "yaml", name, command;
  bool all = false;
};

// bai template ls
Status RunTemplateList(TemplateOptions& l, Context& ctx, AdminClient& a) {
  auto all = a.Templates(l.all);
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"templates", json::parse(protocol::EncodeSessionTemplates(*all))}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{{"ID", "NAME", "IMAGE", "TYPE", "PROJECT", "OWNER"}};
  for (auto const& t : *all) {
    auto body = internal::ParseJson(t.template_json);
    std::string image = "-", type = "-";
    if (body && body->contains("spec") && (*body)["spec"].is_object()) {
      auto const& spec = (*body)["spec"];
      type = spec.value("session_type", "-");
      if (spec.contains("kernel") && spec["kernel"].is_object()) {
        image = spec["kernel"].value("image", "-");
      }
    }
    rows.push_back({t.id, t.name, image, type, t.group_name.empty() ? "-" : t.group_name,
                    t.user_email.empty() ? t.user : t.user_email});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai template get
Status RunTemplateGet(TemplateOptions& g, Context& ctx, AdminClient& a) {
  auto id = TemplateId(a, g.id);
  if (!id.ok()) return id.status();
  auto text = a.TemplateText(*id, ctx.json() ? "json" : "yaml");
  if (!text.ok()) return text.status();
  ctx.out() << *text;
  if (text->empty() || text->back() != '\n') ctx.out() << "\n";
  return Status();
}

// bai template rm
Status RunTemplateRemove(TemplateOptions& r, Context& ctx, AdminClient& a) {
  auto id = TemplateId(a, r.id);
  if (!id.ok()) return id.status();
  auto done = a.DeleteTemplate(*id);
  if (done.ok()) PrintDone(ctx, "template " + r.id + " deleted");
  return done;
}

// bai template run (create a session from it)
Status RunTemplateRun(TemplateOptions& s, Context& ctx, AdminClient& a) {
  std::map<std::string, std::string> overrides;
  if (!s.name.empty()) overrides["name"] = s.name;
  if (!s.command.empty()) overrides["startupCommand"] = s.command;
  auto id = TemplateId(a, s.id);
  if (!id.ok()) return id.status();
  auto made = a.CreateFromTemplate(*id, overrides);
  if (!made.ok()) return made.status();
  if (ctx.json()) {
    PrintJson(ctx,
              {{"session", {{"id", made->id}, {"name", made->name}, {"status", made->status}}}});
  } else {
    ctx.out() << made->name << "\n";
  }
  return Status();
}

void AddTemplateCommands(CommandSet& set) {
  auto& ctx = set.ctx();
  auto* noun = set.root().add_subcommand(
      "template", "Session templates: a session's image, command, resources and folders, stored");
  if (set.names_only()) return;
  noun->require_subcommand(1);
  // A payload from -f FILE or standard input.
  auto read_payload = [&ctx](TemplateOptions const& f) -> StatusOr<std::string> {
    std::string text;
    if (!f.file.empty()) {
      std::ifstream in(f.file, std::ios::binary);
      if (!in) return Status(StatusCode::kNotFound, "cannot read " + f.file);
      text.assign(std::istreambuf_iterator<char>(in), {});
    } else {
      if (ctx.stdin_tty()) {
        return Status(StatusCode::kInvalidArgument,
                      "give the template with -f FILE, or pipe it in");
      }
      text.assign(std::istreambuf_iterator<char>(ctx.in()), {});
    }
    return text;
  };

  auto& l = set.Keep<TemplateOptions>();
  auto* ls = noun->add_subcommand("ls", "List your templates");
  ls->alias("list");
  ls->add_flag("-a,--all", l.all, "Every template you may manage (admins: the domain's)");
  OnAdminRun(set, ls, [&l, &ctx](AdminClient& a) { return RunTemplateList(l, ctx, a); });

  auto& g = set.Keep<TemplateOptions>();
  auto* get = noun->add_subcommand("get", "Print a template (YAML; -o json: JSON)");
  get->add_option("TEMPLATE", g.id, "The template's id or name")->required();
  OnAdminRun(set, get, [&g, &ctx](AdminClient& a) { return RunTemplateGet(g, ctx, a); });

  auto& c = set.Keep<TemplateOptions>();
  auto* create = noun->add_subcommand(
      "create", "Store a template (YAML or JSON) from -f FILE or standard input; prints its id");
  create->add_option("-f,--file", c.file, "The template file");
  create->add_option("--project", c.project, "The project it belongs to (default: default)");
  set.OnRun(create, [&ctx, &c, read_payload] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto payload = read_payload(c);
      if (!payload.ok()) return payload.status();
      auto ids = a.CreateTemplates(*payload, c.project);
      if (!ids.ok()) return ids.status();
      if (ctx.json()) {
        PrintJson(ctx, {{"ids", *ids}});
      } else {
        for (auto const& id : *ids) ctx.out() << id << "\n";
      }
      return Status();
    });
  });

  auto& u = set.Keep<TemplateOptions>();
  auto* update =
      noun->add_subcommand("update", "Replace a template from -f FILE or standard input");
  update->add_option("TEMPLATE", u.id, "The template's id or name")->required();
  update->add_option("-f,--file", u.file, "The template file");
  set.OnRun(update, [&ctx, &u, read_payload] {
    return WithAdmin(ctx, [&](AdminClient& a) -> Status {
      auto payload = read_payload(u);
      if (!payload.ok()) return payload.status();
      auto id = TemplateId(a, u.id);
      if (!id.ok()) return id.status();
      auto done = a.UpdateTemplate(*id, *payload);
      if (done.ok()) PrintDone(ctx, "template " + u.id + " updated");
      return done;
    });
  });

  auto& r = set.Keep<TemplateOptions>();
  auto* rm = noun->add_subcommand("rm", "Delete a template");
  rm->add_option("TEMPLATE", r.id, "The template's id or name")->required();
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunTemplateRemove(r, ctx, a); });

  auto& s = set.Keep<TemplateOptions>();
  auto* run = noun->add_subcommand(
      "run", "Queue a session from a template; prints its name (follow it with bai logs -f)");
  run->add_option("TEMPLATE", s.id, "The template's id or name")->required();
  run->add_option("-n,--name", s.name, "The session's name");
  run->add_option("-c,--command", s.command, "A command instead of the template's");
  OnAdminRun(set, run, [&s, &ctx](AdminClient& a) { return RunTemplateRun(s, ctx, a); });
}

}  // namespace bai::cli
