#include "controller/fleet/fleet.h"

#include "controller/fleet/registry.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NegotiateTest, AcceptsOverlappingRanges) {
  EXPECT_EQ(NegotiateProtocolVersion(1, 1).value(), 1u);
  EXPECT_EQ(NegotiateProtocolVersion(1, 0).value(), 1u);
  EXPECT_EQ(NegotiateProtocolVersion(2, 1).value(), 2u);  // inventory by hash
  EXPECT_EQ(NegotiateProtocolVersion(3, 1).value(), 2u);  // newer agent that still speaks 2
}

TEST(NegotiateTest, RejectsWithReason) {
  auto too_new = NegotiateProtocolVersion(5, 3);
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

FleetTime T(uint64_t wall, uint64_t mono) { return FleetTime{wall, mono}; }

AgentRegistration Reg(const std::string& name, const std::string& instance,
                      const std::string* inventory = nullptr, std::string kernel = "") {
  AgentRegistration r;
  r.name = name;
  r.instance_id = instance;
  r.peer = "ipv4:10.0.0.1:5000";
  r.version = 1;
  r.labels = {{"rack", "r1"}};
  r.allow_paths = {"/dev/"};
  r.inventory_json = inventory;
  r.inventory_kernel = std::move(kernel);
  return r;
}

TEST(AgentRegistryTest, RegisterReplaceDisconnectAndReload) {
  AgentRegistry fleet;
  const std::string inv = "{\"kernel_release\":\"6.1.0\"}";
  uint64_t replaced = 99;
  Agent& a = fleet.Register(Reg("a1", "i1", &inv, "6.1.0"), /*session=*/1, T(1000, 1000),
                            &replaced);
  EXPECT_EQ(a.row.state, "up");
  EXPECT_EQ(replaced, 0u);
  EXPECT_TRUE(a.connected());
  EXPECT_EQ(fleet.BySession(1), &a);
  auto snap = fleet.Snapshot();
  EXPECT_THAT(snap->Match({{"kernel", "6.*"}}), ElementsAre("a1"));
  EXPECT_TRUE(snap->Match({{"rack", "r2"}}).empty());
  EXPECT_EQ(snap->Get("a1")->s->peer, "ipv4:10.0.0.1:5000");

  // A reconnect: the new session replaces the old; the old one's end is stale.
  // Without an inventory the stored one (and its facts) stay.
  fleet.Register(Reg("a1", "i1"), 2, T(2000, 2000), &replaced);
  EXPECT_EQ(replaced, 1u);
  EXPECT_EQ(fleet.BySession(1), nullptr);
  EXPECT_EQ(fleet.Get("a1")->facts().kernel, "6.1.0");
  EXPECT_EQ(fleet.Disconnect("a1", 1, T(2500, 2500)), nullptr);
  EXPECT_TRUE(fleet.Get("a1")->connected());
  Agent* down = fleet.Disconnect("a1", 2, T(4000, 4000));
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->row.state, "down");
  EXPECT_EQ(down->row.last_seen_ms, 4000u);
  EXPECT_FALSE(fleet.Snapshot()->Get("a1")->up);

  AgentRegistry reloaded;
  reloaded.Load({LoadedAgent{down->row, "6.1.0-13", "EPYC"}}, T(50000, 50000));
  EXPECT_FALSE(reloaded.Get("a1")->connected());
  EXPECT_EQ(reloaded.Get("a1")->last_heard_mono_ms, 50000u);  // one timeout to come back
  EXPECT_THAT(reloaded.Snapshot()->Match({{"kernel", "6.1*"}, {"cpu_model", "EP*"}}),
              ElementsAre("a1"));
}

// Liveness is measured on the monotonic clock: a wall-clock step of an hour
// changes what is shown, not when it was heard.
TEST(AgentRegistryTest, HeardKeepsBothClocks) {
  AgentRegistry fleet;
  uint64_t replaced = 0;
  fleet.Register(Reg("a1", "i1"), 7, T(1000, 1000), &replaced);
  fleet.Heard("a1", 7, 2000, 1000 + 3600 * 1000);  // wall +1 h, monotonic +1 s
  EXPECT_EQ(fleet.Get("a1")->last_heard_mono_ms, 2000u);
  EXPECT_EQ(fleet.Get("a1")->row.last_seen_ms, 1000u + 3600 * 1000);
  fleet.Heard("a1", 6, 9000, 9000);  // another stream's message: not this session's
  EXPECT_EQ(fleet.Get("a1")->last_heard_mono_ms, 2000u);
}

TEST(AgentRegistryTest, NameTakenByLiveSessionOfAnotherProcess) {
  AgentRegistry fleet;
  uint64_t replaced = 0;
  fleet.Register(Reg("dup", "proc-1"), 1, T(1000, 1000), &replaced);
  absl::Status st = fleet.CheckNameFree("dup", "proc-2", T(2000, 2000), 15000);
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(st.message()), HasSubstr("ipv4:10.0.0.1:5000"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("connected since 1970-01-01T00:00:01.000Z"));
  // The same process reconnecting, or the first silent past the timeout: free.
  EXPECT_TRUE(fleet.CheckNameFree("dup", "proc-1", T(2000, 2000), 15000).ok());
  EXPECT_TRUE(fleet.CheckNameFree("dup", "proc-2", T(2000, 1000 + 15001), 15000).ok());
}

}  // namespace
}  // namespace iofleet::controller
