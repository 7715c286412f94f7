#include "agent/transport/convert.h"

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

TEST(ConvertTest, CheckAllowedPaths) {
  jobspec::JobList list;
  jobspec::JobSpec a;
  a.name = "a";
  a.filenames = {"/tmp/allowed/f1"};
  list.jobs.push_back(a);
  EXPECT_TRUE(CheckAllowedPaths(list, {"/tmp/allowed"}).ok());
  EXPECT_TRUE(CheckAllowedPaths(list, {}).ok());
  jobspec::JobSpec b;
  b.name = "b";
  b.filenames = {"/etc/passwd"};
  list.jobs.push_back(b);
  const absl::Status s = CheckAllowedPaths(list, {"/tmp/allowed"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("/etc/passwd"), absl::string_view::npos);
  EXPECT_NE(s.message().find("job \"b\""), absl::string_view::npos);
  // Relative names resolve against `directory`.
  jobspec::JobList rel;
  jobspec::JobSpec c;
  c.name = "c";
  c.directory = "/tmp/allowed";
  c.filenames = {"sub/f"};
  rel.jobs.push_back(c);
  EXPECT_TRUE(CheckAllowedPaths(rel, {"/tmp/allowed"}).ok());
  // The null engine touches no file.
  jobspec::JobList null_list;
  jobspec::JobSpec n;
  n.name = "n";
  n.ioengine = "null";
  n.filenames = {"/dev/nvme0n1"};
  null_list.jobs.push_back(n);
  EXPECT_TRUE(CheckAllowedPaths(null_list, {"/tmp/allowed"}).ok());
}

}  // namespace
}  // namespace iofleet::agent
