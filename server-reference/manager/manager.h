// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/agents/image_rescan.h"
#include "server-reference/manager/api/api.h"
#include "server-reference/manager/config.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/sessions.h"
#include "server-reference/manager/state/store.h"
#include "server-reference/manager/streams/stream_broker.h"
#include "server-reference/manager/streams/stream_registry.h"
#include "server-reference/manager/vfolders/storage_links.h"
#include "server-reference/storage/proxy.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace bai::manager {

/// Opens (creating if needed) the data directory and database, applies migrations, bootstraps.
struct OpenedState {
  std::unique_ptr<server::Database> db;
  std::unique_ptr<Store> store;
  BootstrapResult bootstrap;
  std::string cluster_secret;
};
StatusOr<OpenedState> OpenState(ManagerConfig const& config);

/// A running bai-manager: state, API and HTTP server. Tests start it in-process on port 0.
class Manager {
 public:
  static StatusOr<std::unique_ptr<Manager>> Start(ManagerConfig const& config);
  ~Manager();

  std::uint16_t port() const { return http_->port(); }
  Store& store() { return *state_.store; }
  SessionStore& sessions() { return *sessions_; }
  AgentRegistry& agents() { return *agents_; }
  EventHub& events() { return *hub_; }
  BackgroundTaskStore& tasks() { return *tasks_; }
  streams::StreamRegistry& streams() { return streams_; }
  std::string const& cluster_secret() const { return state_.cluster_secret; }
  /// Runs a scheduling pass for `scaling_group` (also every 5 s and after each creation) and
  /// returns once a pass that began after the call has ended. Callers that arrive while a pass
  /// runs share the next one: a burst of creates costs a few passes, not one each.
  void Schedule(std::string const& scaling_group);
  BootstrapResult const& bootstrap() const { return state_.bootstrap; }
  /// The storage proxy in this process (null when `vfolders.embedded` is off).
  storage::StorageProxy* storage() { return storage_.get(); }
  void Stop();

 private:
  Manager() = default;
  Status StartStorage(ManagerConfig const& config);
  void RunPass(std::string const& scaling_group);
  struct PassQueue {
    std::uint64_t asked = 0;  ///< calls so far
    std::uint64_t done = 0;   ///< calls covered by a finished pass
    bool running = false;
  };
  std::mutex pass_mu_;
  std::condition_variable pass_cv_;
  std::map<std::string, PassQueue> passes_;  ///< by resource group
  OpenedState state_;
  streams::StreamRegistry streams_;  ///< before the hub and the server, which use it
  streams::AgentStreamBroker broker_;
  std::chrono::seconds head_wait_{600};  ///< scheduler.head_wait
  std::string id_;                       ///< HOST:PORT: this manager's row in `managers`
  std::unique_ptr<SessionStore> sessions_;
  std::unique_ptr<BackgroundTaskStore> tasks_;
  std::unique_ptr<EventHub> hub_;
  std::unique_ptr<AgentRegistry> agents_;
  std::unique_ptr<ImageRescan> rescan_;  ///< rescan_images' tasks (GraphQL)
  std::unique_ptr<storage::StorageProxy> storage_;
  vfolders::StorageLinks links_;
  std::unique_ptr<ManagerApi> api_;
  std::unique_ptr<server::HttpServer> http_;
};

/// "bai-manager 0.1.0".
std::string ManagerVersion();

}  // namespace bai::manager
