// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fixture of the vfolder tests: an in-process bai-manager with its embedded storage proxy,
// the bootstrap superadmin and two users (alice, bob), and helpers for /folders calls, tus
// uploads and downloads on the proxy's listener.

#include "bai/client.h"

#include "server-reference/manager/manager.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/sha.h>

#include <filesystem>
#include <random>

namespace bai::manager {
namespace testing_vfolders {

using nlohmann::json;
using testing_util::TempDir;

inline std::string Random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

inline std::string Base64Sha256(std::string const& data) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<unsigned char const*>(data.data()), data.size(), d);
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < sizeof d; i += 3) {
    unsigned v =
        d[i] << 16 | (i + 1 < sizeof d ? d[i + 1] << 8 : 0) | (i + 2 < sizeof d ? d[i + 2] : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < sizeof d ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < sizeof d ? kAlphabet[v & 63] : '=';
  }
  return out;
}

class VFolderTest : public testing_util::ManagerFixture {
 protected:
  void SetUp() override {
    ManagerFixture::SetUp();
    alice_keys_ = AddUser("default", "alice", "user", "Alice");
    alice_ = ClientFor(alice_keys_.first, alice_keys_.second);
    bob_ = SignUp("default", "bob", "user", "Bob");
  }

  /// The manager again, on a port of its own (and its storage proxy's).
  void Start() {
    config_.listen_port = 0;
    StartManager();
  }

  ApiResponse Call(Client& who, std::string const& method, std::string const& path,
                   json const& body = nullptr) {
    ApiRequest request(method, path);
    if (!body.is_null()) request.body = body.dump();
    auto r = who.Send(request);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : ApiResponse{};
  }

  // An unsigned request to a URL the manager handed out (the storage proxy).
  ApiResponse Raw(std::string const& url, std::string const& method, std::string body = {},
                  std::vector<std::pair<std::string, std::string>> headers = {}) {
    auto scheme_end = url.find("://");
    auto path_at = url.find('/', scheme_end + 3);
    Options o;
    o.endpoints = {url.substr(0, path_at)};
    o.api_version = "v8.20240915";
    o.retry.max_attempts = 1;
    auto c = Client::Create(o);
    EXPECT_TRUE(c.ok()) << url.substr(0, 200);
    if (!c.ok()) return ApiResponse{};  // not a URL (an error's text): nothing to send
    ApiRequest r(method, url.substr(path_at));
    r.sign = false;
    r.body = std::move(body);
    r.content_type = "application/offset+octet-stream";
    r.headers = std::move(headers);
    auto out = c->Send(r);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? *out : ApiResponse{};
  }

  std::string Create(Client& who, std::string const& name, json extra = json::object()) {
    extra["name"] = name;
    auto r = Call(who, "POST", "/folders", extra);
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body, nullptr, false).value("id", "");
  }

  // Alice's folder `name`, all her folders capped at `bytes` together (a user resource
  // policy's max_quota_scope_size, given to her by the superadmin).
  bool CreateForAliceWithScopeQuota(std::string const& name, std::int64_t bytes) {
    Create(*alice_, name);
    std::string policy = "scope" + std::to_string(bytes);
    auto gql = [&](std::string const& mutation) {
      auto r = Call(*root_, "POST", "/admin/gql", {{"query", "mutation { " + mutation + " }"}});
      return r.body.find("\"ok\":true") != std::string::npos;
    };
    return gql("create_user_resource_policy(name: \"" + policy +
               "\", props: {max_vfolder_count: 0, max_quota_scope_size: " + std::to_string(bytes) +
               "}) { ok }") &&
           gql("modify_user(email: \"alice@example.com\", props: {resource_policy: \"" + policy +
               "\"}) { ok }");
  }

  // url?token=… of a request-upload / request-download.
  std::pair<int, std::string> Ticket(Client& who, std::string const& folder, std::string const& op,
                                     json body) {
    auto r = Call(who, "POST", "/folders/" + folder + "/" + op, body);
    auto j = json::parse(r.body, nullptr, false);
    if (r.status != 200) return {r.status, r.body};
    return {200, j.value("url", "") + "?token=" + j.value("token", "")};
  }

  ApiResponse Patch(std::string const& url, std::int64_t offset, std::string const& chunk,
                    bool checksum = true) {
    std::vector<std::pair<std::string, std::string>> h = {
        {"Tus-Resumable", "1.0.0"}, {"Upload-Offset", std::to_string(offset)}};
    if (checksum) h.emplace_back("Upload-Checksum", "sha256 " + Base64Sha256(chunk));
    return Raw(url, "PATCH", chunk, h);
  }

  // Uploads `data` as `path` in chunks of `chunk` bytes.
  void Upload(Client& who, std::string const& folder, std::string const& path,
              std::string const& data, std::size_t chunk = 65536) {
    auto [status, url] =
        Ticket(who, folder, "request-upload", {{"path", path}, {"size", data.size()}});
    ASSERT_EQ(status, 200) << url;
    for (std::size_t off = 0; off < data.size(); off += chunk) {
      auto r = Patch(url, static_cast<std::int64_t>(off), data.substr(off, chunk));
      ASSERT_EQ(r.status, 204) << r.body;
      EXPECT_EQ(r.Header("upload-offset"), std::to_string(std::min(data.size(), off + chunk)));
    }
  }

  std::string Download(Client& who, std::string const& folder, std::string const& path) {
    auto [status, url] = Ticket(who, folder, "request-download", {{"path", path}});
    EXPECT_EQ(status, 200) << url;
    if (status != 200) return {};
    auto r = Raw(url, "GET");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }

  std::string FolderDir(std::string const& id, std::string const& user_id) {
    std::string scope = "user-";
    for (char c : user_id) {
      if (c != '-') scope += c;
    }
    return config_.data_dir + "/vfolders/volume1/" + scope + "/" + id.substr(0, 2) + "/" +
           id.substr(2, 2) + "/" + id.substr(4);
  }

  std::string UserId(Client& who) {
    auto r = Call(who, "GET", "/folders");
    (void)r;
    auto j = json::parse(Call(who, "POST", "/folders", {{"name", "probe-uid"}}).body);
    std::string uid = j.value("user", "");
    auto id = j.value("id", "");
    Call(who, "DELETE", "/folders/probe-uid");
    Call(who, "POST", "/folders/delete-from-trash-bin", {{"vfolder_id", id}});
    return uid;
  }

  std::unique_ptr<Client> alice_, bob_;
  std::pair<std::string, std::string> alice_keys_;
};

}  // namespace testing_vfolders
}  // namespace bai::manager
