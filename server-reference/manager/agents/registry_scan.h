// SPDX-License-Identifier: Apache-2.0
#pragma once
// A registry's part of rescan_images (issue 46; 24.09's container_registry/base.py): its
// repositories (the v2 catalog, or Harbor 2's project API), their tags, each tag's manifest
// (an index: each platform's), each image's config: one image row per canonical name and
// architecture, with its digest, size, labels. At most four requests at a time per registry.

#include "bai/status.h"

#include "server-reference/common/oci/manifest.h"
#include "server-reference/manager/state/registries.h"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::manager {

/// Backend.AI's architecture names (24.09's arch_name_aliases): amd64 → x86_64,
/// arm64 → aarch64; others as given.
std::string BackendAiArchitecture(std::string_view oci_architecture);

/// Whether `repository` belongs to `project` ("lab/app" to "lab"; every one when no project).
bool InProject(std::string const& repository, std::string const& project);

/// The row a rescan keeps of one image (pure): canonical `REGISTRY/REPOSITORY:TAG`, the
/// project and name split off the repository, the manifest's digest, size (layers + config,
/// as 24.09 counts), the config's labels, the architecture in Backend.AI's names.
RegistryImage ScannedImage(ContainerRegistry const& registry, std::string const& repository,
                           std::string const& tag, std::string const& manifest_digest,
                           server::oci::Manifest const& manifest,
                           server::oci::ImageConfig const& config);

/// What a scan found: images kept, and what could not be read (a tag, a repository), each in
/// words; a registry that could not be listed at all is the scan's error.
struct RegistryScan {
  std::size_t images = 0;
  std::vector<std::string> problems;
};

/// Scans one tag of one repository of `registry` (24.09's rescan of an image reference: what
/// works where there is no catalog, Docker Hub or NGC).
StatusOr<RegistryScan> ScanImage(ContainerRegistry const& registry, std::string const& repository,
                                 std::string const& tag, RegistryStore& store);

/// Scans `registry` into `store`; `progress` hears each image kept.
StatusOr<RegistryScan> ScanRegistry(ContainerRegistry const& registry, RegistryStore& store,
                                    std::function<void(std::string const&)> const& progress = {});

}  // namespace bai::manager
