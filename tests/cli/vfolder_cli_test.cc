// SPDX-License-Identifier: Apache-2.0
// `bai vfolder …` and `bai cp` end to end against an in-process manager with its embedded
// storage proxy: round trips of trees, exit codes, uploads and downloads killed half way and
// finished by a new `bai` process, the journal that keeps a changed file from being resumed,
// and many files at once.
#include "tests/testing_util/local_cluster.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>

namespace bai {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string RandomBytes(std::size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::string out(n, '\0');
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    auto v = gen();
    std::memcpy(&out[i], &v, 8);
  }
  return out;
}

// For failure messages: the big-file tests are the first to notice a machine short of disk.
std::string DiskReport(std::string const& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return "\n(free space unknown)";
  return "\nfree on " + path + ": " +
         std::to_string(static_cast<unsigned long long>(s.f_bavail) * s.f_frsize >> 20) + " MiB";
}

class VFolderCliTest : public testing_util::LocalCluster {
 protected:
  void SetUp() override {
    LocalCluster::SetUp();
    env_["XDG_STATE_HOME"] = dir_.path() + "/state";
    work_ = dir_.path() + "/work";
    fs::create_directories(work_);
  }

  json Json(testing_util::ProcessResult const& r) {
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }

  // `bai ARGS… 2>&1` in the background (its progress lines readable as they come).
  std::unique_ptr<testing_util::BackgroundProcess> Background(std::vector<std::string> args) {
    std::string line = "exec '" + testing_util::BinPath("bai") + "'";
    for (auto const& a : args) line += " '" + a + "'";
    line += " 2>&1";
    return std::make_unique<testing_util::BackgroundProcess>(
        std::vector<std::string>{"/bin/sh", "-c", line}, env_);
  }

  // `bai ARGS…` with another keypair (access key, secret key).
  testing_util::ProcessResult BaiAs(std::pair<std::string, std::string> const& keys,
                                    std::vector<std::string> args) {
    auto saved = env_;
    env_["BACKEND_ACCESS_KEY"] = keys.first;
    env_["BACKEND_SECRET_KEY"] = keys.second;
    auto r = Bai(std::move(args));
    env_ = saved;
    return r;
  }

  std::string work_;
};

TEST_F(VFolderCliTest, TreesGoUpAndComeBackByteForByte) {
  auto made = Bai({"vfolder", "create", "data", "-o", "json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(Json(made)["name"], "data");
  // A taken name is a conflict (6); an unknown folder 5; a bad name a usage-level error.
  EXPECT_EQ(Bai({"vfolder", "create", "data"}).exit_code, 6);
  EXPECT_EQ(Bai({"vfolder", "info", "nope"}).exit_code, 5);
  EXPECT_EQ(Bai({"vfolder", "files", "nope"}).exit_code, 5);
  EXPECT_NE(Bai({"vfolder", "create", ".ssh"}).exit_code, 0);

  fs::create_directories(work_ + "/tree/a/b");
  fs::create_directories(work_ + "/tree/empty-dir");
  std::map<std::string, std::string> files = {
      {"tree/top.bin", RandomBytes(3 << 20, 1)},
      {"tree/a/one.txt", "one\n"},
      {"tree/a/b/zero", ""},
      {"tree/a/b/edge", RandomBytes((8 << 20) + 1, 2)},  // a chunk and one byte
      {"tree/a/b/naïve name.txt", "unicode"},
  };
  for (auto const& [p, d] : files) testing_util::WriteFileBytes(work_ + "/" + p, d);
  // Without -r a directory is refused and nothing is sent.
  auto refused = Bai({"vfolder", "upload", "data", work_ + "/tree"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("-r"));
  auto up = Bai({"vfolder", "upload", "data", work_ + "/tree", "-r", "--dst", "in", "-o", "json",
                 "--progress", "bar"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  // Hardening (new user, 12): the bar showed raw byte counts; sizes read as people read them
  // (the rate and time left join once there is a rate to show).
  EXPECT_THAT(up.err, HasSubstr("3.0 MiB / 3.0 MiB"));
  EXPECT_THAT(up.err, HasSubstr("8.0 MiB / 8.0 MiB"));
  auto uj = Json(up);
  EXPECT_EQ(uj["files"], 5);
  EXPECT_EQ(uj["written"].size(), 5u);
  auto listing = Json(Bai({"vfolder", "files", "data", "in/tree", "-o", "json"}));
  std::set<std::string> names;
  for (auto const& f : listing["files"]) names.insert(f["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"a", "empty-dir", "top.bin"}));
  // Down with `bai cp` into a directory that exists: under the tree's own name.
  fs::create_directories(work_ + "/back");
  auto down = Bai({"cp", "-r", "data:in/tree", work_ + "/back", "-o", "json"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  for (auto const& [p, d] : files) {
    EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/back/" + p), d) << p;
  }
  EXPECT_TRUE(fs::is_directory(work_ + "/back/tree/empty-dir"));
  // A file by `bai cp` up, into a directory, then mv / rm-files / mkdir.
  testing_util::WriteFileBytes(work_ + "/solo.txt", "solo");
  ASSERT_EQ(Bai({"vfolder", "mkdir", "data", "docs"}).exit_code, 0);
  ASSERT_EQ(Bai({"cp", work_ + "/solo.txt", "data:docs"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "mv", "data", "docs/solo.txt", "solo2.txt"}).exit_code, 0);
  ASSERT_EQ(Bai({"vfolder", "download", "data", "solo2.txt", "--dst", work_ + "/d2"}).exit_code, 0);
  EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/d2/solo2.txt"), "solo");
  EXPECT_EQ(Bai({"vfolder", "mkdir", "data", "x/y"}).exit_code, 0);
  auto again = Bai({"vfolder", "mkdir", "data", "x/y"});
  // Hardening (new user): the wire stays 24.09's (400 vfolder-operation-failed); a directory
  // that exists is the conflict code (6), as for other things that exist (it was 1).
  EXPECT_EQ(again.exit_code, 6);
  EXPECT_THAT(again.err, HasSubstr("already exists"));
  EXPECT_EQ(Bai({"vfolder", "mkdir", "-p", "data", "x/y"}).exit_code, 0);
  EXPECT_NE(Bai({"vfolder", "rm-files", "data", "in"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "rm-files", "-r", "data", "in"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "files", "data", "in"}).exit_code, 5);
  // Escaping paths are refused by the server and write nothing locally either.
  EXPECT_NE(Bai({"cp", "data:../../etc/passwd", work_ + "/p"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(work_ + "/p"));
  // Rename, trash, restore, purge.
  EXPECT_EQ(Bai({"vfolder", "rename", "data", "data2"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "rm", "data2"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "files", "data2"}).exit_code, 5);  // in the trash: not in use
  EXPECT_EQ(Bai({"vfolder", "restore", "data2"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "rm", "data2"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "purge", "data2"}).exit_code, 0);
  EXPECT_EQ(Json(Bai({"vfolder", "ls", "-o", "json"}))["folders"].size(), 0u);
  auto hosts = Json(Bai({"vfolder", "hosts", "-o", "json"}));
  EXPECT_EQ(hosts["default"], "local:volume1");
}

// The file's size: 160 MiB, or BAI_TEST_BIG_MB (1024 for the 1 GiB run).
std::size_t BigBytes() {
  char const* mb = std::getenv("BAI_TEST_BIG_MB");
  return static_cast<std::size_t>(mb && *mb ? std::atoi(mb) : 160) << 20;
}

// Hardening (new user, 2): `bai cp h.txt vf:renamed.txt` made renamed.txt/h.txt, and
// `bai cp vf:h.txt local.txt` made a directory (or failed "Not a directory" when local.txt
// existed). Both sides now place as cp(1) and `bai session cp` do (bai/copy_rule.h).
TEST_F(VFolderCliTest, CpRenamesAsCpDoes) {
  ASSERT_EQ(Bai({"vfolder", "create", "vf"}).exit_code, 0);
  testing_util::WriteFileBytes(work_ + "/h.txt", "hello");
  // Up under a new name; then into an existing directory under its own name.
  ASSERT_EQ(Bai({"cp", work_ + "/h.txt", "vf:renamed.txt"}).exit_code, 0);
  auto root = Json(Bai({"vfolder", "files", "vf", "-o", "json"}));
  ASSERT_EQ(root["files"].size(), 1u) << root.dump();
  EXPECT_EQ(root["files"][0]["name"], "renamed.txt");
  EXPECT_EQ(root["files"][0]["type"], "FILE");
  ASSERT_EQ(Bai({"vfolder", "mkdir", "vf", "dir"}).exit_code, 0);
  ASSERT_EQ(Bai({"cp", work_ + "/h.txt", "vf:dir"}).exit_code, 0);
  EXPECT_EQ(Json(Bai({"vfolder", "files", "vf", "dir", "-o", "json"}))["files"][0]["name"],
            "h.txt");
  // A '/'-ended destination that does not exist is made, sources inside.
  ASSERT_EQ(Bai({"cp", work_ + "/h.txt", "vf:new/"}).exit_code, 0);
  EXPECT_EQ(Json(Bai({"vfolder", "files", "vf", "new", "-o", "json"}))["files"][0]["name"],
            "h.txt");

  // Down under a new name, then over an existing file (replaced), then into a directory.
  ASSERT_EQ(Bai({"cp", "vf:renamed.txt", work_ + "/local.txt"}).exit_code, 0);
  EXPECT_TRUE(fs::is_regular_file(work_ + "/local.txt"));
  EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/local.txt"), "hello");
  testing_util::WriteFileBytes(work_ + "/local.txt", "old");
  auto over = Bai({"cp", "vf:renamed.txt", work_ + "/local.txt"});
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/local.txt"), "hello");
  fs::create_directories(work_ + "/in");
  ASSERT_EQ(Bai({"cp", "vf:renamed.txt", work_ + "/in"}).exit_code, 0);
  EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/in/renamed.txt"), "hello");
  // A directory down to a new name is that directory.
  ASSERT_EQ(Bai({"cp", "-r", "vf:dir", work_ + "/dircopy"}).exit_code, 0);
  EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/dircopy/h.txt"), "hello");

  // Refused, with nothing written: several sources to a name that is no directory, a directory
  // without -r, a new name in a local directory that does not exist.
  auto several = Bai({"cp", "vf:renamed.txt", "vf:dir/h.txt", work_ + "/nodir"});
  EXPECT_EQ(several.exit_code, 1) << several.err;
  EXPECT_THAT(several.err, HasSubstr("directory"));
  EXPECT_FALSE(fs::exists(work_ + "/nodir"));
  auto norec = Bai({"cp", "vf:dir", work_ + "/x"});
  EXPECT_EQ(norec.exit_code, 1) << norec.err;
  EXPECT_THAT(norec.err, HasSubstr("-r"));
  EXPECT_EQ(Bai({"cp", "vf:renamed.txt", work_ + "/missing/x.txt"}).exit_code, 5);
  EXPECT_FALSE(fs::exists(work_ + "/missing"));
}

// Completion names come from the manager: folders, and "NAME:" for the places of `bai cp`.
TEST_F(VFolderCliTest, CompletionNamesAreTheCallersFolders) {
  ASSERT_EQ(Bai({"vfolder", "create", "alpha"}).exit_code, 0);
  ASSERT_EQ(Bai({"vfolder", "create", "beta"}).exit_code, 0);
  auto names = Bai({"__complete", "folders"});
  EXPECT_EQ(names.exit_code, 0) << names.err;
  EXPECT_EQ(names.out, "alpha\nbeta\n");
  EXPECT_EQ(Bai({"__complete", "folder-places"}).out, "alpha:\nbeta:\n");
  // Quiet on failure: an unreachable manager prints nothing a shell would offer.
  auto away = Bai({"__complete", "folders", "--endpoint", "http://127.0.0.1:1"});
  EXPECT_NE(away.exit_code, 0);
  EXPECT_EQ(away.out, "");
  EXPECT_EQ(away.err, "");
}

TEST_F(VFolderCliTest, AKilledUploadIsFinishedByANewProcess) {
  ASSERT_EQ(Bai({"vfolder", "create", "big"}).exit_code, 0);
  std::string data = RandomBytes(BigBytes(), 3);
  testing_util::WriteFileBytes(work_ + "/big.bin", data);
  {
    auto p = Background(
        {"vfolder", "upload", "big", work_ + "/big.bin", "--progress", "json", "--parallel", "1"});
    auto line = p->WaitForLine("\"done\"", 60000);
    ASSERT_FALSE(line.empty()) << p->Transcript() << DiskReport(work_);
    int code = p->Stop(SIGKILL);
    ASSERT_EQ(code, 128 + SIGKILL) << "the upload ended before it could be killed";
  }
  // Not in the folder yet: files appear whole.
  auto before = Bai({"vfolder", "files", "big", "-o", "json"});
  EXPECT_EQ(Json(before)["files"].size(), 0u);
  auto again = Bai({"vfolder", "upload", "big", work_ + "/big.bin", "-o", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto j = Json(again);
  EXPECT_EQ(j["resumed"], 1);
  EXPECT_LT(j["bytes"].get<std::int64_t>(), static_cast<std::int64_t>(data.size()));
  EXPECT_GT(j["bytes"].get<std::int64_t>(), 0);
  // Killed half way down too, and finished by a new process.
  {
    auto p = Background(
        {"vfolder", "download", "big", "big.bin", "--dst", work_ + "/down", "--progress", "json"});
    auto line = p->WaitForLine("\"done\"", 60000);
    ASSERT_FALSE(line.empty()) << p->Transcript() << DiskReport(work_);
    ASSERT_EQ(p->Stop(SIGKILL), 128 + SIGKILL) << "the download ended before it could be killed";
  }
  EXPECT_FALSE(fs::exists(work_ + "/down/big.bin"));  // only the part file
  auto down =
      Bai({"vfolder", "download", "big", "big.bin", "--dst", work_ + "/down", "-o", "json"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(Json(down)["resumed"], 1);
  EXPECT_TRUE(testing_util::ReadFileBytes(work_ + "/down/big.bin") == data);
  EXPECT_FALSE(fs::exists(work_ + "/down/big.bin.bai-part"));
}

TEST_F(VFolderCliTest, AChangedFileIsNotResumedButSentAgain) {
  ASSERT_EQ(Bai({"vfolder", "create", "jrnl"}).exit_code, 0);
  std::string first = RandomBytes(128 << 20, 5);
  testing_util::WriteFileBytes(work_ + "/f.bin", first);
  {
    auto p = Background({"vfolder", "upload", "jrnl", work_ + "/f.bin", "--progress", "json"});
    ASSERT_FALSE(p->WaitForLine("\"done\"", 60000).empty()) << p->Transcript() << DiskReport(work_);
    ASSERT_EQ(p->Stop(SIGKILL), 128 + SIGKILL);
  }
  // Same size, other bytes, newer time: resuming would mix two files.
  std::string second = RandomBytes(128 << 20, 6);
  testing_util::WriteFileBytes(work_ + "/f.bin", second);
  auto up = Bai({"vfolder", "upload", "jrnl", work_ + "/f.bin", "-o", "json"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(Json(up)["resumed"], 0);
  auto back = Bai({"cp", "jrnl:f.bin", work_ + "/back/"});
  ASSERT_EQ(back.exit_code, 0) << back.err << DiskReport(work_);
  EXPECT_TRUE(testing_util::ReadFileBytes(work_ + "/back/f.bin") == second);
}

TEST_F(VFolderCliTest, AHundredFilesAtOnce) {
  ASSERT_EQ(Bai({"vfolder", "create", "many"}).exit_code, 0);
  fs::create_directories(work_ + "/many");
  for (int i = 0; i < 100; ++i) {
    testing_util::WriteFileBytes(work_ + "/many/f" + std::to_string(i),
                                 RandomBytes(64 << 10, static_cast<unsigned>(100 + i)));
  }
  auto up =
      Bai({"vfolder", "upload", "many", work_ + "/many", "-r", "--parallel", "16", "-o", "json"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(Json(up)["files"], 100);
  auto down = Bai({"vfolder", "download", "many", "many", "-r", "--parallel", "16", "--dst",
                   work_ + "/back", "-o", "json"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(Json(down)["files"], 100);
  for (int i = 0; i < 100; ++i) {
    auto name = "/many/f" + std::to_string(i);
    EXPECT_TRUE(testing_util::ReadFileBytes(work_ + "/back" + name) ==
                testing_util::ReadFileBytes(work_ + name))
        << name;
  }
}

// Issue 43, item 3: a folder's own quota at creation and later, and scope quotas (all of an
// owner's folders) through user and project resource policies.
TEST_F(VFolderCliTest, QuotasFromTheShell) {
  auto made = Bai({"vfolder", "create", "small", "--quota", "1k", "-o", "json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(Json(made)["quota_bytes"], 1024);
  testing_util::WriteFileBytes(work_ + "/big.bin", std::string(2000, 'b'));
  auto over = Bai({"vfolder", "upload", "small", work_ + "/big.bin"});
  EXPECT_NE(over.exit_code, 0);
  EXPECT_THAT(over.err, HasSubstr("quota of the folder small"));
  EXPECT_EQ(Bai({"vfolder", "set-quota", "small", "lots"}).exit_code, 2);
  ASSERT_EQ(Bai({"vfolder", "set-quota", "small", "4k"}).exit_code, 0);
  EXPECT_EQ(Bai({"vfolder", "upload", "small", work_ + "/big.bin"}).exit_code, 0);
  EXPECT_EQ(Json(Bai({"vfolder", "info", "small", "-o", "json"}))["quota_bytes"], 4096);
  ASSERT_EQ(Bai({"vfolder", "set-quota", "small", "none"}).exit_code, 0);
  EXPECT_TRUE(Json(Bai({"vfolder", "info", "small", "-o", "json"}))["quota_bytes"].is_null());

  // A user policy: one folder, 1 MiB for all of them; Bob gets it.
  auto policy = Bai({"admin", "user-policy", "create", "tiny", "--max-folders", "1", "--quota",
                     "1m", "-o", "json"});
  ASSERT_EQ(policy.exit_code, 0) << policy.err;
  EXPECT_EQ(Json(policy)["policies"][0]["max_quota_scope_size"], 1 << 20);
  EXPECT_THAT(Bai({"admin", "user-policy", "ls"}).out, HasSubstr("1.0 MiB"));
  auto bob = manager_->store().SignUp("default", "bob@example.com", "bob", "x", "Bob");
  ASSERT_TRUE(bob.ok());
  ASSERT_EQ(Bai({"admin", "user", "update", "bob@example.com", "--policy", "tiny"}).exit_code, 0);
  auto as_bob = [&](std::vector<std::string> args) { return BaiAs(*bob, std::move(args)); };
  ASSERT_EQ(as_bob({"vfolder", "create", "b1"}).exit_code, 0);
  auto second = as_bob({"vfolder", "create", "b2"});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_THAT(second.err, HasSubstr("max_vfolder_count"));
  testing_util::WriteFileBytes(work_ + "/two.bin", std::string(2 << 20, 't'));
  auto scope = as_bob({"vfolder", "upload", "b1", work_ + "/two.bin"});
  EXPECT_NE(scope.exit_code, 0);
  EXPECT_THAT(scope.err, HasSubstr("max_quota_scope_size"));
  // A folder quota above the scope's cannot be reached: refused.
  EXPECT_NE(as_bob({"vfolder", "set-quota", "b1", "2m"}).exit_code, 0);
  // Raised, the upload fits.
  ASSERT_EQ(Bai({"admin", "user-policy", "update", "tiny", "--quota", "4m"}).exit_code, 0);
  EXPECT_EQ(as_bob({"vfolder", "upload", "b1", work_ + "/two.bin"}).exit_code, 0);
  EXPECT_EQ(Bai({"admin", "user-policy", "update", "tiny", "--quota", "lots"}).exit_code, 2);
  // Project policies the same way.
  ASSERT_EQ(Bai({"admin", "project-policy", "create", "lab", "--quota", "10g"}).exit_code, 0);
  EXPECT_THAT(Bai({"admin", "project-policy", "ls"}).out, HasSubstr("10.0 GiB"));
  EXPECT_EQ(Bai({"admin", "project-policy", "rm", "lab"}).exit_code, 0);
  EXPECT_THAT(Bai({"admin", "project-policy", "ls"}).out, Not(HasSubstr("lab")));
}

TEST_F(VFolderCliTest, SharingAndCloningFromTheShell) {
  auto bob = manager_->store().SignUp("default", "bob@example.com", "bob", "x", "Bob");
  ASSERT_TRUE(bob.ok());
  auto as_bob = [&](std::vector<std::string> args) { return BaiAs(*bob, std::move(args)); };
  ASSERT_EQ(Bai({"vfolder", "create", "data"}).exit_code, 0);
  testing_util::WriteFileBytes(work_ + "/f.txt", "shared bytes");
  ASSERT_EQ(Bai({"vfolder", "upload", "data", work_ + "/f.txt"}).exit_code, 0);

  auto inv = Bai({"vfolder", "invite", "data", "bob@example.com", "--perm", "ro"});
  ASSERT_EQ(inv.exit_code, 0) << inv.err;
  std::string id = inv.out.substr(0, inv.out.find('\n'));
  EXPECT_EQ(id.size(), 36u) << inv.out;
  EXPECT_EQ(Bai({"vfolder", "invite", "data", "nobody@example.com"}).exit_code, 5);
  auto pending = as_bob({"vfolder", "invitations", "-o", "json"});
  ASSERT_EQ(pending.exit_code, 0) << pending.err;
  ASSERT_EQ(Json(pending)["invitations"].size(), 1u);
  EXPECT_EQ(Json(pending)["invitations"][0]["perm"], "ro");
  EXPECT_EQ(Json(Bai({"vfolder", "invitations", "--sent", "-o", "json"}))["invitations"].size(),
            1u);
  ASSERT_EQ(as_bob({"vfolder", "accept", id}).exit_code, 0);

  // Read-only for bob: he downloads, his upload is refused with the permission exit code.
  auto down = as_bob({"vfolder", "download", "data", "f.txt", "--dst", work_ + "/bob"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(testing_util::ReadFileBytes(work_ + "/bob/f.txt"), "shared bytes");
  auto up = as_bob({"vfolder", "upload", "data", work_ + "/f.txt", "--dst", "bob"});
  EXPECT_EQ(up.exit_code, 4) << up.err;
  EXPECT_THAT(up.err, HasSubstr("read-only"));
  // Not cloneable: only its owner copies it.
  EXPECT_EQ(as_bob({"vfolder", "clone", "data", "mine"}).exit_code, 4);
  auto clone = Bai({"vfolder", "clone", "data", "copy", "-o", "json"});
  ASSERT_EQ(clone.exit_code, 0) << clone.err;
  EXPECT_EQ(Json(clone)["status"], "bgtask_done");
  auto files = Bai({"vfolder", "files", "copy", "-o", "json"});
  ASSERT_EQ(files.exit_code, 0);
  EXPECT_EQ(Json(files)["files"][0]["name"], "f.txt");
  // A user folder is shared by invitation, not `share`.
  EXPECT_NE(Bai({"vfolder", "share", "data", "bob@example.com"}).exit_code, 0);

  ASSERT_EQ(as_bob({"vfolder", "leave", "data"}).exit_code, 0);
  EXPECT_EQ(as_bob({"vfolder", "info", "data"}).exit_code, 5);
}

// A separate bai-storage SIGKILLed in the middle of an upload and started again on the same
// ports: the running `bai vfolder upload` retries, asks the restarted proxy where the upload
// stands (the session is on the volume) and finishes it byte for byte.
TEST(VFolderProxyKillTest, AnUploadOutlivesASigkilledStorageProxy) {
  testing_util::TempDir dir;
  auto free_port = [] {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t n = sizeof a;
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
    ::close(s);
    return std::to_string(ntohs(a.sin_port));
  };
  std::string client_port = free_port(), manager_port = free_port();
  fs::create_directories(dir.path() + "/vol");
  auto start_proxy = [&] {
    auto p = std::make_unique<testing_util::BackgroundProcess>(std::vector<std::string>{
        testing_util::BinPath("bai-storage"), "--name", "nas", "--volume",
        "vol=" + dir.path() + "/vol", "--secret-file", dir.path() + "/secret", "--client-listen",
        "127.0.0.1:" + client_port, "--manager-listen", "127.0.0.1:" + manager_port});
    EXPECT_FALSE(p->WaitForLine("clients on").empty());
    return p;
  };
  auto proxy = start_proxy();
  manager::ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = testing_util::TestDatabase();
  config.listen_port = 0;
  config.vfolders.embedded = false;
  config.vfolders.default_host = "nas:vol";
  config.vfolders.proxies = {{"nas", "http://127.0.0.1:" + manager_port, dir.path() + "/secret"}};
  auto m = manager::Manager::Start(config);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::map<std::string, std::string> env;
  for (auto const& [k, v] : testing_util::ReadEnvFile((*m)->bootstrap().credentials_file)) {
    if (k.rfind("BACKEND_", 0) == 0) env[k] = v;
  }
  env["BACKEND_ENDPOINT"] = "http://127.0.0.1:" + std::to_string((*m)->port());
  env["BAI_CONFIG_DIR"] = dir.path() + "/cfg";
  env["XDG_STATE_HOME"] = dir.path() + "/state";
  auto bai = [&](std::vector<std::string> args) {
    args.insert(args.begin(), testing_util::BinPath("bai"));
    return testing_util::RunProcess(args, env);
  };
  ASSERT_EQ(bai({"vfolder", "create", "big"}).exit_code, 0);
  std::string data = RandomBytes(192 << 20, 9);
  testing_util::WriteFileBytes(dir.path() + "/big.bin", data);
  std::string line = "exec '" + testing_util::BinPath("bai") + "' vfolder upload big '" +
                     dir.path() + "/big.bin' --progress json -o json 2>&1";
  testing_util::BackgroundProcess upload({"/bin/sh", "-c", line}, env);
  ASSERT_FALSE(upload.WaitForLine("\"done\"", 60000).empty())
      << upload.Transcript() << DiskReport(dir.path());
  ASSERT_EQ(proxy->Stop(SIGKILL), 128 + SIGKILL);
  // Killed half way: the volume holds an unfinished session, part of the file.
  std::int64_t kept = -1;
  for (auto const& e : fs::directory_iterator(dir.path() + "/vol/.uploads")) {
    if (fs::exists(e.path() / "data"))
      kept = static_cast<std::int64_t>(fs::file_size(e.path() / "data"));
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, static_cast<std::int64_t>(data.size())) << "the upload ended before the kill";
  proxy = start_proxy();
  auto report = upload.WaitForLine("\"files\"", 120000);
  ASSERT_FALSE(report.empty()) << "the upload did not finish after the proxy came back\n"
                               << upload.Transcript() << DiskReport(dir.path());
  EXPECT_EQ(upload.Stop(0), 0);
  auto j = json::parse(report, nullptr, false);
  EXPECT_EQ(j.value("files", 0), 1) << report;
  auto down = bai({"vfolder", "download", "big", "big.bin", "--dst", dir.path() + "/down"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_TRUE(testing_util::ReadFileBytes(dir.path() + "/down/big.bin") == data);
}

}  // namespace
}  // namespace bai
