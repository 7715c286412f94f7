#include "common/flags/flags.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::flags {
namespace {

using ::testing::HasSubstr;

struct Opts {
  std::string dir;
  bool init = false;
  uint64_t n = 7;
  uint64_t timeout_ms = 15000;
  std::vector<std::string> paths;
};

FlagSet Table(Opts* o) {
  FlagSet fs("prog");
  fs.String("data-dir", &o->dir, "where the store lives", "DIR")
      .Switch("init", &o->init, "create the store")
      .Uint("max-things", &o->n, 1, 100, "how many things", "7")
      .Duration("timeout", &o->timeout_ms, "how long", "15s")
      .Add({"path", "PREFIX", "repeatable path", "", [o](const std::string& v) {
              if (v.empty()) return absl::InvalidArgumentError("empty prefix");
              o->paths.push_back(v);
              return absl::OkStatus();
            }});
  return fs;
}

absl::Status Parse(FlagSet& fs, std::vector<std::string> args,
                   std::vector<std::string>* pos = nullptr) {
  args.insert(args.begin(), "prog");
  return fs.Parse(args, 1, pos);
}

TEST(FlagSetTest, BothSpellingsSwitchesAndRepeats) {
  Opts o;
  FlagSet fs = Table(&o);
  ASSERT_TRUE(Parse(fs, {"--data-dir=/a", "--init", "--max-things", "9", "--timeout=500ms",
                         "--path=/x", "--path", "/y"})
                  .ok());
  EXPECT_EQ(o.dir, "/a");
  EXPECT_TRUE(o.init);
  EXPECT_EQ(o.n, 9u);
  EXPECT_EQ(o.timeout_ms, 500u);
  EXPECT_EQ(o.paths, (std::vector<std::string>{"/x", "/y"}));
  EXPECT_FALSE(fs.help_requested());

  ASSERT_TRUE(Parse(fs, {"--init=false", "--timeout=2", "--data-dir", "/b"}).ok());
  EXPECT_FALSE(o.init);
  EXPECT_EQ(o.timeout_ms, 2000u);  // a bare number is seconds
  EXPECT_EQ(o.dir, "/b");          // the last one wins
}

TEST(FlagSetTest, ErrorsNameTheFlagAndTheValue) {
  Opts o;
  FlagSet fs = Table(&o);
  absl::Status s = Parse(fs, {"--max-things=0"});
  EXPECT_EQ(s.message(), "--max-things: \"0\" is not an integer in 1..100");
  s = Parse(fs, {"--max-things=abc"});
  EXPECT_EQ(s.message(), "--max-things: \"abc\" is not an integer in 1..100");
  s = Parse(fs, {"--timeout=soon"});
  EXPECT_EQ(s.message(), "--timeout: bad duration \"soon\"");
  s = Parse(fs, {"--init=maybe"});
  EXPECT_EQ(s.message(), "--init: \"maybe\" is not true or false");
  s = Parse(fs, {"--path="});
  EXPECT_EQ(s.message(), "--path: empty prefix");
  s = Parse(fs, {"--data-dir"});
  EXPECT_EQ(s.message(), "--data-dir: needs a value");
  s = Parse(fs, {"--nope=1"});
  EXPECT_TRUE(absl::IsNotFound(s));
  EXPECT_EQ(s.message(), "unknown flag \"--nope=1\"");
  // A bare-only switch (the CLI's) refuses any value.
  bool wait = false;
  FlagSet cli("iofleet submit");
  cli.Add({"wait", "", "", "", [&wait](const std::string&) {
             wait = true;
             return absl::OkStatus();
           },
           /*bare_only=*/true});
  EXPECT_EQ(Parse(cli, {"--wait=yes"}).message(), "--wait: takes no value");
  EXPECT_FALSE(wait);
  EXPECT_TRUE(Parse(cli, {"--wait"}).ok());
  EXPECT_TRUE(wait);
  // A helper's message that names the flag already is kept as it is.
  FlagSet named("prog");
  named.Add({"token-file", "FILE", "", "", [](const std::string&) {
               return absl::InvalidArgumentError("--token-file: /x holds no token");
             }});
  EXPECT_EQ(Parse(named, {"--token-file=/x"}).message(), "--token-file: /x holds no token");
  s = Parse(fs, {"stray"});
  EXPECT_THAT(std::string(s.message()), HasSubstr("unexpected argument \"stray\""));
  // Values before the error are applied; nothing after it.
  o = Opts();
  s = Parse(fs, {"--data-dir=/c", "--max-things=0", "--init"});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(o.dir, "/c");
  EXPECT_FALSE(o.init);
}

TEST(FlagSetTest, PositionalsAndHelp) {
  Opts o;
  FlagSet fs = Table(&o);
  std::vector<std::string> pos;
  ASSERT_TRUE(Parse(fs, {"a", "-", "--init", "b", "--", "--max-things=0", "c"}, &pos).ok());
  EXPECT_EQ(pos, (std::vector<std::string>{"a", "-", "b", "--max-things=0", "c"}));
  EXPECT_EQ(o.n, 7u);
  EXPECT_FALSE(fs.help_requested());
  ASSERT_TRUE(Parse(fs, {"-max-things", "8"}).ok());  // one dash, as the CLI's -o
  EXPECT_EQ(o.n, 8u);
  pos.clear();
  ASSERT_TRUE(Parse(fs, {"a", "--init", "b", "-h", "--max-things=0"}, &pos).ok());
  EXPECT_EQ(pos, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(fs.help_requested());  // and nothing after it is read
}

TEST(FlagSetTest, HelpIsGeneratedFromTheTable) {
  Opts o;
  FlagSet fs = Table(&o);
  fs.Section("More:").String("x", &o.dir, "line one\nline two", "X");
  const std::string h = fs.Help("usage: prog [flags]\n");
  EXPECT_EQ(h,
            "usage: prog [flags]\n"
            "  --data-dir=DIR      where the store lives\n"
            "  --init              create the store\n"
            "  --max-things=N      how many things (default 7)\n"
            "  --timeout=DURATION  how long (default 15s)\n"
            "  --path=PREFIX       repeatable path\n"
            "More:\n"
            "  --x=X               line one\n"
            "                      line two\n");
}

TEST(FlagSetTest, ConfigKeysAreCheckedByTheSameTable) {
  Opts o;
  FlagSet fs = Table(&o);
  EXPECT_TRUE(fs.CheckConfigKeys({{"data-dir", "/x"}, {"path", "/y"}}, "a.conf").ok());
  absl::Status s = fs.CheckConfigKeys({{"data-dir", "/x"}, {"dta-dir", "/y"}}, "a.conf");
  EXPECT_EQ(s.message(), "a.conf: key \"dta-dir\" is not a flag of prog (run prog --help)");
}

TEST(FlagSetTest, ConfigFileKeysAreCheckedBeforeTheyBecomeFlags) {
  Opts o;
  FlagSet fs = Table(&o);
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/flags_test_good.conf";
  const std::string bad = dir + "/flags_test_bad.conf";
  {
    std::ofstream(good) << "data-dir = /from-file\nmax-things = 3\n";
    std::ofstream(bad) << "data-dir = /from-file\ndta-dir = /typo\n";
  }
  auto args = fs.ExpandConfig({"prog", "--config=" + good, "--max-things=5"}, 1);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_TRUE(fs.Parse(*args, 1).ok());
  EXPECT_EQ(o.dir, "/from-file");
  EXPECT_EQ(o.n, 5u);  // the command line overrides the file
  auto refused = fs.ExpandConfig({"prog", "--config", bad}, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            bad + ": key \"dta-dir\" is not a flag of prog (run prog --help)");
  // Without --config the arguments are unchanged.
  auto same = fs.ExpandConfig({"prog", "--init"}, 1);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, (std::vector<std::string>{"prog", "--init"}));
}

}  // namespace
}  // namespace iofleet::flags
