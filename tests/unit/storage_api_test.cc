// SPDX-License-Identifier: Apache-2.0
// The storage proxy's manager-facing contract (server-reference/storage/storage_api.h): every
// operation and answer reads back from what it writes, missing or mistyped arguments are
// refused naming the field, and the proxy serves each operation through those types.
#include "server-reference/storage/storage_api.h"

#include "server-reference/storage/service.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

namespace bai::storage {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

template <class T>
T RoundTrip(T const& value) {
  auto back = api::FromJson<T>(api::ToJson(value));
  EXPECT_TRUE(back.ok()) << back.status().message();
  return back.ok() ? *back : T{};
}

TEST(StorageApiTest, OperationsAndAnswersReadBackWhatTheyWrite) {
  auto up = RoundTrip(api::StartUpload{"a/b.bin", 42, true, "u1", std::nullopt});
  EXPECT_EQ(up.path, "a/b.bin");
  EXPECT_EQ(up.size, 42);
  EXPECT_TRUE(up.resume_only);
  EXPECT_EQ(up.user, "u1");
  EXPECT_FALSE(up.quota);
  QuotaLimits limits{"the folder f", 10, 2, "the user's folders", 100, {5, 1}};
  auto limited = RoundTrip(api::StartUpload{"a", 1, false, "u1", limits});
  ASSERT_TRUE(limited.quota);
  EXPECT_EQ(limited.quota->folder, "the folder f");
  EXPECT_EQ(limited.quota->folder_max_files, 2);
  EXPECT_EQ(limited.quota->scope_max_bytes, 100);
  EXPECT_EQ(limited.quota->reserved.bytes, 5);
  auto del = RoundTrip(api::DeleteFiles{{"x", "y/z"}, true});
  EXPECT_EQ(del.paths, (std::vector<std::string>{"x", "y/z"}));
  EXPECT_TRUE(del.recursive);
  auto mk = RoundTrip(api::MakeDirectory{"d", false, true});
  EXPECT_FALSE(mk.parents);
  EXPECT_TRUE(mk.exist_ok);
  auto clone = RoundTrip(api::CloneFolder{"volume2", "user-x", "id2"});
  EXPECT_EQ(clone.dst_volume, "volume2");
  EXPECT_EQ(RoundTrip(api::StartDownload{"", "u2"}).path, "") << "the root, zipped";
  EXPECT_EQ(RoundTrip(api::GetScopeUsage{"project-y"}).scope, "project-y");
  EXPECT_EQ(RoundTrip(api::RevokeTokens{"u3"}).user, "u3");

  api::Volumes volumes;
  volumes.volumes.push_back(
      {"volume1", "vfs", "/srv/v1", {"vfolder", "quota"}, api::VolumeUsage{100, 40, 60, 40.0}});
  volumes.volumes.push_back({"volume2", "vfs", "/srv/v2", {}, std::nullopt});
  auto v = RoundTrip(volumes);
  ASSERT_EQ(v.volumes.size(), 2u);
  ASSERT_TRUE(v.volumes[0].usage);
  EXPECT_EQ(v.volumes[0].usage->free, 60);
  EXPECT_FALSE(v.volumes[1].usage) << "an unmeasured volume stays unmeasured";
  auto ticket = RoundTrip(api::UploadTicket{"tok", "http://s/upload", "sess", 7});
  EXPECT_EQ(ticket.offset, 7);
  api::Listing listing;
  listing.items.push_back(
      {"f.txt", "FILE", 3, "644", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"});
  EXPECT_EQ(RoundTrip(listing).items.at(0).modified, "2026-01-02T00:00:00Z");
  EXPECT_EQ(RoundTrip(api::Usage{5, 6}).used_bytes, 6);
}

TEST(StorageApiTest, MissingOrMistypedArgumentsAreRefusedByName) {
  auto no_size = api::FromJson<api::StartUpload>(json{{"path", "a"}});
  ASSERT_FALSE(no_size.ok());
  EXPECT_EQ(no_size.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(no_size.status().message(), HasSubstr("size"));
  EXPECT_FALSE(api::FromJson<api::StartUpload>(json{{"path", "a"}, {"size", -1}}).ok());
  auto paths = api::FromJson<api::DeleteFiles>(json{{"paths", {"a", 3}}});
  ASSERT_FALSE(paths.ok());
  EXPECT_THAT(paths.status().message(), HasSubstr("paths"));
  EXPECT_FALSE(api::FromJson<api::RenameFile>(json{{"path", "a"}}).ok()) << "no new_name";
  EXPECT_FALSE(api::FromJson<api::MakeDirectory>(json{{"path", "a"}, {"parents", "yes"}}).ok());
  EXPECT_FALSE(api::FromJson<api::FolderAddress>(json{{"volume", "v"}, {"scope", "s"}}).ok());
  EXPECT_FALSE(api::FromJson<api::CloneFolder>(json::array()).ok()) << "not an object";
}

// A proxy over one volume in a temporary directory, and one folder there that Call addresses.
class OneFolderProxy {
 public:
  explicit OneFolderProxy(std::int64_t usage_cache_seconds = StorageOptions{}.usage_cache_seconds) {
    std::filesystem::create_directories(dir_.path() + "/v1");
    StorageOptions o;
    o.volumes = {{"volume1", dir_.path() + "/v1"}};
    o.secret = "a-secret-of-32-characters-at-most";
    o.client_url = "http://127.0.0.1:1";
    o.usage_cache_seconds = usage_cache_seconds;
    auto service = StorageService::Open(o);
    if (service.ok()) service_ = *std::move(service);
    opened_ = service.status();
  }
  Status const& opened() const { return opened_; }
  StorageService& service() { return *service_; }
  api::FolderAddress const& where() const { return where_; }

  /// Operation `op` on the folder, its answer typed.
  template <class Op>
  StatusOr<typename Op::Answer> Call(Op const& op) {
    json args = api::ToJson(op);
    json const address = api::ToJson(where_);
    for (auto const& [k, val] : address.items()) args[k] = val;
    auto r = service_->Manage(Op::kOp, args);
    if (!r.ok()) return r.status();
    return api::FromJson<typename Op::Answer>(*r);
  }

 private:
  testing_util::TempDir dir_;
  std::unique_ptr<StorageService> service_;
  Status opened_;
  api::FolderAddress where_{"volume1", "user-" + std::string(32, 'a'), std::string(32, 'b')};
};

// The proxy serves each operation through the contract: a typed call in, a typed answer out,
// and the same refusals when the manager (or anyone holding the secret) sends bad arguments.
TEST(StorageApiTest, TheProxyServesTheContract) {
  OneFolderProxy proxy;
  ASSERT_TRUE(proxy.opened().ok()) << proxy.opened().message();
  auto& svc = proxy.service();
  auto const& where = proxy.where();
  auto call = [&](auto const& op) { return proxy.Call(op); };
  ASSERT_TRUE(call(api::CreateFolder{}).ok());
  ASSERT_TRUE(call(api::MakeDirectory{"docs", true, false}).ok());
  auto again = call(api::MakeDirectory{"docs", true, false});
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  auto up = call(api::StartUpload{"docs/empty.txt", 0, false, "u1", std::nullopt});
  ASSERT_TRUE(up.ok()) << up.status().message();
  EXPECT_EQ(up->url, "http://127.0.0.1:1/upload");
  auto list = call(api::ListFiles{"docs"});
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->items.size(), 1u) << "a 0-byte upload appears at once";
  EXPECT_EQ(list->items[0].name, "empty.txt");
  auto usage = call(api::GetFolderUsage{});
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->file_count, 1) << "files, not directories";
  auto down = call(api::StartDownload{"docs", "u1"});
  ASSERT_TRUE(down.ok());
  EXPECT_TRUE(down->is_dir);
  auto vols = svc.Manage(api::ListVolumes::kOp, json::object());
  ASSERT_TRUE(vols.ok());
  auto typed = api::FromJson<api::Volumes>(*vols);
  ASSERT_TRUE(typed.ok());
  EXPECT_EQ(typed->volumes.at(0).name, "volume1");
  // Bad arguments are refused before anything is touched; unknown operations are 404.
  json bad = api::ToJson(where);
  bad["paths"] = "docs";
  auto refused = svc.Manage(api::DeleteFiles::kOp, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(call(api::ListFiles{"docs"}).ok());
  EXPECT_EQ(svc.Manage("folder/explode", bad).status().code(), StatusCode::kNotFound);
  json no_id = {{"volume", "volume1"}, {"scope", where.scope}};
  EXPECT_EQ(svc.Manage(api::GetFolderUsage::kOp, no_id).status().code(),
            StatusCode::kInvalidArgument);
}

// Issue 45: an upload's quotas are decided by the proxy in the request that starts it (with the
// usage it holds), not by the manager asking for the usage first.
TEST(StorageApiTest, AnUploadIsDecidedAgainstItsQuotasWhereTheUsageIs) {
  OneFolderProxy proxy;
  ASSERT_TRUE(proxy.opened().ok()) << proxy.opened().message();
  auto call = [&](auto const& op) { return proxy.Call(op); };
  ASSERT_TRUE(call(api::CreateFolder{}).ok());
  QuotaLimits folder{"the folder f", 1000, 0, "the user's folders", 0, {}};
  // 600 bytes fit; the unfinished upload counts at its full size, so 600 more do not.
  ASSERT_TRUE(call(api::StartUpload{"a.bin", 600, false, "u1", folder}).ok());
  auto over = call(api::StartUpload{"b.bin", 600, false, "u1", folder});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "Over the quota of the folder f: 600 of 1000 bytes used, 600 more asked for.");
  // The unfinished upload itself goes on: its room is counted already.
  auto resumed = call(api::StartUpload{"a.bin", 600, false, "u1", folder});
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  // The scope counts what the manager reserved beside what the proxy holds.
  QuotaLimits scope{"the folder f", 0, 0, "the user's folders", 1000, {300, 1}};
  EXPECT_EQ(call(api::StartUpload{"c.bin", 200, false, "u1", scope}).status().code(),
            StatusCode::kResourceExhausted);
  scope.reserved = {};
  EXPECT_TRUE(call(api::StartUpload{"c.bin", 200, false, "u1", scope}).ok());
  // Without quotas nothing is counted or refused.
  EXPECT_TRUE(call(api::StartUpload{"d.bin", 1 << 20, false, "u1", std::nullopt}).ok());
}

// Hardening (hostile 6, the rest): a folder's usage is a walk of its tree; it is kept for a
// while (concurrent askers share one walk) and dropped at once by a change made through the
// proxy. A kernel's own writes show when the figures expire.
TEST(StorageApiTest, FolderUsageIsKeptAndDroppedByChangesThroughTheProxy) {
  for (std::int64_t ttl : {3600, 0}) {
    OneFolderProxy proxy(ttl);
    ASSERT_TRUE(proxy.opened().ok()) << proxy.opened().message();
    auto run = [&](auto const& op) {
      auto r = proxy.Call(op);
      EXPECT_TRUE(r.ok()) << r.status().message();
      return r;
    };
    ASSERT_TRUE(run(api::CreateFolder{}).ok());
    auto path = run(api::MountPath{});
    ASSERT_TRUE(path.ok());
    auto files = [&] { return run(api::GetFolderUsage{})->file_count; };
    EXPECT_EQ(files(), 0);
    std::ofstream(path->path + "/by-kernel.txt") << "written inside a session";
    EXPECT_EQ(files(), ttl > 0 ? 0 : 1) << "a kernel's write shows once the figures expire";
    ASSERT_TRUE(run(api::MakeDirectory{"d", true, false}).ok());
    EXPECT_EQ(files(), 1) << "a change through the proxy drops the kept figures";
    ASSERT_TRUE(run(api::StartUpload{"d/empty", 0, false, "", std::nullopt}).ok());
    EXPECT_EQ(files(), 2) << "an upload that completes is a change";
    ASSERT_TRUE(run(api::DeleteFiles{{"by-kernel.txt"}, false}).ok());
    EXPECT_EQ(files(), 1);
    // Askers at the same time get the same figures.
    std::vector<std::thread> askers;
    std::atomic<int> agreed{0};
    for (int i = 0; i < 8; ++i) {
      askers.emplace_back([&] { agreed += files() == 1 ? 1 : 0; });
    }
    for (auto& t : askers) t.join();
    EXPECT_EQ(agreed, 8);
  }
}

}  // namespace
}  // namespace bai::storage
