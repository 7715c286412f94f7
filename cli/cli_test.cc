// Flag handling of CliMain: every usage error exits 2 before any network call.
#include "cli/cli.h"

#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/http_client.h"
#include "gmock/gmock.h"
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
  // A client certificate needs its key, an https:// URL and readable files.
  EXPECT_EQ(RunCli({"--cert=/etc/hostname", "agents"}), kExitUsage);
  EXPECT_EQ(RunCli({"--cert=/etc/hostname", "--key=/etc/hostname", "agents"}), kExitUsage);
  EXPECT_EQ(RunCli({"--controller=https://127.0.0.1:1", "--cert=/nonexistent",
                    "--key=/nonexistent", "agents"}),
            kExitUsage);
}

TEST(CliTest, HelpExits0) {
  EXPECT_EQ(RunCli({"--help"}), kExitOk);
  EXPECT_EQ(RunCli({"help"}), kExitOk);
  // Per-command help, both spellings, before any flag check or network call.
  for (const char* c : {"submit", "status", "watch", "agents", "runs", "result", "cancel",
                        "compare"}) {
    EXPECT_EQ(RunCli({"help", c}), kExitOk) << c;
    EXPECT_EQ(RunCli({c, "--help"}), kExitOk) << c;
    EXPECT_EQ(RunCli({c, "-h"}), kExitOk) << c;
  }
  EXPECT_EQ(RunCli({"help", "frobnicate"}), kExitUsage);
}

TEST(CliTest, OutputModes) {
  EXPECT_EQ(RunCli({"agents", "-o", "yaml"}), kExitUsage);
  EXPECT_EQ(RunCli({"status", "--output=xml"}), kExitUsage);
  EXPECT_EQ(RunCli({"runs", "-o"}), kExitUsage);
  EXPECT_EQ(RunCli({"status", "--limit=-1"}), kExitUsage);
  EXPECT_EQ(RunCli({"status", "--tag=x"}), kExitUsage);
  EXPECT_EQ(RunCli({"status", "--state=done"}), kExitUsage);
  // Valid modes get as far as the (unreachable) controller.
  EXPECT_EQ(RunCli({"agents", "-o", "wide"}), kExitUnreachable);
  EXPECT_EQ(RunCli({"status", "-o", "json"}), kExitUnreachable);
  EXPECT_EQ(RunCli({"runs", "-o=wide"}), kExitUnreachable);
}

TEST(CliTest, TokenFile) {
  EXPECT_EQ(RunCli({"--token=a", "--token-file=/x", "agents"}), kExitUsage);
  EXPECT_EQ(RunCli({"--token-file=/nonexistent/token", "agents"}), kExitUsage);
  const std::string dir = testing::TempDir();
  const std::string open_file = dir + "/tok_open";
  FILE* f = fopen(open_file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("secret-token\n", f);
  fclose(f);
  chmod(open_file.c_str(), 0644);
  EXPECT_EQ(RunCli({"--token-file", open_file, "agents"}), kExitUsage);  // o+r refused
  chmod(open_file.c_str(), 0600);
  EXPECT_EQ(RunCli({"--token-file", open_file, "agents"}), kExitUnreachable);
  setenv("IOFLEET_TOKEN_FILE", "/nonexistent/token", 1);
  EXPECT_EQ(RunCli({"agents"}), kExitUsage);
  unsetenv("IOFLEET_TOKEN_FILE");
}

// Exit 4, and a message that says what and where.
TEST(CliTest, UnreachableControllerExits4) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunCli({"agents"}), kExitUnreachable);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("connection refused: http://127.0.0.1:1 (set IOFLEET_CONTROLLER or "
                     "--controller)"),
            std::string::npos)
      << err;
  EXPECT_EQ(RunCli({"status"}), kExitUnreachable);
  EXPECT_EQ(RunCli({"runs"}), kExitUnreachable);
  EXPECT_EQ(RunCli({"watch", "j1"}), kExitUnreachable);  // at once: never reached
}

// Exit 2 and stderr, for a command line that must be refused before any request.
std::string Refused(std::vector<std::string> args) {
  testing::internal::CaptureStderr();
  const int rc = RunCli(std::move(args));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, kExitUsage) << err;
  return err;
}

// The global flags on the flag table (cli.cc DeclareGlobalFlags): before or
// after the command, a bad value exits 2 naming the flag and the value.
TEST(CliTest, GlobalFlagsNameTheFlagAndValue) {
  using ::testing::HasSubstr;
  EXPECT_THAT(Refused({"--controller=ftp://x", "agents"}),
              HasSubstr("--controller: \"ftp://x\" is not an http://HOST:PORT URL"));
  EXPECT_THAT(Refused({"agents", "--controller", "ftp://y"}),  // after the command
              HasSubstr("--controller: \"ftp://y\" is not an http://HOST:PORT URL"));
  EXPECT_THAT(Refused({"agents", "--controller"}), HasSubstr("--controller: needs a value"));
  // The token is a secret: the error names the flag and what is wrong, not the value.
  const std::string tok = Refused({"--token=se cret", "agents"});
  EXPECT_THAT(tok, HasSubstr("--token: the token contains whitespace or control characters"));
  EXPECT_EQ(tok.find("se cret"), std::string::npos) << tok;
  EXPECT_THAT(Refused({"--token=", "agents"}), HasSubstr("--token: the token is empty"));
  EXPECT_THAT(Refused({"agents", "--token-file=/nonexistent/tok"}),
              HasSubstr("--token-file: stat /nonexistent/tok: No such file"));
  EXPECT_THAT(Refused({"--controller=https://127.0.0.1:1", "--ca=/nonexistent/ca.pem", "agents"}),
              HasSubstr("--ca: cannot read \"/nonexistent/ca.pem\""));
  EXPECT_THAT(Refused({"--controller=https://127.0.0.1:1", "--cert=/nonexistent/c.pem",
                       "--key=/etc/hostname", "agents"}),
              HasSubstr("--cert: cannot read \"/nonexistent/c.pem\""));
  EXPECT_THAT(Refused({"--controller=https://127.0.0.1:1", "--cert=/etc/hostname",
                       "--key=/nonexistent/k.pem", "agents"}),
              HasSubstr("--key: cannot read \"/nonexistent/k.pem\""));
  // Good values in either place get as far as the (unreachable) controller.
  EXPECT_EQ(RunCli({"agents", "--controller=127.0.0.1:1", "--token=abc"}), kExitUnreachable);
  EXPECT_EQ(RunCli({"--controller", "127.0.0.1:1", "agents"}), kExitUnreachable);
}

// `iofleet history`'s flags, one table per subcommand (history_cmd.cc).
TEST(CliTest, HistoryFlagsNameTheFlagAndValue) {
  using ::testing::HasSubstr;
  EXPECT_THAT(Refused({"history", "alerts", "--state=done"}),
              HasSubstr("alerts: --state: \"done\" is not a triage state"));
  EXPECT_THAT(Refused({"history", "alerts", "--status=gone"}),
              HasSubstr("alerts: --status: \"gone\" is not an alert status"));
  EXPECT_THAT(Refused({"history", "series", "--brnch=main"}),
              HasSubstr("series: unknown flag \"--brnch=main\""));
  EXPECT_THAT(Refused({"history", "series", "--json=1"}), HasSubstr("--json: takes no value"));
  EXPECT_THAT(Refused({"history", "repro", "a1", "--output"}), HasSubstr("--output: needs a value"));
  EXPECT_THAT(Refused({"history", "show", "s1", "--metric=iops"}),
              HasSubstr("show: unknown flag \"--metric=iops\""));
  EXPECT_THAT(Refused({"history", "frob"}), HasSubstr("unknown subcommand \"frob\""));
  // Every filter the controller takes is a flag; good values reach the controller.
  EXPECT_EQ(RunCli({"history", "series", "--branch=main", "--metric", "iops", "--job_name=j",
                    "--json"}),
            kExitUnreachable);
  EXPECT_EQ(RunCli({"history", "alerts", "--state=untriaged", "--metric=iops", "--series=s"}),
            kExitUnreachable);
}

TEST(CliTest, ExitCodeFor) {
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("x")), kExitUnreachable);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("x")), kExitUnreachable);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("x")), kExitFailed);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), kExitFailed);
}

TEST(CliTest, NormalizeControllerUrl) {
  EXPECT_EQ(*NormalizeControllerUrl("127.0.0.1:7080"), "http://127.0.0.1:7080");
  EXPECT_EQ(*NormalizeControllerUrl("http://h:1/api/v1/"), "http://h:1");
  EXPECT_FALSE(NormalizeControllerUrl("http://h:1/other").ok());
  EXPECT_FALSE(NormalizeControllerUrl("").ok());
}

}  // namespace
}  // namespace iofleet::cli
