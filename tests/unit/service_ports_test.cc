// SPDX-License-Identifier: Apache-2.0
// The `ai.backend.service-ports` label and the /apps answer (bai/protocol/service_ports.h).
#include "bai/protocol/service_ports.h"

#include "bai/protocol/pty_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::protocol {
namespace {

using ::testing::HasSubstr;

TEST(ServicePortsTest, ParsesTheLabelAs2409) {
  auto ports = ParseServicePortsLabel(
      "jupyter:http:8080,tensorboard:http:6006,foo-bar:tcp:[9000,9001],shell:pty:9002,"
      "web:preopen:3000,",
      "tensorboard");
  ASSERT_TRUE(ports.ok()) << ports.status().message();
  ASSERT_EQ(ports->size(), 4u);  // the pty item is skipped
  EXPECT_EQ((*ports)[0].name, "jupyter");
  EXPECT_EQ((*ports)[0].protocol, "http");
  EXPECT_EQ((*ports)[0].container_ports, std::vector<int>{8080});
  EXPECT_FALSE((*ports)[0].is_inference);
  EXPECT_TRUE((*ports)[1].is_inference);
  EXPECT_EQ((*ports)[2].name, "foo-bar");
  EXPECT_EQ((*ports)[2].container_ports, (std::vector<int>{9000, 9001}));
  EXPECT_EQ((*ports)[3].protocol, "preopen");
  EXPECT_TRUE(ParseServicePortsLabel("")->empty());
}

TEST(ServicePortsTest, RefusesWhat2409RefusesWithItsMessages) {
  struct Case {
    char const* label;
    char const* message;
  } cases[] = {
      {"jupyter:http:7681", "reserved for internal use"},
      {"a:tcp:2000", "reserved for internal use"},
      {"a:tcp:2200", "reserved for internal use"},
      {"a:tcp:1024", "must be larger than 1024"},
      {"a:tcp:65535", "must be smaller than 65535"},
      {"a:tcp:99999999999", "must be smaller than 65535"},
      {"a:tcp:8080,b:http:8080", "already used by another service port"},
      {"a:udp:8080", "Unsupported service port protocol: udp"},
      {"a:http", "Invalid service-ports format"},
      {"a:http:80a", "Invalid service-ports format"},
      {"a:http:[8080,]", "Invalid service-ports format"},
      {"a b:http:8080", "Invalid service-ports format"},
      {":http:8080", "Invalid service-ports format"},
  };
  for (auto const& c : cases) {
    auto ports = ParseServicePortsLabel(c.label);
    ASSERT_FALSE(ports.ok()) << c.label;
    EXPECT_EQ(ports.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(ports.status().message(), HasSubstr(c.message)) << c.label;
  }
  for (int p : {2000, 2001, 2002, 2003, 2200, 7681}) EXPECT_TRUE(IsReservedServicePort(p)) << p;
  EXPECT_FALSE(IsReservedServicePort(8080));
}

TEST(ServicePortsTest, TheAppsAnswerRoundTrips) {
  ServicePort jupyter{
      "jupyter",   "http", {8080}, false, "http://{host}:{port}/", {"--NotebookApp.token"},
      {"PASSWORD"}};
  ServicePort tcp{"db", "tcp", {5432, 5433}, false, std::nullopt, {}, {}};
  auto text = EncodeApps({jupyter, tcp});
  EXPECT_EQ(
      text,
      R"j([{"allowed_arguments":["--NotebookApp.token"],"allowed_envs":["PASSWORD"],"name":"jupyter","ports":[8080],"protocol":"http","url_template":"http://{host}:{port}/"},{"name":"db","ports":[5432,5433],"protocol":"tcp"}])j");
  auto back = DecodeApps(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].url_template, "http://{host}:{port}/");
  EXPECT_EQ((*back)[0].allowed_envs, std::vector<std::string>{"PASSWORD"});
  EXPECT_EQ((*back)[1].container_ports, (std::vector<int>{5432, 5433}));
  EXPECT_FALSE(DecodeApps("{}").ok());
  EXPECT_FALSE(DecodeApps(R"([{"protocol": "http"}])").ok());
}

TEST(PtyWireTest, FramesRoundTripWithBytesInBase64) {
  std::string bytes("\x03\x1b[A\xff\x00", 6);  // Ctrl-C, an arrow key, non-UTF-8, NUL
  auto text = EncodePtyFrame({PtyFrame::Type::kStdin, bytes});
  EXPECT_EQ(text, R"({"chars":"AxtbQf8A","type":"stdin"})");
  auto back = DecodePtyFrame(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, PtyFrame::Type::kStdin);
  EXPECT_EQ(back->data, bytes);
  back = DecodePtyFrame(EncodePtyFrame({PtyFrame::Type::kResize, "", 40, 132}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->rows, 40);
  EXPECT_EQ(back->cols, 132);
  back = DecodePtyFrame(EncodePtyFrame({PtyFrame::Type::kExit, "", 0, 0, 130}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->code, 130);
  back = DecodePtyFrame(R"({"type":"out","data":"aGk="})");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data, "hi");
  for (auto const* bad :
       {"", "[]", R"({"type":"shout"})", R"({"type":"stdin","chars":"%%%"})", R"({"type":"stdin"})",
        R"({"type":"resize","rows":0,"cols":80})", R"({"type":"resize","rows":24,"cols":"80"})"}) {
    EXPECT_FALSE(DecodePtyFrame(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace bai::protocol
