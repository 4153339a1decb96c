// SPDX-License-Identifier: Apache-2.0
// A storage volume (server-reference/storage/volume.h): folders, and upload sessions that
// survive restarts, refuse wrong offsets and checksums, and put a file in place only whole.
#include "server-reference/storage/volume.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <filesystem>

namespace bai::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Sha(std::string_view data) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<unsigned char const*>(data.data()), data.size(), d);
  return std::string(reinterpret_cast<char*>(d), sizeof d);
}

class VolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/volume1";
    fs::create_directories(root_);
    Reopen();
    folder_ = {"user-" + std::string(32, 'a'), "0123456789abcdef0123456789abcdef"};
    ASSERT_TRUE(volume_->CreateFolder(folder_).ok());
  }
  // A new Volume on the same directory: what a restarted storage proxy sees.
  void Reopen() {
    auto v = Volume::Open("volume1", root_);
    ASSERT_TRUE(v.ok()) << v.status().message();
    volume_ = std::move(*v);
  }
  std::string InFolder(std::string const& rel) { return *volume_->FolderPath(folder_) + "/" + rel; }

  testing_util::TempDir dir_;
  std::string root_;
  std::unique_ptr<Volume> volume_;
  FolderRef folder_;
};

TEST_F(VolumeTest, FoldersAreLaidOutByScopeAndId) {
  EXPECT_EQ(*volume_->FolderPath(folder_),
            root_ + "/user-" + std::string(32, 'a') + "/01/23/456789abcdef0123456789abcdef");
  EXPECT_TRUE(fs::is_directory(InFolder("")));
  EXPECT_EQ(volume_->CreateFolder(folder_).code(), StatusCode::kAlreadyExists);
  for (FolderRef bad :
       {FolderRef{"user-x", folder_.id}, FolderRef{"group-" + folder_.id, folder_.id},
        FolderRef{folder_.scope, "../../etc"}, FolderRef{folder_.scope, ""}}) {
    EXPECT_EQ(volume_->CreateFolder(bad).code(), StatusCode::kInvalidArgument) << bad.scope;
  }
  ASSERT_TRUE(volume_->DeleteFolder(folder_).ok());
  EXPECT_FALSE(fs::exists(InFolder("")));
  EXPECT_EQ(volume_->DeleteFolder(folder_).code(), StatusCode::kNotFound);
}

TEST_F(VolumeTest, AnUploadResumesAfterARestartAndAppearsWhole) {
  std::string data = "0123456789abcdefghij";
  auto s = volume_->StartUpload(folder_, "dir/file.bin", 20, false);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->offset, 0);
  ASSERT_TRUE(volume_->Append(s->id, 0, data.substr(0, 8), Sha(data.substr(0, 8))).ok());
  EXPECT_FALSE(fs::exists(InFolder("dir/file.bin"))) << "nothing in the folder before the end";
  // The proxy restarts: the session and its offset are still there.
  Reopen();
  auto again = volume_->GetUpload(s->id);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->offset, 8);
  EXPECT_EQ(again->relpath, "dir/file.bin");
  // A client that asks again for the same file and size gets the same session.
  auto resumed = volume_->StartUpload(folder_, "dir/file.bin", 20, true);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->id, s->id);
  EXPECT_EQ(resumed->offset, 8);
  EXPECT_NE(volume_->StartUpload(folder_, "dir/file.bin", 21, true)->id, s->id)
      << "another size is another upload";
  // A wrong offset or a wrong checksum writes nothing.
  EXPECT_EQ(volume_->Append(s->id, 4, "xxxx", "").status().code(), StatusCode::kAborted);
  EXPECT_EQ(volume_->Append(s->id, 8, "wrong", Sha("right")).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(volume_->Append(s->id, 8, std::string(13, 'x'), "").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(volume_->GetUpload(s->id)->offset, 8);
  auto done = volume_->Append(s->id, 8, data.substr(8), "");
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_TRUE(done->complete());
  EXPECT_EQ(testing_util::ReadFileBytes(InFolder("dir/file.bin")), data);
  EXPECT_EQ(volume_->GetUpload(s->id).status().code(), StatusCode::kNotFound) << "ended";
}

// A chunk written as it arrives (a streamed PATCH): its pieces at the end of those before, a
// second writer refused while it is open, and what came counted when it ends early.
TEST_F(VolumeTest, AChunkIsWrittenPieceByPieceAndCountsWhatCameWhenCutShort) {
  std::string data = "0123456789abcdefghijklmnopqrstuvwxyz";  // 36
  auto s = volume_->StartUpload(folder_, "streamed.bin", 36, false);
  ASSERT_TRUE(s.ok());
  {
    auto chunk = volume_->OpenChunk(s->id, -1, 0, 20);
    ASSERT_TRUE(chunk.ok()) << chunk.status().message();
    ASSERT_TRUE(chunk->Write(data.substr(0, 6)).ok());
    ASSERT_TRUE(chunk->Write(data.substr(6, 4)).ok());
    EXPECT_EQ(volume_->OpenChunk(s->id, -1, 0, 1).status().code(), StatusCode::kAborted)
        << "one writer at a time";
    EXPECT_EQ(chunk->Write(std::string(11, 'x')).code(), StatusCode::kFailedPrecondition)
        << "past the length it was opened for";
    // The client goes away after 10 of its 20 bytes: they count.
    ASSERT_TRUE(chunk->Close().ok());
    EXPECT_EQ(chunk->session().offset, 10);
  }
  EXPECT_EQ(volume_->GetUpload(s->id)->offset, 10);
  {
    // Destroyed without Close (a server stopping mid-body): closed all the same.
    auto chunk = volume_->OpenChunk(s->id, -1, 10, 26);
    ASSERT_TRUE(chunk.ok());
    ASSERT_TRUE(chunk->Write(data.substr(10, 5)).ok());
  }
  EXPECT_EQ(volume_->GetUpload(s->id)->offset, 15);
  auto last = volume_->OpenChunk(s->id, -1, 15, 21);
  ASSERT_TRUE(last.ok());
  for (std::size_t at = 15; at < 36; at += 7) ASSERT_TRUE(last->Write(data.substr(at, 7)).ok());
  ASSERT_TRUE(last->Close().ok());
  EXPECT_TRUE(last->session().complete());
  EXPECT_EQ(testing_util::ReadFileBytes(InFolder("streamed.bin")), data);
  // A part's chunk cut short counts its bytes in the part alone.
  auto p = volume_->StartUpload(folder_, "parted.bin", 8, false);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(volume_->AddPart(p->id, "4")->verdict.ok());
  ASSERT_TRUE(volume_->AddPart(p->id, "4")->verdict.ok());
  {
    auto chunk = volume_->OpenChunk(p->id, 1, 0, 4);
    ASSERT_TRUE(chunk.ok()) << chunk.status().message();
    ASSERT_TRUE(chunk->Write("ef").ok());
    EXPECT_EQ(volume_->OpenChunk(p->id, 1, 0, 1).status().code(), StatusCode::kAborted);
    EXPECT_TRUE(volume_->OpenChunk(p->id, 0, 0, 4).ok()) << "other parts are written at once";
  }
  auto parts = volume_->Parts(p->id);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ((*parts)[0].received, 0);
  EXPECT_EQ((*parts)[1].received, 2);
}

// Uploads in parts (tus concatenation): parts are placed in the order made, written at once
// in any order, survive a restart, and make the file whole only when every part is.
TEST_F(VolumeTest, AnUploadInPartsIsWrittenInPlaceAndAppearsWholeWhenEveryPartIs) {
  std::string data;
  for (int i = 0; i < 30; ++i) data += static_cast<char>('A' + i);
  auto s = volume_->StartUpload(folder_, "parts.bin", 30, false);
  ASSERT_TRUE(s.ok());
  for (std::string length : {"12", "12", "6"}) {
    auto made = volume_->AddPart(s->id, length);
    ASSERT_TRUE(made.ok()) << made.status().message();
    ASSERT_TRUE(made->verdict.ok()) << made->verdict.message;
  }
  auto parts = volume_->Parts(s->id);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[1].start, 12);
  EXPECT_EQ((*parts)[2].length, 6);
  // No more room; no part without a length.
  EXPECT_EQ(volume_->AddPart(s->id, "1")->verdict.status, 413);
  EXPECT_EQ(volume_->AddPart(s->id, std::nullopt)->verdict.status, 400);
  // Last part first, then half of part 0; a restart keeps what came.
  ASSERT_TRUE(volume_->AppendPart(s->id, 2, 0, data.substr(24), Sha(data.substr(24))).ok());
  ASSERT_TRUE(volume_->AppendPart(s->id, 0, 0, data.substr(0, 5), "").ok());
  Reopen();
  parts = volume_->Parts(s->id);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ((*parts)[0].received, 5);
  EXPECT_EQ((*parts)[1].received, 0);
  EXPECT_EQ((*parts)[2].received, 6);
  EXPECT_EQ(volume_->GetUpload(s->id)->parts, 3);
  EXPECT_EQ(volume_->GetUpload(s->id)->offset, 0) << "a whole-file upload would start over";
  // Wrong offsets, lengths and checksums write nothing; no such part.
  EXPECT_EQ(volume_->AppendPart(s->id, 0, 4, "x", "").status().code(), StatusCode::kAborted);
  EXPECT_EQ(volume_->AppendPart(s->id, 0, 5, std::string(8, 'x'), "").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(volume_->AppendPart(s->id, 0, 5, "wrong", Sha("right")).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(volume_->AppendPart(s->id, 3, 0, "x", "").status().code(), StatusCode::kNotFound);
  // The final request before every part is whole, or naming them out of order, is refused.
  EXPECT_EQ(volume_->FinishParts(s->id, {0, 1, 2})->status, 409);
  ASSERT_TRUE(volume_->AppendPart(s->id, 0, 5, data.substr(5, 7), "").ok());
  ASSERT_TRUE(volume_->AppendPart(s->id, 1, 0, data.substr(12, 12), "").ok());
  EXPECT_EQ(volume_->FinishParts(s->id, {1, 0, 2})->status, 400);
  EXPECT_EQ(volume_->FinishParts(s->id, {0, 1})->status, 400);
  EXPECT_FALSE(fs::exists(InFolder("parts.bin")));
  auto done = volume_->FinishParts(s->id, {0, 1, 2});
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_TRUE(done->ok()) << done->message;
  EXPECT_EQ(testing_util::ReadFileBytes(InFolder("parts.bin")), data);
  EXPECT_EQ(volume_->GetUpload(s->id).status().code(), StatusCode::kNotFound) << "ended";
}

// One session is sent one way at a time: no parts after bytes sent whole, and a whole-file
// upload at offset 0 takes a session back from its parts (what they wrote is dropped).
TEST_F(VolumeTest, AnUploadIsSentWholeOrInPartsNotBoth) {
  auto s = volume_->StartUpload(folder_, "mixed.bin", 10, false);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(volume_->Append(s->id, 0, "abc", "").ok());
  EXPECT_EQ(volume_->AddPart(s->id, "5")->verdict.status, 409);
  auto t = volume_->StartUpload(folder_, "taken.bin", 10, false);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(volume_->AddPart(t->id, "5")->verdict.ok());
  ASSERT_TRUE(volume_->AppendPart(t->id, 0, 0, "zzzzz", "").ok());
  EXPECT_EQ(volume_->Append(t->id, 5, "xxxxx", "").status().code(), StatusCode::kAborted);
  auto whole = volume_->Append(t->id, 0, "0123456789", "");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_TRUE(whole->complete());
  EXPECT_EQ(testing_util::ReadFileBytes(InFolder("taken.bin")), "0123456789");
}

// Hardening (hostile testing): purging a folder during an upload left the upload's data on the
// volume (counted in usage for 7 days), and the next write answered with the absolute host path.
TEST_F(VolumeTest, DeletingAFolderEndsItsUploadsAndMessagesHideHostPaths) {
  auto s = volume_->StartUpload(folder_, "big.bin", 1000, false);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(volume_->Append(s->id, 0, std::string(100, 'x'), "").ok());
  EXPECT_EQ(volume_->ScopeUsage(folder_.scope)->bytes, 1000) << "reserved while it runs";
  ASSERT_TRUE(volume_->DeleteFolder(folder_).ok());
  EXPECT_EQ(volume_->GetUpload(s->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(volume_->ScopeUsage(folder_.scope)->bytes, 0);
  auto tree = volume_->Tree(folder_, "/");
  ASSERT_FALSE(tree.ok());
  EXPECT_THAT(tree.status().message(), ::testing::Not(HasSubstr(root_)));
  auto again = volume_->StartUpload(folder_, "big.bin", 10, false);
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.status().message(), ::testing::Not(HasSubstr(root_)));
}

TEST_F(VolumeTest, EmptyFilesAndReplacing) {
  auto empty = volume_->StartUpload(folder_, "empty", 0, false);
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE(volume_->Append(empty->id, 0, "", "").ok());
  EXPECT_TRUE(fs::is_regular_file(InFolder("empty")));
  EXPECT_EQ(fs::file_size(InFolder("empty")), 0u);
  auto again = volume_->StartUpload(folder_, "empty", 3, false);
  ASSERT_TRUE(volume_->Append(again->id, 0, "new", "").ok());
  EXPECT_EQ(testing_util::ReadFileBytes(InFolder("empty")), "new") << "a file is replaced";
  fs::create_directories(InFolder("adir"));
  EXPECT_EQ(volume_->StartUpload(folder_, "adir", 1, false).status().code(),
            StatusCode::kFailedPrecondition);
  auto file_parent = volume_->StartUpload(folder_, "empty/child", 1, false);
  EXPECT_EQ(file_parent.status().code(), StatusCode::kFailedPrecondition) << "a file as a parent";
  auto later_dir = volume_->StartUpload(folder_, "bdir", 1, false);
  ASSERT_TRUE(later_dir.ok());
  fs::create_directories(InFolder("bdir"));
  EXPECT_EQ(volume_->Append(later_dir->id, 0, "x", "").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::is_directory(InFolder("bdir")));
}

TEST_F(VolumeTest, PathsStayInTheFolder) {
  for (std::string bad :
       std::vector<std::string>{"../x", "/etc/passwd", "", "a/../../b", std::string("a\0b", 3)}) {
    EXPECT_EQ(volume_->StartUpload(folder_, bad, 1, false).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  std::string outside = dir_.path() + "/outside";
  fs::create_directories(outside);
  fs::create_directory_symlink(outside, InFolder("out"));
  // Refused when asked, before any byte.
  auto early = volume_->StartUpload(folder_, "out/planted", 1, false);
  EXPECT_EQ(early.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(early.status().message(), HasSubstr("outside"));
  // And when the link is planted while the upload runs: refused at the end, nothing outside.
  auto s = volume_->StartUpload(folder_, "later/planted", 1, false);
  ASSERT_TRUE(s.ok());
  fs::create_directory_symlink(outside, InFolder("later"));
  auto r = volume_->Append(s->id, 0, "x", "");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(outside + "/planted"));
  FolderRef missing{folder_.scope, std::string(32, 'b')};
  EXPECT_EQ(volume_->StartUpload(missing, "x", 1, false).status().code(), StatusCode::kNotFound);
}

TEST_F(VolumeTest, TooLargeForTheVolumeIsRefusedBeforeAnyByte) {
  auto free = volume_->FreeBytes();
  ASSERT_TRUE(free.ok());
  auto s = volume_->StartUpload(folder_, "huge", *free + (1 << 30), false);
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.status().message(), HasSubstr("free"));
  EXPECT_TRUE(fs::is_empty(root_ + "/.uploads")) << "no session left behind";
}

TEST_F(VolumeTest, OldSessionsExpireAndCancelledOnesAreGone) {
  auto a = volume_->StartUpload(folder_, "a", 10, false);
  auto b = volume_->StartUpload(folder_, "b", 10, false);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(volume_->CancelUpload(b->id).ok());
  EXPECT_EQ(volume_->GetUpload(b->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(volume_->ExpireUploads(a->created + 100, 3600), 0);
  EXPECT_EQ(volume_->ExpireUploads(a->created + 7200, 3600), 1);
  EXPECT_EQ(volume_->GetUpload(a->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(volume_->GetUpload("../../etc").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace bai::storage
