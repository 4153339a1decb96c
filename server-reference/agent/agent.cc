// SPDX-License-Identifier: Apache-2.0
// The agent's WebSocket client: the only agent file that includes Boost.Beast/Asio.
#include "server-reference/agent/agent.h"

#include "bai/protocol/resource.h"
#include "bai/version.h"

#include "libbai/internal/block_websocket.h"
#include "libbai/internal/lws_websocket.h"
#include "libbai/util/url.h"
#include "server-reference/agent/kernel_logs.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/agent/stream_bridge.h"
#include "server-reference/common/log/log.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/common/wire/agent_protocol.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
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

std::vector<std::string> ManagerUrls(std::string const& list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t comma = std::min(list.find(',', at), list.size());
    std::string url = list.substr(at, comma - at);
    while (!url.empty() && (url.back() == '/' || url.back() == ' ')) url.pop_back();
    while (!url.empty() && url.front() == ' ') url.erase(0, 1);
    if (!url.empty() && std::find(out.begin(), out.end(), url) == out.end()) out.push_back(url);
    at = comma + 1;
  }
  return out;
}

struct Agent::Impl {
  AgentOptions options;
  std::unique_ptr<KernelBackend> backend;

  net::io_context ioc;

  // One control channel per manager (docs/agent-protocol.md, "Several managers"). Everything
  // here but `url`, `host` and `port` is touched on the I/O thread only.
  struct Link {
    explicit Link(net::io_context& ioc) : retry(ioc) {}
    int index = 0;
    std::string url;  // http://HOST:PORT, as given
    std::string host;
    std::string port;
    std::unique_ptr<websocket::stream<beast::tcp_stream>> ws;
    std::vector<std::unique_ptr<websocket::stream<beast::tcp_stream>>> old_sockets;
    beast::flat_buffer buffer;
    std::deque<std::string> queue;
    bool writing = false;
    net::steady_timer retry;
    std::chrono::milliseconds backoff{0};
    // Each connection attempt gets a number; handlers of an older attempt do nothing, so a
    // dying socket can neither retry twice nor touch the new connection's queue.
    int generation = 0;
    std::string nonce;           // this connection's challenge (a link made primary re-registers)
    bool sent_register = false;  // messages may follow the registration on this connection
    bool registered = false;     // the manager answered it
  };
  std::vector<std::unique_ptr<Link>> links;
  // The link whose registration claimed primary (-1: none now): kernel states, heartbeats and
  // task reports go through it.
  int primary = -1;
  net::steady_timer heartbeat{ioc};
  std::chrono::milliseconds heartbeat_interval{5000};
  NodeSampler node_stats;  // the node's CPU and memory load, sent with each heartbeat
  std::thread thread;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool registered = false;  // the primary link is registered
  int links_registered = 0;
  std::vector<Agent::LinkState> link_states;  // for Links()

  // Kernel output: stored, and relayed to the manager in batches (every 20 ms at most).
  std::unique_ptr<KernelLogs> logs;
  std::string temp_logs_dir;  // made (and removed) here when no directory was configured
  std::mutex out_mu;
  std::map<std::string, ap::KernelOutput> pending_output;
  bool flush_scheduled = false;
  net::steady_timer flush_timer{ioc};

  std::mutex streams_mu;  // the data streams open now (cancelled when the agent stops)
  std::map<WebSocketConnection*, std::string> streams;  ///< each with its session's id
  std::mutex exec_mu;    // execute steps in flight on their own threads
  std::mutex images_mu;  // offered: replaced by a rescan, read by a registration
  std::optional<std::vector<ap::ImageInfo>> offered;  // unset: not read yet
  std::condition_variable exec_cv;
  int executing = 0;

  // I/O thread: publishes the registration state for Registered() and WaitRegistered().
  void PublishRegistered() {
    int count = 0;
    std::vector<Agent::LinkState> states;
    for (auto const& l : links) {
      count += l->registered ? 1 : 0;
      states.push_back({l->url, l->registered, l->registered && l->index == primary});
    }
    std::lock_guard<std::mutex> lock(mu);
    registered = primary >= 0 && links[static_cast<std::size_t>(primary)]->registered;
    links_registered = count;
    link_states = std::move(states);
    cv.notify_all();
  }

  Link* Primary() {
    if (primary < 0) return nullptr;
    Link* l = links[static_cast<std::size_t>(primary)].get();
    return l->sent_register ? l : nullptr;
  }

  void Connect(Link& link) {
    if (stopping) return;
    int gen = ++link.generation;
    link.sent_register = link.registered = false;
    if (link.ws) {
      beast::error_code ignored;
      beast::get_lowest_layer(*link.ws).socket().close(ignored);
      link.old_sockets.push_back(std::move(link.ws));  // pending handlers may refer to it
      if (link.old_sockets.size() > 4) link.old_sockets.erase(link.old_sockets.begin());
    }
    link.ws = std::make_unique<websocket::stream<beast::tcp_stream>>(ioc);
    auto resolver = std::make_shared<tcp::resolver>(ioc);
    resolver->async_resolve(
        link.host, link.port,
        [this, &link, resolver, gen](beast::error_code ec, tcp::resolver::results_type results) {
          if (gen != link.generation) return;
          if (ec) return Retry(link, "resolve: " + ec.message());
          beast::get_lowest_layer(*link.ws).expires_after(std::chrono::seconds(10));
          beast::get_lowest_layer(*link.ws).async_connect(
              results, [this, &link, gen](beast::error_code ec2, tcp::endpoint ep) {
                if (gen != link.generation) return;
                if (ec2) return Retry(link, "connect: " + ec2.message());
                OnConnected(link, ep.port());
              });
        });
  }

  void OnConnected(Link& link, unsigned short port_number) {
    auto& ws = *link.ws;
    beast::get_lowest_layer(ws).expires_never();
    // Small messages back to back (PREPARING, then RUNNING) must not wait for delayed ACKs.
    beast::error_code nodelay_ec;
    beast::get_lowest_layer(ws).socket().set_option(net::ip::tcp::no_delay(true), nodelay_ec);
    // A manager that stops answering (its host gone, the network cut: no reset arrives) is
    // noticed: pings at half of link_timeout, and nothing heard for link_timeout closes the
    // link, so another link becomes primary.
    auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::client);
    timeouts.idle_timeout = options.link_timeout;
    timeouts.keep_alive_pings = true;
    ws.set_option(timeouts);
    std::string auth = server::agent_protocol::MakeAuth(options.agent_id, options.cluster_secret,
                                                        std::chrono::system_clock::now());
    ws.set_option(websocket::stream_base::decorator([auth](websocket::request_type& req) {
      req.set(server::agent_protocol::kAuthHeader, auth);
      req.set(beast::http::field::user_agent, std::string("bai-agent/") + BAI_VERSION_STRING);
    }));
    ws.async_handshake(link.host + ":" + std::to_string(port_number), server::agent_protocol::kPath,
                       [this, &link, gen = link.generation](beast::error_code ec) {
                         if (gen != link.generation) return;
                         if (ec) return Retry(link, "handshake: " + ec.message());
                         link.backoff = std::chrono::milliseconds(0);
                         Read(link);  // the manager's challenge comes first
                       });
  }

  void Retry(Link& link, std::string const& why) {
    if (!stopping) {
      // A registered link lost is news; the attempts that follow, until one works, are not.
      server::log::Write(
          link.registered ? server::log::Level::kWarn : server::log::Level::kDebug,
          link.registered ? "manager link lost" : "manager link attempt failed",
          {{"manager", link.url}, {"primary", primary == link.index}, {"reason", why}});
    }
    ++link.generation;  // whatever this connection still had in flight does nothing now
    link.sent_register = link.registered = false;
    link.queue.clear();
    link.writing = false;
    if (primary == link.index) {
      // The primary link is gone: another registered link takes over, registering again so
      // that its manager reconciles the kernels (their states sent meanwhile may be lost).
      primary = -1;
      heartbeat.cancel();
      for (auto& other : links) {
        if (other->registered && !stopping) {
          Register(*other);
          break;
        }
      }
    }
    PublishRegistered();
    if (stopping) return;
    link.backoff = std::min(options.reconnect_max,
                            link.backoff.count() == 0 ? options.reconnect_min : link.backoff * 2);
    link.retry.expires_after(link.backoff);
    link.retry.async_wait([this, &link](beast::error_code ec) {
      if (!ec) Connect(link);
    });
  }

  // Answers the connection's challenge with everything the manager needs to know. The first
  // link to register while none is primary becomes the primary.
  void Register(Link& link) {
    ap::Register m;
    m.version = server::agent_protocol::kVersion;
    m.proof = ap::RegisterProof(options.agent_id, options.cluster_secret, link.nonce);
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
    m.primary = primary < 0 || primary == link.index;
    if (m.primary) primary = link.index;
    link.sent_register = true;
    Write(link, ap::Encode(ap::ToManager(std::move(m))));
  }

  void Read(Link& link) {
    link.ws->async_read(link.buffer,
                        [this, &link, gen = link.generation](beast::error_code ec, std::size_t) {
                          if (gen != link.generation) return;
                          if (ec) return Retry(link, "read: " + ec.message());
                          std::string text = beast::buffers_to_string(link.buffer.data());
                          link.buffer.consume(link.buffer.size());
                          Handle(link, text);
                          if (gen == link.generation) Read(link);
                        });
  }

  void Handle(Link& link, std::string const& text) {
    auto message = ap::DecodeToAgent(text);
    if (!message.ok()) {
      server::log::Warn("refused a manager's message",
                        {{"manager", link.url}, {"reason", message.status().message()}});
      Write(link, ap::Encode(ap::ToManager(ap::ErrorReport{message.status().message()})));
      return;
    }
    std::visit([this, &link](auto const& m) { On(link, m); }, *message);
  }

  void On(Link& link, ap::Challenge const& m) {
    link.nonce = m.nonce;
    Register(link);
  }

  void On(Link& link, ap::Registered const& m) {
    link.registered = true;
    server::log::Info("registered with a manager",
                      {{"manager", link.url}, {"primary", primary == link.index}});
    if (primary == link.index) {
      heartbeat_interval = std::chrono::milliseconds(m.heartbeat_interval_ms);
      // Finished kernels listed in the registration are now known to the manager.
      for (auto const& k : backend->Snapshot()) {
        if (k.Ended()) backend->Acknowledge(k.session_id);
      }
      heartbeat.cancel();
      Heartbeat();
    }
    PublishRegistered();
  }

  void On(Link&, ap::CreateKernel const& m) { backend->Create(m); }  // a repeat: no-op

  void On(Link&, ap::DestroyKernel const& m) {
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
    // The session's terminals and tunnels hear that it ended before its processes are killed
    // (else a shell killed first reported its signal as an ordinary exit, or not, by timing).
    {
      std::lock_guard<std::mutex> lock(streams_mu);
      for (auto& [s, session] : streams) {
        if (session == m.session_id) s->Close(1001, "the session has ended");
      }
    }
    backend->Destroy(m.session_id, m.reason);
  }

  void On(Link& link, ap::Execute const& m) {
    AnswerLater(link, m.request_id, [this, m] { return backend->Execute(m); });
  }

  void On(Link& link, ap::CommitKernel const& m) { Commit(link, m); }

  std::vector<ap::ImageInfo> ReadImages() const {
    if (options.list_images) return options.list_images();
    std::vector<ap::ImageInfo> out;
    for (auto const& name : options.images) out.push_back({name, {}, 0});
    return out;
  }

  void On(Link& link, ap::RescanImages const& m) {
    AnswerLater(link, m.request_id, [this] {
      ap::ImagesReply reply;
      reply.images = ReadImages();
      {
        std::lock_guard<std::mutex> lock(images_mu);
        offered = reply.images;  // what the next registration offers
      }
      return ap::EncodeReply(reply);
    });
  }

  void On(Link& link, ap::PurgeImages const& m) {
    AnswerLater(link, m.request_id, [this, m] {
      ap::PurgeReply reply;
      if (options.purge_images) {
        reply = options.purge_images(m);
      } else {
        for (auto const& i : m.images) reply.errors.push_back(i + ": this agent keeps no images");
      }
      reply.images = ReadImages();
      {
        std::lock_guard<std::mutex> lock(images_mu);
        offered = reply.images;
      }
      return ap::EncodeReply(reply);
    });
  }

  void On(Link& link, ap::ReadLogs const& m) {
    AnswerLater(link, m.request_id, [this, m] {
      auto r = logs->Read(m.session_id, m.offset, m.limit);
      if (r.ok()) return ap::EncodeReply(*r);
      ap::LogsReply refused;
      refused.msg = r.status().message();
      return ap::EncodeReply(refused);
    });
  }

  void On(Link& link, ap::KernelFiles const& m) {
    AnswerLater(link, m.request_id, [this, m] {
      server::runner_protocol::FileRequest request{m.request_id, m.action, m.path, m.data, m.limit};
      return server::runner_protocol::EncodeFileResult(backend->Files(m.session_id, request));
    });
  }

  void On(Link& link, ap::RestartKernel const& m) {
    AnswerLater(link, m.request_id, [this, session = m.session_id] {
      Status s = backend->Restart(session);
      return ap::EncodeReply(ap::RestartReply{s.ok(), s.message()});
    });
  }

  // A data stream (docs/agent-protocol.md, "Data streams"): the kernel's stream socket, then
  // the WebSocket to the manager that pairs with the client's; bridged on a thread of its own.
  // A refusal by the kernel still opens the WebSocket, to close it with the refusal's code.
  void On(Link& link, ap::OpenStream const& m) {
    // The stream is dialled back to the manager that asked for it.
    RunDetached([this, m, url = link.url] {
      server::runner_protocol::StreamOpen open;
      open.kind = m.kind;
      open.command = m.command;
      open.rows = m.rows;
      open.cols = m.cols;
      open.port = m.port;
      open.pass_socket = m.kind == "tcp";  // the kernel's connection itself, not a relay of it
      auto fd = backend->OpenStream(m.session_id, open);
      auto endpoint = internal::ParseEndpoint(url);
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
      // A service port's bytes: block frames (libbai's block_websocket.h) where the manager
      // agrees; terminals and exec keep libwebsockets' frames.
      if (m.kind == "tcp")
        r.headers.emplace_back(internal::kBlockTunnelHeader, internal::kBlockTunnelValue);
      auto opened = internal::OpenLwsWebSocket(r, {});
      if (!opened.ok()) {
        server::log::Warn("cannot open a data stream",
                          {{"stream", m.stream_id}, {"reason", opened.status().message()}});
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
        streams.emplace(&socket, m.session_id);
      }
      if (fd.ok()) {
        BridgeStream(*fd, socket, /*line_mode=*/m.kind == "pty" || m.kind == "exec");
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

  void On(Link& link, ap::StartService const& m) {
    AnswerLater(link, m.request_id, [this, m] {
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
    for (auto& [s, session] : streams) s->Cancel();
  }

  void On(Link&, ap::ErrorReport const& m) {
    server::log::Warn("a manager could not use a message", {{"reason", m.msg}});
  }

  // Answers a manager request from its own thread (an execute step may wait for output up to
  // the backend's flush timeout; a restart for a whole container start); the reply is written
  // from the I/O thread. Stop() waits for these threads.
  void AnswerLater(Link& link, std::string request_id, std::function<std::string()> work) {
    RunDetached([this, &link, gen = link.generation, request_id = std::move(request_id),
                 work = std::move(work)] {
      PostWrite(&link, gen, ap::Encode(ap::ToManager(ap::Response{request_id, work()})));
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

  // Writes `text` from the I/O thread (from any thread; dropped once the agent stops): on
  // `link` while its connection `gen` lasts (an answer goes to the manager that asked), or
  // (null) on the primary link.
  void PostWrite(Link* link, int gen, std::string text) {
    if (stopping) return;
    net::post(ioc, [this, link, gen, text = std::move(text)] {
      if (!link) {
        if (Link* p = Primary()) Write(*p, text);
      } else if (link->generation == gen) {
        Write(*link, text);
      }
    });
  }

  // A commit answers at once (where the file goes, or why not) and then runs as a background
  // task: `bgtask` messages report it ongoing and then done or failed.
  void Commit(Link& link, ap::CommitKernel const& m) {
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
    Write(link, ap::Encode(ap::ToManager(ap::Response{m.request_id, ap::EncodeReply(reply)})));
    if (!path.ok()) return;
    // Progress goes through the primary link: any manager records it, and it outlives the
    // asking manager.
    auto report = [this, task = m.task_id](protocol::TaskStatus status, std::string message,
                                           int current) {
      PostWrite(
          nullptr, 0,
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
    if (Link* p = Primary()) {
      Write(*p, ap::Encode(ap::ToManager(
                    ap::Heartbeat{options.slots, node_stats.Sample(), backend->Usage()})));
    }
    heartbeat.expires_after(heartbeat_interval);
    heartbeat.async_wait([this](beast::error_code ec) {
      if (!ec) Heartbeat();
    });
  }

  // Runs on the io thread.
  void Write(Link& link, std::string text) {
    if (!link.ws || !link.ws->is_open()) return;
    link.queue.push_back(std::move(text));
    if (!link.writing) DoWrite(link);
  }

  void DoWrite(Link& link) {
    link.writing = true;
    // Framed messages (a header line, then raw bytes) go as binary frames; JSON as text.
    link.ws->text(link.queue.front().find('\n') == std::string::npos);
    link.ws->async_write(net::buffer(link.queue.front()),
                         [this, &link, gen = link.generation](beast::error_code ec, std::size_t) {
                           if (gen != link.generation) return;
                           if (ec) {
                             link.writing = false;
                             return;  // the read side notices and reconnects
                           }
                           if (!link.queue.empty()) link.queue.pop_front();
                           if (link.queue.empty()) {
                             link.writing = false;
                           } else {
                             DoWrite(link);
                           }
                         });
  }

  void Report(KernelReport const& r) {
    if (r.Ended()) logs->MarkEnded(r.session_id);
    net::post(ioc, [this, text = ap::Encode(ap::ToManager(r)), session = r.session_id,
                    ended = r.Ended()] {
      // Through the primary link once its registration has gone (the manager reads them in
      // order); with none, the next registration reports it instead.
      Link* p = Primary();
      if (!p) return;
      FlushOutput(session);  // the kernel's last output goes before its end
      Write(*p, text);
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
    // To every manager linked (a follower of the session's output may be at any of them).
    std::vector<Link*> to;
    for (auto& l : links) {
      if (l->sent_register) to.push_back(l.get());
    }
    if (to.empty()) return;
    auto send = [this, &to](ap::KernelOutput const& part) {
      std::string text = ap::Encode(ap::ToManager(part));
      for (Link* l : to) Write(*l, text);
    };
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
            send(part);
            part = ap::KernelOutput{session, next, {}};
            size = 0;
          }
        } while (at < chunk.data.size());
      }
      if (!part.chunks.empty()) send(part);
    }
  }
};

Agent::Agent(AgentOptions options, std::unique_ptr<KernelBackend> backend)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->backend = std::move(backend);
  for (auto const& given : ManagerUrls(impl_->options.manager_url)) {
    auto link = std::make_unique<Impl::Link>(impl_->ioc);
    link->index = static_cast<int>(impl_->links.size());
    link->url = given;
    std::string url = given;
    if (url.rfind("http://", 0) == 0) url = url.substr(7);
    auto colon = url.rfind(':');
    link->host = colon == std::string::npos ? url : url.substr(0, colon);
    link->port = colon == std::string::npos ? "80" : url.substr(colon + 1);
    impl_->link_states.push_back({link->url, false, false});
    impl_->links.push_back(std::move(link));
  }
  auto& o = impl_->options;
  if (o.logs_dir.empty()) {
    char tmpl[] = "/tmp/bai-agent-logs-XXXXXX";
    if (char* made = ::mkdtemp(tmpl)) impl_->temp_logs_dir = o.logs_dir = made;
  }
  impl_->logs = std::make_unique<KernelLogs>(o.logs_dir, o.max_log_bytes, o.log_budget_bytes);
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
  net::post(impl_->ioc, [impl = impl_.get()] {
    for (auto& link : impl->links) impl->Connect(*link);
  });
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
    for (auto& link : impl->links) {
      link->retry.cancel();
      if (link->ws) {
        beast::error_code ec;
        beast::get_lowest_layer(*link->ws).socket().close(ec);
      }
    }
    impl->ioc.stop();
  });
  if (impl_->thread.joinable()) impl_->thread.join();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->registered = false;
    impl_->links_registered = 0;
    for (auto& l : impl_->link_states) l.registered = l.primary = false;
    impl_->cv.notify_all();
  }
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

std::vector<Agent::LinkState> Agent::Links() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->link_states;
}

int Agent::LinksRegistered() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->links_registered;
}

}  // namespace bai::agent
