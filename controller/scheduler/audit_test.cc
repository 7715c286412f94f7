// The arm audit over real job texts (ExpandJob's) and real results: each run's
// fio_text is run by the agent's runner on the null engine and its report
// writer produces the fio JSON the audit reads, as on a real agent.
#include "controller/scheduler/audit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "controller/scheduler/expand.h"

namespace iofleet::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// What an agent returns for `fio_text`: parsed as the agent parses AssignRun
// text, run, and written by the agent's report writer.
std::string AgentResultJson(const std::string& fio_text) {
  static const std::map<std::string, std::string> kNoEnv;
  jobspec::ParseOptions po;
  po.env = &kNoEnv;
  po.allow_include = false;
  auto list = jobspec::ParseJobText(fio_text, "assign", po);
  EXPECT_TRUE(list.ok()) << list.status() << "\n" << fio_text;
  if (!list.ok()) return "";
  agent::RunOptions ro;
  ro.interval_ms = 50;
  auto r = agent::RunJobs(*list, ro);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return "";
  return stats::FioJson(r->header, r->reported, /*json_plus=*/false);
}

// The issue's A/B: b1 and b8 batch settings crossed with a sweep over iodepth,
// on a base job without iodepth (null engine, so it runs anywhere).
v1::JobSpec BatchSpec(const std::vector<std::string>& depths) {
  v1::JobSpec spec;
  spec.set_name("batch");
  spec.set_fio_text("[global]\nioengine=null\nsize=256k\n[j]\nrw=randread\nbs=4k\n");
  spec.add_hosts("h");
  spec.set_wait_for_hosts(true);  // no agents in these tests
  auto* b1 = spec.add_variants();
  b1->set_name("b1");
  (*b1->mutable_options())["iodepth_batch_submit"] = "1";
  auto* b8 = spec.add_variants();
  b8->set_name("b8");
  (*b8->mutable_options())["iodepth_batch_submit"] = "8";
  (*b8->mutable_options())["iodepth_batch_complete_min"] = "8";
  for (const std::string& d : depths) (*spec.mutable_sweep())["iodepth"].add_values(d);
  return spec;
}

const PlannedRun* Find(const std::vector<PlannedRun>& runs, const std::string& variant,
                       const std::string& cell) {
  for (const PlannedRun& r : runs) {
    if (r.variant == variant && r.cell == cell) return &r;
  }
  return nullptr;
}

TEST(ArmAuditTest, EveryArmOfVariantsTimesSweepPasses) {
  v1::JobSpec spec = BatchSpec({"8", "32"});
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 5u);  // 4 arms + the host's warm-up run (audited like any run)
  for (const PlannedRun& r : *runs) {
    SCOPED_TRACE(r.variant + " " + r.cell + "\n" + r.fio_text);
    const std::string result = AgentResultJson(r.fio_text);
    AuditResult a = AuditRun(spec, r.overrides, result);
    EXPECT_TRUE(a.passed) << a.text;
    EXPECT_EQ(a.text, "ok");
    if (r.variant == "b8") {  // the agent really echoed the variant's options
      EXPECT_THAT(result, HasSubstr("\"iodepth_batch\" : \"8\""));
    }
  }
}

// The old expansion sent b8 runs without iodepth_batch_submit (normalised away
// before the sweep cell set iodepth): the audit catches exactly that, naming the
// key as the arm wrote it.
TEST(ArmAuditTest, ARunMissingTheVariantsOptionFailsNamingTheKey) {
  v1::JobSpec spec = BatchSpec({"8", "32"});
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok()) << runs.status();
  const PlannedRun* b8 = Find(*runs, "b8", "iodepth=32");
  ASSERT_NE(b8, nullptr);
  // What 879e2c2's expansion sent for this run.
  const std::string old_text =
      "[global]\nioengine=null\nsize=256k\n\n[j]\nrw=randread\niodepth=32\n";
  AuditResult a = AuditRun(spec, b8->overrides, AgentResultJson(old_text));
  EXPECT_FALSE(a.passed);
  EXPECT_THAT(a.text, StartsWith("arm audit: "));
  EXPECT_THAT(a.text, HasSubstr("option iodepth_batch_complete_min: ran 1, arm declares 8"));
  EXPECT_THAT(a.text, HasSubstr("option iodepth_batch_submit: ran 1, arm declares 8"));
}

TEST(ArmAuditTest, AnUndeclaredDifferenceFailsNamingTheBaseline) {
  v1::JobSpec spec = BatchSpec({"8"});
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok());
  const PlannedRun* b1 = Find(*runs, "b1", "iodepth=8");
  ASSERT_NE(b1, nullptr);
  // bs=8k at the end of the last job section (wherever the rendering put rw= or
  // bs=4k, the last setting in the job wins).
  ASSERT_TRUE(absl::EndsWith(b1->fio_text, "\n")) << b1->fio_text;
  const std::string changed = b1->fio_text + "bs=8k\n";
  AuditResult a = AuditRun(spec, b1->overrides, AgentResultJson(changed));
  EXPECT_FALSE(a.passed);
  EXPECT_EQ(a.text, "arm audit: option bs: ran 8192, baseline has 4096, not a declared key");
}

// Options compare by meaning, not spelling: the arm says blocksize=4k, the run
// echoes bs=4096 (what ToJobText writes).
TEST(ArmAuditTest, OptionsCompareByMeaning) {
  v1::JobSpec spec = BatchSpec({"8"});
  auto* v = spec.mutable_variants(0);
  (*v->mutable_options())["blocksize"] = "4k";
  (*v->mutable_options())["readwrite"] = "randread";
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok());
  const PlannedRun* b1 = Find(*runs, "b1", "iodepth=8");
  ASSERT_NE(b1, nullptr);
  const std::string result = AgentResultJson(b1->fio_text);
  AuditResult a = AuditRun(spec, b1->overrides, result);
  EXPECT_TRUE(a.passed) << a.text;
  // And a run whose echo says blocksize=4096 under fio's name passes too.
  const std::string respelled = absl::StrReplaceAll(result, {{"\"iodepth\" : \"8\"",
                                                              "\"iodepth\" : \"0x8\""}});
  ASSERT_NE(respelled, result);
  EXPECT_TRUE(AuditRun(spec, b1->overrides, respelled).passed);
}

// A declared key the job's own rules clamp (batch 8 at iodepth 1) ran as the
// clamp says in both arms: not a failure, but recorded so a comparison can say
// the arms ran the same thing in that cell.
TEST(ArmAuditTest, ClampedDeclaredKeysPassButAreRecorded) {
  v1::JobSpec spec = BatchSpec({"1", "32"});
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok());
  const PlannedRun* clamped = Find(*runs, "b8", "iodepth=1");
  ASSERT_NE(clamped, nullptr);
  AuditResult a = AuditRun(spec, clamped->overrides, AgentResultJson(clamped->fio_text));
  EXPECT_TRUE(a.passed) << a.text;
  EXPECT_EQ(a.text,
            "ok; normalised: iodepth_batch_submit=8 ran as 1 (clamped to iodepth (1)); "
            "iodepth_batch_complete_min=8 ran as 1 (clamped to iodepth (1))");
  const PlannedRun* full = Find(*runs, "b8", "iodepth=32");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(AuditRun(spec, full->overrides, AgentResultJson(full->fio_text)).text, "ok");
}

TEST(ArmAuditTest, HostOverridesAndNumjobsClones) {
  v1::JobSpec spec;
  spec.set_fio_text("[j]\nioengine=null\nsize=128k\nnumjobs=3\n[k]\nioengine=null\nsize=64k\n"
                    "rw=randwrite\nwait_for=j\n");
  spec.add_hosts("h");
  spec.set_wait_for_hosts(true);  // no agents in these tests
  spec.add_hosts("g");
  (*(*spec.mutable_host_overrides())["g"].mutable_options())["iodepth"] = "4";
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok()) << runs.status();
  for (const PlannedRun& r : *runs) {
    SCOPED_TRACE(r.host + "\n" + r.fio_text);
    AuditResult a = AuditRun(spec, r.overrides, AgentResultJson(r.fio_text));
    EXPECT_EQ(a.text, "ok");
  }
  // The host override is declared on g only: g's text on h is "not declared".
  const std::string g_text = runs->at(0).host == "g" ? runs->at(0).fio_text : runs->at(1).fio_text;
  AuditResult a = AuditRun(spec, {}, AgentResultJson(g_text));
  EXPECT_THAT(a.text, HasSubstr("option iodepth: ran 4, baseline has 1, not a declared key"));
}

// The [global] section reaches the agent as written (bare flags too) and the
// agent echoes it in its order: a bare flag reads back as set, and of two options
// setting the same thing the later still wins (rwmixread after rwmixwrite).
TEST(ArmAuditTest, GlobalBareFlagsAndOptionOrderReadBack) {
  v1::JobSpec spec;
  spec.set_fio_text(
      "[global]\nioengine=null\nsize=64k\nthread\nnorandommap\nrwmixwrite=30\nrwmixread=80\n"
      "[j]\nrw=randrw\n");
  spec.add_hosts("h");
  spec.set_wait_for_hosts(true);  // no agents in these tests
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok()) << runs.status();
  const std::string result = AgentResultJson(runs->at(0).fio_text);
  EXPECT_THAT(result, HasSubstr("\"norandommap\" : \"\""));
  AuditResult a = AuditRun(spec, runs->at(0).overrides, result);
  EXPECT_EQ(a.text, "ok");
}

// A bare flag in a job section (the demo's `time_based`): fio's JSON echo lists
// no job-section bare flag, so the rendered job text sets it (time_based=1) and
// the echo shows it; rendered bare, every run failed "ran 0, baseline has 1".
TEST(ArmAuditTest, JobSectionBareFlagsReadBack) {
  v1::JobSpec spec;
  spec.set_fio_text("[global]\nioengine=null\nsize=64k\n[j]\nrw=randread\ntime_based\n"
                    "runtime=50ms\n");
  spec.add_hosts("h");
  spec.set_wait_for_hosts(true);
  auto runs = ExpandJob(spec, FleetSnapshot());
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_THAT(runs->at(0).fio_text, HasSubstr("time_based=1\n"));
  const std::string result = AgentResultJson(runs->at(0).fio_text);
  AuditResult a = AuditRun(spec, runs->at(0).overrides, result);
  EXPECT_EQ(a.text, "ok");
}

TEST(ArmAuditTest, ResultsThatCannotBeCheckedFail) {
  v1::JobSpec spec = BatchSpec({"8"});
  EXPECT_EQ(AuditRun(spec, {}, "not json").text, "arm audit: the result is not fio JSON");
  EXPECT_THAT(AuditRun(spec, {}, R"({"fio version":"x","jobs":[]})").text,
              HasSubstr("the result lists no jobs"));
  EXPECT_THAT(AuditRun(spec, {}, R"({"jobs":[{"jobname":"other","job options":{}}]})").text,
              HasSubstr("a job \"other\" that the arm does not declare"));
  EXPECT_THAT(
      AuditRun(spec, {}, R"({"jobs":[{"jobname":"j","job options":{"rw":"randread","bs":"4k","frob":"1"}}]})")
          .text,
      HasSubstr("the echoed options do not read back"));
}

TEST(ArmAuditTest, ArmJsonRoundTrips) {
  std::vector<jobspec::OptionOverride> o = {{"iodepth_batch_submit", "8", kVariantSource},
                                            {"iodepth", "32", kCellSource},
                                            {"filename", "/dev/x", kHostSource}};
  auto back = ArmOverridesFromJson(ArmOverridesToJson(o));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].key, "iodepth_batch_submit");
  EXPECT_EQ((*back)[1].source, kCellSource);
  EXPECT_EQ((*back)[2].value, "/dev/x");
  EXPECT_FALSE(ArmOverridesFromJson("{}").ok());
  EXPECT_FALSE(ArmOverridesFromJson("[[1,2,3]]").ok());
}

}  // namespace
}  // namespace iofleet::controller
