// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/registries.h"

#include "bai/protocol/cluster_wire.h"
#include "bai/protocol/errors.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/store.h"

#include <algorithm>
#include <regex>
#include <set>

namespace bai::manager {

using nlohmann::json;

namespace {

constexpr char kPasswordPlaceholder[] = "*****";  // 24.09's PASSWORD_PLACEHOLDER

constexpr char kColumns[] =
    "id, url, registry_name, type, project, username, password, ssl_verify, is_global";

ContainerRegistry FromRow(server::SqlRow& r) {
  ContainerRegistry c;
  c.id = r.TakeText(0);
  c.url = r.TakeText(1);
  c.registry_name = r.TakeText(2);
  c.type = r.TakeText(3);
  c.project = r.TakeText(4);
  c.username = r.TakeOptText(5);
  c.password = r.TakeOptText(6);
  c.ssl_verify = r.Bool(7);
  c.is_global = r.Bool(8);
  return c;
}

json OptJson(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }

RegistryImage ImageFromRow(server::SqlRow& r) {
  RegistryImage i;
  i.canonical = r.TakeText(0);
  i.architecture = r.TakeText(1);
  i.registry = r.TakeText(2);
  i.project = r.TakeText(3);
  i.name = r.TakeText(4);
  i.tag = r.TakeText(5);
  i.manifest_digest = r.TakeText(6);
  i.config_digest = r.TakeText(7);
  i.size_bytes = r.Int(8);
  if (auto labels = internal::ParseJson(r.Text(9)); labels && labels->is_object()) {
    for (auto const& [k, v] : labels->items()) {
      if (v.is_string()) i.labels[k] = v.get<std::string>();
    }
  }
  return i;
}

constexpr char kImageColumns[] =
    "canonical, architecture, registry, project, name, tag, manifest_digest, config_digest, "
    "size_bytes, labels";

}  // namespace

std::string CanonicalImage(std::string const& reference) {
  if (reference.find('/') == std::string::npos) return reference;
  auto ref = server::oci::ParseImageReference(reference);
  return ref.ok() ? ref->Canonical() : reference;
}

Status CheckRegistryAllowed(std::string const& reference, std::vector<std::string> const& allowed,
                            std::string const& domain) {
  std::string canonical = CanonicalImage(reference);
  auto slash = canonical.find('/');
  if (slash == std::string::npos || allowed.empty()) return Status();
  std::string registry = canonical.substr(0, slash);
  if (std::find(allowed.begin(), allowed.end(), registry) != allowed.end()) return Status();
  return protocol::MakeProblemStatus(protocol::ProblemType::kObjectNotFound,
                                     "unknown alias or disallowed registry: domain " + domain +
                                         " allows images from " + nlohmann::json(allowed).dump() +
                                         ", not from " + registry);
}

Status ValidateRegistry(ContainerRegistry const& r) {
  static std::regex const kUrl(
      R"(https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9a-fA-F:]+\](:[0-9]{1,5})?)");
  static std::regex const kName(R"([a-z0-9][a-z0-9.\-]*(:[0-9]{1,5})?)");
  static std::regex const kProject(R"([a-z0-9]+([._\-/][a-z0-9]+)*)");
  auto bad = [](std::string what) { return Status(StatusCode::kInvalidArgument, std::move(what)); };
  if (!std::regex_match(r.url, kUrl)) {
    return bad("url: http:// or https:// and a host, with a port where needed (" + r.url + ")");
  }
  if (!std::regex_match(r.registry_name, kName)) {
    return bad(
        "registry_name: a host name (lower case) with a port where needed, as image "
        "names begin (" +
        r.registry_name + ")");
  }
  if (std::find_if(std::begin(kRegistryTypes), std::end(kRegistryTypes),
                   [&](char const* t) { return r.type == t; }) == std::end(kRegistryTypes)) {
    return bad("type: docker or harbor2 (" + r.type + ")");
  }
  if (!r.project.empty() && !std::regex_match(r.project, kProject)) {
    return bad("project: lower-case letters, digits and separators (" + r.project + ")");
  }
  if (r.type == "harbor2" && r.project.empty()) return bad("project: a harbor2 registry needs one");
  return Status();
}

json LegacyRegistryObject(ContainerRegistry const& r) {
  protocol::ContainerRegistryEntry e;
  e.id = r.id;
  e.hostname = r.registry_name;
  e.url = r.url;
  e.type = r.type;
  if (!r.project.empty()) e.project = {r.project};
  e.username = r.username;
  e.has_password = r.password.has_value();
  e.ssl_verify = r.ssl_verify;
  e.is_global = r.is_global;
  return json::parse(protocol::EncodeContainerRegistry(e));
}

json RegistryNodeObject(ContainerRegistry const& r) {
  return {{"id", r.id},
          {"row_id", r.id},
          {"url", r.url},
          {"registry_name", r.registry_name},
          {"type", r.type},
          {"project", r.project.empty() ? json(nullptr) : json(r.project)},
          {"username", OptJson(r.username)},
          {"password", r.password ? json(kPasswordPlaceholder) : json(nullptr)},
          {"ssl_verify", r.ssl_verify},
          {"is_global", r.is_global},
          {"extra", nullptr}};
}

StatusOr<std::vector<ContainerRegistry>> RegistryStore::List() {
  auto rows = db_.Query(std::string("SELECT ") + kColumns +
                        " FROM container_registries ORDER BY registry_name, project");
  if (!rows.ok()) return rows.status();
  std::vector<ContainerRegistry> out;
  for (auto& r : *rows) out.push_back(FromRow(r));
  return out;
}

StatusOr<std::vector<ContainerRegistry>> RegistryStore::ByName(std::string const& name) {
  auto rows = db_.Query(std::string("SELECT ") + kColumns +
                            " FROM container_registries WHERE registry_name = ? ORDER BY project",
                        {name});
  if (!rows.ok()) return rows.status();
  std::vector<ContainerRegistry> out;
  for (auto& r : *rows) out.push_back(FromRow(r));
  return out;
}

StatusOr<std::optional<ContainerRegistry>> RegistryStore::Get(std::string const& id) {
  auto rows = db_.Query(
      std::string("SELECT ") + kColumns + " FROM container_registries WHERE id = ?", {id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<ContainerRegistry>();
  return std::optional<ContainerRegistry>(FromRow(rows->front()));
}

namespace {

void Apply(RegistryChange const& c, ContainerRegistry& r) {
  if (c.url) r.url = *c.url;
  if (c.registry_name) r.registry_name = *c.registry_name;
  if (c.type) r.type = *c.type;
  if (c.project) r.project = *c.project;
  if (c.username) r.username = c.username->empty() ? std::nullopt : c.username;
  if (c.password) r.password = c.password->empty() ? std::nullopt : c.password;
  if (c.ssl_verify) r.ssl_verify = *c.ssl_verify;
  if (c.is_global) r.is_global = *c.is_global;
}

}  // namespace

StatusOr<ContainerRegistry> RegistryStore::Create(RegistryChange const& change) {
  ContainerRegistry r;
  Apply(change, r);
  r.id = GenerateUuid();
  if (auto s = ValidateRegistry(r); !s.ok()) return s;
  auto same = db_.Query(
      "SELECT 1 FROM container_registries WHERE registry_name = ? AND COALESCE(project, '') = ?",
      {r.registry_name, r.project});
  if (!same.ok()) return same.status();
  if (!same->empty()) {
    return Status(StatusCode::kAlreadyExists,
                  "registry " + r.registry_name +
                      (r.project.empty() ? "" : " (project " + r.project + ")") + " exists");
  }
  auto n = db_.Exec(
      "INSERT INTO container_registries (id, url, registry_name, type, project, username, "
      "password, ssl_verify, is_global, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {r.id, r.url, r.registry_name, r.type,
       r.project.empty() ? server::SqlValue(nullptr) : r.project, server::SqlOptional(r.username),
       server::SqlOptional(r.password), server::SqlBool(r.ssl_verify), server::SqlBool(r.is_global),
       NowIso()});
  if (!n.ok()) return n.status();
  return r;
}

StatusOr<ContainerRegistry> RegistryStore::Modify(std::string const& id,
                                                  RegistryChange const& change) {
  auto have = Get(id);
  if (!have.ok()) return have.status();
  if (!*have) return Status(StatusCode::kNotFound, "no container registry " + id);
  ContainerRegistry r = **have;
  Apply(change, r);
  if (auto s = ValidateRegistry(r); !s.ok()) return s;
  auto n = db_.Exec(
      "UPDATE container_registries SET url = ?, registry_name = ?, type = ?, project = ?, "
      "username = ?, password = ?, ssl_verify = ?, is_global = ? WHERE id = ?",
      {r.url, r.registry_name, r.type, r.project.empty() ? server::SqlValue(nullptr) : r.project,
       server::SqlOptional(r.username), server::SqlOptional(r.password),
       server::SqlBool(r.ssl_verify), server::SqlBool(r.is_global), id});
  if (!n.ok()) return n.status();
  return r;
}

StatusOr<bool> RegistryStore::Delete(std::string const& id) {
  auto have = Get(id);
  if (!have.ok()) return have.status();
  if (!*have) return false;
  ContainerRegistry const& r = **have;
  Status s = db_.Transaction([&](server::SqlExecutor& tx) -> Status {
    if (auto n = tx.Exec("DELETE FROM container_registries WHERE id = ?", {id}); !n.ok())
      return n.status();
    // A registry without a project found images in every project of it.
    return tx
        .Exec("DELETE FROM registry_images WHERE registry = ? AND (? = '' OR project = ?)",
              {r.registry_name, r.project, r.project})
        .status();
  });
  if (!s.ok()) return s;
  return true;
}

Status RegistryStore::PutImage(RegistryImage const& i) {
  json labels = i.labels;
  return db_
      .Exec(
          "INSERT INTO registry_images (canonical, architecture, registry, project, name, tag, "
          "manifest_digest, config_digest, size_bytes, labels, scanned_at) VALUES "
          "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (canonical, architecture) DO UPDATE SET "
          "manifest_digest = excluded.manifest_digest, config_digest = excluded.config_digest, "
          "size_bytes = excluded.size_bytes, labels = excluded.labels, "
          "scanned_at = excluded.scanned_at",
          {i.canonical, i.architecture, i.registry, i.project, i.name, i.tag, i.manifest_digest,
           i.config_digest, i.size_bytes, labels.dump(), NowIso()})
      .status();
}

StatusOr<std::vector<RegistryImage>> RegistryStore::Images(std::string const& registry) {
  std::string sql = std::string("SELECT ") + kImageColumns + " FROM registry_images";
  std::vector<server::SqlValue> params;
  if (!registry.empty()) {
    sql += " WHERE registry = ?";
    params.push_back(registry);
  }
  auto rows = db_.Query(sql + " ORDER BY canonical, architecture", params);
  if (!rows.ok()) return rows.status();
  std::vector<RegistryImage> out;
  for (auto& r : *rows) out.push_back(ImageFromRow(r));
  return out;
}

Status ApplyImageMinimum(std::map<std::string, std::string> const& labels,
                         protocol::ResourceSlots const& given, protocol::ResourceSlots& requested) {
  constexpr std::string_view kPrefix = "ai.backend.resource.min.";
  std::vector<std::pair<std::string, std::string>> short_of;  // slot, the label's text
  std::map<std::string, protocol::Decimal> minimum;
  for (auto const& [key, text] : labels) {
    if (key.rfind(kPrefix, 0) != 0 || key.size() == kPrefix.size()) continue;
    std::string slot = key.substr(kPrefix.size());
    protocol::ResourceSlots one;
    if (!protocol::ParseSlotAssignment(slot + "=" + text, one).ok() || !one.count(slot)) continue;
    minimum[slot] = one.at(slot);
  }
  for (auto const& [slot, least] : minimum) {
    bool intrinsic = slot == "cpu" || slot == "mem";
    auto it = requested.find(slot);
    if (intrinsic && !given.count(slot) && (it == requested.end() || it->second < least)) {
      requested[slot] = least;
      continue;
    }
    if (it == requested.end() || it->second < least) {
      short_of.emplace_back(slot, labels.at(std::string(kPrefix) + slot));
    }
  }
  if (short_of.empty()) return Status();
  std::string list;
  for (auto const& [slot, text] : short_of) list += (list.empty() ? "" : " ") + slot + "=" + text;
  return protocol::MakeProblemStatus(
      protocol::ProblemType::kInvalidApiParams,
      "Your resource request is smaller than the minimum required by the image. (" + list + ")");
}

StatusOr<std::optional<RegistryImage>> RegistryStore::FindImage(std::string const& canonical,
                                                                std::string const& architecture) {
  auto rows = db_.Query(std::string("SELECT ") + kImageColumns +
                            " FROM registry_images WHERE canonical = ? AND architecture = ?",
                        {CanonicalImage(canonical), architecture});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<RegistryImage>();
  return std::optional<RegistryImage>(ImageFromRow(rows->front()));
}

StatusOr<std::optional<ContainerRegistry>> RegistryStore::SourceOf(std::string const& image) {
  std::optional<ContainerRegistry> none;
  std::string reference = CanonicalImage(image);
  auto slash = reference.find('/');
  if (slash == std::string::npos) return none;
  auto rows = ByName(reference.substr(0, slash));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return none;
  std::string repository = reference.substr(slash + 1);
  for (auto const& r : *rows) {
    if (!r.project.empty() && repository.rfind(r.project + "/", 0) == 0) {
      return std::optional<ContainerRegistry>(r);
    }
  }
  return std::optional<ContainerRegistry>(rows->front());
}

// The superadmin's aliases of images `gone` (canonical name, architecture) go with them; an
// alias may name its target in any form (CanonicalImage says which image that is).
Status RegistryStore::DropAliasesOf(std::set<std::pair<std::string, std::string>> const& gone) {
  auto rows = db_.Query("SELECT alias, target, architecture FROM image_aliases");
  if (!rows.ok()) return rows.status();
  for (auto const& r : *rows) {
    if (!gone.count({CanonicalImage(r.Text(1)), r.Text(2)})) continue;
    if (auto n = db_.Exec("DELETE FROM image_aliases WHERE alias = ?", {r.Text(0)}); !n.ok()) {
      return n.status();
    }
  }
  return Status();
}

StatusOr<bool> RegistryStore::ForgetImage(std::string const& canonical,
                                          std::string const& architecture) {
  auto n = db_.Exec("DELETE FROM registry_images WHERE canonical = ? AND architecture = ?",
                    {canonical, architecture});
  if (!n.ok()) return n.status();
  if (*n == 0) return false;
  if (auto st = DropAliasesOf({{canonical, architecture}}); !st.ok()) return st;
  return true;
}

StatusOr<std::int64_t> RegistryStore::ClearImages(std::string const& registry) {
  auto rows = db_.Query("SELECT canonical, architecture FROM registry_images WHERE registry = ?",
                        {registry});
  if (!rows.ok()) return rows.status();
  std::set<std::pair<std::string, std::string>> gone;
  for (auto const& r : *rows) gone.insert({r.Text(0), r.Text(1)});
  auto n = db_.Exec("DELETE FROM registry_images WHERE registry = ?", {registry});
  if (!n.ok()) return n.status();
  if (auto st = DropAliasesOf(gone); !st.ok()) return st;
  return *n;
}

}  // namespace bai::manager
