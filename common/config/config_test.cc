#include "common/config/config.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A temp file removed at scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/iofleet-config-XXXXXX";
    int fd = mkstemp(path_.data());
    EXPECT_GE(fd, 0);
    if (fd >= 0) close(fd);
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ParseConfig, KeysValuesCommentsAndBlankLines) {
  auto kv = ParseConfig(
      "# controller settings\n"
      "\n"
      "data-dir = /var/lib/iofleet\n"
      "   http-listen=0.0.0.0:7080   \n"
      "\t# indented comment\n"
      "heartbeat-timeout = 15s # inline comment\n",
      "c.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("data-dir", "/var/lib/iofleet"),
                               Pair("http-listen", "0.0.0.0:7080"),
                               Pair("heartbeat-timeout", "15s")));
}

TEST(ParseConfig, RepeatedKeysKeepOrder) {
  auto kv = ParseConfig("allow-path = /a\nname = x\nallow-path = /b\n", "a.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("allow-path", "/a"), Pair("name", "x"),
                               Pair("allow-path", "/b")));
}

TEST(ParseConfig, HashInsideValueIsKeptUnlessAfterWhitespace) {
  auto kv = ParseConfig("token = abc#def\nlabels = a=b,c=d\n", "a.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  // Only the first '=' separates key and value.
  EXPECT_THAT(*kv, ElementsAre(Pair("token", "abc#def"), Pair("labels", "a=b,c=d")));
}

TEST(ParseConfig, EmptyValueAllowed) {
  auto kv = ParseConfig("token =\ntoken2 =   # nothing\n", "a.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("token", ""), Pair("token2", "")));
}

TEST(ParseConfig, QuotedValues) {
  auto kv = ParseConfig(
      "token = \"  spaced # not a comment \"  # a comment\n"
      "x = \"q\\\"uote\\\\ tab\\t\"\n"
      "y = \"\"\n",
      "a.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("token", "  spaced # not a comment "),
                               Pair("x", "q\"uote\\ tab\t"), Pair("y", "")));
}

TEST(ParseConfig, CrlfAndBomTolerated) {
  auto kv = ParseConfig("\xEF\xBB\xBFname = a\r\nspool-dir = /s\r\n", "a.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("name", "a"), Pair("spool-dir", "/s")));
}

TEST(ParseConfig, NoTrailingNewline) {
  auto kv = ParseConfig("name = a", "a.conf");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("name", "a")));
}

TEST(ParseConfig, EmptyTextGivesNoPairs) {
  auto kv = ParseConfig("", "a.conf");
  ASSERT_TRUE(kv.ok());
  EXPECT_TRUE(kv->empty());
  kv = ParseConfig("# only comments\n\n   \n", "a.conf");
  ASSERT_TRUE(kv.ok());
  EXPECT_TRUE(kv->empty());
}

TEST(ParseConfig, MissingEqualsNamesFileLineAndKey) {
  auto kv = ParseConfig("name = a\n\ndata-dir /x\n", "/etc/iofleet/controller.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kv.status().message(), HasSubstr("/etc/iofleet/controller.conf:3:"));
  EXPECT_THAT(kv.status().message(), HasSubstr("data-dir /x"));
  EXPECT_THAT(kv.status().message(), HasSubstr("'='"));
}

TEST(ParseConfig, EmptyKey) {
  auto kv = ParseConfig(" = value\n", "a.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kv.status().message(), HasSubstr("a.conf:1:"));
  EXPECT_THAT(kv.status().message(), HasSubstr("empty key"));
}

TEST(ParseConfig, DashedKeyRejectedWithHint) {
  auto kv = ParseConfig("--data-dir = /x\n", "a.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("a.conf:1: key \"--data-dir\""));
  EXPECT_THAT(kv.status().message(), HasSubstr("without leading dashes"));
}

TEST(ParseConfig, InvalidKeyCharacters) {
  auto kv = ParseConfig("ok = 1\nbad key = 2\n", "a.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("a.conf:2: key \"bad key\""));
}

TEST(ParseConfig, UnterminatedQuote) {
  auto kv = ParseConfig("name = a\ntoken = \"abc\n", "a.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("a.conf:2: key \"token\""));
  EXPECT_THAT(kv.status().message(), HasSubstr("unterminated"));
  kv = ParseConfig("token = \"abc\\\n", "a.conf");  // ends in a lone backslash
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("unterminated"));
}

TEST(ParseConfig, TextAfterQuotedValue) {
  auto kv = ParseConfig("token = \"abc\" def\n", "a.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("a.conf:1: key \"token\""));
  EXPECT_THAT(kv.status().message(), HasSubstr("def"));
}

TEST(ParseConfig, UnknownEscape) {
  auto kv = ParseConfig("token = \"a\\qb\"\n", "a.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("key \"token\""));
  EXPECT_THAT(kv.status().message(), HasSubstr("\\q"));
}

TEST(ReadConfigFile, ReadsFile) {
  TempFile f("data-dir = /var/lib/iofleet\ngrpc-listen = 10.0.0.1:7070\n");
  auto kv = ReadConfigFile(f.path());
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_THAT(*kv, ElementsAre(Pair("data-dir", "/var/lib/iofleet"),
                               Pair("grpc-listen", "10.0.0.1:7070")));
}

TEST(ReadConfigFile, ErrorsNameThePath) {
  TempFile f("x = 1\n\"broken\n");
  auto kv = ReadConfigFile(f.path());
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr(f.path() + ":2:"));
}

TEST(ReadConfigFile, MissingFileIsNotFound) {
  auto kv = ReadConfigFile("/nonexistent/iofleet/agent.conf");
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(kv.status().message(), HasSubstr("/nonexistent/iofleet/agent.conf"));
}

TEST(ConfigToFlags, MakesLongFlagsInOrder) {
  KeyValues kv = {{"data-dir", "/x"}, {"allow-path", "/a"}, {"allow-path", "/b"}, {"token", ""}};
  EXPECT_THAT(ConfigToFlags(kv),
              ElementsAre("--data-dir=/x", "--allow-path=/a", "--allow-path=/b", "--token="));
  EXPECT_TRUE(ConfigToFlags({}).empty());
}

TEST(ExpandConfigArgs, NoConfigFlagLeavesArgsAlone) {
  std::vector<std::string> args = {"iofleet-controller", "--data-dir=/x"};
  auto out = ExpandConfigArgs(args, 1);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, args);
}

TEST(ExpandConfigArgs, FileFlagsComeBeforeCommandLineFlags) {
  TempFile f("controller = 10.0.0.1:7070\nallow-path = /a\n");
  std::vector<std::string> args = {"iofleet-agent", "serve", "--name=n1",
                                   "--config=" + f.path(), "--allow-path=/b"};
  auto out = ExpandConfigArgs(args, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, ElementsAre("iofleet-agent", "serve", "--controller=10.0.0.1:7070",
                                "--allow-path=/a", "--name=n1", "--allow-path=/b"));
}

TEST(ExpandConfigArgs, SeparateValueForm) {
  TempFile f("data-dir = /d\n");
  auto out = ExpandConfigArgs({"c", "--config", f.path(), "--http-listen=:0"}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, ElementsAre("c", "--data-dir=/d", "--http-listen=:0"));
}

TEST(ExpandConfigArgs, Errors) {
  auto out = ExpandConfigArgs({"c", "--config"}, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("--config"));
  out = ExpandConfigArgs({"c", "--config=/nonexistent/x.conf"}, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status().message(), HasSubstr("/nonexistent/x.conf"));
  TempFile nested("config = /other.conf\n");
  out = ExpandConfigArgs({"c", "--config=" + nested.path()}, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("key \"config\""));
}

#ifdef IOFLEET_SOURCE_DIR
// The example configs under deploy/config parse as shipped, and still parse with
// every commented-out `#key = default` line switched on.
std::set<std::string> CheckExample(const std::string& name) {
  const std::string path = std::string(IOFLEET_SOURCE_DIR) + "/deploy/config/" + name;
  auto kv = ReadConfigFile(path);
  EXPECT_TRUE(kv.ok()) << kv.status();
  std::ifstream in(path);
  std::stringstream all;
  const std::regex commented(R"(^#([a-z][a-z0-9-]*) =( .*)?$)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    all << (std::regex_match(line, m, commented) ? line.substr(1) : line) << "\n";
  }
  auto full = ParseConfig(all.str(), path + " (defaults uncommented)");
  EXPECT_TRUE(full.ok()) << full.status();
  std::set<std::string> keys;
  if (full.ok()) {
    for (const auto& [k, v] : *full) keys.insert(k);
  }
  return keys;
}

TEST(Examples, ControllerConfigParses) {
  auto keys = CheckExample("controller.conf.example");
  for (const char* k : {"data-dir", "grpc-listen", "http-listen", "heartbeat-timeout"}) {
    EXPECT_TRUE(keys.contains(k)) << k;
  }
}

TEST(Examples, AgentConfigParses) {
  auto keys = CheckExample("agent.conf.example");
  for (const char* k : {"controller", "name", "labels", "allow-path", "spool-dir"}) {
    EXPECT_TRUE(keys.contains(k)) << k;
  }
}
#endif

}  // namespace
}  // namespace iofleet::config
