#include "agent/transport/serve_options.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

absl::StatusOr<ServeOptions> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string prog = "iofleet-agent";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  return ParseServeFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(ServeOptionsTest, ParsesAllFlags) {
  auto o = Parse({"serve", "--controller=127.0.0.1:7070", "--labels=rack=a,disk=nvme",
                  "--allow-path=/tmp/a", "--allow-path", "/tmp/b", "--name=agent-1",
                  "--spool-dir=/tmp/spool", "--interval-ms=200", "--backoff-max-ms=2000",
                  "--log-dir=/tmp/logs"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->controller, "127.0.0.1:7070");
  EXPECT_EQ(o->labels.at("rack"), "a");
  EXPECT_EQ(o->labels.at("disk"), "nvme");
  EXPECT_EQ(o->allow_paths, (std::vector<std::string>{"/tmp/a", "/tmp/b"}));
  EXPECT_EQ(o->name, "agent-1");
  EXPECT_EQ(o->spool_dir, "/tmp/spool");
  EXPECT_EQ(o->log_dir, "/tmp/logs");
  EXPECT_EQ(o->interval_ms, 200u);
  EXPECT_EQ(o->backoff_max_ms, 2000u);
}

TEST(ServeOptionsTest, DefaultsNameAndSpoolDir) {
  auto o = Parse({"--controller=h:1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->name.empty());
  EXPECT_EQ(o->spool_dir, "/var/tmp/iofleet-agent-" + o->name);
  EXPECT_EQ(o->log_dir, "/var/tmp/iofleet-agent-" + o->name + "/logs");
}

TEST(ServeOptionsTest, ControllerTakesAListOfAddresses) {
  auto o = Parse({"--controller=a:7070,b:7071,c:7072"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->controllers, (std::vector<std::string>{"a:7070", "b:7071", "c:7072"}));
  EXPECT_EQ(o->controller, "a:7070");
  o = Parse({"--controller=h:1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->controllers, (std::vector<std::string>{"h:1"}));
  o = Parse({"--controller=a:7070,,b:7071"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--controller"), absl::string_view::npos);
  o = Parse({"--controller=a:7070,nohostport"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("\"nohostport\""), absl::string_view::npos)
      << o.status();
}

TEST(ServeOptionsTest, ErrorsNameTheFlag) {
  auto o = Parse({"--labels=a=b"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--controller"), absl::string_view::npos);
  o = Parse({"--controller=h:1", "--labels=novalue"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--labels"), absl::string_view::npos);
  o = Parse({"--controller=h:1", "--bogus=1"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--bogus"), absl::string_view::npos);
  o = Parse({"--controller=h:1", "--interval-ms=abc"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--interval-ms"), absl::string_view::npos);
  o = Parse({"--controller=nohostport"});
  EXPECT_FALSE(o.ok());
  o = Parse({"--controller"});
  EXPECT_FALSE(o.ok());
}

}  // namespace
}  // namespace iofleet::agent
