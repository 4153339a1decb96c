// SPDX-License-Identifier: Apache-2.0
#pragma once
// The agent's content-addressed image layers (issue 46): each layer unpacked once into a
// directory of its own, named by its ChainID, whatever the number of images built on it; a
// kernel's root is an overlay of its image's layers, mounted for the kernel and gone with it.

#include "bai/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bai::agent {

/// One unpacked layer: `LAYERS/<24 hex of its ChainID>/` (what overlayfs stacks: whiteouts as
/// 0/0 devices, opaque directories by xattr) beside `LAYERS/<same>.json` (its ChainID, DiffID,
/// blob digest and size), written last: a directory without it is half made and swept.
struct Layer {
  std::string chain_id;    ///< sha256:… of its DiffID and those below (image-spec config.md)
  std::string diff_id;     ///< sha256:… of its uncompressed tar
  std::string digest;      ///< the blob it came from (compressed)
  std::int64_t bytes = 0;  ///< its files' bytes on disk
  std::string dir;         ///< absolute path of its directory
};

class LayerStore {
 public:
  /// Layers live in `dir` (the image store's `layers/`), made when missing.
  explicit LayerStore(std::string dir);

  /// The layer of `chain_id` when it is here, whole.
  StatusOr<Layer> Find(std::string const& chain_id) const;
  /// Unpacks `blob`, the compressed layer `digest`, as the layer `chain_id` after checking
  /// that it uncompresses to `diff_id` (kDataLoss naming both otherwise); a layer already
  /// here is kept, and a concurrent Put of the same layer is harmless (one of them wins).
  StatusOr<Layer> Put(std::string const& chain_id, std::string const& diff_id,
                      std::string const& digest, std::string const& blob);
  /// Every whole layer here.
  std::vector<Layer> List() const;
  /// Removes the layer (no image may need it any more: the caller's business).
  Status Remove(std::string const& chain_id);
  /// Removes directories with no record (a Put the agent did not finish); their count.
  int SweepHalfMade();

  std::string const& dir() const { return dir_; }

 private:
  std::string Name(std::string const& chain_id) const;
  std::string dir_;
};

/// The bytes of the regular files under `root`, each hard-linked file once; symbolic links are
/// not followed (what `du -sb --apparent-size` says of an unpacked tree).
std::int64_t TreeBytes(std::string const& root);

/// Mounts at `target` an overlay of `lower` (top first, as overlayfs lists them) with `upper`
/// and `work` (made when missing) holding what is written to it. Lower directories are named
/// through descriptors, so an image of a hundred layers fits the mount's one-page options.
Status MountOverlay(std::vector<std::string> const& lower, std::string const& upper,
                    std::string const& work, std::string const& target);

/// Whether this host mounts overlays over directories in `scratch_dir` (probed there, left
/// clean): an agent that cannot (no overlayfs, not root, a file system overlayfs refuses as
/// its upper) pulls images as flat copies. kOk, or why not.
Status ProbeOverlay(std::string const& scratch_dir);

/// Unmounts `target` while it is a mount point (lazily, not following a link); idempotent.
void Unmount(std::string const& target);

}  // namespace bai::agent
