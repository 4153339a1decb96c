// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/layer_store.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/fs/image_root.h"
#include "server-reference/common/fs/unique_fd.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace bai::agent {
namespace fs = std::filesystem;
using nlohmann::json;

std::int64_t TreeBytes(std::string const& root) {
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

namespace {

bool ValidChainId(std::string const& id) {
  static std::regex const kId("sha256:[0-9a-f]{64}");
  return std::regex_match(id, kId);
}

std::optional<Layer> ReadRecord(fs::path const& record, fs::path const& dir) {
  std::ifstream in(record);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = internal::ParseJson(ss.str());
  if (!j || !j->is_object()) return std::nullopt;
  Layer l;
  l.chain_id = j->value("chain_id", "");
  l.diff_id = j->value("diff_id", "");
  l.digest = j->value("digest", "");
  l.bytes = j->value("bytes", std::int64_t{0});
  l.dir = dir.string();
  if (!ValidChainId(l.chain_id)) return std::nullopt;
  return l;
}

}  // namespace

LayerStore::LayerStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
}

std::string LayerStore::Name(std::string const& chain_id) const {
  // 96 bits of the ChainID: short enough that a hundred layers fit overlayfs' options, and
  // the record says the whole of it.
  return chain_id.substr(7, 24);
}

StatusOr<Layer> LayerStore::Find(std::string const& chain_id) const {
  if (!ValidChainId(chain_id)) {
    return Status(StatusCode::kInvalidArgument, "not a layer ChainID: " + chain_id);
  }
  fs::path dir = fs::path(dir_) / Name(chain_id);
  auto l = ReadRecord(dir.string() + ".json", dir);
  std::error_code ec;
  if (!l || l->chain_id != chain_id || !fs::is_directory(dir, ec)) {
    return Status(StatusCode::kNotFound, "no layer " + chain_id);
  }
  return *l;
}

StatusOr<Layer> LayerStore::Put(std::string const& chain_id, std::string const& diff_id,
                                std::string const& digest, std::string const& blob) {
  if (auto have = Find(chain_id); have.ok()) return have;
  if (!ValidChainId(chain_id)) {
    return Status(StatusCode::kInvalidArgument, "not a layer ChainID: " + chain_id);
  }
  auto held = server::LayerDiffId(blob);
  if (!held.ok()) return held.status();
  if (*held != diff_id) {
    return Status(StatusCode::kDataLoss, "layer " + digest + " uncompresses to " + *held +
                                             ", not the config's diff_id " + diff_id + ": refused");
  }
  static std::atomic<int> serial{0};
  std::string name = Name(chain_id);
  fs::path tmp = fs::path(dir_) /
                 ("." + name + "." + std::to_string(::getpid()) + "." + std::to_string(serial++));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) {
    return Status(StatusCode::kInternal, "cannot make " + tmp.string() + ": " + ec.message());
  }
  ::chmod(tmp.c_str(), 0755);
  if (auto s = server::ExtractOverlayLayer(blob, tmp.string()); !s.ok()) {
    fs::remove_all(tmp, ec);
    return s;
  }
  Layer l{chain_id, diff_id, digest, TreeBytes(tmp.string()), (fs::path(dir_) / name).string()};
  fs::rename(tmp, l.dir, ec);
  if (ec) {
    // Another pull put the same layer meanwhile: the same bytes, theirs kept.
    fs::remove_all(tmp, ec);
    if (auto have = Find(chain_id); have.ok()) return have;
    if (fs::exists(l.dir, ec)) {
      // Theirs is still being recorded, or half made by an agent that died: wait for the
      // record a moment, else take its place.
      for (int i = 0; i < 50; ++i) {
        ::usleep(100000);
        if (auto have = Find(chain_id); have.ok()) return have;
      }
    }
    return Status(StatusCode::kInternal, "cannot install the layer " + chain_id);
  }
  json record = {
      {"chain_id", chain_id}, {"diff_id", diff_id}, {"digest", digest}, {"bytes", l.bytes}};
  std::string record_path = l.dir + ".json", record_tmp = tmp.string() + ".json";
  {
    std::ofstream out(record_tmp, std::ios::trunc);
    out << record.dump(2) << "\n";
    out.close();
    if (!out) {
      fs::remove(record_tmp, ec);
      fs::remove_all(l.dir, ec);
      return Status(StatusCode::kResourceExhausted, "cannot record the layer " + chain_id);
    }
  }
  fs::rename(record_tmp, record_path, ec);
  if (ec) return Status(StatusCode::kInternal, "cannot record the layer " + chain_id);
  return l;
}

std::vector<Layer> LayerStore::List() const {
  std::vector<Layer> out;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".json" || e.path().filename().string().front() == '.') continue;
    fs::path dir = e.path();
    dir.replace_extension();
    if (auto l = ReadRecord(e.path(), dir); l && fs::is_directory(dir, ec)) out.push_back(*l);
  }
  return out;
}

Status LayerStore::Remove(std::string const& chain_id) {
  auto l = Find(chain_id);
  if (!l.ok()) return l.status();
  std::error_code ec;
  // The record first: a directory without one is half made, swept by the next start.
  fs::remove(l->dir + ".json", ec);
  fs::remove_all(l->dir, ec);
  if (ec) return Status(StatusCode::kInternal, "cannot remove " + l->dir + ": " + ec.message());
  return Status();
}

int LayerStore::SweepHalfMade() {
  int swept = 0;
  std::error_code ec;
  std::vector<fs::path> gone;
  for (auto const& e : fs::directory_iterator(dir_, ec)) {
    std::string name = e.path().filename().string();
    bool partial = !name.empty() && name.front() == '.';
    bool unrecorded = e.is_directory(ec) && !fs::exists(e.path().string() + ".json", ec);
    if (partial || unrecorded) gone.push_back(e.path());
  }
  for (auto const& p : gone) {
    fs::remove_all(p, ec);
    ++swept;
  }
  return swept;
}

Status MountOverlay(std::vector<std::string> const& lower, std::string const& upper,
                    std::string const& work, std::string const& target) {
  if (lower.empty()) return Status(StatusCode::kInvalidArgument, "an overlay needs a layer");
  std::error_code ec;
  for (auto const& d : {upper, work, target}) fs::create_directories(d, ec);
  std::vector<server::UniqueFd> held;
  std::string options = "lowerdir=";
  for (std::size_t i = 0; i < lower.size(); ++i) {
    server::UniqueFd fd(::open(lower[i].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (fd.fd < 0) {
      return Status(StatusCode::kNotFound, "layer " + lower[i] + ": " + std::strerror(errno));
    }
    options += (i ? ":/proc/self/fd/" : "/proc/self/fd/") + std::to_string(fd.fd);
    held.push_back(std::move(fd));
  }
  options += ",upperdir=" + upper + ",workdir=" + work;
  if (::mount("overlay", target.c_str(), "overlay", MS_NODEV, options.c_str()) != 0) {
    int err = errno;
    return Status(err == EPERM ? StatusCode::kPermissionDenied : StatusCode::kInternal,
                  "cannot mount the image's layers at " + target + ": " + std::strerror(err));
  }
  return Status();
}

void Unmount(std::string const& target) {
  while (::umount2(target.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
  }
}

Status ProbeOverlay(std::string const& scratch_dir) {
  fs::path probe = fs::path(scratch_dir) / ".overlay-probe";
  std::error_code ec;
  Unmount((probe / "m").string());
  fs::remove_all(probe, ec);
  fs::create_directories(probe / "l", ec);
  if (ec) return Status(StatusCode::kInternal, "cannot make " + probe.string());
  // What a layer holds: a whiteout needs mknod, an opaque directory a trusted xattr.
  Status s;
  if (::mknod((probe / "l/w").c_str(), S_IFCHR | 0600, makedev(0, 0)) != 0) {
    s = Status(StatusCode::kPermissionDenied,
               std::string("cannot make an overlay whiteout: ") + std::strerror(errno));
  }
  if (s.ok()) {
    s = MountOverlay({(probe / "l").string()}, (probe / "u").string(), (probe / "w").string(),
                     (probe / "m").string());
  }
  Unmount((probe / "m").string());
  fs::remove_all(probe, ec);
  return s;
}

}  // namespace bai::agent
