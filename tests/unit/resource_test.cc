// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/resource.h"

#include "libbai/protocol/wire_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::protocol {
namespace {

Decimal D(char const* text) {
  auto d = Decimal::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? *d : Decimal();
}

TEST(DecimalTest, ParsesAndPrintsCanonically) {
  struct Case {
    char const* in;
    char const* out;
  };
  for (auto const& c :
       std::vector<Case>{{"2", "2"},
                         {"0", "0"},
                         {"-0", "0"},
                         {"+4", "4"},
                         {"1.5", "1.5"},
                         {"1.500000", "1.5"},
                         {"0.000001", "0.000001"},
                         {"-0.25", "-0.25"},
                         {".5", "0.5"},
                         {"5.", "5"},
                         {"1e3", "1000"},
                         {"1.25E2", "125"},
                         {"25e-6", "0.000025"},
                         {"1.5000000", "1.5"},
                         {"Infinity", "Infinity"},
                         {"inf", "Infinity"},
                         {"INFINITY", "Infinity"},
                         {"9999999999999999999999999999999", "9999999999999999999999999999999"}}) {
    EXPECT_EQ(D(c.in).ToString(), c.out) << c.in;
  }
}

TEST(DecimalTest, RefusesWhatItCannotRepresentExactly) {
  for (char const* text :
       {"",          "-",     ".",         "abc",       "1.2.3", "1e",
        "1e+",       "0x10",  " 1",        "1 ",        "1,5",   "NaN",
        "-Infinity", "-inf",  "0.0000001", "1.1234567", "1e-7",  "10000000000000000000000000000000",
        "1e31",      "1e999", "1_000"}) {
    auto d = Decimal::Parse(text);
    EXPECT_FALSE(d.ok()) << "accepted \"" << text << "\"";
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(d.status().message().find(std::string("\"") + text + "\""), std::string::npos)
          << d.status().message();
    }
  }
}

TEST(DecimalTest, ExactArithmetic) {
  // 0.1 + 0.2 is exactly 0.3 (no binary floating point anywhere).
  EXPECT_EQ(D("0.1").Add(D("0.2"))->ToString(), "0.3");
  EXPECT_EQ(*D("0.1").Add(D("0.2")), D("0.3"));
  Decimal total;
  for (int i = 0; i < 10; ++i) total = *total.Add(D("0.1"));
  EXPECT_EQ(total, D("1"));
  EXPECT_EQ(D("2").Sub(D("2.5"))->ToString(), "-0.5");
  EXPECT_TRUE(D("Infinity").Add(D("5"))->is_unlimited());
  EXPECT_TRUE(D("Infinity").Sub(D("5"))->is_unlimited());
  EXPECT_FALSE(D("5").Sub(D("Infinity")));
  EXPECT_FALSE(D("Infinity").Sub(D("Infinity")));
  auto big = D("9999999999999999999999999999999");
  EXPECT_FALSE(big.Add(big)) << "overflow must be reported";
}

TEST(DecimalTest, OrderingPutsUnlimitedLast) {
  EXPECT_LT(D("1"), D("1.000001"));
  EXPECT_LT(D("-1"), D("0"));
  EXPECT_LT(D("1e30"), Decimal::Unlimited());
  EXPECT_FALSE(Decimal::Unlimited() < Decimal::Unlimited());
  EXPECT_EQ(Decimal::Unlimited(), D("inf"));
  EXPECT_EQ(D("1.5").Floor().ToString(), "1");
  EXPECT_EQ(D("-1.5").Floor().ToString(), "-2");
  EXPECT_EQ(D("3").Floor().ToString(), "3");
}

TEST(SizeTest, BinarySuffixesAndRounding) {
  struct Case {
    char const* in;
    char const* bytes;
  };
  for (auto const& c : std::vector<Case>{{"4096", "4096"},
                                         {"0", "0"},
                                         {"1k", "1024"},
                                         {"1K", "1024"},
                                         {"512m", "536870912"},
                                         {"4g", "4294967296"},
                                         {"4G", "4294967296"},
                                         {"4gb", "4294967296"},
                                         {"4GB", "4294967296"},
                                         {"4gi", "4294967296"},
                                         {"4GiB", "4294967296"},
                                         {"4gib", "4294967296"},
                                         {"1.5t", "1649267441664"},
                                         {"1.3g", "1395864371"},  // 1.3 × 2^30 = …371.2, down
                                         {"1p", "1125899906842624"},
                                         {"1e", "1152921504606846976"},
                                         {"2b", "2"},
                                         {"1.5", "1"},
                                         {"0.5k", "512"}}) {
    auto size = ParseBinarySize(c.in);
    ASSERT_TRUE(size.ok()) << c.in << ": " << size.status().message();
    EXPECT_EQ(size->ToString(), c.bytes) << c.in;
  }
}

TEST(SizeTest, RejectsBadSizesNamingTheText) {
  for (char const* text :
       {"", "g", "4x", "4 g", "-1g", "+1g", "4gg", "4ib", "4i", "4.g.", "1.g", ".5g", "4kb2", "4e3",
        "1,5g", "1gibb", "99999999999999999999999999e", "0.0000001g"}) {
    auto size = ParseBinarySize(text);
    EXPECT_FALSE(size.ok()) << "accepted \"" << text << "\"";
    if (!size.ok()) {
      EXPECT_NE(size.status().message().find(std::string("\"") + text + "\""), std::string::npos)
          << size.status().message();
    }
  }
}

TEST(SlotsTest, ParseAssignmentsUsesSlotTypes) {
  ResourceSlots slots;
  ASSERT_TRUE(ParseSlotAssignment("cpu=2,mem=4g", slots).ok());
  ASSERT_TRUE(ParseSlotAssignment("cuda.shares=0.5", slots).ok());
  EXPECT_EQ(slots["cpu"].ToString(), "2");
  EXPECT_EQ(slots["mem"].ToString(), "4294967296");
  EXPECT_EQ(slots["cuda.shares"].ToString(), "0.5");
  for (char const* bad : {"cpu", "=2", "cpu=", "cpu=-1", "mem=4x", "CPU=1", "cpu=1.1234567"}) {
    ResourceSlots s;
    EXPECT_FALSE(ParseSlotAssignment(bad, s).ok()) << bad;
  }
  EXPECT_EQ(KnownSlotType("mem"), SlotType::kBytes);
  EXPECT_EQ(KnownSlotType("cuda.device"), SlotType::kCount);
  EXPECT_FALSE(KnownSlotType("foo.bar"));
  EXPECT_EQ(ParseSlotType(ToString(SlotType::kUnique)), SlotType::kUnique);
}

TEST(SlotsTest, WireFormatIsStringsAndAcceptsNumbers) {
  auto in = nlohmann::json::parse(R"({"cpu": 2, "mem": "1.5g", "cuda.shares": 0.25,
                                      "cuda.device": "Infinity"})");
  auto slots = internal::SlotsFromJson(in);
  ASSERT_TRUE(slots.ok()) << slots.status().message();
  EXPECT_EQ(internal::SlotsToJson(*slots).dump(),
            R"({"cpu":"2","cuda.device":"Infinity","cuda.shares":"0.25","mem":"1610612736"})");
  EXPECT_FALSE(internal::SlotsFromJson(nlohmann::json::parse(R"({"cpu": true})")).ok());
  EXPECT_FALSE(internal::SlotsFromJson(nlohmann::json::parse(R"({"cpu": "x"})")).ok());
  EXPECT_FALSE(internal::SlotsFromJson(nlohmann::json::parse(R"([1])")).ok());
  auto err = internal::SlotsFromJson(nlohmann::json::parse(R"({"mem": "12q"})"));
  EXPECT_NE(err.status().message().find("mem"), std::string::npos);
}

}  // namespace
}  // namespace bai::protocol
