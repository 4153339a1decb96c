// SPDX-License-Identifier: Apache-2.0
// `bai-agent image export` (issue 46, item 6): an image of the store written as an OCI image
// layout, or an OCI archive (the layout in one tar), for an agent without a registry to import.
#include "libbai/util/json_parse.h"
#include "server-reference/agent/images.h"
#include "server-reference/common/fs/image_root.h"
#include "server-reference/common/fs/layer_tar.h"
#include "server-reference/common/oci/manifest.h"

#include <nlohmann/json.hpp>
#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Status WriteText(fs::path const& p, std::string const& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status(StatusCode::kInternal, "cannot write " + p.string());
  return Status();
}

// Writes `bytes` as a blob of the layout; its descriptor.
StatusOr<json> PutBlob(fs::path const& layout, std::string const& media_type,
                       std::string const& bytes) {
  std::string digest = server::oci::Sha256Digest(bytes);
  if (auto s = WriteText(layout / "blobs" / "sha256" / digest.substr(7), bytes); !s.ok()) return s;
  return json{{"mediaType", media_type},
              {"digest", digest},
              {"size", static_cast<std::int64_t>(bytes.size())}};
}

}  // namespace

StatusOr<std::string> ImageStore::Export(std::string const& reference,
                                         std::string const& out) const {
  auto img = Find(reference);
  if (!img.ok()) return img.status();
  if (!img->host_mounts.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  img->name + " is a built-in host image (the host's own /usr): nothing to export");
  }
  std::stringstream text;
  text << std::ifstream(fs::path(root_) / img->name / "manifest.json").rdbuf();
  auto stored = internal::ParseJson(text.str());
  if (!stored || !stored->is_object()) {
    return Status(StatusCode::kDataLoss, "image " + img->name + " has no readable manifest");
  }
  bool archive = out.size() > 4 && out.substr(out.size() - 4) == ".tar";
  fs::path layout = archive ? fs::path(out + ".layout.partial") : fs::path(out);
  std::error_code ec;
  if (fs::exists(layout, ec) && !fs::is_empty(layout, ec)) {
    return Status(StatusCode::kAlreadyExists, layout.string() + " exists and is not empty");
  }
  auto fail = [&](Status s) {
    if (archive) fs::remove_all(layout, ec);
    return s;
  };
  fs::create_directories(layout / "blobs" / "sha256", ec);
  if (ec) return Status(StatusCode::kInternal, "cannot make " + layout.string());
  // The layers base first: a layered image's from the store (its `top` holds only the mount
  // points the agent makes), a flat image's root as one layer.
  std::vector<std::string> dirs;
  bool layered = img->rootfs.empty();
  if (layered) {
    dirs.assign(img->layers.rbegin(), img->layers.rend() - 1);
  } else {
    dirs.push_back(img->rootfs);
  }
  json layers = json::array(), diff_ids = json::array();
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    fs::path tar = layout / "blobs" / "sha256" / ("layer" + std::to_string(i) + ".partial");
    if (auto s = server::WriteTreeTar(dirs[i], tar.string(), layered); !s.ok()) return fail(s);
    auto digest = server::LayerDiffId(tar.string());  // uncompressed: its digest is its DiffID
    if (!digest.ok()) return fail(digest.status());
    auto size = static_cast<std::int64_t>(fs::file_size(tar, ec));
    fs::rename(tar, layout / "blobs" / "sha256" / digest->substr(7), ec);
    if (ec) return fail(Status(StatusCode::kInternal, "cannot write " + layout.string()));
    layers.push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar"},
                      {"digest", *digest},
                      {"size", size}});
    diff_ids.push_back(*digest);
  }
  json config_fields = json::object();
  auto copy = [&](char const* from, char const* to) {
    if (auto it = stored->find(from); it != stored->end() && !it->is_null() &&
                                      !(it->is_string() && it->get<std::string>().empty()) &&
                                      !(it->is_array() && it->empty())) {
      config_fields[to] = *it;
    }
  };
  copy("env", "Env");
  copy("working_dir", "WorkingDir");
  copy("user", "User");
  copy("entrypoint", "Entrypoint");
  copy("cmd", "Cmd");
  if (!img->labels.empty()) config_fields["Labels"] = img->labels;
  std::string arch = stored->value("architecture", "");
  if (arch.empty()) {
    utsname u{};
    arch = ::uname(&u) == 0 ? server::oci::OciArchitecture(u.machine) : "amd64";
  }
  json config = {{"architecture", arch},
                 {"os", "linux"},
                 {"config", config_fields},
                 {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}};
  auto config_desc = PutBlob(layout, "application/vnd.oci.image.config.v1+json", config.dump());
  if (!config_desc.ok()) return fail(config_desc.status());
  json manifest = {{"schemaVersion", 2},
                   {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                   {"config", *config_desc},
                   {"layers", layers}};
  auto manifest_desc =
      PutBlob(layout, "application/vnd.oci.image.manifest.v1+json", manifest.dump());
  if (!manifest_desc.ok()) return fail(manifest_desc.status());
  (*manifest_desc)["annotations"] = {{"org.opencontainers.image.ref.name", "latest"}};
  if (auto s = WriteText(layout / "index.json",
                         json{{"schemaVersion", 2}, {"manifests", {*manifest_desc}}}.dump());
      !s.ok()) {
    return fail(s);
  }
  if (auto s = WriteText(layout / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})"); !s.ok()) {
    return fail(s);
  }
  if (archive) {
    std::string partial = out + ".partial";
    if (auto s = server::WriteTreeTar(layout.string(), partial, false); !s.ok()) return fail(s);
    fs::remove_all(layout, ec);
    fs::rename(partial, out, ec);
    if (ec) return Status(StatusCode::kInternal, "cannot write " + out + ": " + ec.message());
  }
  return (*manifest_desc)["digest"].get<std::string>();
}

}  // namespace bai::agent
