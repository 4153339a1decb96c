// SPDX-License-Identifier: Apache-2.0
// Image layers applied inside their root (server-reference/common/fs/image_root.h): hostile
// layers (a link then a file through it, "..", absolute names, hard links and whiteouts aimed
// outside) write nothing outside, and ordinary layers (files, modes, links, whiteouts, opaque
// directories, replaced entries) come out as the OCI image spec says.
#include "server-reference/common/fs/image_root.h"

#include "server-reference/common/oci/manifest.h"
#include "tests/testing_util/layer_tar.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace bai::server {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing_util::LayerDir;
using testing_util::LayerFile;
using testing_util::LayerHardLink;
using testing_util::LayerLink;
using testing_util::LayerMember;

class ImageRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/rootfs";
    outside_ = dir_.path() + "/outside";
    fs::create_directories(root_);
    fs::create_directories(outside_);
    testing_util::WriteFileBytes(outside_ + "/victim", "precious");
  }
  std::string Tar(std::string const& name, std::vector<LayerMember> const& members) {
    return testing_util::WriteLayer(dir_.path() + "/" + name + ".tar.gz", members);
  }
  // What the outside directory holds: it must never change.
  std::vector<std::string> Outside() const {
    std::vector<std::string> names;
    for (auto const& e : fs::recursive_directory_iterator(outside_)) {
      names.push_back(e.path().lexically_relative(outside_).string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  void ExpectOutsideUntouched() const {
    EXPECT_EQ(Outside(), std::vector<std::string>{"victim"});
    EXPECT_EQ(testing_util::ReadFileBytes(outside_ + "/victim"), "precious");
    struct stat st {};
    ASSERT_EQ(::stat((outside_ + "/victim").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1u);
  }

  testing_util::TempDir dir_;
  std::string root_, outside_;
};

// The reproduction of the issue: GNU tar followed `evil` and wrote outside/pwned as root.
TEST_F(ImageRootTest, ALinkThenAFileThroughItWritesNothingOutside) {
  ASSERT_TRUE(ApplyImageLayer(Tar("l1", {LayerLink("evil", outside_)}), root_).ok());
  auto s = ApplyImageLayer(Tar("l2", {LayerFile("evil/pwned", "owned")}), root_);
  ExpectOutsideUntouched();
  // The link means the image's own `outside_` path, which the image lacks: refused by name.
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("evil/pwned"));
  // Relative links climbing out are the same.
  ASSERT_TRUE(ApplyImageLayer(Tar("l3", {LayerLink("up", "../../../../../../..")}), root_).ok());
  s = ApplyImageLayer(Tar("l4", {LayerFile("up" + outside_ + "/pwned", "owned")}), root_);
  ExpectOutsideUntouched();
  // Within one layer too, and the link is taken inside the root when its target exists there.
  fs::create_directories(root_ + outside_);
  s = ApplyImageLayer(Tar("l5", {LayerLink("evil2", outside_), LayerFile("evil2/pwned", "owned")}),
                      root_);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectOutsideUntouched();
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + outside_ + "/pwned"), "owned");
}

TEST_F(ImageRootTest, DotDotNamesAreRefusedAndAbsoluteNamesStayInside) {
  auto s = ApplyImageLayer(Tar("l1", {LayerFile("../outside/pwned", "x")}), root_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("../outside/pwned"));
  s = ApplyImageLayer(Tar("l2", {LayerFile("a/../../outside/pwned", "x")}), root_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectOutsideUntouched();
  s = ApplyImageLayer(Tar("l3", {LayerFile(outside_ + "/abs", "inside")}), root_);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + outside_ + "/abs"), "inside");
  ExpectOutsideUntouched();
}

TEST_F(ImageRootTest, HardLinksOutsideAreRefused) {
  for (std::string const& target :
       std::vector<std::string>{outside_ + "/victim", "../outside/victim", "../../" + outside_}) {
    auto s = ApplyImageLayer(Tar("h", {LayerHardLink("h", target)}), root_);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << target;
    ExpectOutsideUntouched();
  }
  // Through a link planted by an earlier layer.
  ASSERT_TRUE(ApplyImageLayer(Tar("l1", {LayerLink("evil", outside_)}), root_).ok());
  auto s = ApplyImageLayer(Tar("l2", {LayerHardLink("h", "evil/victim")}), root_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectOutsideUntouched();
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_ + "/h")));
}

TEST_F(ImageRootTest, WhiteoutsAimedOutsideRemoveNothingThere) {
  ASSERT_TRUE(ApplyImageLayer(Tar("l1", {LayerLink("evil", outside_)}), root_).ok());
  EXPECT_TRUE(ApplyImageLayer(Tar("l2", {LayerFile("evil/.wh.victim", "")}), root_).ok());
  EXPECT_TRUE(ApplyImageLayer(Tar("l3", {LayerFile("evil/.wh..wh..opq", "")}), root_).ok());
  EXPECT_EQ(ApplyImageLayer(Tar("l4", {LayerFile("../outside/.wh.victim", "")}), root_).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(ApplyImageLayer(Tar("l5", {LayerLink("up", "../../../../..")}), root_).ok());
  EXPECT_TRUE(
      ApplyImageLayer(Tar("l6", {LayerFile("up" + outside_ + "/.wh.victim", "")}), root_).ok());
  ExpectOutsideUntouched();
  // The whiteout of the link itself removes the link, not what it names.
  ASSERT_TRUE(ApplyImageLayer(Tar("l7", {LayerFile(".wh.evil", "")}), root_).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_ + "/evil")));
  ExpectOutsideUntouched();
}

TEST_F(ImageRootTest, OrdinaryLayersComeOutAsTheSpecSays) {
  auto s = ApplyImageLayer(
      Tar("base",
          {LayerDir("usr"), LayerDir("usr/lib"), LayerLink("lib", "usr/lib"),
           LayerFile("usr/lib/a.so", "A", 0755), LayerFile("etc/conf", "old"), LayerDir("app"),
           LayerFile("app/keep", "keep"), LayerFile("app/gone", "gone"), LayerDir("opaque"),
           LayerFile("opaque/old", "old"), LayerFile("dir-then-file/x", "x"),
           LayerFile("file-then-dir", "f"), LayerLink("abs", "/usr/lib")}),
      root_);
  ASSERT_TRUE(s.ok()) << s.message();
  s = ApplyImageLayer(
      Tar("upper", {LayerFile("lib/b.so", "B"),            // through the image's own link
                    LayerFile("abs/c.so", "C"),            // an absolute link means the image's /
                    LayerFile("etc/conf", "new", 0600),    // replaced
                    LayerFile("app/.wh.gone", ""),         // deleted
                    LayerFile("opaque/.wh..wh..opq", ""),  // emptied, then this layer's file
                    LayerFile("opaque/new", "new"),        //
                    LayerFile("dir-then-file", "now a file"),  //
                    LayerDir("file-then-dir"),          // a file whose name becomes a directory
                    LayerFile("file-then-dir/y", "y"),  //
                    LayerHardLink("usr/lib/a-again.so", "usr/lib/a.so")}),
      root_);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + "/usr/lib/b.so"), "B");
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + "/usr/lib/c.so"), "C");
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + "/etc/conf"), "new");
  EXPECT_EQ(fs::status(root_ + "/etc/conf").permissions(), fs::perms(0600));
  EXPECT_EQ(fs::status(root_ + "/usr/lib/a.so").permissions(), fs::perms(0755));
  EXPECT_TRUE(fs::exists(root_ + "/app/keep"));
  EXPECT_FALSE(fs::exists(root_ + "/app/gone"));
  EXPECT_FALSE(fs::exists(root_ + "/opaque/old"));
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + "/opaque/new"), "new");
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + "/dir-then-file"), "now a file");
  EXPECT_EQ(testing_util::ReadFileBytes(root_ + "/file-then-dir/y"), "y");
  EXPECT_EQ(fs::read_symlink(root_ + "/lib"), "usr/lib");
  EXPECT_TRUE(fs::is_symlink(root_ + "/abs"));
  EXPECT_EQ(fs::hard_link_count(root_ + "/usr/lib/a.so"), 2u);
  // A file beneath a file is refused by name.
  s = ApplyImageLayer(Tar("bad", {LayerFile("etc/conf/x", "x")}), root_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("etc/conf/x"));
}

// A layer's DiffID is the digest of its tar uncompressed, whatever the compression.
TEST_F(ImageRootTest, ALayersDiffIdIsTheDigestOfItsUncompressedTar) {
  std::string gz = Tar("layer", {LayerFile("a", "1"), LayerDir("d")});
  auto tar = testing_util::RunProcess({"/bin/gzip", "-dc", gz});
  ASSERT_EQ(tar.exit_code, 0);
  std::string plain = dir_.path() + "/layer.tar";
  testing_util::WriteFileBytes(plain, tar.out);
  auto from_gz = LayerDiffId(gz);
  ASSERT_TRUE(from_gz.ok()) << from_gz.status().message();
  EXPECT_EQ(*from_gz, oci::Sha256Digest(tar.out));
  auto from_plain = LayerDiffId(plain);
  ASSERT_TRUE(from_plain.ok()) << from_plain.status().message();
  EXPECT_EQ(*from_plain, *from_gz) << "an uncompressed layer is its own tar";
  EXPECT_NE(*from_gz, oci::Sha256Digest(testing_util::ReadFileBytes(gz)));
  EXPECT_EQ(LayerDiffId(dir_.path() + "/missing").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ImageRootTest, NotATarAndAMissingRootAreClearErrors) {
  testing_util::WriteFileBytes(dir_.path() + "/garbage", "this is not a tar archive at all");
  auto s = ApplyImageLayer(dir_.path() + "/garbage", root_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("garbage"));
  EXPECT_EQ(ApplyImageLayer(Tar("ok", {LayerFile("a", "a")}), dir_.path() + "/nope").code(),
            StatusCode::kNotFound);
}

TEST_F(ImageRootTest, HelpersResolveInsideTheRoot) {
  ASSERT_TRUE(
      ApplyImageLayer(Tar("l", {LayerLink("opt", outside_), LayerLink("etc", outside_)}), root_)
          .ok());
  auto before = fs::status(outside_).permissions();
  // The links name the image's own `outside_`, which it lacks: nothing is made anywhere.
  EXPECT_FALSE(MakeDirectoryInRoot(root_, "opt/bai/bin", 0755).ok());
  EXPECT_FALSE(ChmodInRoot(root_, "etc", 01777).ok());
  ExpectOutsideUntouched();
  EXPECT_EQ(fs::status(outside_).permissions(), before);
  // Once the image has it, they work there.
  fs::create_directories(root_ + outside_);
  EXPECT_TRUE(MakeDirectoryInRoot(root_, "opt/bai/bin", 0755).ok());
  EXPECT_TRUE(ChmodInRoot(root_, "etc", 01777).ok());
  EXPECT_EQ(fs::status(outside_).permissions(), before);
  EXPECT_EQ(fs::status(root_ + outside_).permissions(), fs::perms(01777));
  ExpectOutsideUntouched();
  EXPECT_TRUE(fs::is_directory(root_ + outside_ + "/bai/bin"));
  // Reading follows the image's links inside it, never the host's file.
  auto r = ReadFileInRoot(root_, "etc/victim", 1024);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  testing_util::WriteFileBytes(root_ + outside_ + "/victim", "the image's");
  r = ReadFileInRoot(root_, "etc/victim", 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "the image's");
  EXPECT_EQ(ReadFileInRoot(root_, "etc/victim", 3).status().code(), StatusCode::kResourceExhausted);
  // An image's /tmp linked to the host's directory: the import's chmod 1777 stays inside.
  std::string other = dir_.path() + "/rootfs2";
  fs::create_directories(other);
  ASSERT_TRUE(ApplyImageLayer(Tar("t", {LayerLink("tmp", outside_)}), other).ok());
  EXPECT_FALSE(ChmodInRoot(other, "tmp", 01777).ok());
  EXPECT_EQ(fs::status(outside_).permissions(), before);
}

}  // namespace
}  // namespace bai::server
