// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/webserver_impl.h"

namespace bai::webserver {

// ---- storage transfers ---------------------------------------------------------------------

bool WebServer::Impl::IsTransferTicketTarget(std::string const& target) {
  auto path = std::string_view(target).substr(0, target.find('?'));
  auto ends = [&](std::string_view tail) {
    return path.size() > tail.size() && path.substr(path.size() - tail.size()) == tail;
  };
  return path.rfind("/folders/", 0) == 0 && (ends("/request-upload") || ends("/request-download"));
}

std::string WebServer::Impl::RelayKey(std::string const& url) {
  return LoginSessions::Hash(url).substr(0, 16);
}

std::string WebServer::Impl::WithConsoleUrl(std::string const& body) {
  auto ticket = protocol::DecodeTransferTicket(body);
  if (!ticket.ok() || !internal::ParseEndpoint(ticket->url).ok()) return body;
  std::string key = RelayKey(ticket->url);
  {
    std::lock_guard<std::mutex> lock(storage_mu);
    if (storage_urls.size() >= 256 && !storage_urls.count(key)) storage_urls.clear();
    storage_urls[key] = ticket->url;
  }
  ticket->console_url = "/storage/" + key;
  return protocol::EncodeTransferTicket(*ticket);
}

std::vector<std::string> WebServer::Impl::StorageOrigins() {
  std::vector<std::string> urls = options.storage_urls;
  {
    std::lock_guard<std::mutex> lock(storage_mu);
    for (auto const& [key, url] : storage_urls) urls.push_back(url);
  }
  std::vector<std::string> out;
  for (auto const& u : urls) {
    auto e = internal::ParseEndpoint(u);
    if (e.ok() && std::find(out.begin(), out.end(), e->origin) == out.end()) {
      out.push_back(e->origin);
    }
  }
  return out;
}

std::string WebServer::Impl::RelayUrl(std::string const& key) {
  std::string url;
  {
    std::lock_guard<std::mutex> lock(storage_mu);
    auto it = storage_urls.find(key);
    if (it != storage_urls.end()) url = it->second;
  }
  // A key is the hash of its URL, so a transfer another webserver issued (several behind one
  // address) is found among the storage proxies this one was configured with.
  for (std::string base : options.storage_urls) {
    while (!base.empty() && base.back() == '/') base.pop_back();
    for (char const* path : {"/upload", "/download"}) {
      std::string candidate = base + path;
      if (url.empty() && RelayKey(candidate) == key) url = candidate;
    }
  }
  return url;
}

std::optional<TransportRequest> WebServer::Impl::RelayRequest(HttpRequest const& req) {
  auto e = internal::ParseEndpoint(RelayUrl(req.path.substr(9)));
  if (!e.ok()) return std::nullopt;
  TransportRequest t;
  t.method = req.method;
  t.origin = e->origin;
  t.host = e->host;
  t.target = e->base_path + (req.query.empty() ? "" : "?" + req.query);
  t.sign = false;
  t.headers = ForwardedRequestHeaders(req.headers);
  for (char const* h : {"range", "if-range"}) {
    if (auto v = req.Header(h)) t.headers.emplace_back(h, std::string(*v));
  }
  return t;
}

HttpResponse WebServer::Impl::RelayedAnswer(StatusOr<ApiResponse> const& answer) {
  HttpResponse r;
  if (!answer.ok()) {
    r = Problem(
        ps::ProblemType::kServiceUnavailable,
        "The storage proxy does not answer (" + answer.status().message() + "); try again later.");
    r.status = 502;
  } else {
    r.status = answer->status;
    r.content_type = answer->Header("content-type").value_or("");
    r.body = answer->body;
    r.headers = ForwardedResponseHeaders(answer->headers);
  }
  for (auto& h : SecurityHeaders(Tls())) r.headers.push_back(std::move(h));
  return r;
}

void WebServer::Impl::StorageRelay(std::shared_ptr<Exchange> const& ex) {
  auto t = RelayRequest(ex->request());
  if (!t) {
    return Answer(ex, Problem(ps::ProblemType::kUrlNotFound,
                              "No such transfer here (this webserver has not issued it, or "
                              "restarted since); ask for the upload or download again."));
  }
  t->body = ex->request().body;
  auto answer = transport->Send(*t);
  if (answer.ok() && answer->body.size() > options.max_response_bytes) {
    auto r = Problem(ps::ProblemType::kRequestTooLarge,
                     "The file is larger than the console relays (" +
                         std::to_string(options.max_response_bytes >> 20) +
                         " MiB); download it with `bai vfolder download`.");
    r.status = 502;
    return Answer(ex, std::move(r));
  }
  ex->Respond(RelayedAnswer(answer));
}

// A relay's place under the caps, given back when its thread ends.
class WebServer::Impl::RelaySlot {
 public:
  RelaySlot(Impl& impl, std::string user) : impl_(impl), user_(std::move(user)) {}
  RelaySlot(RelaySlot const&) = delete;
  RelaySlot& operator=(RelaySlot const&) = delete;
  ~RelaySlot() {
    std::lock_guard<std::mutex> lock(impl_.relay_mu);
    --impl_.relays_in_all;
    if (--impl_.relays_by_user[user_] <= 0) impl_.relays_by_user.erase(user_);
  }

 private:
  Impl& impl_;
  std::string user_;
};

std::shared_ptr<WebServer::Impl::RelaySlot> WebServer::Impl::TakeRelaySlot(
    std::string const& user) {
  std::lock_guard<std::mutex> lock(relay_mu);
  if (relays_in_all >= kRelaysInAll) return nullptr;
  int& mine = relays_by_user[user];
  if (mine >= kRelaysPerUser) return nullptr;
  ++mine;
  ++relays_in_all;
  return std::make_shared<RelaySlot>(*this, user);
}

// A relayed chunk passed on to the storage proxy as it arrives (ADR 12's streamed chunks): the
// client's pieces wait in a queue of at most kRoom bytes that a thread of stream_threads sends
// from; the client is not read while it is full. A client that goes away mid-body has what it
// sent passed on before the upstream request is cut, so the proxy keeps it.
class WebServer::Impl::RelaySink : public server::BodySink {
 public:
  static constexpr std::size_t kRoom = 4u << 20;
  RelaySink(Impl& impl, TransportRequest t, std::int64_t length, std::shared_ptr<RelaySlot> slot)
      : state_(std::make_shared<State>()) {
    t.body_length = length;
    t.body_reader = [state = state_](char* out, std::size_t room) {
      return state->Read(out, room);
    };
    started_ =
        impl.StartStreamThread([&impl, state = state_, t = std::move(t), slot = std::move(slot)] {
          auto answer = impl.RelayedAnswer(impl.transport->Send(t));
          std::function<void(HttpResponse)> deliver;
          std::function<void()> go;
          {
            std::lock_guard<std::mutex> lock(state->mu);
            state->done = true;
            state->response = std::move(answer);
            deliver = std::exchange(state->deliver, {});
            go = std::exchange(state->writable, {});
          }
          if (go) go();  // its Write then refuses: the answer came before the body went
          if (deliver) deliver(std::move(state->response));
        });
  }
  ~RelaySink() override { state_->End(State::kCut); }
  bool Accepts() const override { return started_; }
  bool Write(std::string_view bytes) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->done) return false;
    state_->pieces.emplace_back(bytes);
    state_->bytes += bytes.size();
    state_->cv.notify_all();
    return true;
  }
  void WhenWritable(std::function<void()> go) override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->bytes >= kRoom && !state_->done) {
        state_->writable = std::move(go);
        return;
      }
    }
    go();
  }
  void Finish(bool whole, std::function<void(HttpResponse)> answer) override {
    if (!started_) {
      auto r = Problem(ps::ProblemType::kServiceUnavailable, "The webserver is stopping.");
      return answer(std::move(r));
    }
    state_->End(whole ? State::kWhole : State::kCut);
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->done) {
      state_->deliver = std::move(answer);
      return;
    }
    answer(std::move(state_->response));
  }

 private:
  struct State {
    enum How { kOpen, kWhole, kCut };
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::string> pieces;
    std::size_t front_sent = 0, bytes = 0;
    How end = kOpen;
    bool done = false;  ///< the storage proxy answered (`response`)
    HttpResponse response;
    std::function<void()> writable;             ///< waiting for room
    std::function<void(HttpResponse)> deliver;  ///< waiting for the answer
    void End(How how) {
      std::lock_guard<std::mutex> lock(mu);
      if (end == kOpen) end = how;
      cv.notify_all();
    }
    // curl's reader: what is queued, then the end (0) or, for a cut body, a failure (-1).
    std::ptrdiff_t Read(char* out, std::size_t room) {
      std::function<void()> go;
      std::size_t n = 0;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return bytes > 0 || end != kOpen; });
        if (bytes == 0) return end == kWhole ? 0 : -1;
        while (n < room && !pieces.empty()) {
          auto& front = pieces.front();
          std::size_t take = std::min(room - n, front.size() - front_sent);
          std::memcpy(out + n, front.data() + front_sent, take);
          n += take;
          front_sent += take;
          if (front_sent == front.size()) {
            pieces.pop_front();
            front_sent = 0;
          }
        }
        bytes -= n;
        if (bytes < kRoom) go = std::exchange(writable, {});
      }
      if (go) go();
      return static_cast<std::ptrdiff_t>(n);
    }
  };
  std::shared_ptr<State> state_;
  bool started_ = false;
};

// A body refused before it is read: answered at once, no 100 Continue, what the client
// still sends is drained.
class WebServer::Impl::RefusedSink : public server::BodySink {
 public:
  RefusedSink(HttpResponse r, bool tls) : r_(std::move(r)) {
    for (auto& h : SecurityHeaders(tls)) r_.headers.push_back(std::move(h));
  }
  bool Accepts() const override { return false; }
  bool Write(std::string_view) override { return false; }
  void Finish(bool, std::function<void(HttpResponse)> answer) override { answer(std::move(r_)); }

 private:
  HttpResponse r_;
};

std::unique_ptr<server::BodySink> WebServer::Impl::BodyFor(HttpRequest const& head,
                                                           std::uint64_t length) {
  auto chosen = ChooseLogin(head, false);
  if (!chosen.ok() || !chosen->session) {
    return std::make_unique<RefusedSink>(
        Problem(ps::ProblemType::kAuthFailed,
                "Sign in first (POST /server/login, or the console's sign-in page); a request "
                "body is read only for a signed-in user."),
        Tls());
  }
  if (head.path.rfind("/storage/", 0) != 0) return nullptr;
  if (head.method != "PATCH") {
    return std::make_unique<RefusedSink>(
        Problem(ps::ProblemType::kRequestTooLarge,
                "Only an upload's PATCH carries a large body through the relay."),
        Tls());
  }
  return StreamRelay(head, length, chosen->session->identity.access_key);
}

std::unique_ptr<server::BodySink> WebServer::Impl::StreamRelay(HttpRequest const& head,
                                                               std::uint64_t length,
                                                               std::string const& user) {
  auto t = RelayRequest(head);
  if (!t) return nullptr;  // answered (404) by StorageRelay
  auto slot = TakeRelaySlot(user);
  if (!slot) {
    auto r =
        Problem(ps::ProblemType::kRateLimitExceeded,
                "Too many uploads through the console at once (" + std::to_string(kRelaysPerUser) +
                    " per user); this part can be sent again when one ends.");
    r.headers.emplace_back("Retry-After", "1");
    return std::make_unique<RefusedSink>(std::move(r), Tls());
  }
  return std::make_unique<RelaySink>(*this, std::move(*t), static_cast<std::int64_t>(length),
                                     std::move(slot));
}

}  // namespace bai::webserver
