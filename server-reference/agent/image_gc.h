// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the agent's image store holds and what it can let go (issue 46, item 6): disk use per
// image (its own bytes and the layers it shares), removal of an image and of the layers nothing
// else needs, prunes of unreferenced layers and unused pulled images; never an image a kernel
// uses. `bai-agent image ls|rm|prune` are their shells. The choice of what goes is pure
// (PlanRemoval); the rest reads and removes files.

#include "bai/status.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace bai::agent {

class ImageStore;

/// One image of the store as its manifest says it.
struct StoredImage {
  std::string name;
  std::vector<std::string> aliases;
  std::string kind;                 ///< host | imported | pulled (agent_messages.h)
  std::vector<std::string> layers;  ///< ChainIDs, base first (none for a flat image)
  std::int64_t own_bytes = 0;       ///< its directory's files (a flat image's whole root)
};

/// Every image of the store (a manifest that cannot be read is skipped).
std::vector<StoredImage> StoredImages(ImageStore const& store);

/// The names of the images the kernels of every agent on `state_dir` use (the store is
/// STATE_DIR/images, shared; each agent's kernels are STATE_DIR/AGENT_ID/kernels/*), by the
/// references their records name; kUnavailable when a kernel there has no record yet (being
/// started: its image cannot be told), unless that directory is over 10 minutes old (left by an
/// agent that is gone).
StatusOr<std::set<std::string>> ImagesInUse(ImageStore const& store, std::string const& state_dir);

/// Disk use of one image: all the bytes it stands on, and those only it needs.
struct ImageDiskUse {
  std::string name;
  std::vector<std::string> aliases;
  std::string kind;
  std::int64_t bytes = 0;      ///< its own and all its layers'
  std::int64_t own_bytes = 0;  ///< freed by removing it alone (shared layers stay)
  bool in_use = false;
};
/// `layer_bytes`: each layer's bytes by ChainID. Pure.
std::vector<ImageDiskUse> DiskUse(std::vector<StoredImage> const& images,
                                  std::map<std::string, std::int64_t> const& layer_bytes,
                                  std::set<std::string> const& in_use);

/// What a removal or prune takes: images (by name) and layers (by ChainID).
struct RemovalPlan {
  std::vector<std::string> images;
  std::vector<std::string> layers;
};
/// Which of `images` go and which layers then go with them: `remove` (names) unless in
/// `in_use` (kFailedPrecondition naming the image) or a host image (kFailedPrecondition: the
/// agent makes it again at its start); with `unused_pulled`, every pulled image not in use;
/// then every layer of `layers` no remaining image names. Pure.
StatusOr<RemovalPlan> PlanRemoval(std::vector<StoredImage> const& images,
                                  std::vector<std::string> const& layers,
                                  std::vector<std::string> const& remove,
                                  std::set<std::string> const& in_use, bool unused_pulled);

/// What purge_images asks of a store on `state_dir`: each image (name, alias or reference) that
/// is here and unused removed, one by one (one refused does not stop the others), then, with
/// `prune`, layers no image needs. Names removed, "IMAGE: why" for the rest, bytes freed.
struct PurgeOutcome {
  std::vector<std::string> removed, errors;
  std::int64_t freed = 0;
};
PurgeOutcome Purge(ImageStore& store, std::string const& state_dir,
                   std::vector<std::string> const& references, bool prune);

/// Carries a plan out: each image's directory, then the layers; the bytes freed. A pull or
/// import under way (a staging directory in the store) keeps every layer: kUnavailable, nothing
/// removed.
StatusOr<std::int64_t> CarryOut(ImageStore& store, RemovalPlan const& plan);

}  // namespace bai::agent
