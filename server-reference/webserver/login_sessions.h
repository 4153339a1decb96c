// SPDX-License-Identifier: Apache-2.0
#pragma once
// The webserver's logins, kept in the manager's database (table web_sessions, migration 21) so
// that several webservers serve the same users. A row is found by the SHA-256 of its cookie
// token (a copy of the database holds no usable cookie); the secret key is read from the
// keypair at each use, so a keypair or user made inactive ends its logins at once.

#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/webserver/session_mode.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bai::webserver {

/// One login as a request needs it.
struct LoginSession {
  LoginIdentity identity;
  std::string secret_key;
  std::string username;
  std::string csrf_token;
  std::int64_t expires_at = 0;  ///< Unix seconds
};

class LoginSessions {
 public:
  explicit LoginSessions(server::Database& db) : db_(db) {}

  struct Created {
    std::string token;  ///< the cookie's value: 256 random bits, URL-safe Base64
    std::string csrf_token;
    std::int64_t expires_at = 0;
  };
  /// A new login for `who` lasting `max_age` seconds from `now` (Unix seconds).
  StatusOr<Created> Create(LoginIdentity const& who, std::string const& username,
                           std::string const& peer, std::int64_t max_age, std::int64_t now);
  /// The live login of `token`: nullopt when unknown, expired, or its keypair or user inactive.
  StatusOr<std::optional<LoginSession>> Find(std::string const& token, std::int64_t now);
  /// Ends the login (no error when there is none).
  Status End(std::string const& token);
  /// Moves the login's end to `now + max_age`; nullopt when there is no live login.
  StatusOr<std::optional<std::int64_t>> Extend(std::string const& token, std::int64_t max_age,
                                               std::int64_t now);
  /// Deletes expired logins; how many.
  StatusOr<std::int64_t> Purge(std::int64_t now);
  /// The domains of the users signing in as `username` (an email or a user name), for a
  /// sign-in that names no domain.
  StatusOr<std::vector<std::string>> DomainsOf(std::string const& username);

  /// The row key of a token (lowercase hex SHA-256).
  static std::string Hash(std::string const& token);
  /// `bytes` random bytes as URL-safe Base64 without padding (cookies, CSRF tokens, nonces).
  static std::string RandomToken(std::size_t bytes);

 private:
  server::Database& db_;
};

}  // namespace bai::webserver
