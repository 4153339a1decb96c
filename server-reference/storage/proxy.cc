// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/proxy.h"

#include <chrono>

namespace bai::storage {

StatusOr<std::unique_ptr<StorageProxy>> StorageProxy::Start(StorageOptions options,
                                                            ProxyListen listen) {
  std::unique_ptr<StorageProxy> p(new StorageProxy());
  auto service = StorageService::Open(std::move(options));
  if (!service.ok()) return service.status();
  p->service_ = std::move(*service);
  auto* svc = p->service_.get();
  server::HttpServerOptions client;
  client.address = listen.address;
  client.port = listen.client_port;
  client.threads = listen.threads;
  client.body_limit_for = [svc](std::string_view, std::string_view) {
    return svc->ClientBodyLimit();
  };
  auto c = server::HttpServer::Start(client, [svc](std::shared_ptr<server::Exchange> e) {
    e->Respond(svc->HandleClient(e->request()));
  });
  if (!c.ok()) return c.status();
  p->client_ = std::move(*c);
  svc->set_client_url(listen.public_url.empty()
                          ? "http://" + listen.address + ":" + std::to_string(p->client_->port())
                          : listen.public_url);
  if (listen.manager_port) {
    server::HttpServerOptions manager;
    manager.address = listen.address;
    manager.port = *listen.manager_port;
    manager.threads = 1;
    auto m = server::HttpServer::Start(manager, [svc](std::shared_ptr<server::Exchange> e) {
      e->Respond(svc->HandleManager(e->request()));
    });
    if (!m.ok()) return m.status();
    p->manager_ = std::move(*m);
  }
  auto* raw = p.get();
  raw->service_->ExpireUploads();
  p->sweeper_ = std::thread([raw] {
    std::unique_lock<std::mutex> lock(raw->mu_);
    while (!raw->cv_.wait_for(lock, std::chrono::minutes(10), [raw] { return raw->stopping_; })) {
      raw->service_->ExpireUploads();
    }
  });
  return p;
}

StorageProxy::~StorageProxy() {
  Stop();
  client_.reset();
  manager_.reset();
}

void StorageProxy::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  if (client_) client_->Stop();
  if (manager_) manager_->Stop();
}

}  // namespace bai::storage
