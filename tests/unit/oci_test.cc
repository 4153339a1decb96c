// SPDX-License-Identifier: Apache-2.0
// What a registry pull reads (server-reference/common/oci/): references, manifests and indexes,
// the platform an agent picks, image configs, digests and chain ids, the auth challenge, the
// token answer, paging links and error documents.
#include "server-reference/common/oci/manifest.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::server::oci {
namespace {

using ::testing::HasSubstr;

std::string const kA = "sha256:" + std::string(64, 'a');
std::string const kB = "sha256:" + std::string(64, 'b');
std::string const kC = "sha256:" + std::string(64, 'c');

TEST(OciReferenceTest, RegistriesProjectsTagsAndDigests) {
  auto r = ParseImageReference("127.0.0.1:5000/lab/pytorch:2.3");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->registry, "127.0.0.1:5000");
  EXPECT_EQ(r->repository, "lab/pytorch");
  EXPECT_EQ(r->tag, "2.3");
  EXPECT_EQ(r->ManifestReference(), "2.3");
  EXPECT_EQ(r->Canonical(), "127.0.0.1:5000/lab/pytorch:2.3");
  auto cr = ParseImageReference("cr.backend.ai/stable/python:3.9-ubuntu20.04");
  ASSERT_TRUE(cr.ok());
  EXPECT_EQ(cr->registry, "cr.backend.ai");
  EXPECT_EQ(cr->repository, "stable/python");
  // No registry: Docker Hub, and a bare name is under lablup/ (24.09), latest when untagged.
  auto bare = ParseImageReference("python");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->Canonical(), "index.docker.io/lablup/python:latest");
  EXPECT_EQ(ParseImageReference("nvidia/cuda:12.1")->Canonical(),
            "index.docker.io/nvidia/cuda:12.1");
  EXPECT_EQ(ParseImageReference("localhost/app")->registry, "localhost");
  // A port is not a tag; a digest pins the image.
  auto pinned = ParseImageReference("localhost:5000/app@" + kA);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(pinned->repository, "app");
  EXPECT_EQ(pinned->tag, "");
  EXPECT_EQ(pinned->ManifestReference(), kA);
  auto both = ParseImageReference("h.io/a/b:1@" + kB);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->Canonical(), "h.io/a/b:1@" + kB);
  EXPECT_TRUE(ParseImageReference("h.io/a__b/c-d--e.f:T_1.x-y").ok());
}

TEST(OciReferenceTest, WhereARegistryAnswers) {
  EXPECT_EQ(RegistryUrl("index.docker.io"), "https://registry-1.docker.io");
  EXPECT_EQ(RegistryUrl("cr.backend.ai"), "https://cr.backend.ai");
  EXPECT_EQ(RegistryUrl("harbor.lab:8443"), "https://harbor.lab:8443");
  EXPECT_EQ(RegistryUrl("127.0.0.1:5000"), "http://127.0.0.1:5000") << "loopback: plain http";
  EXPECT_EQ(RegistryUrl("localhost:5000"), "http://localhost:5000");
  EXPECT_EQ(RegistryUrl("[::1]:5000"), "http://[::1]:5000");
  EXPECT_EQ(RegistryUrl("[::1]"), "http://[::1]");
  EXPECT_EQ(RegistryUrl("registry.lan:5000", true), "http://registry.lan:5000");
  EXPECT_EQ(RegistryUrl("127.example.com"), "https://127.example.com")
      << "a name that starts with 127. is not loopback";
}

TEST(OciReferenceTest, WhatIsNotAReferenceIsRefusedSayingWhichPart) {
  for (auto const* bad :
       {"", "h.io/", "h.io/Upper/x", "h.io/a//b", "h.io/-a", "h.io/a-:1", "h.io/a___b", "h.io/a.:1",
        "h.io/a:", "h.io/a:.x", "h.io/a:b c", "h.io/a@sha256:abc", "h.io/a@md5:" /* algorithm */}) {
    auto r = ParseImageReference(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_THAT(ParseImageReference("h.io/a:" + std::string(129, 'x')).status().message(),
              HasSubstr("tag"));
  EXPECT_THAT(ParseImageReference("h.io/a@sha256:" + std::string(64, 'A')).status().message(),
              HasSubstr("digest"));
  EXPECT_FALSE(ValidDigest("sha512:" + std::string(128, 'a')));
}

std::string ManifestJson(std::string const& type = media::kOciManifest) {
  return R"({"schemaVersion": 2, "mediaType": ")" + type +
         R"(", "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": ")" +
         kA + R"(", "size": 100}, "layers": [{"mediaType": "x", "digest": ")" + kB +
         R"(", "size": 1000}, {"mediaType": "x", "digest": ")" + kC + R"(", "size": 24}]})";
}

TEST(OciManifestTest, ImageManifestsOfBothKinds) {
  for (auto const* type : {media::kOciManifest, media::kDockerManifest}) {
    auto doc = ParseManifest(ManifestJson(type), type);
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    ASSERT_TRUE(doc->manifest);
    EXPECT_FALSE(doc->index);
    EXPECT_EQ(doc->manifest->config.digest, kA);
    ASSERT_EQ(doc->manifest->layers.size(), 2u);
    EXPECT_EQ(doc->manifest->layers[0].digest, kB) << "base first";
    EXPECT_EQ(doc->manifest->LayerBytes(), 1024);
  }
  // The Content-Type may carry parameters, or be generic; an OCI manifest may omit mediaType.
  EXPECT_TRUE(
      ParseManifest(ManifestJson(), std::string(media::kOciManifest) + "; charset=utf-8").ok());
  std::string untyped = ManifestJson();
  untyped.erase(untyped.find(R"("mediaType": ")"), std::string(R"("mediaType": ")").size() +
                                                       std::string(media::kOciManifest).size() + 3);
  auto u = ParseManifest(untyped, "application/json");
  ASSERT_TRUE(u.ok()) << u.status().message() << "\n" << untyped;
  EXPECT_TRUE(u->manifest);
}

TEST(OciManifestTest, WhatCannotBePulledIsRefusedBeforeAnyLayer) {
  EXPECT_THAT(ParseManifest("not json", "").status().message(), HasSubstr("JSON"));
  EXPECT_THAT(ParseManifest(R"({"schemaVersion": 1, "fsLayers": []})", "").status().message(),
              HasSubstr("schema 1"));
  EXPECT_THAT(ParseManifest(ManifestJson(), media::kDockerManifest).status().message(),
              HasSubstr("served as"));
  EXPECT_THAT(ParseManifest(R"({"mediaType": "application/x-other"})", "").status().message(),
              HasSubstr("unknown manifest type"));
  std::string md5 = ManifestJson();
  md5.replace(md5.find(kB), kB.size(), "md5:abc");
  EXPECT_THAT(ParseManifest(md5, "").status().message(), HasSubstr("layer 1"));
  std::string negative = ManifestJson();
  negative.replace(negative.find("1000"), 4, "-1");
  EXPECT_THAT(ParseManifest(negative, "").status().message(), HasSubstr("size"));
  EXPECT_THAT(
      ParseManifest(R"({"mediaType": ")" + std::string(media::kOciManifest) +
                        R"(", "config": {"digest": ")" + kA + R"(", "size": 1}, "layers": []})",
                    "")
          .status()
          .message(),
      HasSubstr("no layers"));
}

TEST(OciManifestTest, AnIndexGivesTheHostsPlatformAndPassesOverAttestations) {
  std::string index = R"({"mediaType": ")" + std::string(media::kOciIndex) + R"(", "manifests": [
      {"digest": ")" + kA +
                      R"(", "size": 1, "platform": {"os": "linux", "architecture": "arm64",
       "variant": "v8"}},
      {"digest": ")" + kB +
                      R"(", "size": 1, "platform": {"os": "unknown",
       "architecture": "unknown"}, "annotations": {"vnd.docker.reference.type":
       "attestation-manifest"}},
      {"digest": ")" + kC +
                      R"(", "size": 1, "platform": {"os": "linux", "architecture": "amd64"}},
      {"digest": ")" + kB +
                      R"(", "size": 1, "platform": {"os": "linux", "architecture": "amd64"}}
    ]})";
  auto doc = ParseManifest(index, "");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_TRUE(doc->index);
  EXPECT_EQ(ChoosePlatform(*doc->index, OciArchitecture("x86_64"))->digest, kC) << "the first";
  EXPECT_EQ(ChoosePlatform(*doc->index, OciArchitecture("aarch64"))->digest, kA);
  auto none = ChoosePlatform(*doc->index, "riscv64");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("linux/arm64/v8, linux/amd64"));
  EXPECT_THAT(none.status().message(), ::testing::Not(HasSubstr("unknown")));
  // Docker's manifest list is the same thing.
  std::string list = index;
  list.replace(list.find(media::kOciIndex), std::string(media::kOciIndex).size(),
               media::kDockerList);
  EXPECT_TRUE(ParseManifest(list, media::kDockerList)->index);
}

TEST(OciManifestTest, TheConfigSaysHowTheImageRunsAndWhatItsLayersHold) {
  std::string diff = "sha256:" + std::string(64, 'd');
  auto c = ParseImageConfig(R"({"architecture": "amd64", "os": "linux",
      "config": {"Env": ["PATH=/usr/bin", "LANG=C.UTF-8"], "WorkingDir": "/srv", "User": "1000",
                 "Entrypoint": ["/bin/sh", "-c"], "Cmd": ["echo hi"],
                 "Labels": {"ai.backend.kernelspec": "1", "n": 3}},
      "rootfs": {"type": "layers", "diff_ids": [")" +
                            kA + R"(", ")" + diff + R"("]}})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->architecture, "amd64");
  EXPECT_EQ(c->env.size(), 2u);
  EXPECT_EQ(c->working_dir, "/srv");
  EXPECT_EQ(c->user, "1000");
  EXPECT_EQ(c->entrypoint, (std::vector<std::string>{"/bin/sh", "-c"}));
  EXPECT_EQ(c->cmd, (std::vector<std::string>{"echo hi"}));
  EXPECT_EQ(c->labels.at("ai.backend.kernelspec"), "1");
  EXPECT_EQ(c->labels.count("n"), 0u) << "only string labels";
  EXPECT_EQ(c->diff_ids.size(), 2u);
  // A config with nothing in it is an image with defaults; a bad diff_id is refused.
  EXPECT_TRUE(ParseImageConfig("{}").ok());
  EXPECT_FALSE(ParseImageConfig(R"({"rootfs": {"diff_ids": ["md5:x"]}})").ok());
  EXPECT_FALSE(ParseImageConfig("[]").ok());
}

TEST(OciManifestTest, DigestsAndChainIdsAsTheSpecComputesThem) {
  EXPECT_EQ(Sha256Digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  DigestWriter w;
  w.Update("ab");
  w.Update("c");
  EXPECT_EQ(w.Finish(), Sha256Digest("abc"));
  EXPECT_EQ(Sha256Digest("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto chain = ChainIds({kA, kB, kC});
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0], kA) << "the base's chain id is its diff id";
  EXPECT_EQ(chain[1], Sha256Digest(kA + " " + kB));
  EXPECT_EQ(chain[2], Sha256Digest(chain[1] + " " + kC));
  // Two images on the same base share the base's chain id and no other.
  auto other = ChainIds({kA, kC});
  EXPECT_EQ(other[0], chain[0]);
  EXPECT_NE(other[1], chain[1]);
  EXPECT_TRUE(ChainIds({}).empty());
}

TEST(OciAuthTest, ChallengesAsRegistriesWriteThem) {
  auto c = ParseWwwAuthenticate(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:lablup/python:pull")");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].scheme, "bearer");
  EXPECT_EQ(c[0].params.at("realm"), "https://auth.docker.io/token");
  EXPECT_EQ(c[0].params.at("scope"), "repository:lablup/python:pull");
  auto url = TokenUrl(c[0]);
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url,
            "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alablup"
            "%2Fpython%3Apull");
  EXPECT_EQ(*TokenUrl(c[0], "repository:x:pull"),
            "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Ax%3Apull");
  // Two challenges, spaces, an escaped quote, a token68 value, case.
  auto two = ParseWwwAuthenticate(
      R"(Basic realm="Registry \"A\"" , BEARER  Realm = "http://127.0.0.1:9/t", error=invalid_token)");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].scheme, "basic");
  EXPECT_EQ(two[0].params.at("realm"), "Registry \"A\"");
  EXPECT_EQ(two[1].scheme, "bearer");
  EXPECT_EQ(two[1].params.at("realm"), "http://127.0.0.1:9/t");
  EXPECT_EQ(two[1].params.at("error"), "invalid_token");
  // What cannot be read ends the list; a realm that is not http(s) gives no URL.
  EXPECT_TRUE(ParseWwwAuthenticate("").empty());
  EXPECT_EQ(ParseWwwAuthenticate(R"(Bearer realm="never closed)").size(), 0u);
  Challenge file{"bearer", {{"realm", "file:///etc/passwd"}}};
  EXPECT_FALSE(TokenUrl(file).ok());
  EXPECT_FALSE(TokenUrl(Challenge{"bearer", {}}).ok());
}

TEST(OciAuthTest, TokensLinksAndErrors) {
  auto t = ParseTokenAnswer(R"({"token": "abc", "expires_in": 300})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token, "abc");
  EXPECT_EQ(t->expires_in, 300);
  EXPECT_EQ(ParseTokenAnswer(R"({"access_token": "x"})")->expires_in, 60) << "the default";
  EXPECT_EQ(ParseTokenAnswer(R"({"token": "", "access_token": "y"})")->token, "y");
  EXPECT_EQ(ParseTokenAnswer("{}").status().code(), StatusCode::kUnauthenticated);
  EXPECT_FALSE(ParseTokenAnswer("<html>").ok());

  EXPECT_EQ(NextLink(R"(</v2/_catalog?last=b&n=2>; rel="next")"), "/v2/_catalog?last=b&n=2");
  EXPECT_EQ(NextLink(R"(<https://h/prev>; rel="prev", <https://h/next>; rel=next)"),
            "https://h/next");
  EXPECT_FALSE(NextLink(""));
  EXPECT_FALSE(NextLink(R"(<https://h/prev>; rel="prev")"));
  EXPECT_FALSE(NextLink("<unterminated"));

  EXPECT_EQ(RegistryErrorWords(
                R"({"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"},
                               {"code": "NAME_UNKNOWN", "message": 5}]})"),
            "MANIFEST_UNKNOWN: manifest unknown; NAME_UNKNOWN");
  EXPECT_EQ(RegistryErrorWords("Service Unavailable"), "Service Unavailable");
  EXPECT_EQ(RegistryErrorWords(""), "no details");
  EXPECT_EQ(RegistryErrorWords(std::string(500, 'x')).size(), 200u);
}

}  // namespace
}  // namespace bai::server::oci
