// SPDX-License-Identifier: Apache-2.0
// Users and keypairs in /admin/gql (24.09's User and KeyPair queries and mutations;
// streams-admin-console.md §B.2). Reads are scoped as 24.09's scoped_query: superadmins see
// everyone, admins their domain, users and monitors themselves.
#include "libbai/protocol/wire_json.h"
#include "libbai/util/text.h"
#include "server-reference/manager/api/admin_fields.h"
#include "server-reference/manager/api/graphql_util.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/users.h"

#include <algorithm>
#include <map>

namespace bai::manager::admin {

namespace {

using graphql::PlannedField;
using nlohmann::json;

constexpr std::string_view kRoles[] = {"superadmin", "admin", "user", "monitor"};
constexpr std::string_view kStatuses[] = {"active", "inactive", "deleted", "before-verification"};

template <std::size_t N>
bool OneOf(std::string const& value, std::string_view const (&allowed)[N]) {
  return std::find(std::begin(allowed), std::end(allowed), value) != std::end(allowed);
}

std::vector<std::string> Strings(json const& v) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (auto const& s : v) {
      if (s.is_string()) out.push_back(s.get<std::string>());
    }
  }
  return out;
}

class UserFields {
 public:
  explicit UserFields(Context const& ctx) : ctx_(ctx), users_(ctx.db), keypairs_(ctx.db) {}

  FieldResult Resolve(PlannedField const& f) {
    if (f.name == "user") return User(f, "email");
    if (f.name == "user_from_uuid") return User(f, "user_id");
    if (f.name == "users") return Users(f, false);
    if (f.name == "user_list") return Users(f, true);
    if (f.name == "keypairs") return Keypairs(f, false);
    if (f.name == "keypair_list") return Keypairs(f, true);
    if (f.name == "create_user") return CreateUser(f);
    if (f.name == "modify_user") return ModifyUser(f);
    if (f.name == "delete_user") return DeleteUser(f);
    if (f.name == "purge_user") return PurgeUser(f);
    if (f.name == "create_keypair") return CreateKeypair(f);
    if (f.name == "modify_keypair") return ModifyKeypair(f);
    if (f.name == "delete_keypair") return DeleteKeypair(f);
    return std::nullopt;
  }

 private:
  bool Privileged() const { return ctx_.role == Role::kSuperadmin || ctx_.role == Role::kAdmin; }

  // scoped_query's domain: superadmins any (or none); others their own, and asking for another
  // is refused.
  StatusOr<std::string> Domain(PlannedField const& f) const {
    std::string domain = gql::ArgString(f, "domain_name");
    if (ctx_.role == Role::kSuperadmin) return domain;
    if (!domain.empty() && domain != ctx_.who.domain) {
      return gql::Forbidden("You may only query your own domain.");
    }
    return ctx_.who.domain;
  }

  json KeypairObject(protocol::KeyPair k) const {
    // A secret key is its owner's, and superadmins' (24.09 shows it to any admin; an admin
    // who read it could sign as that user outside every check).
    if (ctx_.role != Role::kSuperadmin && k.user != ctx_.who.user_id) k.secret_key.clear();
    return internal::KeyPairToJson(k);
  }

  // user(email) and user_from_uuid(user_id): the caller when not given; users and monitors
  // only themselves.
  StatusOr<json> User(PlannedField const& f, char const* key) {
    auto domain = Domain(f);
    if (!domain.ok()) return domain.status();
    bool by_email = std::string_view(key) == "email";
    std::string mine = by_email ? ctx_.who.email : ctx_.who.user_id;
    std::string wanted = gql::ArgString(f, key);
    if (wanted.empty()) wanted = mine;
    if (!Privileged() && wanted != mine) {
      return gql::Forbidden("Users may only query themselves.");
    }
    auto u = by_email ? users_.ByEmail(wanted) : users_.ByUuid(wanted);
    if (!u.ok()) return u.status();
    if (!*u || (!domain->empty() && (*u)->domain_name != *domain)) return json(nullptr);
    return internal::UserToJson(**u);
  }

  StatusOr<json> Users(PlannedField const& f, bool paged) {
    if (!Privileged()) return gql::Forbidden("Users cannot query other users.");
    auto domain = Domain(f);
    if (!domain.ok()) return domain.status();
    ListQuery q;
    if (!domain->empty()) gql::Where(q, "u.domain_name = ?", *domain);
    if (auto group = gql::ArgString(f, "group_id"); !group.empty()) {
      UserStore::WhereMemberOf(q, group);
    }
    if (auto active = gql::ArgBool(f, "is_active")) {
      q.where.push_back(*active ? "u.status = 'active'" : "u.status <> 'active'");
    }
    if (auto status = gql::ArgString(f, "status"); !status.empty()) {
      gql::Where(q, "u.status = ?", internal::AsciiLower(status));
    }
    if (paged) {
      if (auto s = gql::Window(f, q); !s.ok()) return s;
      if (auto s = gql::FilterAndOrder(f, UserStore::Columns(), q); !s.ok()) return s;
    }
    auto page = users_.List(q);
    if (!page.ok()) return page.status();
    json items = json::array();
    for (auto const& u : page->rows) items.push_back(internal::UserToJson(u));
    if (!paged) return items;
    return json{{"items", std::move(items)}, {"total_count", page->total}};
  }

  // keypairs and keypair_list: users and monitors see their own; email narrows.
  StatusOr<json> Keypairs(PlannedField const& f, bool paged) {
    auto domain = Domain(f);
    if (!domain.ok()) return domain.status();
    std::string email = gql::ArgString(f, "email");
    if (!Privileged()) {
      if (!email.empty() && email != ctx_.who.email) {
        return gql::Forbidden("Users may only list their own keypairs.");
      }
      email = ctx_.who.email;
    }
    ListQuery q;
    if (!domain->empty()) gql::Where(q, "u.domain_name = ?", *domain);
    if (!email.empty()) gql::Where(q, "u.email = ?", email);
    if (auto active = gql::ArgBool(f, "is_active")) {
      q.where.push_back(*active ? "k.is_active = 1" : "k.is_active = 0");
    }
    if (paged) {
      if (auto s = gql::Window(f, q); !s.ok()) return s;
      if (auto s = gql::FilterAndOrder(f, KeypairStore::Columns(), q); !s.ok()) return s;
    }
    auto page = keypairs_.List(q);
    if (!page.ok()) return page.status();
    std::map<std::string, std::int64_t> used;
    bool count = f.Selects("concurrency_used") ||
                 (paged && f.Find("items") && f.Find("items")->Selects("concurrency_used"));
    if (count && !page->rows.empty()) {
      // The sessions not ended of this page's keys only (a page holds at most 1,000).
      std::vector<std::string> keys;
      for (auto const& k : page->rows) keys.push_back(k.access_key);
      auto counted = keypairs_.ActiveSessionCounts(keys);
      if (!counted.ok()) return counted.status();
      used = *std::move(counted);
    }
    json items = json::array();
    for (auto const& k : page->rows) {
      json o = KeypairObject(k);
      auto it = used.find(k.access_key);
      o["concurrency_used"] = it == used.end() ? 0 : it->second;
      items.push_back(std::move(o));
    }
    if (!paged) return items;
    return json{{"items", std::move(items)}, {"total_count", page->total}};
  }

  StatusOr<json> CreateUser(PlannedField const& f) {
    json const& props = f.args["props"];
    NewUser n;
    auto& u = n.user;
    u.email = gql::ArgString(f, "email");
    if (u.email.empty() || u.email.find('@') == std::string::npos) {
      return Refused("invalid email: an address such as user@example.com", "user");
    }
    u.username = props.value("username", "");
    if (u.username.empty()) u.username = u.email;
    std::string password = props.value("password", "");
    if (password.empty()) return Refused("a password is required", "user");
    if (auto const* v = Given(props, "need_password_change"))
      u.need_password_change = v->get<bool>();
    if (auto const* v = Given(props, "full_name")) u.full_name = v->get<std::string>();
    if (auto const* v = Given(props, "description")) u.description = v->get<std::string>();
    auto const* status = Given(props, "status");
    if (status) {
      u.status = internal::AsciiLower(status->get<std::string>());
    } else if (auto const* active = Given(props, "is_active")) {
      u.status = active->get<bool>() ? "active" : "inactive";
    }
    if (!OneOf(u.status, kStatuses)) {
      return Refused("invalid status: active, inactive, deleted or before-verification", "user");
    }
    u.is_active = u.status == "active";
    u.domain_name = props.value("domain_name", "default");
    if (auto const* v = Given(props, "role")) u.role = internal::AsciiLower(v->get<std::string>());
    if (!OneOf(u.role, kRoles)) {
      return Refused("invalid role: superadmin, admin, user or monitor", "user");
    }
    if (auto const* v = Given(props, "allowed_client_ip")) u.allowed_client_ip = Strings(*v);
    if (auto const* v = Given(props, "totp_activated")) u.totp_activated = v->get<bool>();
    if (auto const* v = Given(props, "resource_policy")) u.resource_policy = v->get<std::string>();
    if (auto const* v = Given(props, "sudo_session_enabled"))
      u.sudo_session_enabled = v->get<bool>();
    if (auto const* v = Given(props, "group_ids")) n.group_ids = Strings(*v);
    auto hash = HashPassword(password);
    if (!hash.ok()) return hash.status();
    n.password_hash = *std::move(hash);
    auto made = users_.Create(n);
    if (!made.ok()) {
      auto code = made.status().code();
      if (code == StatusCode::kAlreadyExists || code == StatusCode::kNotFound ||
          code == StatusCode::kInvalidArgument) {
        return Refused("integrity error: " + made.status().message(), "user");
      }
      return made.status();
    }
    return json{{"ok", true}, {"msg", "success"}, {"user", internal::UserToJson(made->first)}};
  }

  StatusOr<json> ModifyUser(PlannedField const& f) {
    std::string email = gql::ArgString(f, "email");
    json const& props = f.args["props"];
    UserChanges c;
    auto text = [&](char const* name) -> std::optional<std::string> {
      auto const* v = Given(props, name);
      return v ? std::optional<std::string>(v->get<std::string>()) : std::nullopt;
    };
    auto flag = [&](char const* name) -> std::optional<bool> {
      auto const* v = Given(props, name);
      return v ? std::optional<bool>(v->get<bool>()) : std::nullopt;
    };
    c.username = text("username");
    if (auto password = text("password"); password && !password->empty()) {
      auto hash = HashPassword(*password);
      if (!hash.ok()) return hash.status();
      c.password_hash = *std::move(hash);
    }
    c.need_password_change = flag("need_password_change");
    c.full_name = text("full_name");
    c.description = text("description");
    if (auto status = text("status")) {
      c.status = internal::AsciiLower(*status);
    } else if (auto active = flag("is_active")) {
      c.status = *active ? "active" : "inactive";
    }
    if (c.status && !OneOf(*c.status, kStatuses)) {
      return Refused("invalid status: active, inactive, deleted or before-verification", "user");
    }
    c.domain_name = text("domain_name");
    if (auto role = text("role")) c.role = internal::AsciiLower(*role);
    if (c.role && !OneOf(*c.role, kRoles)) {
      return Refused("invalid role: superadmin, admin, user or monitor", "user");
    }
    if (auto const* v = Given(props, "allowed_client_ip")) c.allowed_client_ip = Strings(*v);
    c.totp_activated = flag("totp_activated");
    c.resource_policy = text("resource_policy");
    c.sudo_session_enabled = flag("sudo_session_enabled");
    c.main_access_key = text("main_access_key");
    if (auto const* v = Given(props, "group_ids")) {
      auto ids = Strings(*v);
      if (!ids.empty()) c.group_ids = std::move(ids);  // 24.09: an empty list changes nothing
    }
    if (c.Empty()) return Refused("nothing to update", "user");
    // One click must not lock the install out: an administrator's own account keeps its role
    // and stays active (another superadmin may change them).
    if (email == ctx_.who.email) {
      if (c.status && *c.status != "active") {
        return Refused("You cannot deactivate yourself: another superadmin can.", "user");
      }
      if (c.role && *c.role != internal::AsciiLower(ctx_.who.role)) {
        return Refused("You cannot change your own role: another superadmin can.", "user");
      }
    }
    auto s = users_.Modify(email, c);
    if (s.code() == StatusCode::kNotFound) return Refused(NoMatching(f), "user");
    if (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kAlreadyExists) {
      return Refused("integrity error: " + s.message(), "user");
    }
    if (!s.ok()) return s;
    auto now = users_.ByEmail(email);
    if (!now.ok()) return now.status();
    return json{{"ok", true},
                {"msg", "success"},
                {"user", *now ? internal::UserToJson(**now) : json(nullptr)}};
  }

  StatusOr<json> DeleteUser(PlannedField const& f) {
    if (gql::ArgString(f, "email") == ctx_.who.email) {
      return Outcome(false, "You cannot delete yourself.");
    }
    auto s = users_.SoftDelete(gql::ArgString(f, "email"));
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> PurgeUser(PlannedField const& f) {
    std::string email = gql::ArgString(f, "email");
    if (email == ctx_.who.email) return Outcome(false, "You cannot purge yourself.");
    auto s = users_.Purge(email);
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  static StatusOr<KeypairChanges> KeypairProps(json const& props) {
    KeypairChanges c;
    if (auto const* v = Given(props, "is_active")) c.is_active = v->get<bool>();
    if (auto const* v = Given(props, "is_admin")) c.is_admin = v->get<bool>();
    if (auto const* v = Given(props, "resource_policy")) c.resource_policy = v->get<std::string>();
    if (auto const* v = Given(props, "rate_limit")) {
      c.rate_limit = v->get<std::int64_t>();
      if (*c.rate_limit < 1) {
        return Status(StatusCode::kInvalidArgument, "rate_limit: 1 or more requests per window");
      }
    }
    return c;
  }

  StatusOr<json> CreateKeypair(PlannedField const& f) {
    auto c = KeypairProps(f.args["props"]);
    if (!c.ok()) return Refused(c.status().message(), "keypair");
    // 22.03's client may send the user's numeric id; bai's users are named by email.
    auto const& user = f.args["user_id"];
    std::string email = user.is_string() ? user.get<std::string>() : user.dump();
    auto made = keypairs_.Create(email, *c);
    if (!made.ok()) {
      auto code = made.status().code();
      if (code == StatusCode::kNotFound || code == StatusCode::kInvalidArgument) {
        return Refused("integrity error: " + made.status().message(), "keypair");
      }
      return made.status();
    }
    return json{{"ok", true}, {"msg", "success"}, {"keypair", internal::KeyPairToJson(*made)}};
  }

  StatusOr<json> ModifyKeypair(PlannedField const& f) {
    auto c = KeypairProps(f.args["props"]);
    if (!c.ok()) return Outcome(false, c.status().message());
    if (!c->is_active && !c->is_admin && !c->resource_policy && !c->rate_limit) {
      return Outcome(false, "nothing to update");
    }
    auto s = keypairs_.Modify(gql::ArgString(f, "access_key"), *c);
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kInvalidArgument) {
      return Outcome(false, "integrity error: " + s.message());
    }
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> DeleteKeypair(PlannedField const& f) {
    auto s = keypairs_.Delete(gql::ArgString(f, "access_key"));
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  Context const& ctx_;
  UserStore users_;
  KeypairStore keypairs_;
};

}  // namespace

FieldResult ResolveUserField(Context const& ctx, PlannedField const& f) {
  return UserFields(ctx).Resolve(f);
}

bool IsOwnKeypairChange(Context const& ctx, PlannedField const& f) {
  if (ctx.role != Role::kUser && ctx.role != Role::kAdmin) return false;
  if (f.name == "delete_keypair") return true;  // whose it is, the resolver checks
  if (f.name != "create_keypair") return false;
  auto const& user = f.args.contains("user_id") ? f.args["user_id"] : json();
  return user.is_string() && user.get<std::string>() == ctx.who.email;
}

StatusOr<json> ChangeOwnKeypair(Context const& ctx, PlannedField const& f) {
  KeypairStore keypairs(ctx.db);
  auto mine = keypairs.Get(ctx.who.access_key);
  if (!mine.ok()) return mine.status();
  if (!*mine) return Outcome(false, NoMatching(f));
  if (f.name == "delete_keypair") {
    std::string key = gql::ArgString(f, "access_key");
    auto target = keypairs.Get(key);
    if (!target.ok()) return target.status();
    // Another user's key is as unknown as a key that does not exist.
    if (!*target || (*target)->user_id != ctx.who.email) return Outcome(false, NoMatching(f));
    if (key == ctx.who.access_key) {
      return Outcome(false, "a keypair cannot delete itself: sign with another of yours");
    }
    auto s = keypairs.Delete(key);
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }
  auto props = f.args.contains("props") ? f.args["props"] : json::object();
  // (22.03's client sends null for every field it leaves alone.)
  if (props.is_object() && props.contains("is_admin") && props["is_admin"].is_boolean() &&
      props["is_admin"].get<bool>()) {
    return Refused("only a superadmin makes admin keypairs", "keypair");
  }
  ListQuery q;
  gql::Where(q, "u.email = ?", ctx.who.email);
  auto own = keypairs.List(q);
  if (!own.ok()) return own.status();
  if (own->rows.size() >= kMaxOwnKeypairs) {
    return Refused(
        "at most " + std::to_string(kMaxOwnKeypairs) + " keypairs per user: delete one first",
        "keypair");
  }
  // The new key may do what the signing one may: its policy and rate limit, never more.
  KeypairChanges c;
  c.is_active = true;
  c.is_admin = false;
  c.resource_policy = (*mine)->resource_policy;
  c.rate_limit = (*mine)->rate_limit;
  auto made = keypairs.Create(ctx.who.email, c);
  if (!made.ok()) return made.status();
  return json{{"ok", true}, {"msg", "success"}, {"keypair", internal::KeyPairToJson(*made)}};
}

}  // namespace bai::manager::admin
