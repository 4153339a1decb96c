// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <string>

/// An image's root filesystem, written and read by the agent as root although its content is
/// somebody else's: every path is resolved inside the root as the container will see it
/// (openat2 RESOLVE_IN_ROOT: ".." stops at the root, an absolute symbolic link means the image's
/// "/", never the host's), and nothing is created by following a link. Image imports and
/// registry pulls apply layers with it (DECISIONS.md, "Images").
namespace bai::server {

/// Applies one image layer, a tar archive (plain, gzip, zstd… whatever libarchive reads), to
/// the directory `root` as the OCI image spec says: first its whiteouts (`.wh.NAME` removes NAME
/// of the layers below, `.wh..wh..opq` empties its directory), then its entries in order, each
/// replacing what was there (a directory merges). Names are taken relative to the root (a
/// leading "/" or "./" dropped); a name with a ".." component, a hard link to a missing or
/// non-regular target, or an entry beneath something that is not a directory fails the layer
/// (kInvalidArgument naming the entry). Ownership is kept when the caller is root; device
/// nodes and sockets are skipped (runc makes /dev).
Status ApplyImageLayer(std::string const& archive, std::string const& root);

/// Extracts one image layer into the empty directory `dir` of its own, as overlayfs stacks
/// layers: the same confinement and refusals as ApplyImageLayer, but a whiteout `.wh.NAME` is
/// written as NAME, a 0/0 character device, and `.wh..wh..opq` as the xattr
/// `trusted.overlay.opaque=y` on its directory (needs root), hiding what the layers below hold.
Status ExtractOverlayLayer(std::string const& archive, std::string const& dir);

/// A layer's DiffID: "sha256:…" of its uncompressed tar (the archive decompressed by whatever
/// filter it has: gzip, zstd, none), what an image config's `rootfs.diff_ids` names it by.
/// kInvalidArgument when it cannot be read.
StatusOr<std::string> LayerDiffId(std::string const& archive);

/// Makes the directory `path` (and its parents) inside the image root, mode `mode` for those
/// it makes; an existing one is kept as it is.
Status MakeDirectoryInRoot(std::string const& root, std::string const& path, unsigned mode);

/// Sets the permission bits of `path` inside the image root (the link itself is never followed
/// out).
Status ChmodInRoot(std::string const& root, std::string const& path, unsigned mode);

/// A regular file's bytes, read from inside the image root; kNotFound when absent,
/// kResourceExhausted past `limit`.
StatusOr<std::string> ReadFileInRoot(std::string const& root, std::string const& path,
                                     std::int64_t limit);

}  // namespace bai::server
