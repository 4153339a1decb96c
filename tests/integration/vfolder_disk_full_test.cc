// SPDX-License-Identifier: Apache-2.0
// A storage volume that fills up: a small tmpfs as the only volume (root: it mounts one). An
// upload larger than the free space is refused before any byte; one that runs out of space half
// way is answered 507 with a clear message, leaves no partial file in the folder, and resumes
// to a byte-identical file once space is freed.
#include "tests/integration/vfolder_fixture.h"

#include <gmock/gmock.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_vfolders::VFolderTest;

class VFolderDiskFullTest : public VFolderTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs (label 'root')";
    volume_ = dir_.path() + "/small";
    std::filesystem::create_directories(volume_);
    ASSERT_EQ(::mount("tmpfs", volume_.c_str(), "tmpfs", 0, "size=4m"), 0) << std::strerror(errno);
    mounted_ = true;
    config_.vfolders.volumes = {{"volume1", volume_}};
    VFolderTest::SetUp();
  }
  void TearDown() override {
    manager_.reset();
    if (mounted_) ::umount2(volume_.c_str(), MNT_DETACH);
  }

  std::string volume_;
  bool mounted_ = false;

  // Uploads 3 MiB in chunks of `chunk` while a 2 MiB filler takes the room it needs: 507 with a
  // clear message half way, nothing in the folder, and a byte-identical file once it is freed.
  void FillAndResume(std::size_t chunk, bool checksum) {
    // 3 MiB fits now; a filler of 2 MiB then takes the room it needs.
    std::string data = testing_vfolders::Random(3 << 20, 11);
    auto [status, url] = Ticket(*alice_, "data", "request-upload",
                                {{"path", "dir/file.bin"}, {"size", data.size()}});
    ASSERT_EQ(status, 200) << url;
    ASSERT_EQ(Patch(url, 0, data.substr(0, chunk), checksum).status, 204);
    {
      std::ofstream filler(volume_ + "/filler", std::ios::binary);
      filler << std::string(2 << 20, 'f');
      ASSERT_TRUE(filler.good());
    }
    std::size_t offset = chunk;
    int full = 0;
    std::string message;
    for (; offset < data.size(); offset += chunk) {
      auto r = Patch(url, static_cast<std::int64_t>(offset), data.substr(offset, chunk), checksum);
      if (r.status != 204) {
        full = r.status;
        message = r.body;
        break;
      }
    }
    ASSERT_EQ(full, 507) << "the volume should have filled before " << offset;
    EXPECT_THAT(message, HasSubstr("no space left"));
    // No partial file in the folder: the upload appears only whole.
    auto listing = Call(*alice_, "GET", "/folders/data/files");
    EXPECT_EQ(json::parse(listing.body)["items"].size(), 0u) << listing.body;
    // What the proxy kept is a whole number of accepted bytes; resume from there once freed.
    auto head = Raw(url, "HEAD", {}, {{"Tus-Resumable", "1.0.0"}});
    ASSERT_EQ(head.status, 200);
    auto kept = std::stoll(head.Header("upload-offset").value_or("-1"));
    EXPECT_GE(kept, static_cast<long long>(chunk));
    EXPECT_LE(kept, static_cast<long long>(offset));
    if (!checksum) {
      EXPECT_EQ(kept, static_cast<long long>(offset)) << "the cut chunk keeps none";
    }
    std::filesystem::remove(volume_ + "/filler");
    for (auto off = static_cast<std::size_t>(kept); off < data.size(); off += chunk) {
      auto r = Patch(url, static_cast<std::int64_t>(off), data.substr(off, chunk), checksum);
      ASSERT_EQ(r.status, 204) << r.body;
    }
    EXPECT_TRUE(Download(*alice_, "data", "dir/file.bin") == data);
  }
};

TEST_F(VFolderDiskFullTest, AFullVolumeLosesNothingAndTheUploadResumes) {
  auto id = Create(*alice_, "data");
  // More than the volume holds: refused at request-upload, nothing written.
  auto big = Call(*alice_, "POST", "/folders/data/request-upload",
                  {{"path", "big.bin"}, {"size", 8 << 20}});
  // The manager answers as for a quota (412 quota-exceeded), naming the volume's free space.
  EXPECT_EQ(big.status, 412) << big.body;
  EXPECT_THAT(big.body, HasSubstr("the volume has"));

  FillAndResume(512 << 10, true);
  (void)id;
}

// The same with chunks that stream to the volume as they arrive (over 1 MiB, no checksum): the
// chunk that hits the full disk keeps none of its bytes.
TEST_F(VFolderDiskFullTest, AFullVolumeLosesNothingWhenChunksStreamToIt) {
  Create(*alice_, "data");
  FillAndResume(1536 << 10, false);
}

}  // namespace
}  // namespace bai::manager
