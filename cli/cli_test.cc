// Flag handling of CliMain: every usage error exits 2 before any network call.
#include "cli/cli.h"

#include <string>
#include <vector>

#include "cli/http_client.h"
#include "gtest/gtest.h"

namespace iofleet::cli {
namespace {

int RunCli(std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string prog = "iofleet";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  // An unroutable controller: any accidental request fails fast (exit 1, not 2).
  setenv("IOFLEET_CONTROLLER", "http://127.0.0.1:1", 1);
  return CliMain(static_cast<int>(argv.size()), argv.data());
}

TEST(CliTest, UsageErrorsExit2) {
  EXPECT_EQ(RunCli({}), kExitUsage);
  EXPECT_EQ(RunCli({"frobnicate"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "x.fio", "--bogus"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "x.fio", "--hosts", "a", "--selector", "k=v"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--repeat=0"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--tag=novalue"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--selector=k"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--wait=yes"}), kExitUsage);
  EXPECT_EQ(RunCli({"result", "r1", "--format=xml"}), kExitUsage);
  EXPECT_EQ(RunCli({"compare", "j1", "--format=csv"}), kExitUsage);
  EXPECT_EQ(RunCli({"compare", "j1", "--fail-on=slower"}), kExitUsage);
  EXPECT_EQ(RunCli({"compare", "j1", "--fail-on="}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--wait", "--fail-on=maybe"}), kExitUsage);
  // --fail-on and --allow-unaudited only mean something with --wait.
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--fail-on=inconclusive"}), kExitUsage);
  EXPECT_EQ(RunCli({"submit", "/dev/null", "--allow-unaudited"}), kExitUsage);
  EXPECT_EQ(RunCli({"watch"}), kExitUsage);
  EXPECT_EQ(RunCli({"cancel"}), kExitUsage);
  EXPECT_EQ(RunCli({"--controller=ftp://x", "agents"}), kExitUsage);
  EXPECT_EQ(RunCli({"--controller"}), kExitUsage);
}

TEST(CliTest, HelpExits0) { EXPECT_EQ(RunCli({"--help"}), kExitOk); }

TEST(CliTest, UnreachableControllerExits1) { EXPECT_EQ(RunCli({"agents"}), kExitFailed); }

TEST(CliTest, NormalizeControllerUrl) {
  EXPECT_EQ(*NormalizeControllerUrl("127.0.0.1:7080"), "http://127.0.0.1:7080");
  EXPECT_EQ(*NormalizeControllerUrl("http://h:1/api/v1/"), "http://h:1");
  EXPECT_FALSE(NormalizeControllerUrl("http://h:1/other").ok());
  EXPECT_FALSE(NormalizeControllerUrl("").ok());
}

}  // namespace
}  // namespace iofleet::cli
