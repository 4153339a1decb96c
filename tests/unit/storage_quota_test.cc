// SPDX-License-Identifier: Apache-2.0
// Whether more data fits a folder's quotas (storage/quota.h): what the proxy decides an upload
// with, and the manager a clone.
#include "server-reference/storage/quota.h"

#include <gtest/gtest.h>

namespace bai::storage {
namespace {

TEST(StorageQuotaTest, BytesFirstThenFilesAndZeroIsNoLimit) {
  EXPECT_EQ(WhyOverQuota("f", {100, 1}, 0, 0, {1 << 30, 9}), "");
  EXPECT_EQ(WhyOverQuota("f", {100, 1}, 200, 2, {100, 1}), "") << "exactly full fits";
  EXPECT_EQ(WhyOverQuota("f", {100, 1}, 200, 0, {101, 1}),
            "Over the quota of f: 100 of 200 bytes used, 101 more asked for.");
  EXPECT_EQ(WhyOverQuota("f", {100, 2}, 0, 2, {0, 1}), "Over the quota of f: 2 of 2 files used.");
}

TEST(StorageQuotaTest, AnUploadMustFitTheFolderAndItsScopeWithWhatIsReserved) {
  QuotaLimits q;
  q.folder = "the folder data";
  q.scope = "the user's folders";
  EXPECT_EQ(WhyOverLimits(q, {1 << 30, 100}, {1 << 30, 100}, {1 << 30, 1}), "")
      << "no limits: anything fits, the usage is not looked at";
  q.folder_max_bytes = 1000;
  EXPECT_EQ(WhyOverLimits(q, {900, 1}, {}, {100, 1}), "");
  EXPECT_EQ(WhyOverLimits(q, {901, 1}, {}, {100, 1}),
            "Over the quota of the folder data: 901 of 1000 bytes used, 100 more asked for.");
  q.folder_max_bytes = 0;
  q.folder_max_files = 2;
  EXPECT_EQ(WhyOverLimits(q, {0, 2}, {}, {1, 1}),
            "Over the quota of the folder data: 2 of 2 files used.");
  // The scope counts what the proxy holds and what the manager reserved (a clone under way);
  // its files are not limited.
  q.folder_max_files = 0;
  q.scope_max_bytes = 1000;
  EXPECT_EQ(WhyOverLimits(q, {}, {500, 9999}, {500, 1}), "");
  q.reserved = {1, 1};
  EXPECT_EQ(WhyOverLimits(q, {}, {500, 9999}, {500, 1}),
            "Over the quota of the user's folders: 501 of 1000 bytes used, 500 more asked for.");
  // The folder's quota is named before its scope's when both are passed.
  q.folder_max_bytes = 10;
  EXPECT_NE(WhyOverLimits(q, {10, 1}, {999, 1}, {1, 1}).find("the folder data"), std::string::npos);
}

}  // namespace
}  // namespace bai::storage
