// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/manager.h"

#include "bai/version.h"

#include "server-reference/common/log/log.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/metrics.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/managers.h"
#include "server-reference/manager/state/schema.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace bai::manager {

std::string ManagerVersion() { return std::string("bai-manager ") + BAI_VERSION_STRING; }

StatusOr<OpenedState> OpenState(ManagerConfig const& config) {
  if (::mkdir(config.data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(StatusCode::kPermissionDenied,
                  "cannot create data directory " + config.data_dir + ": " + std::strerror(errno));
  }
  OpenedState state;
  auto db = config.UsesPostgres() ? server::OpenPostgres(config.database, {config.threads + 2})
                                  : server::OpenSqlite(config.DatabasePath(), config.threads + 2);
  if (!db.ok()) return std::move(db).status();
  state.db = std::move(*db);
  if (auto s = server::Migrate(*state.db, Migrations()); !s.ok()) return s;
  state.store = std::make_unique<Store>(*state.db);
  auto boot = Bootstrap(*state.store, config.data_dir);
  if (!boot.ok()) return std::move(boot).status();
  state.bootstrap = *boot;
  auto secret = LoadOrCreateSecret(config.ClusterSecretPath());
  if (!secret.ok()) return std::move(secret).status();
  state.cluster_secret = *secret;
  return state;
}

StatusOr<std::unique_ptr<Manager>> Manager::Start(ManagerConfig const& config) {
  std::unique_ptr<Manager> m(new Manager());
  auto state = OpenState(config);
  if (!state.ok()) return std::move(state).status();
  m->state_ = std::move(*state);
  m->head_wait_ = std::chrono::seconds(config.scheduler_head_wait);
  m->sessions_ = std::make_unique<SessionStore>(*m->state_.db);
  m->tasks_ = std::make_unique<BackgroundTaskStore>(*m->state_.db);
  m->hub_ = std::make_unique<EventHub>(*m->sessions_, *m->tasks_);
  ApiOptions api_options;
  api_options.manager_version = ManagerVersion();
  api_options.allow_signup = config.allow_signup;
  api_options.login_limits = config.login_limits;
  api_options.trusted_proxies = config.trusted_proxies;
  api_options.signups_per_address = config.signups_per_address;
  api_options.max_streams_per_user = config.max_streams_per_user;
  m->api_ = std::make_unique<ManagerApi>(*m->state_.store, std::move(api_options));
  auto* raw = m.get();
  DeclareManagerMetrics(m->api_->metrics(), *m->state_.db);
  // Prometheus text for the operator's scraper; like /health, it asks no signature.
  m->api_->Add("GET", "/metrics", AuthLevel::kAnonymous, [api = m->api_.get()](RequestContext&) {
    server::HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = api->metrics().Render();
    return r;
  });
  RegisterAuthRoutes(*m->api_);
  RegisterClusterRoutes(*m->api_);
  RegisterSessionRoutes(
      *m->api_, *m->sessions_, *m->hub_, [raw](std::string const& group) { raw->Schedule(group); },
      m->links_);
  // The safety pass: catches what no event triggered (starts_at, finished dependencies, other
  // managers' changes).
  m->hub_->Every(std::chrono::seconds(5), [raw] {
    auto groups = raw->sessions_->GroupsWithPending();
    if (!groups.ok()) return;
    for (auto const& g : *groups) raw->Schedule(g);
  });
  AgentOptions agent_options;
  agent_options.heartbeat_timeout = std::chrono::seconds(config.agent_heartbeat_timeout);
  agent_options.lost_grace = std::chrono::seconds(config.agent_lost_grace);
  agent_options.auto_pull = config.image_auto_pull;
  agent_options.lost_forget = std::chrono::seconds(config.agent_lost_forget);
  m->agents_ = std::make_unique<AgentRegistry>(
      *m->state_.db, *m->sessions_, *m->tasks_, agent_options,
      [raw](std::string const& group) { raw->Schedule(group); }, [raw] { raw->hub_->Wake(); },
      m->state_.cluster_secret);
  m->rescan_ = std::make_unique<ImageRescan>(*m->state_.db, *m->agents_, *m->tasks_);
  RegisterGraphqlRoutes(*m->api_, *m->sessions_, m->links_, *m->rescan_);
  RegisterAgentRoutes(*m->api_, *m->agents_, m->state_.cluster_secret);
  RegisterExecuteRoutes(*m->api_, *m->sessions_, *m->agents_);
  RegisterStreamRoutes(*m->api_, *m->sessions_, *m->agents_, m->streams_, m->broker_,
                       m->state_.cluster_secret);
  m->hub_->Every(std::chrono::seconds(1), [raw] {
    for (auto& w : raw->broker_.Expire(std::chrono::steady_clock::now())) w.expired();
  });
  m->hub_->Watch([raw](EventRecord const& e) { raw->streams_.OnEvent(e.session_id, e.name); });
  RegisterLogRoutes(*m->api_, *m->sessions_, *m->agents_);
  RegisterUsageRoutes(*m->api_, *m->sessions_);
  RegisterDotfileRoutes(*m->api_);
  RegisterTemplateRoutes(*m->api_);
  RegisterErrorLogRoutes(*m->api_);
  RegisterSessionFileRoutes(*m->api_, *m->sessions_, *m->agents_);
  RegisterTaskRoutes(*m->api_, *m->sessions_, *m->agents_, *m->tasks_, *m->hub_, m->links_);
  if (auto s = m->StartStorage(config); !s.ok()) return s;
  RegisterVFolderRoutes(*m->api_, m->links_, *m->tasks_);
  m->hub_->Every(std::chrono::milliseconds(100), [raw] { raw->agents_->ExpireRequests(); });
  m->hub_->Every(std::chrono::seconds(1), [raw] { raw->agents_->Tick(); });
  m->hub_->Every(std::chrono::minutes(10),
                 [raw] { (void)raw->tasks_->Expire(std::chrono::system_clock::now()); });
  // Rate-limit counts are shared through the database (ADR 6), so managers on one database
  // enforce one limit per keypair.
  m->hub_->Every(std::chrono::milliseconds(200),
                 [raw] { (void)raw->api_->FlushRateLimits(std::chrono::system_clock::now()); });
  m->hub_->Start();
  server::HttpServerOptions http;
  http.address = config.listen_address;
  http.port = config.listen_port;
  http.threads = config.threads;
  http.max_body_bytes = config.max_body_bytes;
  http.body_limit_for = [max = config.max_body_bytes](std::string_view method,
                                                      std::string_view path) {
    return std::max(SessionFileBodyLimit(method, path), max);
  };
  auto* api = m->api_.get();
  http.on_response = [api](server::HttpRequest const& request, int status,
                           std::chrono::nanoseconds took) {
    ObserveRequest(api->metrics(), request, api->RouteOf(request), status, took);
  };
  auto server = server::HttpServer::Start(
      http, [api](std::shared_ptr<server::Exchange> e) { api->Handle(e); });
  if (!server.ok()) return std::move(server).status();
  m->http_ = std::move(*server);
  // This manager's row in `managers` (GET /manager/status lists them), beaten every 5 s.
  std::string host = config.listen_address;
  if (host.empty() || host == "0.0.0.0" || host == "::") {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "localhost";
  }
  m->id_ = host + ":" + std::to_string(m->http_->port());
  ManagerRow self{m->id_, "http://" + m->id_, ManagerVersion(), NowIso(), ""};
  (void)ManagerTable(*m->state_.db).Beat(self);
  m->hub_->Every(std::chrono::seconds(5),
                 [raw, self] { (void)ManagerTable(*raw->state_.db).Beat(self); });
  return m;
}

Status Manager::StartStorage(ManagerConfig const& config) {
  auto const& v = config.vfolders;
  links_.default_host = v.default_host;
  if (v.embedded) {
    storage::StorageOptions o;
    o.name = "local";
    o.volumes = v.volumes;
    if (o.volumes.empty()) {
      std::string root = config.data_dir + "/vfolders";
      ::mkdir(root.c_str(), 0700);
      o.volumes["volume1"] = root + "/volume1";
    }
    for (auto const& [name, dir] : o.volumes) ::mkdir(dir.c_str(), 0755);
    auto secret = LoadOrCreateSecret(config.data_dir + "/storage-secret");
    if (!secret.ok()) return secret.status();
    o.secret = *secret;
    if (auto s = storage::SetFileOwner(v.file_owner, o); !s.ok()) return s;
    if (::geteuid() != 0) o.owner_uid = o.owner_gid = -1;  // only root gives files away
    storage::ProxyListen listen;
    listen.address = v.listen_address;
    listen.client_port = v.listen_port;
    listen.public_url = v.public_url;
    // Its requests, bytes and volumes show on this manager's /metrics.
    auto proxy = storage::StorageProxy::Start(o, listen, api_ ? &api_->metrics() : nullptr);
    if (!proxy.ok()) return proxy.status();
    storage_ = std::move(*proxy);
    auto* service = &storage_->service();
    links_.Add("local", [service](std::string_view op, nlohmann::json const& args) {
      return service->Manage(op, args);
    });
  }
  for (auto const& r : v.proxies) {
    // The proxy made the secret; a missing file is a configuration error, never a new secret.
    std::ifstream in(r.secret_file);
    std::string secret;
    std::getline(in, secret);
    if (secret.size() < 16) {
      return Status(StatusCode::kFailedPrecondition,
                    "storage proxy " + r.name + ": cannot read a secret from " + r.secret_file);
    }
    links_.AddRemote(r.name, r.url, secret);
  }
  return Status();
}

Manager::~Manager() {
  Stop();
  // The API first: its slow-work pool finishes what runs, with everything it uses still here.
  // Sockets held by streams and agent links belong to the server's io_context: release them
  // while it still exists (its threads have stopped), then the server itself.
  api_.reset();
  hub_.reset();
  agents_.reset();
  http_.reset();
  storage_.reset();
}

void Manager::Stop() {
  if (!id_.empty() && state_.db) {
    (void)ManagerTable(*state_.db).Remove(id_);  // gone from /manager/status at once
    id_.clear();
  }
  if (http_) http_->Stop();
  if (storage_) storage_->Stop();
  if (hub_) hub_->Stop();
}

void Manager::Schedule(std::string const& scaling_group) {
  std::unique_lock<std::mutex> lock(pass_mu_);
  auto& q = passes_[scaling_group];
  std::uint64_t const mine = ++q.asked;
  // A pass that began before this call may have read the state without this caller's change:
  // wait for one that begins after it, running it here if none is running.
  while (q.done < mine) {
    if (q.running) {
      pass_cv_.wait(lock);
      continue;
    }
    q.running = true;
    std::uint64_t const covers = q.asked;
    lock.unlock();
    try {
      RunPass(scaling_group);
    } catch (...) {  // a pass that throws must not leave the group's passes stopped for good
      lock.lock();
      q.running = false;
      pass_cv_.notify_all();
      throw;
    }
    lock.lock();
    q.done = covers;
    q.running = false;
    pass_cv_.notify_all();
  }
}

void Manager::RunPass(std::string const& scaling_group) {
  auto start = std::chrono::steady_clock::now();
  auto placed =
      RunSchedulingPass(*state_.db, scaling_group, std::chrono::system_clock::now(), head_wait_);
  if (api_) {
    auto& metrics = api_->metrics();
    server::metrics::Labels group = {{"scaling_group", scaling_group}};
    metrics.Observe(
        "bai_scheduler_pass_seconds", group,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (placed.ok()) {
      metrics.Add("bai_scheduler_placed_total", group, static_cast<double>(*placed));
    } else {
      metrics.Add("bai_scheduler_pass_failures_total", group);
    }
  }
  if (!placed.ok()) {
    server::log::Error("scheduling pass failed",
                       {{"scaling_group", scaling_group}, {"reason", placed.status().message()}});
  } else {
    if (agents_) agents_->Dispatch();  // placed sessions, and destroyed ones, go out at once
    if (*placed > 0 && hub_) hub_->Wake();
  }
}

}  // namespace bai::manager
