// SPDX-License-Identifier: Apache-2.0
// The agent's WebSocket client: the only agent file that includes Boost.Beast/Asio.
#include "server-reference/agent/agent.h"

#include "bai/protocol/resource.h"
#include "bai/version.h"

#include "libbai/internal/lws_websocket.h"
#include "libbai/util/url.h"
#include "server-reference/agent/kernel_logs.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/agent/stream_bridge.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/common/wire/agent_protocol.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

namespace bai::agent {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace ap = server::agent_protocol;

protocol::ResourceSlots DiscoverSlots(std::int64_t reserve_bytes) {
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page = ::sysconf(_SC_PAGE_SIZE);
  std::int64_t mem = static_cast<std::int64_t>(pages) * page - reserve_bytes;
  protocol::ResourceSlots slots = {
      {"cpu", protocol::Decimal::FromInteger(std::max(1L, cores))},
      {"mem", protocol::Decimal::FromInteger(std::max<std::int64_t>(0, mem))}};
  return slots;
}

struct Agent::Impl {
  AgentOptions options;
  std::unique_ptr<KernelBackend> backend;
  std::string host;
  std::string port;

  net::io_context ioc;
  std::unique_ptr<websocket::stream<beast::tcp_stream>> ws;
  std::vector<std::unique_ptr<websocket::stream<beast::tcp_stream>>> old_sockets;
  beast::flat_buffer buffer;
  std::deque<std::string> queue;
  bool writing = false;
  net::steady_timer heartbeat{ioc};
  net::steady_timer retry{ioc};
  std::chrono::milliseconds backoff{0};
  std::chrono::milliseconds heartbeat_interval{5000};
  NodeSampler node_stats;  // the node's CPU and memory load, sent with each heartbeat
  std::thread thread;
  std::atomic<bool> stopping{false};
  // Each connection attempt gets a number; handlers of an older attempt do nothing, so a dying
  // socket can neither retry twice nor touch the new connection's queue.
  int generation = 0;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool registered = false;

  // Kernel output: stored, and relayed to the manager in batches (every 20 ms at most).
  std::unique_ptr<KernelLogs> logs;
  std::string temp_logs_dir;  // made (and removed) here when no directory was configured
  std::mutex out_mu;
  std::map<std::string, ap::KernelOutput> pending_output;
  bool flush_scheduled = false;
  net::steady_timer flush_timer{ioc};

  std::mutex streams_mu;  // the data streams open now (cancelled when the agent stops)
  std::set<WebSocketConnection*> streams;
  std::mutex exec_mu;    // execute steps in flight on their own threads
  std::mutex images_mu;  // offered: replaced by a rescan, read by a registration
  std::optional<std::vector<ap::ImageInfo>> offered;  // unset: not read yet
  std::condition_variable exec_cv;
  int executing = 0;

  void SetRegistered(bool value) {
    std::lock_guard<std::mutex> lock(mu);
    registered = value;
    cv.notify_all();
  }

  void Connect() {
    if (stopping) return;
    int gen = ++generation;
    if (ws) {
      beast::error_code ignored;
      beast::get_lowest_layer(*ws).socket().close(ignored);
      old_sockets.push_back(std::move(ws));  // pending handlers may still refer to it
      if (old_sockets.size() > 4) old_sockets.erase(old_sockets.begin());
    }
    ws = std::make_unique<websocket::stream<beast::tcp_stream>>(ioc);
    auto resolver = std::make_shared<tcp::resolver>(ioc);
    resolver->async_resolve(
        host, port,
        [this, resolver, gen](beast::error_code ec, tcp::resolver::results_type results) {
          if (gen != generation) return;
          if (ec) return Retry("resolve: " + ec.message());
          beast::get_lowest_layer(*ws).expires_after(std::chrono::seconds(10));
          beast::get_lowest_layer(*ws).async_connect(
              results, [this, gen](beast::error_code ec2, tcp::endpoint ep) {
                if (gen != generation) return;
                if (ec2) return Retry("connect: " + ec2.message());
                OnConnected(gen, ep.port());
              });
        });
  }

  void OnConnected(int gen, unsigned short port_number) {
    beast::get_lowest_layer(*ws).expires_never();
    // Small messages back to back (PREPARING, then RUNNING) must not wait for delayed ACKs.
    beast::error_code nodelay_ec;
    beast::get_lowest_layer(*ws).socket().set_option(net::ip::tcp::no_delay(true), nodelay_ec);
    ws->set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
    std::string auth = server::agent_protocol::MakeAuth(options.agent_id, options.cluster_secret,
                                                        std::chrono::system_clock::now());
    ws->set_option(websocket::stream_base::decorator([auth](websocket::request_type& req) {
      req.set(server::agent_protocol::kAuthHeader, auth);
      req.set(beast::http::field::user_agent, std::string("bai-agent/") + BAI_VERSION_STRING);
    }));
    ws->async_handshake(host + ":" + std::to_string(port_number), server::agent_protocol::kPath,
                        [this, gen](beast::error_code ec) {
                          if (gen != generation) return;
                          if (ec) return Retry("handshake: " + ec.message());
                          backoff = std::chrono::milliseconds(0);
                          Read();  // the manager's challenge comes first
                        });
  }

  void Retry(std::string const& why) {
    SetRegistered(false);
    heartbeat.cancel();
    queue.clear();
    writing = false;
    if (stopping) return;
    backoff =
        std::min(options.reconnect_max, backoff.count() == 0 ? options.reconnect_min : backoff * 2);
    (void)why;
    retry.expires_after(backoff);
    retry.async_wait([this](beast::error_code ec) {
      if (!ec) Connect();
    });
  }

  // Answers the connection's challenge with everything the manager needs to know.
  void Register(std::string const& nonce) {
    ap::Register m;
    m.version = server::agent_protocol::kVersion;
    m.proof = ap::RegisterProof(options.agent_id, options.cluster_secret, nonce);
    m.agent_version = BAI_VERSION_STRING;
    m.scaling_group = options.scaling_group;
    m.architecture = options.architecture;
    m.slots = options.slots;
    for (auto const& [name, amount] : options.slots) {
      m.slot_types[name] = protocol::KnownSlotType(name).value_or(protocol::SlotType::kCount);
    }
    {
      std::lock_guard<std::mutex> lock(images_mu);
      if (!offered) offered = ReadImages();
      m.images = *offered;
    }
    m.devices = options.devices;
    m.device_policy = options.device_policy;
    m.kernels = backend->Snapshot();
    Write(ap::Encode(ap::ToManager(std::move(m))));
  }

  void Read() {
    ws->async_read(buffer, [this, gen = generation](beast::error_code ec, std::size_t) {
      if (gen != generation) return;
      if (ec) return Retry("read: " + ec.message());
      std::string text = beast::buffers_to_string(buffer.data());
      buffer.consume(buffer.size());
      Handle(text);
      Read();
    });
  }

  void Handle(std::string const& text) {
    auto message = ap::DecodeToAgent(text);
    if (!message.ok()) {
      std::fprintf(stderr, "bai-agent: refused a manager message: %s\n",
                   message.status().message().c_str());
      Write(ap::Encode(ap::ToManager(ap::ErrorReport{message.status().message()})));
      return;
    }
    std::visit([this](auto const& m) { On(m); }, *message);
  }

  void On(ap::Challenge const& m) { Register(m.nonce); }

  void On(ap::Registered const& m) {
    heartbeat_interval = std::chrono::milliseconds(m.heartbeat_interval_ms);
    // Finished kernels listed in the registration are now known to the manager.
    for (auto const& k : backend->Snapshot()) {
      if (k.Ended()) backend->Acknowledge(k.session_id);
    }
    SetRegistered(true);
    Heartbeat();
  }

  void On(ap::CreateKernel const& m) { backend->Create(m); }

  void On(ap::DestroyKernel const& m) {
    // A kernel this agent does not run (it failed to start and was reported, or ended while the
    // manager was away) is already gone: say so, or its session waits in TERMINATING for ever.
    bool live = false;
    for (auto const& k : backend->Snapshot()) {
      if (k.session_id == m.session_id && !k.Ended()) live = true;
    }
    if (!live) {
      KernelReport gone;
      gone.session_id = m.session_id;
      gone.status = protocol::KernelStatus::kTerminated;
      gone.reason = m.reason.empty() ? "user-requested" : m.reason;
      Report(gone);
      return;
    }
    backend->Destroy(m.session_id, m.reason);
  }

  void On(ap::Execute const& m) {
    AnswerLater(m.request_id, [this, m] { return backend->Execute(m); });
  }

  void On(ap::CommitKernel const& m) { Commit(m); }

  std::vector<ap::ImageInfo> ReadImages() const {
    if (options.list_images) return options.list_images();
    std::vector<ap::ImageInfo> out;
    for (auto const& name : options.images) out.push_back({name, {}, 0});
    return out;
  }

  void On(ap::RescanImages const& m) {
    AnswerLater(m.request_id, [this] {
      ap::ImagesReply reply;
      reply.images = ReadImages();
      {
        std::lock_guard<std::mutex> lock(images_mu);
        offered = reply.images;  // what the next registration offers
      }
      return ap::EncodeReply(reply);
    });
  }

  void On(ap::ReadLogs const& m) {
    AnswerLater(m.request_id, [this, m] {
      auto r = logs->Read(m.session_id, m.offset, m.limit);
      if (r.ok()) return ap::EncodeReply(*r);
      ap::LogsReply refused;
      refused.msg = r.status().message();
      return ap::EncodeReply(refused);
    });
  }

  void On(ap::KernelFiles const& m) {
    AnswerLater(m.request_id, [this, m] {
      server::runner_protocol::FileRequest request{m.request_id, m.action, m.path, m.data, m.limit};
      return server::runner_protocol::EncodeFileResult(backend->Files(m.session_id, request));
    });
  }

  void On(ap::RestartKernel const& m) {
    AnswerLater(m.request_id, [this, session = m.session_id] {
      Status s = backend->Restart(session);
      return ap::EncodeReply(ap::RestartReply{s.ok(), s.message()});
    });
  }

  // A data stream (docs/agent-protocol.md, "Data streams"): the kernel's stream socket, then
  // the WebSocket to the manager that pairs with the client's; bridged on a thread of its own.
  // A refusal by the kernel still opens the WebSocket, to close it with the refusal's code.
  void On(ap::OpenStream const& m) {
    RunDetached([this, m] {
      server::runner_protocol::StreamOpen open;
      open.kind = m.kind;
      open.command = m.command;
      open.rows = m.rows;
      open.cols = m.cols;
      open.port = m.port;
      auto fd = backend->OpenStream(m.session_id, open);
      auto endpoint = internal::ParseEndpoint(options.manager_url);
      if (!endpoint.ok()) {
        if (fd.ok()) close(*fd);
        return;
      }
      TransportRequest r;
      r.method = "GET";
      r.origin = endpoint->origin;
      r.host = endpoint->host;
      r.target = endpoint->base_path + ap::kStreamPath + m.stream_id;
      r.sign = false;
      r.headers = {{ap::kAuthHeader, ap::MakeAuth(options.agent_id, options.cluster_secret,
                                                  std::chrono::system_clock::now())},
                   {ap::kStreamProofHeader,
                    ap::StreamProof(options.agent_id, options.cluster_secret, m.stream_id)}};
      auto opened = internal::OpenLwsWebSocket(r, {});
      if (!opened.ok()) {
        std::fprintf(stderr, "bai-agent: cannot open stream %s: %s\n", m.stream_id.c_str(),
                     opened.status().message().c_str());
        if (fd.ok()) close(*fd);
        return;
      }
      auto& socket = **opened;
      {
        std::lock_guard<std::mutex> lock(streams_mu);
        if (stopping) {
          if (fd.ok()) close(*fd);
          return;
        }
        streams.insert(&socket);
      }
      if (fd.ok()) {
        BridgeStream(*fd, socket, m.kind == "pty");
      } else {
        socket.Close(fd.status().code() == StatusCode::kUnavailable ? 1013 : 1011,
                     fd.status().message().substr(0, 120));
        for (int i = 0; i < 50; ++i) {
          if (socket.Receive(std::chrono::milliseconds(100)).kind ==
              WebSocketEvent::Kind::kClosed) {
            break;
          }
        }
      }
      std::lock_guard<std::mutex> lock(streams_mu);
      streams.erase(&socket);
    });
  }

  void On(ap::StartService const& m) {
    AnswerLater(m.request_id, [this, m] {
      server::runner_protocol::StreamOpen open;
      open.kind = m.stop ? "service-stop" : "service";
      open.port = m.port;
      open.name = m.name;
      open.arguments = m.arguments;
      open.envs = m.envs;
      std::string status;
      auto fd = backend->OpenStream(m.session_id, open, &status);
      nlohmann::json result;
      if (fd.ok()) {
        close(*fd);
        result = {{"status", status.empty() ? "started" : status}};
      } else {
        result = {{"status", "failed"}, {"error", fd.status().message()}};
      }
      return result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    });
  }

  // Ends every open data stream (the agent is stopping).
  void CancelStreams() {
    std::lock_guard<std::mutex> lock(streams_mu);
    for (auto* s : streams) s->Cancel();
  }

  void On(ap::ErrorReport const& m) {
    std::fprintf(stderr, "bai-agent: the manager could not use a message: %s\n", m.msg.c_str());
  }

  // Answers a manager request from its own thread (an execute step may wait for output up to
  // the backend's flush timeout; a restart for a whole container start); the reply is written
  // from the I/O thread. Stop() waits for these threads.
  void AnswerLater(std::string request_id, std::function<std::string()> work) {
    RunDetached([this, request_id = std::move(request_id), work = std::move(work)] {
      PostWrite(ap::Encode(ap::ToManager(ap::Response{request_id, work()})));
    });
  }

  // Runs `work` on a thread of its own; Stop() waits for every such thread.
  void RunDetached(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(exec_mu);
    ++executing;
    std::thread([this, work = std::move(work)] {
      work();
      std::lock_guard<std::mutex> done(exec_mu);
      --executing;
      exec_cv.notify_all();
    }).detach();
  }

  // Writes `text` from the I/O thread (from any thread; dropped once the agent stops).
  void PostWrite(std::string text) {
    if (!stopping) net::post(ioc, [this, text = std::move(text)] { Write(text); });
  }

  // A commit answers at once (where the file goes, or why not) and then runs as a background
  // task: `bgtask` messages report it ongoing and then done or failed.
  void Commit(ap::CommitKernel const& m) {
    auto path = backend->CommitTarget(m.session_id, m.filename, m.directory);
    ap::CommitReply reply;
    reply.ok = path.ok();
    if (path.ok()) {
      reply.path = *path;
    } else {
      reply.msg = path.status().message();
      // The caller's mistake (a taken or unusable name, no running kernel) or ours.
      auto code = path.status().code();
      reply.client_error = code == StatusCode::kAlreadyExists ||
                           code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound;
    }
    Write(ap::Encode(ap::ToManager(ap::Response{m.request_id, ap::EncodeReply(reply)})));
    if (!path.ok()) return;
    auto report = [this, task = m.task_id](protocol::TaskStatus status, std::string message,
                                           int current) {
      PostWrite(
          ap::Encode(ap::ToManager(ap::TaskReport{task, status, std::move(message), current, 1})));
    };
    // Into a folder, the task's words name the file, not the volume's path on this host.
    std::string shown = m.directory.empty() ? *path : m.filename + " in the folder";
    RunDetached([this, session = m.session_id, target = *path, shown, report] {
      using protocol::TaskStatus;
      report(TaskStatus::kOngoing, "archiving the kernel's files", 0);
      Status s = backend->Commit(session, target);
      if (s.ok()) {
        report(TaskStatus::kDone, "committed to " + shown, 1);
      } else {
        report(TaskStatus::kFailed, s.message(), 0);
      }
    });
  }

  void Heartbeat() {
    Write(ap::Encode(
        ap::ToManager(ap::Heartbeat{options.slots, node_stats.Sample(), backend->Usage()})));
    heartbeat.expires_after(heartbeat_interval);
    heartbeat.async_wait([this](beast::error_code ec) {
      if (!ec) Heartbeat();
    });
  }

  // Runs on the io thread.
  void Write(std::string text) {
    if (!ws || !ws->is_open()) return;
    queue.push_back(std::move(text));
    if (!writing) DoWrite();
  }

  void DoWrite() {
    writing = true;
    // Framed messages (a header line, then raw bytes) go as binary frames; JSON as text.
    ws->text(queue.front().find('\n') == std::string::npos);
    ws->async_write(net::buffer(queue.front()),
                    [this, gen = generation](beast::error_code ec, std::size_t) {
                      if (gen != generation) return;
                      if (ec) {
                        writing = false;
                        return;  // the read side notices and reconnects
                      }
                      if (!queue.empty()) queue.pop_front();
                      if (queue.empty()) {
                        writing = false;
                      } else {
                        DoWrite();
                      }
                    });
  }

  void Report(KernelReport const& r) {
    if (r.Ended()) logs->MarkEnded(r.session_id);
    net::post(ioc, [this, text = ap::Encode(ap::ToManager(r)), session = r.session_id,
                    ended = r.Ended()] {
      bool connected;
      {
        std::lock_guard<std::mutex> lock(mu);
        connected = registered;
      }
      if (!connected) return;  // reported with the next registration instead
      FlushOutput(session);    // the kernel's last output goes before its end
      Write(text);
      if (ended) backend->Acknowledge(session);
    });
  }

  // Any thread: stores the output and queues it for the manager.
  void OnOutput(std::string const& session, std::string const& stream, std::string const& data) {
    std::int64_t offset = logs->Append(session, stream, data);
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(out_mu);
      auto& p = pending_output[session];
      if (p.chunks.empty()) {
        p.session_id = session;
        p.offset = offset;
      }
      if (!p.chunks.empty() && p.chunks.back().stream == stream) {
        p.chunks.back().data += data;
      } else {
        p.chunks.push_back({stream, data});
      }
      schedule = !flush_scheduled;
      flush_scheduled = true;
    }
    if (schedule && !stopping) {
      net::post(ioc, [this] {
        flush_timer.expires_after(std::chrono::milliseconds(20));
        flush_timer.async_wait([this](beast::error_code ec) {
          if (!ec) FlushOutput("");
        });
      });
    }
  }

  // I/O thread: sends the queued output (of `only`, or of every kernel), in messages of at most
  // 256 KiB of output each. Nothing is sent while unregistered: followers read the stored log.
  void FlushOutput(std::string const& only) {
    std::map<std::string, ap::KernelOutput> batch;
    {
      std::lock_guard<std::mutex> lock(out_mu);
      if (only.empty()) {
        batch.swap(pending_output);
        flush_scheduled = false;
      } else if (auto it = pending_output.find(only); it != pending_output.end()) {
        batch.emplace(only, std::move(it->second));
        pending_output.erase(it);
      }
    }
    bool connected;
    {
      std::lock_guard<std::mutex> lock(mu);
      connected = registered;
    }
    if (!connected) return;
    constexpr std::size_t kMaxMessage = 256 << 10;
    for (auto& [session, out] : batch) {
      ap::KernelOutput part{session, out.offset, {}};
      std::size_t size = 0;
      for (auto& chunk : out.chunks) {
        std::size_t at = 0;
        do {
          std::size_t take = std::min(chunk.data.size() - at, kMaxMessage - size);
          part.chunks.push_back({chunk.stream, chunk.data.substr(at, take)});
          at += take;
          size += take;
          if (size >= kMaxMessage) {
            std::int64_t next = part.offset;
            for (auto const& c : part.chunks) {
              if (c.stream != "notice") next += static_cast<std::int64_t>(c.data.size());
            }
            Write(ap::Encode(ap::ToManager(part)));
            part = ap::KernelOutput{session, next, {}};
            size = 0;
          }
        } while (at < chunk.data.size());
      }
      if (!part.chunks.empty()) Write(ap::Encode(ap::ToManager(part)));
    }
  }
};

Agent::Agent(AgentOptions options, std::unique_ptr<KernelBackend> backend)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->backend = std::move(backend);
  std::string url = impl_->options.manager_url;
  if (url.rfind("http://", 0) == 0) url = url.substr(7);
  while (!url.empty() && url.back() == '/') url.pop_back();
  auto colon = url.rfind(':');
  impl_->host = colon == std::string::npos ? url : url.substr(0, colon);
  impl_->port = colon == std::string::npos ? "80" : url.substr(colon + 1);
  auto& o = impl_->options;
  if (o.logs_dir.empty()) {
    char tmpl[] = "/tmp/bai-agent-logs-XXXXXX";
    if (char* made = ::mkdtemp(tmpl)) impl_->temp_logs_dir = o.logs_dir = made;
  }
  impl_->logs = std::make_unique<KernelLogs>(o.logs_dir, o.max_log_bytes);
  impl_->backend->SetReporter([impl = impl_.get()](KernelReport const& r) { impl->Report(r); });
  impl_->backend->SetOutputSink(
      [impl = impl_.get()](std::string const& session, std::string const& stream,
                           std::string const& data) { impl->OnOutput(session, stream, data); });
}

Agent::~Agent() {
  Stop();
  if (!impl_->temp_logs_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(impl_->temp_logs_dir, ec);
  }
}

void Agent::Start() {
  net::post(impl_->ioc, [impl = impl_.get()] { impl->Connect(); });
  impl_->thread = std::thread([impl = impl_.get()] {
    auto guard = net::make_work_guard(impl->ioc);
    impl->ioc.run();
  });
}

void Agent::Stop() {
  if (impl_->stopping.exchange(true)) return;
  impl_->backend->SetReporter({});
  impl_->backend->SetOutputSink({});
  net::post(impl_->ioc, [impl = impl_.get()] {
    impl->heartbeat.cancel();
    impl->flush_timer.cancel();
    impl->retry.cancel();
    if (impl->ws) {
      beast::error_code ec;
      beast::get_lowest_layer(*impl->ws).socket().close(ec);
    }
    impl->ioc.stop();
  });
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->SetRegistered(false);
  // Execute steps still running hold the backend; they end within its flush timeout. Data
  // streams would last as long as their users: they are ended.
  {
    std::lock_guard<std::mutex> lock(impl_->streams_mu);  // no new stream after this
  }
  impl_->CancelStreams();
  std::unique_lock<std::mutex> lock(impl_->exec_mu);
  impl_->exec_cv.wait(lock, [this] { return impl_->executing == 0; });
}

bool Agent::Registered() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->registered;
}

bool Agent::WaitRegistered(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [this] { return impl_->registered; });
}

}  // namespace bai::agent
