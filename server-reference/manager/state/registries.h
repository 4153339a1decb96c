// SPDX-License-Identifier: Apache-2.0
#pragma once
// Container registries and the images rescans found in them (issue 46; 24.09's
// container_registries and images tables): a registry is one row per (registry name, project),
// its password kept for the manager and the agents it sends pulls to, never answered by an API.

#include "bai/protocol/resource.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bai::manager {

/// The registry types bai scans (24.09 has more: github, gitlab, ecr, local).
inline constexpr char const* kRegistryTypes[] = {"docker", "harbor2"};

struct ContainerRegistry {
  std::string id;             ///< UUID
  std::string url;            ///< "https://registry.example", "http://127.0.0.1:5000"
  std::string registry_name;  ///< the canonical names' first part: "127.0.0.1:5000"
  std::string type = "docker";
  std::string project;  ///< "" for none (docker: every repository)
  std::optional<std::string> username, password;
  bool ssl_verify = true;
  bool is_global = true;
};

/// What a create or modify says; unset fields are kept (modify) or defaulted (create).
struct RegistryChange {
  std::optional<std::string> url, registry_name, type, project, username, password;
  std::optional<bool> ssl_verify, is_global;
};

/// One image a rescan found: 24.09's image row, per (canonical name, architecture).
struct RegistryImage {
  std::string canonical;                     ///< REGISTRY/PROJECT/NAME:TAG
  std::string architecture;                  ///< x86_64, aarch64 (Backend.AI's names)
  std::string registry, project, name, tag;  ///< name: the repository without the project
  std::string manifest_digest, config_digest;
  std::int64_t size_bytes = 0;
  std::map<std::string, std::string> labels;
};

/// 24.09's rule for an image's `ai.backend.resource.min.SLOT` labels (registry.py): cpu or mem
/// the request leaves out (`given`) is raised to the image's minimum where `requested` (the
/// defaults) is below it; then any slot below the image's minimum refuses the session
/// (kInvalidApiParams, "Your resource request is smaller than the minimum required by the
/// image. (cpu=2 mem=8g)"). Labels that are no amount are skipped. Pure.
Status ApplyImageMinimum(std::map<std::string, std::string> const& labels,
                         protocol::ResourceSlots const& given, protocol::ResourceSlots& requested);

/// A registry reference as rows name it (`REGISTRY/REPOSITORY:TAG`: "lab/app" is
/// "index.docker.io/lab/app:latest"); a local name, or text that is no reference, as given.
std::string CanonicalImage(std::string const& reference);

/// A domain's `allowed_docker_registries` (24.09's rule in registry.py, with bai's reading of an
/// empty list): a reference naming a registry (`REGISTRY/…`, after CanonicalImage) must be
/// from one the list names; a local name (a host or imported image) always passes, and so does
/// any registry while the list is empty (24.09 allows none then; bai has no install step that
/// seeds the list, see docs/conformance.md). Refused as 24.09: kObjectNotFound, "unknown alias
/// or disallowed registry", naming the registry and the domain. Pure.
Status CheckRegistryAllowed(std::string const& reference, std::vector<std::string> const& allowed,
                            std::string const& domain);

/// Refused (kInvalidArgument naming the field): a URL that is not http(s)://HOST[:PORT], an
/// unknown type, a name or project with characters a canonical name cannot hold.
Status ValidateRegistry(ContainerRegistry const& r);

/// 24.09's answer shapes: the legacy ContainerRegistry ({id, hostname, config{…}}) and the
/// node ({id, row_id, url, registry_name, type, project, username, password, ssl_verify,
/// is_global, extra}); a set password reads as "*****".
nlohmann::json LegacyRegistryObject(ContainerRegistry const& r);
nlohmann::json RegistryNodeObject(ContainerRegistry const& r);

class RegistryStore {
 public:
  explicit RegistryStore(server::Database& db) : db_(db) {}

  StatusOr<std::vector<ContainerRegistry>> List();
  /// The rows of registry `name` (one per project); empty when none.
  StatusOr<std::vector<ContainerRegistry>> ByName(std::string const& name);
  StatusOr<std::optional<ContainerRegistry>> Get(std::string const& id);
  /// A new row; kAlreadyExists for the same name and project, kInvalidArgument as
  /// ValidateRegistry says.
  StatusOr<ContainerRegistry> Create(RegistryChange const& change);
  /// kNotFound when there is no such row.
  StatusOr<ContainerRegistry> Modify(std::string const& id, RegistryChange const& change);
  /// Whether there was such a row; its images go with it.
  StatusOr<bool> Delete(std::string const& id);

  /// A rescan's finding (replacing what was known of the same name and architecture).
  Status PutImage(RegistryImage const& image);
  /// Images of `registry` (all when ""), by canonical name.
  StatusOr<std::vector<RegistryImage>> Images(std::string const& registry = "");
  /// The image `canonical` for `architecture`, when a rescan found it.
  StatusOr<std::optional<RegistryImage>> FindImage(std::string const& canonical,
                                                   std::string const& architecture);
  /// The registry an image reference is pulled from (the row of its registry name whose project
  /// holds the repository, else the first), when the manager knows one: what a kernel's
  /// creation carries to the agent, with the digest the last rescan found.
  StatusOr<std::optional<ContainerRegistry>> SourceOf(std::string const& reference);
  /// forget_image: whether there was such a row; the superadmin's aliases of it go with it.
  StatusOr<bool> ForgetImage(std::string const& canonical, std::string const& architecture);
  /// clear_images: every image a rescan found in `registry` (a registry name), and the aliases
  /// of them; how many there were.
  StatusOr<std::int64_t> ClearImages(std::string const& registry);

 private:
  Status DropAliasesOf(std::set<std::pair<std::string, std::string>> const& gone);

  server::Database& db_;
};

}  // namespace bai::manager
