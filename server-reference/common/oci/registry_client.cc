// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/oci/registry_client.h"

#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_auth.h"

#include <curl/curl.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace bai::server::oci {

struct RegistryClient::Request {
  std::string url;
  std::string scope;
  std::vector<std::string> headers;
  /// Takes the body's bytes; false stops the transfer. None: the body is kept (to `limit`).
  std::function<bool(std::string_view)> sink;
  std::int64_t limit = 4 << 20;
  std::int64_t range_from = 0;  ///< > 0: Range: bytes=N-
};

struct RegistryClient::Response {
  long status = 0;
  std::map<std::string, std::string> headers;  ///< names lower case
  std::string body;
  std::string Header(std::string const& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

namespace {

std::string Base64(std::string const& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<unsigned char const*>(text.data()),
                          static_cast<int>(text.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

struct Transfer {
  CURL* curl;
  std::function<bool(std::string_view)> const* sink;
  std::int64_t limit;
  std::string* body;
  std::map<std::string, std::string>* headers;
  std::int64_t range_from = 0;
  bool over_limit = false;
  bool stopped = false;
  bool range_ignored = false;  ///< asked for the rest, sent the whole: not kept
};

std::size_t OnHeader(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->headers->clear();  // a redirect's or a 100's headers are not the answer's
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  (*t->headers)[name] = std::string(value);
  return size * n;
}

std::size_t OnBody(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view bytes(data, size * n);
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->range_from > 0 && status == 200) {
    t->range_ignored = true;
    return 0;
  }
  // Only a success streams into the sink; an error's body is kept for its words.
  if (*t->sink && status >= 200 && status < 300) {
    if (!(*t->sink)(bytes)) {
      t->stopped = true;
      return 0;
    }
    return bytes.size();
  }
  if (static_cast<std::int64_t>(t->body->size() + bytes.size()) > t->limit) {
    t->over_limit = true;
    return 0;
  }
  t->body->append(bytes);
  return bytes.size();
}

Status HttpProblem(long status, std::string const& what, std::string const& body) {
  std::string words =
      what + ": " + RegistryErrorWords(body) + " (HTTP " + std::to_string(status) + ")";
  if (status == 401) return Status(StatusCode::kUnauthenticated, words);
  if (status == 403) return Status(StatusCode::kPermissionDenied, words);
  if (status == 404) return Status(StatusCode::kNotFound, words);
  if (status == 429) return Status(StatusCode::kResourceExhausted, words);
  if (status >= 500) return Status(StatusCode::kUnavailable, words);
  return Status(StatusCode::kFailedPrecondition, words);
}

// Hashes what a file already holds (a download that broke off), up to `size` bytes.
bool HashFile(std::string const& path, std::int64_t size, DigestWriter& digest) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 16);
  std::int64_t left = size;
  while (left > 0 && in) {
    in.read(buffer.data(), static_cast<std::streamsize>(std::min<std::int64_t>(
                               left, static_cast<std::int64_t>(buffer.size()))));
    auto got = in.gcount();
    if (got <= 0) return false;
    digest.Update(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    left -= got;
  }
  return left == 0;
}

}  // namespace

std::string PullScope(std::string const& repository) {
  return "repository:" + repository + ":pull";
}

RegistryClient::RegistryClient(RegistryEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  while (!endpoint_.url.empty() && endpoint_.url.back() == '/') endpoint_.url.pop_back();
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

RegistryClient::~RegistryClient() = default;

std::int64_t RegistryClient::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::int64_t RegistryClient::tokens_fetched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_fetched_;
}

StatusOr<RegistryClient::Response> RegistryClient::Perform(Request const& request,
                                                           std::string const& authorization) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_;
  }
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Status(StatusCode::kInternal, "libcurl: no handle");
  Response response;
  Transfer t{curl.get(),     &request.sink,     request.limit,
             &response.body, &response.headers, request.range_from};
  curl_slist* headers = nullptr;
  for (auto const& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  if (!authorization.empty()) {
    headers = curl_slist_append(headers, ("Authorization: " + authorization).c_str());
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(endpoint_.stall_timeout.count()));
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, endpoint_.ssl_verify ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, endpoint_.ssl_verify ? 2L : 0L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "bai-registry-client/0.1");
  if (request.range_from > 0) {
    std::string range = std::to_string(request.range_from) + "-";
    curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  if (t.over_limit) {
    return Status(StatusCode::kResourceExhausted, request.url + ": the answer is larger than " +
                                                      std::to_string(request.limit) + " bytes");
  }
  if (t.stopped) return Status(StatusCode::kAborted, request.url + ": stopped");
  if (t.range_ignored) return response;  // 200: the caller starts again from nothing
  if (rc != CURLE_OK) {
    return Status(StatusCode::kUnavailable,
                  "cannot reach the registry at " + endpoint_.url + ": " + curl_easy_strerror(rc));
  }
  return response;
}

std::string RegistryClient::AuthorizationFor(std::string const& scope) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(scope);
  if (it != tokens_.end() && std::chrono::steady_clock::now() < it->second.expires) {
    return "Bearer " + it->second.token;
  }
  if (basic_ && !endpoint_.username.empty()) {
    return "Basic " + Base64(endpoint_.username + ":" + endpoint_.password);
  }
  return "";
}

Status RegistryClient::Authorize(std::string const& scope, std::string const& header) {
  auto challenges = ParseWwwAuthenticate(header);
  for (auto const& c : challenges) {
    if (c.scheme == "basic") {
      if (endpoint_.username.empty()) {
        return Status(StatusCode::kUnauthenticated,
                      "the registry at " + endpoint_.url + " wants a username and password");
      }
      std::lock_guard<std::mutex> lock(mu_);
      basic_ = true;
      return Status();
    }
    if (c.scheme != "bearer") continue;
    auto url = TokenUrl(c, scope);
    if (!url.ok()) return url.status();
    Request ask{*url, "", {}, {}, 1 << 20, 0};
    std::string credentials =
        endpoint_.username.empty()
            ? std::string()
            : "Basic " + Base64(endpoint_.username + ":" + endpoint_.password);
    auto answer = Perform(ask, credentials);
    if (!answer.ok()) return answer.status();
    if (answer->status != 200) {
      return Status(StatusCode::kUnauthenticated,
                    "the registry's token server refused " +
                        (endpoint_.username.empty() ? std::string("an anonymous pull")
                                                    : "the credentials of " + endpoint_.username) +
                        ": " + RegistryErrorWords(answer->body) + " (HTTP " +
                        std::to_string(answer->status) + ")");
    }
    auto token = ParseTokenAnswer(answer->body);
    if (!token.ok()) return token.status();
    std::lock_guard<std::mutex> lock(mu_);
    ++tokens_fetched_;
    // Renewed a little before the registry would refuse it.
    auto life = std::chrono::seconds(std::max<std::int64_t>(token->expires_in - 5, 1));
    tokens_[scope] = {token->token, std::chrono::steady_clock::now() + life};
    return Status();
  }
  return Status(StatusCode::kUnauthenticated, "the registry at " + endpoint_.url +
                                                  " asks for an authentication bai does not "
                                                  "speak: " +
                                                  header);
}

StatusOr<RegistryClient::Response> RegistryClient::Get(Request const& request) {
  auto first = Perform(request, AuthorizationFor(request.scope));
  if (!first.ok() || first->status != 401) return first;
  {
    // A token refused before its time (revoked, or the clocks differ): fetched again.
    std::lock_guard<std::mutex> lock(mu_);
    tokens_.erase(request.scope);
  }
  if (auto s = Authorize(request.scope, first->Header("www-authenticate")); !s.ok()) return s;
  return Perform(request, AuthorizationFor(request.scope));
}

Status RegistryClient::Ping() {
  auto r = Get({endpoint_.url + "/v2/", "", {}, {}, 1 << 20, 0});
  if (!r.ok()) return r.status();
  if (r->status != 200) return HttpProblem(r->status, endpoint_.url + "/v2/", r->body);
  return Status();
}

StatusOr<FetchedManifest> RegistryClient::GetManifest(std::string const& repository,
                                                      std::string const& reference) {
  std::string what = repository + ":" + reference;
  auto r = Get({endpoint_.url + "/v2/" + repository + "/manifests/" + reference,
                PullScope(repository),
                {"Accept: " + media::AcceptHeader()},
                {},
                4 << 20,
                0});
  if (!r.ok()) return r.status();
  if (r->status != 200) return HttpProblem(r->status, "manifest " + what, r->body);
  FetchedManifest out;
  out.body = std::move(r->body);
  out.media_type = r->Header("content-type");
  out.digest = Sha256Digest(out.body);
  std::string said = r->Header("docker-content-digest");
  if ((ValidDigest(reference) && out.digest != reference) ||
      (!said.empty() && said.rfind("sha256:", 0) == 0 && said != out.digest)) {
    return Status(StatusCode::kDataLoss, "manifest " + what + ": the bytes have digest " +
                                             out.digest + ", not the one asked for");
  }
  auto doc = ParseManifest(out.body, out.media_type);
  if (!doc.ok())
    return Status(doc.status().code(), "manifest " + what + ": " + doc.status().message());
  out.document = *std::move(doc);
  return out;
}

StatusOr<std::string> RegistryClient::GetBlob(std::string const& repository, Descriptor const& blob,
                                              std::int64_t limit) {
  if (blob.size > limit) {
    return Status(StatusCode::kResourceExhausted,
                  "blob " + blob.digest + " is " + std::to_string(blob.size) + " bytes");
  }
  auto r = Get({endpoint_.url + "/v2/" + repository + "/blobs/" + blob.digest,
                PullScope(repository),
                {},
                {},
                limit,
                0});
  if (!r.ok()) return r.status();
  if (r->status != 200) return HttpProblem(r->status, "blob " + blob.digest, r->body);
  std::string got = Sha256Digest(r->body);
  if (got != blob.digest) {
    return Status(StatusCode::kDataLoss,
                  "blob " + blob.digest + " arrived with digest " + got + ": refused");
  }
  return std::move(r->body);
}

Status RegistryClient::DownloadBlob(std::string const& repository, Descriptor const& blob,
                                    std::string const& path,
                                    std::function<void(std::int64_t)> const& progress) {
  namespace fs = std::filesystem;
  Status last;
  // Attempts that brought no byte, in a row: a registry that restarts (or a link that drops)
  // is waited for with growing pauses (1, 2, 4, 8 s…, never past the stall timeout since the
  // last byte); an attempt that brought bytes starts the count again.
  int fruitless = 0;
  auto last_byte = std::chrono::steady_clock::now();
  std::int64_t best = -1;
  for (;;) {
    if (best >= 0) {
      if (++fruitless >= std::max(1, endpoint_.blob_attempts)) return last;
      auto pause = std::chrono::seconds(std::min(16, 1 << std::min(fruitless - 1, 4)));
      if (std::chrono::steady_clock::now() + pause - last_byte > endpoint_.stall_timeout) {
        return last;
      }
      std::this_thread::sleep_for(pause);
    }
    // What an earlier attempt (or an earlier pull) left is kept and hashed; the rest is asked
    // for with Range.
    std::error_code ec;
    auto size = fs::exists(path, ec) ? fs::file_size(path, ec) : 0;
    std::int64_t have = ec ? 0 : static_cast<std::int64_t>(size);
    auto digest = std::make_unique<DigestWriter>();
    if (have > blob.size || (have > 0 && !HashFile(path, have, *digest))) {
      fs::remove(path, ec);
      have = 0;
      digest = std::make_unique<DigestWriter>();
    }
    std::int64_t held = have;
    if (have < blob.size) {
      std::FILE* out = std::fopen(path.c_str(), have > 0 ? "ab" : "wb");
      if (out == nullptr) return Status(StatusCode::kInternal, "cannot write " + path);
      Request request{endpoint_.url + "/v2/" + repository + "/blobs/" + blob.digest,
                      PullScope(repository),
                      {},
                      [&](std::string_view bytes) {
                        if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size()) {
                          return false;
                        }
                        digest->Update(bytes);
                        held += static_cast<std::int64_t>(bytes.size());
                        if (progress) progress(held);
                        return held <= blob.size;
                      },
                      1 << 20,
                      have};
      auto r = Get(request);
      bool flushed = std::fclose(out) == 0;
      if (held > best) {
        if (best >= 0) fruitless = 0;
        best = held;
        last_byte = std::chrono::steady_clock::now();
      }
      if (held > blob.size) {
        fs::remove(path, ec);
        return Status(StatusCode::kDataLoss, "blob " + blob.digest + " is larger than the " +
                                                 std::to_string(blob.size) +
                                                 " bytes its manifest says: refused");
      }
      if (r.ok() && r->status == 200 && have > 0) {
        // The registry sent the whole blob, not the rest: start again from nothing.
        fs::remove(path, ec);
        last = Status(StatusCode::kUnavailable, "the registry does not resume downloads");
        continue;
      }
      if (r.ok() && r->status != 200 && r->status != 206) {
        last = HttpProblem(r->status, "blob " + blob.digest, r->body);
        if (r->status >= 500) continue;  // a registry starting again: waited for as a break
        return last;
      }
      if (!r.ok()) {
        last = r.status();
        if (r.status().code() != StatusCode::kUnavailable) return last;
        continue;  // broke off: the next attempt resumes from what the file holds
      }
      if (!flushed) return Status(StatusCode::kInternal, "cannot write " + path);
    }
    if (held != blob.size) {
      last = Status(StatusCode::kUnavailable, "blob " + blob.digest + " ended after " +
                                                  std::to_string(held) + " of " +
                                                  std::to_string(blob.size) + " bytes");
      continue;
    }
    std::string got = digest->Finish();
    if (got != blob.digest) {
      fs::remove(path, ec);
      return Status(StatusCode::kDataLoss,
                    "blob " + blob.digest + " arrived with digest " + got + ": refused");
    }
    return Status();
  }
  return last;
}

StatusOr<std::vector<std::string>> RegistryClient::Paged(std::string const& path,
                                                         std::string const& scope,
                                                         char const* key) {
  std::vector<std::string> out;
  std::string url = endpoint_.url + path;
  for (int page = 0; page < 10000; ++page) {
    auto r = Get({url, scope, {}, {}, 4 << 20, 0});
    if (!r.ok()) return r.status();
    if (r->status != 200) return HttpProblem(r->status, path, r->body);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (key == nullptr && j.is_array()) {
      // Harbor's API: an array of objects, each with its "name".
      for (auto const& v : j) {
        if (v.is_object() && v.contains("name") && v["name"].is_string())
          out.push_back(v["name"].get<std::string>());
      }
    } else if (!j.is_object()) {
      return Status(StatusCode::kFailedPrecondition, path + ": not JSON");
    } else if (auto it = j.find(key); it != j.end() && it->is_array()) {
      for (auto const& v : *it) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
    auto next = NextLink(r->Header("link"));
    if (!next) return out;
    url = next->rfind("http", 0) == 0 ? *next : endpoint_.url + *next;
  }
  return out;
}

StatusOr<std::vector<std::string>> RegistryClient::Tags(std::string const& repository) {
  return Paged("/v2/" + repository + "/tags/list?n=" + std::to_string(endpoint_.page_size),
               PullScope(repository), "tags");
}

StatusOr<std::vector<std::string>> RegistryClient::HarborRepositories(std::string const& project) {
  {
    // Harbor's API takes the account's Basic credentials (its registry still asks for tokens).
    std::lock_guard<std::mutex> lock(mu_);
    basic_ = true;
  }
  return Paged("/api/v2.0/projects/" + project +
                   "/repositories?page_size=" + std::to_string(endpoint_.page_size),
               "", nullptr);
}

StatusOr<std::vector<std::string>> RegistryClient::Repositories() {
  return Paged("/v2/_catalog?n=" + std::to_string(endpoint_.page_size), "registry:catalog:*",
               "repositories");
}

}  // namespace bai::server::oci
