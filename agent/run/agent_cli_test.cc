#include "agent/run/agent_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iofleet::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;

TEST(RunFlagsTest, OutputFormatsAsFioTakesThem) {
  auto f = ParseRunFlags({"--output-format=json", "j.fio"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->format, OutputFormat::kJson);
  EXPECT_TRUE(f->unsupported_output.empty());
  // fio accepts a comma list and terse: they parse (so --parse-only passes), and a
  // run says they are not written yet instead of printing something else.
  f = ParseRunFlags({"--output-format=json,normal", "j.fio"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->unsupported_output, HasSubstr("several output formats"));
  f = ParseRunFlags({"--output-format=terse", "j.fio"});
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->unsupported_output, HasSubstr("terse output is not written yet"));
  f = ParseRunFlags({"--minimal", "--terse-version=3", "j.fio"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->unsupported_output, HasSubstr("--minimal"));
  EXPECT_TRUE(f->cmd.options.empty());  // not taken for job options
  EXPECT_FALSE(ParseRunFlags({"--output-format=xml", "j.fio"}).ok());
  EXPECT_FALSE(ParseRunFlags({"--terse-version=9", "j.fio"}).ok());
}

TEST(RunFlagsTest, JobOptionsPassThrough) {
  auto f = ParseRunFlags({"--name=a", "--rw=randread", "--thread"});
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->cmd.options,
              testing::ElementsAre(Pair("name", "a"), Pair("rw", "randread"), Pair("thread", "")));
}

}  // namespace
}  // namespace iofleet::agent
