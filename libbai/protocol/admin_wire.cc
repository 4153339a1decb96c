// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/admin_wire.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace bai::protocol {

using json = nlohmann::json;

namespace {

std::string Dump(json const& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json OptText(std::string const& text) { return text.empty() ? json(nullptr) : json(text); }

using Fields = internal::AnswerFields;

StatusOr<json> Object(std::string_view text, char const* what) {
  return internal::ParseObject(text, what);
}

}  // namespace

std::string EncodeDomain(Domain const& d) {
  json j = {{"name", d.name},
            {"description", d.description},
            {"is_active", d.is_active},
            {"created_at", d.created_at},
            {"modified_at", d.modified_at.empty() ? json(nullptr) : json(d.modified_at)},
            {"total_resource_slots", d.total_resource_slots},
            {"allowed_vfolder_hosts", d.allowed_vfolder_hosts},
            {"allowed_docker_registries", d.allowed_docker_registries},
            {"integration_id", d.integration_id ? json(*d.integration_id) : json(nullptr)},
            {"scaling_groups", d.scaling_groups}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string EncodeGroup(Group const& g) {
  json j = {{"id", g.id},
            {"name", g.name},
            {"description", g.description},
            {"is_active", g.is_active},
            {"created_at", g.created_at},
            {"modified_at", g.modified_at.empty() ? json(nullptr) : json(g.modified_at)},
            {"domain_name", g.domain_name},
            {"type", g.type ? json(*g.type) : json()},
            {"total_resource_slots", g.total_resource_slots},
            {"allowed_vfolder_hosts", g.allowed_vfolder_hosts},
            {"integration_id", g.integration_id ? json(*g.integration_id) : json(nullptr)},
            {"resource_policy", g.resource_policy},
            {"scaling_groups", g.scaling_groups}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<Group> DecodeGroup(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return Status(StatusCode::kInvalidArgument, "a group: not an object");
  auto str = [&](char const* key) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) return std::string();
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  Group g;
  g.id = str("id");
  g.name = str("name");
  g.description = str("description");
  g.is_active = j->value("is_active", true);
  g.created_at = str("created_at");
  g.modified_at = str("modified_at");
  g.domain_name = str("domain_name");
  if (auto t = str("type"); !t.empty()) {
    g.type = t;
  } else {
    g.type.reset();  // the server has none
  }
  g.total_resource_slots = str("total_resource_slots");
  g.allowed_vfolder_hosts = str("allowed_vfolder_hosts");
  if (auto it = j->find("integration_id"); it != j->end() && it->is_string()) {
    g.integration_id = it->get<std::string>();
  }
  if (auto p = str("resource_policy"); !p.empty()) g.resource_policy = p;
  if (auto it = j->find("scaling_groups"); it != j->end() && it->is_array()) {
    for (auto const& v : *it) {
      if (v.is_string()) g.scaling_groups.push_back(v.get<std::string>());
    }
  }
  if (g.id.empty() || g.name.empty()) {
    return Status(StatusCode::kInvalidArgument, "a group without an id or a name");
  }
  return g;
}

StatusOr<Domain> DecodeDomain(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return Status(StatusCode::kInvalidArgument, "a domain: not an object");
  Domain d;
  auto str = [&](char const* key) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) return std::string();
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  d.name = str("name");
  d.description = str("description");
  d.is_active = j->value("is_active", true);
  d.created_at = str("created_at");
  d.modified_at = str("modified_at");
  d.total_resource_slots = str("total_resource_slots");
  d.allowed_vfolder_hosts = str("allowed_vfolder_hosts");
  for (char const* key : {"allowed_docker_registries", "scaling_groups"}) {
    auto& out =
        std::string(key) == "scaling_groups" ? d.scaling_groups : d.allowed_docker_registries;
    if (auto it = j->find(key); it != j->end() && it->is_array()) {
      for (auto const& v : *it) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
  }
  if (auto it = j->find("integration_id"); it != j->end() && it->is_string()) {
    d.integration_id = it->get<std::string>();
  }
  if (d.name.empty()) return Status(StatusCode::kInvalidArgument, "a domain without a name");
  return d;
}

std::string EncodeUser(User const& u) { return Dump(internal::UserToJson(u)); }

}  // namespace bai::protocol

namespace bai::internal {

using json = nlohmann::json;
using protocol::KeyPair;
using protocol::KeypairResourcePolicy;
using protocol::OptText;
using protocol::ScopeResourcePolicy;
using protocol::User;

json UserToJson(User const& u) {
  json groups = json::array();
  for (auto const& g : u.groups) groups.push_back({{"id", g.id}, {"name", g.name}});
  return json({{"id", u.uuid},
               {"uuid", u.uuid},
               {"username", u.username},
               {"email", u.email},
               {"need_password_change", u.need_password_change},
               {"full_name", u.full_name},
               {"description", u.description},
               {"is_active", u.is_active},
               {"status", u.status},
               {"status_info", OptText(u.status_info)},
               {"created_at", u.created_at},
               {"modified_at", OptText(u.modified_at)},
               {"domain_name", u.domain_name},
               {"role", u.role},
               {"resource_policy", u.resource_policy},
               {"allowed_client_ip",
                u.allowed_client_ip.empty() ? json(nullptr) : json(u.allowed_client_ip)},
               {"totp_activated", u.totp_activated},
               {"sudo_session_enabled", u.sudo_session_enabled},
               {"main_access_key", OptText(u.main_access_key)},
               {"groups", groups}});
}

json KeyPairToJson(KeyPair const& k) {
  return json({{"access_key", k.access_key},
               {"secret_key", OptText(k.secret_key)},
               {"user_id", k.user_id},
               {"user", k.user},
               {"full_name", k.full_name},
               {"user_info", {{"email", k.user_id}, {"full_name", k.full_name}}},
               {"is_active", k.is_active},
               {"is_admin", k.is_admin},
               {"resource_policy", k.resource_policy},
               {"created_at", k.created_at},
               {"modified_at", OptText(k.modified_at)},
               {"last_used", OptText(k.last_used)},
               {"rate_limit", k.rate_limit},
               {"num_queries", k.num_queries},
               {"ssh_public_key", OptText(k.ssh_public_key)},
               {"domain_name", k.domain_name}});
}

json KeypairResourcePolicyToJson(KeypairResourcePolicy const& p) {
  return json({{"name", p.name},
               {"created_at", p.created_at},
               {"default_for_unspecified", p.default_for_unspecified},
               {"total_resource_slots", p.total_resource_slots},
               {"max_session_lifetime", p.max_session_lifetime},
               {"max_concurrent_sessions", p.max_concurrent_sessions},
               {"max_concurrent_sftp_sessions",
                p.max_concurrent_sftp_sessions ? json(*p.max_concurrent_sftp_sessions) : json()},
               {"max_containers_per_session", p.max_containers_per_session},
               {"idle_timeout", p.idle_timeout},
               {"allowed_vfolder_hosts", p.allowed_vfolder_hosts},
               {"max_pending_session_count",
                p.max_pending_session_count ? json(*p.max_pending_session_count) : json(nullptr)},
               {"max_pending_session_resource_slots",
                p.max_pending_session_resource_slots ? json(*p.max_pending_session_resource_slots)
                                                     : json(nullptr)},
               {"max_vfolder_count", p.max_vfolder_count},
               {"max_vfolder_size", p.max_vfolder_size},
               {"max_quota_scope_size", p.max_quota_scope_size}});
}

json ScopeResourcePolicyToJson(ScopeResourcePolicy const& p, bool user) {
  json j = {{"name", p.name},
            {"created_at", p.created_at},
            {"max_vfolder_count", p.max_vfolder_count},
            {"max_quota_scope_size", p.max_quota_scope_size}};
  if (user) {
    j["max_session_count_per_model_session"] = p.max_session_count_per_model_session;
    j["max_customized_image_count"] = p.max_customized_image_count;
  }
  return j;
}

}  // namespace bai::internal

namespace bai::protocol {

std::string EncodeKeyPair(KeyPair const& k) { return Dump(internal::KeyPairToJson(k)); }

std::string EncodeKeypairResourcePolicy(KeypairResourcePolicy const& p) {
  return Dump(internal::KeypairResourcePolicyToJson(p));
}

std::string EncodeScopeResourcePolicy(ScopeResourcePolicy const& p, bool user) {
  return Dump(internal::ScopeResourcePolicyToJson(p, user));
}

StatusOr<User> DecodeUser(std::string_view text) {
  auto j = Object(text, "a user");
  if (!j.ok()) return j.status();
  return internal::UserFromJson(*j);
}

}  // namespace bai::protocol

namespace bai::internal {

StatusOr<protocol::User> UserFromJson(nlohmann::json const& object) {
  if (!object.is_object()) return Status(StatusCode::kInvalidArgument, "a user: not an object");
  json const* j = &object;
  protocol::Fields f(*j);
  protocol::User u;
  u.uuid = f.Str("uuid");
  u.username = f.Str("username");
  u.email = f.Str("email");
  u.need_password_change = f.Bool("need_password_change", false);
  u.full_name = f.Str("full_name");
  u.description = f.Str("description");
  u.is_active = f.Bool("is_active", true);
  if (auto s = f.Str("status"); !s.empty()) u.status = s;
  u.status_info = f.Str("status_info");
  u.created_at = f.Str("created_at");
  u.modified_at = f.Str("modified_at");
  u.domain_name = f.Str("domain_name");
  if (auto r = f.Str("role"); !r.empty()) u.role = r;
  if (auto p = f.Str("resource_policy"); !p.empty()) u.resource_policy = p;
  u.allowed_client_ip = f.Strings("allowed_client_ip");
  u.totp_activated = f.Bool("totp_activated", false);
  u.sudo_session_enabled = f.Bool("sudo_session_enabled", false);
  u.main_access_key = f.Str("main_access_key");
  if (auto it = j->find("groups"); it != j->end() && it->is_array()) {
    for (auto const& g : *it) {
      if (g.is_object()) {
        u.groups.push_back({protocol::Fields(g).Str("id"), protocol::Fields(g).Str("name")});
      }
    }
  }
  if (u.email.empty()) return Status(StatusCode::kInvalidArgument, "a user without an email");
  return u;
}

}  // namespace bai::internal

namespace bai::protocol {

StatusOr<KeyPair> DecodeKeyPair(std::string_view text) {
  auto j = Object(text, "a keypair");
  if (!j.ok()) return j.status();
  Fields f(*j);
  KeyPair k;
  k.access_key = f.Str("access_key");
  k.secret_key = f.Str("secret_key");
  k.user_id = f.Str("user_id");
  k.user = f.Str("user");
  k.full_name = f.Str("full_name");
  k.is_active = f.Bool("is_active", true);
  k.is_admin = f.Bool("is_admin", false);
  if (auto p = f.Str("resource_policy"); !p.empty()) k.resource_policy = p;
  k.created_at = f.Str("created_at");
  k.modified_at = f.Str("modified_at");
  k.last_used = f.Str("last_used");
  k.rate_limit = f.Int("rate_limit");
  k.num_queries = f.Int("num_queries");
  k.ssh_public_key = f.Str("ssh_public_key");
  k.domain_name = f.Str("domain_name");
  if (k.access_key.empty()) {
    return Status(StatusCode::kInvalidArgument, "a keypair without an access key");
  }
  return k;
}

StatusOr<KeypairResourcePolicy> DecodeKeypairResourcePolicy(std::string_view text) {
  auto j = Object(text, "a keypair resource policy");
  if (!j.ok()) return j.status();
  Fields f(*j);
  KeypairResourcePolicy p;
  p.name = f.Str("name");
  p.created_at = f.Str("created_at");
  if (auto d = f.Str("default_for_unspecified"); !d.empty()) p.default_for_unspecified = d;
  if (auto t = f.Str("total_resource_slots"); !t.empty()) p.total_resource_slots = t;
  p.max_session_lifetime = f.Int("max_session_lifetime");
  p.max_concurrent_sessions = f.Int("max_concurrent_sessions");
  if (j->contains("max_concurrent_sftp_sessions") &&
      !(*j)["max_concurrent_sftp_sessions"].is_null()) {
    p.max_concurrent_sftp_sessions = f.Int("max_concurrent_sftp_sessions", 1);
  } else {
    p.max_concurrent_sftp_sessions.reset();  // the server has none
  }
  p.max_containers_per_session = f.Int("max_containers_per_session", 1);
  p.idle_timeout = f.Int("idle_timeout");
  if (auto h = f.Str("allowed_vfolder_hosts"); !h.empty()) p.allowed_vfolder_hosts = h;
  p.max_pending_session_count = f.OptInt("max_pending_session_count");
  if (auto s = f.Str("max_pending_session_resource_slots"); !s.empty()) {
    p.max_pending_session_resource_slots = s;
  }
  p.max_vfolder_count = f.Int("max_vfolder_count");
  p.max_vfolder_size = f.Int("max_vfolder_size");
  p.max_quota_scope_size = f.Int("max_quota_scope_size");
  if (p.name.empty()) return Status(StatusCode::kInvalidArgument, "a policy without a name");
  return p;
}

StatusOr<ScopeResourcePolicy> DecodeScopeResourcePolicy(std::string_view text) {
  auto j = Object(text, "a resource policy");
  if (!j.ok()) return j.status();
  Fields f(*j);
  ScopeResourcePolicy p;
  p.name = f.Str("name");
  p.created_at = f.Str("created_at");
  p.max_vfolder_count = f.Int("max_vfolder_count");
  p.max_quota_scope_size = f.Int("max_quota_scope_size");
  p.max_session_count_per_model_session = f.Int("max_session_count_per_model_session");
  p.max_customized_image_count = f.Int("max_customized_image_count", 3);
  if (p.name.empty()) return Status(StatusCode::kInvalidArgument, "a policy without a name");
  return p;
}

std::string EncodeDotfiles(std::vector<Dotfile> const& dotfiles) {
  json out = json::array();
  for (auto const& d : dotfiles) {
    out.push_back({{"path", d.path}, {"permission", d.permission}, {"data", d.data}});
  }
  return Dump(out);
}

std::string EncodeDotfile(Dotfile const& d) {
  return Dump({{"path", d.path}, {"perm", d.permission}, {"data", d.data}});
}

namespace {

Dotfile ReadDotfile(json const& j) {
  Fields f(j);
  Dotfile d;
  d.path = f.Str("path");
  d.permission = j.contains("permission") ? f.Str("permission") : f.Str("perm");
  d.data = f.Str("data");
  return d;
}

}  // namespace

StatusOr<std::vector<Dotfile>> DecodeDotfiles(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_array()) return Status(StatusCode::kInvalidArgument, "dotfiles: not a list");
  std::vector<Dotfile> out;
  for (auto const& item : *j) {
    if (item.is_object()) out.push_back(ReadDotfile(item));
  }
  return out;
}

StatusOr<Dotfile> DecodeDotfile(std::string_view text) {
  auto j = Object(text, "dotfile");
  if (!j.ok()) return j.status();
  return ReadDotfile(*j);
}

Status CheckDotfile(Dotfile const& d) {
  auto bad = [](std::string const& why) { return Status(StatusCode::kInvalidArgument, why); };
  if (d.permission.size() != 3 || !std::all_of(d.permission.begin(), d.permission.end(),
                                               [](char c) { return c >= '0' && c <= '7'; })) {
    return bad("permission: three octal digits (644), not \"" + d.permission + "\"");
  }
  std::string_view path = d.path;
  constexpr std::string_view kHome = "/home/work/";
  if (path.substr(0, kHome.size()) == kHome) path.remove_prefix(kHome.size());
  if (path.empty() || path.front() == '/') {
    return bad("path: a file beneath /home/work (\".bashrc\", \"/home/work/.vimrc\"), not \"" +
               d.path + "\"");
  }
  std::size_t pos = 0;
  while (pos <= path.size()) {
    auto slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    auto part = path.substr(pos, slash - pos);
    if (part.empty() || part == "." || part == "..") {
      return bad("path: \"" + d.path + "\" must stay beneath /home/work (no empty, . or .. parts)");
    }
    if (part.find('\0') != std::string_view::npos) return bad("path: a NUL byte");
    pos = slash + 1;
  }
  static constexpr std::string_view kReserved[] = {
      ".terminfo", ".jupyter", ".ssh", ".ssh/authorized_keys", ".local", ".config"};
  for (auto r : kReserved) {
    if (path == r) return bad("dotfile path is reserved for internal operations.");
  }
  return Status();
}

std::string EncodeSessionTemplates(std::vector<SessionTemplateInfo> const& templates) {
  json out = json::array();
  for (auto const& t : templates) {
    auto body = internal::ParseJson(t.template_json);
    out.push_back({{"name", t.name},
                   {"id", t.id},
                   {"created_at", t.created_at},
                   {"is_owner", t.is_owner},
                   {"user", t.user},
                   {"group", t.group},
                   {"user_email", OptText(t.user_email)},
                   {"group_name", OptText(t.group_name)},
                   {"domain_name", t.domain_name},
                   {"type", t.type},
                   {"template", body ? *body : json::object()}});
  }
  return Dump(out);
}

StatusOr<std::vector<SessionTemplateInfo>> DecodeSessionTemplates(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_array()) {
    return Status(StatusCode::kInvalidArgument, "session templates: not a list");
  }
  std::vector<SessionTemplateInfo> out;
  for (auto const& item : *j) {
    if (!item.is_object()) continue;
    Fields f(item);
    SessionTemplateInfo t;
    t.id = f.Str("id");
    t.name = f.Str("name");
    t.created_at = f.Str("created_at");
    t.is_owner = f.Bool("is_owner", false);
    t.user = f.Str("user");
    t.group = f.Str("group");
    t.user_email = f.Str("user_email");
    t.group_name = f.Str("group_name");
    t.domain_name = f.Str("domain_name");
    t.type = f.Str("type");
    if (auto it = item.find("template"); it != item.end()) t.template_json = Dump(*it);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace bai::protocol
