// SPDX-License-Identifier: Apache-2.0
// A kernel's work directory as file requests see it (server-reference/common/fs/work_files.h):
// confinement (paths, symbolic links planted inside), atomic writes, listings, archives that GNU
// tar reads, and the limits.
#include "server-reference/common/fs/work_files.h"

#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::server {
namespace {

namespace fs = std::filesystem;
namespace p = protocol;
namespace rp = runner_protocol;
using ::testing::HasSubstr;

std::string Slurp(std::string const& path) { return testing_util::ReadFileBytes(path); }
void Spit(std::string const& path, std::string const& data) {
  testing_util::WriteFileBytes(path, data);
}

TEST(WorkRelativeTest, AcceptsPathsUnderTheWorkDirectoryOnly) {
  EXPECT_EQ(*WorkRelative(""), "");
  EXPECT_EQ(*WorkRelative("."), "");
  EXPECT_EQ(*WorkRelative("/home/work"), "");
  EXPECT_EQ(*WorkRelative("/home/work/"), "");
  EXPECT_EQ(*WorkRelative("/home/work/a//b/./c/"), "a/b/c");
  EXPECT_EQ(*WorkRelative("a/b"), "a/b");
  for (std::string bad : std::vector<std::string>{
           "../x", "a/../../x", "a/..", "/etc/passwd", "/home/workers/x", "/home",
           std::string("a\0b", 3), std::string(300, 'n'), std::string(4096, 'a')}) {
    SCOPED_TRACE(bad.substr(0, 40));
    auto r = WorkRelative(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

class WorkTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = dir_.path() + "/work";
    outside_ = dir_.path() + "/outside";
    fs::create_directories(work_);
    fs::create_directories(outside_);
    Spit(outside_ + "/secret", "secret");
    auto t = ConfinedTree::Open(work_, "/home/work");
    ASSERT_TRUE(t.ok()) << t.status().message();
    tree_.emplace(std::move(*t));
  }
  std::vector<std::string> Names(std::string const& dir) {
    std::vector<std::string> out;
    for (auto const& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
  testing_util::TempDir dir_;
  std::string work_, outside_;
  std::optional<ConfinedTree> tree_;
};

TEST_F(WorkTreeTest, WritesMakeParentsAndReplaceWhole) {
  ASSERT_TRUE(tree_->Write("a/b/c.txt", "one").ok());
  EXPECT_EQ(Slurp(work_ + "/a/b/c.txt"), "one");
  ASSERT_TRUE(tree_->Write("/home/work/a/b/c.txt", "two").ok());
  EXPECT_EQ(Slurp(work_ + "/a/b/c.txt"), "two");
  ASSERT_TRUE(tree_->Write("empty", "").ok());
  EXPECT_TRUE(fs::is_regular_file(work_ + "/empty"));
  // No temporary file stays behind.
  EXPECT_EQ(Names(work_ + "/a/b"), std::vector<std::string>{"c.txt"});
  auto onto_dir = tree_->Write("a", "x");
  EXPECT_EQ(onto_dir.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(tree_->Write("", "x").code(), StatusCode::kFailedPrecondition);
  auto through_file = tree_->Write("empty/x", "x");
  EXPECT_FALSE(through_file.ok());
}

TEST_F(WorkTreeTest, PlantedSymbolicLinksLeadNowhere) {
  fs::create_directory_symlink(outside_, work_ + "/out");
  fs::create_symlink(outside_ + "/secret", work_ + "/secret-link");
  fs::create_symlink("../outside/secret", work_ + "/relative-link");
  fs::create_directories(work_ + "/in");
  fs::create_directory_symlink("in", work_ + "/in-link");  // stays inside: fine

  // Writing through a link to a directory outside: refused, nothing appears there.
  auto w = tree_->Write("out/planted", "x");
  EXPECT_EQ(w.code(), StatusCode::kInvalidArgument) << w.message();
  EXPECT_THAT(w.message(), HasSubstr("outside"));
  EXPECT_FALSE(fs::exists(outside_ + "/planted"));
  // Reading or listing through them: refused.
  EXPECT_FALSE(tree_->Read("secret-link", 1 << 20).ok());
  EXPECT_FALSE(tree_->Read("relative-link", 1 << 20).ok());
  EXPECT_FALSE(tree_->Read("out/secret", 1 << 20).ok());
  EXPECT_FALSE(tree_->List("out").ok());
  // Writing onto a link replaces the link; the file it pointed to is untouched.
  ASSERT_TRUE(tree_->Write("secret-link", "mine").ok());
  EXPECT_EQ(Slurp(outside_ + "/secret"), "secret");
  EXPECT_FALSE(fs::is_symlink(work_ + "/secret-link"));
  // Links inside the tree work.
  ASSERT_TRUE(tree_->Write("in-link/f", "ok").ok());
  EXPECT_EQ(Slurp(work_ + "/in/f"), "ok");
  // An archive stores links as links and never reads what they point to.
  auto a = tree_->Archive("", 1 << 20);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto members = p::ReadTar(*a);
  ASSERT_TRUE(members.ok());
  for (auto const& m : *members) {
    if (m.name == "work/out" || m.name == "work/relative-link") {
      EXPECT_EQ(m.type, p::TarType::kSymlink) << m.name;
    }
    EXPECT_NE(m.data, "secret") << m.name;
  }
}

TEST_F(WorkTreeTest, ListsWithModesAndSizes) {
  ASSERT_TRUE(tree_->Write("b.txt", "12345").ok());
  ASSERT_TRUE(tree_->Write("a/x", "").ok());
  ::chmod((work_ + "/b.txt").c_str(), 0600);
  auto list = tree_->List(".");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->abspath, "/home/work");
  ASSERT_EQ(list->files.size(), 2u);
  EXPECT_EQ(list->files[0].filename, "a");
  EXPECT_EQ(list->files[0].mode[0], 'd');
  EXPECT_EQ(list->files[1].filename, "b.txt");
  EXPECT_EQ(list->files[1].mode, "-rw-------");
  EXPECT_EQ(list->files[1].size, 5);
  EXPECT_GT(list->files[1].mtime, 1.6e9);
  EXPECT_EQ(tree_->List("a")->abspath, "/home/work/a");
  EXPECT_EQ(tree_->List("missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(tree_->List("b.txt").status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(WorkTreeTest, ReadsAndArchivesWithinLimits) {
  ASSERT_TRUE(tree_->Write("big", std::string(10000, 'b')).ok());
  EXPECT_EQ(tree_->Read("big", 10000)->size(), 10000u);
  EXPECT_EQ(tree_->Read("big", 9999).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(tree_->Archive("big", 5000).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(tree_->Read("", 10).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(tree_->Read("nothing", 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(tree_->Archive("nothing", 10).status().code(), StatusCode::kNotFound);
}

TEST_F(WorkTreeTest, ArchivesAreWhatGnuTarExtracts) {
  std::string long_name = std::string(120, 'L') + ".txt";
  ASSERT_TRUE(tree_->Write("proj/src/main.py", "print('hi')\n").ok());
  ASSERT_TRUE(tree_->Write("proj/" + long_name, std::string(513, 'x')).ok());
  ASSERT_TRUE(tree_->Write("proj/empty", "").ok());
  ::chmod((work_ + "/proj/src/main.py").c_str(), 0755);
  fs::create_symlink("src/main.py", work_ + "/proj/link");
  auto a = tree_->Archive("proj", 1 << 20);
  ASSERT_TRUE(a.ok()) << a.status().message();
  std::string tarfile = dir_.path() + "/proj.tar", into = dir_.path() + "/extracted";
  Spit(tarfile, *a);
  fs::create_directories(into);
  auto r = testing_util::RunProcess({"/bin/tar", "-xf", tarfile, "-C", into});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Slurp(into + "/proj/src/main.py"), "print('hi')\n");
  EXPECT_EQ(fs::status(into + "/proj/src/main.py").permissions() & fs::perms::owner_exec,
            fs::perms::owner_exec);
  EXPECT_EQ(Slurp(into + "/proj/" + long_name), std::string(513, 'x'));
  EXPECT_EQ(fs::file_size(into + "/proj/empty"), 0u);
  EXPECT_EQ(fs::read_symlink(into + "/proj/link"), "src/main.py");
  // And what GNU tar writes (GNU long names), the codec reads.
  auto made = testing_util::RunProcess(
      {"/bin/tar", "--format=gnu", "-cf", dir_.path() + "/gnu.tar", "-C", into, "proj"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto members = p::ReadTar(Slurp(dir_.path() + "/gnu.tar"));
  ASSERT_TRUE(members.ok()) << members.status().message();
  bool found = false;
  for (auto const& m : *members) found |= m.name == "proj/" + long_name && m.data.size() == 513;
  EXPECT_TRUE(found);
}

TEST_F(WorkTreeTest, FileRequestsAnswerEveryAction) {
  auto write = AnswerFileRequest(work_, {"r1", rp::kFileWrite, "x/y", "data", 0});
  ASSERT_TRUE(write.status.ok()) << write.status.message();
  EXPECT_EQ(write.request_id, "r1");
  auto list = AnswerFileRequest(work_, {"r2", rp::kFileList, "x", "", 0});
  ASSERT_TRUE(list.status.ok());
  auto listed = p::DecodeSessionFileList(list.files_json);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->files.size(), 1u);
  EXPECT_EQ(listed->files[0].filename, "y");
  EXPECT_EQ(listed->abspath, "/home/work/x");
  auto read = AnswerFileRequest(work_, {"r3", rp::kFileRead, "x/y", "", 100});
  EXPECT_EQ(read.data, "data");
  auto bad = AnswerFileRequest(work_, {"r4", "delete", "x", "", 0});
  EXPECT_EQ(bad.status.code(), StatusCode::kInvalidArgument);
  // The result survives its codec with the status and the bytes.
  read.data = std::string("\0\xff\x80", 3);
  auto back = rp::DecodeFileResult(rp::EncodeFileResult(read));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data, read.data);
  auto failed = rp::DecodeFileResult(rp::EncodeFileResult(bad));
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(failed->status.message(), HasSubstr("delete"));
}

// The operations a virtual folder needs, on a tree that takes relative paths only.
class FolderTreeTest : public WorkTreeTest {
 protected:
  void SetUp() override {
    WorkTreeTest::SetUp();
    auto t = ConfinedTree::Open(work_, "", "data:");
    ASSERT_TRUE(t.ok());
    folder_.emplace(std::move(*t));
  }
  std::optional<ConfinedTree> folder_;
};

TEST_F(FolderTreeTest, AbsolutePathsAreRefused) {
  EXPECT_EQ(RelativeBeneath("/x", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(folder_->Mkdir("/home/work/x", true, false).message(), HasSubstr("absolute"));
  EXPECT_EQ(*RelativeBeneath("a/./b//", ""), "a/b");
}

TEST_F(FolderTreeTest, MkdirWithAndWithoutParents) {
  ASSERT_TRUE(folder_->Mkdir("a", false, false).ok());
  EXPECT_EQ(folder_->Mkdir("a", false, false).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(folder_->Mkdir("a", false, true).ok());
  EXPECT_EQ(folder_->Mkdir("x/y/z", false, false).code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(work_ + "/x")) << "nothing made on the way";
  ASSERT_TRUE(folder_->Mkdir("x/y/z", true, false).ok());
  EXPECT_TRUE(fs::is_directory(work_ + "/x/y/z"));
  ASSERT_TRUE(folder_->Write("file", "f").ok());
  EXPECT_EQ(folder_->Mkdir("file/sub", true, false).code(), StatusCode::kFailedPrecondition);
  fs::create_directory_symlink(outside_, work_ + "/out");
  EXPECT_EQ(folder_->Mkdir("out/planted", true, false).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(outside_ + "/planted"));
}

TEST_F(FolderTreeTest, RenameAndMoveNeverReplace) {
  ASSERT_TRUE(folder_->Write("d/a.txt", "a").ok());
  ASSERT_TRUE(folder_->Write("d/b.txt", "b").ok());
  EXPECT_EQ(folder_->Rename("d/a.txt", "b.txt").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Slurp(work_ + "/d/b.txt"), "b");
  for (std::string bad : std::vector<std::string>{"", ".", "..", "x/y", std::string(256, 'n')}) {
    EXPECT_EQ(folder_->Rename("d/a.txt", bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  ASSERT_TRUE(folder_->Rename("d/a.txt", "c.txt").ok());
  EXPECT_EQ(Slurp(work_ + "/d/c.txt"), "a");
  // Into a directory, or to a new name; never over an entry, never into itself.
  ASSERT_TRUE(folder_->Mkdir("e", false, false).ok());
  ASSERT_TRUE(folder_->Move("d/c.txt", "e").ok());
  EXPECT_EQ(Slurp(work_ + "/e/c.txt"), "a");
  ASSERT_TRUE(folder_->Move("e/c.txt", "e/renamed.txt").ok());
  EXPECT_EQ(folder_->Move("d/b.txt", "e/renamed.txt").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(folder_->Move("e", "e/inner").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(folder_->Move("missing", "e").code(), StatusCode::kNotFound);
  EXPECT_EQ(folder_->Move("../x", "e").code(), StatusCode::kInvalidArgument);
  fs::create_directory_symlink(outside_, work_ + "/out");
  EXPECT_EQ(folder_->Move("d/b.txt", "out/b.txt").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(fs::exists(work_ + "/d/b.txt"));
}

TEST_F(FolderTreeTest, RemoveNeverFollowsLinksAndCountsUsage) {
  ASSERT_TRUE(folder_->Write("t/a", "12345").ok());
  ASSERT_TRUE(folder_->Write("t/sub/b", "123").ok());
  fs::create_directory_symlink(outside_, work_ + "/t/out");
  auto usage = folder_->Usage();
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->files, 3);  // a, b and the link
  EXPECT_EQ(usage->bytes, 8 + static_cast<std::int64_t>(outside_.size()));
  EXPECT_EQ(folder_->Remove("t", false).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(folder_->Remove("t", true).ok());
  EXPECT_FALSE(fs::exists(work_ + "/t"));
  EXPECT_EQ(Slurp(outside_ + "/secret"), "secret") << "what the link pointed at stays";
  EXPECT_EQ(folder_->Remove("", true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(folder_->Remove("t", true).code(), StatusCode::kNotFound);
  EXPECT_TRUE(fs::exists(work_)) << "the root stays";
}

}  // namespace
}  // namespace bai::server
