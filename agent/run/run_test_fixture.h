// A test fixture for real runs on temp files: a fresh directory under /var/tmp
// (disk-backed, so O_DIRECT works; /tmp may be tmpfs), removed after the test,
// Parse (job text to a JobList, failing the test on an error) and MustRun
// (parse job text, run it, fail the test on any error). The agent run tests
// (runner, job logs, page cache, pacing, verify, zbd, jobfeat*) all use it.
#pragma once

#include <string>

#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::agent {

class RunTestFixture : public ::testing::Test {
 protected:
  // A subclass that overrides SetUp calls this first.
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << "cannot make a temp dir under " << iofleet::testing::kDiskTempRoot;
    dir_ = tmp_.path();
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // `file_name` is the name errors cite for the job text.
  jobspec::JobList Parse(const std::string& text, const std::string& file_name = "test.fio") {
    auto list = jobspec::ParseJobText(text, file_name);
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *list : jobspec::JobList{};
  }

  RunResult MustRun(const std::string& text, RunOptions opts = {}) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return RunResult{};
    auto r = RunJobs(*list, opts);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  iofleet::testing::TempDir tmp_{"iofleet-run", iofleet::testing::kDiskTempRoot};
  std::string dir_;  // tmp_.path()
};

}  // namespace iofleet::agent
