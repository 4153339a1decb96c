// SPDX-License-Identifier: Apache-2.0
#pragma once
// Tar archives of image trees, written and listed (issue 46, item 6: `bai-agent image export`,
// and imports that tell an OCI archive or a `docker save` tarball from a root filesystem).

#include "bai/status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace bai::server {

/// Writes the tree under `dir` as an uncompressed tar at `out` (pax, names relative to `dir`,
/// parents before children, each name once in byte order): directories, regular files (hard
/// links as links to the first name), symbolic links (never followed) and FIFOs with their
/// modes, owners and modification times; device nodes and sockets are left out. With
/// `overlay_whiteouts` the tree is a layer as overlayfs keeps it and is written as the OCI
/// image spec says a layer is: a 0/0 character device NAME as an empty `.wh.NAME`, a directory
/// with `trusted.overlay.opaque=y` followed by its `.wh..wh..opq`.
Status WriteTreeTar(std::string const& dir, std::string const& out, bool overlay_whiteouts);

/// The names of the first `max` members of the tar archive at `path` (any compression
/// libarchive reads), normalised: no leading "./" or "/"; kInvalidArgument when it is no tar.
StatusOr<std::vector<std::string>> ArchiveMemberNames(std::string const& path, std::size_t max);

}  // namespace bai::server
