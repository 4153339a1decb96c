// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/manager.h"

#include "bai/version.h"

#include "server-reference/manager/schema.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace bai::manager {

std::string ManagerVersion() { return std::string("bai-manager ") + BAI_VERSION_STRING; }

StatusOr<OpenedState> OpenState(ManagerConfig const& config) {
  if (::mkdir(config.data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(StatusCode::kPermissionDenied,
                  "cannot create data directory " + config.data_dir + ": " + std::strerror(errno));
  }
  OpenedState state;
  auto db = server::OpenSqlite(config.DatabasePath(), config.threads + 2);
  if (!db.ok()) return std::move(db).status();
  state.db = std::move(*db);
  if (auto s = server::Migrate(*state.db, Migrations()); !s.ok()) return s;
  state.store = std::make_unique<Store>(*state.db);
  auto boot = Bootstrap(*state.store, config.data_dir);
  if (!boot.ok()) return std::move(boot).status();
  state.bootstrap = *boot;
  return state;
}

StatusOr<std::unique_ptr<Manager>> Manager::Start(ManagerConfig const& config) {
  std::unique_ptr<Manager> m(new Manager());
  auto state = OpenState(config);
  if (!state.ok()) return std::move(state).status();
  m->state_ = std::move(*state);
  ApiOptions api_options;
  api_options.manager_version = ManagerVersion();
  m->api_ = std::make_unique<ManagerApi>(*m->state_.store, std::move(api_options));
  server::HttpServerOptions http;
  http.address = config.listen_address;
  http.port = config.listen_port;
  http.threads = config.threads;
  http.max_body_bytes = config.max_body_bytes;
  auto* api = m->api_.get();
  auto server = server::HttpServer::Start(
      http, [api](std::shared_ptr<server::Exchange> e) { api->Handle(e); });
  if (!server.ok()) return std::move(server).status();
  m->http_ = std::move(*server);
  return m;
}

Manager::~Manager() { Stop(); }

void Manager::Stop() {
  if (http_) http_->Stop();
}

}  // namespace bai::manager
