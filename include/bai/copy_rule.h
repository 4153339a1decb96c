// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where copied files land: the one rule of `bai cp` (this machine <-> a folder) and
// `bai session cp` (this machine <-> a session), the rule of cp(1) and scp(1). PlaceCopies is
// pure: the callers find out what the paths are (LocalPathKind, a listing) and move the bytes.

#include "bai/export.h"
#include "bai/status.h"

#include <string>
#include <vector>

namespace bai {

/// What a path is before anything moves.
enum class PathKind { kMissing, kFile, kDirectory };

struct CopySource {
  std::string path;
  PathKind kind = PathKind::kFile;
};

/// Where each source goes (one target per source, in order):
/// - the destination is a directory when it exists as one, ends in '/', or is "" or "."; each
///   source then lands inside it under its own last name (a missing '/'-ended one is made);
/// - otherwise the one source takes the destination's name: a file is written or replaced, a
///   directory is made with the source's contents;
/// - refused (kInvalidArgument): several sources and a destination that is not a directory, a
///   directory without `recursive`, a directory over a file, a '/'-ended destination that is a
///   file, a source with no last name to place inside a directory ("/", ".."), a missing source
///   (kNotFound).
BAI_EXPORT StatusOr<std::vector<std::string>> PlaceCopies(std::vector<CopySource> const& sources,
                                                          std::string const& destination,
                                                          PathKind destination_kind,
                                                          bool recursive);

/// What a local path is, following links as cp does for the paths it is given (a stat).
BAI_EXPORT PathKind LocalPathKind(std::string const& path);

/// Whether sources go inside `destination` (the first case above).
BAI_EXPORT bool CopiesInto(std::string const& destination, PathKind destination_kind);

/// The last name of a path ("a/b/" -> "b"); "" for "/" or "".
BAI_EXPORT std::string LastName(std::string path);

/// `dir` + '/' + `name`, with "" and "." meaning the current directory.
BAI_EXPORT std::string JoinPath(std::string const& dir, std::string const& name);

}  // namespace bai
