#include "agent/transport/convert.h"

#include <filesystem>
#include <fstream>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

TEST(ConvertTest, IntervalToProtoKeepsSparseHistogram) {
  stats::IntervalRecord r;
  r.job = "randread";
  r.job_index = 2;
  r.seq = 7;
  r.t_start_ms = 1000;
  r.t_end_ms = 2000;
  r.dir[0].ios = 10;
  r.dir[0].bytes = 40960;
  r.dir[0].clat_hist = {{100, 4}, {700, 6}, {701, 0}};
  r.dir[1].errors = 1;
  iofleet::v1::IntervalRecord p;
  IntervalToProto(r, "run-9", &p);
  EXPECT_EQ(p.run_id(), "run-9");
  EXPECT_EQ(p.job_index(), 2u);
  EXPECT_EQ(p.job_name(), "randread");
  EXPECT_EQ(p.seq(), 7u);
  EXPECT_EQ(p.t_start_ms(), 1000u);
  EXPECT_EQ(p.t_end_ms(), 2000u);
  EXPECT_EQ(p.read().ios(), 10u);
  EXPECT_EQ(p.read().bytes(), 40960u);
  ASSERT_EQ(p.read().clat_bucket_size(), 2);  // zero counts dropped
  EXPECT_EQ(p.read().clat_bucket(1), 700u);
  EXPECT_EQ(p.read().clat_count(1), 6u);
  EXPECT_EQ(p.write().errors(), 1u);
}

// Total latency (issue 18): sent with its flag when measured, absent (no flag,
// no buckets) when the job measures none.
TEST(ConvertTest, IntervalToProtoSendsLatOnlyWhenMeasured) {
  stats::IntervalRecord r;
  r.dir[0].ios = 10;
  r.dir[0].clat_hist = {{100, 10}};
  r.dir[0].lat_measured = true;
  r.dir[0].lat_hist = {{110, 4}, {120, 6}, {130, 0}};
  r.dir[1].lat_measured = true;  // measured, nothing done: an empty histogram
  iofleet::v1::IntervalRecord p;
  IntervalToProto(r, "run-1", &p);
  EXPECT_TRUE(p.read().lat_measured());
  ASSERT_EQ(p.read().lat_bucket_size(), 2);
  EXPECT_EQ(p.read().lat_bucket(1), 120u);
  EXPECT_EQ(p.read().lat_count(1), 6u);
  EXPECT_TRUE(p.write().lat_measured());
  EXPECT_EQ(p.write().lat_bucket_size(), 0);
  EXPECT_FALSE(p.trim().lat_measured());
}

TEST(ConvertTest, ResolveTargetKeysChecksAllowPathsOnResolvedPaths) {
  iofleet::testing::TempDir tmp("iofleet_convert");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();  // resolved
  std::filesystem::create_directory(dir + "/allowed");
  { std::ofstream(dir + "/allowed/f1") << "x"; }
  std::filesystem::create_symlink(dir + "/allowed/f1", dir + "/allowed/alias");
  std::filesystem::create_symlink("/etc/passwd", dir + "/allowed/escape");
  const std::vector<std::string> allow = {dir + "/allowed"};

  jobspec::JobList list;
  jobspec::JobSpec a;
  a.name = "a";
  a.filenames = {dir + "/allowed/f1", dir + "/allowed/alias"};
  list.jobs.push_back(a);
  auto keys = ResolveTargetKeys(list, allow);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 2u);  // the alias is the same file: no key of its own

  jobspec::JobSpec b;
  b.name = "b";
  b.filenames = {dir + "/allowed/escape"};
  list.jobs.push_back(b);
  const absl::Status s = ResolveTargetKeys(list, allow).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("resolves to \"/etc/passwd\""), absl::string_view::npos) << s;
  EXPECT_TRUE(ResolveTargetKeys(list, {}).ok());

  // The null engine touches no file.
  jobspec::JobList null_list;
  jobspec::JobSpec n;
  n.name = "n";
  n.ioengine = "null";
  n.filenames = {"/dev/nvme0n1"};
  null_list.jobs.push_back(n);
  EXPECT_TRUE(ResolveTargetKeys(null_list, allow)->empty());

  iofleet::v1::ResolveTargets req;
  req.set_run_id("r1");
  req.add_paths(dir + "/allowed/alias");
  iofleet::v1::TargetsResolved out;
  AnswerResolveTargets(req, allow, &out);
  EXPECT_EQ(out.run_id(), "r1");
  EXPECT_TRUE(out.error().empty());
  ASSERT_EQ(out.targets_size(), 1);
  EXPECT_EQ(out.targets(0).real_path(), dir + "/allowed/f1");
  req.add_paths(dir + "/allowed/escape");
  out.Clear();
  AnswerResolveTargets(req, allow, &out);
  EXPECT_EQ(out.targets_size(), 0);
  EXPECT_NE(out.error().find("outside this agent's --allow-path"), std::string::npos);
}

}  // namespace
}  // namespace iofleet::agent
