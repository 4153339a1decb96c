// SPDX-License-Identifier: Apache-2.0
// The agent's reconciliation of a container's GPU ledger with NVML (agent/gpu_reconcile.h) over
// the fake driver: real processes with and without the shim, one taking memory behind the shim's
// back, the reconciler reading NVML's per-process figures for the container's PIDs, naming the
// process without the shim, charging the excess, and giving it back when those processes end.
#include "server-reference/agent/gpu_reconcile.h"

#include "server-reference/gpushim/core/ledger.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace bai::agent {
namespace {

using ::testing::HasSubstr;
using testing_util::BackgroundProcess;
using testing_util::TempDir;

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kContext = 552402944ULL;  // the fake H100's context footprint
constexpr char kUuid0[] = "GPU-b58cbfff-a7f3-2498-9d0d-4f988f981200";

class GpuReconcileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.path() + "/gpu.state";
    // The reconciler's NVML (the fake, loaded into this process) reads the same fake GPU.
    ::setenv("BAI_FAKE_GPU_STATE", state_.c_str(), 1);
    ledger_ = dir_.path() + "/ledger";
    ASSERT_EQ(gpushim::Ledger::Create(ledger_, {{kUuid0, 8 * kGiB}}), "");
    config_ = dir_.path() + "/gpushim.conf";
    // The context is charged as the fake driver takes it: no drift from contexts.
    testing_util::WriteFileBytes(config_, "mode=timeslice\nledger=" + ledger_ +
                                              "\ncontext_bytes=" + std::to_string(kContext) +
                                              "\ndevice.0.uuid=" + kUuid0 + "\n");
    procs_ = dir_.path() + "/cgroup.procs";
    report_ = dir_.path() + "/gpu-usage.json";
    targets_ = {{"s1", ledger_, procs_, report_}};
  }
  void TearDown() override { ::unsetenv("BAI_FAKE_GPU_STATE"); }

  std::unique_ptr<BackgroundProcess> Probe(std::vector<std::string> args, bool shim) {
    args.insert(args.begin(), BAI_GPUSHIM_PROBE);
    return std::make_unique<BackgroundProcess>(
        args, std::map<std::string, std::string>{{"LD_LIBRARY_PATH", BAI_FAKE_DRIVER_DIR},
                                                 {"BAI_FAKE_GPU_STATE", state_},
                                                 {"BAI_GPUSHIM_CONFIG", config_},
                                                 {"LD_PRELOAD", shim ? BAI_GPUSHIM_LIB : ""},
                                                 {"ASAN_OPTIONS", ""}});
  }

  /// The container's processes, as its cgroup would list them.
  void Container(std::vector<int> pids) {
    std::string text;
    for (int p : pids) text += std::to_string(p) + "\n";
    testing_util::WriteFileBytes(procs_, text);
  }

  GpuReconciler Reconciler(gpushim::ReconcilePolicy policy = {}) {
    return GpuReconciler(BAI_FAKE_NVML, policy, [this] { return targets_; });
  }

  TempDir dir_;
  std::string state_, ledger_, config_, procs_, report_;
  std::vector<ReconcileTarget> targets_;  ///< what the backend would list
};

TEST_F(GpuReconcileTest, MemoryTheShimDidNotSeeIsNamedChargedAndGivenBack) {
  auto shimmed = Probe({"alloc", "plain", std::to_string(kGiB), "1", "60"}, true);
  ASSERT_THAT(shimmed->WaitForLine("allocated"), HasSubstr("allocated 1 of 1"));
  auto behind = Probe({"driver", std::to_string(kGiB), "60"}, true);
  ASSERT_THAT(behind->WaitForLine("driver took"), HasSubstr("driver took 0"));
  auto unshimmed = Probe({"alloc", "plain", std::to_string(512 * kMiB), "1", "60"}, false);
  ASSERT_THAT(unshimmed->WaitForLine("allocated"), HasSubstr("allocated 1 of 1"));
  // Another tenant on the same GPU: not the container's business.
  auto neighbour = Probe({"alloc", "plain", std::to_string(2 * kGiB), "1", "60"}, false);
  ASSERT_THAT(neighbour->WaitForLine("allocated"), HasSubstr("allocated 1 of 1"));
  Container({shimmed->pid(), behind->pid(), unshimmed->pid()});

  auto reconciler = Reconciler();
  auto round = reconciler.RunOnce();
  ASSERT_EQ(round["s1"].size(), 1u);
  auto const& u = round["s1"][0];
  EXPECT_EQ(u.uuid, kUuid0);
  EXPECT_EQ(u.limit, 8 * kGiB);
  EXPECT_EQ(u.ledger, 2 * kContext + kGiB);
  EXPECT_EQ(u.nvml, 3 * kContext + 2 * kGiB + 512 * kMiB);
  EXPECT_EQ(u.untracked, kContext + kGiB + 512 * kMiB);
  EXPECT_EQ(u.drift, static_cast<std::int64_t>(u.untracked));
  EXPECT_EQ(u.unshimmed, std::vector<unsigned>{static_cast<unsigned>(unshimmed->pid())});

  // Written where the shim reads it, and where an operator does.
  std::string error;
  auto ledger = gpushim::Ledger::Open(ledger_, &error);
  ASSERT_TRUE(ledger) << error;
  EXPECT_EQ(ledger->Untracked(0), u.untracked);
  std::set<int> host_pids;
  for (auto const& slot : ledger->Slots()) host_pids.insert(slot.host_pid);
  EXPECT_EQ(host_pids, (std::set<int>{shimmed->pid(), behind->pid()}));
  auto report = nlohmann::json::parse(testing_util::ReadFileBytes(report_));
  EXPECT_EQ(report["devices"][0]["untracked"], u.untracked);
  EXPECT_EQ(report["devices"][0]["unshimmed"][0], unshimmed->pid());

  // A new process of the container has what is left of the cap after both: 8 GiB less the
  // ledger's 2 contexts + 1 GiB, the 1.5 GiB + context untracked, and its own context: 3 GiB.
  auto late = Probe({"alloc", "plain", std::to_string(kGiB), "10"}, true);
  ASSERT_THAT(late->WaitForLine("allocated"), HasSubstr("allocated 3 of 10"));
  late->Stop(SIGKILL);

  // Those processes end: the next round charges nothing beyond the ledger.
  EXPECT_EQ(behind->Stop(SIGKILL), 128 + SIGKILL);
  EXPECT_EQ(unshimmed->Stop(SIGKILL), 128 + SIGKILL);
  round = reconciler.RunOnce();
  ASSERT_EQ(round["s1"].size(), 1u);
  EXPECT_EQ(round["s1"][0].untracked, 0u);
  EXPECT_TRUE(round["s1"][0].unshimmed.empty());
  EXPECT_EQ(round["s1"][0].nvml, kContext + kGiB);
  EXPECT_EQ(ledger->Untracked(0), 0u);
}

TEST_F(GpuReconcileTest, ReportModeChargesNothingAndAGoneKernelIsLeftAlone) {
  auto unshimmed = Probe({"alloc", "plain", std::to_string(kGiB), "1", "60"}, false);
  ASSERT_THAT(unshimmed->WaitForLine("allocated"), HasSubstr("allocated 1 of 1"));
  Container({unshimmed->pid()});
  gpushim::ReconcilePolicy report_only;
  report_only.enforce = false;
  auto reconciler = Reconciler(report_only);
  auto round = reconciler.RunOnce();
  ASSERT_EQ(round["s1"].size(), 1u);
  EXPECT_EQ(round["s1"][0].untracked, 0u);
  EXPECT_EQ(round["s1"][0].drift, static_cast<std::int64_t>(kContext + kGiB));
  EXPECT_EQ(round["s1"][0].unshimmed.size(), 1u);

  // A kernel whose ledger is not there (yet): skipped, no report.
  std::filesystem::remove(report_);
  targets_.push_back({"s2", dir_.path() + "/no-ledger", procs_, dir_.path() + "/s2.json"});
  round = reconciler.RunOnce();
  EXPECT_EQ(round.count("s1"), 1u);
  EXPECT_EQ(round.count("s2"), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/s2.json"));
  // A kernel whose cgroup lists no process (not where we look): left as it was, not cleared.
  std::string error;
  auto ledger = gpushim::Ledger::Open(ledger_, &error);
  ASSERT_TRUE(ledger) << error;
  ledger->SetUntracked(0, 5 * kMiB);
  Container({});
  EXPECT_EQ(reconciler.RunOnce().count("s1"), 0u);
  EXPECT_EQ(ledger->Untracked(0), 5 * kMiB);
  // Kernels gone: nothing is reconciled.
  targets_.clear();
  EXPECT_TRUE(reconciler.RunOnce().empty());
}

TEST(GpuReconcilePids, ReadsACgroupProcsFileAndToleratesAMissingOne) {
  TempDir dir;
  testing_util::WriteFileBytes(dir.path() + "/procs", "12\n7\n12\n");
  EXPECT_EQ(ReadPids(dir.path() + "/procs"), (std::set<unsigned>{7, 12}));
  EXPECT_TRUE(ReadPids(dir.path() + "/missing").empty());
}

}  // namespace
}  // namespace bai::agent
