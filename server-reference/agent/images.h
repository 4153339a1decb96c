// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/agent/layer_store.h"
#include "server-reference/common/wire/agent_messages.h"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bai::server::oci {
class RegistryClient;
struct ImageReference;
}  // namespace bai::server::oci

namespace bai::agent {

/// One image in the agent's local store: `<store>/<name>/manifest.json` and
/// `<store>/<name>/rootfs`.
struct Image {
  std::string name;
  std::vector<std::string> aliases;
  /// Absolute path of the root filesystem of a flat image (built-ins, images of an agent that
  /// cannot mount overlays); empty for a layered one.
  std::string rootfs;
  /// A layered image's directories, top first as overlayfs stacks them: the image's own `top`
  /// (the directories a kernel mounts over), then its layers from the store (issue 46).
  std::vector<std::string> layers;
  std::map<std::string, std::string> labels;  ///< ai.backend.* labels
  std::vector<std::string> host_mounts;       ///< host directories mounted read-only (built-ins)
  std::vector<std::string> env;               ///< KEY=VALUE from the image config
  std::string digest;                         ///< a pulled image's manifest digest ("" for others)
  /// The image config's WorkingDir, User, Entrypoint and Cmd (image_process.h says what they
  /// mean for a kernel).
  std::string working_dir, user;
  std::vector<std::string> entrypoint, cmd;

  /// `ai.backend.runtime-type` (python | shell; default shell).
  std::string RuntimeType() const;
  /// `ai.backend.runtime-path` (default /usr/bin/python3 or /bin/sh).
  std::string RuntimePath() const;
};

/// Where a pull stands: bytes of the image's layers held so far and in all, layers done.
struct PullProgress {
  std::int64_t done = 0, total = 0;
  int layers_done = 0, layers = 0;
  std::string words;  ///< the step, in words ("layer 2/8 sha256:… stored")
};

/// Where a kernel's root filesystem comes from: the runc backend's one seam for images (issue
/// 45): the store of built-in, imported and pulled images (ImageStore). Provide is called on a
/// kernel's start thread (a pull on demand takes its time there).
class RootfsProvider {
 public:
  virtual ~RootfsProvider() = default;
  /// The image a kernel names, pulled first where its registry (the manager's word) and the
  /// pull policy say so; `progress` hears the pull. The base: Find.
  virtual StatusOr<Image> Provide(server::agent_protocol::CreateKernel const& spec,
                                  std::function<void(PullProgress const&)> const& progress) {
    (void)progress;
    return Find(spec.image);
  }
  /// The image a session names (a name, an alias, or a registry reference), its root
  /// filesystem ready.
  virtual StatusOr<Image> Find(std::string const& reference) const = 0;
  /// Every name and alias offered, with sizes (the agent's registration and rescans).
  virtual std::vector<server::agent_protocol::ImageInfo> List() const = 0;
};

/// The agent's image store. Built-in images `python` and `shell` are made from the host's
/// read-only /usr with a synthesised minimal /etc (docs: server-reference/README.md, "Images").
class ImageStore : public RootfsProvider {
 public:
  explicit ImageStore(std::string root);

  /// Pulls and imports keep each layer once in `layers/` and a kernel's root is an overlay of
  /// them (when the agent's host mounts overlays: ProbeOverlay); otherwise (the default) each
  /// image is a flat copy of its own.
  void set_layered(bool layered) { layered_ = layered; }
  /// Layered when this host mounts overlays over the store (ProbeOverlay), else flat; says why
  /// not when it cannot.
  Status DetectLayered();
  /// At the agent's start (nothing pulls yet): removes what a pull or import that did not
  /// finish left (staging directories, partial downloads, half-made layers); their count.
  int SweepUnfinished();
  bool layered() const { return layered_; }
  LayerStore& layer_store() { return layers_; }

  /// Creates (or refreshes) the built-in images; needs write access to the store.
  Status EnsureBuiltins();
  /// By name or alias (server::ImageServes: a registry reference only as a pulled image's
  /// canonical name, never a host image of the same last component).
  StatusOr<Image> Find(std::string const& reference) const override;
  /// Names and aliases, for the agent's registration.
  std::vector<std::string> Names() const;
  /// The same, one entry per name and per alias (the manager keeps them so), each with its
  /// image's size: the bytes of its files in the store (a built-in's read-only host mounts are
  /// the host's, not counted).
  std::vector<server::agent_protocol::ImageInfo> List() const override;
  /// Imports under `name` an OCI image layout directory (`index.json`, first or `tag`-named
  /// manifest), an OCI archive (such a layout in a tar), a `docker save` tarball (first or
  /// `tag`-named of its RepoTags), or a root filesystem tarball (.tar, .tar.gz). The image
  /// config (labels, Env, Cmd…) comes along; each layer is checked against its diff_id.
  Status Import(std::string const& source, std::string const& name, std::string const& tag = "");
  /// Writes the image `reference` (a name or alias) as an OCI image layout at `out`, or, when
  /// `out` ends in ".tar", an OCI archive: its layers re-made from the store as uncompressed
  /// tars (whiteouts and opaque directories as the OCI spec writes them), its config (Env,
  /// Cmd, labels…) kept, so digests differ from a registry's while the files are the same.
  /// Host images are refused (the host's /usr). The manifest's digest.
  StatusOr<std::string> Export(std::string const& reference, std::string const& out) const;
  /// Pulls `reference` from `registry` under `name`, as a flat copy (issue 46: the layer store
  /// and overlay roots come next): an index gives this machine's linux platform, an image for
  /// another architecture is refused before any layer is fetched, each layer is checked against
  /// its digest while it downloads and against the config's diff_ids before it is applied.
  /// The canonical name (`REGISTRY/REPOSITORY:TAG`) becomes an alias. `progress` hears each
  /// step in words. Nothing is installed unless all of it holds.
  /// `name` "": `NAME-DIGEST12` (the repository's last part and the manifest digest's first
  /// twelve hex digits); an image of that name already held is only given the alias. The
  /// canonical name moves: an older image that had it loses it.
  Status Pull(server::oci::RegistryClient& registry, server::oci::ImageReference const& reference,
              std::string const& name,
              std::function<void(PullProgress const&)> const& progress = {});
  /// Find, or a pull first (one per image, whatever the number of kernels waiting for it: the
  /// others hear its progress and take its outcome): when the image is absent and auto_pull is
  /// not `none`, or when auto_pull is `digest` and the manager's digest is not the one held.
  StatusOr<Image> Provide(server::agent_protocol::CreateKernel const& spec,
                          std::function<void(PullProgress const&)> const& progress) override;
  /// A pull that moves no byte for this long fails (default 5 minutes).
  void set_stall_timeout(std::chrono::seconds timeout) { stall_timeout_ = timeout; }

  std::string const& root() const { return root_; }

  struct LayerBlob;

 private:
  Status StoreLayers(std::vector<LayerBlob> const& blobs, std::string const& tmp,
                     nlohmann::json& manifest,
                     std::function<void(PullProgress const&)> const& progress);
  Status ImportDockerSave(std::filesystem::path const& src, std::string const& tag,
                          std::string const& name, std::string const& tmp,
                          nlohmann::json& manifest);

  /// An image's pull under way, for the kernels that join it.
  struct InFlight;

  std::string root_;
  LayerStore layers_;
  bool layered_ = false;
  std::chrono::seconds stall_timeout_{300};
  std::mutex pulls_mu_;
  std::map<std::string, std::shared_ptr<InFlight>> pulls_;  ///< by canonical name
};

/// What a stored image is by its manifest (agent_messages.h's kinds): host (a built-in on the
/// host's /usr), pulled (it has a registry digest) or imported.
std::string StoredImageKind(nlohmann::json const& manifest);

/// The text of a synthesised /etc file for a built-in image (passwd, group, hosts, nsswitch.conf,
/// resolv.conf); exposed for tests.
std::string SynthesisedEtcFile(std::string const& name, int uid, int gid);

}  // namespace bai::agent
