// SPDX-License-Identifier: Apache-2.0
#pragma once
// Image references as registries and Backend.AI name them: `REGISTRY/PROJECT/NAME:TAG` or
// `…@sha256:HEX` (OCI distribution's name and tag grammar; 24.09's default registry and
// repository for a bare Docker Hub name). Pure functions.

#include "bai/status.h"

#include <string>
#include <string_view>

namespace bai::server::oci {

/// Docker Hub as 24.09 names it when a reference has no registry.
inline constexpr char kDefaultRegistry[] = "index.docker.io";

struct ImageReference {
  std::string registry;    ///< "127.0.0.1:5000", "cr.backend.ai", kDefaultRegistry
  std::string repository;  ///< "lab/pytorch" (what /v2/<name>/… takes)
  std::string tag;         ///< "2.3"; "latest" when neither a tag nor a digest is given
  std::string digest;      ///< "sha256:<64 hex>", or "" (then the tag names the image)

  /// What /v2/<name>/manifests/<reference> takes: the digest when there is one, else the tag.
  std::string ManifestReference() const { return digest.empty() ? tag : digest; }
  /// `REGISTRY/REPOSITORY:TAG` (24.09's canonical name), with `@DIGEST` when pinned.
  std::string Canonical() const;
};

/// The reference in `text`. The first component is the registry when it has a '.' or a ':' or
/// is "localhost" (as Docker decides; docker.io and registry-1.docker.io are kDefaultRegistry);
/// otherwise the registry is kDefaultRegistry and a name
/// without a '/' is under `lablup/` (24.09's rule, not Docker's `library/`). Refused with
/// kInvalidArgument saying which part is wrong: an empty or upper-case repository component,
/// separators out of place, a tag over 128 characters or with other characters, a digest that
/// is not sha256 with 64 lower-case hex digits.
StatusOr<ImageReference> ParseImageReference(std::string_view text);

/// Where the registry `registry` (a reference's first part) answers: https, or http for
/// loopback (localhost, 127.x, [::1]) and when `plain_http` says so; Docker Hub's
/// index.docker.io is served at registry-1.docker.io.
std::string RegistryUrl(std::string const& registry, bool plain_http = false);

/// Whether `digest` is "sha256:" and 64 lower-case hex digits (the only algorithm bai takes).
bool ValidDigest(std::string_view digest);

}  // namespace bai::server::oci
