// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a registry pull reads (OCI image-spec and Docker's v2 schema 2): manifests, indexes
// (manifest lists) with the platform an agent chooses, image configs, layer chain ids, and the
// SHA-256 digests everything is addressed by. Pure functions over bytes; no I/O.

#include "bai/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::server::oci {

namespace media {
inline constexpr char kOciManifest[] = "application/vnd.oci.image.manifest.v1+json";
inline constexpr char kOciIndex[] = "application/vnd.oci.image.index.v1+json";
inline constexpr char kOciConfig[] = "application/vnd.oci.image.config.v1+json";
inline constexpr char kDockerManifest[] = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr char kDockerList[] = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr char kDockerConfig[] = "application/vnd.docker.container.image.v1+json";
/// What a pull asks for (the Accept header): the four manifest and index types.
std::string AcceptHeader();
}  // namespace media

struct Platform {
  std::string os, architecture, variant;  ///< "linux", "amd64", "v8"
};

/// A content descriptor: what a manifest names by digest.
struct Descriptor {
  std::string media_type;
  std::string digest;  ///< "sha256:…"
  std::int64_t size = 0;
  std::optional<Platform> platform;  ///< an index entry's
  std::map<std::string, std::string> annotations;
};

/// An image manifest: its config and its layers, base first.
struct Manifest {
  std::string media_type;
  Descriptor config;
  std::vector<Descriptor> layers;
  std::int64_t LayerBytes() const;
};

/// An index (or Docker manifest list): manifests per platform.
struct Index {
  std::string media_type;
  std::vector<Descriptor> manifests;
};

/// A manifest document as the registry answered it: one of the two, by media type (the
/// document's `mediaType`, else the Content-Type; they must agree when both are given).
struct ManifestDocument {
  std::optional<Manifest> manifest;
  std::optional<Index> index;
};

/// Refused with kInvalidArgument naming what is wrong: not JSON, schema 1 (not supported), an
/// unknown manifest type, a `mediaType` that differs from the Content-Type, a layer or config
/// without a valid sha256 digest or with a negative size, no layers.
StatusOr<ManifestDocument> ParseManifest(std::string_view body, std::string_view content_type);

/// The OCI architecture of a machine (`uname -m`): x86_64 → amd64, aarch64 → arm64; others
/// as given.
std::string OciArchitecture(std::string_view machine);

/// Whether an index entry is an attestation (a build's provenance, not an image): annotated
/// with `vnd.docker.reference.type`, or of platform unknown/unknown.
bool IsAttestation(Descriptor const& d);

/// The entry of `index` for linux/`architecture` (OCI's names): the first match, as the
/// image-spec says; entries of another OS or architecture and attestations (unknown/unknown,
/// or carrying `vnd.docker.reference.type`) are passed over; kNotFound listing the platforms
/// the index has otherwise.
StatusOr<Descriptor> ChoosePlatform(Index const& index, std::string_view architecture);

/// What an image's config says that a kernel uses.
struct ImageConfig {
  std::string architecture, os;
  std::vector<std::string> env;  ///< "K=V"
  std::string working_dir, user;
  std::vector<std::string> entrypoint, cmd;
  std::map<std::string, std::string> labels;
  std::vector<std::string> diff_ids;  ///< the uncompressed layers' digests, base first
};
/// Refused with kInvalidArgument: not a JSON object, diff_ids that are not sha256 digests.
StatusOr<ImageConfig> ParseImageConfig(std::string_view body);

/// "sha256:<hex>" of `bytes`.
std::string Sha256Digest(std::string_view bytes);

/// A digest computed over bytes as they stream.
class DigestWriter {
 public:
  DigestWriter();
  ~DigestWriter();
  DigestWriter(DigestWriter const&) = delete;
  DigestWriter& operator=(DigestWriter const&) = delete;
  void Update(std::string_view bytes);
  /// "sha256:<hex>" of everything given (the writer is finished).
  std::string Finish();

 private:
  void* ctx_;  // EVP_MD_CTX
};

/// The ChainIDs of a layer stack (image-spec config.md): ChainID(L0) = DiffID(L0),
/// ChainID(L0..n) = sha256(ChainID(L0..n-1) + " " + DiffID(Ln)). Where a layer's directory is
/// kept: two images that share their base share these.
std::vector<std::string> ChainIds(std::vector<std::string> const& diff_ids);

}  // namespace bai::server::oci
