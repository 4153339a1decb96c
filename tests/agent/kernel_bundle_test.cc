// SPDX-License-Identifier: Apache-2.0
// kernel.json (KernelRecord, the record a restarted agent re-adopts a kernel from) and the
// bundle's other files, written by kernel_bundle.h.
#include "server-reference/agent/kernel_bundle.h"

#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace bai::agent {
namespace {

TEST(KernelBundleTest, AKernelRecordReadsBackAsItWasWritten) {
  KernelRecord r;
  r.session_id = "3f5c0a4e-2a1b-4c8e-9d3f-5e6a7b8c9d0e";
  r.session_name = "train";
  r.session_type = "batch";
  r.image = "python:3.11";
  r.cgroups_path = "/bai/a1/3f5c0a4e";
  r.container_id = "a1.3f5c0a4e";
  Quanta q;
  q.set(0);
  q.set(7);
  r.gpu_quanta["GPU-1234"] = q;
  r.cpus = {0, 2, 3};
  r.network_mode = "bridge";
  r.network = KernelNetwork{"bai0", "bv3f5c0a4e2a1b", 0x0adc0005, 16, 0x0adc0001};
  auto back = KernelRecord::FromJson(r.ToJson(), "unused");
  EXPECT_EQ(back.session_id, r.session_id);
  EXPECT_EQ(back.session_name, "train");
  EXPECT_EQ(back.session_type, "batch");
  EXPECT_EQ(back.image, "python:3.11");
  EXPECT_EQ(back.cgroups_path, r.cgroups_path);
  EXPECT_EQ(back.container_id, "a1.3f5c0a4e");
  ASSERT_EQ(back.gpu_quanta.count("GPU-1234"), 1u);
  EXPECT_EQ(back.gpu_quanta["GPU-1234"], q);
  EXPECT_EQ(back.cpus, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(back.network_mode, "bridge");
  ASSERT_TRUE(back.network.has_value());
  EXPECT_EQ(back.network->host_if, "bv3f5c0a4e2a1b");
  EXPECT_EQ(back.network->address, 0x0adc0005u);
  EXPECT_EQ(back.network->prefix, 16);
  EXPECT_EQ(back.network->gateway, 0x0adc0001u);
  // The JSON an earlier agent wrote (the same keys), with the network's text addresses.
  auto j = nlohmann::json::parse(r.ToJson());
  EXPECT_EQ(j["network"]["address"], "10.220.0.5");
  EXPECT_EQ(j["gpu_quanta"]["GPU-1234"].get<std::string>().empty(), false);
}

TEST(KernelBundleTest, AnUnreadableRecordLeavesTheDirectorysContainerIdAndNoMadeUpState) {
  for (std::string text :
       {"", "not json", "[]", R"({"cpus": "x", "network": {"address": "nope"}})"}) {
    auto r = KernelRecord::FromJson(text, "a1.dir-name");
    EXPECT_EQ(r.container_id, "a1.dir-name") << text;
    EXPECT_TRUE(r.session_id.empty()) << text;
    EXPECT_TRUE(r.cpus.empty()) << text;
    EXPECT_FALSE(r.network.has_value()) << text;
    EXPECT_TRUE(r.gpu_quanta.empty()) << text;
  }
}

TEST(KernelBundleTest, WholeDevicesNeedNoShimAndAMissingShimIsSaid) {
  testing_util::TempDir dir;
  RuncOptions o;
  o.uid = static_cast<int>(geteuid());
  o.gid = static_cast<int>(getegid());
  o.state_dir = dir.path();
  GpuPlan whole;  // no limits: whole devices
  auto none = PrepareGpuShim(dir.path(), "s1", whole, o);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/gpushim.conf"));
  GpuPlan fraction;
  fraction.limits = "device 0 memory 1073741824\n";
  auto refused = PrepareGpuShim(dir.path(), "s1", fraction, o);  // o.gpu_files.shim is empty
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("libbai-gpushim.so was not found"), std::string::npos);
}

TEST(KernelBundleTest, TheBundleIsKernelJsonAndConfigJson) {
  testing_util::TempDir dir;
  KernelRecord r;
  r.session_id = "s1";
  r.container_id = "a1.s1";
  ASSERT_TRUE(WriteBundle(dir.path(), r, "{\"ociVersion\": \"1.0.2\"}").ok());
  std::ifstream record(dir.path() + "/kernel.json");
  std::string text((std::istreambuf_iterator<char>(record)), {});
  EXPECT_EQ(KernelRecord::FromJson(text, "x").container_id, "a1.s1");
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/config.json"));
  EXPECT_FALSE(WriteBundle(dir.path() + "/no/such/dir", r, "{}").ok());
}

}  // namespace
}  // namespace bai::agent
