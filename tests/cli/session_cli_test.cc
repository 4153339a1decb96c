// SPDX-License-Identifier: Apache-2.0
// `bai run`, `logs`, `rm` and `session info` as processes, against an in-process manager with a
// dummy agent. (The dummy agent does not execute commands: its "output" is the command line it
// received, which proves the argv quoting; its exit code is the N of a trailing `exit N`.)
#include "bai/protocol/resource.h"
#include "bai/session_client.h"

#include "libbai/util/json_parse.h"
#include "tests/testing_util/local_cluster.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

namespace bai {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::TempDir;

using SessionCliTest = testing_util::LocalCluster;

// `bai ARGS…` on a pseudo-terminal (util-linux script(1)): stdin, stdout and stderr are one
// terminal, as in an interactive shell; what it wrote comes back in `out`.
testing_util::ProcessResult OnTerminal(std::map<std::string, std::string> const& env,
                                       std::vector<std::string> args) {
  args.insert(args.begin(), testing_util::BinPath("bai"));
  return testing_util::RunProcess({"/usr/bin/script", "-qefc", ShellJoin(args), "/dev/null"}, env);
}

// The README's "Trying it" block, line by line as a new user pastes it (here against the dummy
// agent): every `build/bin/bai` command in it runs and exits as its comment says.
TEST_F(SessionCliTest, TheReadmeCommandsRun) {
  std::ifstream in(testing_util::DataPath("../../README.md"));
  ASSERT_TRUE(in) << "README.md not found";
  std::vector<std::string> commands;
  bool trying = false, block = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) trying = line == "## Trying it";
    if (trying && line.rfind("```", 0) == 0) block = !block;
    if (trying && block && line.find("build/bin/bai ") != std::string::npos &&
        line.rfind("#", 0) != 0) {
      commands.push_back(line);
    }
  }
  ASSERT_GE(commands.size(), 12u) << "the README's command block moved or shrank";
  std::string bin = testing_util::BinPath("bai");
  bin.resize(bin.size() - 3);  // the directory, with its slash
  for (auto line : commands) {
    for (std::size_t at = 0; (at = line.find("build/bin/", at)) != std::string::npos;) {
      line.replace(at, 10, bin);
      at += bin.size();
    }
    if (line.find("bai app webapp http") != std::string::npos) {
      // The simulated agent's images declare no HTTP app: this line is run on runc by the
      // conformance case `app` (the official client) and StreamTest's tunnels (bai's AppTunnel).
      continue;
    }
    bool shell = line.find("bai shell ") != std::string::npos;
    if (shell || line.find("bai exec -it ") != std::string::npos) {
      // A terminal command: on a pseudo-terminal, with what a user would type (a shell's
      // commands, or Python's for `exec -it … python3`).
      std::string typed =
          shell ? "echo in-the-$((6*7)); exit 4" : "print(\"in-the-%d\" % (6*7)); exit(4)";
      auto r =
          testing_util::RunProcess({"/bin/bash", "-c",
                                    "(sleep 1; echo " + ShellJoin({typed}) + ") | script -qefc " +
                                        ShellJoin({line}) + " /dev/null"},
                                   env_);
      EXPECT_EQ(r.exit_code, 4) << line << "\n" << r.out << r.err;
      EXPECT_THAT(r.out, HasSubstr("in-the-42")) << line;
      continue;
    }
    auto r = testing_util::RunProcess({"/bin/bash", "-c", line}, env_);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out << r.err;
    if (line.find("exit 3'; echo $?") != std::string::npos) {
      EXPECT_THAT(r.out, ::testing::EndsWith("3\n")) << "the job's exit code, as the README says";
    }
  }
}

TEST_F(SessionCliTest, RunExitsWithTheJobsCodeAndPrintsItsLogs) {
  auto ok = Bai({"run", "python", "--", "python3", "-c", "print(6*7)"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // The job received exactly the typed arguments, quoted for /bin/sh.
  EXPECT_THAT(ok.out, HasSubstr("python3 -c 'print(6*7)'"));
  auto three = Bai({"run", "python", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(three.exit_code, 3) << three.err;
  auto json_out =
      Bai({"run", "-o", "json", "--name", "json-job", "python", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(json_out.exit_code, 7);
  auto j = json::parse(json_out.out);
  EXPECT_EQ(j["exit_code"], 7);
  EXPECT_EQ(j["name"], "json-job");
  EXPECT_TRUE(j["id"].is_string());
  EXPECT_FALSE(j.contains("session_name")) << "a session is named id/name everywhere";
  EXPECT_EQ(j["status"], "TERMINATED");
}

TEST_F(SessionCliTest, RunSeparatesTheJobsStreamsAndRefusesPipedInput) {
  auto r = Bai({"run", "--name", "split-job", "python", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "dummy kernel ran: sh -c 'exit 3'\n") << "the job's stdout only";
  EXPECT_THAT(r.err, HasSubstr("dummy kernel: exit 3\n"));
  auto j = json::parse(Bai({"-o", "json", "run", "python", "--", "sh", "-c", "exit 2"}).out);
  EXPECT_EQ(j["stdout"], "dummy kernel ran: sh -c 'exit 2'\n");
  EXPECT_EQ(j["stderr"], "dummy kernel: exit 2\n");
  // logs (and logs -f of an ended job) print it whole, its streams apart as run did.
  for (auto follow : {false, true}) {
    auto logs = follow ? Bai({"logs", "-f", "split-job"}) : Bai({"logs", "split-job"});
    EXPECT_EQ(logs.exit_code, 0) << logs.err;
    EXPECT_EQ(logs.out, "dummy kernel ran: sh -c 'exit 3'\n") << "follow " << follow;
    EXPECT_EQ(logs.err, "dummy kernel: exit 3\n") << "follow " << follow;
  }
  auto logs_json = json::parse(Bai({"-o", "json", "logs", "split-job"}).out);
  EXPECT_EQ(logs_json["stdout"], "dummy kernel ran: sh -c 'exit 3'\n");
  EXPECT_EQ(logs_json["stderr"], "dummy kernel: exit 3\n");
  EXPECT_EQ(logs_json["logs"], "dummy kernel ran: sh -c 'exit 3'\ndummy kernel: exit 3\n");
  EXPECT_EQ(logs_json["truncated"], false);
  // Input piped to a batch job is refused rather than silently dropped.
  auto piped = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "run", "python", "--", "cat"}, env_, "some input\n");
  EXPECT_EQ(piped.exit_code, 2);
  EXPECT_THAT(piped.err, HasSubstr("does not pass stdin to a batch job"));
}

// An agent that keeps 24 bytes of a kernel's output: its first 12 and its last 6 to 12, the cut
// said where it is, never silent (a CI job's final traceback is at the end).
class TruncatingClusterTest : public testing_util::LocalCluster {
 protected:
  TruncatingClusterTest() { max_log_bytes_ = 24; }
};

TEST_F(TruncatingClusterTest, LogsKeepTheHeadAndTheTailAndSayWhatWasDropped) {
  auto r = Bai({"run", "--name", "long-out", "python", "--", "echo",
                "a line longer than the limit, then the traceback"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The job wrote before `bai run` was following, so it gets the stored head and tail, and the
  // notice on stderr (a follower present at the time gets everything live).
  EXPECT_THAT(r.out, ::testing::StartsWith("dummy kernel"));
  EXPECT_THAT(r.out, ::testing::EndsWith("eback'\n")) << "the end of the output is kept";
  EXPECT_THAT(r.out, Not(HasSubstr("longer than")));
  EXPECT_THAT(r.err, HasSubstr("bytes of output dropped here"));
  for (auto const& logs : {Bai({"logs", "long-out"}), Bai({"logs", "-f", "long-out"})}) {
    ASSERT_EQ(logs.exit_code, 0) << logs.err;
    EXPECT_EQ(logs.out, r.out);
    EXPECT_THAT(logs.err, HasSubstr("bytes of output dropped here; the log keeps a kernel's "
                                    "first 12 bytes and its last 6 bytes to 12 bytes"));
  }
  // 24.09's answer (the official client's `logs`): one text, the marker in its place.
  auto j = json::parse(Bai({"-o", "json", "logs", "long-out"}).out);
  EXPECT_EQ(j["truncated"], true);
  std::string merged = j["logs"];
  EXPECT_THAT(merged, ::testing::MatchesRegex("dummy kernel\\[bai: [0-9]+ bytes of output "
                                              "dropped here[^]]*\\]\n.*eback'\n"));
  auto raw = Bai({"-o", "json", "api", "GET", "/session/long-out/logs"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_THAT(raw.out, HasSubstr("bytes of output dropped here"));
}

TEST_F(SessionCliTest, RunFailuresAroundTheJobExit125) {
  auto bad_group = Bai({"run", "--group", "nope", "python", "--", "true"});
  EXPECT_EQ(bad_group.exit_code, 125);
  EXPECT_THAT(bad_group.err, HasSubstr("No such user group"));
  // No command: the image's Entrypoint/Cmd would run; the dummy's images name none, which the
  // agent says in words; the job ended without an exit code (126).
  auto no_command = Bai({"run", "python"});
  EXPECT_EQ(no_command.exit_code, 126) << no_command.err;
  EXPECT_THAT(no_command.err, HasSubstr("names no Entrypoint or Cmd"));
  EXPECT_EQ(Bai({"run", "-r", "cpu=lots", "python", "--", "true"}).exit_code, 2);
  auto unreachable = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "run", "python", "--", "true"},
      {{"BACKEND_ENDPOINT", "http://127.0.0.1:9"}, {"BAI_CONFIG_DIR", dir_.path() + "/cfg"}});
  EXPECT_EQ(unreachable.exit_code, 125);
}

TEST_F(SessionCliTest, CommitWaitsForTheArchiveAndReportsFailures) {
  auto created = Bai({"api", "POST", "/session", "-d", R"({"name": "cm-cli", "image": "python"})"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto waited = Bai({"session", "commit", "cm-cli", "--filename", "one.tar", "--wait"});
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  std::string path = waited.out.substr(0, waited.out.find('\n'));
  EXPECT_THAT(path, ::testing::EndsWith("/one.tar"));
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
  // Without --wait: the task to follow, as JSON for scripts.
  auto started = Bai({"-o", "json", "session", "commit", "cm-cli", "--filename", "two.tar"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  auto j = json::parse(started.out);
  EXPECT_EQ(j["task_id"].get<std::string>().size(), 36u);
  EXPECT_THAT(j["path"].get<std::string>(), ::testing::EndsWith("/two.tar"));
  // One commit of a session at a time: wait until this one is written.
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {
    auto st = Bai({"api", "GET", "/session/cm-cli/commit"});
    ready = st.exit_code == 0 && json::parse(st.out)["status"] == "ready";
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(ready);
  // The same name again fails (a commit never overwrites); an unknown session is not found.
  auto again = Bai({"session", "commit", "cm-cli", "--filename", "one.tar", "--wait"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("exists"));
  EXPECT_EQ(Bai({"session", "commit", "no-such-session", "--wait"}).exit_code, 5);
  // Hardening (new user, 10): two unnamed commits in the same second took the same name and the
  // second failed; the default name carries the task's id.
  auto first = Bai({"session", "commit", "cm-cli", "--wait"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = Bai({"session", "commit", "cm-cli", "--wait"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::string a = first.out.substr(0, first.out.find('\n'));
  std::string b = second.out.substr(0, second.out.find('\n'));
  EXPECT_NE(a, b);
  EXPECT_THAT(a, ::testing::MatchesRegex(".*/cm-cli-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\\.tar"));
}

// Hardening (new user, 10): a commit wrote a tar on the agent host that no command could fetch
// or delete. With --folder it goes into one of the owner's folders, where the folder commands
// fetch and delete it; the answer names it FOLDER:FILE, never a host path.
TEST_F(SessionCliTest, CommitIntoAFolderIsFetchedAndDeletedWithTheFolderCommands) {
  ASSERT_EQ(Bai({"vfolder", "create", "snaps"}).exit_code, 0);
  auto created =
      Bai({"api", "POST", "/session", "-d", R"({"name": "cm-fold", "image": "python"})"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto done =
      Bai({"session", "commit", "cm-fold", "--folder", "snaps", "--filename", "s.tar", "--wait"});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(done.out.substr(0, done.out.find('\n')), "snaps:s.tar");
  EXPECT_THAT(done.err + done.out, Not(HasSubstr(dir_.path()))) << "no host path shown";
  auto files = Bai({"-o", "json", "vfolder", "files", "snaps"});
  ASSERT_EQ(files.exit_code, 0) << files.err;
  auto listed = json::parse(files.out)["files"];
  ASSERT_EQ(listed.size(), 1u) << files.out;
  EXPECT_EQ(listed[0]["name"], "s.tar");
  EXPECT_EQ(listed[0]["size"], 1024) << "the dummy kernel's empty archive";
  std::string local = dir_.path() + "/got.tar";
  auto fetched = Bai({"cp", "snaps:s.tar", local});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  EXPECT_EQ(std::filesystem::file_size(local), 1024u);
  // The same name again is refused (a commit never overwrites), before any task runs.
  auto again = Bai({"session", "commit", "cm-fold", "--folder", "snaps", "--filename", "s.tar"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_THAT(again.err, HasSubstr("already"));
  ASSERT_EQ(Bai({"vfolder", "rm-files", "snaps", "s.tar"}).exit_code, 0);
  auto after = Bai({"-o", "json", "vfolder", "files", "snaps"});
  EXPECT_TRUE(json::parse(after.out)["files"].empty()) << after.out;
  // A folder the owner does not have is not found.
  auto nosuch = Bai({"session", "commit", "cm-fold", "--folder", "nosuch"});
  EXPECT_EQ(nosuch.exit_code, 5) << nosuch.err;
}

TEST_F(SessionCliTest, InfoLogsAndRm) {
  auto detached = Bai({"run", "--detach", "--name", "kept-job", "python", "--", "sleep", "1"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  std::string id = detached.out.substr(0, detached.out.find('\n'));
  EXPECT_EQ(id.size(), 36u);
  // By exact id the finished job stays visible, with its result.
  for (int i = 0; i < 100; ++i) {
    auto info = Bai({"session", "info", id, "-o", "json"});
    if (info.exit_code == 0 && json::parse(info.out)["status"] == "TERMINATED") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto info = Bai({"session", "info", id, "-o", "json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  auto j = json::parse(info.out);
  EXPECT_EQ(j["status"], "TERMINATED");
  EXPECT_EQ(j["job_exit_code"], 0);
  EXPECT_EQ(j["result"], "SUCCESS");
  auto logs = Bai({"logs", "kept-job"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("sleep 1"));
  // Issue 43, 10: a healthy session that has printed nothing yet has an empty log, not "the
  // session's agent is out of reach" and truncated (the agent keeps no file until output comes).
  ASSERT_EQ(Bai({"session", "create", "--name", "quiet", "python"}).exit_code, 0);
  auto quiet = Bai({"-o", "json", "logs", "quiet"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  auto q = json::parse(quiet.out, nullptr, false);
  EXPECT_EQ(q.value("logs", std::string("?")), "") << quiet.out;
  EXPECT_THAT(quiet.out, Not(HasSubstr("out of reach")));
  EXPECT_NE(q.value("truncated", true), true) << quiet.out;
  Bai({"rm", "quiet"});

  // What could never start is refused at once (exit 125 around the job), naming the group's
  // capacity; a job that waits says why in its info.
  auto never = Bai({"run", "--name", "too-big", "-r", "cpu=64", "python", "--", "true"});
  EXPECT_EQ(never.exit_code, 125);
  EXPECT_THAT(never.err, HasSubstr("larger than any agent of the resource group holds"));
  auto pending =
      Bai({"run", "--detach", "--name", "to-remove", "--starts-at", "1h", "python", "--", "true"});
  ASSERT_EQ(pending.exit_code, 0) << pending.err;
  auto table = Bai({"session", "info", "to-remove"});
  EXPECT_THAT(table.out, HasSubstr("PENDING"));
  EXPECT_THAT(table.out, HasSubstr("waiting"));
  EXPECT_EQ(Bai({"rm", "to-remove"}).exit_code, 0);
  // Hardening: rm of an ended session is done (0) with a notice, so cleanup traps pass; an
  // unknown one is still 5.
  auto again = Bai({"rm", "to-remove"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("to-remove has already ended (CANCELLED)"));
  EXPECT_EQ(json::parse(Bai({"-o", "json", "rm", "to-remove"}).out)["sessions"][0]["already_ended"],
            true);
  EXPECT_EQ(Bai({"rm", "no-such-session"}).exit_code, 5);
  EXPECT_EQ(Bai({"session", "info", "no-such-session"}).exit_code, 5);
}

// Issue 47, 6: `bai ps --usage` and `session info` show what a running session uses beside what
// it asked for, in human units, and -o json the exact numbers. The dummy agent reports 32 MiB
// and CPU time equal to wall time (one core busy); cpu_util needs two of its heartbeats.
TEST_F(SessionCliTest, PsAndInfoShowWhatASessionUses) {
  ASSERT_EQ(
      Bai({"session", "create", "--name", "busy-one", "-r", "cpu=1,mem=1g", "python"}).exit_code,
      0);
  json use;
  for (int i = 0; i < 300; ++i) {
    auto listed = Bai({"-o", "json", "ps", "--usage", "--name", "busy-one"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    auto items = json::parse(listed.out)["items"];
    ASSERT_EQ(items.size(), 1u) << listed.out;
    use = items[0]["use"];
    if (use.is_object() && use["cpu_pct"].is_number()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(use.is_object() && use["cpu_pct"].is_number()) << use.dump();
  EXPECT_EQ(use["mem_bytes"], 32 << 20);
  EXPECT_GT(use["cpu_pct"].get<double>(), 50.0) << "one core busy";
  EXPECT_LT(use["cpu_pct"].get<double>(), 150.0);
  auto table = Bai({"ps", "--usage", "--name", "busy-one"});
  EXPECT_THAT(table.out, HasSubstr("USE"));
  EXPECT_THAT(table.out, HasSubstr("cpu=1 mem=1G")) << "what it asked for, in human units";
  EXPECT_THAT(table.out, HasSubstr("mem=32M")) << table.out;
  EXPECT_THAT(table.out, ::testing::ContainsRegex("cpu=[0-9]+\\.[0-9]%"));
  auto plain = Bai({"ps", "--name", "busy-one"});
  EXPECT_THAT(plain.out, Not(HasSubstr("USE"))) << "only when asked";
  auto info = Bai({"session", "info", "busy-one"});
  EXPECT_THAT(info.out, ::testing::ContainsRegex("use +cpu=[0-9.]+% mem=32M")) << info.out;
  EXPECT_THAT(info.out, HasSubstr("mem=1G"));
  auto info_json = json::parse(Bai({"-o", "json", "session", "info", "busy-one"}).out);
  EXPECT_EQ(info_json["use"]["mem_bytes"], 32 << 20);
  EXPECT_EQ(info_json["requested_slots"]["mem"], std::int64_t{1} << 30) << "exact in JSON";
  Bai({"rm", "busy-one"});
}

TEST_F(SessionCliTest, SessionVerbsAndTheirTopLevelAliasesAgree) {
  auto run = Bai({"session", "run", "--name", "noun-job", "python", "--", "sh", "-c", "exit 4"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
  auto by_noun = Bai({"session", "logs", "noun-job"});
  auto by_alias = Bai({"logs", "noun-job"});
  EXPECT_EQ(by_noun.exit_code, 0) << by_noun.err;
  EXPECT_THAT(by_noun.out, HasSubstr("exit 4"));
  EXPECT_EQ(by_noun.out, by_alias.out);
  auto queued = Bai({"session", "run", "--detach", "--name", "noun-rm", "--starts-at", "1h",
                     "python", "--", "x"});
  ASSERT_EQ(queued.exit_code, 0) << queued.err;
  EXPECT_EQ(Bai({"session", "rm", "noun-rm"}).exit_code, 0);
  EXPECT_EQ(Bai({"rm", "noun-rm"}).exit_code, 0) << "ended, by either name";
  EXPECT_EQ(Bai({"rm", "noun-gone"}).exit_code, 5) << "unknown, by either name";
  EXPECT_EQ(Bai({"session"}).exit_code, 2) << "a noun needs a verb";
}

TEST_F(SessionCliTest, CreateExecWaitAndTheLifecycleVerbs) {
  auto created = Bai({"session", "create", "python", "--name", "box1", "--tag", "exp-7"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  std::string id = created.out.substr(0, created.out.find('\n'));
  EXPECT_EQ(id.size(), 36u);
  EXPECT_THAT(created.err, HasSubstr("session box1 (" + id + ")"));
  // exec: the command's streams apart, its exit code passed through (a simulated kernel's
  // commands run on its host, as its terminals do).
  auto exec = Bai({"exec", "box1", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3"});
  EXPECT_EQ(exec.exit_code, 3) << exec.err;
  EXPECT_EQ(exec.out, "to-out\n");
  EXPECT_THAT(exec.err, HasSubstr("to-err"));
  auto exec_json = Bai({"-o", "json", "session", "exec", "box1", "--", "true"});
  EXPECT_EQ(json::parse(exec_json.out)["exit_code"], 0);
  EXPECT_EQ(Bai({"exec", "no-such-box", "--", "true"}).exit_code, 125);
  EXPECT_EQ(Bai({"exec", "box1", "--", "no-such-program-here"}).exit_code, 127);
  // Issue 43, 8: piped stdin reaches the command, its end closing the command's stdin (it was
  // refused); -n keeps it back, as ssh -n.
  auto piped = testing_util::RunProcess({testing_util::BinPath("bai"), "exec", "box1", "--", "cat"},
                                        env_, "hello\n");
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "hello\n");
  auto held = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "exec", "-n", "box1", "--", "cat"}, env_, "hello\n");
  EXPECT_EQ(held.exit_code, 0) << held.err;
  EXPECT_EQ(held.out, "");
  // Issue 43, 2: 20 MB of output arrives whole (it was lost after 30 s, the agent's link cut),
  // and the session answers at once after.
  std::string big = "head -c 20000000 /dev/zero | base64 -w 100";
  auto local = testing_util::RunProcess({"/bin/sh", "-c", big});
  auto streamed = Bai({"exec", "box1", "--", "sh", "-c", big});
  EXPECT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(streamed.out.size(), local.out.size());
  EXPECT_TRUE(streamed.out == local.out) << "the output differs";
  auto after = Bai({"exec", "box1", "--", "echo", "still-here"});
  EXPECT_EQ(after.out, "still-here\n") << after.err;
  // Output appears as written, not in batches: the first line long before the command ends.
  {
    testing_util::BackgroundProcess slow(
        {testing_util::BinPath("bai"), "exec", "-n", "box1", "--", "sh", "-c",
         "echo first-line; sleep 20; echo second-line"},
        env_);
    EXPECT_THAT(slow.WaitForLine("first-line", 1500), HasSubstr("first-line")) << slow.Transcript();
    EXPECT_EQ(slow.Stop(SIGINT), 130);
  }
  // wait --for running returns at once for a running session.
  auto running = Bai({"wait", "box1", "--for", "running", "--timeout", "30s"});
  EXPECT_EQ(running.exit_code, 0) << running.err;
  EXPECT_THAT(running.out, HasSubstr("box1 RUNNING"));
  // Completion offers the live sessions by name (and "NAME:" for session cp).
  EXPECT_EQ(Bai({"__complete", "sessions"}).out, "box1\n");
  EXPECT_EQ(Bai({"__complete", "session-places"}).out, "box1:\n");
  // history, rename, restart.
  auto history = Bai({"-o", "json", "session", "history", "box1"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  auto h = json::parse(history.out);
  EXPECT_EQ(h["history"].front()["status"], "PENDING");
  EXPECT_EQ(h["history"].back()["status"], "RUNNING");
  EXPECT_EQ(Bai({"session", "rename", "box1", "box2"}).exit_code, 0);
  EXPECT_EQ(Bai({"session", "info", "box2"}).exit_code, 0);
  // Hardening (new user, 10): restart wiped /home/work without a word.
  auto restarted = Bai({"session", "restart", "box2"});
  EXPECT_EQ(restarted.exit_code, 0) << restarted.err;
  EXPECT_THAT(restarted.err, HasSubstr("/home/work starts empty again"));
  EXPECT_EQ(Bai({"session", "restart", "nope-box"}).exit_code, 5);
  // create --no-wait returns once queued; a session that waits is timed out by wait.
  auto queued = Bai({"-o", "json", "session", "create", "python", "--name", "later-job", "--type",
                     "batch", "--startup-command", "true", "--starts-at", "1h", "--no-wait"});
  ASSERT_EQ(queued.exit_code, 0) << queued.err;
  EXPECT_EQ(json::parse(queued.out)["status"], "PENDING");
  EXPECT_EQ(Bai({"wait", "later-job", "--for", "running", "--timeout", "1s"}).exit_code, 3);
  EXPECT_EQ(Bai({"wait", "later-job", "--timeout", "1s"}).exit_code, 124);
  // Hardening: a timed-out wait reports the session's real status ("WAITING" was none).
  auto timed = json::parse(Bai({"-o", "json", "wait", "later-job", "--timeout", "1s"}).out);
  EXPECT_EQ(timed["sessions"][0]["status"], "PENDING");
  EXPECT_EQ(timed["sessions"][0]["timed_out"], true);
  // Hardening: every session is looked up first; an unknown one fails at once with 5
  // (`bai wait later-job nosuch` waited for later-job and ignored nosuch).
  auto unknown = Bai({"wait", "later-job", "nosuch-job"});
  EXPECT_EQ(unknown.exit_code, 5) << unknown.err;
  // Hardening: destroying takes exact names; `rm late` must not end later-job.
  EXPECT_EQ(Bai({"rm", "late"}).exit_code, 5);
  EXPECT_EQ(json::parse(Bai({"-o", "json", "session", "info", "later-job"}).out)["status"],
            "PENDING");
  // Durations: words are usage errors, said in one line.
  auto bad = Bai({"wait", "later-job", "--timeout", "soon"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "error: --timeout soon: expected a duration such as 30s, 5m, 1h, 2d (or "
            "seconds)\n");
  // rm is idempotent for a session on its way out; the job's own code comes back from wait.
  EXPECT_EQ(Bai({"rm", "box2", "later-job"}).exit_code, 0);
  auto job = Bai({"run", "--detach", "--name", "waited-job", "python", "--", "sh", "-c", "exit 9"});
  ASSERT_EQ(job.exit_code, 0);
  EXPECT_EQ(Bai({"wait", "waited-job"}).exit_code, 9);
  // Ended sessions stay readable by name: info, logs, history.
  EXPECT_EQ(Bai({"session", "info", "waited-job"}).exit_code, 0);
  EXPECT_EQ(Bai({"session", "history", "waited-job"}).exit_code, 0);
}

TEST_F(SessionCliTest, ListsEveryPageAsJsonAndATableOtherwise) {
  for (int i = 0; i < 5; ++i) {
    auto r = Bai({"run", "--detach", "--name", "list-" + std::to_string(i), "--starts-at", "1h",
                  "python", "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto done = Bai({"run", "--name", "list-done", "python", "--", "true"});
  ASSERT_EQ(done.exit_code, 0);
  auto all = Bai({"-o", "json", "ps"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto j = json::parse(all.out);
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["total_count"], 5) << "ended sessions only with --all";
  ASSERT_EQ(j["items"].size(), 5u);
  EXPECT_EQ(j["items"][0]["name"], "list-4") << "newest first";
  EXPECT_EQ(j["items"][0]["requested_slots"]["mem"], 1073741824) << "bytes as integers";
  auto with_ended = json::parse(Bai({"-o", "json", "session", "ls", "--all"}).out);
  EXPECT_EQ(with_ended["total_count"], 6);
  auto limited = json::parse(Bai({"-o", "json", "ps", "--limit", "2", "--order", "+name"}).out);
  ASSERT_EQ(limited["items"].size(), 2u);
  EXPECT_EQ(limited["items"][0]["name"], "list-0");
  auto named = json::parse(Bai({"-o", "json", "ps", "--all", "--name", "done"}).out);
  ASSERT_EQ(named["items"].size(), 1u);
  EXPECT_EQ(named["items"][0]["job_exit_code"], 0);
  auto filtered = Bai({"-o", "json", "ps", "--filter", "name == \"list-2\""});
  EXPECT_EQ(json::parse(filtered.out)["items"].size(), 1u);
  auto status = json::parse(Bai({"-o", "json", "ps", "--status", "TERMINATED"}).out);
  EXPECT_EQ(status["total_count"], 1);
  // The table: a header and one row per session.
  auto table = Bai({"ps"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, ::testing::StartsWith("NAME "));
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 6);
  // A filter the server refuses is an error (exit 1), on stderr as JSON under -o json.
  auto bad = Bai({"-o", "json", "ps", "--filter", "nope == 1"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(bad.out.empty());
  EXPECT_THAT(json::parse(bad.err)["error"]["message"].get<std::string>(),
              HasSubstr("Unknown or unsupported field name \"nope\""));
}

TEST_F(SessionCliTest, GeneralFailuresMapToTheirExitCodes) {
  EXPECT_EQ(Bai({"session", "info", "no-such-session"}).exit_code, 5);
  auto wrong = env_;
  wrong["BACKEND_SECRET_KEY"] = std::string(40, 'x');
  auto denied = testing_util::RunProcess({testing_util::BinPath("bai"), "ps"}, wrong);
  EXPECT_EQ(denied.exit_code, 4) << denied.err;
  auto down = env_;
  down["BACKEND_ENDPOINT"] = "http://127.0.0.1:9";
  EXPECT_EQ(testing_util::RunProcess({testing_util::BinPath("bai"), "ps"}, down).exit_code, 7);
  EXPECT_EQ(Bai({"ps", "--limit", "0"}).exit_code, 2);
  EXPECT_EQ(Bai({"session", "create", "python", "-m", "data:p:rx"}).exit_code, 2);
  EXPECT_EQ(Bai({"session", "create", "python", "-m", "data:ro"}).exit_code, 5);  // no folder
}

TEST_F(SessionCliTest, EventsArriveAsNdjsonWhenPiped) {
  testing_util::BackgroundProcess events({testing_util::BinPath("bai"), "session", "events"}, env_);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(Bai({"run", "--name", "evented", "python", "--", "true"}).exit_code, 0);
  auto line = events.WaitForLine("session_terminated");
  ASSERT_FALSE(line.empty());
  auto e = json::parse(line);
  // One JSON contract (issue 43, item 11): a session named id/name as everywhere, the server's
  // camelCase fields in snake_case (they were passed through as sent).
  EXPECT_EQ(e["event"], "session_terminated");
  EXPECT_EQ(e["name"], "evented");
  EXPECT_EQ(e["id"].get<std::string>().size(), 36u) << line;
  EXPECT_TRUE(e.contains("reason") && e.contains("exit_code")) << line;
  for (auto const& [key, value] : e.items()) {
    EXPECT_EQ(key.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string::npos) << line;
  }
  EXPECT_FALSE(e.contains("sessionName") || e.contains("session_name")) << line;
  EXPECT_EQ(events.Stop(SIGINT), 130);
  // Hardening (new user): SIGTERM (a CI runner cancelling) is 143, as a shell reports it; it was
  // 130 as for Ctrl-C.
  testing_util::BackgroundProcess again({testing_util::BinPath("bai"), "session", "events"}, env_);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(again.Stop(SIGTERM), 143);
}

// Hardening (new user): `session create --name X` silently reused a running X, ignoring new
// -e/-r, and said "created". Reuse is explicit (--reuse) and says so; otherwise 6.
// Hardening (new user, 3): --dry-run said "fits" for a GPU on a cluster without GPUs, and for a
// request that left out its resources while no CPU was free (the server's defaults apply).
TEST_F(SessionCliTest, DryRunSaysWhatWouldNotFit) {
  auto fits = Bai({"session", "create", "--dry-run", "python"});
  EXPECT_EQ(fits.exit_code, 0) << fits.out << fits.err;
  EXPECT_THAT(fits.out, HasSubstr("fits: the server's defaults"));
  auto gpu =
      Bai({"-o", "json", "session", "create", "--dry-run", "-r", "cuda.shares=0.5", "python"});
  EXPECT_EQ(gpu.exit_code, 1) << gpu.out << gpu.err;
  auto g = json::parse(gpu.out);
  EXPECT_EQ(g["fits"], false);
  EXPECT_THAT(g["reason"].get<std::string>(),
              HasSubstr("no agent of the resource group offers cuda.shares"));
  // Every CPU taken (the agent has 4): a request without -r no longer fits.
  auto big = Bai({"session", "create", "python", "--name", "all-cpus", "-r", "cpu=4"});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  auto full = Bai({"session", "create", "--dry-run", "python"});
  EXPECT_EQ(full.exit_code, 1) << full.out << full.err;
  EXPECT_THAT(full.out, HasSubstr("does not fit: cpu=1 exceeds the resource group's free 0"));
  EXPECT_EQ(Bai({"session", "create", "--dry-run", "-r", "cpu=0.5", "python"}).exit_code, 1);
  EXPECT_EQ(Bai({"rm", "all-cpus"}).exit_code, 0);
}

TEST_F(SessionCliTest, ReusingARunningSessionIsExplicit) {
  ASSERT_EQ(Bai({"session", "create", "python", "--name", "reuse-me"}).exit_code, 0);
  auto again = Bai({"session", "create", "python", "--name", "reuse-me", "-r", "cpu=2"});
  EXPECT_EQ(again.exit_code, 6) << again.err;
  EXPECT_THAT(again.err, HasSubstr("exists"));
  EXPECT_THAT(again.err, HasSubstr("hint: --reuse"));
  auto reused = Bai({"-o", "json", "session", "create", "python", "--name", "reuse-me", "--reuse"});
  EXPECT_EQ(reused.exit_code, 0) << reused.err;
  EXPECT_EQ(json::parse(reused.out)["reused"], true);
  EXPECT_THAT(reused.err, HasSubstr("reused as it is"));
}

// Ctrl-C at any moment of `bai --debug run` ends it cleanly: exit 130 (or the job's own code if
// it was already done), never a crash, and no session is left running. Fifty runs, ten at a
// time, each interrupted after its own delay.
TEST_F(SessionCliTest, DebugRunSurvivesInterruptsAtAnyMoment) {
  for (int batch = 0; batch < 5; ++batch) {
    std::vector<std::unique_ptr<testing_util::BackgroundProcess>> runs;
    for (int i = 0; i < 10; ++i) {
      std::string name = "int-" + std::to_string(batch * 10 + i);
      // The debug log goes to /dev/null; `exec` keeps the signal for bai itself.
      runs.push_back(std::make_unique<testing_util::BackgroundProcess>(
          std::vector<std::string>{
              "/bin/sh", "-c",
              "exec \"$0\" --debug run --name " + name + " python -- true 2>/dev/null",
              testing_util::BinPath("bai")},
          env_));
    }
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3 + (batch * 10 + i) * 7 % 60));
      int code = runs[i]->Stop(SIGINT);
      EXPECT_TRUE(code == 130 || code == 0) << "run " << batch * 10 + i << " ended with " << code;
    }
  }
  auto left = json::parse(Bai({"-o", "json", "ps"}).out);
  for (auto const& s : left["items"]) {
    EXPECT_NE(s["status"], "RUNNING") << s["name"];
  }
}

// The same commands talk to people on a terminal and to programs through a pipe.
// bai exec -it: the command on a terminal in the session (the simulated agent's is its host's),
// typed input reaching it, its exit code passed through; refused politely without a terminal.
TEST_F(SessionCliTest, ExecItRunsTheCommandOnATerminal) {
  ASSERT_EQ(Bai({"session", "create", "--name", "tty-exec", "python"}).exit_code, 0);
  std::string exec = ShellJoin({testing_util::BinPath("bai"), "exec", "-it", "tty-exec", "--", "sh",
                                "-c", "read x; echo got-$x-$(tty | cut -c1-8); exit 5"});
  auto r = testing_util::RunProcess(
      {"/bin/bash", "-c",
       "(sleep 0.5; echo hello) | script -qefc " + ShellJoin({exec}) + " /dev/null"},
      env_);
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("got-hello-/dev/pts")) << "on a terminal of its own";
  auto missing = testing_util::RunProcess(
      {"/bin/bash", "-c",
       "script -qefc " +
           ShellJoin({ShellJoin({testing_util::BinPath("bai"), "exec", "-it", "tty-exec", "--",
                                 "no-such-program-here"})}) +
           " /dev/null"},
      env_);
  EXPECT_EQ(missing.exit_code, 127) << missing.out;
  EXPECT_THAT(missing.out, HasSubstr("no-such-program-here: cannot run it"));
  // Without a terminal: a usage error that says what to do; -i alone passes stdin on pipes
  // (issue 43, 8: it was refused), as without it.
  auto piped = Bai({"exec", "-it", "tty-exec", "--", "true"});
  EXPECT_EQ(piped.exit_code, 2);
  EXPECT_THAT(piped.err, HasSubstr("-t needs a terminal"));
  auto alone = Bai({"exec", "-i", "tty-exec", "--", "cat"}, "kept\n");
  EXPECT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(alone.out, "kept\n");
  Bai({"rm", "tty-exec"});
}

TEST_F(SessionCliTest, OnATerminalCommandsTalkToPeople) {
  // No sessions: said on a terminal, silent (empty output) in a pipe.
  auto none = OnTerminal(env_, {"ps"});
  EXPECT_EQ(none.exit_code, 0) << none.out;
  EXPECT_THAT(none.out, HasSubstr("no sessions"));
  auto none_piped = Bai({"ps"});
  EXPECT_EQ(none_piped.out, "");
  EXPECT_EQ(none_piped.err, "");
  // JSON answers: indented for a reader, one line for a program.
  auto pretty = OnTerminal(env_, {"api", "GET", "/"});
  EXPECT_THAT(pretty.out, HasSubstr("\n  \""));
  auto compact = Bai({"api", "GET", "/"});
  EXPECT_EQ(std::count(compact.out.begin(), compact.out.end(), '\n'), 1);
  // A table of sessions.
  ASSERT_EQ(Bai({"session", "create", "python", "--name", "tty-one"}).exit_code, 0);
  ASSERT_EQ(Bai({"session", "create", "python", "--name", "tty-two"}).exit_code, 0);
  auto table = OnTerminal(env_, {"ps"});
  EXPECT_THAT(table.out, HasSubstr("NAME"));
  EXPECT_THAT(table.out, HasSubstr("tty-one"));
  // rm says what it did on a terminal only.
  auto rm = OnTerminal(env_, {"rm", "tty-one"});
  EXPECT_EQ(rm.exit_code, 0) << rm.out;
  EXPECT_THAT(rm.out, HasSubstr("destroyed tty-one"));
  auto rm_piped = Bai({"rm", "tty-two"});
  EXPECT_EQ(rm_piped.exit_code, 0);
  EXPECT_EQ(rm_piped.out, "");
  // A batch job from a terminal: stdin is the terminal, not piped input, so it runs; its
  // exit code comes back through script(1).
  auto run = OnTerminal(env_, {"run", "python", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(run.exit_code, 3) << run.out;
  EXPECT_THAT(run.out, HasSubstr("exit 3"));
  // A usage error reads the same on both.
  auto usage = OnTerminal(env_, {"session", "wait"});
  EXPECT_EQ(usage.exit_code, 2) << usage.out;
}

}  // namespace
}  // namespace bai
