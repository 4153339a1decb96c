// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/signing.h"

#include "bai/protocol/errors.h"

#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace bai::protocol {
namespace {

using nlohmann::json;
using std::chrono::system_clock;

json LoadVectors(std::string const& file) {
  std::ifstream in(testing_util::DataPath(file));
  EXPECT_TRUE(in.good()) << "missing test data " << file;
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str())["vectors"];
}

SigningInput InputOf(json const& v) {
  SigningInput in;
  in.method = v["method"];
  in.request_target = v["request_target"];
  in.date = v["date"];
  in.host = v["host"];
  in.content_type = v["content_type"].get<std::string>();
  in.api_version = v["api_version"];
  in.hash = v["hash"] == "sha512" ? HashAlgorithm::kSha512 : HashAlgorithm::kSha256;
  return in;
}

std::string Hex(std::string const& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// A request as the verifier receives it, built from a vector.
struct Received {
  std::string method, target, date, host, content_type, version, authorization;
  ReceivedRequest View() const {
    ReceivedRequest r;
    r.method = method;
    r.raw_target = target;
    r.date = date;
    r.host = host;
    if (content_type != "application/octet-stream") r.content_type = content_type;
    r.backendai_version = version;
    r.authorization = authorization;
    return r;
  }
};

Received ReceivedOf(json const& v) {
  std::string sig = v["signature"];
  auto hash = v["hash"] == "sha512" ? HashAlgorithm::kSha512 : HashAlgorithm::kSha256;
  return {v["method"],
          v["request_target"],
          v["date"],
          v["host"],
          v["content_type"],
          v["api_version"],
          AuthorizationHeaderValue(v["access_key"].get<std::string>(), sig, hash)};
}

system_clock::time_point TimeOf(std::string const& date) {
  auto parsed = ParseHttpDate(date);
  EXPECT_TRUE(parsed.has_value()) << date;
  return system_clock::time_point(std::chrono::seconds(parsed ? parsed->unix_seconds : 0));
}

Status Verify(Received const& r, system_clock::time_point now, std::string const& secret) {
  auto pending = PrepareVerification(r.View(), now);
  if (!pending.ok()) return pending.status();
  return VerifySignature(*pending, secret);
}

class VectorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VectorTest, SignerReproducesEveryVector) {
  auto vectors = LoadVectors(GetParam());
  ASSERT_GE(vectors.size(), 5u);
  for (auto const& v : vectors) {
    SCOPED_TRACE(v["name"].get<std::string>());
    auto in = InputOf(v);
    EXPECT_EQ(StringToSign(in), v["string_to_sign"].get<std::string>());
    auto sig = Sign(in, v["secret_key"].get<std::string>());
    ASSERT_TRUE(sig.ok()) << sig.status().message();
    EXPECT_EQ(*sig, v["signature"].get<std::string>());
    if (v.contains("signing_key_step2_hex")) {
      std::string key_date = v["date"].get<std::string>().substr(0, 10);
      key_date.erase(std::remove(key_date.begin(), key_date.end(), '-'), key_date.end());
      EXPECT_EQ(Hex(DeriveSigningKey(v["secret_key"].get<std::string>(), key_date,
                                     v["host"].get<std::string>(), in.hash)),
                v["signing_key_step2_hex"].get<std::string>());
    }
    if (v.contains("authorization")) {
      EXPECT_EQ(AuthorizationHeaderValue(v["access_key"].get<std::string>(), *sig, in.hash),
                v["authorization"].get<std::string>());
    }
  }
}

TEST_P(VectorTest, VerifierAcceptsEveryVector) {
  for (auto const& v : LoadVectors(GetParam())) {
    SCOPED_TRACE(v["name"].get<std::string>());
    auto r = ReceivedOf(v);
    auto status = Verify(r, TimeOf(r.date) + std::chrono::minutes(3), v["secret_key"]);
    EXPECT_TRUE(status.ok()) << status.message();
  }
}

TEST_P(VectorTest, VerifierRejectsWrongSecretAndEveryAlteredLine) {
  for (auto const& v : LoadVectors(GetParam())) {
    SCOPED_TRACE(v["name"].get<std::string>());
    Received const good = ReceivedOf(v);
    auto now = TimeOf(good.date);
    std::string secret = v["secret_key"];
    auto expect_mismatch = [&](Received const& r, char const* what,
                               std::string const& key = std::string()) {
      auto status = Verify(r, now, key.empty() ? secret : key);
      EXPECT_EQ(status.code(), StatusCode::kUnauthenticated) << what;
      EXPECT_EQ(status.error_info().http_status, 401) << what;
      EXPECT_EQ(status.error_info().type, ProblemTypeUrl(ProblemType::kAuthFailed)) << what;
    };
    Received r = good;
    EXPECT_TRUE(Verify(r, now, secret).ok());
    expect_mismatch(good, "wrong secret", "x" + secret);
    expect_mismatch(good, "longer secret", secret + "x");
    r = good, r.method = good.method == "GET" ? "POST" : "GET", expect_mismatch(r, "method");
    r = good, r.target = good.target + "x", expect_mismatch(r, "path");
    r = good,
    r.target = good.target + (good.target.find('?') != std::string::npos ? "&a=1" : "?a=1"),
    expect_mismatch(r, "query");
    r = good, r.host = "evil.example.com", expect_mismatch(r, "host");
    r = good,
    r.content_type = good.content_type == "text/plain" ? "application/json" : "text/plain",
    expect_mismatch(r, "content type");
    r = good, r.version = good.version == "v8.20240915" ? "v8.20240315" : "v8.20240915",
    expect_mismatch(r, "version");
    // The date moved by one second: still parseable and in the window, but signed differently.
    auto parsed = ParseHttpDate(good.date);
    ASSERT_TRUE(parsed);
    r = good;
    auto pos = r.date.find(':');
    ASSERT_NE(pos, std::string::npos);
    r.date[pos + 5] = r.date[pos + 5] == '9' ? '8' : static_cast<char>(r.date[pos + 5] + 1);
    expect_mismatch(r, "date");
  }
}

INSTANTIATE_TEST_SUITE_P(Vectors, VectorTest,
                         ::testing::Values("signing_vectors.json", "extra_signing_vectors.json"));

TEST(SigningTest, VerifyingWithADerivedKeyMatchesVerifyingWithTheSecret) {
  for (auto const& v : LoadVectors("signing_vectors.json")) {
    auto r = ReceivedOf(v);
    auto pending = PrepareVerification(r.View(), TimeOf(r.date));
    ASSERT_TRUE(pending.ok());
    auto key_date = KeyDateOf(pending->input);
    ASSERT_TRUE(key_date.ok());
    std::string secret = v["secret_key"];
    auto key = DeriveSigningKey(secret, *key_date, pending->input.host, pending->input.hash);
    EXPECT_TRUE(VerifySignatureWithKey(*pending, key).ok());
    EXPECT_EQ(SignWithKey(pending->input, key), v["signature"].get<std::string>());
    auto wrong =
        DeriveSigningKey(secret + "x", *key_date, pending->input.host, pending->input.hash);
    EXPECT_EQ(VerifySignatureWithKey(*pending, wrong).code(), StatusCode::kUnauthenticated);
  }
}

TEST(SigningTest, WrongSecretIsSignatureMismatch) {
  auto v = LoadVectors("signing_vectors.json")[0];
  auto r = ReceivedOf(v);
  auto status = Verify(r, TimeOf(r.date), "not-the-secret");
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(status.error_info().detail, "Signature mismatch");
}

TEST(SigningTest, SkewBeyondFifteenMinutesIsRejected) {
  auto v = LoadVectors("signing_vectors.json")[0];
  auto r = ReceivedOf(v);
  auto t = TimeOf(r.date);
  std::string secret = v["secret_key"];
  EXPECT_TRUE(Verify(r, t + std::chrono::minutes(15), secret).ok());
  EXPECT_TRUE(Verify(r, t - std::chrono::minutes(15), secret).ok());
  for (auto now :
       {t + std::chrono::minutes(15) + std::chrono::seconds(1),
        t - std::chrono::minutes(15) - std::chrono::seconds(1), t + std::chrono::hours(24 * 365)}) {
    auto status = Verify(r, now, secret);
    EXPECT_EQ(status.error_info().http_status, 400);
    EXPECT_EQ(status.error_info().type, ProblemTypeUrl(ProblemType::kInvalidAuthParams));
    EXPECT_THAT(status.message(), ::testing::HasSubstr("Date/time sync error"));
  }
}

TEST(SigningTest, UppercaseHexSignatureIsRejected) {
  auto v = LoadVectors("signing_vectors.json")[0];
  auto r = ReceivedOf(v);
  std::string sig = v["signature"];
  for (char& c : sig) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  r.authorization =
      AuthorizationHeaderValue(v["access_key"].get<std::string>(), sig, HashAlgorithm::kSha256);
  auto status = Verify(r, TimeOf(r.date), v["secret_key"]);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.error_info().http_status, 400);
  EXPECT_EQ(status.error_info().type, ProblemTypeUrl(ProblemType::kInvalidAuthParams));
}

TEST(SigningTest, XBackendAIDateIsUsedWhenDateIsAbsent) {
  auto v = LoadVectors("signing_vectors.json")[1];
  auto r = ReceivedOf(v);
  ReceivedRequest view = r.View();
  view.date.reset();
  view.backendai_date = r.date;
  auto pending = PrepareVerification(view, TimeOf(r.date));
  ASSERT_TRUE(pending.ok()) << pending.status().message();
  EXPECT_TRUE(VerifySignature(*pending, v["secret_key"].get<std::string>()).ok());
}

TEST(SigningTest, MissingHeadersAreClearErrors) {
  auto v = LoadVectors("signing_vectors.json")[0];
  auto r = ReceivedOf(v);
  auto now = TimeOf(r.date);
  ReceivedRequest no_date = r.View();
  no_date.date.reset();
  EXPECT_EQ(PrepareVerification(no_date, now).status().error_info().http_status, 400);
  ReceivedRequest no_version = r.View();
  no_version.backendai_version.reset();
  EXPECT_EQ(PrepareVerification(no_version, now).status().error_info().type,
            ProblemTypeUrl(ProblemType::kInvalidAuthParams));
  ReceivedRequest no_auth = r.View();
  no_auth.authorization.reset();
  auto status = PrepareVerification(no_auth, now).status();
  EXPECT_EQ(status.error_info().http_status, 401);
  EXPECT_EQ(status.error_info().type, ProblemTypeUrl(ProblemType::kAuthFailed));
  ReceivedRequest no_host = r.View();
  no_host.host.reset();
  EXPECT_EQ(PrepareVerification(no_host, now).status().error_info().http_status, 400);
}

TEST(SigningTest, MalformedAuthorizationHeadersAre400) {
  std::string const sig(64, 'a');
  for (std::string const& header : std::vector<std::string>{
           std::string(""), std::string("BackendAI"),
           "Bearer signMethod=HMAC-SHA256, credential=AK:" + sig,
           "BackendAI signMethod=HMAC-SHA256", "BackendAI credential=AK:" + sig,
           "BackendAI signMethod=HMAC-SHA256, credential",
           "BackendAI signMethod=HMAC-SHA256, , credential=AK:" + sig,
           "BackendAI signMethod=HMAC-SHA-256, credential=AK:" + sig,
           "BackendAI signMethod=SHA256, credential=AK:" + sig,
           "BackendAI signMethod=HMAC-MD5, credential=AK:" + sig,
           "BackendAI signMethod=HMAC-SHA256, credential=AK" + sig,
           "BackendAI signMethod=HMAC-SHA256, credential=:" + sig,
           "BackendAI signMethod=HMAC-SHA256, credential=AK:" + sig.substr(1),
           "BackendAI signMethod=HMAC-SHA256, credential=AK:" + sig + "0",
           "BackendAI signMethod=HMAC-SHA256, credential=AK:" + std::string(64, 'g'),
           "BackendAI signMethod=HMAC-SHA512, credential=AK:" + sig,
           "BackendAI signMethod=HMAC-SHA256, credential=AK:" + std::string(2000, 'a')}) {
    SCOPED_TRACE(header);
    auto parsed = ParseAuthorization(header);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().error_info().http_status, 400);
    EXPECT_EQ(parsed.status().error_info().type, ProblemTypeUrl(ProblemType::kInvalidAuthParams));
  }
}

TEST(SigningTest, AuthorizationParsingToleratesSpacingAndLegacyScheme) {
  std::string const sig(64, 'b');
  for (std::string const& header :
       std::vector<std::string>{"BackendAI signMethod=HMAC-SHA256, credential=AK:" + sig,
                                "BackendAI signMethod=hmac-sha256,credential=AK:" + sig,
                                "Sorna  credential=AK:" + sig + " ,  signMethod=HMAC-SHA256"}) {
    auto parsed = ParseAuthorization(header);
    ASSERT_TRUE(parsed.ok()) << header << ": " << parsed.status().message();
    EXPECT_EQ(parsed->access_key, "AK");
    EXPECT_EQ(parsed->signature, sig);
    EXPECT_EQ(parsed->hash, HashAlgorithm::kSha256);
  }
}

TEST(SigningTest, ParsesIsoAndRfc1123Dates) {
  struct Case {
    char const* text;
    std::int64_t unix_seconds;
    int offset;
    int key_date;
  };
  for (auto const& c : std::vector<Case>{
           {"2024-03-15T12:34:56+00:00", 1710506096, 0, 20240315},
           {"2024-03-15T12:34:56.123456+00:00", 1710506096, 0, 20240315},
           {"2024-03-15T12:34:56Z", 1710506096, 0, 20240315},
           {"2024-03-15T12:34:56", 1710506096, 0, 20240315},
           {"2024-03-15 12:34:56", 1710506096, 0, 20240315},
           {"20240315T123456Z", 1710506096, 0, 20240315},
           {"2024-03-16T01:00:00+09:00", 1710518400, 32400, 20240316},
           {"2024-03-16T01:00:00+0900", 1710518400, 32400, 20240316},
           {"2024-03-14T20:30:00-05:00", 1710466200, -18000, 20240314},
           {"Fri, 15 Mar 2024 12:34:56 GMT", 1710506096, 0, 20240315},
           {"Fri, 15 Mar 2024 12:34:56 UTC", 1710506096, 0, 20240315},
           {"15 Mar 2024 12:34:56 +0000", 1710506096, 0, 20240315},
           {"Sat, 16 Mar 2024 01:00:00 +0900", 1710518400, 32400, 20240316},
           {"Fri, 15 Mar 2024 07:34:56 EST", 1710506096, -18000, 20240315},
           {"2024-02-29T00:00:00Z", 1709164800, 0, 20240229},
       }) {
    auto d = ParseHttpDate(c.text);
    ASSERT_TRUE(d.has_value()) << c.text;
    EXPECT_EQ(d->unix_seconds, c.unix_seconds) << c.text;
    EXPECT_EQ(d->utc_offset_seconds, c.offset) << c.text;
    EXPECT_EQ(d->local_yyyymmdd, c.key_date) << c.text;
  }
}

TEST(SigningTest, RejectsMalformedDates) {
  for (char const* text :
       {"", "yesterday", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2024-03-15T24:00:00Z",
        "2024-03-15T12:60:00Z", "2024-03-15T12:34:56+25:00", "2024-03-15T12:34:56 XYZ",
        "2024-03-15T12:34:56Zjunk", "Fri, 15 Foo 2024 12:34:56 GMT",
        "Fri, 32 Mar 2024 12:34:56 GMT", "Fri 15 Mar 2024 12:34:56 GMT", "2024-03-15", "1710506096",
        "2024-03-15T12:34:56.Z"}) {
    EXPECT_FALSE(ParseHttpDate(text).has_value()) << text;
  }
}

TEST(SigningTest, ContentTypeIsSignedWithoutParameters) {
  EXPECT_EQ(SignedContentType(std::nullopt), "application/octet-stream");
  EXPECT_EQ(SignedContentType("Application/JSON; charset=utf-8"), "application/json");
  EXPECT_EQ(SignedContentType("multipart/form-data; boundary=xyz"), "multipart/form-data");
  EXPECT_EQ(SignedContentType(""), "text/plain");
}

TEST(SigningTest, FormatRequestDateRoundTrips) {
  auto t = system_clock::time_point(std::chrono::seconds(1710506096));
  EXPECT_EQ(FormatRequestDate(t), "2024-03-15T12:34:56+00:00");
  auto d = ParseHttpDate(FormatRequestDate(t));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->unix_seconds, 1710506096);
}

}  // namespace
}  // namespace bai::protocol
