// SPDX-License-Identifier: Apache-2.0
// The one placement rule of `bai cp` and `bai session cp` (bai/copy_rule.h): cp(1)'s.
#include "bai/copy_rule.h"

#include <gtest/gtest.h>

namespace bai {
namespace {

using K = PathKind;

std::vector<std::string> Place(std::vector<CopySource> const& sources, std::string const& dst,
                               K kind, bool recursive = false) {
  auto targets = PlaceCopies(sources, dst, kind, recursive);
  EXPECT_TRUE(targets.ok()) << targets.status().message();
  return targets.ok() ? *targets : std::vector<std::string>{};
}

StatusCode Refused(std::vector<CopySource> const& sources, std::string const& dst, K kind,
                   bool recursive = false) {
  auto targets = PlaceCopies(sources, dst, kind, recursive);
  EXPECT_FALSE(targets.ok());
  return targets.ok() ? StatusCode::kOk : targets.status().code();
}

TEST(CopyRuleTest, OneFileTakesANewName) {
  // The defect: `bai cp h.txt vf:renamed.txt` made renamed.txt/h.txt.
  EXPECT_EQ(Place({{"h.txt", K::kFile}}, "renamed.txt", K::kMissing),
            std::vector<std::string>{"renamed.txt"});
  EXPECT_EQ(Place({{"dir/h.txt", K::kFile}}, "out/renamed.txt", K::kMissing),
            std::vector<std::string>{"out/renamed.txt"});
  // An existing file is replaced (it was "Not a directory").
  EXPECT_EQ(Place({{"h.txt", K::kFile}}, "local.txt", K::kFile),
            std::vector<std::string>{"local.txt"});
}

TEST(CopyRuleTest, AnExistingDirectoryTakesSourcesUnderTheirNames) {
  EXPECT_EQ(Place({{"a/h.txt", K::kFile}}, "docs", K::kDirectory),
            std::vector<std::string>{"docs/h.txt"});
  EXPECT_EQ(Place({{"x", K::kFile}, {"y/z/", K::kDirectory}}, "d/", K::kDirectory, true),
            (std::vector<std::string>{"d/x", "d/z"}));
  // "", "." and a '/'-ended path mean a directory even when they do not exist yet.
  EXPECT_EQ(Place({{"p/q", K::kFile}}, "", K::kMissing), std::vector<std::string>{"q"});
  EXPECT_EQ(Place({{"p/q", K::kFile}}, ".", K::kMissing), std::vector<std::string>{"q"});
  EXPECT_EQ(Place({{"q", K::kFile}, {"r", K::kFile}}, "new/", K::kMissing),
            (std::vector<std::string>{"new/q", "new/r"}));
  EXPECT_TRUE(CopiesInto("new/", K::kMissing));
  EXPECT_FALSE(CopiesInto("new", K::kMissing));
}

TEST(CopyRuleTest, ADirectoryBecomesTheNewName) {
  // cp -r tree back: back is the tree (not back/tree) when back does not exist.
  EXPECT_EQ(Place({{"in/tree", K::kDirectory}}, "back", K::kMissing, true),
            std::vector<std::string>{"back"});
  EXPECT_EQ(Place({{"in/tree", K::kDirectory}}, "back", K::kDirectory, true),
            std::vector<std::string>{"back/tree"});
}

TEST(CopyRuleTest, RefusesWhatCpRefuses) {
  // Several sources need a directory.
  EXPECT_EQ(Refused({{"a", K::kFile}, {"b", K::kFile}}, "c", K::kMissing),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused({{"a", K::kFile}, {"b", K::kFile}}, "c", K::kFile),
            StatusCode::kInvalidArgument);
  // Directories need -r, never replace a file.
  EXPECT_EQ(Refused({{"d", K::kDirectory}}, "x", K::kMissing), StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused({{"d", K::kDirectory}}, "x", K::kFile, true), StatusCode::kInvalidArgument);
  // A '/'-ended file.
  EXPECT_EQ(Refused({{"a", K::kFile}}, "f/", K::kFile), StatusCode::kInvalidArgument);
  // A source with no name to place inside a directory.
  EXPECT_EQ(Refused({{"/", K::kDirectory}}, "d", K::kDirectory, true),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused({{"..", K::kDirectory}}, "d", K::kDirectory, true),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused({{"gone", K::kMissing}}, "d", K::kDirectory), StatusCode::kNotFound);
  EXPECT_EQ(Refused({}, "d", K::kDirectory), StatusCode::kInvalidArgument);
}

TEST(CopyRuleTest, NamesAndJoins) {
  EXPECT_EQ(LastName("a/b/"), "b");
  EXPECT_EQ(LastName("b"), "b");
  EXPECT_EQ(LastName("/"), "");
  EXPECT_EQ(JoinPath("", "x"), "x");
  EXPECT_EQ(JoinPath(".", "x"), "x");
  EXPECT_EQ(JoinPath("d/", "x"), "d/x");
  EXPECT_EQ(JoinPath("d", "x"), "d/x");
  EXPECT_EQ(JoinPath("d", ""), "d");
}

}  // namespace
}  // namespace bai
