// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/images.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/fs/image_root.h"
#include "server-reference/common/oci/manifest.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_client.h"
#include "server-reference/common/wire/image_ref.h"

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace bai::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kBuiltinVersion = 4;

/// Host /etc entries a built-in image gets a copy of: what programs need to run, nothing secret
/// (no shadow, no ssh keys, no agent files).
constexpr char const* kCopiedEtc[] = {
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "python3",  "python3.11",
    "python3.12",   "localtime",   "mime.types", "protocols",    "services", "debian_version",
    "os-release",   "bash.bashrc", "profile",    "inputrc",      "magic",    "mailcap"};

bool ValidImageName(std::string const& name) {
  static std::regex const kName("[a-z0-9][a-z0-9._-]{0,63}");
  return std::regex_match(name, kName);
}

Status WriteFile(fs::path const& path, std::string const& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status(StatusCode::kInternal, "cannot write " + path.string());
  return Status();
}

StatusOr<std::string> ReadFile(fs::path const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bytes of the regular files under `root`, each hard-linked file once; symbolic links are
// not followed (what `du -sb --apparent-size` says of an unpacked image).
std::int64_t TreeBytes(fs::path const& root) {
  std::int64_t total = 0;
  std::set<std::pair<dev_t, ino_t>> linked;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (st.st_nlink > 1 && !linked.insert({st.st_dev, st.st_ino}).second) continue;
    total += st.st_size;
  }
  return total;
}

StatusOr<json> ReadJson(fs::path const& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto j = internal::ParseJson(*text);
  if (!j || !j->is_object()) {
    return Status(StatusCode::kInvalidArgument, path.string() + " is not a JSON object");
  }
  return *j;
}

fs::path BlobPath(fs::path const& layout, std::string const& digest) {
  auto colon = digest.find(':');
  if (colon == std::string::npos || digest.find('/') != std::string::npos ||
      digest.find("..") != std::string::npos) {
    return {};
  }
  return layout / "blobs" / digest.substr(0, colon) / digest.substr(colon + 1);
}

// Where a new image `name` is assembled (`.NAME.KIND` with an empty rootfs/) before
// InstallImage moves it in; refused for a bad name or one the store has already.
StatusOr<fs::path> StagingDir(std::string const& root, std::string const& name, char const* kind) {
  if (!ValidImageName(name)) {
    return Status(
        StatusCode::kInvalidArgument,
        "image name must be 1-64 of a-z, 0-9, '.', '_', '-', starting with a letter or digit");
  }
  std::error_code ec;
  if (fs::exists(fs::path(root) / name, ec)) {
    return Status(StatusCode::kAlreadyExists, "image " + name + " exists already");
  }
  fs::path tmp = fs::path(root) / ("." + name + "." + kind);
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp / "rootfs", ec);
  if (ec) {
    return Status(StatusCode::kInternal, "cannot create " + tmp.string() + ": " + ec.message());
  }
  return tmp;
}

// The end of an import or a pull whose layers are in `tmp`/rootfs (when `applied` is ok): the
// directories a kernel needs made inside the root, the manifest written, `tmp` renamed to
// `dir`; on any failure `tmp` is removed and nothing is installed.
Status InstallImage(Status applied, fs::path const& tmp, fs::path const& dir, json& manifest) {
  Status s = std::move(applied);
  std::error_code ec;
  if (s.ok()) {
    // Inside the image's root: a layer's `tmp -> /etc` must not make the host's /etc 1777.
    std::string rootfs = (tmp / "rootfs").string();
    for (char const* d : {"proc", "dev", "sys", "tmp", "home/work", "opt/bai/bin", "opt/bai/run"}) {
      if (s = server::MakeDirectoryInRoot(rootfs, d, 0755); !s.ok()) break;
    }
    if (s.ok()) s = server::ChmodInRoot(rootfs, "tmp", 01777);
    manifest["size"] = TreeBytes(tmp / "rootfs");
    if (s.ok()) s = WriteFile(tmp / "manifest.json", manifest.dump(2) + "\n");
  }
  if (s.ok()) {
    fs::rename(tmp, dir, ec);
    if (ec)
      s = Status(StatusCode::kInternal, "cannot install " + dir.string() + ": " + ec.message());
  }
  if (!s.ok()) fs::remove_all(tmp, ec);
  return s;
}

// A layer `blob` (its file), checked against the config's `diff_id`, applied to `rootfs`.
Status ApplyCheckedLayer(std::string const& blob, std::string const& digest,
                         std::string const& diff_id, std::size_t index, std::string const& rootfs) {
  auto held = server::LayerDiffId(blob);
  if (!held.ok()) return held.status();
  if (*held != diff_id) {
    return Status(StatusCode::kDataLoss, "layer " + std::to_string(index + 1) + " (" + digest +
                                             ") uncompresses to " + *held +
                                             ", not the config's diff_id " + diff_id + ": refused");
  }
  return server::ApplyImageLayer(blob, rootfs);
}

}  // namespace

std::string Image::RuntimeType() const {
  auto it = labels.find("ai.backend.runtime-type");
  return it == labels.end() || it->second.empty() ? "shell" : it->second;
}

std::string Image::RuntimePath() const {
  auto it = labels.find("ai.backend.runtime-path");
  if (it != labels.end() && !it->second.empty()) return it->second;
  return RuntimeType() == "python" ? "/usr/bin/python3" : "/bin/sh";
}

std::string SynthesisedEtcFile(std::string const& name, int uid, int gid) {
  if (name == "passwd") {
    return "root:x:0:0:root:/root:/usr/sbin/nologin\n"
           "work:x:" +
           std::to_string(uid) + ":" + std::to_string(gid) +
           ":work:/home/work:/bin/sh\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
  }
  if (name == "group") {
    return "root:x:0:\nwork:x:" + std::to_string(gid) + ":\nnogroup:x:65534:\n";
  }
  if (name == "hosts") return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
  if (name == "nsswitch.conf") return "passwd: files\ngroup: files\nhosts: files dns\n";
  if (name == "resolv.conf") return "# network mode 'private': loopback only\n";
  return "";
}

ImageStore::ImageStore(std::string root) : root_(std::move(root)) {}

Status ImageStore::EnsureBuiltins() {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return Status(StatusCode::kInternal, "cannot create " + root_ + ": " + ec.message());
  struct Builtin {
    char const* name;
    char const* runtime;
    char const* path;
  };
  for (Builtin b :
       {Builtin{"python", "python", "/usr/bin/python3"}, Builtin{"shell", "shell", "/bin/sh"}}) {
    fs::path dir = fs::path(root_) / b.name;
    auto existing = ReadJson(dir / "manifest.json");
    // Jupyter is part of the python image where the host has it: installing or removing
    // Debian's jupyter-notebook later rebuilds the image, as a new version does.
    bool with_jupyter =
        std::string(b.runtime) == "python" && fs::exists("/usr/bin/jupyter-notebook");
    // Never rebuilt in place: a running kernel may have this rootfs mounted.
    if (existing.ok() && existing->value("builtin_version", 0) == kBuiltinVersion &&
        existing->value("jupyter", false) == with_jupyter) {
      continue;
    }
    if (!fs::exists(b.path)) continue;  // e.g. no python3 on this host: no python image
    fs::path tmp = fs::path(root_) / (std::string(".") + b.name + ".new");
    fs::remove_all(tmp, ec);
    fs::path rootfs = tmp / "rootfs";
    for (char const* d : {"usr", "etc", "etc/ssl/certs", "proc", "dev", "sys", "tmp", "run",
                          "var/tmp", "home/work", "opt/bai/bin", "opt/bai/run", "root", "mnt"}) {
      fs::create_directories(rootfs / d, ec);
    }
    // runc gives a tmpfs the mode of the directory it covers.
    fs::permissions(rootfs / "tmp", fs::perms::all | fs::perms::sticky_bit, ec);
    fs::permissions(rootfs / "var/tmp", fs::perms::all | fs::perms::sticky_bit, ec);
    json host_mounts = json::array({"/usr"});
    for (char const* top : {"bin", "lib", "lib32", "lib64", "libx32", "sbin"}) {
      fs::path host = fs::path("/") / top;
      if (fs::is_symlink(host, ec)) {
        fs::create_symlink(fs::read_symlink(host, ec), rootfs / top, ec);
      } else if (fs::is_directory(host, ec)) {
        fs::create_directories(rootfs / top, ec);
        host_mounts.push_back(host.string());
      }
    }
    for (char const* f : {"passwd", "group", "hosts", "nsswitch.conf", "resolv.conf"}) {
      if (auto s = WriteFile(rootfs / "etc" / f, SynthesisedEtcFile(f, 1000, 1000)); !s.ok())
        return s;
    }
    for (char const* e : kCopiedEtc) {
      fs::path src = fs::path("/etc") / e;
      if (!fs::exists(fs::symlink_status(src, ec))) continue;
      fs::copy(src, rootfs / "etc" / e,
               fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    }
    fs::copy_file("/etc/ssl/certs/ca-certificates.crt",
                  rootfs / "etc/ssl/certs/ca-certificates.crt", ec);
    // The python image's apps: a static HTTP server over /home/work, and Jupyter where the host
    // has Debian's python3-notebook (its /usr is the image's).
    std::string service_ports;
    if (std::string(b.runtime) == "python") {
      fs::create_directories(rootfs / "etc/backend.ai/service-defs", ec);
      json http = {{"command",
                    {"{runtime_path}", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                     "/home/work", "{ports[0]}"}},
                   {"url_template", "http://{host}:{port}/"}};
      if (auto s = WriteFile(rootfs / "etc/backend.ai/service-defs/http.json", http.dump(2) + "\n");
          !s.ok())
        return s;
      service_ports = "http:http:8000";
      if (with_jupyter) {
        json jupyter = {
            {"command",
             {"/usr/bin/jupyter-notebook", "--no-browser", "--ip=127.0.0.1", "--port={ports[0]}",
              "--NotebookApp.token=", "--NotebookApp.password=", "--notebook-dir=/home/work"}},
            {"url_template", "http://{host}:{port}/"},
            {"allowed_envs", {"JUPYTER_TOKEN"}}};
        if (auto s = WriteFile(rootfs / "etc/backend.ai/service-defs/jupyter.json",
                               jupyter.dump(2) + "\n");
            !s.ok())
          return s;
        service_ports += ",jupyter:http:8888";
      }
    }
    json aliases = json::array({std::string(b.name) + ":latest"});
    // The interpreter's version as a tag ("python:3.11"), so a tagged reference to another
    // version is refused instead of silently running this one.
    if (std::string(b.runtime) == "python") {
      std::string real = fs::canonical(b.path, ec).filename().string();  // python3.11
      if (!ec && real.rfind("python", 0) == 0 && real.size() > 6) {
        aliases.push_back(std::string(b.name) + ":" + real.substr(6));
      }
    }
    json manifest = {{"name", b.name},
                     {"aliases", aliases},
                     {"builtin_version", kBuiltinVersion},
                     {"jupyter", with_jupyter},
                     {"host_mounts", host_mounts},
                     {"env", json::array({"LANG=C.UTF-8"})},
                     {"labels",
                      {{"ai.backend.runtime-type", b.runtime},
                       {"ai.backend.runtime-path", b.path},
                       {"ai.backend.service-ports", service_ports},
                       {"ai.backend.resource.min.cpu", "0.1"},
                       {"ai.backend.resource.min.mem", "64m"}}},
                     {"size", TreeBytes(rootfs)}};
    if (auto s = WriteFile(tmp / "manifest.json", manifest.dump(2) + "\n"); !s.ok()) return s;
    fs::remove_all(dir, ec);
    fs::rename(tmp, dir, ec);
    if (ec)
      return Status(StatusCode::kInternal,
                    "cannot install image " + dir.string() + ": " + ec.message());
  }
  return Status();
}

StatusOr<Image> ImageStore::Find(std::string const& reference) const {
  auto load = [&](std::string const& name) -> StatusOr<Image> {
    fs::path dir = fs::path(root_) / name;
    auto m = ReadJson(dir / "manifest.json");
    if (!m.ok()) return m.status();
    Image img;
    img.name = m->value("name", name);
    img.rootfs = (dir / "rootfs").string();
    for (auto const& a : m->value("aliases", json::array())) {
      if (a.is_string()) img.aliases.push_back(a.get<std::string>());
    }
    json labels = m->value("labels", json::object());
    for (auto const& [k, v] : labels.items()) {
      if (v.is_string()) img.labels[k] = v.get<std::string>();
    }
    for (auto const& p : m->value("host_mounts", json::array())) {
      if (p.is_string()) img.host_mounts.push_back(p.get<std::string>());
    }
    for (auto const& e : m->value("env", json::array())) {
      if (e.is_string()) img.env.push_back(e.get<std::string>());
    }
    return img;
  };
  std::vector<Image> all;
  std::error_code ec;
  for (auto const& entry : fs::directory_iterator(root_, ec)) {
    if (!ValidImageName(entry.path().filename().string())) continue;
    if (auto img = load(entry.path().filename().string()); img.ok()) all.push_back(*std::move(img));
  }
  // An exact name or alias first, then the other ways server::ImageServes allows.
  for (bool exact : {true, false}) {
    for (auto const& img : all) {
      auto serves = [&](std::string const& offered) {
        return exact ? offered == reference : server::ImageServes(offered, reference);
      };
      if (serves(img.name) || std::any_of(img.aliases.begin(), img.aliases.end(), serves)) {
        return img;
      }
    }
  }
  return Status(StatusCode::kNotFound, "unknown image " + reference);
}

std::vector<server::agent_protocol::ImageInfo> ImageStore::List() const {
  std::vector<server::agent_protocol::ImageInfo> out;
  std::error_code ec;
  for (auto const& entry : fs::directory_iterator(root_, ec)) {
    std::string name = entry.path().filename().string();
    if (!ValidImageName(name)) continue;
    auto m = ReadJson(entry.path() / "manifest.json");
    if (!m.ok()) continue;
    // A store made before sizes were recorded: measured now.
    auto size = m->find("size");
    std::int64_t bytes = size != m->end() && size->is_number_integer()
                             ? size->get<std::int64_t>()
                             : TreeBytes(entry.path() / "rootfs");
    out.push_back({name, {}, bytes});
    for (auto const& a : m->value("aliases", json::array())) {
      if (a.is_string()) out.push_back({a.get<std::string>(), {}, bytes});
    }
  }
  std::sort(out.begin(), out.end(), [](auto const& a, auto const& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> ImageStore::Names() const {
  std::vector<std::string> out;
  for (auto& i : List()) out.push_back(std::move(i.name));
  return out;
}

Status ImageStore::Import(std::string const& source, std::string const& name,
                          std::string const& tag) {
  auto staged = StagingDir(root_, name, "import");
  if (!staged.ok()) return staged.status();
  std::error_code ec;
  fs::path dir = fs::path(root_) / name, tmp = *staged;
  json manifest = {{"name", name},
                   {"aliases", json::array()},
                   {"labels", json::object()},
                   {"env", json::array()},
                   {"source", source}};
  fs::path src(source);
  Status s;
  if (fs::is_directory(src / "blobs", ec) && fs::exists(src / "index.json", ec)) {
    s = [&]() -> Status {
      auto index = ReadJson(src / "index.json");
      if (!index.ok()) return index.status();
      json chosen;
      for (auto const& m : index->value("manifests", json::array())) {
        std::string ref =
            m.value("annotations", json::object()).value("org.opencontainers.image.ref.name", "");
        if (tag.empty() || ref == tag) {
          chosen = m;
          break;
        }
      }
      if (chosen.is_null()) {
        return Status(StatusCode::kNotFound,
                      tag.empty() ? "the layout has no image" : "no image tagged " + tag);
      }
      auto man = ReadJson(BlobPath(src, chosen.value("digest", "")));
      if (!man.ok()) return man.status();
      if (man->value("mediaType", "") == "application/vnd.oci.image.index.v1+json") {
        return Status(StatusCode::kInvalidArgument,
                      "multi-platform indexes are not supported; pick one platform");
      }
      auto config =
          ReadJson(BlobPath(src, man->value("config", json::object()).value("digest", "")));
      if (!config.ok()) return config.status();
      json cfg = config->value("config", json::object());
      json labels = cfg.value("Labels", json::object());
      if (!labels.is_object()) labels = json::object();
      for (auto const& [k, v] : labels.items()) {
        if (v.is_string()) manifest["labels"][k] = v;
      }
      manifest["env"] = cfg.value("Env", json::array());
      auto layers = man->value("layers", json::array());
      json diff_ids = json::array();
      if (auto rootfs = config->find("rootfs"); rootfs != config->end() && rootfs->is_object()) {
        if (auto d = rootfs->find("diff_ids"); d != rootfs->end()) diff_ids = *d;
      }
      if (!diff_ids.is_array() || !layers.is_array() || diff_ids.size() != layers.size()) {
        return Status(StatusCode::kInvalidArgument, "the image config names " +
                                                        std::to_string(diff_ids.size()) +
                                                        " layers (rootfs.diff_ids), its manifest " +
                                                        std::to_string(layers.size()));
      }
      for (std::size_t i = 0; i < layers.size(); ++i) {
        fs::path blob = BlobPath(src, layers[i].value("digest", ""));
        if (blob.empty() || !fs::exists(blob, ec))
          return Status(StatusCode::kNotFound, "missing layer blob " + blob.string());
        // What the layer holds must be what the config says it holds (image-spec config.md).
        std::string diff_id = diff_ids[i].is_string() ? diff_ids[i].get<std::string>() : "";
        if (auto a = ApplyCheckedLayer(blob.string(), layers[i].value("digest", ""), diff_id, i,
                                       (tmp / "rootfs").string());
            !a.ok()) {
          return a;
        }
      }
      if (!tag.empty()) manifest["aliases"].push_back(name + ":" + tag);
      return Status();
    }();
  } else if (fs::is_regular_file(src, ec)) {
    s = server::ApplyImageLayer(src.string(), (tmp / "rootfs").string());
  } else {
    s = Status(StatusCode::kNotFound, source + " is neither an OCI image layout nor a tarball");
  }
  return InstallImage(s, tmp, dir, manifest);
}

namespace {

std::string MachineArchitecture() {
  utsname u{};
  return ::uname(&u) == 0 ? server::oci::OciArchitecture(u.machine) : "amd64";
}

}  // namespace

Status ImageStore::Pull(server::oci::RegistryClient& registry,
                        server::oci::ImageReference const& ref, std::string const& name,
                        std::function<void(std::string const&)> const& progress) {
  namespace oci = server::oci;
  auto staged = StagingDir(root_, name, "pull");
  if (!staged.ok()) return staged.status();
  std::error_code ec;
  fs::path dir = fs::path(root_) / name, tmp = *staged;
  fs::create_directories(tmp / "blobs", ec);
  if (ec) return Status(StatusCode::kInternal, "cannot create " + tmp.string() + "/blobs");
  auto say = [&](std::string const& words) {
    if (progress) progress(words);
  };
  json manifest = {{"name", name},
                   {"aliases", json::array({ref.Canonical()})},
                   {"labels", json::object()},
                   {"env", json::array()},
                   {"source", ref.Canonical()}};
  std::string arch = MachineArchitecture();
  Status s = [&]() -> Status {
    auto got = registry.GetManifest(ref.repository, ref.ManifestReference());
    if (!got.ok()) return got.status();
    if (got->document.index) {
      auto chosen = oci::ChoosePlatform(*got->document.index, arch);
      if (!chosen.ok()) return chosen.status();
      got = registry.GetManifest(ref.repository, chosen->digest);
      if (!got.ok()) return got.status();
    }
    if (!got->document.manifest) {
      return Status(StatusCode::kInvalidArgument, "an index inside an index is not an image");
    }
    auto const& m = *got->document.manifest;
    auto config_text = registry.GetBlob(ref.repository, m.config);
    if (!config_text.ok()) return config_text.status();
    auto config = oci::ParseImageConfig(*config_text);
    if (!config.ok()) return config.status();
    if (!config->architecture.empty() && config->architecture != arch) {
      return Status(StatusCode::kFailedPrecondition, ref.Canonical() + " is an image for " +
                                                         config->os + "/" + config->architecture +
                                                         "; this machine is linux/" + arch);
    }
    if (config->diff_ids.size() != m.layers.size()) {
      return Status(StatusCode::kInvalidArgument, "the image config names " +
                                                      std::to_string(config->diff_ids.size()) +
                                                      " layers (rootfs.diff_ids), its manifest " +
                                                      std::to_string(m.layers.size()));
    }
    for (auto const& [k, v] : config->labels) manifest["labels"][k] = v;
    manifest["env"] = config->env;
    manifest["digest"] = got->digest;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
      auto const& layer = m.layers[i];
      say("layer " + std::to_string(i + 1) + "/" + std::to_string(m.layers.size()) + " " +
          layer.digest + " (" + std::to_string(layer.size) + " bytes)");
      std::string blob = (tmp / "blobs" / layer.digest.substr(7)).string();
      if (auto d = registry.DownloadBlob(ref.repository, layer, blob); !d.ok()) return d;
      if (auto a = ApplyCheckedLayer(blob, layer.digest, config->diff_ids[i], i,
                                     (tmp / "rootfs").string());
          !a.ok()) {
        return a;
      }
      fs::remove(blob, ec);
    }
    return Status();
  }();
  fs::remove_all(tmp / "blobs", ec);
  return InstallImage(s, tmp, dir, manifest);
}

}  // namespace bai::agent
