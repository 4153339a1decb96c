// SPDX-License-Identifier: Apache-2.0
// What the agent's image store lets go (issue 46, item 6): the pure plan and disk use.
#include "server-reference/agent/image_gc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Two pulled images on one base, an imported one on its own layer, a host built-in.
std::vector<StoredImage> Images() {
  return {{"app1", {"reg/lab/app:1"}, "pulled", {"base", "top1"}, 10},
          {"app2", {"reg/lab/app:2"}, "pulled", {"base", "top2"}, 20},
          {"mine", {}, "imported", {"own"}, 5},
          {"python", {}, "host", {}, 300}};
}
std::vector<std::string> const kLayers = {"base", "top1", "top2", "own", "stray"};

TEST(ImageGcTest, ARemovalTakesTheImageAndOnlyTheLayersNothingElseNeeds) {
  auto plan = PlanRemoval(Images(), kLayers, {"app2"}, {}, false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_THAT(plan->images, ElementsAre("app2"));
  EXPECT_THAT(plan->layers, ElementsAre("top2", "stray")) << "the shared base stays";
  // Both: the base goes too.
  plan = PlanRemoval(Images(), kLayers, {"app1", "app2"}, {}, false);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->layers, ElementsAre("base", "top1", "top2", "stray"));
}

TEST(ImageGcTest, NeverAnImageInUseNorAHostImage) {
  auto busy = PlanRemoval(Images(), kLayers, {"app1"}, {"app1"}, false);
  EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(busy.status().message(), HasSubstr("in use by a kernel"));
  auto host = PlanRemoval(Images(), kLayers, {"python"}, {}, false);
  EXPECT_THAT(host.status().message(), HasSubstr("built-in host image"));
  EXPECT_EQ(PlanRemoval(Images(), kLayers, {"nope"}, {}, false).status().code(),
            StatusCode::kNotFound);
}

TEST(ImageGcTest, APruneTakesStrayLayersAndWithAllTheUnusedPulledImages) {
  auto plan = PlanRemoval(Images(), kLayers, {}, {"app1"}, false);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->images, IsEmpty());
  EXPECT_THAT(plan->layers, ElementsAre("stray"));
  plan = PlanRemoval(Images(), kLayers, {}, {"app1"}, true);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->images, ElementsAre("app2")) << "app1 is in use; imported and host stay";
  EXPECT_THAT(plan->layers, ElementsAre("top2", "stray"));
}

TEST(ImageGcTest, DiskUseCountsSharedLayersOnceAsOwn) {
  std::map<std::string, std::int64_t> bytes = {
      {"base", 1000}, {"top1", 1}, {"top2", 2}, {"own", 7}};
  auto use = DiskUse(Images(), bytes, {"app1"});
  ASSERT_EQ(use.size(), 4u);
  EXPECT_EQ(use[0].name, "app1");
  EXPECT_EQ(use[0].bytes, 10 + 1000 + 1);
  EXPECT_EQ(use[0].own_bytes, 10 + 1) << "the base is shared with app2";
  EXPECT_TRUE(use[0].in_use);
  EXPECT_EQ(use[2].own_bytes, 5 + 7);
  EXPECT_EQ(use[3].bytes, 300);
  EXPECT_FALSE(use[3].in_use);
}

}  // namespace
}  // namespace bai::agent
