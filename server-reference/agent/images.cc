// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/images.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/fs/image_root.h"
#include "server-reference/common/fs/layer_tar.h"
#include "server-reference/common/oci/manifest.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_client.h"
#include "server-reference/common/wire/image_ref.h"

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

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
  // The store's own directories beside its images.
  return std::regex_match(name, kName) && name != "layers" && name != "blobs";
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

// Where a new image `name` is assembled (`.NAME.KIND`, empty) before
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
  fs::create_directories(tmp, ec);
  if (ec) {
    return Status(StatusCode::kInternal, "cannot create " + tmp.string() + ": " + ec.message());
  }
  return tmp;
}

// The end of an import or a pull whose layers are in `tmp`/rootfs, or in the layer store
// with `tmp`/top above them (when `applied` is ok): the directories a kernel needs made inside
// the root, the manifest written, `tmp` renamed to `dir`; on any failure `tmp` is removed and
// nothing is installed.
Status InstallImage(Status applied, fs::path const& tmp, fs::path const& dir, json& manifest) {
  Status s = std::move(applied);
  std::error_code ec;
  if (s.ok()) {
    bool layered = manifest.contains("layers");
    fs::path root = tmp / (layered ? "top" : "rootfs");
    fs::create_directories(root, ec);
    ::chmod(root.c_str(), 0755);
    // Inside the image's root: a layer's `tmp -> /etc` must not make the host's /etc 1777.
    for (char const* d : {"proc", "dev", "sys", "tmp", "home/work", "opt/bai/bin", "opt/bai/run"}) {
      if (s = server::MakeDirectoryInRoot(root.string(), d, 0755); !s.ok()) break;
    }
    if (s.ok()) s = server::ChmodInRoot(root.string(), "tmp", 01777);
    if (!layered) manifest["size"] = TreeBytes(root.string());
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

// A layer `blob` (its file), checked against the config's `diff_id`, applied to `rootfs` (a
// flat image).
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

std::string StoredImageKind(nlohmann::json const& manifest) {
  namespace ap = server::agent_protocol;
  if (!manifest.value("host_mounts", json::array()).empty()) return ap::kImageKindHost;
  return manifest.value("digest", "").empty() ? ap::kImageKindImported : ap::kImageKindPulled;
}

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

ImageStore::ImageStore(std::string root)
    : root_(std::move(root)), layers_((fs::path(root_) / "layers").string()) {}

Status ImageStore::DetectLayered() {
  std::error_code ec;
  fs::create_directories(root_, ec);
  auto s = ProbeOverlay(root_);
  layered_ = s.ok();
  return s;
}

int ImageStore::SweepUnfinished() {
  int swept = layers_.SweepHalfMade();
  std::error_code ec;
  std::vector<fs::path> gone;
  for (auto const& e : fs::directory_iterator(root_, ec)) {
    std::string n = e.path().filename().string();
    // `.NAME.import`, `.NAME.pull`, `.NAME.new`: StagingDir's and EnsureBuiltins' work dirs.
    if (n.size() > 1 && n.front() == '.' && n != ".overlay-probe") gone.push_back(e.path());
  }
  for (auto const& e : fs::directory_iterator(fs::path(root_) / "blobs", ec)) {
    gone.push_back(e.path());
  }
  for (auto const& p : gone) {
    fs::remove_all(p, ec);
    ++swept;
  }
  return swept;
}

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
                     {"size", TreeBytes(rootfs.string())}};
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
    if (auto layers = m->find("layers"); layers != m->end() && layers->is_array()) {
      img.layers.push_back((dir / "top").string());
      for (auto it = layers->rbegin(); it != layers->rend(); ++it) {
        auto layer = layers_.Find(it->is_string() ? it->get<std::string>() : "");
        if (!layer.ok()) {
          return Status(StatusCode::kFailedPrecondition,
                        "image " + name + " lacks its layer " + it->dump() + ": pull it again");
        }
        img.layers.push_back(layer->dir);
      }
    } else {
      img.rootfs = (dir / "rootfs").string();
    }
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
    img.digest = m->value("digest", "");
    auto text = [&](char const* key) {
      auto it = m->find(key);
      return it != m->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto words = [&](char const* key) {
      std::vector<std::string> out;
      if (auto it = m->find(key); it != m->end() && it->is_array()) {
        for (auto const& w : *it) {
          if (w.is_string()) out.push_back(w.get<std::string>());
        }
      }
      return out;
    };
    img.working_dir = text("working_dir");
    img.user = text("user");
    img.entrypoint = words("entrypoint");
    img.cmd = words("cmd");
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
                             : TreeBytes((entry.path() / "rootfs").string());
    std::string kind = StoredImageKind(*m);
    out.push_back({name, {}, bytes, kind});
    for (auto const& a : m->value("aliases", json::array())) {
      if (a.is_string()) out.push_back({a.get<std::string>(), {}, bytes, kind});
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

struct ImageStore::LayerBlob {
  server::oci::Descriptor descriptor;  ///< the compressed blob: digest, size
  std::string diff_id;                 ///< what the config says it uncompresses to
  /// The blob as a file: `local` when it is one already (an image layout's), else fetched by
  /// `download` into the path given (kept only until its layer is stored).
  std::string local;
  std::function<Status(std::string const& path, std::function<void(std::int64_t)> const&)> download;
};

namespace {

std::string MachineArchitecture() {
  utsname u{};
  return ::uname(&u) == 0 ? server::oci::OciArchitecture(u.machine) : "amd64";
}

// Writes `bytes` as a blob of the layout; its descriptor.
StatusOr<json> PutBlob(fs::path const& layout, std::string const& media_type,
                       std::string const& bytes) {
  std::string digest = server::oci::Sha256Digest(bytes);
  if (auto s = WriteFile(layout / "blobs" / "sha256" / digest.substr(7), bytes); !s.ok()) return s;
  return json{{"mediaType", media_type},
              {"digest", digest},
              {"size", static_cast<std::int64_t>(bytes.size())}};
}

// What the store keeps of an image's config: labels, Env, and the rest a kernel uses later.
void AdoptConfig(server::oci::ImageConfig const& config, json& manifest) {
  for (auto const& [k, v] : config.labels) manifest["labels"][k] = v;
  manifest["env"] = config.env;
  manifest["working_dir"] = config.working_dir;
  manifest["user"] = config.user;
  manifest["entrypoint"] = config.entrypoint;
  manifest["cmd"] = config.cmd;
  manifest["architecture"] = config.architecture;
}

Status LayerCountsAgree(server::oci::ImageConfig const& config,
                        server::oci::Manifest const& manifest) {
  if (config.diff_ids.size() == manifest.layers.size()) return Status();
  return Status(StatusCode::kInvalidArgument, "the image config names " +
                                                  std::to_string(config.diff_ids.size()) +
                                                  " layers (rootfs.diff_ids), its manifest " +
                                                  std::to_string(manifest.layers.size()));
}

// Reports a pull's progress: every step, and the bytes of downloads at most five times a
// second. Called from the layer workers.
class ProgressReporter {
 public:
  ProgressReporter(std::vector<std::int64_t> sizes,
                   std::function<void(PullProgress const&)> const& sink)
      : sizes_(std::move(sizes)), held_(sizes_.size(), 0), sink_(sink) {
    p_.layers = static_cast<int>(sizes_.size());
    for (auto b : sizes_) p_.total += b;
  }
  void Bytes(std::size_t i, std::int64_t held) {
    std::lock_guard<std::mutex> lock(mu_);
    held_[i] = held;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    SendLocked("");
  }
  void Step(std::string const& words, std::optional<std::size_t> done = std::nullopt) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done) {
      held_[*done] = sizes_[*done];
      ++p_.layers_done;
    }
    SendLocked(words);
  }

 private:
  void SendLocked(std::string const& words) {
    if (!sink_) return;
    p_.done = 0;
    for (auto b : held_) p_.done += b;
    p_.words = words;
    sink_(p_);
  }
  std::mutex mu_;
  std::vector<std::int64_t> sizes_, held_;
  std::function<void(PullProgress const&)> const& sink_;
  PullProgress p_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

Status ImageStore::StoreLayers(std::vector<LayerBlob> const& blobs, std::string const& tmp,
                               json& manifest,
                               std::function<void(PullProgress const&)> const& progress) {
  std::vector<std::int64_t> sizes;
  for (auto const& b : blobs) sizes.push_back(b.descriptor.size);
  ProgressReporter report(sizes, progress);
  std::size_t n = blobs.size();
  std::error_code ec;
  fs::create_directories(fs::path(root_) / "blobs", ec);
  auto name = [&](std::size_t i) {
    return "layer " + std::to_string(i + 1) + "/" + std::to_string(n) + " " +
           blobs[i].descriptor.digest;
  };
  // The blob of layer i as a file, and whether it is ours to delete after.
  auto fetch = [&](std::size_t i) -> StatusOr<std::pair<std::string, bool>> {
    if (!blobs[i].download) return std::pair{blobs[i].local, false};
    std::string path =
        (fs::path(root_) / "blobs" / blobs[i].descriptor.digest.substr(7)).string() + ".part";
    auto s = blobs[i].download(path, [&, i](std::int64_t held) { report.Bytes(i, held); });
    if (!s.ok()) return s;
    return std::pair{path, true};
  };
  if (!layered_) {
    fs::create_directories(fs::path(tmp) / "rootfs", ec);
    for (std::size_t i = 0; i < n; ++i) {
      auto blob = fetch(i);
      if (!blob.ok()) return blob.status();
      auto s = ApplyCheckedLayer(blob->first, blobs[i].descriptor.digest, blobs[i].diff_id, i,
                                 (fs::path(tmp) / "rootfs").string());
      if (blob->second) fs::remove(blob->first, ec);
      if (!s.ok()) return s;
      report.Step(name(i) + " applied", i);
    }
    return Status();
  }
  std::vector<std::string> diff_ids;
  for (auto const& b : blobs) diff_ids.push_back(b.diff_id);
  auto chain = server::oci::ChainIds(diff_ids);
  // At most three layers at a time; each is a directory of its own, so they unpack in any
  // order. The first failure stops the rest.
  std::mutex mu;
  Status failure;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::int64_t> bytes(n, 0);
  auto work = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      Status s = [&]() -> Status {
        if (auto have = layers_.Find(chain[i]); have.ok()) {
          bytes[i] = have->bytes;
          report.Step(name(i) + " present already", i);
          return Status();
        }
        auto blob = fetch(i);
        if (!blob.ok()) return blob.status();
        auto layer =
            layers_.Put(chain[i], blobs[i].diff_id, blobs[i].descriptor.digest, blob->first);
        std::error_code ignored;
        if (blob->second) fs::remove(blob->first, ignored);
        if (!layer.ok()) return layer.status();
        bytes[i] = layer->bytes;
        report.Step(name(i) + " stored", i);
        return Status();
      }();
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.ok()) failure = Status(s.code(), name(i) + ": " + s.message());
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < std::min<std::size_t>(3, n); ++w) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (!failure.ok()) return failure;
  manifest["layers"] = chain;
  std::int64_t total = 0;
  for (auto b : bytes) total += b;
  manifest["size"] = total;
  return Status();
}

// `docker save`'s format: manifest.json [{Config, RepoTags, Layers}], each layer an
// uncompressed tar named by the entry (kept inside the unpacked directory).
Status ImageStore::ImportDockerSave(std::filesystem::path const& src, std::string const& tag,
                                    std::string const& name, std::string const& tmp,
                                    nlohmann::json& manifest) {
  namespace oci = server::oci;
  auto listing = ReadFile(src / "manifest.json");
  if (!listing.ok()) return listing.status();
  auto list = internal::ParseJson(*listing);
  if (!list || !list->is_array() || list->empty()) {
    return Status(StatusCode::kInvalidArgument, "docker save: manifest.json lists no image");
  }
  json chosen;
  for (auto const& entry : *list) {
    if (tag.empty()) {
      chosen = entry;
      break;
    }
    for (auto const& t : entry.value("RepoTags", json::array())) {
      std::string text = t.is_string() ? t.get<std::string>() : "";
      if (text == tag ||
          (text.size() > tag.size() + 1 &&
           text.compare(text.size() - tag.size() - 1, std::string::npos, ":" + tag) == 0)) {
        chosen = entry;
      }
    }
    if (!chosen.is_null()) break;
  }
  if (chosen.is_null() || !chosen.is_object()) {
    return Status(StatusCode::kNotFound, "docker save: no image tagged " + tag);
  }
  // Member names stay inside the unpacked directory.
  auto inside = [&](json const& v) -> StatusOr<fs::path> {
    std::string rel = v.is_string() ? v.get<std::string>() : "";
    if (rel.empty() || rel.front() == '/' || rel.find("..") != std::string::npos) {
      return Status(StatusCode::kInvalidArgument, "docker save: bad member name " + v.dump());
    }
    return src / rel;
  };
  auto config_path = inside(chosen.value("Config", json()));
  if (!config_path.ok()) return config_path.status();
  auto config_text = ReadFile(*config_path);
  if (!config_text.ok()) return config_text.status();
  auto config = oci::ParseImageConfig(*config_text);
  if (!config.ok()) return config.status();
  json layers = chosen.value("Layers", json::array());
  if (!layers.is_array() || layers.size() != config->diff_ids.size()) {
    return Status(StatusCode::kInvalidArgument,
                  "docker save: the config names " + std::to_string(config->diff_ids.size()) +
                      " layers, the manifest " + std::to_string(layers.size()));
  }
  AdoptConfig(*config, manifest);
  std::vector<LayerBlob> blobs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto path = inside(layers[i]);
    if (!path.ok()) return path.status();
    std::error_code ec;
    auto size = fs::file_size(*path, ec);
    if (ec) return Status(StatusCode::kNotFound, "docker save: missing layer " + path->string());
    // An uncompressed layer is its own DiffID; Put checks the bytes against it.
    oci::Descriptor d;
    d.media_type = "application/vnd.docker.image.rootfs.diff.tar";
    d.digest = config->diff_ids[i];
    d.size = static_cast<std::int64_t>(size);
    blobs.push_back({d, config->diff_ids[i], path->string(), {}});
  }
  if (!tag.empty()) manifest["aliases"].push_back(name + ":" + tag);
  return StoreLayers(blobs, tmp, manifest, {});
}

Status ImageStore::Import(std::string const& source, std::string const& name,
                          std::string const& tag) {
  namespace oci = server::oci;
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
  // An OCI archive (a layout in a tar) or a `docker save` tarball: unpacked beside the store
  // first (confined as any layer is), then read as the directory it holds.
  fs::path unpacked;
  if (fs::is_regular_file(src, ec)) {
    auto names = server::ArchiveMemberNames(source, 100000);
    auto has = [&](std::string const& n) {
      return names.ok() && std::find(names->begin(), names->end(), n) != names->end();
    };
    bool docker =
        has("manifest.json") && std::any_of(names->begin(), names->end(), [](std::string const& n) {
          return n.size() > 4 && (n.substr(n.size() - 4) == ".tar" || n.rfind("blobs/", 0) == 0);
        });
    if ((has("index.json") && has("oci-layout")) || docker) {
      auto stage = StagingDir(root_, name, "archive");
      if (!stage.ok()) {
        fs::remove_all(tmp, ec);
        return stage.status();
      }
      unpacked = *stage;
      fs::create_directories(unpacked, ec);
      s = server::ApplyImageLayer(source, unpacked.string());
      src = unpacked;
    }
  }
  if (!s.ok()) {
    // the archive did not unpack: said below
  } else if (fs::is_directory(src / "blobs", ec) && fs::exists(src / "index.json", ec)) {
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
      auto read_blob = [&](std::string const& digest) -> StatusOr<std::string> {
        fs::path path = BlobPath(src, digest);
        if (path.empty()) return Status(StatusCode::kInvalidArgument, "bad digest " + digest);
        return ReadFile(path);
      };
      auto body = read_blob(chosen.value("digest", ""));
      if (!body.ok()) return body.status();
      auto doc = oci::ParseManifest(*body, chosen.value("mediaType", ""));
      if (!doc.ok()) return doc.status();
      if (doc->index) {
        auto entry = oci::ChoosePlatform(*doc->index, MachineArchitecture());
        if (!entry.ok()) return entry.status();
        body = read_blob(entry->digest);
        if (!body.ok()) return body.status();
        doc = oci::ParseManifest(*body, entry->media_type);
        if (!doc.ok()) return doc.status();
        if (!doc->manifest) return Status(StatusCode::kInvalidArgument, "an index in an index");
      }
      auto const& m = *doc->manifest;
      auto config_text = read_blob(m.config.digest);
      if (!config_text.ok()) return config_text.status();
      auto config = oci::ParseImageConfig(*config_text);
      if (!config.ok()) return config.status();
      if (auto c = LayerCountsAgree(*config, m); !c.ok()) return c;
      AdoptConfig(*config, manifest);
      std::vector<LayerBlob> blobs;
      for (std::size_t i = 0; i < m.layers.size(); ++i) {
        fs::path blob = BlobPath(src, m.layers[i].digest);
        if (blob.empty() || !fs::exists(blob, ec))
          return Status(StatusCode::kNotFound, "missing layer blob " + blob.string());
        blobs.push_back({m.layers[i], config->diff_ids[i], blob.string(), {}});
      }
      if (!tag.empty()) manifest["aliases"].push_back(name + ":" + tag);
      return StoreLayers(blobs, tmp.string(), manifest, {});
    }();
  } else if (fs::is_regular_file(src / "manifest.json", ec)) {
    s = ImportDockerSave(src, tag, name, tmp, manifest);
  } else if (fs::is_regular_file(src, ec)) {
    fs::create_directories(tmp / "rootfs", ec);
    s = server::ApplyImageLayer(src.string(), (tmp / "rootfs").string());
  } else {
    s = Status(StatusCode::kNotFound,
               source +
                   " is neither an OCI image layout (or archive), a docker save tarball nor "
                   "a root filesystem tarball");
  }
  if (!unpacked.empty()) fs::remove_all(unpacked, ec);
  return InstallImage(s, tmp, dir, manifest);
}

namespace {

// Takes `alias` from every image of the store but `keep` (a newer pull of the same tag has it).
void DropAliasElsewhere(std::string const& root, std::string const& alias,
                        std::string const& keep) {
  std::error_code ec;
  for (auto const& entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    if (name == keep || !ValidImageName(name)) continue;
    auto m = ReadJson(entry.path() / "manifest.json");
    if (!m.ok() || !m->contains("aliases") || !(*m)["aliases"].is_array()) continue;
    json& aliases = (*m)["aliases"];
    auto before = aliases.size();
    aliases.erase(std::remove(aliases.begin(), aliases.end(), json(alias)), aliases.end());
    if (aliases.size() == before) continue;
    // Written aside and renamed: a reader never sees half a manifest.
    fs::path tmp = entry.path() / "manifest.json.new";
    if (WriteFile(tmp, m->dump(2) + "\n").ok()) fs::rename(tmp, entry.path() / "manifest.json", ec);
  }
}

// `NAME-DIGEST12`: a pulled image's name in the store when none is given.
std::string PulledName(server::oci::ImageReference const& ref, std::string const& digest) {
  std::string last = ref.repository.substr(ref.repository.rfind('/') + 1);
  std::string name;
  for (char c : last)
    name +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '-';
  return name.substr(0, 40) + "-" + digest.substr(7, 12);
}

}  // namespace

Status ImageStore::Pull(server::oci::RegistryClient& registry,
                        server::oci::ImageReference const& ref, std::string const& name,
                        std::function<void(PullProgress const&)> const& progress) {
  namespace oci = server::oci;
  std::string arch = MachineArchitecture();
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
  std::string chosen_name = name.empty() ? PulledName(ref, got->digest) : name;
  std::error_code ec;
  fs::path dir = fs::path(root_) / chosen_name;
  // These very bytes are here already (pulled under another tag, or by a pull of another tag
  // that finished first): the alias is enough.
  auto adopt_existing = [&]() -> std::optional<Status> {
    if (!name.empty() || !fs::exists(dir / "manifest.json", ec)) return std::nullopt;
    auto m = ReadJson(dir / "manifest.json");
    if (!m.ok()) return std::nullopt;
    json& aliases = (*m)["aliases"];
    if (!aliases.is_array()) aliases = json::array();
    if (std::find(aliases.begin(), aliases.end(), json(ref.Canonical())) == aliases.end()) {
      aliases.push_back(ref.Canonical());
    }
    if (auto w = WriteFile(dir / "manifest.json.new", m->dump(2) + "\n"); !w.ok()) return w;
    fs::rename(dir / "manifest.json.new", dir / "manifest.json", ec);
    DropAliasElsewhere(root_, ref.Canonical(), chosen_name);
    return Status();
  };
  if (auto adopted = adopt_existing()) return *adopted;
  // A staging directory of this pull's own: another may stage the same bytes meanwhile.
  static std::atomic<int> serial{0};
  std::string kind = "pull" + std::to_string(serial++);
  auto staged = StagingDir(root_, chosen_name, kind.c_str());
  if (!staged.ok()) return staged.status();
  fs::path tmp = *staged;
  json manifest = {{"name", chosen_name},       {"aliases", json::array({ref.Canonical()})},
                   {"labels", json::object()},  {"env", json::array()},
                   {"source", ref.Canonical()}, {"digest", got->digest}};
  Status s = [&]() -> Status {
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
    if (auto c = LayerCountsAgree(*config, m); !c.ok()) return c;
    AdoptConfig(*config, manifest);
    std::vector<LayerBlob> blobs;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
      auto download = [&registry, &ref, layer = m.layers[i]](
                          std::string const& path, std::function<void(std::int64_t)> const& held) {
        return registry.DownloadBlob(ref.repository, layer, path, held);
      };
      blobs.push_back({m.layers[i], config->diff_ids[i], "", download});
    }
    return StoreLayers(blobs, tmp.string(), manifest, progress);
  }();
  s = InstallImage(s, tmp, dir, manifest);
  if (!s.ok()) {
    if (auto adopted = adopt_existing()) return *adopted;  // the other pull installed it
    return s;
  }
  DropAliasElsewhere(root_, ref.Canonical(), chosen_name);
  return s;
}

struct ImageStore::InFlight {
  std::mutex mu;
  std::vector<std::function<void(PullProgress const&)>> listeners;
  std::shared_future<Status> done;
};

StatusOr<Image> ImageStore::Provide(server::agent_protocol::CreateKernel const& spec,
                                    std::function<void(PullProgress const&)> const& progress) {
  namespace oci = server::oci;
  auto have = Find(spec.image);
  if (!spec.registry) return have;
  auto const& reg = *spec.registry;
  bool absent = !have.ok();
  bool stale =
      !absent && reg.auto_pull == "digest" && !reg.digest.empty() && have->digest != reg.digest;
  if (!absent && !stale) return have;
  if (absent && reg.auto_pull == "none") {
    return Status(StatusCode::kNotFound,
                  "image " + spec.image + " is not on this agent and auto_pull is none");
  }
  auto ref = oci::ParseImageReference(spec.image);
  if (!ref.ok()) return ref.status();
  std::string key = ref->Canonical();
  std::shared_ptr<InFlight> flight;
  std::promise<Status> promise;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(pulls_mu_);
    auto& slot = pulls_[key];
    if (!slot) {
      slot = std::make_shared<InFlight>();
      slot->done = promise.get_future().share();
      mine = true;
    }
    flight = slot;
  }
  if (progress) {
    std::lock_guard<std::mutex> lock(flight->mu);
    flight->listeners.push_back(progress);
  }
  if (mine) {
    oci::RegistryEndpoint e;
    e.url = reg.url;
    e.username = reg.username;
    e.password = reg.password;
    e.ssl_verify = reg.ssl_verify;
    e.stall_timeout = stall_timeout_;
    oci::RegistryClient client(e);
    Status s = Pull(client, *ref, "", [flight](PullProgress const& p) {
      std::lock_guard<std::mutex> lock(flight->mu);
      for (auto const& listen : flight->listeners) listen(p);
    });
    {
      std::lock_guard<std::mutex> lock(pulls_mu_);
      pulls_.erase(key);
    }
    promise.set_value(s);
  }
  Status pulled = flight->done.get();
  if (!pulled.ok()) return Status(pulled.code(), "pulling " + key + ": " + pulled.message());
  return Find(spec.image);
}

// `bai-agent image export` (issue 46, item 6): an image of the store written as an OCI image
// layout, or an OCI archive (the layout in one tar), for an agent without a registry to import.
StatusOr<std::string> ImageStore::Export(std::string const& reference,
                                         std::string const& out) const {
  auto img = Find(reference);
  if (!img.ok()) return img.status();
  if (!img->host_mounts.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  img->name + " is a built-in host image (the host's own /usr): nothing to export");
  }
  auto stored = ReadJson(fs::path(root_) / img->name / "manifest.json");
  if (!stored.ok()) return stored.status();
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
  if (arch.empty()) arch = MachineArchitecture();
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
  if (auto s = WriteFile(layout / "index.json",
                         json{{"schemaVersion", 2}, {"manifests", {*manifest_desc}}}.dump());
      !s.ok()) {
    return fail(s);
  }
  if (auto s = WriteFile(layout / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})"); !s.ok()) {
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
