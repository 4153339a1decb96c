// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client of one OCI distribution (Docker Registry v2) endpoint: what the manager's rescans and
// the agent's pulls ask a registry (issue 46). libcurl underneath: HTTPS with the system CA
// bundle (or none, per registry), the usual proxy variables, redirects followed (a blob may be
// served elsewhere; libcurl does not carry the Authorization header to another host). Basic
// and Bearer-token auth from the registry's challenge, tokens kept per scope until they expire
// and fetched again on a 401. Every answer's bytes are checked against the digest that names
// them. Thread-safe.

#include "bai/status.h"

#include "server-reference/common/oci/manifest.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bai::server::oci {

struct RegistryEndpoint {
  /// "https://registry.example" or "http://127.0.0.1:5000" (no path).
  std::string url;
  std::string username, password;  ///< none: anonymous
  bool ssl_verify = true;
  /// A transfer that moves no byte for this long fails (and a blob download resumes).
  std::chrono::seconds stall_timeout{300};
  /// Attempts in a row that bring no byte before a blob download gives up; each resumes where
  /// the last stopped, after a pause of 1, 2, 4, 8, 16 s (a registry restarting is waited for
  /// about half a minute, never past stall_timeout since the last byte). An attempt that
  /// brings bytes starts the count again.
  int blob_attempts = 6;
  /// Entries asked for per page of a listing (`n`).
  int page_size = 100;
};

/// A manifest as the registry served it.
struct FetchedManifest {
  ManifestDocument document;
  std::string body;        ///< the bytes (what `digest` is the SHA-256 of)
  std::string media_type;  ///< Content-Type
  std::string digest;      ///< "sha256:…" of `body`
};

class RegistryClient {
 public:
  explicit RegistryClient(RegistryEndpoint endpoint);
  ~RegistryClient();

  /// GET /v2/ with the credentials: ok when the registry speaks v2 and lets us in.
  Status Ping();
  /// The manifest or index `reference` (a tag or a digest) of `repository`. When `reference` is
  /// a digest the bytes must have it (else kDataLoss); a Docker-Content-Digest the registry
  /// sends must match too.
  StatusOr<FetchedManifest> GetManifest(std::string const& repository,
                                        std::string const& reference);
  /// A small blob (an image config) in memory, checked against its digest; at most `limit`.
  StatusOr<std::string> GetBlob(std::string const& repository, Descriptor const& blob,
                                std::int64_t limit = 4 << 20);
  /// `blob` into the file `path`: what a download that broke off left there is kept and the
  /// rest asked for with Range; the whole checked against the digest and size (a mismatch
  /// deletes the file: kDataLoss naming the digest). `progress` gets the bytes held so far.
  Status DownloadBlob(std::string const& repository, Descriptor const& blob,
                      std::string const& path,
                      std::function<void(std::int64_t)> const& progress = {});
  /// Every tag of `repository` (tags/list, following Link pages).
  StatusOr<std::vector<std::string>> Tags(std::string const& repository);
  /// Every repository (_catalog, following Link pages; not every registry has it).
  StatusOr<std::vector<std::string>> Repositories();
  /// The repositories of a Harbor 2 project ("PROJECT/NAME"; its API's
  /// /api/v2.0/projects/PROJECT/repositories, following Link pages, with Basic credentials).
  StatusOr<std::vector<std::string>> HarborRepositories(std::string const& project);

  /// Requests made, and tokens fetched (tests: a token is reused until it expires).
  std::int64_t requests() const;
  std::int64_t tokens_fetched() const;

 private:
  struct Response;
  struct Request;
  /// One GET with the credentials the scope needs; on a 401 the challenge is answered (a
  /// token fetched, or Basic credentials sent) and the request made once more.
  StatusOr<Response> Get(Request const& request);
  StatusOr<Response> Perform(Request const& request, std::string const& authorization);
  Status Authorize(std::string const& scope, std::string const& challenge);
  std::string AuthorizationFor(std::string const& scope);
  /// `key`: the answer's array of names; nullptr: the answer is an array of {name} objects.
  StatusOr<std::vector<std::string>> Paged(std::string const& path, std::string const& scope,
                                           char const* key);

  RegistryEndpoint endpoint_;
  mutable std::mutex mu_;
  bool basic_ = false;  ///< the registry asked for Basic credentials
  struct Cached {
    std::string token;
    std::chrono::steady_clock::time_point expires;
  };
  std::map<std::string, Cached> tokens_;  ///< by scope
  std::int64_t requests_ = 0, tokens_fetched_ = 0;
};

/// The repository scope a pull needs ("repository:lab/app:pull").
std::string PullScope(std::string const& repository);

}  // namespace bai::server::oci
