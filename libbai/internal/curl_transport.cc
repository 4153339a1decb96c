// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/curl_transport.h"

#include "libbai/internal/lws_websocket.h"
#include "libbai/util/text.h"

#include <curl/curl.h>

#include <array>
#include <chrono>
#include <mutex>
#include <vector>

namespace bai::internal {
namespace {

// The first error code a request can get before anything was sent.
constexpr std::string_view kConnectFailureTag = "connect-failure";

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct BodySink {
  CURL* handle = nullptr;
  std::string* buffer = nullptr;
  std::function<bool(std::string_view)> const* stream = nullptr;
  bool stopped = false;  // the consumer ended the stream
  bool open = false;     // 2xx headers arrived: the body goes to `stream`
  std::chrono::steady_clock::time_point last_call;
};

// How long a quiet stream goes before the consumer hears an empty chunk.
constexpr std::chrono::milliseconds kIdleTick{1000};

// Called by curl about once a second (and on progress): gives a quiet stream's consumer its
// chance to stop.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* sink = static_cast<BodySink*>(user);
  if (!sink->open) return 0;
  auto now = std::chrono::steady_clock::now();
  if (now - sink->last_call < kIdleTick) return 0;
  sink->last_call = now;
  if (!(*sink->stream)(std::string_view())) {
    sink->stopped = true;
    return 1;  // aborts the transfer
  }
  return 0;
}

std::size_t OnBody(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  if (sink->stream && *sink->stream) {
    long status = 0;
    curl_easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      sink->last_call = std::chrono::steady_clock::now();
      if (!(*sink->stream)(std::string_view(data, size * n))) {
        sink->stopped = true;
        return 0;  // aborts the transfer
      }
      return size * n;
    }
  }
  sink->buffer->append(data, size * n);
  return size * n;
}

struct HeaderSink {
  std::vector<std::pair<std::string, std::string>>* headers;
  BodySink* body;
};

// A body_reader's bytes for curl.
std::size_t OnRead(char* out, std::size_t size, std::size_t n, void* user) {
  auto const& reader = *static_cast<std::function<std::ptrdiff_t(char*, std::size_t)> const*>(user);
  std::ptrdiff_t got = reader(out, size * n);
  return got < 0 ? CURL_READFUNC_ABORT : static_cast<std::size_t>(got);
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t n, void* user) {
  auto* header_sink = static_cast<HeaderSink*>(user);
  auto* headers = header_sink->headers;
  std::string_view line(data, size * n);
  if (line == "\r\n" || line == "\n") {
    // End of a header block: a 2xx stream is open now (an empty chunk says so).
    auto* body = header_sink->body;
    long status = 0;
    curl_easy_getinfo(body->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300 && body->stream && *body->stream) {
      body->open = true;
      body->last_call = std::chrono::steady_clock::now();
      if (!(*body->stream)(std::string_view())) {
        body->stopped = true;
        return 0;
      }
    }
    return size * n;
  }
  // A new status line (after 100-continue or a redirect we do not follow) starts a new set.
  if (line.substr(0, 5) == "HTTP/") {
    headers->clear();
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name = AsciiLower(line.substr(0, colon));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  headers->emplace_back(std::move(name), std::string(value));
  return size * n;
}

Status FromCurl(CURLcode code, char const* error_buffer, std::string const& url) {
  std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
  ErrorInfo info;
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      info.type = std::string(kConnectFailureTag);
      return Status(StatusCode::kUnavailable, "cannot connect to " + url + ": " + detail, info);
    case CURLE_OPERATION_TIMEDOUT:
      return Status(StatusCode::kDeadlineExceeded, "request to " + url + " timed out: " + detail);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Status(StatusCode::kInvalidArgument, "bad URL " + url + ": " + detail);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return Status(StatusCode::kUnavailable,
                    "TLS error talking to " + url + ": " + detail +
                        " (check the CA bundle, or skip_tls_verify for a test server)");
    default:
      return Status(StatusCode::kUnavailable, "request to " + url + " failed: " + detail);
  }
}

class CurlTransport : public Transport {
 public:
  explicit CurlTransport(CurlTransportOptions options) : options_(std::move(options)) {
    GlobalInit();
    share_ = curl_share_init();
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &Lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &Unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }

  ~CurlTransport() override {
    for (CURL* h : pool_) curl_easy_cleanup(h);
    curl_share_cleanup(share_);
  }

  CurlTransport(CurlTransport const&) = delete;
  CurlTransport& operator=(CurlTransport const&) = delete;

  StatusOr<ApiResponse> Send(TransportRequest const& request) override {
    return SendStreaming(request, {});
  }

  // WebSockets go through libwebsockets (libcurl 7.88 has no WebSocket API on by default).
  StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(
      TransportRequest const& request) override {
    LwsWebSocketOptions o;
    o.connect_timeout = options_.connect_timeout;
    o.verify_tls = options_.verify_tls;
    o.ca_bundle = options_.ca_bundle;
    o.user_agent = options_.user_agent;
    return OpenLwsWebSocket(request, o);
  }

  StatusOr<ApiResponse> SendStreaming(TransportRequest const& request,
                                      std::function<bool(std::string_view)> on_data) override {
    CURL* h = Acquire();
    std::string url = request.origin + request.target;
    ApiResponse response;
    char error_buffer[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, ("Host: " + request.host).c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    headers = curl_slist_append(headers, "Accept:");
    bool has_content_type = false;
    for (auto const& [name, value] : request.headers) {
      if (EqualsIgnoreCase(name, "content-type")) {
        has_content_type = true;
      }
      // "Name;" is curl's way to send a header with an empty value.
      headers =
          curl_slist_append(headers, (value.empty() ? name + ";" : name + ": " + value).c_str());
    }
    if (!has_content_type) headers = curl_slist_append(headers, "Content-Type:");

    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    BodySink sink;
    sink.handle = h;
    sink.buffer = &response.body;
    sink.stream = &on_data;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    HeaderSink header_sink{&response.headers, &sink};
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &header_sink);
    if (on_data) {
      curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress);
      curl_easy_setopt(h, CURLOPT_XFERINFODATA, &sink);
      curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    if (request.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (request.method == "HEAD") {
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    if (request.body_reader) {
      // curl's upload mode under the request's own method, without waiting for 100 Continue.
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_READFUNCTION, &OnRead);
      curl_easy_setopt(h, CURLOPT_READDATA, static_cast<void const*>(&request.body_reader));
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body_length));
      headers = curl_slist_append(headers, "Expect:");
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    } else if (!request.body.empty() || (request.method != "GET" && request.method != "HEAD")) {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      // A body makes curl POST; a GET with a body (GET /session/{id}/files) stays a GET.
      if (request.method == "GET") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "GET");
    }
    CURLcode code =
        request.cancel && on_data ? PerformCancellable(h, *request.cancel) : curl_easy_perform(h);
    if ((code == CURLE_WRITE_ERROR || code == CURLE_ABORTED_BY_CALLBACK) && sink.stopped) {
      code = CURLE_OK;
    }
    if (request.cancel && request.cancel->cancelled() && sink.open) code = CURLE_OK;
    long status = 0;
    if (code == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    Release(h);
    if (code != CURLE_OK) return FromCurl(code, error_buffer, request.origin);
    response.status = static_cast<int>(status);
    return response;
  }

 private:
  // curl_easy_perform, but on a multi handle of its own that `cancel` can wake: a cancelled
  // transfer ends within a poll round instead of at the next progress tick.
  static CURLcode PerformCancellable(CURL* h, StreamCancel& cancel) {
    CURLM* m = curl_multi_init();
    if (m == nullptr) return CURLE_OUT_OF_MEMORY;
    curl_multi_add_handle(m, h);
    cancel.Attach([m] { curl_multi_wakeup(m); });
    CURLcode result = CURLE_OK;
    int running = 1;
    while (running > 0 && !cancel.cancelled()) {
      if (curl_multi_perform(m, &running) != CURLM_OK) {
        result = CURLE_RECV_ERROR;
        break;
      }
      if (running > 0) curl_multi_poll(m, nullptr, 0, 1000, nullptr);
    }
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == h) result = msg->data.result;
    }
    if (running > 0) result = CURLE_ABORTED_BY_CALLBACK;  // cancelled mid-transfer
    cancel.Detach();
    curl_multi_remove_handle(m, h);
    curl_multi_cleanup(m);
    return result;
  }

  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<CurlTransport*>(user)->locks_[static_cast<std::size_t>(data)].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<CurlTransport*>(user)->locks_[static_cast<std::size_t>(data)].unlock();
  }

  CURL* Acquire() {
    CURL* h = nullptr;
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!pool_.empty()) {
        h = pool_.back();
        pool_.pop_back();
      }
    }
    if (h == nullptr) h = curl_easy_init();
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_SHARE, share_);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    if (options_.read_timeout.count() > 0) {
      // "Silent for read_timeout": fewer than 1 byte/s over that many seconds.
      curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                       std::max(1L, static_cast<long>(options_.read_timeout.count() / 1000)));
    }
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    if (!options_.ca_bundle.empty())
      curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_bundle.c_str());
    curl_easy_setopt(h, CURLOPT_USERAGENT, options_.user_agent.c_str());
    return h;
  }

  void Release(CURL* h) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_.push_back(h);
  }

  CurlTransportOptions options_;
  CURLSH* share_ = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> locks_;
  std::mutex pool_mu_;
  std::vector<CURL*> pool_;
};

}  // namespace

bool IsConnectFailure(Status const& status) {
  return status.code() == StatusCode::kUnavailable &&
         status.error_info().type == kConnectFailureTag;
}

std::unique_ptr<Transport> MakeCurlTransport(CurlTransportOptions options) {
  return std::make_unique<CurlTransport>(std::move(options));
}

}  // namespace bai::internal
