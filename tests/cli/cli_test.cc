// SPDX-License-Identifier: Apache-2.0
// The real `bai` binary, run as a process against the verifying test server.
#include "bai/protocol/session_wire.h"

#include "cli/commands/session_util.h"
#include "cli/output.h"
#include "tests/testing_util/subprocess.h"
#include "tests/testing_util/test_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace bai {
namespace {

namespace fs = std::filesystem;

using ::testing::HasSubstr;
using testing_util::BinPath;
using testing_util::ProcessResult;
using testing_util::TempDir;
using testing_util::TestHttpServer;
using testing_util::VerifyingHandler;

class CliTest : public ::testing::Test {
 protected:
  ProcessResult Bai(std::vector<std::string> args, std::map<std::string, std::string> env = {},
                    std::string const& input = {}) {
    args.insert(args.begin(), BinPath("bai"));
    // Isolated from the user's own configuration and environment.
    std::map<std::string, std::string> full = {{"BAI_CONFIG_DIR", config_.path()},
                                               {"BACKEND_ENDPOINT", ""},
                                               {"BACKEND_ACCESS_KEY", ""},
                                               {"BACKEND_SECRET_KEY", ""},
                                               {"BAI_PROFILE", ""}};
    for (auto const& [k, v] : env) full[k] = v;
    return testing_util::RunProcess(args, full, input);
  }
  std::map<std::string, std::string> Keys(std::string const& endpoint) {
    return {{"BACKEND_ENDPOINT", endpoint},
            {"BACKEND_ACCESS_KEY", testing_util::kTestAccessKey},
            {"BACKEND_SECRET_KEY", testing_util::kTestSecretKey}};
  }
  TempDir config_;
};

// Issue 47, 6: slot amounts as people read them (bytes slots in the units -r takes), and what
// a session uses from its kernels' live_stat (24.09's shape, strings or numbers).
TEST(CliHumanUnits, SlotsAndUseReadAsPeopleWriteThem) {
  using protocol::Decimal;
  EXPECT_EQ(cli::HumanSlotAmount("mem", Decimal::FromInteger(std::int64_t{1} << 30)), "1G");
  EXPECT_EQ(cli::HumanSlotAmount("mem", Decimal::FromInteger(3 << 29)), "1.5G");
  EXPECT_EQ(cli::HumanSlotAmount("mem", Decimal::FromInteger(512 << 20)), "512M");
  EXPECT_EQ(cli::HumanSlotAmount("cuda.mem", Decimal::FromInteger(std::int64_t{80} << 30)), "80G");
  EXPECT_EQ(cli::HumanSlotAmount("mem", Decimal::FromInteger(100)), "100");
  EXPECT_EQ(cli::HumanSlotAmount("cpu", Decimal::FromInteger(2)), "2");
  EXPECT_EQ(cli::HumanSlotAmount("cuda.shares", *Decimal::Parse("0.5")), "0.5");
  EXPECT_EQ(cli::HumanSlots({{"cpu", Decimal::FromInteger(2)},
                             {"mem", Decimal::FromInteger(std::int64_t{4} << 30)}}),
            "cpu=2 mem=4G");
  EXPECT_EQ(cli::HumanSlots({}), "-");
  protocol::SessionUse use;
  protocol::AddLiveStat(R"({"cpu_util": {"current": "37.5"}, "mem": {"current": "1610612736",
      "capacity": "4294967296"}, "cuda_mem": {"current": 2147483648}})",
                        use);
  EXPECT_EQ(cli::UseText(use), "cpu=37.5% mem=1.5G/4G cuda.mem=2G");
  protocol::AddLiveStat(R"({"mem": {"current": "536870912"}})", use);  // a second kernel
  EXPECT_EQ(*use.mem_bytes, (std::int64_t{3} << 29) + (512 << 20));
  protocol::SessionUse none;
  protocol::AddLiveStat("not json", none);
  EXPECT_FALSE(none.mem_bytes);
  EXPECT_EQ(cli::UseText(std::nullopt), "-");
  EXPECT_TRUE(cli::UseJson(std::nullopt).is_null());
}

TEST_F(CliTest, VersionAndJsonOutput) {
  auto r = Bai({"version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("bai 0.1.0"));
  r = Bai({"version", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["api_version"], "v8.20240915");
  // -o works in any position.
  r = Bai({"-o", "json", "version"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["bai"], "0.1.0");
}

// bai builds only the named noun's commands (start-up: issue 21's ≤ 1.3× of curl), and the
// whole tree for help, completion and words it does not know: global options in every spelling
// before the noun still find it, and errors and help stay whole.
TEST_F(CliTest, TheNamedNounIsFoundAfterGlobalOptionsAndHelpStaysWhole) {
  for (auto const& args :
       std::vector<std::vector<std::string>>{{"--output=json", "version"},
                                             {"-ojson", "version"},
                                             {"--debug", "-o", "json", "version"},
                                             {"--profile", "default", "-o", "json", "version"}}) {
    auto r = Bai(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["bai"], "0.1.0") << args[0];
  }
  auto all = Bai({"--help"});
  EXPECT_EQ(all.exit_code, 0);
  for (char const* noun : {"session", "vfolder", "config", "api", "completion", "help", "ps"}) {
    EXPECT_THAT(all.out, HasSubstr(noun)) << "bai --help lists " << noun;
  }
  auto ps_help = Bai({"ps", "--help"});
  EXPECT_EQ(ps_help.exit_code, 0);
  EXPECT_THAT(ps_help.out, HasSubstr("bai ps"));
  auto typo = Bai({"sesion", "ls"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err, HasSubstr("sesion"));
  auto page = Bai({"help", "run"});
  EXPECT_EQ(page.exit_code, 0) << page.err;
  EXPECT_THAT(page.out, HasSubstr("bai run"));
}

TEST_F(CliTest, ApiGetWithQueryAndPostWithBodyAreAccepted) {
  TestHttpServer server(VerifyingHandler());
  auto r = Bai({"api", "GET", "/session/s1/logs?owner_access_key=AKIAX"}, Keys(server.url()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["target"], "/session/s1/logs?owner_access_key=AKIAX");
  r = Bai({"api", "POST", "/session", "-d", R"({"name":"x","image":"python"})", "-o", "json"},
          Keys(server.url()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["body"], R"({"name":"x","image":"python"})");
  // Body from stdin.
  r = Bai({"api", "POST", "/session", "-d", "@-"}, Keys(server.url()), R"({"a":1})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["body"], R"({"a":1})");
}

// Issue 44: a route an older Backend.AI does not have (404 url-not-found) is a command this server
// does not serve, said plainly with its version, exit 1 — not "not found" (exit 5). `bai api`
// shows the server's own answer unexplained; bai's own manager's 404s are not rewritten.
TEST_F(CliTest, ARouteAnOlderBackendAiLacksIsSaidPlainly) {
  std::string manager = "23.09.11";
  TestHttpServer server([&manager](testing_util::TestRequest const& r) {
    testing_util::TestResponse out;
    if (r.target == "/") {
      out.body = R"({"version": "v7.20230615", "manager": ")" + manager + "\"}";
      return out;
    }
    out.content_type = "application/problem+json";
    if (r.method == "DELETE") {
      out.status = 405;
      out.body =
          R"({"type": "https://api.backend.ai/probs/method-not-allowed", "title": "HTTP Method Not Allowed."})";
      return out;
    }
    out.status = 404;
    out.body =
        R"({"type": "https://api.backend.ai/probs/url-not-found", "title": "Unknown URL path."})";
    return out;
  });
  auto r = Bai({"logs", "some-session"}, Keys(server.url()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("this server (Backend.AI 23.09.11, API v7.20230615) does not serve "
                               "this command"));
  // A priority 23.09 cannot keep: refused before it is sent, naming the release that can.
  r = Bai({"session", "create", "--no-wait", "--priority", "5", "python"}, Keys(server.url()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no session priorities: it needs Backend.AI 24.09 or later"));
  r = Bai({"dotfile", "rm", ".bashrc"}, Keys(server.url()));  // a DELETE: 405
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("does not serve this command (HTTP Method Not Allowed.)"));
  r = Bai({"api", "GET", "/nope"}, Keys(server.url()));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("does not serve")));
  manager = "bai-manager 0.1.0";
  r = Bai({"logs", "some-session"}, {{"BAI_CONFIG_DIR", config_.path() + "/other"},
                                     {"BACKEND_ENDPOINT", server.url()},
                                     {"BACKEND_ACCESS_KEY", testing_util::kTestAccessKey},
                                     {"BACKEND_SECRET_KEY", testing_util::kTestSecretKey}});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("does not serve")));
}

// Issue 44: folders on a Backend.AI manager and storage proxy, as 23.09.11's and 24.09's sources
// behave (checked against the real 23.09.11 pair by tests/conformance/real_manager.py): its
// request-upload refuses keys it does not know, its proxy makes a file only on a PATCH (an empty
// one too) and routes /download for GET only (HEAD is 405); delete-files is a DELETE whose body
// 23.09.11 does not read (a POST from 24.03.7); there is no trash before 24.03.
TEST_F(CliTest, FoldersOnABackendAiServerAreSpokenToAsItsReleaseReadsThem) {
  std::mutex mu;
  std::string manager = "23.09.11", version = "v7.20230615";
  std::vector<std::string> seen;              // "METHOD target body"
  std::map<std::string, std::string> stored;  // the proxy's files
  std::string const payload = "0123456789abcdefghij";
  std::string self;
  TestHttpServer server([&](testing_util::TestRequest const& r) {
    std::lock_guard<std::mutex> lock(mu);
    testing_util::TestResponse out;
    if (r.target == "/") {
      out.body = R"({"version": ")" + version + R"(", "manager": ")" + manager + "\"}";
      return out;
    }
    seen.push_back(r.method + " " + r.target + " " + r.body);
    auto problem = [&](int status, std::string type, std::string title) {
      out.status = status;
      out.content_type = "application/problem+json";
      out.body =
          nlohmann::json{{"type", "https://api.backend.ai/probs/" + type}, {"title", title}}.dump();
      return out;
    };
    if (r.target == "/folders/f/request-upload") {
      auto j = nlohmann::json::parse(r.body);
      for (auto const& [k, v] : j.items()) {
        if (k != "path" && k != "size")
          return problem(400, "invalid-api-params", k + " is not allowed");
      }
      out.body =
          nlohmann::json{{"token", j["path"].get<std::string>()}, {"url", self + "/upload"}}.dump();
    } else if (r.target == "/folders/f/request-download") {
      out.body = nlohmann::json{{"token", "d"}, {"url", self + "/download"}}.dump();
    } else if (r.target.rfind("/upload?token=", 0) == 0 && r.method == "PATCH") {
      stored[r.target.substr(14)] += r.body;  // the file appears with its (first) PATCH
      out.status = 204;
      out.headers = {{"Upload-Offset", std::to_string(stored[r.target.substr(14)].size())}};
    } else if (r.target.rfind("/download?token=", 0) == 0) {
      if (r.method != "GET") return problem(405, "method-not-allowed", "HTTP Method Not Allowed.");
      out.content_type = "application/octet-stream";
      out.headers = {{"ETag", "\"e1\""}};
      if (auto range = r.Header("range"); range && *range == "bytes=0-0") {
        out.status = 206;
        out.body = payload.substr(0, 1);
        out.headers.push_back({"Content-Range", "bytes 0-0/" + std::to_string(payload.size())});
      } else {
        out.body = payload;
      }
    } else if (r.target.rfind("/folders/f/files", 0) == 0) {
      out.body = R"({"items": [{"name": "data.bin", "type": "FILE", "size": 20, "mode": "644",
                     "created": "2026-11-29T12:55:09+00:00", "modified": "2026-11-29T12:55:09+00:00"}]})";
    } else if (r.target.rfind("/folders/f/delete-files", 0) == 0 || r.target == "/folders/f") {
      out.body = "{}";
    } else {
      return problem(404, "url-not-found", "Unknown URL path.");
    }
    return out;
  });
  self = server.url();
  auto env = [&](std::string const& as) {
    auto e = Keys(server.url());
    e["BAI_CONFIG_DIR"] = config_.path() + "/" + as;  // each server version its own cache
    return e;
  };
  auto sent = [&](std::string const& prefix) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> out;
    for (auto const& line : seen) {
      if (line.rfind(prefix, 0) == 0) out.push_back(line);
    }
    return out;
  };
  TempDir local;
  std::ofstream(local.path() + "/empty.txt").flush();
  std::ofstream(local.path() + "/a.txt") << "abc";
  auto r = Bai({"vfolder", "upload", "f", local.path() + "/empty.txt", local.path() + "/a.txt"},
               env("23.09.11"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(stored.count("empty.txt"), 1u) << "an empty file is made by one PATCH";
    EXPECT_EQ(stored["a.txt"], "abc");
  }
  r = Bai({"vfolder", "download", "f", "data.bin", "--dst", local.path() + "/got"},
          env("23.09.11"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(local.path() + "/got/data.bin");
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), payload);
  EXPECT_FALSE(fs::exists(local.path() + "/got/data.bin.bai-part"));
  // delete-files: a list cannot be given to 23.09.11 at all; 23.09.10 reads a DELETE's body;
  // 24.09 takes the POST.
  r = Bai({"vfolder", "rm-files", "f", "a.txt"}, env("23.09.11"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot delete files"));
  EXPECT_THAT(r.err, HasSubstr("23.09.10 and earlier, and 24.03.7 or later"));
  EXPECT_TRUE(sent("DELETE /folders/f/delete-files").empty());
  manager = "23.09.10";
  r = Bai({"vfolder", "rm-files", "f", "a.txt"}, env("23.09.10"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(sent("DELETE /folders/f/delete-files").size(), 1u);
  EXPECT_THAT(sent("DELETE /folders/f/delete-files")[0], HasSubstr(R"("files":["a.txt"])"));
  manager = "24.09.9";
  version = "v8.20240915";
  r = Bai({"vfolder", "rm-files", "f", "a.txt"}, env("24.09.9"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sent("POST /folders/f/delete-files").size(), 1u);
  // No trash before 24.03: rm refuses (it would delete the files at once) and sends nothing;
  // restore names the release; purge deletes.
  manager = "23.09.11";
  version = "v7.20230615";
  r = Bai({"vfolder", "rm", "f"}, env("23.09.11"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no folder trash"));
  EXPECT_TRUE(sent("DELETE /folders/f ").empty());
  r = Bai({"vfolder", "restore", "f"}, env("23.09.11"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("it needs Backend.AI 24.03 or later"));
  r = Bai({"vfolder", "purge", "f"}, env("23.09.11"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sent("DELETE /folders/f ").size(), 1u);
}

// DECISIONS.md "Protocol": a key newer than 24.09 goes only to a server whose release keeps it
// (batch_timeout: Backend.AI 24.12 and later, whose API version is still 24.09's), else it is
// left out with a warning.
TEST_F(CliTest, ABatchTimeoutGoesOnlyToAReleaseThatKeepsIt) {
  std::mutex mu;
  std::string manager;
  std::vector<std::string> bodies;
  TestHttpServer server([&](testing_util::TestRequest const& r) {
    std::lock_guard<std::mutex> lock(mu);
    testing_util::TestResponse out;
    if (r.target == "/") {
      out.body = R"({"version": "v8.20240915", "manager": ")" + manager + "\"}";
    } else if (r.method == "POST" && r.target == "/session") {
      bodies.push_back(r.body);
      out.status = 201;
      out.body = R"({"sessionId": "9f0c5e4e-1f6b-4c1e-8a4e-2b2f4f7f0001", "sessionName": "job1",
                     "status": "PENDING", "created": true, "servicePorts": []})";
    } else {
      out.status = 404;
      out.content_type = "application/problem+json";
      out.body =
          R"({"type": "https://api.backend.ai/probs/url-not-found", "title": "Unknown URL path."})";
    }
    return out;
  });
  for (std::string release : {"24.09.9", "24.12.0"}) {
    {
      std::lock_guard<std::mutex> lock(mu);
      manager = release;
    }
    auto env = Keys(server.url());
    env["BAI_CONFIG_DIR"] = config_.path() + "/" + release;
    auto r = Bai({"session", "create", "--no-wait", "--name", "job1", "--type", "batch",
                  "--startup-command", "true", "--timeout", "1h", "python"},
                 env);
    ASSERT_EQ(r.exit_code, 0) << release << ": " << r.err;
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(bodies.empty());
    auto sent = nlohmann::json::parse(bodies.back());
    if (release == "24.09.9") {
      EXPECT_FALSE(sent.contains("batch_timeout")) << sent.dump();
      EXPECT_THAT(r.err, HasSubstr("does not keep a batch timeout (Backend.AI 24.12 or later"));
    } else {
      EXPECT_EQ(sent.value("batch_timeout", 0), 3600) << sent.dump();
      EXPECT_THAT(r.err, Not(HasSubstr("batch timeout")));
    }
  }
}

TEST_F(CliTest, WrongSecretExitsWithAuthCodeAndProblemOnStderr) {
  TestHttpServer server(VerifyingHandler());
  auto env = Keys(server.url());
  env["BACKEND_SECRET_KEY"] = "wrong";
  auto r = Bai({"api", "GET", "/auth?echo=x"}, env);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_TRUE(r.out.empty());
  EXPECT_THAT(r.err, HasSubstr("Signature mismatch"));
  EXPECT_THAT(r.err, HasSubstr("auth-failed"));
  r = Bai({"api", "GET", "/auth?echo=x", "-o", "json"}, env);
  EXPECT_EQ(r.exit_code, 4);
  auto j = nlohmann::json::parse(r.err);
  EXPECT_EQ(j["exit_code"], 4);
  EXPECT_EQ(j["error"]["http_status"], 401);
  EXPECT_EQ(j["error"]["type"], "https://api.backend.ai/probs/auth-failed");
}

TEST_F(CliTest, ExitCodesFollowTheProblemType) {
  TestHttpServer server(VerifyingHandler());
  EXPECT_EQ(Bai({"api", "GET", "/status/404"}, Keys(server.url())).exit_code, 5);
  EXPECT_EQ(Bai({"api", "GET", "/status/400"}, Keys(server.url())).exit_code, 1);
  EXPECT_EQ(Bai({"api", "DELETE", "/status/204"}, Keys(server.url())).exit_code, 0);
  auto unreachable = Bai({"api", "GET", "/x"}, {{"BACKEND_ENDPOINT", "http://127.0.0.1:9"}});
  EXPECT_EQ(unreachable.exit_code, 7);
  EXPECT_THAT(unreachable.err, HasSubstr("cannot connect"));
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Bai({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(Bai({"api", "GET"}).exit_code, 2);
  EXPECT_EQ(Bai({"api", "GET", "no-slash"}).exit_code, 2);
  EXPECT_EQ(Bai({"api", "POST", "/x", "-d", "{not json"}).exit_code, 2);
  EXPECT_EQ(Bai({"api", "GET", "/x", "-H", "bad header"}).exit_code, 2);
  EXPECT_EQ(Bai({"version", "-o", "yaml"}).exit_code, 2);
  EXPECT_EQ(Bai({"completion", "tcsh"}).exit_code, 2);
  // Unexpected words are named in the order given, with the right command's help.
  auto extra = Bai({"session", "info", "a", "b", "c"});
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_EQ(extra.err,
            "error: unexpected arguments: b c\nRun 'bai session info --help' for usage.\n");
}

TEST_F(CliTest, DebugRedactsSecretsAndSignature) {
  TestHttpServer server(VerifyingHandler());
  auto r = Bai({"--debug", "api", "GET", "/x"}, Keys(server.url()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("> GET"));
  EXPECT_THAT(r.err, HasSubstr("<redacted>"));
  EXPECT_EQ(r.err.find(testing_util::kTestSecretKey), std::string::npos);
}

TEST_F(CliTest, ConfigSetGetListWithSecretsFromStdinOnly) {
  TestHttpServer server(VerifyingHandler());
  ASSERT_EQ(Bai({"config", "set", "endpoint", server.url()}).exit_code, 0);
  ASSERT_EQ(Bai({"config", "set", "access_key", testing_util::kTestAccessKey}).exit_code, 0);
  auto on_argv = Bai({"config", "set", "secret_key", "visible-in-ps"});
  EXPECT_EQ(on_argv.exit_code, 2);
  EXPECT_THAT(on_argv.err, HasSubstr("never taken from the command line"));
  ASSERT_EQ(
      Bai({"config", "set", "secret_key"}, {}, std::string(testing_util::kTestSecretKey) + "\n")
          .exit_code,
      0);
  struct stat st {};
  ASSERT_EQ(::stat((config_.path() + "/credentials.toml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto get = Bai({"config", "get", "endpoint"});
  EXPECT_EQ(get.out, server.url() + "\n");
  auto secret = Bai({"config", "get", "secret_key"});
  EXPECT_EQ(secret.out.find("EXAMPLEKEY"), std::string::npos);
  EXPECT_EQ(Bai({"config", "get", "no_such"}).exit_code, 2);

  auto list = Bai({"config", "list", "-o", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto j = nlohmann::json::parse(list.out);
  EXPECT_EQ(j["settings"]["endpoint"]["source"], "profile default");
  EXPECT_EQ(j["server"]["api_version"], "v8.20240915");
  EXPECT_EQ(j["server"]["negotiated_api_version"], "v8.20240915");
  EXPECT_EQ(list.out.find("EXAMPLEKEY"), std::string::npos);

  // The stored profile signs requests that the server accepts.
  auto api = Bai({"api", "GET", "/auth?echo=hi"});
  EXPECT_EQ(api.exit_code, 0) << api.err;

  // The environment beats the profile.
  auto env = Bai({"config", "get", "endpoint", "-o", "json"}, {{"BACKEND_ENDPOINT", "http://e:1"}});
  EXPECT_EQ(nlohmann::json::parse(env.out)["source"], "env BACKEND_ENDPOINT");
}

TEST_F(CliTest, HelpTopicsAndCompletion) {
  auto codes = Bai({"help", "exit-codes"});
  EXPECT_EQ(codes.exit_code, 0);
  EXPECT_THAT(codes.out, HasSubstr("7    server unreachable"));
  EXPECT_THAT(codes.out, HasSubstr("125"));
  auto help = Bai({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("api"));
  auto output = Bai({"help", "output"});
  EXPECT_EQ(output.exit_code, 0);
  EXPECT_THAT(output.out, HasSubstr("\"exit_code\""));
  // Every command the help texts name exists.
  for (std::vector<std::string> cmd : {std::vector<std::string>{"run"},
                                       {"exec"},
                                       {"wait"},
                                       {"ps"},
                                       {"logs"},
                                       {"rm"},
                                       {"config"},
                                       {"api"},
                                       {"session", "create"},
                                       {"session", "info"},
                                       {"session", "ls"},
                                       {"session", "history"},
                                       {"session", "rename"},
                                       {"session", "restart"},
                                       {"session", "commit"},
                                       {"session", "events"},
                                       {"session", "wait"},
                                       {"session", "exec"}}) {
    cmd.push_back("--help");
    EXPECT_EQ(Bai(cmd).exit_code, 0) << cmd[0] << " " << cmd[1];
  }
  for (char const* shell : {"bash", "zsh", "fish"}) {
    auto c = Bai({"completion", shell});
    EXPECT_EQ(c.exit_code, 0) << shell;
    EXPECT_THAT(c.out, HasSubstr("config")) << shell;
  }
  // The bash script is valid bash and completes subcommands.
  std::string script = config_.path() + "/bai.bash";
  std::ofstream(script) << Bai({"completion", "bash"}).out;
  auto words = testing_util::RunProcess(
      {"/bin/bash", "-c",
       "source " + script +
           "; COMP_WORDS=(bai config s); COMP_CWORD=2; _bai; echo ${COMPREPLY[@]}"});
  EXPECT_EQ(words.exit_code, 0) << words.err;
  EXPECT_EQ(words.out, "set\n");
}

// Hardening (new user, 12): usage lines named only the last word ("Usage: create"), `bai help
// run` was refused, completion offered `-h --help` twice and no session or folder names.
TEST_F(CliTest, UsageHelpAndCompletionNameThingsAsTyped) {
  auto usage = Bai({"session", "create", "--help"});
  EXPECT_EQ(usage.exit_code, 0);
  EXPECT_THAT(usage.out, HasSubstr("Usage: bai session create [OPTIONS] IMAGE"));
  auto run = Bai({"help", "run"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("Usage: bai run "));
  auto nested = Bai({"help", "vfolder", "upload"});
  EXPECT_EQ(nested.exit_code, 0) << nested.err;
  EXPECT_THAT(nested.out, HasSubstr("Usage: bai vfolder upload [OPTIONS] FOLDER FILES..."));
  auto unknown = Bai({"help", "session", "nope"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("session nope"));
  EXPECT_EQ(Bai({"help", "__complete"}).exit_code, 2) << "hidden commands stay hidden";
  EXPECT_EQ(Bai({"--help"}).out.find("__complete"), std::string::npos);

  // Each completion list names a word once.
  auto bash = Bai({"completion", "bash"}).out;
  std::size_t lists = 0;
  for (std::size_t at = bash.find("words=\""); at != std::string::npos;
       at = bash.find("words=\"", at + 1)) {
    auto end = bash.find('"', at + 7);
    std::istringstream in(bash.substr(at + 7, end - at - 7));
    std::set<std::string> seen;
    for (std::string w; in >> w;) EXPECT_TRUE(seen.insert(w).second) << w << " twice";
    ++lists;
  }
  EXPECT_GT(lists, 40u);
  EXPECT_EQ(bash.find("__complete\" ;;"), std::string::npos);

  // Names come from `bai __complete KIND` (a stand-in `bai` here; the real names are tested
  // against a cluster in vfolder_cli_test): folders after `vfolder info`, sessions after `logs`,
  // folder places and local files after `cp`, none for a flag.
  std::string dir = config_.path();
  std::string fake = dir + "/fakebai";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "case \"$2\" in folders) echo data; echo docs;;"
                         " sessions) echo job-1;; folder-places) echo data:;; esac\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::ofstream(dir + "/local-file") << "x";
  std::string script = dir + "/bai.bash";
  std::ofstream(script) << bash;
  auto complete = [&](std::string const& words, int cword) {
    auto r = testing_util::RunProcess(
        {"/bin/bash", "-c",
         "cd " + dir + " && source " + script + "; COMP_WORDS=(" + fake + " " + words +
             "); COMP_CWORD=" + std::to_string(cword) + "; _bai; echo ${COMPREPLY[@]}"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(complete("vfolder info d", 3), "data docs\n");
  EXPECT_EQ(complete("logs j", 2), "job-1\n");
  EXPECT_EQ(complete("cp local-f", 2), "local-file\n");
  EXPECT_EQ(complete("cp da", 2), "data:\n");
  EXPECT_EQ(complete("vfolder info --he", 3), "--help\n");
}

}  // namespace
}  // namespace bai
