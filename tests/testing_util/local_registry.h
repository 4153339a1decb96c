// SPDX-License-Identifier: Apache-2.0
#pragma once
// A registry of the test's own on 127.0.0.1: Debian's docker-registry (the CNCF distribution
// registry) on a free port, its storage in a temporary directory, htpasswd (Basic) auth when a
// user is given; images pushed into it with skopeo from OCI layouts (layer_tar.h). No internet.

#include "tests/testing_util/subprocess.h"

#include <memory>
#include <string>

namespace bai::testing_util {

class LocalRegistry {
 public:
  struct Options {
    std::string username, password;  ///< set: the registry wants them (htpasswd, bcrypt)
    /// Set: Bearer tokens instead, from this realm (a token server of the test's own), signed
    /// by the key of the certificate `token_cert` (PEM); service "bai-test", issuer
    /// "bai-test-issuer".
    std::string token_realm, token_cert;
  };
  LocalRegistry() : LocalRegistry(Options{}) {}
  explicit LocalRegistry(Options options);
  ~LocalRegistry();

  /// "" when it runs; else why not (docker-registry or skopeo missing, no port).
  std::string const& error() const { return error_; }
  std::string const& url() const { return url_; }    ///< http://127.0.0.1:PORT
  std::string const& host() const { return host_; }  ///< 127.0.0.1:PORT
  /// Pushes the image tagged `tag` of the OCI layout at `layout` as `repository:repo_tag`;
  /// "" or skopeo's words.
  std::string Push(std::string const& layout, std::string const& tag,
                   std::string const& repository_tag);
  /// The registry's output so far (its access log: a line per request).
  std::string Log() const;
  /// How many `method` requests for `path` ("/v2/lab/app/blobs/sha256:…") it has answered, from
  /// its access log.
  int Requests(std::string const& method, std::string const& path) const;
  /// Where the registry keeps the blob `digest` ("sha256:…") on disk (tests corrupt it).
  std::string BlobFile(std::string const& digest) const;

 private:
  TempDir dir_;
  Options options_;
  std::string error_, url_, host_;
  std::unique_ptr<BackgroundProcess> process_;
};

}  // namespace bai::testing_util
