// SPDX-License-Identifier: Apache-2.0
// Signing and JSON codec costs. Baselines in the same run: a bare SHA-256 HMAC of the same
// string (what signing cannot go below) and a JSON parse of the same document.
#include "bai/protocol/signing.h"

#include "libbai/protocol/wire_json.h"

#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>

namespace {

bai::protocol::SigningInput Input() {
  bai::protocol::SigningInput in;
  in.method = "GET";
  in.request_target = "/session/my-session/logs?owner_access_key=AKIAEXAMPLEOWNER0000";
  in.date = "2024-09-15T01:02:03.456789+00:00";
  in.host = "127.0.0.1:8081";
  in.content_type = "text/plain";
  in.api_version = "v8.20240915";
  return in;
}

constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

void BM_BaselineSingleHmac(benchmark::State& state) {
  auto sts = bai::protocol::StringToSign(Input());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  for (auto _ : state) {
    HMAC(EVP_sha256(), kSecret, sizeof kSecret - 1,
         reinterpret_cast<unsigned char const*>(sts.data()), sts.size(), out, &len);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_BaselineSingleHmac);

void BM_Sign(benchmark::State& state) {
  auto in = Input();
  for (auto _ : state) benchmark::DoNotOptimize(bai::protocol::Sign(in, kSecret));
}
BENCHMARK(BM_Sign);

void BM_VerifyRequest(benchmark::State& state) {
  auto in = Input();
  auto sig = *bai::protocol::Sign(in, kSecret);
  auto auth = bai::protocol::AuthorizationHeaderValue("AKIAIOSFODNN7EXAMPLE", sig,
                                                      bai::protocol::HashAlgorithm::kSha256);
  bai::protocol::ReceivedRequest r;
  r.method = in.method;
  r.raw_target = in.request_target;
  r.date = in.date;
  r.host = in.host;
  r.content_type = *in.content_type;
  r.backendai_version = in.api_version;
  r.authorization = auth;
  auto now = std::chrono::system_clock::time_point(
      std::chrono::seconds(bai::protocol::ParseHttpDate(in.date)->unix_seconds));
  for (auto _ : state) {
    auto pending = bai::protocol::PrepareVerification(r, now);
    benchmark::DoNotOptimize(bai::protocol::VerifySignature(*pending, kSecret));
  }
}
BENCHMARK(BM_VerifyRequest);

constexpr char kSessionJson[] =
    R"({"name":"my-sess","image":"cr.backend.ai/stable/python:3.9-ubuntu20.04","architecture":)"
    R"("x86_64","type":"interactive","group":"default","domain":"default","clusterSize":1,)"
    R"("clusterMode":"single-node","enqueueOnly":false,"maxWaitSeconds":0,"reuseIfExists":true,)"
    R"("startupCommand":null,"starts_at":null,"bootstrap_script":null,"tag":null,)"
    R"("owner_access_key":null,"dependencies":null,"callback_url":null,"config":{"mounts":[],)"
    R"("environ":{},"resources":{"cpu":"2","mem":"4294967296","cuda.shares":"0.5"},)"
    R"("resource_opts":{},"scalingGroup":null}})";

void BM_JsonDecode(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(bai::internal::ParseJson(kSessionJson));
}
BENCHMARK(BM_JsonDecode);

void BM_JsonEncode(benchmark::State& state) {
  auto doc = *bai::internal::ParseJson(kSessionJson);
  for (auto _ : state) benchmark::DoNotOptimize(doc.dump());
}
BENCHMARK(BM_JsonEncode);

void BM_SlotsDecode(benchmark::State& state) {
  auto doc = (*bai::internal::ParseJson(kSessionJson))["config"]["resources"];
  for (auto _ : state) benchmark::DoNotOptimize(bai::internal::SlotsFromJson(doc));
}
BENCHMARK(BM_SlotsDecode);

}  // namespace

BENCHMARK_MAIN();
