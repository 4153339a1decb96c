// SPDX-License-Identifier: Apache-2.0
// Administration's pure parts: the role table (who may run which mutation) and the reading of
// resource-policy inputs (slots normalised, bad values named, 22.03's host lists accepted), and
// the admin wire types' round trips.
#include "bai/protocol/admin_wire.h"
#include "bai/protocol/cluster_wire.h"

#include "server-reference/manager/admin/roles.h"
#include "server-reference/manager/agents/image_rescan.h"
#include "server-reference/manager/agents/registry_scan.h"
#include "server-reference/manager/state/policies.h"
#include "server-reference/manager/state/registries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <variant>

namespace bai::manager {
namespace {

using nlohmann::json;

TEST(AdminRoles, TableMatches2409AllowedRoles) {
  using admin::Role;
  for (char const* m : {"create_group", "modify_group", "delete_group", "purge_group"}) {
    EXPECT_TRUE(admin::MayRun(Role::kAdmin, m)) << m;
    EXPECT_FALSE(admin::MayRun(Role::kUser, m)) << m;
    EXPECT_FALSE(admin::MayRun(Role::kMonitor, m)) << m;
  }
  for (char const* m : {"create_domain", "create_user", "purge_user", "create_keypair",
                        "delete_keypair", "create_keypair_resource_policy",
                        "modify_user_resource_policy", "delete_project_resource_policy"}) {
    EXPECT_TRUE(admin::IsMutation(m)) << m;
    EXPECT_TRUE(admin::MayRun(Role::kSuperadmin, m)) << m;
    EXPECT_FALSE(admin::MayRun(Role::kAdmin, m)) << m;
    EXPECT_FALSE(admin::MayRun(Role::kUser, m)) << m;
  }
  EXPECT_FALSE(admin::MayRun(Role::kAdmin, "rescan_images"));
  EXPECT_TRUE(admin::MayRun(Role::kSuperadmin, "rescan_images"));
  EXPECT_FALSE(admin::IsMutation("compute_session_list"));
  EXPECT_FALSE(admin::MayRun(Role::kSuperadmin, "drop_everything"));
}

// How a rescan ends: done with counts while some agent answered, failed when none did; each
// failure and each agent held by another manager named.
TEST(ImageRescanCore, OutcomeCountsAndNamesFailures) {
  using protocol::TaskStatus;
  auto [none_status, none] = RescanOutcome({}, {});
  EXPECT_EQ(none_status, TaskStatus::kDone);
  EXPECT_EQ(none, "No agent to rescan.");
  auto [ok_status, ok] =
      RescanOutcome({{"i-a", 5, ""}, {"i-b", std::nullopt, "timed out"}}, {"i-c"});
  EXPECT_EQ(ok_status, TaskStatus::kDone);
  EXPECT_EQ(ok, "5 images on 1 agent; i-b: timed out; i-c: not connected to this manager");
  auto [bad_status, bad] = RescanOutcome({{"i-a", std::nullopt, "gone"}}, {});
  EXPECT_EQ(bad_status, TaskStatus::kFailed);
  EXPECT_EQ(bad, "0 images on 0 agents; i-a: gone");
  auto [only_elsewhere, msg] = RescanOutcome({}, {"i-z"});
  EXPECT_EQ(only_elsewhere, TaskStatus::kFailed);
  EXPECT_EQ(msg, "0 images on 0 agents; i-z: not connected to this manager");
  // Registries (issue 46): their images counted apart; one that answered with tags it could
  // not read is done, naming them; one named alone says nothing of agents.
  auto [reg_status, reg] = RescanOutcome(
      {{"registry r1", 3, "r1/lab/x:2: unauthorized", true}, {"i-a", 2, "", false}}, {});
  EXPECT_EQ(reg_status, TaskStatus::kDone);
  EXPECT_EQ(reg,
            "3 images in 1 registry, 2 images on 1 agent; registry r1: r1/lab/x:2: "
            "unauthorized");
  auto [alone_status, alone] = RescanOutcome({{"registry r1", 4, "", true}}, {});
  EXPECT_EQ(alone_status, TaskStatus::kDone);
  EXPECT_EQ(alone, "4 images in 1 registry");
  auto [down_status, down] = RescanOutcome({{"registry r1", std::nullopt, "refused", true}}, {});
  EXPECT_EQ(down_status, TaskStatus::kFailed);
  EXPECT_EQ(down, "0 images on 0 agents; registry r1: refused");
}

// What a registry's rescan keeps of an image (pure), and what a registry may be.
TEST(RegistryScanCore, ImagesAreNamedAsTheirCanonicalAndSizedAs2409Does) {
  ContainerRegistry reg;
  reg.registry_name = "127.0.0.1:5000";
  reg.url = "http://127.0.0.1:5000";
  reg.project = "lab";
  server::oci::Manifest m;
  m.config = {"application/vnd.oci.image.config.v1+json",
              "sha256:" + std::string(64, 'c'),
              100,
              std::nullopt,
              {}};
  m.layers = {{"", "sha256:" + std::string(64, 'a'), 1000, std::nullopt, {}},
              {"", "sha256:" + std::string(64, 'b'), 24, std::nullopt, {}}};
  server::oci::ImageConfig c;
  c.architecture = "arm64";
  c.labels = {{"ai.backend.resource.min.mem", "256m"}};
  auto i = ScannedImage(reg, "lab/tools/py", "3.11", "sha256:" + std::string(64, 'd'), m, c);
  EXPECT_EQ(i.canonical, "127.0.0.1:5000/lab/tools/py:3.11");
  EXPECT_EQ(i.project, "lab");
  EXPECT_EQ(i.name, "tools/py");
  EXPECT_EQ(i.architecture, "aarch64");
  EXPECT_EQ(i.size_bytes, 1124);
  EXPECT_EQ(i.config_digest, m.config.digest);
  EXPECT_EQ(i.labels.at("ai.backend.resource.min.mem"), "256m");
  EXPECT_EQ(BackendAiArchitecture("amd64"), "x86_64");
  EXPECT_EQ(BackendAiArchitecture("riscv64"), "riscv64");
  EXPECT_TRUE(InProject("lab/app", "lab"));
  EXPECT_FALSE(InProject("laboratory/app", "lab"));
  EXPECT_TRUE(InProject("anything/at/all", ""));
  // How rows name a reference, whatever its spelling; a local name stays as it is.
  EXPECT_EQ(CanonicalImage("lab/app"), "index.docker.io/lab/app:latest");
  EXPECT_EQ(CanonicalImage("docker.io/lab/app:2"), "index.docker.io/lab/app:2");
  EXPECT_EQ(CanonicalImage("127.0.0.1:5000/lab/app:1"), "127.0.0.1:5000/lab/app:1");
  EXPECT_EQ(CanonicalImage("python:3.11"), "python:3.11");
  EXPECT_EQ(CanonicalImage("Not/A/Reference"), "Not/A/Reference");

  EXPECT_TRUE(ValidateRegistry(reg).ok());
  for (auto [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"url", "ftp://x"},
                                                        {"url", "http://"},
                                                        {"registry_name", "Upper.Case"},
                                                        {"type", "ecr"},
                                                        {"project", "a//b"}}) {
    ContainerRegistry bad = reg;
    if (field == "url") bad.url = value;
    if (field == "registry_name") bad.registry_name = value;
    if (field == "type") bad.type = value;
    if (field == "project") bad.project = value;
    auto s = ValidateRegistry(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field << "=" << value;
    EXPECT_THAT(s.message(), ::testing::HasSubstr(field)) << s.message();
  }
  ContainerRegistry harbor = reg;
  harbor.type = "harbor2";
  harbor.project = "";
  EXPECT_FALSE(ValidateRegistry(harbor).ok()) << "a Harbor registry is scanned by project";
}

std::string Text(PolicyValues const& v, std::string const& column) {
  for (auto const& [c, value] : v) {
    if (c == column && std::holds_alternative<std::string>(value)) {
      return std::get<std::string>(value);
    }
  }
  return "<absent>";
}

// 24.09's image minimum: cpu and mem left out are raised to it; what is asked below it, or a
// slot it needs that is not asked for, refuses the session naming the image's minimum.
TEST(RegistryScanCore, AnImagesMinimumResourcesAreMetOrRefused) {
  using protocol::Decimal;
  std::map<std::string, std::string> labels = {{"ai.backend.resource.min.cpu", "2"},
                                               {"ai.backend.resource.min.mem", "8g"},
                                               {"ai.backend.resource.min.bogus", "lots"},
                                               {"ai.backend.kernelspec", "1"}};
  auto defaults = protocol::DefaultSessionSlots();
  auto requested = defaults;
  ASSERT_TRUE(ApplyImageMinimum(labels, {}, requested).ok());
  EXPECT_EQ(requested.at("cpu"), Decimal::FromInteger(2)) << "left out: the image's minimum";
  EXPECT_EQ(requested.at("mem"), Decimal::FromInteger(8LL << 30));
  // Asked for, below the minimum: refused, naming it.
  protocol::ResourceSlots given = {{"mem", Decimal::FromInteger(1LL << 30)}};
  requested = defaults;
  requested["mem"] = given.at("mem");
  auto refused = ApplyImageMinimum(labels, given, requested);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(),
              ::testing::HasSubstr("smaller than the minimum required by the image. (mem=8g)"));
  // A slot that is not intrinsic is never filled in: it must be asked for.
  labels = {{"ai.backend.resource.min.cuda.shares", "0.5"}};
  requested = defaults;
  EXPECT_FALSE(ApplyImageMinimum(labels, {}, requested).ok());
  requested["cuda.shares"] = Decimal::FromInteger(1);
  EXPECT_TRUE(
      ApplyImageMinimum(labels, {{"cuda.shares", Decimal::FromInteger(1)}}, requested).ok());
  // No minimum: nothing changes.
  requested = defaults;
  EXPECT_TRUE(ApplyImageMinimum({}, {}, requested).ok());
  EXPECT_EQ(requested, defaults);
}

// An image's labels travel as 24.09's [{key, value}]; bai's kind label says what an agent holds.
TEST(AdminWire, ImageLabelsRoundTripAndSayTheKind) {
  protocol::ImageEntry host{
      "python:latest@x86_64", "python", "latest", "local", "x86_64", {}, {"a1"}, 360000};
  host.labels = {{protocol::kImageKindLabel, "host"}, {"ai.backend.runtime-type", "python"}};
  auto back = protocol::DecodeImage(protocol::EncodeImage(host));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->labels, host.labels);
  EXPECT_EQ(back->Kind(), "host");
  // A manager that answers null labels, or none (an older one): no kind, no failure.
  auto plain = protocol::DecodeImage(R"({"name": "lab/app", "tag": "1", "labels": null})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->Kind(), "");
  EXPECT_TRUE(protocol::DecodeImage(R"({"name": "x", "labels": [{"key": 1}, "junk"]})").ok());
}

TEST(ImageRescanCore, APurgeCountsWhatWentAndNamesWhatDidNot) {
  auto [done, message] =
      PurgeTaskOutcome({{"a1", true, "", {"app2"}, {"app1: app1 is in use by a kernel"}, 3 << 20},
                        {"a2", true, "", {"x", "y"}, {}, 1 << 20}});
  EXPECT_EQ(done, protocol::TaskStatus::kDone);
  EXPECT_EQ(message,
            "3 images purged from 2 agents, 4.0 MiB freed; a1: app1: app1 is in use by a kernel");
  auto [refused, why] = PurgeTaskOutcome({{"a1", true, "", {}, {"app1: not on this agent"}, 0}});
  EXPECT_EQ(refused, protocol::TaskStatus::kFailed) << why;
  auto [silent, gone] = PurgeTaskOutcome({{"a1", false, "timed out", {}, {}, 0}});
  EXPECT_EQ(silent, protocol::TaskStatus::kFailed);
  EXPECT_THAT(gone, ::testing::HasSubstr("a1: timed out"));
}

TEST(PolicyInput, SlotsAreNormalisedAndBadValuesNamed) {
  auto v = PolicyValuesFromInput(PolicyKind::kKeypair,
                                 {{"total_resource_slots", R"({"cpu": 2, "mem": "1g"})"},
                                  {"default_for_unspecified", "limited"},
                                  {"max_concurrent_sessions", 3},
                                  {"idle_timeout", nullptr},
                                  {"unknown_field", 1}});
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(json::parse(Text(*v, "total_resource_slots")),
            json({{"cpu", "2"}, {"mem", "1073741824"}}));
  EXPECT_EQ(Text(*v, "default_for_unspecified"), "LIMITED");
  EXPECT_EQ(v->size(), 3u);  // null and unknown fields are not set

  for (auto const& [field, value] :
       std::vector<std::pair<std::string, json>>{{"total_resource_slots", R"({"mem": "lots"})"},
                                                 {"total_resource_slots", "[1]"},
                                                 {"default_for_unspecified", "SOMETIMES"},
                                                 {"max_concurrent_sessions", -1},
                                                 {"max_concurrent_sessions", "3"}}) {
    auto bad = PolicyValuesFromInput(PolicyKind::kKeypair, {{field, value}});
    ASSERT_FALSE(bad.ok()) << field << " " << value.dump();
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find(field), std::string::npos) << bad.status().message();
  }
}

TEST(PolicyInput, HostListsInEveryShape) {
  for (auto const& input : {json("local"), json("local, nfs"), json("['local', 'nfs']"),
                            json(R"(["local","nfs"])"), json::array({"local", "nfs"})}) {
    auto v = PolicyValuesFromInput(PolicyKind::kKeypair, {{"allowed_vfolder_hosts", input}});
    ASSERT_TRUE(v.ok()) << input.dump();
    auto hosts = json::parse(Text(*v, "allowed_vfolder_hosts"));
    EXPECT_EQ(hosts[0], "local") << input.dump();
  }
  auto map = PolicyValuesFromInput(
      PolicyKind::kKeypair, {{"allowed_vfolder_hosts", R"({"local": ["mount-in-session"]})"}});
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(json::parse(Text(*map, "allowed_vfolder_hosts")),
            json({{"local", {"mount-in-session"}}}));
  // A kind's fields only: a user policy has no slots.
  auto user = PolicyValuesFromInput(PolicyKind::kUser,
                                    {{"total_resource_slots", "{}"}, {"max_vfolder_count", 4}});
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->size(), 1u);
}

TEST(AdminWire, UserKeypairAndPoliciesRoundTrip) {
  protocol::User u;
  u.uuid = "00000000-0000-4000-8000-000000000001";
  u.email = "a@example.com";
  u.username = "a";
  u.role = "admin";
  u.allowed_client_ip = {"10.0.0.0/8"};
  u.groups = {{"g1", "default"}};
  u.main_access_key = "AKIA1";
  auto back = protocol::DecodeUser(protocol::EncodeUser(u));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->role, "admin");
  EXPECT_EQ(back->allowed_client_ip, u.allowed_client_ip);
  ASSERT_EQ(back->groups.size(), 1u);
  EXPECT_EQ(back->groups[0].name, "default");
  EXPECT_EQ(back->main_access_key, "AKIA1");
  EXPECT_FALSE(protocol::DecodeUser("{}").ok());

  protocol::KeyPair k;
  k.access_key = "AKIA2";
  k.user_id = "a@example.com";
  k.rate_limit = 500;
  auto kb = protocol::DecodeKeyPair(protocol::EncodeKeyPair(k));
  ASSERT_TRUE(kb.ok());
  EXPECT_EQ(kb->rate_limit, 500);
  EXPECT_TRUE(kb->secret_key.empty());  // hidden secrets stay hidden (null on the wire)

  protocol::KeypairResourcePolicy p;
  p.name = "small";
  p.max_pending_session_count = 3;
  p.total_resource_slots = R"({"cpu":"2"})";
  auto pb = protocol::DecodeKeypairResourcePolicy(protocol::EncodeKeypairResourcePolicy(p));
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pb->max_pending_session_count, std::optional<std::int64_t>(3));
  EXPECT_EQ(pb->total_resource_slots, p.total_resource_slots);
  EXPECT_FALSE(pb->max_pending_session_resource_slots.has_value());

  protocol::ScopeResourcePolicy s;
  s.name = "lab";
  s.max_vfolder_count = 7;
  auto sb = protocol::DecodeScopeResourcePolicy(protocol::EncodeScopeResourcePolicy(s, false));
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->max_vfolder_count, 7);
}

}  // namespace
}  // namespace bai::manager
