// SPDX-License-Identifier: Apache-2.0
// `-o json` is one dialect: every command writes exactly one JSON object on stdout carrying the
// exit code it exits with, and each noun (a session, a folder) has the one shape that
// cli/output_schema.h defines and `bai help output` prints, wherever it appears.
#include "cli/output_schema.h"

#include "tests/testing_util/local_cluster.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <span>
#include <thread>

namespace bai {
namespace {

using nlohmann::json;
namespace schema = cli::output_schema;

using OutputSchemaTest = testing_util::LocalCluster;

bool HasType(json const& v, std::string_view type) {
  bool nullable = !type.empty() && type.back() == '?';
  if (nullable) type.remove_suffix(1);
  if (v.is_null()) return nullable;
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return false;
}

// Every field of `fields` present with its type; camelCase twins are a second dialect.
void ExpectShape(json const& j, std::span<schema::Field const> fields, std::string const& where) {
  ASSERT_TRUE(j.is_object()) << where << ": " << j.dump();
  for (auto const& f : fields) {
    std::string name(f.name);
    ASSERT_TRUE(j.contains(name)) << where << ": no \"" << name << "\" in " << j.dump();
    EXPECT_TRUE(HasType(j[name], f.type))
        << where << ": \"" << name << "\" is not " << f.type << " in " << j.dump();
  }
  for (auto const& [key, value] : j.items()) {
    EXPECT_EQ(key.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string::npos)
        << where << ": \"" << key << "\" is not snake_case";
  }
}

TEST_F(OutputSchemaTest, EveryCommandWritesOneObjectWithItsExitCodeAndOneShapePerNoun) {
  std::ofstream(dir_.path() + "/in.txt") << "data\n";
  // Each command as a user types it; the object it writes, checked whole.
  struct Case {
    std::vector<std::string> args;
    int exit_code;
  };
  std::vector<Case> cases = {
      {{"version"}, 0},
      {{"config", "list"}, 0},
      {{"config", "get", "endpoint"}, 0},
      {{"run", "--name", "schema-job", "python", "--", "sh", "-c", "exit 3"}, 3},
      {{"session", "create", "--name", "schema-live", "python"}, 0},
      {{"ps", "--all"}, 0},
      {{"session", "ls"}, 0},
      {{"session", "info", "schema-job"}, 0},
      {{"wait", "schema-job"}, 3},  // the job's own code, as `bai help exit-codes` says
      {{"wait", "schema-live", "--for", "running", "--timeout", "30s"}, 0},
      {{"logs", "schema-job"}, 0},
      {{"session", "history", "schema-job"}, 0},
      {{"session", "rename", "schema-live", "schema-live2"}, 0},
      {{"rm", "schema-live2"}, 0},
      {{"rm", "no-such-session"}, 5},
      {{"vfolder", "create", "schema-vf"}, 0},
      {{"vfolder", "info", "schema-vf"}, 0},
      {{"vfolder", "list"}, 0},
      {{"vfolder", "mkdir", "schema-vf", "d"}, 0},
      {{"cp", dir_.path() + "/in.txt", "schema-vf:d/"}, 0},
      {{"vfolder", "files", "schema-vf", "d"}, 0},
  };
  std::map<std::string, json> out;
  for (auto const& c : cases) {
    std::vector<std::string> args = {"-o", "json"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = Bai(args);
    std::string line;
    for (auto const& a : c.args) line += (line.empty() ? "" : " ") + a;
    EXPECT_EQ(r.exit_code, c.exit_code) << line << "\n" << r.err;
    // One document, one line, an object.
    ASSERT_FALSE(r.out.empty()) << line << " wrote nothing on stdout\n" << r.err;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << line << ": not one line:\n" << r.out;
    auto j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line << ": not a JSON object: " << r.out;
    ASSERT_TRUE(j.contains("exit_code") && j["exit_code"].is_number_integer())
        << line << ": no exit_code: " << r.out;
    EXPECT_EQ(j["exit_code"], r.exit_code) << line;
    EXPECT_FALSE(j.contains("exitCode")) << line << ": two spellings of one field";
    out[line] = j;
  }
  // A session is "id" and "name" wherever a command names one (run, create; issue 43, item 11:
  // they said session_id/session_name).
  for (auto const* named : {"run --name schema-job python -- sh -c exit 3",
                            "session create --name schema-live python"}) {
    EXPECT_TRUE(out[named]["id"].is_string()) << named << ": " << out[named].dump();
    EXPECT_TRUE(out[named]["name"].is_string()) << named << ": " << out[named].dump();
    EXPECT_FALSE(out[named].contains("session_id")) << named;
  }
  EXPECT_EQ(out["session create --name schema-live python"]["name"], "schema-live");
  // Sessions: one shape in a listing, in info, in wait's results.
  auto const& ps = out["ps --all"];
  ASSERT_TRUE(ps.contains("items"));
  EXPECT_GE(ps["items"].size(), 2u);
  for (auto const& item : ps["items"]) ExpectShape(item, schema::kSession, "ps item");
  for (auto const& item : out["session ls"]["items"]) {
    ExpectShape(item, schema::kSession, "session ls item");
  }
  auto const& info = out["session info schema-job"];
  ExpectShape(info, schema::kSession, "session info");
  ExpectShape(info, schema::kSessionDetail, "session info");
  EXPECT_EQ(info["job_exit_code"], 3);
  EXPECT_EQ(info["type"], "BATCH");
  EXPECT_EQ(info["result"], "FAILURE");
  EXPECT_TRUE(info["requested_slots"]["cpu"].is_number()) << "slots are numbers";
  for (auto const* waited : {"wait schema-job", "wait schema-live --for running --timeout 30s"}) {
    ASSERT_EQ(out[waited]["sessions"].size(), 1u) << waited;
    ExpectShape(out[waited]["sessions"][0], schema::kSession, waited);
  }
  EXPECT_EQ(out["wait schema-job"]["sessions"][0]["job_exit_code"], 3);
  // The same session read two ways gives the same fields the same values.
  for (auto const& item : ps["items"]) {
    if (item["name"] != "schema-job") continue;
    for (auto const& f : schema::kSession) {
      std::string name(f.name);
      EXPECT_EQ(item[name], info[name]) << "ps and info disagree on " << name;
    }
  }
  // Folders: create answers what info and list show.
  auto const& created = out["vfolder create schema-vf"];
  auto const& folder = out["vfolder info schema-vf"];
  ExpectShape(created, schema::kFolder, "vfolder create");
  ExpectShape(folder, schema::kFolder, "vfolder info");
  for (auto const& item : out["vfolder list"]["folders"]) {
    ExpectShape(item, schema::kFolder, "vfolder list item");
  }
  for (auto const& f : schema::kFolder) {
    std::string name(f.name);
    if (name == "num_files" || name == "used_bytes") continue;  // changes with its contents
    EXPECT_EQ(created[name], folder[name]) << "create and info disagree on " << name;
  }
  EXPECT_TRUE(created["is_owner"].get<bool>());
  EXPECT_NE(created["created_at"], "");
  // With files in it, a listing counts them as info does (issue 43, item 11: ls said 0).
  auto listed = json::parse(Bai({"-o", "json", "vfolder", "list"}).out, nullptr, false);
  auto filled =
      json::parse(Bai({"-o", "json", "vfolder", "info", "schema-vf"}).out, nullptr, false);
  ASSERT_TRUE(listed.is_object() && filled.is_object());
  EXPECT_GE(filled["num_files"].get<std::int64_t>(), 1) << filled.dump();
  bool seen = false;
  for (auto const& item : listed["folders"]) {
    if (item["name"] != "schema-vf") continue;
    seen = true;
    EXPECT_EQ(item["num_files"], filled["num_files"]) << item.dump() << "\n" << filled.dump();
    EXPECT_EQ(item["used_bytes"], filled["used_bytes"]) << item.dump() << "\n" << filled.dump();
  }
  EXPECT_TRUE(seen);
  // Events: one line per event, its shape (a stream of the session this test ran).
  testing_util::BackgroundProcess events(
      {testing_util::BinPath("bai"), "-o", "json", "session", "events"}, env_);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(Bai({"run", "--name", "schema-events", "python", "--", "true"}).exit_code, 0);
  auto event_line = events.WaitForLine("session_terminated");
  ASSERT_FALSE(event_line.empty());
  ExpectShape(json::parse(event_line, nullptr, false), schema::kEvent, "session events");
  events.Stop(SIGINT);
  // What `bai help output` documents is this schema.
  auto help = Bai({"help", "output"});
  for (std::span<schema::Field const> nouns :
       {std::span<schema::Field const>(schema::kSession),
        std::span<schema::Field const>(schema::kSessionDetail),
        std::span<schema::Field const>(schema::kFolder),
        std::span<schema::Field const>(schema::kEvent)}) {
    for (auto const& f : nouns) {
      EXPECT_THAT(help.out, ::testing::HasSubstr(std::string(f.name) + " (" + std::string(f.type)))
          << "bai help output does not document " << f.name;
    }
  }
}

// What GraphQL carries as JSON text is an object in bai's output, and slot maps hold numbers
// (null: unlimited) wherever they appear (issue 43, item 11: domains and projects printed
// "total_resource_slots": "{}", policies were JSON in a string).
void ExpectNoJsonText(json const& j, std::string const& where, std::string const& key = "") {
  if (j.is_string()) {
    auto const& text = j.get_ref<std::string const&>();
    if (!text.empty() && (text.front() == '{' || text.front() == '[')) {
      EXPECT_TRUE(json::parse(text, nullptr, false).is_discarded())
          << where << ": \"" << key << "\" is JSON in a string: " << text;
    }
    return;
  }
  bool slots = key.size() > 6 && key.compare(key.size() - 6, 6, "_slots") == 0;
  if (j.is_object() && slots) {
    for (auto const& [k, v] : j.items()) {
      EXPECT_TRUE(v.is_number() || v.is_null())
          << where << ": " << key << "." << k << " is " << v.dump() << ", not a number";
    }
  }
  if (j.is_object()) {
    for (auto const& [k, v] : j.items()) ExpectNoJsonText(v, where, k);
  } else if (j.is_array()) {
    for (auto const& v : j) ExpectNoJsonText(v, where, key);
  }
}

TEST_F(OutputSchemaTest, EachAdministrationNounHasOneShapeWithObjectsAndNumbers) {
  auto run = [&](std::vector<std::string> args) {
    std::string line;
    for (auto const& a : args) line += (line.empty() ? "" : " ") + a;
    args.insert(args.begin(), {"-o", "json", "admin"});
    auto r = Bai(args);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << line << ": not one line:\n" << r.out;
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << line << ": " << r.out;
    if (!j.is_object()) return json::object();
    EXPECT_EQ(j["exit_code"], 0) << line;
    ExpectNoJsonText(j, line);
    return j;
  };
  // Something in each listing, with slot limits set where a noun has them.
  auto domain = run({"domain", "create", "schema-dom", "--slots", "cpu=4,mem=8g"});
  ExpectShape(domain["domain"], schema::kDomain, "domain create");
  EXPECT_EQ(domain["domain"]["total_resource_slots"]["cpu"], 4) << domain.dump();
  EXPECT_EQ(domain["domain"]["total_resource_slots"]["mem"], std::int64_t{8} << 30);
  auto project =
      run({"project", "create", "schema-proj", "--domain", "schema-dom", "--slots", "cpu=2"});
  ExpectShape(project["project"], schema::kProject, "project create");
  EXPECT_EQ(project["project"]["total_resource_slots"]["cpu"], 2) << project.dump();
  auto preset = run(
      {"preset", "create", "schema-small", "--slots", "cpu=1,mem=1g", "--shared-memory", "64m"});
  ExpectShape(preset["preset"], schema::kPreset, "preset create");
  EXPECT_EQ(preset["preset"]["shared_memory"], 64 << 20) << preset.dump();
  run({"policy", "create", "schema-pol", "--slots", "cpu=8", "--max-sessions", "3"});

  struct Listing {
    std::vector<std::string> args;
    std::string plural;
    std::span<schema::Field const> shape;
  };
  std::vector<Listing> listings = {
      {{"domain", "ls"}, "domains", schema::kDomain},
      {{"project", "ls"}, "projects", schema::kProject},
      {{"user", "ls"}, "users", schema::kUser},
      {{"keypair", "ls"}, "keypairs", schema::kKeypair},
      {{"policy", "ls"}, "policies", schema::kKeypairPolicy},
      {{"user-policy", "ls"}, "policies", schema::kScopePolicy},
      {{"project-policy", "ls"}, "policies", schema::kScopePolicy},
      {{"agent", "ls"}, "agents", schema::kAgent},
      {{"image", "ls"}, "images", schema::kImage},
      {{"preset", "ls"}, "presets", schema::kPreset},
  };
  std::map<std::string, json> seen;
  for (auto const& l : listings) {
    auto j = run(l.args);
    std::string where = l.args[0] + " ls";
    ASSERT_TRUE(j.contains(l.plural) && j[l.plural].is_array()) << where << ": " << j.dump();
    EXPECT_FALSE(j[l.plural].empty()) << where << " lists nothing";
    for (auto const& item : j[l.plural]) ExpectShape(item, l.shape, where + " item");
    seen[l.args[0]] = j[l.plural];
  }
  // A listing says what create made, in the same shape.
  auto find = [](json const& items, std::string const& name) {
    for (auto const& i : items) {
      if (i.value("name", "") == name) return i;
    }
    return json();
  };
  EXPECT_EQ(find(seen["domain"], "schema-dom"), domain["domain"]);
  EXPECT_EQ(find(seen["project"], "schema-proj")["total_resource_slots"],
            project["project"]["total_resource_slots"]);
  EXPECT_EQ(find(seen["preset"], "schema-small"), preset["preset"]);
  auto policy = find(seen["policy"], "schema-pol");
  EXPECT_EQ(policy["total_resource_slots"]["cpu"], 8) << policy.dump();
  EXPECT_EQ(policy["max_concurrent_sessions"], 3) << policy.dump();
  // The agent's slots as numbers: 4 CPUs and its memory in bytes (LocalCluster's agent).
  auto const& agent = seen["agent"][0];
  EXPECT_TRUE(agent["available_slots"]["cpu"].is_number()) << agent.dump();
  EXPECT_TRUE(agent["available_slots"]["mem"].is_number_integer()) << agent.dump();
  // `bai help output` documents each of these shapes.
  auto help = Bai({"help", "output"});
  for (auto const& l : listings) {
    for (auto const& f : l.shape) {
      EXPECT_THAT(help.out, ::testing::HasSubstr(std::string(f.name) + " (" + std::string(f.type)))
          << "bai help output does not document " << l.args[0] << "'s " << f.name;
    }
  }
}

}  // namespace
}  // namespace bai
