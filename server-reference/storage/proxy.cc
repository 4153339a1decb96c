// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/proxy.h"

#include <chrono>

namespace bai::storage {
namespace {

namespace m = server::metrics;

// The proxy's families (docs/operations.md, "Metrics"); the volumes' space is read at each
// scrape.
void DeclareStorageMetrics(m::Registry& metrics, StorageService const* svc) {
  m::DeclareHttpMetrics(metrics);
  metrics.Counter("bai_storage_bytes_total",
                  "File bytes taken by /upload (direction in) and served by /download (out).");
  metrics.Gauge("bai_storage_volume_bytes",
                "Each volume's filesystem: capacity, used and free (for this proxy's user) bytes.");
  metrics.OnCollect([svc](m::Registry& r) {
    for (auto const& [name, dir] : svc->options().volumes) {
      auto space = FilesystemSpace(dir);
      if (!space) continue;
      std::string host = svc->options().name + ":" + name;
      for (auto [kind, bytes] : {std::pair{"capacity", space->total},
                                 std::pair{"used", space->used}, std::pair{"free", space->free}}) {
        r.Set("bai_storage_volume_bytes", {{"volume", host}, {"kind", kind}},
              static_cast<double>(bytes));
      }
    }
  });
}

// File bytes of an answered client request: a tus chunk taken, a download's body.
void CountBytes(m::Registry& metrics, server::HttpRequest const& request,
                server::HttpResponse const& response) {
  if (request.path == "/upload" && request.method == "PATCH" && response.status == 204) {
    metrics.Add("bai_storage_bytes_total", {{"direction", "in"}},
                static_cast<double>(request.body.size()));
  } else if (request.path == "/download" && request.method == "GET" &&
             (response.status == 200 || response.status == 206)) {
    metrics.Add(
        "bai_storage_bytes_total", {{"direction", "out"}},
        static_cast<double>(response.file ? response.file->length
                                          : static_cast<std::int64_t>(response.body.size())));
  }
}

// A streamed chunk's bytes count once it is answered 204, as a buffered one's.
class CountedSink : public server::BodySink {
 public:
  CountedSink(std::unique_ptr<server::BodySink> inner, m::Registry& metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}
  bool Accepts() const override { return inner_->Accepts(); }
  bool Write(std::string_view bytes) override {
    bytes_ += bytes.size();
    return inner_->Write(bytes);
  }
  void Finish(bool whole, std::function<void(server::HttpResponse)> answer) override {
    inner_->Finish(whole, [this, answer = std::move(answer)](server::HttpResponse r) {
      if (r.status == 204) {
        metrics_.Add("bai_storage_bytes_total", {{"direction", "in"}}, static_cast<double>(bytes_));
      }
      answer(std::move(r));
    });
  }

 private:
  std::unique_ptr<server::BodySink> inner_;
  m::Registry& metrics_;
  std::size_t bytes_ = 0;
};

double Seconds(std::chrono::nanoseconds took) {
  return std::chrono::duration<double>(took).count();
}

}  // namespace

StatusOr<std::unique_ptr<StorageProxy>> StorageProxy::Start(StorageOptions options,
                                                            ProxyListen listen,
                                                            server::metrics::Registry* metrics) {
  std::unique_ptr<StorageProxy> p(new StorageProxy());
  auto service = StorageService::Open(std::move(options));
  if (!service.ok()) return service.status();
  p->service_ = std::move(*service);
  auto* svc = p->service_.get();
  m::Registry* reg = metrics != nullptr ? metrics : &p->own_metrics_;
  DeclareStorageMetrics(*reg, svc);
  server::HttpServerOptions client;
  client.address = listen.address;
  client.port = listen.client_port;
  client.threads = listen.threads;
  client.body_limit_for = [svc](std::string_view, std::string_view) {
    return svc->ClientBodyLimit();
  };
  // Chunks without a checksum go to their files as they arrive (StorageService::StreamClient),
  // counted here as the buffered ones are in CountBytes.
  client.body_sink_for = [svc, reg](server::HttpRequest const& head, std::uint64_t length) {
    auto sink = svc->StreamClient(head, length);
    return sink ? std::make_unique<CountedSink>(std::move(sink), *reg) : nullptr;
  };
  client.on_response = [reg](server::HttpRequest const& request, int status,
                             std::chrono::nanoseconds took) {
    bool known = request.path == "/upload" || request.path == "/download";
    m::ObserveHttpRequest(*reg, request.method, known ? request.path : "", status, Seconds(took));
  };
  auto c = server::HttpServer::Start(client, [svc, reg](std::shared_ptr<server::Exchange> e) {
    auto response = svc->HandleClient(e->request());
    CountBytes(*reg, e->request(), response);
    e->Respond(std::move(response));
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
    manager.on_response = [reg](server::HttpRequest const& request, int status,
                                std::chrono::nanoseconds took) {
      std::string_view path = request.path;
      bool known =
          path == "/metrics" || (path.size() > 1 && StorageService::IsOperation(path.substr(1)));
      m::ObserveHttpRequest(*reg, request.method, known ? path : "", status, Seconds(took));
    };
    // GET /metrics answers without the secret, like the manager's: restrict it at the network.
    auto started =
        server::HttpServer::Start(manager, [svc, reg](std::shared_ptr<server::Exchange> e) {
          if (e->request().path == "/metrics" && e->request().method == "GET") {
            server::HttpResponse r;
            r.content_type = "text/plain; version=0.0.4; charset=utf-8";
            r.body = reg->Render();
            e->Respond(std::move(r));
            return;
          }
          e->Respond(svc->HandleManager(e->request()));
        });
    if (!started.ok()) return started.status();
    p->manager_ = std::move(*started);
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
