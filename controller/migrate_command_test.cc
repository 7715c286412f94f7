// `iofleet-controller migrate`'s flags through the flag table: every bad
// value exits 2 naming the flag and the value, before any file or database is
// touched; --help is generated from the same table.
#include "controller/migrate_command.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome Migrate(std::vector<std::string> args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = RunMigrateCommand(args);
  Outcome o{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  return o;
}

TEST(MigrateCommandTest, BadValuesExit2NamingTheFlagAndValue) {
  Outcome o = Migrate({"--from=sqlite:/nonexistent", "--sample=many"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("--sample: \"many\" is not a count (0 = all runs)"));
  o = Migrate({"--from=sqlite:/nonexistent", "--sample=-1"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("--sample: \"-1\" is not a count"));
  o = Migrate({"--from=/var/lib/iofleet"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("--from: \"/var/lib/iofleet\" is not sqlite:DIR"));
  o = Migrate({"--from=sqlite:/nonexistent", "--replace=maybe"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("--replace: \"maybe\" is not true or false"));
  o = Migrate({"--from=sqlite:/nonexistent", "--to"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("--to: needs a value"));
  o = Migrate({"--from=sqlite:/x", "--form=sqlite:/y"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("unknown flag \"--form=sqlite:/y\""));
  EXPECT_THAT(o.err, HasSubstr("usage: iofleet-controller migrate"));
  o = Migrate({"--from=sqlite:/x", "stray"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("unexpected argument \"stray\""));
}

TEST(MigrateCommandTest, HelpListsEveryFlagWithItsDefault) {
  Outcome o = Migrate({"--help"});
  EXPECT_EQ(o.rc, 0) << o.err;
  for (const char* f : {"--from=sqlite:DIR", "--to=URI", "--replace", "--sample=N",
                        "(default 200)", "usage: iofleet-controller migrate"}) {
    EXPECT_THAT(o.out, HasSubstr(f));
  }
}

// Good flags in both spellings get past parsing: the missing directory is the
// next thing refused (exit 1 with PostgreSQL support, or exit 1 without it).
TEST(MigrateCommandTest, GoodFlagsReachTheSourceCheck) {
  Outcome o = Migrate({"--from", "sqlite:/nonexistent/dir", "--to",
                       "postgresql://u@127.0.0.1:1/db", "--replace", "--sample", "0"});
  EXPECT_EQ(o.rc, 1) << o.err;
  EXPECT_THAT(o.err, ::testing::AnyOf(HasSubstr("/nonexistent/dir is not a directory"),
                                      HasSubstr("no PostgreSQL support")));
}

}  // namespace
}  // namespace iofleet::controller
