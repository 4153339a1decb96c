// SPDX-License-Identifier: Apache-2.0
// The daemons' log: the shape of a text and a JSON line (escaping, bare numbers, reserved
// names), option checks, a file rotated by size, levels filtered.
#include "server-reference/common/log/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::server::log {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 2026-11-28T01:40:05.042Z
std::chrono::system_clock::time_point Moment() {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(1795830005042LL));
}

TEST(LogTest, ATextLineHasTimeLevelDaemonMessageAndQuotedFields) {
  Fields fields{{"route", "/session/{id}"},
                {"status", 503},
                {"reason", "database \"gone\""},
                {"empty", ""},
                {"ok", true}};
  Record r{Moment(), Level::kWarn, "bai-manager", "request failed\nsecond line", &fields};
  EXPECT_EQ(FormatText(r),
            "2026-11-28T01:40:05.042Z WARN bai-manager: request failed\\nsecond line "
            "route=/session/{id} status=503 reason=\"database \\\"gone\\\"\" empty=\"\" ok=true");
}

TEST(LogTest, AJsonLineParsesBackWithTypedFieldsAndReservedNamesMoved) {
  Fields fields{{"status", 503},      {"agent", "node-1"}, {"msg", "a field named msg"},
                {"bytes", -12},       {"up", false},       {"bad", std::string("\xff\xfe")},
                {"text", "tab\there"}};
  Record r{Moment(), Level::kError, "bai-agent", "link \"lost\"", &fields};
  auto line = FormatJson(r);
  EXPECT_THAT(line, Not(HasSubstr("\n")));
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["time"], "2026-11-28T01:40:05.042Z");
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["daemon"], "bai-agent");
  EXPECT_EQ(j["msg"], "link \"lost\"");
  EXPECT_EQ(j["status"], 503);
  EXPECT_EQ(j["bytes"], -12);
  EXPECT_EQ(j["up"], false);
  EXPECT_EQ(j["agent"], "node-1");
  EXPECT_EQ(j["field.msg"], "a field named msg");
  EXPECT_EQ(j["text"], "tab\there");
  EXPECT_TRUE(j["bad"].is_string());  // invalid UTF-8 replaced, never a broken line
  // Keys in the order written: the four first.
  EXPECT_EQ(line.rfind("{\"time\":", 0), 0U);
}

TEST(LogTest, OptionsAreCheckedAndNamed) {
  Options o;
  o.level = "verbose";
  EXPECT_THAT(Init("t", o).message(), HasSubstr("--log-level"));
  o = {};
  o.format = "xml";
  EXPECT_THAT(Init("t", o).message(), HasSubstr("--log-format"));
  o = {};
  o.max_size = "12";
  EXPECT_THAT(Init("t", o).message(), HasSubstr("--log-max-size"));
  o = {};
  o.max_files = 0;
  EXPECT_THAT(Init("t", o).message(), HasSubstr("--log-max-files"));
  o = {};
  o.file = "/dev/null/bai.log";  // a directory that cannot be
  EXPECT_THAT(Init("t", o).message(), HasSubstr("--log-file"));
}

class LogFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("bai-log-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    ASSERT_TRUE(Init("bai", Options{}).ok());  // back to stderr for the other tests
    std::filesystem::remove_all(dir_);
  }
  static std::vector<std::string> Lines(std::filesystem::path const& file) {
    std::ifstream in(file);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  std::filesystem::path dir_;
};

TEST_F(LogFileTest, LevelsBelowTheChosenOneAreLeftOut) {
  Options o;
  o.file = (dir_ / "d.log").string();
  o.level = "warn";
  o.format = "json";
  ASSERT_TRUE(Init("bai-storage", o).ok());
  EXPECT_FALSE(Enabled(Level::kInfo));
  Info("not written");
  Warn("written", {{"n", 1}});
  Error("also written");
  auto lines = Lines(dir_ / "d.log");
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["msg"], "written");
  EXPECT_EQ(nlohmann::json::parse(lines[0])["daemon"], "bai-storage");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["level"], "error");
}

TEST_F(LogFileTest, AFileIsRotatedBySizeAndOnlyMaxFilesAreKept) {
  Options o;
  o.file = (dir_ / "r.log").string();
  o.max_size = "4k";
  o.max_files = 2;
  ASSERT_TRUE(Init("bai-manager", o).ok());
  for (int i = 0; i < 400; ++i) Info("line", {{"i", i}, {"pad", std::string(40, 'x')}});
  std::vector<std::string> names;
  for (auto const& e : std::filesystem::directory_iterator(dir_)) {
    names.push_back(e.path().filename().string());
    EXPECT_LE(e.file_size(), 4096U) << e.path();
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"r.1.log", "r.2.log", "r.log"}));
  // The newest lines are in the current file, the last one last.
  auto lines = Lines(dir_ / "r.log");
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.back(), HasSubstr(" i=399 "));
  EXPECT_THAT(lines.back(), HasSubstr("INFO bai-manager: line"));
}

}  // namespace
}  // namespace bai::server::log
