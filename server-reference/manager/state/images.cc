// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/images.h"

#include "bai/protocol/errors.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/wire/image_ref.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/store.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

std::vector<std::string> ImageNames(std::string const& reported) {
  std::vector<std::string> out;
  auto images = internal::ParseJson(reported);
  if (!images || !images->is_array()) return out;
  for (auto const& img : *images) {
    if (img.is_string()) out.push_back(img.get<std::string>());
    if (!img.is_object()) continue;
    if (auto n = img.value("name", std::string()); !n.empty()) out.push_back(n);
    for (auto const& a : img.value("aliases", nlohmann::json::array())) {
      if (a.is_string()) out.push_back(a.get<std::string>());
    }
  }
  return out;
}

StatusOr<std::string> ImageStore::Resolve(std::string const& reference) {
  auto rows = db_.Query("SELECT target FROM image_aliases WHERE alias = ?", {reference});
  if (!rows.ok()) return rows.status();
  return rows->empty() ? reference : rows->front().Text(0);
}

Status ImageStore::CheckKnown(std::string const& reference) {
  // A registry's image a rescan found: agents pull it (issue 46).
  auto scanned =
      db_.Query("SELECT 1 FROM registry_images WHERE canonical = ?", {CanonicalImage(reference)});
  if (!scanned.ok()) return scanned.status();
  if (!scanned->empty()) return Status();
  auto rows = db_.Query("SELECT images FROM agents");
  if (!rows.ok()) return rows.status();
  bool any = false;
  for (auto const& row : *rows) {
    auto names = ImageNames(row.Text(0));
    if (names.empty()) continue;
    any = true;
    if (server::OffersImage(names, reference)) return Status();
  }
  if (!any) return Status();
  return protocol::MakeProblemStatus(protocol::ProblemType::kObjectNotFound,
                                     "No such environment image: " + reference);
}

StatusOr<bool> ImageStore::OfferedByAnAgent(std::string const& reference) {
  auto rows = db_.Query("SELECT images FROM agents");
  if (!rows.ok()) return rows.status();
  for (auto const& row : *rows) {
    if (server::OffersImage(ImageNames(row.Text(0)), reference)) return true;
  }
  return false;
}

Status ImageStore::SetAlias(ImageAlias const& a) {
  return db_
      .Exec(
          "INSERT INTO image_aliases (alias, target, architecture, created_at) VALUES (?, ?, ?, "
          "?) ON CONFLICT (alias) DO UPDATE SET target = excluded.target, "
          "architecture = excluded.architecture",
          {a.alias, a.target, a.architecture, NowIso()})
      .status();
}

StatusOr<bool> ImageStore::RemoveAlias(std::string const& alias) {
  auto n = db_.Exec("DELETE FROM image_aliases WHERE alias = ?", {alias});
  if (!n.ok()) return n.status();
  return *n > 0;
}

StatusOr<std::vector<ImageAlias>> ImageStore::Aliases() {
  auto rows = db_.Query("SELECT alias, target, architecture FROM image_aliases");
  if (!rows.ok()) return rows.status();
  std::vector<ImageAlias> out;
  for (auto const& r : *rows) out.push_back({r.Text(0), r.Text(1), r.Text(2)});
  return out;
}

}  // namespace bai::manager
