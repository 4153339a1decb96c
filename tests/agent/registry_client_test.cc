// SPDX-License-Identifier: Apache-2.0
// The registry client (server-reference/common/oci/registry_client.h) against a real registry:
// Debian's docker-registry on 127.0.0.1 (LocalRegistry), images pushed with skopeo. Manifests by
// tag and by digest, configs, layers checked against their digests, a download that broke off
// resumed with Range, a corrupted blob refused naming its digest, an index of two platforms,
// Basic auth, and listings paged by Link.
#include "server-reference/common/oci/registry_client.h"

#include "server-reference/agent/images.h"
#include "server-reference/common/oci/reference.h"
#include "tests/testing_util/layer_tar.h"
#include "tests/testing_util/local_registry.h"
#include "tests/testing_util/subprocess.h"
#include "tests/testing_util/test_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace bai::server::oci {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing_util::LayerFile;
using testing_util::LocalRegistry;

// An image of two layers (a base of 300 KiB of incompressible bytes, then one file) pushed as
// `repository_tag`.
std::string PushImage(LocalRegistry& registry, testing_util::TempDir& dir,
                      std::string const& repository_tag, std::string const& marker) {
  std::string noise;
  std::uint32_t x = 12345;
  for (int i = 0; i < 300 * 1024; ++i) {
    x = x * 1103515245 + 12345;
    noise += static_cast<char>(x >> 24);
  }
  std::string layout = dir.path() + "/layout-" + marker;
  testing_util::WriteOciLayout(
      layout, "t",
      {{LayerFile("base.bin", noise)}, {LayerFile("etc/os-release", "NAME=\"" + marker + "\"\n")}});
  return registry.Push(layout, "t", repository_tag);
}

class RegistryClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(registry_.error(), "");
    ASSERT_EQ(PushImage(registry_, dir_, "lab/app:1", "one"), "");
  }
  RegistryClient Client() { return RegistryClient({registry_.url(), "", "", true}); }

  LocalRegistry registry_;
  testing_util::TempDir dir_;
};

TEST_F(RegistryClientTest, AnImageIsReadByTagAndByDigestWithItsConfigAndLayers) {
  auto client = Client();
  ASSERT_TRUE(client.Ping().ok());
  auto m = client.GetManifest("lab/app", "1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m->document.manifest);
  auto const& manifest = *m->document.manifest;
  ASSERT_EQ(manifest.layers.size(), 2u);
  EXPECT_EQ(m->digest, Sha256Digest(m->body));
  // By digest: the same bytes; pinned, so the bytes must have that digest.
  auto pinned = client.GetManifest("lab/app", m->digest);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(pinned->body, m->body);
  auto config = client.GetBlob("lab/app", manifest.config);
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto parsed = ParseImageConfig(*config);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->diff_ids.size(), 2u);
  // Each layer into a file, its digest checked while it streams; progress reaches the size.
  for (auto const& layer : manifest.layers) {
    std::string path = dir_.path() + "/" + layer.digest.substr(7);
    std::int64_t seen = 0;
    auto s = client.DownloadBlob("lab/app", layer, path, [&](std::int64_t n) { seen = n; });
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(path)), layer.size);
    EXPECT_EQ(Sha256Digest(testing_util::ReadFileBytes(path)), layer.digest);
    EXPECT_EQ(seen, layer.size);
  }
  // What is not there is NotFound in the registry's words.
  auto missing = client.GetManifest("lab/app", "2");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("MANIFEST_UNKNOWN"));
  EXPECT_EQ(client.GetManifest("lab/nothing", "1").status().code(), StatusCode::kNotFound);
}

TEST_F(RegistryClientTest, ADownloadThatBrokeOffResumesAndACorruptBlobIsRefused) {
  auto client = Client();
  auto m = client.GetManifest("lab/app", "1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Descriptor base = m->document.manifest->layers[0];
  std::string whole = dir_.path() + "/whole";
  ASSERT_TRUE(client.DownloadBlob("lab/app", base, whole).ok());
  std::string bytes = testing_util::ReadFileBytes(whole);
  // Half of it left by an earlier attempt: only the rest is fetched, and the whole checks out.
  std::string part = dir_.path() + "/part";
  testing_util::WriteFileBytes(part, bytes.substr(0, bytes.size() / 2));
  std::int64_t first_progress = -1;
  auto s = client.DownloadBlob("lab/app", base, part, [&](std::int64_t n) {
    if (first_progress < 0) first_progress = n;
  });
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing_util::ReadFileBytes(part), bytes);
  EXPECT_GT(first_progress, static_cast<std::int64_t>(bytes.size() / 2))
      << "the download went on from the half it had";
  // A partial file with wrong bytes fails the digest: refused and removed, not kept.
  std::string wrong = bytes.substr(0, bytes.size() / 2);
  wrong[0] = static_cast<char>(wrong[0] ^ 1);
  testing_util::WriteFileBytes(part, wrong);
  auto bad = client.DownloadBlob("lab/app", base, part);
  EXPECT_EQ(bad.code(), StatusCode::kDataLoss);
  EXPECT_THAT(bad.message(), HasSubstr(base.digest));
  EXPECT_FALSE(fs::exists(part));
  // A blob corrupted in the registry's store: refused naming the digest, nothing left behind.
  std::string stored = registry_.BlobFile(base.digest);
  ASSERT_TRUE(fs::exists(stored)) << stored;
  std::string corrupt = testing_util::ReadFileBytes(stored);
  corrupt[corrupt.size() / 3] = static_cast<char>(corrupt[corrupt.size() / 3] ^ 0x40);
  testing_util::WriteFileBytes(stored, corrupt);
  std::string again = dir_.path() + "/again";
  auto refused = client.DownloadBlob("lab/app", base, again);
  EXPECT_EQ(refused.code(), StatusCode::kDataLoss) << refused.message();
  EXPECT_THAT(refused.message(), HasSubstr(base.digest));
  EXPECT_FALSE(fs::exists(again));
}

TEST_F(RegistryClientTest, AnIndexOfTwoPlatformsGivesTheHostsOne) {
  ASSERT_EQ(PushImage(registry_, dir_, "lab/app:arm", "arm"), "");
  auto client = Client();
  auto amd = client.GetManifest("lab/app", "1");
  auto arm = client.GetManifest("lab/app", "arm");
  ASSERT_TRUE(amd.ok() && arm.ok());
  std::string index =
      R"({"schemaVersion": 2, "mediaType": ")" + std::string(media::kOciIndex) +
      R"(", "manifests": [{"mediaType": ")" + media::kOciManifest + R"(", "digest": ")" +
      arm->digest + R"(", "size": )" + std::to_string(arm->body.size()) +
      R"(, "platform": {"os": "linux", "architecture": "arm64"}}, {"mediaType": ")" +
      media::kOciManifest + R"(", "digest": ")" + amd->digest + R"(", "size": )" +
      std::to_string(amd->body.size()) +
      R"(, "platform": {"os": "linux", "architecture": "amd64"}}]})";
  testing_util::WriteFileBytes(dir_.path() + "/index.json", index);
  auto put = testing_util::RunProcess({"/usr/bin/curl", "-sf", "-X", "PUT", "-H",
                                       std::string("Content-Type: ") + media::kOciIndex,
                                       "--data-binary", "@" + dir_.path() + "/index.json",
                                       registry_.url() + "/v2/lab/app/manifests/multi"});
  ASSERT_EQ(put.exit_code, 0) << put.err << put.out;
  auto got = client.GetManifest("lab/app", "multi");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->document.index);
  auto chosen = ChoosePlatform(*got->document.index, OciArchitecture("x86_64"));
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->digest, amd->digest);
  EXPECT_EQ(ChoosePlatform(*got->document.index, "s390x").status().code(), StatusCode::kNotFound);
}

// The agent pulls a registry image into its store (a flat copy for now): both layers applied,
// the canonical name an alias; a corrupted layer is refused
// naming its digest and nothing is installed. Through `bai-agent image pull` too.
TEST_F(RegistryClientTest, TheAgentPullsAnImageAndRefusesACorruptLayer) {
  auto ref = ParseImageReference(registry_.host() + "/lab/app:1");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  agent::ImageStore store(dir_.path() + "/images");
  auto client = Client();
  std::vector<std::string> said;
  auto s = store.Pull(client, *ref, "app", [&](agent::PullProgress const& p) {
    if (!p.words.empty()) said.push_back(p.words);
  });
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(said.size(), 2u) << "one line per layer";
  auto img = store.Find(registry_.host() + "/lab/app:1");
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->name, "app");
  EXPECT_EQ(testing_util::ReadFileBytes(img->rootfs + "/etc/os-release"), "NAME=\"one\"\n");
  EXPECT_EQ(fs::file_size(img->rootfs + "/base.bin"), 300u * 1024) << "the base layer too";
  EXPECT_TRUE(fs::is_directory(img->rootfs + "/home/work"));
  auto staged = [&](std::string const& prefix) {  // a staging directory left behind
    for (auto const& e : fs::directory_iterator(dir_.path() + "/images")) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  EXPECT_FALSE(staged(".app.")) << "nothing left half-done";
  EXPECT_EQ(store.Pull(client, *ref, "app").code(), StatusCode::kAlreadyExists);

  // bai-agent image pull: another image of the registry (the same base), by its reference.
  ASSERT_EQ(PushImage(registry_, dir_, "lab/tool:2", "tool"), "");
  auto cli = testing_util::RunProcess({testing_util::BinPath("bai-agent"), "image", "pull",
                                       registry_.host() + "/lab/tool:2", "--name", "tool",
                                       "--state-dir", dir_.path()});
  ASSERT_EQ(cli.exit_code, 0) << cli.err << cli.out;
  EXPECT_THAT(cli.out, HasSubstr("pulled tool (" + registry_.host() + "/lab/tool:2)"));
  EXPECT_THAT(cli.err, HasSubstr("pulling layer 1/2"));
  EXPECT_TRUE(store.Find("tool").ok());
  auto bad =
      testing_util::RunProcess({testing_util::BinPath("bai-agent"), "image", "pull",
                                "127.0.0.1:1/Lab/x", "--name", "x", "--state-dir", dir_.path()});
  EXPECT_EQ(bad.exit_code, 2) << "a malformed reference is a usage error";
  EXPECT_THAT(bad.err, HasSubstr("Lab"));

  // The same image's base corrupted in the registry: refused naming the layer's digest.
  auto m = client.GetManifest("lab/app", "1");
  ASSERT_TRUE(m.ok());
  std::string base = m->document.manifest->layers[0].digest;
  std::string stored = registry_.BlobFile(base);
  std::string bytes = testing_util::ReadFileBytes(stored);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  testing_util::WriteFileBytes(stored, bytes);
  auto refused = store.Pull(client, *ref, "broken");
  EXPECT_EQ(refused.code(), StatusCode::kDataLoss) << refused.message();
  EXPECT_THAT(refused.message(), HasSubstr(base));
  EXPECT_FALSE(store.Find("broken").ok());
  EXPECT_FALSE(fs::exists(dir_.path() + "/images/broken"));
  EXPECT_FALSE(staged(".broken."));
}

TEST_F(RegistryClientTest, TagsAndRepositoriesArePagedByLink) {
  ASSERT_EQ(PushImage(registry_, dir_, "lab/app:2", "two"), "");
  ASSERT_EQ(PushImage(registry_, dir_, "lab/tool:1", "tool"), "");
  ASSERT_EQ(PushImage(registry_, dir_, "other/x:1", "x"), "");
  RegistryEndpoint e{registry_.url(), "", "", true};
  e.page_size = 1;
  RegistryClient client(e);
  auto tags = client.Tags("lab/app");
  ASSERT_TRUE(tags.ok()) << tags.status().message();
  EXPECT_THAT(*tags, ::testing::UnorderedElementsAre("1", "2"));
  auto before = client.requests();
  auto repos = client.Repositories();
  ASSERT_TRUE(repos.ok()) << repos.status().message();
  EXPECT_THAT(*repos, ::testing::UnorderedElementsAre("lab/app", "lab/tool", "other/x"));
  // docker-registry 2.8 pages the catalog (its tags/list answers all at once).
  EXPECT_GE(client.requests() - before, 3) << "one page per repository";
}

TEST(RegistryAuthTest, BasicAuthAsTheRegistryAsksForIt) {
  LocalRegistry registry({"alice", "s3cret-pass", "", ""});
  ASSERT_EQ(registry.error(), "");
  testing_util::TempDir dir;
  ASSERT_EQ(PushImage(registry, dir, "lab/app:1", "one"), "");
  RegistryClient anonymous({registry.url(), "", "", true});
  auto refused = anonymous.GetManifest("lab/app", "1");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("username and password"));
  RegistryClient wrong({registry.url(), "alice", "not-it", true});
  EXPECT_EQ(wrong.GetManifest("lab/app", "1").status().code(), StatusCode::kUnauthenticated);
  RegistryClient alice({registry.url(), "alice", "s3cret-pass", true});
  auto m = alice.GetManifest("lab/app", "1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto before = alice.requests();
  ASSERT_TRUE(alice.GetBlob("lab/app", m->document.manifest->config).ok());
  EXPECT_EQ(alice.requests(), before + 1) << "the credentials go with every request once asked";
}

// A token server of the test's own, as Docker's token auth has it: Basic credentials in, a JWT
// (RS256, the signing certificate in `x5c`) granting what the scope asks for out, living
// `lifetime` seconds.
class TokenServer {
 public:
  TokenServer(std::string const& dir, std::int64_t lifetime)
      : dir_(dir),
        lifetime_(lifetime),
        server_([this](testing_util::TestRequest const& r) { return Answer(r); }) {
    auto made =
        testing_util::RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048",
                                  "-nodes", "-keyout", dir + "/token.key", "-out",
                                  dir + "/token.pem", "-days", "1", "-subj", "/CN=bai-test-token"});
    error_ = made.exit_code == 0 ? "" : "openssl: " + made.err;
  }
  std::string const& error() const { return error_; }
  std::string realm() const { return server_.url() + "/token"; }
  std::string cert() const { return dir_ + "/token.pem"; }
  int issued() const { return issued_.load(); }

 private:
  static std::string B64Url(std::string const& bytes, bool url = true) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<unsigned char const*>(bytes.data()),
                            static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    if (!url) return out;
    while (!out.empty() && out.back() == '=') out.pop_back();
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
    return out;
  }
  std::string Sign(std::string const& input) const {
    std::FILE* f = std::fopen((dir_ + "/token.key").c_str(), "r");
    EVP_PKEY* key = f ? PEM_read_PrivateKey(f, nullptr, nullptr, nullptr) : nullptr;
    if (f) std::fclose(f);
    std::string sig(512, '\0');
    std::size_t len = sig.size();
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key);
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<unsigned char const*>(input.data()), input.size());
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    sig.resize(len);
    return sig;
  }
  std::string CertDerBase64() const {
    std::string pem = testing_util::ReadFileBytes(dir_ + "/token.pem");
    std::string body;
    std::istringstream lines(pem);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("-----", 0) != 0) body += line;
    }
    return body;  // PEM's body is the DER in base64
  }
  testing_util::TestResponse Answer(testing_util::TestRequest const& r) {
    auto const* auth = r.Header("authorization");
    if (auth == nullptr || *auth != "Basic " + B64Url("alice:s3cret-pass", false)) {
      return {401, "application/json", R"({"details": "wrong credentials"})", {}};
    }
    std::string scope;
    if (auto at = r.target.find("scope="); at != std::string::npos) {
      scope = r.target.substr(at + 6);
      scope = scope.substr(0, scope.find('&'));
      for (std::string from : {"%3A", "%2F", "%2C"}) {
        std::string to = from == "%3A" ? ":" : from == "%2F" ? "/" : ",";
        for (auto p = scope.find(from); p != std::string::npos; p = scope.find(from)) {
          scope.replace(p, 3, to);
        }
      }
    }
    nlohmann::json access = nlohmann::json::array();
    if (!scope.empty()) {
      auto first = scope.find(':'), last = scope.rfind(':');
      nlohmann::json actions = nlohmann::json::array();
      std::string list = scope.substr(last + 1);
      for (std::size_t b = 0, e; b <= list.size(); b = e + 1) {
        e = list.find(',', b);
        if (e == std::string::npos) e = list.size();
        actions.push_back(list.substr(b, e - b));
      }
      access.push_back({{"type", scope.substr(0, first)},
                        {"name", scope.substr(first + 1, last - first - 1)},
                        {"actions", actions}});
    }
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    nlohmann::json header = {{"typ", "JWT"}, {"alg", "RS256"}, {"x5c", {CertDerBase64()}}};
    nlohmann::json claims = {
        {"iss", "bai-test-issuer"},         {"sub", "alice"},  {"aud", "bai-test"},
        {"exp", now + lifetime_},           {"nbf", now - 10}, {"iat", now},
        {"jti", std::to_string(++issued_)}, {"access", access}};
    std::string input = B64Url(header.dump()) + "." + B64Url(claims.dump());
    std::string jwt = input + "." + B64Url(Sign(input));
    return {200,
            "application/json",
            nlohmann::json({{"token", jwt}, {"expires_in", lifetime_}}).dump(),
            {}};
  }

  std::string dir_;
  std::int64_t lifetime_;
  std::string error_;
  std::atomic<int> issued_{0};
  testing_util::TestHttpServer server_;
};

TEST(RegistryAuthTest, BearerTokensFromTheTokenServerAreKeptAndRenewedWhenTheyExpire) {
  testing_util::TempDir dir;
  // Tokens live 7 s; the client renews 5 s early, so one is fetched again 2 s on.
  TokenServer tokens(dir.path(), 7);
  ASSERT_EQ(tokens.error(), "");
  LocalRegistry registry({"alice", "s3cret-pass", tokens.realm(), tokens.cert()});
  ASSERT_EQ(registry.error(), "");
  ASSERT_EQ(PushImage(registry, dir, "lab/app:1", "one"), "");
  RegistryClient anonymous({registry.url(), "", "", true});
  auto refused = anonymous.GetManifest("lab/app", "1");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("token server refused an anonymous pull"));
  RegistryClient alice({registry.url(), "alice", "s3cret-pass", true});
  auto m = alice.GetManifest("lab/app", "1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(alice.GetBlob("lab/app", m->document.manifest->config).ok());
  auto const& layer = m->document.manifest->layers[0];
  ASSERT_TRUE(alice.DownloadBlob("lab/app", layer, dir.path() + "/l0").ok());
  EXPECT_EQ(alice.tokens_fetched(), 1) << "one token for the repository while it lives";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_TRUE(
      alice.DownloadBlob("lab/app", m->document.manifest->layers[1], dir.path() + "/l1").ok());
  EXPECT_EQ(alice.tokens_fetched(), 2) << "an expired token is renewed, the pull goes on";
}

TEST(RegistryAuthTest, AnUnreachableRegistryIsSaidInWords) {
  RegistryEndpoint e{"http://127.0.0.1:1", "", "", true};
  e.stall_timeout = std::chrono::seconds(5);
  RegistryClient client(e);
  auto s = client.Ping();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("cannot reach the registry at http://127.0.0.1:1"));
}

}  // namespace
}  // namespace bai::server::oci
