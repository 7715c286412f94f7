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
  EXPECT_EQ(f->formats, kOutputJson);
  // A comma list: each format, printed in fio's order whatever the order given.
  f = ParseRunFlags({"--output-format=normal,json+,terse", "j.fio"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->formats, kOutputNormal | kOutputJson | kOutputJsonPlus | kOutputTerse);
  // --output-format replaces what came before; --append-terse adds terse;
  // --minimal is terse alone.
  f = ParseRunFlags({"--minimal", "--output-format=json", "--append-terse", "j.fio"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->formats, kOutputJson | kOutputTerse);
  f = ParseRunFlags({"--output-format=json", "--minimal", "--terse-version=5", "j.fio"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->formats, kOutputTerse);
  EXPECT_EQ(f->terse_version, 5);
  EXPECT_TRUE(f->cmd.options.empty());  // not taken for job options
  f = ParseRunFlags({"--output-format=csv", "j.fio"});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->formats, kOutputTerse);
  EXPECT_EQ(ParseRunFlags({"j.fio"})->terse_version, 3);
  auto bad = ParseRunFlags({"--output-format=json,xml", "j.fio"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("flag --output-format: value \"json,xml\""));
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
