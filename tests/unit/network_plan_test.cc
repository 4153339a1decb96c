// SPDX-License-Identifier: Apache-2.0
// Bridge mode's pure part: addresses, the nftables table, the veth's commands, resolv.conf.
#include "server-reference/agent/network_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(NetworkPlanTest, ParsesNetworksAndRefusesWhatIsNotOne) {
  auto net = ParseIpv4Net("198.19.4.0/24");
  ASSERT_TRUE(net.ok()) << net.status().message();
  EXPECT_EQ(FormatIpv4Net(*net), "198.19.4.0/24");
  EXPECT_EQ(FormatIpv4(Gateway(*net)), "198.19.4.1");
  auto bits = ParseIpv4Net("10.220.0.1/16");
  ASSERT_FALSE(bits.ok());
  EXPECT_THAT(bits.status().message(), HasSubstr("did you mean 10.220.0.0/16"));
  for (char const* bad : {"10.220.0.0", "10.220.0.0/31", "10.220.0.0/7", "10.220.0/16",
                          "10.256.0.0/16", "10.2.0.0/16x", "a.b.c.d/16", "10.220.0.0/"}) {
    EXPECT_FALSE(ParseIpv4Net(bad).ok()) << bad;
  }
}

TEST(NetworkPlanTest, AddressesAreTheLowestFreeAboveTheGatewayUntilThePoolIsFull) {
  auto pool = *ParseIpv4Net("198.19.0.0/29");  // .1 bridge, .2–.6 kernels, .7 broadcast
  std::set<std::uint32_t> used;
  std::vector<std::string> given;
  while (auto a = PickAddress(pool, used)) {
    used.insert(*a);
    given.push_back(FormatIpv4(*a));
  }
  EXPECT_THAT(given,
              ElementsAre("198.19.0.2", "198.19.0.3", "198.19.0.4", "198.19.0.5", "198.19.0.6"));
  used.erase(*ParseIpv4("198.19.0.4"));  // a kernel ended: its address is given again
  EXPECT_EQ(FormatIpv4(*PickAddress(pool, used)), "198.19.0.4");
}

TEST(NetworkPlanTest, TheRulesetClosesTheHostAndOtherKernelsAndMasqueradesThePool) {
  BridgeConfig c;
  c.bridge = "bai-t0";
  c.pool = *ParseIpv4Net("198.19.0.0/24");
  c.blocked = {*ParseIpv4("198.18.7.7")};
  std::string r = NftRuleset(c);
  // Replaced in one transaction, in a table of its own (nothing else of the host's is touched).
  EXPECT_EQ(
      r.rfind("table inet bai_bai_t0\ndelete table inet bai_bai_t0\ntable inet bai_bai_t0 {", 0),
      0u);
  EXPECT_THAT(r, HasSubstr("hook input priority filter; policy accept;\n"
                           "    iifname \"bai-t0\" ct state established,related accept\n"
                           "    iifname \"bai-t0\" drop\n"));
  EXPECT_THAT(r, HasSubstr("iifname \"bai-t0\" oifname \"bai-t0\" drop\n"));
  EXPECT_THAT(r, HasSubstr("oifname \"bai-t0\" ct state established,related accept\n"
                           "    oifname \"bai-t0\" drop\n"));
  EXPECT_THAT(r, HasSubstr("iifname \"bai-t0\" ip daddr { 198.18.7.7 } drop\n"));
  EXPECT_THAT(r, HasSubstr("iifname \"bai-t0\" meta nfproto ipv6 drop\n"));
  EXPECT_THAT(r, HasSubstr("ip saddr 198.19.0.0/24 oifname != \"bai-t0\" masquerade"));
  // The output chain: the host reaches no kernel.
  EXPECT_THAT(r, HasSubstr("hook output priority filter; policy accept;\n"
                           "    oifname \"bai-t0\" ct state established,related accept\n"
                           "    oifname \"bai-t0\" drop\n"));
  c.nat = false;
  c.blocked.clear();
  r = NftRuleset(c);
  EXPECT_THAT(r, Not(HasSubstr("masquerade")));
  EXPECT_THAT(r, Not(HasSubstr("daddr")));
  EXPECT_EQ(NftDeleteTable("bai0"), "table inet bai_bai0\ndelete table inet bai_bai0\n");
}

TEST(NetworkPlanTest, BridgeNamesAreInterfaceNames) {
  BridgeConfig c;
  EXPECT_TRUE(ValidateBridgeConfig(c).ok());
  for (char const* bad : {"", "a-name-too-long-x", "br 0", "br\"0", "br;0"}) {
    c.bridge = bad;
    EXPECT_FALSE(ValidateBridgeConfig(c).ok()) << bad;
  }
}

TEST(NetworkPlanTest, TheHookArgumentsCarryTheKernelsPlaceAndComeBackTheSame) {
  KernelNetwork n{"bai0", HostInterface("4F1C2A9E-77b0-4c1d-9e2f-0123456789ab"),
                  *ParseIpv4("10.220.0.7"), 16, *ParseIpv4("10.220.0.1")};
  EXPECT_EQ(n.host_if, "bv4f1c2a9e77b0");
  EXPECT_LE(n.host_if.size(), 15u);
  auto args = NetworkHookArgs(n);
  EXPECT_THAT(
      args, ElementsAre("bai-agent", "hook", "network-up", "--bridge", "bai0", "--host-if",
                        "bv4f1c2a9e77b0", "--address", "10.220.0.7/16", "--gateway", "10.220.0.1"));
  auto back = ParseNetworkHookArgs(std::vector<std::string>(args.begin() + 3, args.end()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->host_if, n.host_if);
  EXPECT_EQ(back->address, n.address);
  EXPECT_EQ(back->prefix, 16);
  EXPECT_EQ(back->gateway, n.gateway);
  EXPECT_FALSE(ParseNetworkHookArgs({"--bridge", "bai0"}).ok());
  EXPECT_FALSE(ParseNetworkHookArgs({"--bridge", "bai0", "--host-if", "bv1", "--address",
                                     "10.220.0.7", "--gateway", "10.220.0.1"})
                   .ok());
  EXPECT_FALSE(ParseNetworkHookArgs({"--evil", "x"}).ok());
}

TEST(NetworkPlanTest, TheVethIsMadeInsideTheContainerAndIsolatedOnTheBridge) {
  KernelNetwork n{"bai0", "bv0123", *ParseIpv4("10.220.0.7"), 16, *ParseIpv4("10.220.0.1")};
  auto host = HostSideCommands(n, 4242);
  ASSERT_EQ(host.size(), 4u);
  EXPECT_THAT(host[0], ElementsAre("link", "add", "bv0123", "type", "veth", "peer", "name", "eth0",
                                   "netns", "4242"));
  EXPECT_THAT(host[1], ElementsAre("link", "set", "bv0123", "master", "bai0"));
  EXPECT_THAT(host[2],
              ElementsAre("link", "set", "bv0123", "type", "bridge_slave", "isolated", "on"));
  auto inside = KernelSideCommands(n);
  EXPECT_THAT(inside[1], ElementsAre("addr", "add", "10.220.0.7/16", "dev", "eth0"));
  EXPECT_THAT(inside[3],
              ElementsAre("route", "add", "default", "via", "10.220.0.1", "dev", "eth0"));
}

TEST(NetworkPlanTest, AKernelsResolvConfLeavesOutTheHostsLoopbackResolver) {
  EXPECT_EQ(KernelResolvConf("search lan\nnameserver 127.0.0.53\nnameserver 198.18.0.53\n"
                             "options edns0\n"),
            "search lan\nnameserver 198.18.0.53\noptions edns0\n");
  EXPECT_THAT(KernelResolvConf("nameserver 127.0.0.53\nnameserver ::1\n"),
              HasSubstr("# no name server"));
}

}  // namespace
}  // namespace bai::agent
