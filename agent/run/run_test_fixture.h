// A test fixture for real runs on temp files: a fresh directory under /var/tmp
// (disk-backed, so O_DIRECT works; /tmp may be tmpfs), removed after the test,
// and MustRun (parse job text, run it, fail the test on any error).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gtest/gtest.h"

namespace iofleet::agent {

class RunTestFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/iofleet-run-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  RunResult MustRun(const std::string& text) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return RunResult{};
    auto r = RunJobs(*list, RunOptions{});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  std::string dir_;
};

}  // namespace iofleet::agent
