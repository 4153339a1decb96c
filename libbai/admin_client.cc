// SPDX-License-Identifier: Apache-2.0
// AdminClient: administration queries and mutations over /admin/gql, decoded with the admin
// wire codecs the manager encodes with.
#include "bai/admin_client.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/graphql_wire.h"
#include "bai/session_client.h"

#include "libbai/protocol/server_dialect.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"
#include "libbai/util/json_scan.h"
#include "libbai/util/url.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <set>

namespace bai {

namespace {

using nlohmann::json;

constexpr char kDomainFields[] =
    "name description is_active created_at modified_at total_resource_slots "
    "allowed_vfolder_hosts allowed_docker_registries integration_id scaling_groups";
constexpr char kGroupFields[] =
    "id name description is_active created_at modified_at domain_name type "
    "total_resource_slots allowed_vfolder_hosts integration_id resource_policy scaling_groups";
constexpr char kUserFields[] =
    "uuid username email need_password_change full_name description is_active status "
    "status_info created_at modified_at domain_name role resource_policy allowed_client_ip "
    "totp_activated sudo_session_enabled main_access_key groups { id name }";
constexpr char kKeypairFields[] =
    "access_key secret_key user_id user full_name is_active is_admin resource_policy created_at "
    "modified_at last_used rate_limit num_queries ssh_public_key";
constexpr char kPolicyFields[] =
    "name created_at default_for_unspecified total_resource_slots max_session_lifetime "
    "max_concurrent_sessions max_concurrent_sftp_sessions max_containers_per_session "
    "idle_timeout allowed_vfolder_hosts max_pending_session_count "
    "max_pending_session_resource_slots max_vfolder_count max_vfolder_size "
    "max_quota_scope_size";

std::string Fields(char const* list) { return std::string(" { ") + list + " }"; }

StatusOr<json> Run(Client const& client, std::string const& query, json variables = nullptr) {
  protocol::GraphqlRequest request;
  request.query = query;
  if (!variables.is_null()) request.variables_json = variables.dump();
  auto data = RunGraphql(client, request);
  if (!data.ok()) return data.status();
  auto j = internal::ParseJson(*data);
  if (!j || !j->is_object()) return Status(StatusCode::kInternal, "malformed GraphQL data");
  return *std::move(j);
}

// A mutation's payload, or its refusal as a Status.
StatusOr<json> Mutate(Client const& client, std::string const& field, std::string const& query,
                      json variables) {
  auto data = Run(client, query, std::move(variables));
  if (!data.ok()) return data.status();
  json const& payload = (*data)[field];
  if (!payload.is_object()) return Status(StatusCode::kInternal, "no answer to " + field);
  if (payload.value("ok", false)) return payload;
  std::string msg = payload.value("msg", "refused");
  StatusCode code = StatusCode::kInvalidArgument;
  if (msg.rfind("no permission", 0) == 0) {
    code = StatusCode::kPermissionDenied;
  } else if (msg.rfind("no matching", 0) == 0) {
    code = StatusCode::kNotFound;
  } else if (msg.find("duplicate key") != std::string::npos) {
    code = StatusCode::kAlreadyExists;
  } else if (msg.rfind("integrity error", 0) == 0 || msg.find("first") != std::string::npos ||
             msg.find("Terminate") != std::string::npos) {
    code = StatusCode::kFailedPrecondition;
  }
  return Status(code, field + ": " + msg);
}

template <class T, class Decode>
StatusOr<std::vector<T>> DecodeAll(json const& items, Decode decode) {
  std::vector<T> out;
  if (!items.is_array()) return out;
  for (auto const& item : items) {
    auto one = decode(item.dump());
    if (!one.ok()) return one.status();
    out.push_back(*std::move(one));
  }
  return out;
}

// A template payload as the server reads it: Backend.AI's {template: …} documents, or as written
// for bai's own manager (server_dialect.h TemplatePayloadForBackendAi).
std::string TemplatePayloadFor(Client const& client, std::string const& payload) {
  auto caps = client.server();
  bool backend_ai = caps.ok() && caps->kind == ServerCapabilities::Kind::kBackendAi;
  return backend_ai ? protocol::TemplatePayloadForBackendAi(payload) : payload;
}

// A policy as create/modify's props: the object the manager answers with, less what is not
// an input (its name is an argument; its creation time is the server's).
json PolicyProps(protocol::KeypairResourcePolicy const& p) {
  json props = internal::KeypairResourcePolicyToJson(p);
  props.erase("name");
  props.erase("created_at");
  if (props["max_concurrent_sftp_sessions"].is_null()) props.erase("max_concurrent_sftp_sessions");
  return props;
}

}  // namespace

StatusOr<std::vector<protocol::Domain>> AdminClient::Domains() const {
  auto data = Run(client_, "{ domains" + Fields(kDomainFields) + " }");
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::Domain>((*data)["domains"], protocol::DecodeDomain);
}

StatusOr<protocol::Domain> AdminClient::CreateDomain(protocol::Domain const& d) const {
  json props = {{"description", d.description},
                {"is_active", d.is_active},
                {"total_resource_slots", d.total_resource_slots},
                {"allowed_vfolder_hosts", d.allowed_vfolder_hosts},
                {"allowed_docker_registries", d.allowed_docker_registries}};
  auto r = Mutate(client_, "create_domain",
                  "mutation($name: String!, $props: DomainInput!) { create_domain(name: $name, "
                  "props: $props) { ok msg domain" +
                      Fields(kDomainFields) + " } }",
                  {{"name", d.name}, {"props", props}});
  if (!r.ok()) return r.status();
  return protocol::DecodeDomain((*r)["domain"].dump());
}

StatusOr<protocol::Domain> AdminClient::ModifyDomain(std::string const& name,
                                                     DomainUpdate const& u) const {
  json props = json::object();
  if (u.description) props["description"] = *u.description;
  if (u.is_active) props["is_active"] = *u.is_active;
  if (u.total_resource_slots) props["total_resource_slots"] = *u.total_resource_slots;
  if (u.allowed_docker_registries)
    props["allowed_docker_registries"] = *u.allowed_docker_registries;
  auto r = Mutate(client_, "modify_domain",
                  "mutation($name: String!, $props: ModifyDomainInput!) { modify_domain(name: "
                  "$name, props: $props) { ok msg domain" +
                      Fields(kDomainFields) + " } }",
                  {{"name", name}, {"props", props}});
  if (!r.ok()) return r.status();
  return protocol::DecodeDomain((*r)["domain"].dump());
}

Status AdminClient::DeleteDomain(std::string const& name, bool purge) const {
  std::string field = purge ? "purge_domain" : "delete_domain";
  return Mutate(client_, field,
                "mutation($name: String!) { " + field + "(name: $name) { ok msg } }",
                {{"name", name}})
      .status();
}

StatusOr<std::vector<protocol::Group>> AdminClient::Projects(std::string const& domain) const {
  json vars = json::object();
  if (!domain.empty()) vars["d"] = domain;
  auto data = Run(
      client_, "query($d: String) { groups(domain_name: $d)" + Fields(kGroupFields) + " }", vars);
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::Group>((*data)["groups"], protocol::DecodeGroup);
}

StatusOr<protocol::Group> AdminClient::CreateProject(protocol::Group const& g) const {
  json props = {{"domain_name", g.domain_name},
                {"description", g.description},
                {"is_active", g.is_active},
                {"total_resource_slots", g.total_resource_slots},
                {"resource_policy", g.resource_policy}};
  if (g.type) props["type"] = *g.type;
  auto r = Mutate(client_, "create_group",
                  "mutation($name: String!, $props: GroupInput!) { create_group(name: $name, "
                  "props: $props) { ok msg group" +
                      Fields(kGroupFields) + " } }",
                  {{"name", g.name}, {"props", props}});
  if (!r.ok()) return r.status();
  return protocol::DecodeGroup((*r)["group"].dump());
}

Status AdminClient::DeleteProject(std::string const& id, bool purge) const {
  std::string field = purge ? "purge_group" : "delete_group";
  return Mutate(client_, field, "mutation($id: UUID!) { " + field + "(gid: $id) { ok msg } }",
                {{"id", id}})
      .status();
}

constexpr std::int64_t kPage = 1000;  // the server's largest page

namespace {

// Every page of user_list for `filter`, as the data texts the server sent, to `take` in order:
// the first page says how many there are; the rest are asked for a few at a time (each page is
// its own request over the ordered list, so pages never overlap). `take` sets the total from
// the first page.
Status UserPages(Client const& client, UserFilter const& filter,
                 std::function<Status(std::string const&, std::int64_t&)> const& take) {
  auto fetch = [&client, &filter](std::int64_t offset) -> StatusOr<std::string> {
    json vars = {{"limit", kPage}, {"offset", offset}};
    if (!filter.domain_name.empty()) vars["d"] = filter.domain_name;
    if (!filter.project_id.empty()) vars["g"] = filter.project_id;
    if (!filter.status.empty()) vars["s"] = filter.status;
    protocol::GraphqlRequest request;
    request.query =
        "query($limit: Int!, $offset: Int!, $d: String, $g: UUID, $s: String) { "
        "user_list(limit: $limit, offset: $offset, domain_name: $d, group_id: $g, "
        "status: $s, order: \"email\") { total_count items" +
        Fields(kUserFields) + " } }";
    request.variables_json = vars.dump();
    return RunGraphql(client, request);
  };
  constexpr std::size_t kInFlight = 4;
  auto first = fetch(0);
  if (!first.ok()) return first.status();
  std::int64_t total = 0;
  if (auto s = take(*first, total); !s.ok()) return s;
  std::deque<std::future<StatusOr<std::string>>> pending;
  std::int64_t next = kPage;
  while (true) {
    while (pending.size() < kInFlight && next < total) {
      pending.push_back(std::async(std::launch::async, fetch, next));
      next += kPage;
    }
    if (pending.empty()) return Status();
    auto data = pending.front().get();
    pending.pop_front();
    if (!data.ok()) return data.status();  // the others finish as they go
    std::int64_t ignored = 0;
    if (auto s = take(*data, ignored); !s.ok()) return s;
  }
}

Status Malformed() { return Status(StatusCode::kInternal, "malformed user_list page"); }

}  // namespace

StatusOr<std::vector<protocol::User>> AdminClient::Users(UserFilter const& filter) const {
  std::vector<protocol::User> out;
  auto s = UserPages(client_, filter, [&out](std::string const& text, std::int64_t& total) {
    auto j = internal::ParseJson(text);
    if (!j || !j->is_object()) return Malformed();
    json& page = (*j)["user_list"];
    total = page.value("total_count", std::int64_t{0});
    if (!page["items"].is_array()) return Status();
    out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(total, 0)));
    for (auto const& item : page["items"]) {
      auto u = internal::UserFromJson(item);
      if (!u.ok()) return u.status();
      out.push_back(*std::move(u));
    }
    return Status();
  });
  if (!s.ok()) return s;
  return out;
}

StatusOr<std::string> AdminClient::UsersJson(UserFilter const& filter) const {
  std::string out = "[";
  auto s = UserPages(client_, filter, [&out](std::string const& text, std::int64_t& total) {
    auto count = internal::FindJsonValue(text, {"user_list", "total_count"});
    auto items = internal::FindJsonValue(text, {"user_list", "items"});
    if (!count || !items) return Malformed();
    total = std::strtoll(std::string(*count).c_str(), nullptr, 10);
    auto each = internal::SplitJsonArray(*items);
    if (!each) return Malformed();
    for (auto item : *each) {
      if (item.empty() || item.front() != '{') return Malformed();
      if (out.size() > 1) out += ',';
      out += item;
    }
    return Status();
  });
  if (!s.ok()) return s;
  return out + "]";
}

StatusOr<std::optional<protocol::User>> AdminClient::User(std::string const& email) const {
  json vars = json::object();
  if (!email.empty()) vars["e"] = email;
  auto data =
      Run(client_, "query($e: String) { user(email: $e)" + Fields(kUserFields) + " }", vars);
  if (!data.ok()) return data.status();
  json const& u = (*data)["user"];
  if (u.is_null()) return std::optional<protocol::User>();
  auto decoded = protocol::DecodeUser(u.dump());
  if (!decoded.ok()) return decoded.status();
  return std::optional<protocol::User>(*std::move(decoded));
}

StatusOr<protocol::User> AdminClient::CreateUser(NewUserRequest const& r) const {
  json props = {{"password", r.password},
                {"username", r.username.empty() ? r.email : r.username},
                {"full_name", r.full_name},
                {"domain_name", r.domain_name},
                {"role", r.role},
                {"resource_policy", r.resource_policy},
                {"group_ids", r.project_ids},
                {"need_password_change", r.need_password_change}};
  auto m = Mutate(client_, "create_user",
                  "mutation($email: String!, $props: UserInput!) { create_user(email: $email, "
                  "props: $props) { ok msg user" +
                      Fields(kUserFields) + " } }",
                  {{"email", r.email}, {"props", props}});
  if (!m.ok()) return m.status();
  auto made = protocol::DecodeUser((*m)["user"].dump());
  // Backend.AI 23.09 makes the main keypair after the row it answers with: read the user again.
  if (made.ok() && made->main_access_key.empty()) {
    if (auto again = User(made->email); again.ok() && *again) return **again;
  }
  return made;
}

StatusOr<protocol::User> AdminClient::ModifyUser(std::string const& email,
                                                 UserUpdate const& u) const {
  json props = json::object();
  if (u.password) props["password"] = *u.password;
  if (u.full_name) props["full_name"] = *u.full_name;
  if (u.role) props["role"] = *u.role;
  if (u.status) props["status"] = *u.status;
  if (u.domain_name) props["domain_name"] = *u.domain_name;
  if (u.resource_policy) props["resource_policy"] = *u.resource_policy;
  if (u.need_password_change) props["need_password_change"] = *u.need_password_change;
  if (u.project_ids) props["group_ids"] = *u.project_ids;
  auto m = Mutate(client_, "modify_user",
                  "mutation($email: String!, $props: ModifyUserInput!) { modify_user(email: "
                  "$email, props: $props) { ok msg user" +
                      Fields(kUserFields) + " } }",
                  {{"email", email}, {"props", props}});
  if (!m.ok()) return m.status();
  return protocol::DecodeUser((*m)["user"].dump());
}

Status AdminClient::DeleteUser(std::string const& email, bool purge) const {
  if (purge) {
    return Mutate(client_, "purge_user",
                  "mutation($email: String!) { purge_user(email: $email, props: {}) { ok msg } }",
                  {{"email", email}})
        .status();
  }
  return Mutate(client_, "delete_user",
                "mutation($email: String!) { delete_user(email: $email) { ok msg } }",
                {{"email", email}})
      .status();
}

StatusOr<std::vector<protocol::KeyPair>> AdminClient::Keypairs(std::string const& email) const {
  json vars = json::object();
  if (!email.empty()) vars["e"] = email;
  auto server = client_.server();
  if (!server.ok() || server->kind != ServerCapabilities::Kind::kBackendAi) {
    auto data = Run(
        client_, "query($e: String) { keypairs(email: $e)" + Fields(kKeypairFields) + " }", vars);
    if (!data.ok()) return data.status();
    return DecodeAll<protocol::KeyPair>((*data)["keypairs"], protocol::DecodeKeyPair);
  }
  // Backend.AI (23.09 to 26.x, models/keypair.py): keypairs(email:) and keypair_list join the
  // user's projects, so a user in none has no keypairs there, and keypairs without an email
  // stops at 100. Every page of keypair_list, then what the first 100 of keypairs add.
  std::vector<protocol::KeyPair> out;
  std::set<std::string> seen;
  auto take = [&](json const& items) -> Status {
    auto keys = DecodeAll<protocol::KeyPair>(items, protocol::DecodeKeyPair);
    if (!keys.ok()) return keys.status();
    for (auto& k : *keys) {
      if (!email.empty() && k.user_id != email) continue;
      if (seen.insert(k.access_key).second) out.push_back(std::move(k));
    }
    return Status();
  };
  for (std::int64_t offset = 0;; offset += kPage) {
    json page_vars = vars;
    page_vars["limit"] = kPage;
    page_vars["offset"] = offset;
    auto data = Run(client_,
                    "query($limit: Int!, $offset: Int!, $e: String) { keypair_list(limit: $limit, "
                    "offset: $offset, email: $e) { total_count items" +
                        Fields(kKeypairFields) + " } }",
                    page_vars);
    if (!data.ok()) return data.status();
    json const& page = (*data)["keypair_list"];
    if (auto s = take(page["items"]); !s.ok()) return s;
    if (!page["items"].is_array() || page["items"].empty() ||
        offset + kPage >= page.value("total_count", std::int64_t{0})) {
      break;
    }
  }
  auto data = Run(client_, "{ keypairs" + Fields(kKeypairFields) + " }");
  if (!data.ok()) return data.status();
  if (auto s = take((*data)["keypairs"]); !s.ok()) return s;
  return out;
}

StatusOr<protocol::KeyPair> AdminClient::CreateKeypair(std::string const& email,
                                                       std::string const& resource_policy,
                                                       std::int64_t rate_limit,
                                                       bool is_admin) const {
  auto m = Mutate(client_, "create_keypair",
                  "mutation($u: String!, $props: KeyPairInput!) { create_keypair(user_id: $u, "
                  "props: $props) { ok msg keypair" +
                      Fields(kKeypairFields) + " } }",
                  {{"u", email},
                   {"props",
                    {{"resource_policy", resource_policy},
                     {"rate_limit", rate_limit},
                     {"is_admin", is_admin},
                     {"is_active", true}}}});
  if (!m.ok()) return m.status();
  return protocol::DecodeKeyPair((*m)["keypair"].dump());
}

Status AdminClient::SetKeypairActive(std::string const& access_key, bool active) const {
  return Mutate(client_, "modify_keypair",
                "mutation($ak: String!, $a: Boolean) { modify_keypair(access_key: $ak, props: "
                "{is_active: $a}) { ok msg } }",
                {{"ak", access_key}, {"a", active}})
      .status();
}

Status AdminClient::SetKeypairPolicy(std::string const& access_key,
                                     std::string const& policy) const {
  return Mutate(client_, "modify_keypair",
                "mutation($ak: String!, $p: String) { modify_keypair(access_key: $ak, props: "
                "{resource_policy: $p}) { ok msg } }",
                {{"ak", access_key}, {"p", policy}})
      .status();
}

Status AdminClient::DeleteKeypair(std::string const& access_key) const {
  return Mutate(client_, "delete_keypair",
                "mutation($ak: String!) { delete_keypair(access_key: $ak) { ok msg } }",
                {{"ak", access_key}})
      .status();
}

Status AdminClient::AssociateResourceGroup(std::string const& group, std::string const& kind,
                                           std::string const& target, bool on) const {
  std::string suffix, arg, type;
  if (kind == "domain") {
    suffix = "domain", arg = "domain", type = "String!";
  } else if (kind == "project") {
    suffix = "user_group", arg = "user_group", type = "UUID!";
  } else if (kind == "keypair") {
    suffix = "keypair", arg = "access_key", type = "String!";
  } else {
    return Status(StatusCode::kInvalidArgument, "associate with a domain, project or keypair");
  }
  std::string field =
      std::string(on ? "associate" : "disassociate") + "_scaling_group_with_" + suffix;
  return Mutate(client_, field,
                "mutation($g: String!, $t: " + type + ") { " + field + "(scaling_group: $g, " +
                    arg + ": $t) { ok msg } }",
                {{"g", group}, {"t", target}})
      .status();
}

StatusOr<std::vector<std::string>> AdminClient::ResourceGroupsOfDomain(
    std::string const& domain) const {
  auto data = Run(client_, "query($d: String!) { scaling_groups_for_domain(domain: $d) { name } }",
                  {{"d", domain}});
  if (!data.ok()) return data.status();
  std::vector<std::string> out;
  for (auto const& g : (*data)["scaling_groups_for_domain"]) out.push_back(g.value("name", ""));
  return out;
}

StatusOr<std::vector<protocol::ImageEntry>> AdminClient::Images() const {
  auto data =
      Run(client_,
          "{ images { id name tag registry architecture aliases installed_agents size_bytes "
          "labels { key value } } }");
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::ImageEntry>((*data)["images"], protocol::DecodeImage);
}

StatusOr<std::string> AdminClient::RescanImages(std::string const& registry) const {
  auto m = registry.empty()
               ? Mutate(client_, "rescan_images", "mutation { rescan_images { ok msg task_id } }",
                        nullptr)
               : Mutate(client_, "rescan_images",
                        "mutation($r: String) { rescan_images(registry: $r) { ok msg task_id } }",
                        {{"r", registry}});
  if (!m.ok()) return m.status();
  auto const& task = (*m)["task_id"];
  if (!task.is_string()) return Status(StatusCode::kInternal, "rescan_images: no task id");
  return task.get<std::string>();
}

StatusOr<std::string> AdminClient::PurgeImages(std::string const& agent_id,
                                               std::vector<std::string> const& images,
                                               bool prune) const {
  json refs = json::array();
  for (auto const& i : images) refs.push_back({{"name", i}});
  auto data = Run(client_,
                  "mutation($k: [PurgeImagesKey]!, $o: PurgeImagesOptions) { "
                  "purge_images(keys: $k, options: $o) { task_id } }",
                  {{"k", json::array({{{"agent_id", agent_id}, {"images", refs}}})},
                   {"o", {{"force", false}, {"noprune", !prune}}}});
  if (!data.ok() && data.status().message().find("'purge_images'") != std::string::npos) {
    return Status(StatusCode::kUnimplemented,
                  "this manager has no purge_images (Backend.AI added it in 25.4); on the agent's "
                  "host, bai-agent image rm does the same");
  }
  if (!data.ok()) return data.status();
  auto const& task = (*data)["purge_images"]["task_id"];
  if (!task.is_string()) return Status(StatusCode::kInternal, "purge_images: no task id");
  return task.get<std::string>();
}

namespace {

// Not is_global: 24.09 added it, 23.09 refuses the query that names it.
constexpr char kRegistryFields[] =
    "{ id hostname config { url type project username password ssl_verify } }";

json RegistryPropsJson(AdminClient::RegistryProps const& p) {
  json props = json::object();
  if (p.url) props["url"] = *p.url;
  if (p.type) props["type"] = *p.type;
  if (p.project) props["project"] = p.project->empty() ? json::array() : json::array({*p.project});
  if (p.username) props["username"] = *p.username;
  if (p.password) props["password"] = *p.password;
  if (p.ssl_verify) props["ssl_verify"] = *p.ssl_verify;
  return props;
}

}  // namespace

StatusOr<std::vector<protocol::ContainerRegistryEntry>> AdminClient::Registries() const {
  auto data = Run(client_, std::string("{ container_registries ") + kRegistryFields + " }");
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::ContainerRegistryEntry>((*data)["container_registries"],
                                                     protocol::DecodeContainerRegistry);
}

Status AdminClient::CreateRegistry(std::string const& hostname, RegistryProps const& props) const {
  return Run(client_,
             "mutation($h: String!, $p: CreateContainerRegistryInput!) { "
             "create_container_registry(hostname: $h, props: $p) { container_registry " +
                 std::string(kRegistryFields) + " } }",
             {{"h", hostname}, {"p", RegistryPropsJson(props)}})
      .status();
}

Status AdminClient::ModifyRegistry(std::string const& hostname, RegistryProps const& props) const {
  return Run(client_,
             "mutation($h: String!, $p: ModifyContainerRegistryInput!) { "
             "modify_container_registry(hostname: $h, props: $p) { container_registry " +
                 std::string(kRegistryFields) + " } }",
             {{"h", hostname}, {"p", RegistryPropsJson(props)}})
      .status();
}

Status AdminClient::DeleteRegistry(std::string const& hostname) const {
  return Run(client_,
             "mutation($h: String!) { delete_container_registry(hostname: $h) { "
             "container_registry { hostname } } }",
             {{"h", hostname}})
      .status();
}

Status AdminClient::AliasImage(std::string const& alias, std::string const& target,
                               std::string const& architecture) const {
  return Mutate(client_, "alias_image",
                "mutation($a: String!, $t: String!, $arch: String) { alias_image(alias: $a, "
                "target: $t, architecture: $arch) { ok msg } }",
                {{"a", alias}, {"t", target}, {"arch", architecture}})
      .status();
}

Status AdminClient::DealiasImage(std::string const& alias, std::string const& architecture) const {
  return Mutate(client_, "dealias_image",
                "mutation($a: String!, $arch: String) { dealias_image(alias: $a, "
                "architecture: $arch) { ok msg } }",
                {{"a", alias}, {"arch", architecture}})
      .status();
}

Status AdminClient::ForgetImage(std::string const& reference,
                                std::string const& architecture) const {
  return Mutate(client_, "forget_image",
                "mutation($r: String!, $arch: String) { forget_image(reference: $r, "
                "architecture: $arch) { ok msg } }",
                {{"r", reference}, {"arch", architecture}})
      .status();
}

Status AdminClient::ClearImages(std::string const& registry) const {
  return Mutate(client_, "clear_images",
                "mutation($r: String) { clear_images(registry: $r) { ok msg } }", {{"r", registry}})
      .status();
}

StatusOr<protocol::ManagerStatus> AdminClient::ManagerStatus() const {
  auto response = client_.Send(ApiRequest("GET", "/manager/status"));
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return protocol::DecodeManagerStatus(response->body);
}

StatusOr<std::vector<protocol::AgentEntry>> AdminClient::Agents() const {
  std::vector<protocol::AgentEntry> out;
  constexpr int kAgentPage = 100;
  for (int offset = 0;; offset += kAgentPage) {
    auto data = Run(client_,
                    "query($l: Int!, $o: Int!) { agent_list(limit: $l, offset: $o) { items { id "
                    "status scaling_group architecture version schedulable available_slots "
                    "occupied_slots first_contact lost_at } total_count } }",
                    {{"l", kAgentPage}, {"o", offset}});
    if (!data.ok()) return data.status();
    auto page =
        DecodeAll<protocol::AgentEntry>((*data)["agent_list"]["items"], protocol::DecodeAgent);
    if (!page.ok()) return page.status();
    out.insert(out.end(), page->begin(), page->end());
    auto const& count = (*data)["agent_list"]["total_count"];
    auto total = count.is_number_integer() ? count.get<int>() : 0;
    if (page->empty() || static_cast<int>(out.size()) >= total) break;
  }
  return out;
}

Status AdminClient::SetAgentSchedulable(std::string const& id, bool schedulable) const {
  return Mutate(client_, "modify_agent",
                "mutation($id: String!, $p: ModifyAgentInput!) { modify_agent(id: $id, props: "
                "$p) { ok msg } }",
                {{"id", id}, {"p", {{"schedulable", schedulable}}}})
      .status();
}

StatusOr<std::vector<protocol::ResourcePreset>> AdminClient::Presets() const {
  auto data = Run(client_, "{ resource_presets { name resource_slots shared_memory } }");
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::ResourcePreset>((*data)["resource_presets"],
                                             protocol::DecodeResourcePreset);
}

Status AdminClient::CreatePreset(std::string const& name, std::string const& slots_json,
                                 std::string const& shared_memory) const {
  json props = {{"resource_slots", slots_json}};
  if (!shared_memory.empty()) props["shared_memory"] = shared_memory;
  return Mutate(client_, "create_resource_preset",
                "mutation($n: String!, $p: CreateResourcePresetInput!) { "
                "create_resource_preset(name: $n, props: $p) { ok msg } }",
                {{"n", name}, {"p", props}})
      .status();
}

Status AdminClient::DeletePreset(std::string const& name) const {
  return Mutate(client_, "delete_resource_preset",
                "mutation($n: String!) { delete_resource_preset(name: $n) { ok msg } }",
                {{"n", name}})
      .status();
}

StatusOr<std::vector<protocol::KeypairResourcePolicy>> AdminClient::KeypairPolicies() const {
  auto data = Run(client_, "{ keypair_resource_policies" + Fields(kPolicyFields) + " }");
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::KeypairResourcePolicy>((*data)["keypair_resource_policies"],
                                                    protocol::DecodeKeypairResourcePolicy);
}

StatusOr<protocol::KeypairResourcePolicy> AdminClient::CreateKeypairPolicy(
    protocol::KeypairResourcePolicy const& p) const {
  auto m = Mutate(client_, "create_keypair_resource_policy",
                  "mutation($n: String!, $props: CreateKeyPairResourcePolicyInput!) { "
                  "create_keypair_resource_policy(name: $n, props: $props) { ok msg "
                  "resource_policy" +
                      Fields(kPolicyFields) + " } }",
                  {{"n", p.name}, {"props", PolicyProps(p)}});
  if (!m.ok()) return m.status();
  return protocol::DecodeKeypairResourcePolicy((*m)["resource_policy"].dump());
}

Status AdminClient::ModifyKeypairPolicy(protocol::KeypairResourcePolicy const& p) const {
  return Mutate(client_, "modify_keypair_resource_policy",
                "mutation($n: String!, $props: ModifyKeyPairResourcePolicyInput!) { "
                "modify_keypair_resource_policy(name: $n, props: $props) { ok msg } }",
                {{"n", p.name}, {"props", PolicyProps(p)}})
      .status();
}

Status AdminClient::DeleteKeypairPolicy(std::string const& name) const {
  return Mutate(client_, "delete_keypair_resource_policy",
                "mutation($n: String!) { delete_keypair_resource_policy(name: $n) { ok msg } }",
                {{"n", name}})
      .status();
}

namespace {

char const* ScopeKind(bool user) { return user ? "user" : "project"; }

// What 23.09.10 and later take (max_customized_image_count came in 24.03: not sent, so a
// 23.09 manager does not refuse the input).
json ScopeProps(protocol::ScopeResourcePolicy const& p, bool user) {
  json props = internal::ScopeResourcePolicyToJson(p, user);
  props.erase("name");
  props.erase("created_at");
  props.erase("max_customized_image_count");
  return props;
}

// CreateUserResourcePolicyInput, ModifyProjectResourcePolicyInput, …
std::string ScopeInput(char const* verb, bool user) {
  return std::string(verb) + (user ? "User" : "Project") + "ResourcePolicyInput";
}

}  // namespace

StatusOr<std::vector<protocol::ScopeResourcePolicy>> AdminClient::ScopePolicies(bool user) const {
  std::string field = std::string(ScopeKind(user)) + "_resource_policies";
  // The fields 23.09.10 has (max_customized_image_count came in 24.03).
  auto data =
      Run(client_, "{ " + field + " { name created_at max_vfolder_count " + "max_quota_scope_size" +
                       (user ? " max_session_count_per_model_session" : "") + " } }");
  if (!data.ok()) return data.status();
  return DecodeAll<protocol::ScopeResourcePolicy>((*data)[field],
                                                  protocol::DecodeScopeResourcePolicy);
}

namespace {

// create_/modify_{user,project}_resource_policy with every field of `p`.
Status WriteScopePolicy(Client const& client, char const* verb, char const* input,
                        protocol::ScopeResourcePolicy const& p, bool user) {
  std::string field = std::string(verb) + "_" + ScopeKind(user) + "_resource_policy";
  return Mutate(client, field,
                "mutation($n: String!, $props: " + ScopeInput(input, user) + "!) { " + field +
                    "(name: $n, props: $props) { ok msg } }",
                {{"n", p.name}, {"props", ScopeProps(p, user)}})
      .status();
}

}  // namespace

Status AdminClient::CreateScopePolicy(protocol::ScopeResourcePolicy const& p, bool user) const {
  return WriteScopePolicy(client_, "create", "Create", p, user);
}

Status AdminClient::ModifyScopePolicy(protocol::ScopeResourcePolicy const& p, bool user) const {
  return WriteScopePolicy(client_, "modify", "Modify", p, user);
}

Status AdminClient::DeleteScopePolicy(std::string const& name, bool user) const {
  std::string field = std::string("delete_") + ScopeKind(user) + "_resource_policy";
  return Mutate(client_, field, "mutation($n: String!) { " + field + "(name: $n) { ok msg } }",
                {{"n", name}})
      .status();
}

StatusOr<std::vector<protocol::ProjectUsage>> AdminClient::Usage(
    std::string const& start, std::string const& end, std::string const& project_id) const {
  auto compact = [](std::string date) {
    date.erase(std::remove(date.begin(), date.end(), '-'), date.end());
    return date;
  };
  // A GET's parameters go in its query: 23.09 and 24.09 read nothing else for a GET (their
  // check_api_params). group_id is the name every version takes (24.09 also project_id).
  auto one = [&](std::string const& project) -> StatusOr<std::vector<protocol::ProjectUsage>> {
    std::string path =
        "/resource/usage/period?start_date=" + compact(start) + "&end_date=" + compact(end);
    if (!project.empty()) path += "&group_id=" + internal::EncodeSegment(project);
    auto response = client_.Send(ApiRequest("GET", path));
    if (!response.ok()) return response.status();
    if (auto s = CheckResponse(*response); !s.ok()) return s;
    return protocol::DecodeProjectUsages(response->body);
  };
  auto caps = client_.server();
  if (!project_id.empty() || (caps.ok() && caps->has("usage-all-projects"))) return one(project_id);
  // 23.09 answers one project per request: each of them, together.
  auto projects = Projects("");
  if (!projects.ok()) return projects.status();
  std::vector<protocol::ProjectUsage> all;
  for (auto const& p : *projects) {
    auto usage = one(p.id);
    if (!usage.ok()) return usage.status();
    for (auto& u : *usage) all.push_back(std::move(u));
  }
  return all;
}

namespace {

// The endpoint and the owner's parameters.
// A project named without its domain is looked up in the client's domain (Backend.AI 23.09 and
// 24.09 refuse a project name without one: "Missing parameter 'domain'").
std::pair<std::string, json> DotfileTarget(AdminClient::DotfileOwner const& o,
                                           std::string const& client_domain) {
  json params = json::object();
  if (!o.project.empty()) {
    params["group"] = o.project;
    if (!o.domain.empty()) {
      params["domain"] = o.domain;
    } else {
      params["domain"] = client_domain.empty() ? "default" : client_domain;
    }
    return {"/group-config/dotfiles", params};
  }
  if (!o.domain.empty()) {
    params["domain"] = o.domain;
    return {"/domain-config/dotfiles", params};
  }
  return {"/user-config/dotfiles", params};
}

std::string Query(json const& params) {
  std::string q;
  for (auto const& [k, v] : params.items()) {
    q += (q.empty() ? "?" : "&") + k + "=" + internal::EncodeSegment(v.get<std::string>());
  }
  return q;
}

}  // namespace

StatusOr<std::vector<protocol::Dotfile>> AdminClient::Dotfiles(DotfileOwner const& owner) const {
  auto [path, params] = DotfileTarget(owner, client_.options().domain);
  auto response = client_.Send(ApiRequest("GET", path + Query(params)));
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return protocol::DecodeDotfiles(response->body);
}

Status AdminClient::PutDotfile(protocol::Dotfile const& dotfile, bool replace,
                               DotfileOwner const& owner) const {
  if (auto s = protocol::CheckDotfile(dotfile); !s.ok()) return s;
  auto [path, params] = DotfileTarget(owner, client_.options().domain);
  params["path"] = dotfile.path;
  params["permission"] = dotfile.permission;
  params["data"] = dotfile.data;
  ApiRequest request(replace ? "PATCH" : "POST", path);
  request.body = params.dump();
  auto response = client_.Send(request);
  if (!response.ok()) return response.status();
  return CheckResponse(*response);
}

Status AdminClient::DeleteDotfile(std::string const& file, DotfileOwner const& owner) const {
  auto [path, params] = DotfileTarget(owner, client_.options().domain);
  params["path"] = file;
  auto response = client_.Send(ApiRequest("DELETE", path + Query(params)));
  if (!response.ok()) return response.status();
  return CheckResponse(*response);
}

StatusOr<std::vector<protocol::SessionTemplateInfo>> AdminClient::Templates(bool all) const {
  auto response =
      client_.Send(ApiRequest("GET", std::string("/template/session") + (all ? "?all=true" : "")));
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return protocol::DecodeSessionTemplates(response->body);
}

StatusOr<std::string> AdminClient::TemplateText(std::string const& id,
                                                std::string const& format) const {
  auto response = client_.Send(ApiRequest(
      "GET", "/template/session/" + internal::EncodeSegment(id) + Query({{"format", format}})));
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return response->body;
}

StatusOr<std::vector<std::string>> AdminClient::CreateTemplates(std::string const& payload,
                                                                std::string const& project) const {
  ApiRequest request("POST", "/template/session");
  json body = {{"payload", TemplatePayloadFor(client_, payload)}};
  if (!project.empty()) body["group"] = project;
  request.body = body.dump();
  auto response = client_.Send(request);
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  auto answer = json::parse(response->body, nullptr, false);
  std::vector<std::string> ids;
  for (auto const& item : answer.is_array() ? answer : json::array({answer})) {
    if (item.is_object() && item.contains("id") && item["id"].is_string()) {
      ids.push_back(item["id"].get<std::string>());
    }
  }
  if (ids.empty()) return Status(StatusCode::kInternal, "the server answered no template id");
  return ids;
}

Status AdminClient::UpdateTemplate(std::string const& id, std::string const& payload) const {
  ApiRequest request("PUT", "/template/session/" + internal::EncodeSegment(id));
  request.body = json({{"payload", TemplatePayloadFor(client_, payload)}}).dump();
  auto response = client_.Send(request);
  if (!response.ok()) return response.status();
  return CheckResponse(*response);
}

Status AdminClient::DeleteTemplate(std::string const& id) const {
  auto response =
      client_.Send(ApiRequest("DELETE", "/template/session/" + internal::EncodeSegment(id)));
  if (!response.ok()) return response.status();
  return CheckResponse(*response);
}

StatusOr<protocol::SessionCreateResult> AdminClient::CreateFromTemplate(
    std::string const& id, std::map<std::string, std::string> const& overrides) const {
  ApiRequest request("POST", "/session/_/create-from-template");
  json body = {{"template_id", id}, {"enqueueOnly", true}};
  for (auto const& [key, value] : overrides) body[key] = value;
  request.body = body.dump();
  auto response = client_.Send(request);
  if (!response.ok()) return response.status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return protocol::DecodeSessionCreateResult(response->body);
}

}  // namespace bai
