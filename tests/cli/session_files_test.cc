// SPDX-License-Identifier: Apache-2.0
// A running session's files (PROTOCOL.md §5.6) end to end against an in-process manager and a
// dummy agent (whose kernels keep their /home/work in a directory of the test): `bai session cp`
// and `files`, the REST endpoints through the SDK, the limits, and paths that try to leave
// /home/work.
#include "bai/protocol/session_files.h"

#include "bai/client.h"
#include "bai/session_client.h"

#include "tests/testing_util/local_cluster.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace bai {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

std::string Slurp(std::string const& path) { return testing_util::ReadFileBytes(path); }
void Spit(std::string const& path, std::string const& data) {
  testing_util::WriteFileBytes(path, data);
}

std::string RandomBytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(gen());
  return out;
}

class SessionFilesTest : public testing_util::LocalCluster {
 protected:
  void SetUp() override {
    LocalCluster::SetUp();
    Options o;
    o.endpoints = {env_["BACKEND_ENDPOINT"]};
    o.access_key = env_["BACKEND_ACCESS_KEY"];
    o.secret_key = env_["BACKEND_SECRET_KEY"];
    auto c = Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().message();
    client_.emplace(*c);
    auto created = Bai({"-o", "json", "session", "create", "python", "--name", "files"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    id_ = json::parse(created.out).value("id", "");
    ASSERT_FALSE(id_.empty()) << created.out;
    home_ = dir_.path() + "/homes/" + id_;
  }
  SessionClient Sessions() { return SessionClient(*client_); }
  // What lies in the kernel's /home/work, as the agent keeps it.
  std::string Home(std::string const& rel) { return home_ + "/" + rel; }

  std::optional<Client> client_;
  std::string id_, home_;
};

TEST_F(SessionFilesTest, CpRoundTripsTreesByteForByte) {
  std::string local = dir_.path() + "/src";
  std::map<std::string, std::string> files = {
      {"empty", ""},
      {"one", "1"},
      {"block", RandomBytes(512, 1)},
      {"block+1", RandomBytes(513, 2)},
      {"deep/er/largest", RandomBytes(protocol::kSessionUploadMaxFileBytes, 3)},
      {"name with spaces and ünïcode", "text\n"},
  };
  for (int i = 0; i < 25; ++i) files["many/f" + std::to_string(i)] = RandomBytes(100 + i, 10 + i);
  for (auto const& [rel, data] : files) Spit(local + "/" + rel, data);

  // 31 files: more than one upload request (20 per request).
  auto up = Bai({"-o", "json", "session", "cp", "-r", local, "files:proj"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  auto report = json::parse(up.out);
  EXPECT_EQ(report["files"], files.size());
  EXPECT_EQ(report["exit_code"], 0);
  for (auto const& [rel, data] : files) EXPECT_EQ(Slurp(Home("proj/" + rel)), data) << rel;

  auto listed = Bai({"-o", "json", "session", "files", "files", "proj"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto l = json::parse(listed.out);
  EXPECT_EQ(l["path"], "/home/work/proj");
  std::vector<std::string> names;
  for (auto const& f : l["files"]) names.push_back(f["name"]);
  EXPECT_THAT(names, ::testing::Contains("deep"));
  EXPECT_THAT(names, ::testing::Contains("block+1"));
  for (auto const& f : l["files"]) {
    if (f["name"] == "block+1") {
      EXPECT_EQ(f["size"], 513) << "sizes are JSON numbers";
      EXPECT_EQ(f["mode"].get<std::string>()[0], '-');
    }
  }

  // Down again into a new directory: the tree comes back whole.
  std::string back = dir_.path() + "/back";
  auto down = Bai({"session", "cp", "-r", "files:proj", back});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  for (auto const& [rel, data] : files) EXPECT_EQ(Slurp(back + "/" + rel), data) << rel;
  // Into an existing directory: under its own name.
  fs::create_directories(dir_.path() + "/into");
  ASSERT_EQ(Bai({"session", "cp", "-r", "files:proj/many", dir_.path() + "/into"}).exit_code, 0);
  EXPECT_EQ(Slurp(dir_.path() + "/into/many/f3"), files["many/f3"]);
  // One file under a new name; several into a directory.
  ASSERT_EQ(Bai({"session", "cp", "files:proj/one", dir_.path() + "/renamed"}).exit_code, 0);
  EXPECT_EQ(Slurp(dir_.path() + "/renamed"), "1");
  ASSERT_EQ(Bai({"session", "cp", "files:proj/one", "files:/home/work/proj/empty",
                 dir_.path() + "/several/"})
                .exit_code,
            0);
  EXPECT_TRUE(fs::exists(dir_.path() + "/several/empty"));
  // A single file up under a new name, then into an existing directory.
  ASSERT_EQ(Bai({"session", "cp", local + "/one", "files:copied.txt"}).exit_code, 0);
  EXPECT_EQ(Slurp(Home("copied.txt")), "1");
  ASSERT_EQ(Bai({"session", "cp", local + "/one", "files:proj/deep"}).exit_code, 0);
  EXPECT_EQ(Slurp(Home("proj/deep/one")), "1");
}

TEST_F(SessionFilesTest, CpSaysWhatIsWrong) {
  std::string local = dir_.path() + "/l";
  Spit(local + "/big", std::string(1 << 20, 'b'));
  Spit(local + "/small", "s");
  auto big = Bai({"session", "cp", local + "/big", local + "/small", "files:"});
  EXPECT_EQ(big.exit_code, 1) << big.err;
  EXPECT_THAT(big.err, HasSubstr("1 MiB"));
  EXPECT_FALSE(fs::exists(Home("small"))) << "nothing is sent when one file is refused";
  auto dir = Bai({"session", "cp", local, "files:x"});
  EXPECT_EQ(dir.exit_code, 1);
  EXPECT_THAT(dir.err, HasSubstr("-r"));
  EXPECT_EQ(Bai({"session", "cp", local + "/small", dir_.path() + "/x"}).exit_code, 2);
  EXPECT_EQ(Bai({"session", "cp", local + "/small", "nobody:x"}).exit_code, 5);
  EXPECT_EQ(Bai({"session", "cp", "files:missing", dir_.path()}).exit_code, 5);
  auto escape = Bai({"-o", "json", "session", "cp", local + "/small", "files:../escape"});
  EXPECT_EQ(escape.exit_code, 1) << escape.err;
  EXPECT_THAT(escape.err, HasSubstr(".."));
  EXPECT_FALSE(fs::exists(home_ + "/../escape"));
}

TEST_F(SessionFilesTest, UploadChecksEveryPartBeforeWritingAny) {
  auto sessions = Sessions();
  ASSERT_TRUE(sessions.Upload("files", {{"ok.txt", "fine"}}).ok());
  EXPECT_EQ(Slurp(Home("ok.txt")), "fine");
  for (std::string bad : {"../up", "/etc/passwd", "/home/work/../x", "a/../../b"}) {
    SCOPED_TRACE(bad);
    auto s = sessions.Upload("files", {{"first.txt", "1"}, {bad, "x"}});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_EQ(s.error_info().http_status, 400);
    EXPECT_FALSE(fs::exists(Home("first.txt"))) << "the good part is not written either";
  }
  std::vector<std::pair<std::string, std::string>> many;
  for (int i = 0; i < 21; ++i) many.emplace_back("m" + std::to_string(i), "x");
  auto too_many = sessions.Upload("files", many);
  EXPECT_EQ(too_many.error_info().http_status, 400);
  EXPECT_THAT(too_many.message(), HasSubstr("Too many files"));
  auto too_large = sessions.Upload("files", {{"big", std::string(1 << 20, 'x')}});
  EXPECT_EQ(too_large.error_info().http_status, 400);
  EXPECT_THAT(too_large.message(), HasSubstr("Too large file"));
  EXPECT_FALSE(fs::exists(Home("m0")));
  EXPECT_FALSE(fs::exists(Home("big")));
  // A body far past the route's limit is refused before it is read.
  ApiRequest huge("POST", "/session/files/upload");
  huge.content_type = "multipart/form-data; boundary=x";
  huge.body = std::string(30 << 20, 'x');
  auto r = client_->Send(huge);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 413);
  // Not multipart at all.
  ApiRequest json_body("POST", "/session/files/upload");
  json_body.body = "{}";
  auto j = client_->Send(json_body);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->status, 400);
}

TEST_F(SessionFilesTest, LinksPlantedInTheKernelLeadNowhere) {
  std::string outside = dir_.path() + "/outside";
  Spit(outside + "/secret", "secret");
  fs::create_directories(home_);
  fs::create_directory_symlink(outside, Home("out"));
  fs::create_symlink(outside + "/secret", Home("secret-link"));
  auto sessions = Sessions();
  auto single = sessions.DownloadSingle("files", "secret-link");
  EXPECT_FALSE(single.ok());
  EXPECT_EQ(single.status().error_info().http_status, 400);
  EXPECT_FALSE(sessions.ListFiles("files", "out").ok());
  auto through = sessions.Upload("files", {{"out/planted", "x"}});
  EXPECT_EQ(through.error_info().http_status, 400) << through.message();
  EXPECT_FALSE(fs::exists(outside + "/planted"));
  // The archive of the whole directory carries the links as links, never what they point at.
  auto archives = sessions.Download("files", {"."});
  ASSERT_TRUE(archives.ok()) << archives.status().message();
  auto members = protocol::ReadTar((*archives)[0]);
  ASSERT_TRUE(members.ok());
  for (auto const& m : *members) EXPECT_NE(m.data, "secret") << m.name;
  // And extracting it locally recreates the links without following them.
  std::string dst = dir_.path() + "/dl";
  auto copied = sessions.CopyFromSession("files", {"."}, dst, true);
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  EXPECT_TRUE(fs::is_symlink(dst + "/out"));
  EXPECT_EQ(Slurp(outside + "/secret"), "secret");
}

TEST_F(SessionFilesTest, DownloadsAndListingsKeepTheirLimits) {
  auto sessions = Sessions();
  Spit(Home("a/b.txt"), "bee");
  auto list = sessions.ListFiles("files", "/home/work/a");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->abspath, "/home/work/a");
  ASSERT_EQ(list->files.size(), 1u);
  EXPECT_EQ(list->files[0].filename, "b.txt");
  EXPECT_EQ(list->files[0].size, 3);
  // The listing by query string too (a GET without a body).
  auto by_query = client_->Send(ApiRequest("GET", "/session/files/files?path=a"));
  ASSERT_TRUE(by_query.ok());
  EXPECT_EQ(by_query->status, 200);
  EXPECT_THAT(by_query->body, HasSubstr("b.txt"));
  EXPECT_EQ(sessions.ListFiles("files", "nothing").status().error_info().http_status, 404);
  EXPECT_EQ(sessions.ListFiles("files", "../").status().error_info().http_status, 400);
  EXPECT_EQ(*sessions.DownloadSingle("files", "a/b.txt"), "bee");
  EXPECT_EQ(sessions.DownloadSingle("files", "a").status().error_info().http_status, 400);
  EXPECT_EQ(
      sessions.Download("files", {"a", "a", "a", "a", "a", "a"}).status().error_info().http_status,
      400);
  Spit(Home("huge"), std::string(protocol::kSessionDownloadMaxBytes + 1, 'h'));
  auto huge = sessions.Download("files", {"huge"});
  EXPECT_EQ(huge.status().error_info().http_status, 400);
  EXPECT_THAT(huge.status().message(), HasSubstr("larger than"));
  EXPECT_EQ(sessions.DownloadSingle("files", "huge").status().error_info().http_status, 400);
  EXPECT_EQ(sessions.ListFiles("no-such-session").status().code(), StatusCode::kNotFound);
  // Ended sessions have no files to give.
  ASSERT_EQ(Bai({"rm", "files"}).exit_code, 0);
  auto ended = sessions.ListFiles("files");
  EXPECT_FALSE(ended.ok());
}

// Another user sees none of it: not by name, not by id, not by naming the owner's keypair; an
// admin of another domain neither. Nothing they send is written.
TEST_F(SessionFilesTest, StrangersCannotTouchTheFiles) {
  Spit(Home("private.txt"), "mine");
  auto& store = manager_->store();
  auto mallory = store.SignUp("default", "mallory@example.com", "mallory", "x", "Mallory M");
  ASSERT_TRUE(mallory.ok()) << mallory.status().message();
  ASSERT_TRUE(store.db()
                  .Exec("INSERT INTO domains (name, created_at) VALUES ('other', "
                        "'2026-01-01')")
                  .ok());
  auto carol = store.SignUp("other", "carol@example.com", "carol", "x", "Carol C");
  ASSERT_TRUE(carol.ok());
  ASSERT_TRUE(
      store.db().Exec("UPDATE users SET role = 'admin' WHERE email = 'carol@example.com'").ok());
  for (auto const& [ak, sk] : {*mallory, *carol}) {
    Options o;
    o.endpoints = {env_["BACKEND_ENDPOINT"]};
    o.access_key = ak;
    o.secret_key = sk;
    auto c = Client::Create(o);
    ASSERT_TRUE(c.ok());
    SessionClient them(*c);
    for (std::string const& ref : {std::string("files"), id_}) {
      SCOPED_TRACE(ak + " " + ref);
      EXPECT_EQ(them.ListFiles(ref).status().error_info().http_status, 404);
      EXPECT_EQ(them.DownloadSingle(ref, "private.txt").status().error_info().http_status, 404);
      EXPECT_EQ(them.Download(ref, {"."}).status().error_info().http_status, 404);
      EXPECT_EQ(them.Upload(ref, {{"planted", "x"}}).error_info().http_status, 404);
    }
    // Naming the owner's keypair: a user is forbidden, an admin of another domain finds nothing.
    ApiRequest as_owner("POST", "/session/" + id_ + "/download_single?owner_access_key=" +
                                    env_["BACKEND_ACCESS_KEY"]);
    as_owner.body = R"({"file": "private.txt"})";
    auto r = c->Send(as_owner);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, ak == mallory->first ? 403 : 404) << r->body;
    EXPECT_THAT(r->body, ::testing::Not(HasSubstr("mine")));
  }
  EXPECT_FALSE(fs::exists(Home("planted")));
  EXPECT_EQ(Slurp(Home("private.txt")), "mine");
}

}  // namespace
}  // namespace bai
