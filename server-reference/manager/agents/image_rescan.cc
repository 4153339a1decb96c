// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/agents/image_rescan.h"

#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/manager/state/agent_store.h"

#include <memory>
#include <mutex>

namespace bai::manager {

namespace ap = server::agent_protocol;

std::pair<protocol::TaskStatus, std::string> RescanOutcome(
    std::vector<AgentRescan> const& results, std::vector<std::string> const& elsewhere) {
  std::size_t answered = 0;
  std::size_t images = 0;
  std::string problems;
  for (auto const& r : results) {
    if (r.images) {
      ++answered;
      images += *r.images;
    } else {
      problems += "; " + r.agent_id + ": " + r.error;
    }
  }
  for (auto const& id : elsewhere) problems += "; " + id + ": not connected to this manager";
  auto plural = [](std::size_t n, char const* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  std::string message = results.empty() && elsewhere.empty()
                            ? "No agent to rescan."
                            : plural(images, "image") + " on " + plural(answered, "agent");
  bool failed = answered == 0 && (!results.empty() || !elsewhere.empty());
  return {failed ? protocol::TaskStatus::kFailed : protocol::TaskStatus::kDone, message + problems};
}

StatusOr<std::string> ImageRescan::Start(std::string const& access_key,
                                         std::chrono::milliseconds timeout) {
  auto all = AgentStore(db_).List();
  if (!all.ok()) return all.status();
  auto connected = agents_.Connected();
  std::vector<std::string> targets;
  std::vector<std::string> elsewhere;
  for (auto const& a : *all) {
    if (a.status != "ALIVE") continue;
    (connected.count(a.row.id) != 0 ? targets : elsewhere).push_back(a.row.id);
  }
  auto task =
      tasks_.Create("rescan-images", access_key, "", static_cast<std::int64_t>(targets.size()));
  if (!task.ok()) return task.status();
  struct Progress {
    std::mutex mu;
    std::vector<AgentRescan> results;
  };
  auto progress = std::make_shared<Progress>();
  std::size_t total = targets.size();
  if (total == 0) {
    auto [status, message] = RescanOutcome({}, elsewhere);
    (void)tasks_.Finish(task->id, status, message);
    return task->id;
  }
  for (auto const& id : targets) {
    agents_.Request(
        id, ap::RescanImages{}, timeout,
        // The stores, not this object: the registry may call back while the manager closes.
        [&db = db_, &tasks = tasks_, progress, elsewhere, total, id,
         task_id = task->id](StatusOr<std::string> result) {
          AgentRescan r{id, std::nullopt, ""};
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
          std::vector<AgentRescan> so_far;
          {
            std::lock_guard<std::mutex> lock(progress->mu);
            progress->results.push_back(r);
            so_far = progress->results;
          }
          std::string step =
              r.images ? id + ": " + std::to_string(*r.images) + " images" : id + ": " + r.error;
          (void)tasks.Update(task_id, static_cast<std::int64_t>(so_far.size()),
                             static_cast<std::int64_t>(total), step);
          if (so_far.size() == total) {
            auto [status, message] = RescanOutcome(so_far, elsewhere);
            (void)tasks.Finish(task_id, status, message);
          }
        });
  }
  return task->id;
}

}  // namespace bai::manager
