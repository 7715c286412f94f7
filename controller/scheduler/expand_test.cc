#include "controller/scheduler/expand.h"

#include "common/jobspec/parser.h"
#include "controller/scheduler/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ApplyOverridesTest, OverridesEveryJobSection) {
  auto list = jobspec::ParseJobText(
      "[global]\niodepth=4\nsize=1m\n[a]\nfilename=/dev/nvme0n1\nrw=read\n[b]\n"
      "filename=/dev/nvme1n1\nrw=write\niodepth=2\n",
      "t");
  ASSERT_TRUE(list.ok()) << list.status();
  auto out = ApplyOverrides(*list, {{"iodepth", "64"}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->second.jobs.size(), 2u);
  EXPECT_EQ(out->second.jobs[0].iodepth, 64u);
  EXPECT_EQ(out->second.jobs[1].iodepth, 64u);
  auto reparsed = jobspec::ParseJobText(out->first, "t");
  ASSERT_TRUE(reparsed.ok());
  EXPECT_EQ(reparsed->jobs[1].iodepth, 64u);
  EXPECT_FALSE(ApplyOverrides(*list, {{"iodepth", "zero"}}).ok());
}

TEST(ExpandTest, NeedsExactlyOneWorkload) {
  Fleet fleet;
  v1::JobSpec spec;
  spec.add_hosts("a");
  EXPECT_EQ(ErrorField(ExpandJob(spec, fleet).status()), "fio");
  spec.set_options_json("{not json");
  EXPECT_EQ(ErrorField(ExpandJob(spec, fleet).status()), "options");
}

// A fleet where `names` have registered (disconnected is enough).
Fleet FleetOf(std::initializer_list<const char*> names) {
  Fleet fleet;
  for (const char* n : names) {
    v1::Hello hello;
    hello.set_agent_name(n);
    fleet.Register(hello, 1, nullptr, FleetTime{}, nullptr);
  }
  return fleet;
}

TEST(ExpandTest, VariantPlacementAndBadVariantOptions) {
  Fleet fleet = FleetOf({"a", "b"});
  v1::JobSpec spec;
  spec.set_fio_text("[j]\nfilename=/dev/x\nsize=1m\n");
  spec.add_hosts("a");
  auto* v = spec.add_variants();
  v->set_name("old");
  auto* w = spec.add_variants();
  w->set_name("new");
  w->add_hosts("b");
  auto runs = ExpandJob(spec, fleet);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].host, "a");
  EXPECT_EQ((*runs)[0].variant, "old");
  EXPECT_EQ((*runs)[1].host, "b");
  (*w->mutable_options())["rw"] = "sideways";
  EXPECT_EQ(ErrorField(ExpandJob(spec, fleet).status()), "variants[1].options");
}

TEST(ExpandTest, UnknownHostsNamedUnlessTheJobMayWait) {
  Fleet fleet = FleetOf({"a", "b"});
  v1::JobSpec spec;
  spec.set_fio_text("[j]\nfilename=/dev/x\nsize=1m\n");
  spec.add_hosts("a");
  spec.add_hosts("typo");
  absl::Status st = ExpandJob(spec, fleet).status();
  EXPECT_EQ(ErrorField(st), "hosts");
  EXPECT_THAT(std::string(st.message()), HasSubstr("unknown host \"typo\""));
  EXPECT_THAT(std::string(st.message()), HasSubstr("registered agents: a, b"));
  // A variant's own hosts are checked too.
  v1::JobSpec var = spec;
  var.clear_hosts();
  var.add_hosts("a");
  var.add_variants()->add_hosts("nope");
  EXPECT_EQ(ErrorField(ExpandJob(var, fleet).status()), "variants[0].hosts");

  spec.set_wait_for_hosts(true);
  auto runs = ExpandJob(spec, fleet);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->size(), 2u);
}

}  // namespace
}  // namespace iofleet::controller
