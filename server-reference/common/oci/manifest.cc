// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/oci/manifest.h"

#include "libbai/protocol/json_fields.h"
#include "server-reference/common/oci/reference.h"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace bai::server::oci {
namespace {

using nlohmann::json;

Status Bad(std::string const& why) { return Status(StatusCode::kInvalidArgument, why); }

// A string field, "" when absent or of another type (AnswerFields::Str would give a number's
// text: not wanted for a path or a digest).
std::string Str(json const& j, char const* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

StatusOr<Descriptor> DescriptorOf(json const& j, std::string const& what) {
  if (!j.is_object()) return Bad(what + " is not an object");
  Descriptor d;
  d.media_type = Str(j, "mediaType");
  d.digest = Str(j, "digest");
  if (!ValidDigest(d.digest)) {
    return Bad(what + " has no sha256 digest ('" + d.digest + "'; only sha256 is supported)");
  }
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_integer() || size->get<std::int64_t>() < 0) {
    return Bad(what + " " + d.digest + " has no size");
  }
  d.size = size->get<std::int64_t>();
  if (auto p = j.find("platform"); p != j.end() && p->is_object()) {
    d.platform = Platform{Str(*p, "os"), Str(*p, "architecture"), Str(*p, "variant")};
  }
  if (auto a = j.find("annotations"); a != j.end() && a->is_object()) {
    for (auto const& [k, v] : a->items()) {
      if (v.is_string()) d.annotations[k] = v.get<std::string>();
    }
  }
  return d;
}

StatusOr<Manifest> ManifestOf(json const& j, std::string const& type) {
  Manifest m;
  m.media_type = type;
  auto config = j.find("config");
  if (config == j.end()) return Bad("the manifest has no config");
  auto c = DescriptorOf(*config, "the config");
  if (!c.ok()) return c.status();
  m.config = *std::move(c);
  auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array() || layers->empty()) {
    return Bad("the manifest has no layers");
  }
  for (std::size_t i = 0; i < layers->size(); ++i) {
    auto l = DescriptorOf((*layers)[i], "layer " + std::to_string(i + 1));
    if (!l.ok()) return l.status();
    m.layers.push_back(*std::move(l));
  }
  return m;
}

StatusOr<Index> IndexOf(json const& j, std::string const& type) {
  Index x;
  x.media_type = type;
  auto list = j.find("manifests");
  if (list == j.end() || !list->is_array()) return Bad("the index has no manifests");
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto d = DescriptorOf((*list)[i], "index entry " + std::to_string(i + 1));
    if (!d.ok()) return d.status();
    x.manifests.push_back(*std::move(d));
  }
  return x;
}

// The media type without parameters ("…+json; charset=utf-8").
std::string_view Bare(std::string_view type) {
  auto semi = type.find(';');
  if (semi != std::string_view::npos) type = type.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  return type;
}

std::string Hex(unsigned char const* bytes, unsigned n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

}  // namespace

std::string media::AcceptHeader() {
  return std::string(kOciManifest) + ", " + kOciIndex + ", " + kDockerManifest + ", " + kDockerList;
}

std::int64_t Manifest::LayerBytes() const {
  std::int64_t total = 0;
  for (auto const& l : layers) total += l.size;
  return total;
}

StatusOr<ManifestDocument> ParseManifest(std::string_view body, std::string_view content_type) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad("the manifest is not a JSON object");
  if (auto v = j.find("schemaVersion"); v != j.end() && v->is_number_integer() && *v == 1) {
    return Bad(
        "schema 1 manifests are not supported (push the image again with a current "
        "client)");
  }
  std::string declared = Str(j, "mediaType");
  std::string header(Bare(content_type));
  if (!declared.empty() && !header.empty() && header != "application/json" &&
      header != "application/octet-stream" && declared != header) {
    return Bad("the manifest says it is " + declared + " but was served as " + header);
  }
  std::string type = declared.empty() ? header : declared;
  if (type.empty() || type == "application/json") {
    // An OCI document may leave mediaType out: what it holds tells.
    type = j.contains("manifests") ? media::kOciIndex : media::kOciManifest;
  }
  ManifestDocument doc;
  if (type == media::kOciManifest || type == media::kDockerManifest) {
    auto m = ManifestOf(j, type);
    if (!m.ok()) return m.status();
    doc.manifest = *std::move(m);
  } else if (type == media::kOciIndex || type == media::kDockerList) {
    auto x = IndexOf(j, type);
    if (!x.ok()) return x.status();
    doc.index = *std::move(x);
  } else {
    return Bad("unknown manifest type " + type);
  }
  return doc;
}

std::string OciArchitecture(std::string_view machine) {
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  return std::string(machine);
}

bool IsAttestation(Descriptor const& d) {
  if (d.annotations.count("vnd.docker.reference.type")) return true;
  return d.platform && d.platform->os == "unknown" && d.platform->architecture == "unknown";
}

StatusOr<Descriptor> ChoosePlatform(Index const& index, std::string_view architecture) {
  std::string offered;
  for (auto const& d : index.manifests) {
    if (IsAttestation(d) || !d.platform) continue;
    if (d.platform->os == "linux" && d.platform->architecture == architecture) return d;
    offered += (offered.empty() ? "" : ", ") + d.platform->os + "/" + d.platform->architecture +
               (d.platform->variant.empty() ? "" : "/" + d.platform->variant);
  }
  return Status(StatusCode::kNotFound,
                "the image has no linux/" + std::string(architecture) +
                    " variant (it has: " + (offered.empty() ? "none" : offered) + ")");
}

StatusOr<ImageConfig> ParseImageConfig(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad("the image config is not a JSON object");
  ImageConfig c;
  c.architecture = Str(j, "architecture");
  c.os = Str(j, "os");
  if (auto cfg = j.find("config"); cfg != j.end() && cfg->is_object()) {
    c.env = internal::AnswerFields(*cfg).Strings("Env");
    c.working_dir = Str(*cfg, "WorkingDir");
    c.user = Str(*cfg, "User");
    c.entrypoint = internal::AnswerFields(*cfg).Strings("Entrypoint");
    c.cmd = internal::AnswerFields(*cfg).Strings("Cmd");
    if (auto labels = cfg->find("Labels"); labels != cfg->end() && labels->is_object()) {
      for (auto const& [k, v] : labels->items()) {
        if (v.is_string()) c.labels[k] = v.get<std::string>();
      }
    }
  }
  if (auto rootfs = j.find("rootfs"); rootfs != j.end() && rootfs->is_object()) {
    c.diff_ids = internal::AnswerFields(*rootfs).Strings("diff_ids");
  }
  for (auto const& d : c.diff_ids) {
    if (!ValidDigest(d)) return Bad("the image config's diff_id '" + d + "' is not sha256");
  }
  return c;
}

DigestWriter::DigestWriter() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

DigestWriter::~DigestWriter() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void DigestWriter::Update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}

std::string DigestWriter::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out, &n);
  return "sha256:" + Hex(out, n);
}

std::string Sha256Digest(std::string_view bytes) {
  DigestWriter w;
  w.Update(bytes);
  return w.Finish();
}

std::vector<std::string> ChainIds(std::vector<std::string> const& diff_ids) {
  std::vector<std::string> out;
  for (auto const& d : diff_ids) {
    out.push_back(out.empty() ? d : Sha256Digest(out.back() + " " + d));
  }
  return out;
}

}  // namespace bai::server::oci
