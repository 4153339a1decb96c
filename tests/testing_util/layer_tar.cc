// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/layer_tar.h"

#include "tests/testing_util/subprocess.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/sha.h>

#include <cstdio>
#include <filesystem>

namespace bai::testing_util {

LayerMember LayerFile(std::string name, std::string data, unsigned mode) {
  return {LayerMember::kFile, std::move(name), std::move(data), mode};
}
LayerMember LayerDir(std::string name, unsigned mode) {
  return {LayerMember::kDir, std::move(name), {}, mode};
}
LayerMember LayerLink(std::string name, std::string target) {
  return {LayerMember::kLink, std::move(name), std::move(target), 0777};
}
LayerMember LayerHardLink(std::string name, std::string target) {
  return {LayerMember::kHardLink, std::move(name), std::move(target), 0644};
}

std::string WriteLayer(std::string const& path, std::vector<LayerMember> const& members) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_add_filter_gzip(a);
  EXPECT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << path;
  for (auto const& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_perm(e, m.mode);
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (m.kind) {
      case LayerMember::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
        break;
      case LayerMember::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case LayerMember::kLink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, m.data.c_str());
        break;
      case LayerMember::kHardLink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, m.data.c_str());
        break;
    }
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << m.name;
    if (m.kind == LayerMember::kFile && !m.data.empty()) {
      archive_write_data(a, m.data.data(), m.data.size());
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return path;
}

namespace {

std::string Sha256Hex(std::string const& data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<unsigned char const*>(data.data()), data.size(), md);
  std::string hex;
  char buf[3];
  for (unsigned char c : md) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    hex += buf;
  }
  return hex;
}

// Puts `data` in the layout's blobs; its descriptor.
nlohmann::json Blob(std::string const& dir, std::string const& media_type,
                    std::string const& data) {
  std::string hex = Sha256Hex(data);
  WriteFileBytes(dir + "/blobs/sha256/" + hex, data);
  return {{"mediaType", media_type},
          {"digest", "sha256:" + hex},
          {"size", static_cast<std::int64_t>(data.size())}};
}

}  // namespace

void WriteOciLayout(std::string const& dir, std::string const& tag,
                    std::vector<std::vector<LayerMember>> const& layers,
                    std::string const& image_config) {
  std::filesystem::create_directories(dir + "/blobs/sha256");
  WriteFileBytes(dir + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  nlohmann::json layer_descs = nlohmann::json::array();
  nlohmann::json diff_ids = nlohmann::json::array();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    std::string tmp = dir + "/layer" + std::to_string(i) + ".tar.gz";
    WriteLayer(tmp, layers[i]);
    layer_descs.push_back(
        Blob(dir, "application/vnd.oci.image.layer.v1.tar+gzip", ReadFileBytes(tmp)));
    // The config names each layer by the digest of its uncompressed tar.
    auto tar = RunProcess({"/bin/gzip", "-dc", tmp});
    diff_ids.push_back("sha256:" + Sha256Hex(tar.out));
    std::filesystem::remove(tmp);
  }
  nlohmann::json config = {{"architecture", "amd64"},
                           {"os", "linux"},
                           {"config", nlohmann::json::parse(image_config)},
                           {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}};
  nlohmann::json manifest = {
      {"schemaVersion", 2},
      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
      {"config", Blob(dir, "application/vnd.oci.image.config.v1+json", config.dump())},
      {"layers", layer_descs}};
  auto desc = Blob(dir, "application/vnd.oci.image.manifest.v1+json", manifest.dump());
  desc["annotations"] = {{"org.opencontainers.image.ref.name", tag}};
  WriteFileBytes(dir + "/index.json",
                 nlohmann::json({{"schemaVersion", 2}, {"manifests", {desc}}}).dump());
}

}  // namespace bai::testing_util
