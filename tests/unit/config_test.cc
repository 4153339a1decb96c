// SPDX-License-Identifier: Apache-2.0
#include "bai/config.h"

#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

namespace bai {
namespace {

using testing_util::TempDir;

void Write(std::string const& path, std::string const& text) { std::ofstream(path) << text; }

ConfigSources Sources(std::string const& dir, std::map<std::string, std::string> env = {}) {
  ConfigSources s;
  s.config_dir = dir;
  s.environment = std::move(env);
  return s;
}

TEST(ConfigTest, DefaultsWithoutFiles) {
  TempDir dir;
  auto c = ResolveConfig(Sources(dir.path()));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->profile, "default");
  EXPECT_EQ(c->values.at("endpoint").value, "http://127.0.0.1:8081");
  EXPECT_EQ(c->values.at("endpoint").source, "default");
  EXPECT_EQ(c->values.at("domain").value, "");  // the user's own domain
  EXPECT_EQ(c->values.size(), ConfigKeys().size());
}

TEST(ConfigTest, PrecedenceFlagsOverEnvOverProfileOverDefaults) {
  TempDir dir;
  Write(dir.path() + "/config.toml", R"(
default_profile = "work"
[profile.work]
endpoint = "http://profile:1"
access_key = "AKIAPROFILE"
domain = "profdomain"
group = "profgroup"
connect_timeout = 3
[profile.other]
endpoint = "http://other:2"
)");
  Write(dir.path() + "/credentials.toml", "[profile.work]\nsecret_key = \"profile-secret\"\n");
  ::chmod((dir.path() + "/credentials.toml").c_str(), 0600);

  auto c = ResolveConfig(Sources(dir.path()));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->profile, "work");
  EXPECT_EQ(c->values.at("endpoint").value, "http://profile:1");
  EXPECT_EQ(c->values.at("endpoint").source, "profile work");
  EXPECT_EQ(c->values.at("secret_key").value, "profile-secret");
  EXPECT_EQ(c->values.at("connect_timeout").value, "3");
  EXPECT_TRUE(c->warnings.empty());

  auto env = Sources(dir.path(), {{"BACKEND_ENDPOINT", "http://env:3"},
                                  {"SORNA_DOMAIN", "sornadomain"},
                                  {"BACKEND_ACCESS_KEY", "AKIAENV"}});
  c = ResolveConfig(env);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->values.at("endpoint").value, "http://env:3");
  EXPECT_EQ(c->values.at("endpoint").source, "env BACKEND_ENDPOINT");
  EXPECT_EQ(c->values.at("domain").value, "sornadomain");
  EXPECT_EQ(c->values.at("group").value, "profgroup");
  EXPECT_EQ(c->values.at("access_key").value, "AKIAENV");

  env.flags["endpoint"] = "http://flag:4";
  c = ResolveConfig(env);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->values.at("endpoint").value, "http://flag:4");
  EXPECT_EQ(c->values.at("endpoint").source, "flag");

  // --profile beats BAI_PROFILE beats default_profile.
  auto by_env = Sources(dir.path(), {{"BAI_PROFILE", "other"}});
  c = ResolveConfig(by_env);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->profile, "other");
  EXPECT_EQ(c->values.at("endpoint").value, "http://other:2");
  by_env.profile = "work";
  EXPECT_EQ(ResolveConfig(by_env)->profile, "work");
  by_env.profile = "missing";
  EXPECT_EQ(ResolveConfig(by_env).status().code(), StatusCode::kNotFound);
}

TEST(ConfigTest, ToOptionsSplitsEndpointsAndParsesValues) {
  TempDir dir;
  auto s = Sources(dir.path(), {{"BACKEND_ENDPOINT", "http://a:1, http://b:2/base"},
                                {"BACKEND_SKIP_SSLCERT_VALIDATION", "yes"},
                                {"BACKEND_READ_TIMEOUT", "2.5"}});
  auto c = ResolveConfig(s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto o = c->ToOptions();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->endpoints, (std::vector<std::string>{"http://a:1", "http://b:2/base"}));
  EXPECT_FALSE(o->verify_tls);
  EXPECT_EQ(o->read_timeout.count(), 2500);
  EXPECT_EQ(o->connect_timeout.count(), 10000);
}

TEST(ConfigTest, InvalidValuesNameTheSource) {
  TempDir dir;
  for (auto const& [var, value] : std::vector<std::pair<std::string, std::string>>{
           {"BACKEND_ENDPOINT", "localhost:8081"},
           {"BACKEND_CONNECTION_TIMEOUT", "soon"},
           {"BACKEND_SKIP_SSLCERT_VALIDATION", "maybe"},
           {"BACKEND_ENDPOINT_TYPE", "session"}}) {
    auto c = ResolveConfig(Sources(dir.path(), {{var, value}}));
    ASSERT_FALSE(c.ok()) << var;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(var), std::string::npos) << c.status().message();
  }
}

TEST(ConfigTest, MalformedFileNamesFileAndLine) {
  TempDir dir;
  Write(dir.path() + "/config.toml", "[profile.x]\nendpoint = \"http://a\"\nbroken = = 1\n");
  auto c = ResolveConfig(Sources(dir.path()));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("config.toml:3"), std::string::npos) << c.status().message();
}

TEST(ConfigTest, SetKeepsOtherEntriesAndSecretsGoTo0600File) {
  TempDir dir;
  std::string d = dir.path() + "/nested/bai";
  ASSERT_TRUE(SetConfigValue(d, "local", "endpoint", "http://127.0.0.1:9").ok());
  ASSERT_TRUE(SetConfigValue(d, "local", "access_key", "AKIALOCAL").ok());
  ASSERT_TRUE(SetConfigValue(d, "local", "secret_key", "s3cr3t-value-0123456789").ok());
  ASSERT_TRUE(SetConfigValue(d, "other", "domain", "d2").ok());
  ASSERT_TRUE(SetConfigValue(d, "ignored", "default_profile", "local").ok());

  struct stat st {};
  ASSERT_EQ(::stat((d + "/credentials.toml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream config(d + "/config.toml");
  std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << "secret leaked into config.toml";

  auto c = ResolveConfig(Sources(d));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->profile, "local");
  EXPECT_EQ(c->values.at("endpoint").value, "http://127.0.0.1:9");
  EXPECT_EQ(c->values.at("access_key").value, "AKIALOCAL");
  EXPECT_EQ(c->values.at("secret_key").value, "s3cr3t-value-0123456789");
  auto other = Sources(d);
  other.profile = "other";
  EXPECT_EQ(ResolveConfig(other)->values.at("domain").value, "d2");

  EXPECT_EQ(SetConfigValue(d, "local", "no_such_key", "1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetConfigValue(d, "local", "endpoint", "nope").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetConfigValue(d, "bad.name", "domain", "x").code(), StatusCode::kInvalidArgument);
}

TEST(ConfigTest, WarnsAboutReadableCredentials) {
  TempDir dir;
  Write(dir.path() + "/credentials.toml", "[profile.default]\nsecret_key = \"x\"\n");
  ::chmod((dir.path() + "/credentials.toml").c_str(), 0644);
  auto c = ResolveConfig(Sources(dir.path()));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("chmod 600"), std::string::npos);
}

TEST(ConfigTest, MaskSecretHidesTheValue) {
  EXPECT_EQ(MaskSecret(""), "");
  EXPECT_EQ(MaskSecret("short"), "****");
  auto masked = MaskSecret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
  EXPECT_EQ(masked.find("EXAMPLEKEY"), std::string::npos);
  EXPECT_NE(masked.find("40"), std::string::npos);
}

}  // namespace
}  // namespace bai
