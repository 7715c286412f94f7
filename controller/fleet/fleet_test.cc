#include "controller/fleet/fleet.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NegotiateTest, AcceptsOverlappingRanges) {
  EXPECT_EQ(NegotiateProtocolVersion(1, 1).value(), 1u);
  EXPECT_EQ(NegotiateProtocolVersion(1, 0).value(), 1u);
  EXPECT_EQ(NegotiateProtocolVersion(3, 1).value(), 1u);  // newer agent that still speaks 1
}

TEST(NegotiateTest, RejectsWithReason) {
  auto too_new = NegotiateProtocolVersion(5, 2);
  EXPECT_EQ(too_new.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(too_new.status().message()), HasSubstr("upgrade the controller"));
  auto none = NegotiateProtocolVersion(0, 0);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no protocol_version"));
}

TEST(SelectorTest, ExactPrefixAndReservedKeys) {
  AgentFacts f{{{"rack", "r12"}, {"pool", "ci"}}, "6.1.0-13-amd64", "AMD EPYC 7763"};
  EXPECT_TRUE(SelectorMatches({}, f));
  EXPECT_TRUE(SelectorMatches({{"rack", "r12"}}, f));
  EXPECT_FALSE(SelectorMatches({{"rack", "r1"}}, f));
  EXPECT_TRUE(SelectorMatches({{"rack", "r1*"}}, f));
  EXPECT_TRUE(SelectorMatches({{"kernel", "6.1*"}, {"cpu_model", "AMD*"}}, f));
  EXPECT_FALSE(SelectorMatches({{"kernel", "6.2*"}}, f));
  EXPECT_FALSE(SelectorMatches({{"zone", "*"}}, f));  // missing label never matches
  EXPECT_TRUE(SelectorMatches({{"pool", "*"}}, f));
}

class NullSender : public AgentSender {
 public:
  void Send(const v1::ControllerMessage&) override {}
  void Close(const absl::Status&) override {}
};

TEST(FleetTest, RegisterDisconnectAndSilence) {
  Fleet fleet;
  v1::Hello hello;
  hello.set_agent_name("a1");
  (*hello.mutable_labels())["rack"] = "r1";
  hello.mutable_inventory()->set_kernel_release("6.1.0");
  hello.add_allow_paths("/dev/");
  auto s1 = std::make_shared<NullSender>();
  std::shared_ptr<AgentSender> replaced;
  AgentRow row = fleet.Register(hello, 1, s1, 1000, &replaced);
  EXPECT_EQ(row.state, "up");
  EXPECT_EQ(replaced, nullptr);
  EXPECT_TRUE(fleet.Connected("a1"));
  EXPECT_THAT(fleet.Match({{"kernel", "6.*"}}), ElementsAre("a1"));
  EXPECT_TRUE(fleet.Match({{"rack", "r2"}}).empty());

  auto s2 = std::make_shared<NullSender>();
  fleet.Register(hello, 1, s2, 2000, &replaced);
  EXPECT_EQ(replaced, s1);
  EXPECT_EQ(fleet.Disconnect("a1", s1.get(), 2500), nullptr);  // stale stream
  EXPECT_TRUE(fleet.Connected("a1"));
  fleet.Touch("a1", 3000);
  EXPECT_TRUE(fleet.Silent(10000, 15000).empty());
  EXPECT_THAT(fleet.Silent(20000, 15000), ElementsAre("a1"));
  const AgentRow* down = fleet.Disconnect("a1", s2.get(), 4000);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->state, "down");
  EXPECT_FALSE(fleet.Connected("a1"));

  Fleet reloaded;
  reloaded.Load({row}, 50000);
  EXPECT_FALSE(reloaded.Connected("a1"));
  EXPECT_THAT(reloaded.Match({{"kernel", "6.1*"}}), ElementsAre("a1"));
  EXPECT_TRUE(reloaded.Silent(60000, 15000).empty());
}

}  // namespace
}  // namespace iofleet::controller
