// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/image_gc.h"

#include "libbai/util/json_parse.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/kernel_bundle.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/common/wire/agent_messages.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::agent {
namespace fs = std::filesystem;
namespace ap = server::agent_protocol;
using nlohmann::json;

namespace {

bool IsImageDir(fs::path const& p) {
  std::string n = p.filename().string();
  return !n.empty() && n.front() != '.' && n != "layers" && n != "blobs";
}

}  // namespace

std::vector<StoredImage> StoredImages(ImageStore const& store) {
  std::vector<StoredImage> out;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator(store.root(), ec)) {
    if (!IsImageDir(e.path()) || !e.is_directory(ec)) continue;
    auto m = internal::ParseJson(ReadWholeFile((e.path() / "manifest.json").string()));
    if (!m || !m->is_object()) continue;
    StoredImage img;
    img.name = e.path().filename().string();
    for (auto const& a : m->value("aliases", json::array())) {
      if (a.is_string()) img.aliases.push_back(a.get<std::string>());
    }
    img.kind = StoredImageKind(*m);
    for (auto const& l : m->value("layers", json::array())) {
      if (l.is_string()) img.layers.push_back(l.get<std::string>());
    }
    auto size = m->find("size");
    bool layered = m->contains("layers");
    // A layered image's own bytes are its `top`; a flat one's, its root.
    img.own_bytes = TreeBytes((e.path() / (layered ? "top" : "rootfs")).string());
    if (!layered && size != m->end() && size->is_number_integer()) {
      img.own_bytes = size->get<std::int64_t>();
    }
    out.push_back(std::move(img));
  }
  std::sort(out.begin(), out.end(), [](auto const& a, auto const& b) { return a.name < b.name; });
  return out;
}

StatusOr<std::set<std::string>> ImagesInUse(ImageStore const& store, std::string const& state_dir) {
  std::set<std::string> out;
  std::error_code ec;
  std::vector<fs::path> kernels;
  for (auto const& agent : fs::directory_iterator(state_dir, ec)) {
    std::error_code inner;
    if (!fs::is_directory(agent.path() / "kernels", inner)) continue;
    for (auto const& e : fs::directory_iterator(agent.path() / "kernels", inner)) {
      if (e.is_directory(inner)) kernels.push_back(e.path());
    }
  }
  for (auto const& dir : kernels) {
    fs::directory_entry e(dir);
    if (!fs::exists(e.path() / "kernel.json", ec)) {
      // Being started (its record comes once its root is mounted), unless it was left long ago
      // by an agent that is gone (an agent sweeps its own at start).
      auto made = fs::last_write_time(e.path(), ec);
      if (!ec && fs::file_time_type::clock::now() - made > std::chrono::minutes(10)) continue;
      return Status(StatusCode::kUnavailable, "a kernel is being started (" + e.path().string() +
                                                  "): its image cannot be told yet; try again");
    }
    auto record = KernelRecord::FromJson(ReadWholeFile((e.path() / "kernel.json").string()), "");
    if (record.image.empty()) continue;
    if (auto img = store.Find(record.image); img.ok()) out.insert(img->name);
  }
  return out;
}

std::vector<ImageDiskUse> DiskUse(std::vector<StoredImage> const& images,
                                  std::map<std::string, std::int64_t> const& layer_bytes,
                                  std::set<std::string> const& in_use) {
  std::map<std::string, int> users;  // ChainID → images standing on it
  for (auto const& img : images) {
    for (auto const& l : std::set<std::string>(img.layers.begin(), img.layers.end())) ++users[l];
  }
  std::vector<ImageDiskUse> out;
  for (auto const& img : images) {
    ImageDiskUse u{img.name,      img.aliases,   img.kind,
                   img.own_bytes, img.own_bytes, in_use.count(img.name) > 0};
    for (auto const& l : std::set<std::string>(img.layers.begin(), img.layers.end())) {
      auto it = layer_bytes.find(l);
      std::int64_t b = it == layer_bytes.end() ? 0 : it->second;
      u.bytes += b;
      if (users[l] == 1) u.own_bytes += b;
    }
    out.push_back(std::move(u));
  }
  return out;
}

StatusOr<RemovalPlan> PlanRemoval(std::vector<StoredImage> const& images,
                                  std::vector<std::string> const& layers,
                                  std::vector<std::string> const& remove,
                                  std::set<std::string> const& in_use, bool unused_pulled) {
  std::set<std::string> going;
  for (auto const& name : remove) {
    auto it = std::find_if(images.begin(), images.end(),
                           [&](StoredImage const& i) { return i.name == name; });
    if (it == images.end()) return Status(StatusCode::kNotFound, "no image " + name + " here");
    if (it->kind == ap::kImageKindHost) {
      return Status(StatusCode::kFailedPrecondition,
                    name + " is a built-in host image: the agent makes it again at its start");
    }
    if (in_use.count(name)) {
      return Status(StatusCode::kFailedPrecondition,
                    name + " is in use by a kernel: end its sessions first");
    }
    going.insert(name);
  }
  if (unused_pulled) {
    for (auto const& img : images) {
      if (img.kind == ap::kImageKindPulled && !in_use.count(img.name)) going.insert(img.name);
    }
  }
  RemovalPlan plan;
  plan.images.assign(going.begin(), going.end());
  std::set<std::string> needed;
  for (auto const& img : images) {
    if (!going.count(img.name)) needed.insert(img.layers.begin(), img.layers.end());
  }
  for (auto const& l : layers) {
    if (!needed.count(l)) plan.layers.push_back(l);
  }
  return plan;
}

PurgeOutcome Purge(ImageStore& store, std::string const& state_dir,
                   std::vector<std::string> const& references, bool prune) {
  PurgeOutcome out;
  auto in_use = ImagesInUse(store, state_dir);
  if (!in_use.ok()) {
    for (auto const& r : references) out.errors.push_back(r + ": " + in_use.status().message());
    return out;
  }
  auto layer_ids = [&] {
    std::vector<std::string> ids;
    for (auto const& l : store.layer_store().List()) ids.push_back(l.chain_id);
    return ids;
  };
  for (auto const& ref : references) {
    auto img = store.Find(ref);
    if (!img.ok()) {
      out.errors.push_back(ref + ": not on this agent");
      continue;
    }
    // Its own layers go with it unless a pull is under way; stray ones only when asked.
    auto plan = PlanRemoval(StoredImages(store), {}, {img->name}, *in_use, false);
    if (!plan.ok()) {
      out.errors.push_back(ref + ": " + plan.status().message());
      continue;
    }
    auto all = PlanRemoval(StoredImages(store), layer_ids(), {img->name}, *in_use, false);
    auto freed = CarryOut(store, *all);
    if (!freed.ok()) freed = CarryOut(store, *plan);  // a pull under way: the image alone
    if (!freed.ok()) {
      out.errors.push_back(ref + ": " + freed.status().message());
      continue;
    }
    out.removed.push_back(ref);
    out.freed += *freed;
  }
  if (prune) {
    auto plan = PlanRemoval(StoredImages(store), layer_ids(), {}, *in_use, false);
    if (plan.ok()) {
      if (auto freed = CarryOut(store, *plan); freed.ok()) out.freed += *freed;
    }
  }
  return out;
}

StatusOr<std::int64_t> CarryOut(ImageStore& store, RemovalPlan const& plan) {
  std::error_code ec;
  if (!plan.layers.empty()) {
    for (auto const& e : fs::directory_iterator(store.root(), ec)) {
      std::string n = e.path().filename().string();
      if (n.size() > 1 && n.front() == '.' && n != ".overlay-probe") {
        return Status(StatusCode::kUnavailable,
                      "a pull or import is under way (" + n +
                          "): its layers may be the unreferenced ones; try again when it is done");
      }
    }
  }
  std::int64_t freed = 0;
  for (auto const& name : plan.images) {
    fs::path dir = fs::path(store.root()) / name;
    freed += TreeBytes(dir.string());
    // The manifest first: a directory without one is no image (and swept at the next start).
    fs::remove(dir / "manifest.json", ec);
    fs::remove_all(dir, ec);
    if (ec)
      return Status(StatusCode::kInternal, "cannot remove " + dir.string() + ": " + ec.message());
  }
  for (auto const& chain : plan.layers) {
    auto layer = store.layer_store().Find(chain);
    if (!layer.ok()) continue;
    freed += layer->bytes;
    if (auto s = store.layer_store().Remove(chain); !s.ok()) return s;
  }
  return freed;
}

}  // namespace bai::agent
