// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/login_sessions.h"

#include "libbai/util/base64.h"

#include <openssl/evp.h>
#include <sodium.h>

#include <array>
#include <cstdio>

namespace bai::webserver {
std::string LoginSessions::RandomToken(std::size_t bytes) {
  if (sodium_init() < 0) std::abort();
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  std::string text = internal::Base64Encode(raw);
  for (auto& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!text.empty() && text.back() == '=') text.pop_back();
  return text;
}

StatusOr<std::vector<std::string>> LoginSessions::DomainsOf(std::string const& username) {
  auto rows =
      db_.Query("SELECT DISTINCT domain_name FROM users WHERE email = ? OR username = ? ORDER BY 1",
                {username, username});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<std::string> out;
  for (auto& r : *rows) out.push_back(r.Text(0));
  return out;
}

std::string LoginSessions::Hash(std::string const& token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int n = 0;
  EVP_Digest(token.data(), token.size(), digest.data(), &n, EVP_sha256(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

StatusOr<LoginSessions::Created> LoginSessions::Create(LoginIdentity const& who,
                                                       std::string const& username,
                                                       std::string const& peer,
                                                       std::int64_t max_age, std::int64_t now) {
  Created c{RandomToken(32), RandomToken(24), now + max_age};
  auto w = db_.Exec(
      "INSERT INTO web_sessions (token_hash, access_key, username, role, status, csrf_token, "
      "peer, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {Hash(c.token), who.access_key, username, who.role, who.status, c.csrf_token, peer, now,
       c.expires_at});
  if (!w.ok()) return std::move(w).status();
  return c;
}

StatusOr<std::optional<LoginSession>> LoginSessions::Find(std::string const& token,
                                                          std::int64_t now) {
  if (token.empty()) return std::optional<LoginSession>();
  auto rows = db_.Query(
      "SELECT w.access_key, w.role, w.status, w.username, w.csrf_token, w.expires_at, "
      "k.secret_key FROM web_sessions w JOIN keypairs k ON k.access_key = w.access_key "
      "JOIN users u ON u.uuid = k.user_id WHERE w.token_hash = ? AND w.expires_at > ? "
      "AND k.is_active = 1 AND u.status = 'active'",
      {Hash(token), now});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<LoginSession>();
  auto& r = rows->front();
  LoginSession s;
  s.identity = {r.TakeText(0), r.TakeText(1), r.TakeText(2)};
  s.username = r.TakeText(3);
  s.csrf_token = r.TakeText(4);
  s.expires_at = r.Int(5);
  s.secret_key = r.TakeText(6);
  return std::optional<LoginSession>(std::move(s));
}

Status LoginSessions::End(std::string const& token) {
  auto w = db_.Exec("DELETE FROM web_sessions WHERE token_hash = ?", {Hash(token)});
  return w.ok() ? Status() : std::move(w).status();
}

StatusOr<std::optional<std::int64_t>> LoginSessions::Extend(std::string const& token,
                                                            std::int64_t max_age,
                                                            std::int64_t now) {
  auto w =
      db_.Exec("UPDATE web_sessions SET expires_at = ? WHERE token_hash = ? AND expires_at > ?",
               {now + max_age, Hash(token), now});
  if (!w.ok()) return std::move(w).status();
  if (*w == 0) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(now + max_age);
}

StatusOr<std::int64_t> LoginSessions::Purge(std::int64_t now) {
  return db_.Exec("DELETE FROM web_sessions WHERE expires_at <= ?", {now});
}

}  // namespace bai::webserver
