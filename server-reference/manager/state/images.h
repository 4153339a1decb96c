// SPDX-License-Identifier: Apache-2.0
#pragma once
// Images as the manager knows them: the names and aliases agents report (agents.images) and a
// superadmin's aliases (image_aliases, alias_image / dealias_image).

#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <string>
#include <vector>

namespace bai::manager {

/// The names and aliases in an agent's reported image list (JSON [{name, aliases}] or [name]).
std::vector<std::string> ImageNames(std::string const& reported);

/// One alias a superadmin defined.
struct ImageAlias {
  std::string alias;
  std::string target;
  std::string architecture;
};

class ImageStore {
 public:
  explicit ImageStore(server::Database& db) : db_(db) {}

  /// The image an alias names, or `reference` itself.
  StatusOr<std::string> Resolve(std::string const& reference);
  /// 404 `object-not-found` ("No such environment image") when agents have registered images
  /// and none offers `reference` (server::ImageServes) and no rescan found it in a registry.
  /// With no images known yet, any is accepted.
  Status CheckKnown(std::string const& reference);
  /// Whether some agent's image list offers `reference` (server::OffersImage).
  StatusOr<bool> OfferedByAnAgent(std::string const& reference);

  /// Defines `alias` (replacing what it named before).
  Status SetAlias(ImageAlias const& alias);
  /// Whether there was such an alias to remove.
  StatusOr<bool> RemoveAlias(std::string const& alias);
  StatusOr<std::vector<ImageAlias>> Aliases();

 private:
  server::Database& db_;
};

}  // namespace bai::manager
