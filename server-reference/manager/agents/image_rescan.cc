// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/agents/image_rescan.h"

#include "server-reference/common/oci/reference.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/manager/agents/registry_scan.h"
#include "server-reference/manager/state/agent_store.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>

namespace bai::manager {

namespace ap = server::agent_protocol;

std::pair<protocol::TaskStatus, std::string> RescanOutcome(
    std::vector<AgentRescan> const& results, std::vector<std::string> const& elsewhere) {
  std::size_t answered = 0, agents = 0, registries = 0, agent_images = 0, registry_images = 0;
  std::string problems;
  for (auto const& r : results) {
    if (r.images) {
      ++answered;
      (r.registry ? registries : agents) += 1;
      (r.registry ? registry_images : agent_images) += *r.images;
    }
    if (!r.error.empty()) problems += "; " + r.agent_id + ": " + r.error;
  }
  for (auto const& id : elsewhere) problems += "; " + id + ": not connected to this manager";
  auto plural = [](std::size_t n, char const* what, char const* many) {
    return std::to_string(n) + " " + (n == 1 ? what : many);
  };
  std::string message;
  if (results.empty() && elsewhere.empty()) {
    message = "No agent to rescan.";
  } else {
    if (registries > 0) {
      message = plural(registry_images, "image", "images") + " in " +
                plural(registries, "registry", "registries");
    }
    bool any_agent = std::any_of(results.begin(), results.end(),
                                 [](AgentRescan const& r) { return !r.registry; });
    if (registries == 0 || any_agent || !elsewhere.empty()) {
      message += (message.empty() ? "" : ", ") + plural(agent_images, "image", "images") + " on " +
                 plural(agents, "agent", "agents");
    }
  }
  bool failed = answered == 0 && (!results.empty() || !elsewhere.empty());
  return {failed ? protocol::TaskStatus::kFailed : protocol::TaskStatus::kDone, message + problems};
}

std::pair<protocol::TaskStatus, std::string> PurgeTaskOutcome(
    std::vector<AgentPurge> const& results) {
  std::size_t removed = 0, refused = 0, answered = 0;
  std::int64_t freed = 0;
  std::string problems;
  for (auto const& r : results) {
    if (!r.answered) {
      problems += "; " + r.agent_id + ": " + r.error;
      continue;
    }
    ++answered;
    removed += r.removed.size();
    refused += r.refused.size();
    freed += r.freed;
    for (auto const& why : r.refused) problems += "; " + r.agent_id + ": " + why;
  }
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MiB", static_cast<double>(freed) / (1 << 20));
  std::string message = std::to_string(removed) + (removed == 1 ? " image" : " images") +
                        " purged from " + std::to_string(answered) +
                        (answered == 1 ? " agent, " : " agents, ") + size + " freed";
  bool failed = answered < results.size() || (removed == 0 && refused > 0);
  return {failed ? protocol::TaskStatus::kFailed : protocol::TaskStatus::kDone, message + problems};
}

namespace {

// A rescan's units (registries, agents) as they end; the last one ends the task.
struct Progress {
  std::mutex mu;
  std::vector<AgentRescan> results;
  std::size_t total = 0;
  std::vector<std::string> elsewhere;
};

void UnitDone(BackgroundTaskStore& tasks, std::string const& task_id,
              std::shared_ptr<Progress> const& progress, AgentRescan const& r) {
  std::vector<AgentRescan> so_far;
  {
    std::lock_guard<std::mutex> lock(progress->mu);
    progress->results.push_back(r);
    so_far = progress->results;
  }
  std::string step = r.images ? r.agent_id + ": " + std::to_string(*r.images) + " images"
                              : r.agent_id + ": " + r.error;
  (void)tasks.Update(task_id, static_cast<std::int64_t>(so_far.size()),
                     static_cast<std::int64_t>(progress->total), step);
  if (so_far.size() == progress->total) {
    auto [status, message] = RescanOutcome(so_far, progress->elsewhere);
    (void)tasks.Finish(task_id, status, message);
  }
}

}  // namespace

StatusOr<std::string> ImageRescan::Start(std::string const& access_key, std::string const& registry,
                                         std::chrono::milliseconds timeout) {
  auto registries = RegistryStore(db_).List();
  if (!registries.ok()) return registries.status();
  std::vector<ContainerRegistry> scanned;
  // An image reference (REGISTRY/REPOSITORY:TAG): that image alone, from its registry.
  std::optional<server::oci::ImageReference> one;
  if (registry.find('/') != std::string::npos) {
    auto ref = server::oci::ParseImageReference(registry);
    if (!ref.ok()) return Status(StatusCode::kNotFound, "No such image: " + registry);
    auto source = RegistryStore(db_).SourceOf(ref->registry + "/" + ref->repository);
    if (!source.ok()) return source.status();
    if (!*source) return Status(StatusCode::kNotFound, "No such registry: " + ref->registry);
    scanned.push_back(**source);
    one = *ref;
  } else {
    for (auto const& r : *registries) {
      if (registry.empty() || r.registry_name == registry) scanned.push_back(r);
    }
  }
  if (!registry.empty() && scanned.empty()) {
    return Status(StatusCode::kNotFound, "No such registry: " + registry);
  }
  auto all = AgentStore(db_).List();
  if (!all.ok()) return all.status();
  auto connected = agents_.Connected();
  std::vector<std::string> targets;
  auto progress = std::make_shared<Progress>();
  for (auto const& a : *all) {
    if (!registry.empty() || a.status != "ALIVE") continue;
    (connected.count(a.row.id) != 0 ? targets : progress->elsewhere).push_back(a.row.id);
  }
  progress->total = scanned.size() + targets.size();
  auto task =
      tasks_.Create("rescan-images", access_key, "", static_cast<std::int64_t>(progress->total));
  if (!task.ok()) return task.status();
  if (progress->total == 0) {
    auto [status, message] = RescanOutcome({}, progress->elsewhere);
    (void)tasks_.Finish(task->id, status, message);
    return task->id;
  }
  for (auto const& reg : scanned) {
    scans_.Run([&db = db_, &tasks = tasks_, progress, reg, one, task_id = task->id] {
      RegistryStore store(db);
      std::string name =
          "registry " + reg.registry_name + (reg.project.empty() ? "" : " (" + reg.project + ")");
      AgentRescan r{name, std::nullopt, "", true};
      auto scan = one ? ScanImage(reg, one->repository, one->ManifestReference(), store)
                      : ScanRegistry(reg, store);
      if (scan.ok()) {
        r.images = scan->images;
        for (auto const& p : scan->problems) r.error += (r.error.empty() ? "" : "; ") + p;
      } else {
        r.error = scan.status().message();
      }
      UnitDone(tasks, task_id, progress, r);
    });
  }
  for (auto const& id : targets) {
    agents_.Request(
        id, ap::RescanImages{}, timeout,
        // The stores, not this object: the registry may call back while the manager closes.
        [&db = db_, &tasks = tasks_, progress, id,
         task_id = task->id](StatusOr<std::string> result) {
          AgentRescan r{id, std::nullopt, "", false};
          auto reply = result.ok() ? ap::DecodeImagesReply(*result)
                                   : StatusOr<ap::ImagesReply>(result.status());
          if (reply.ok()) {
            if (auto s = AgentStore(db).SetImages(id, reply->images); s.ok()) {
              r.images = reply->images.size();
            } else {
              r.error = s.message();
            }
          } else {
            r.error = reply.status().message();
          }
          UnitDone(tasks, task_id, progress, r);
        });
  }
  return task->id;
}

StatusOr<std::string> ImageRescan::StartPurge(std::string const& access_key,
                                              std::vector<PurgeKey> const& keys, bool prune,
                                              std::chrono::milliseconds timeout) {
  auto connected = agents_.Connected();
  for (auto const& k : keys) {
    if (!connected.count(k.agent_id)) {
      return Status(StatusCode::kNotFound,
                    "No such agent connected to this manager: " + k.agent_id);
    }
  }
  auto task = tasks_.Create("purge-images", access_key, "", static_cast<std::int64_t>(keys.size()));
  if (!task.ok()) return task.status();
  if (keys.empty()) {
    (void)tasks_.Finish(task->id, protocol::TaskStatus::kDone, "Nothing to purge.");
    return task->id;
  }
  struct Units {
    std::mutex mu;
    std::vector<AgentPurge> results;
    std::size_t total = 0;
  };
  auto units = std::make_shared<Units>();
  units->total = keys.size();
  for (auto const& k : keys) {
    agents_.Request(k.agent_id, ap::PurgeImages{"", k.images, prune}, timeout,
                    [&db = db_, &tasks = tasks_, units, id = k.agent_id,
                     task_id = task->id](StatusOr<std::string> result) {
                      AgentPurge r{id, false, "", {}, {}, 0};
                      auto reply = result.ok() ? ap::DecodePurgeReply(*result)
                                               : StatusOr<ap::PurgeReply>(result.status());
                      if (reply.ok()) {
                        r.answered = true;
                        r.removed = reply->removed;
                        r.refused = reply->errors;
                        r.freed = reply->freed;
                        (void)AgentStore(db).SetImages(id, reply->images);
                      } else {
                        r.error = reply.status().message();
                      }
                      std::vector<AgentPurge> so_far;
                      {
                        std::lock_guard<std::mutex> lock(units->mu);
                        units->results.push_back(r);
                        so_far = units->results;
                      }
                      (void)tasks.Update(task_id, static_cast<std::int64_t>(so_far.size()),
                                         static_cast<std::int64_t>(units->total),
                                         id + ": " + std::to_string(r.removed.size()) + " purged");
                      if (so_far.size() == units->total) {
                        auto [status, message] = PurgeTaskOutcome(so_far);
                        (void)tasks.Finish(task_id, status, message);
                      }
                    });
  }
  return task->id;
}

}  // namespace bai::manager
