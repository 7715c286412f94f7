#include "controller/scheduler/expand.h"

#include <set>
#include <string>
#include <utility>

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
  FleetSnapshot fleet;
  v1::JobSpec spec;
  spec.add_hosts("a");
  EXPECT_EQ(ErrorField(ExpandJob(spec, fleet).status()), "fio");
  spec.set_options_json("{not json");
  EXPECT_EQ(ErrorField(ExpandJob(spec, fleet).status()), "options");
}

// A fleet where `names` have registered (disconnected is enough).
FleetSnapshot FleetOf(std::initializer_list<const char*> names) {
  std::vector<AgentStatic> agents;
  for (const char* n : names) {
    AgentStatic a;
    a.name = n;
    agents.push_back(std::move(a));
  }
  return FleetSnapshotOf(std::move(agents));
}

TEST(ExpandTest, VariantPlacementAndBadVariantOptions) {
  FleetSnapshot fleet = FleetOf({"a", "b"});
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
  // Each host's warm-up run (two variants: warmup is on), then its pair's runs.
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_TRUE((*runs)[0].warmup);
  EXPECT_TRUE((*runs)[1].warmup);
  EXPECT_FALSE((*runs)[2].warmup);
  EXPECT_EQ((*runs)[2].host, "a");
  EXPECT_EQ((*runs)[2].variant, "old");
  EXPECT_EQ((*runs)[3].host, "b");
  EXPECT_EQ((*runs)[3].variant, "new");
  (*w->mutable_options())["rw"] = "sideways";
  EXPECT_EQ(ErrorField(ExpandJob(spec, fleet).status()), "variants[1].options");
}

TEST(ExpandTest, UnknownHostsNamedUnlessTheJobMayWait) {
  FleetSnapshot fleet = FleetOf({"a", "b"});
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

// wait_for_hosts with a selector: a named host that has not registered has no
// labels to match, so the job is refused naming that host (the old messages
// blamed the selector: "no registered agent matches selector {...}" or "host(s)
// late do not match selector {...}", as if the host had been checked).
TEST(ExpandTest, WaitForHostsWithASelectorNamesTheUnregisteredHost) {
  std::vector<AgentStatic> agents(2);
  agents[0].name = "a";
  agents[0].labels = {{"rack", "r1"}};
  agents[1].name = "b";
  agents[1].labels = {{"rack", "r2"}};
  const FleetSnapshot fleet = FleetSnapshotOf(std::move(agents));
  v1::JobSpec spec;
  spec.set_fio_text("[j]\nfilename=/dev/x\nsize=1m\n");
  spec.set_wait_for_hosts(true);
  spec.add_hosts("a");
  spec.add_hosts("late");
  (*spec.mutable_selector())["rack"] = "r1";
  absl::Status st = ExpandJob(spec, fleet).status();
  EXPECT_EQ(ErrorField(st), "hosts");
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("host \"late\" has not registered, so whether it matches selector "
                        "{rack=r1} cannot be known: the job is refused, not queued"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("without a selector"));
  // Also when no registered agent matches the selector at all.
  (*spec.mutable_selector())["rack"] = "r9";
  st = ExpandJob(spec, fleet).status();
  EXPECT_THAT(std::string(st.message()), HasSubstr("host \"late\" has not registered"));
  // A variant's own placement: its field.
  v1::JobSpec var;
  var.set_fio_text("[j]\nfilename=/dev/x\nsize=1m\n");
  var.set_wait_for_hosts(true);
  var.add_hosts("a");
  var.add_variants()->set_name("A");
  v1::Variant* v = var.add_variants();
  v->set_name("B");
  v->add_hosts("late");
  v->add_hosts("later");
  (*v->mutable_selector())["rack"] = "r1";
  st = ExpandJob(var, fleet).status();
  EXPECT_EQ(ErrorField(st), "variants[1].hosts");
  EXPECT_THAT(std::string(st.message()), HasSubstr("hosts \"late\", \"later\" have not registered"));
  // Registered hosts with a selector, and unregistered hosts without one, still work.
  spec.clear_hosts();
  spec.add_hosts("a");
  (*spec.mutable_selector())["rack"] = "r1";
  EXPECT_TRUE(ExpandJob(spec, fleet).ok());
  spec.clear_selector();
  spec.add_hosts("late");
  auto runs = ExpandJob(spec, fleet);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->size(), 2u);
}

// Issue 10 item 1: variants x sweep dropped the variant's options. The base job
// has no iodepth (so 1); the variant's iodepth_batch_submit=8 was applied to the
// base and normalised (clamped to iodepth=1) before the sweep cell set iodepth,
// so every b8 run ran with batch 1 like b1.
TEST(ExpandTest, VariantOptionsSurviveTheSweep) {
  FleetSnapshot fleet = FleetOf({"a"});
  v1::JobSpec spec;
  spec.set_fio_text("[global]\nioengine=libaio\nsize=1m\nfilename=/tmp/x\n[j]\nrw=randread\n");
  spec.add_hosts("a");
  auto* b1 = spec.add_variants();
  b1->set_name("b1");
  (*b1->mutable_options())["iodepth_batch_submit"] = "1";
  auto* b8 = spec.add_variants();
  b8->set_name("b8");
  (*b8->mutable_options())["iodepth_batch_submit"] = "8";
  (*b8->mutable_options())["iodepth_batch_complete_min"] = "8";
  auto& values = (*spec.mutable_sweep())["iodepth"];
  values.add_values("8");
  values.add_values("32");
  auto runs = ExpandJob(spec, fleet);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 5u);  // 4 arms + the host's warm-up run
  std::set<std::pair<std::string, std::string>> arms;
  for (const PlannedRun& r : *runs) {
    SCOPED_TRACE(r.variant + " " + r.cell + "\n" + r.fio_text);
    arms.insert({r.variant, r.cell});
    auto list = jobspec::ParseJobText(r.fio_text, "run.fio");
    ASSERT_TRUE(list.ok()) << list.status();
    ASSERT_EQ(list->jobs.size(), 1u);
    const jobspec::JobSpec& j = list->jobs[0];
    const uint32_t depth = r.cell == "iodepth=8" ? 8 : 32;
    EXPECT_EQ(j.iodepth, depth);
    if (r.variant == "b8") {
      EXPECT_EQ(j.iodepth_batch_submit, 8u);
      EXPECT_EQ(j.iodepth_batch_complete_min, 8u);
      EXPECT_THAT(r.fio_text, HasSubstr("iodepth_batch=8\n"));
    } else {
      EXPECT_EQ(j.iodepth_batch_submit, 1u);
      EXPECT_EQ(j.iodepth_batch_complete_min, 1u);
    }
  }
  EXPECT_EQ(arms, (std::set<std::pair<std::string, std::string>>{
                      {"b1", "iodepth=8"}, {"b1", "iodepth=32"}, {"b8", "iodepth=8"},
                      {"b8", "iodepth=32"}}));
}

// Host overrides come last and win; a variant's option and a cell's option on the
// same key: the cell wins (variant, cell, host override, in that order).
TEST(ExpandTest, OverrideOrderIsVariantThenCellThenHost) {
  FleetSnapshot fleet = FleetOf({"a", "b"});
  v1::JobSpec spec;
  spec.set_fio_text("[j]\nfilename=/tmp/x\nsize=1m\n");
  spec.add_hosts("a");
  spec.add_hosts("b");
  auto* v = spec.add_variants();
  v->set_name("v");
  (*v->mutable_options())["bs"] = "8k";
  (*v->mutable_options())["iodepth"] = "2";
  (*spec.mutable_sweep())["iodepth"].add_values("16");
  (*(*spec.mutable_host_overrides())["b"].mutable_options())["iodepth"] = "4";
  (*(*spec.mutable_host_overrides())["b"].mutable_options())["filename"] = "/tmp/y";
  auto runs = ExpandJob(spec, fleet);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  for (const PlannedRun& r : *runs) {
    auto list = jobspec::ParseJobText(r.fio_text, "run.fio");
    ASSERT_TRUE(list.ok()) << list.status();
    const jobspec::JobSpec& j = list->jobs[0];
    EXPECT_EQ(j.bs[0], 8192u);
    EXPECT_EQ(j.iodepth, r.host == "b" ? 4u : 16u) << r.host;
    EXPECT_THAT(r.targets, ElementsAre(r.host == "b" ? "/tmp/y" : "/tmp/x"));
  }
}

TEST(ExpandTest, RunsThatParseButCannotRunAreRefusedAtSubmit) {
  FleetSnapshot fleet = FleetOf({"a"});
  v1::JobSpec spec;
  spec.set_fio_text("[j]\nfilename=/tmp/x\nsize=1m\nnumjobs=0\n");
  spec.add_hosts("a");
  absl::Status st = ExpandJob(spec, fleet).status();
  EXPECT_EQ(ErrorField(st), "fio");
  EXPECT_THAT(std::string(st.message()), HasSubstr("numjobs"));
}

}  // namespace
}  // namespace iofleet::controller
