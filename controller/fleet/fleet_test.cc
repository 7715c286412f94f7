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

FleetTime T(uint64_t wall, uint64_t mono) { return FleetTime{wall, mono}; }

TEST(FleetTest, RegisterDisconnectAndSilence) {
  Fleet fleet;
  v1::Hello hello;
  hello.set_agent_name("a1");
  hello.set_instance_id("i1");
  (*hello.mutable_labels())["rack"] = "r1";
  hello.mutable_inventory()->set_kernel_release("6.1.0");
  hello.add_allow_paths("/dev/");
  auto s1 = std::make_shared<NullSender>();
  std::shared_ptr<AgentSender> replaced;
  AgentRow row = fleet.Register(hello, 1, s1, T(1000, 1000), &replaced);
  EXPECT_EQ(row.state, "up");
  EXPECT_EQ(replaced, nullptr);
  EXPECT_TRUE(fleet.Connected("a1"));
  EXPECT_THAT(fleet.Match({{"kernel", "6.*"}}), ElementsAre("a1"));
  EXPECT_TRUE(fleet.Match({{"rack", "r2"}}).empty());

  auto s2 = std::make_shared<NullSender>();
  fleet.Register(hello, 1, s2, T(2000, 2000), &replaced);
  EXPECT_EQ(replaced, s1);
  EXPECT_EQ(fleet.Disconnect("a1", s1.get(), T(2500, 2500)), nullptr);  // stale stream
  EXPECT_TRUE(fleet.Connected("a1"));
  fleet.Touch("a1", T(3000, 3000));
  EXPECT_TRUE(fleet.Silent(10000, 15000).empty());
  EXPECT_THAT(fleet.Silent(20000, 15000), ElementsAre("a1"));
  const AgentRow* down = fleet.Disconnect("a1", s2.get(), T(4000, 4000));
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->state, "down");
  EXPECT_FALSE(fleet.Connected("a1"));

  Fleet reloaded;
  reloaded.Load({row}, T(50000, 50000));
  EXPECT_FALSE(reloaded.Connected("a1"));
  EXPECT_THAT(reloaded.Match({{"kernel", "6.1*"}}), ElementsAre("a1"));
  EXPECT_TRUE(reloaded.Silent(60000, 15000).empty());
}

// Liveness is measured on the monotonic clock: a wall-clock step of an hour
// changes what is shown, not who is silent.
TEST(FleetTest, WallClockStepDoesNotSilenceAgents) {
  Fleet fleet;
  v1::Hello hello;
  hello.set_agent_name("a1");
  fleet.Register(hello, 1, std::make_shared<NullSender>(), T(1000, 1000), nullptr);
  fleet.Touch("a1", T(1000 + 3600 * 1000, 2000));  // wall +1 h, monotonic +1 s
  EXPECT_TRUE(fleet.Silent(3000, 15000).empty());
  EXPECT_EQ(fleet.Get("a1")->row.last_seen_ms, 1000u + 3600 * 1000);
  EXPECT_THAT(fleet.Silent(2000 + 15001, 15000), ElementsAre("a1"));
}

class PeerSender : public NullSender {
 public:
  explicit PeerSender(std::string p) : peer_(std::move(p)) {}
  std::string peer() const override { return peer_; }

 private:
  std::string peer_;
};

TEST(FleetTest, NameTakenByLiveSessionOfAnotherProcess) {
  Fleet fleet;
  v1::Hello first;
  first.set_agent_name("dup");
  first.set_instance_id("proc-1");
  fleet.Register(first, 1, std::make_shared<PeerSender>("ipv4:10.0.0.1:5000"), T(1000, 1000),
                 nullptr);
  v1::Hello second = first;
  second.set_instance_id("proc-2");
  absl::Status st = fleet.CheckNameFree(second, T(2000, 2000), 15000);
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(st.message()), HasSubstr("ipv4:10.0.0.1:5000"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("connected since 1970-01-01T00:00:01.000Z"));
  // The same process reconnecting, or the first silent past the timeout: free.
  EXPECT_TRUE(fleet.CheckNameFree(first, T(2000, 2000), 15000).ok());
  EXPECT_TRUE(fleet.CheckNameFree(second, T(2000, 1000 + 15001), 15000).ok());
}

}  // namespace
}  // namespace iofleet::controller
