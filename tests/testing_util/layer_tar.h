// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

/// Image layers for tests, written with libarchive so that member names are exactly as given
/// (GNU tar would clean "../x" or a leading "/"), and OCI image layouts made of them.
namespace bai::testing_util {

/// One tar member of a test layer.
struct LayerMember {
  enum Kind { kFile, kDir, kLink, kHardLink } kind;
  std::string name;
  std::string data;  ///< a file's bytes; a link's or a hard link's target
  unsigned mode = 0644;
};

LayerMember LayerFile(std::string name, std::string data, unsigned mode = 0644);
LayerMember LayerDir(std::string name, unsigned mode = 0755);
LayerMember LayerLink(std::string name, std::string target);
LayerMember LayerHardLink(std::string name, std::string target);

/// Writes a gzip'd tar of `members` at `path`; returns `path`.
std::string WriteLayer(std::string const& path, std::vector<LayerMember> const& members);

/// Writes an OCI image layout at `dir` (index.json tagged `tag`, blobs by their sha256) of
/// these layers, bottom first; `config` is the image config's `config` object (Env, Cmd,
/// Labels, …) as JSON text.
void WriteOciLayout(std::string const& dir, std::string const& tag,
                    std::vector<std::vector<LayerMember>> const& layers,
                    std::string const& config = "{}");

}  // namespace bai::testing_util
