// Security flags of `iofleet-agent serve`: --token-file and --tls-*.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/transport/serve_options.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

absl::StatusOr<ServeOptions> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string prog = "iofleet-agent";
  argv.push_back(prog.data());
  args.insert(args.begin(), "--controller=127.0.0.1:7070");
  for (auto& a : args) argv.push_back(a.data());
  return ParseServeFlags(static_cast<int>(argv.size()), argv.data());
}

class ServeSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
  iofleet::testing::TempDir tmp_{"iofleet_serve_sec"};
  std::string dir_;  // tmp_.path()
};

TEST_F(ServeSecurityTest, TokenFile) {
  auto o = Parse({"--token-file=" + Write("t", "enrol-me\n")});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->token, "enrol-me");
  auto world = Parse({"--token-file", Write("w", "x\n", 0644)});
  ASSERT_FALSE(world.ok());
  EXPECT_NE(world.status().message().find("--token-file"), absl::string_view::npos);
  EXPECT_FALSE(Parse({"--token-file=" + Write("e", "\n")}).ok());
  EXPECT_FALSE(Parse({"--token=has space"}).ok());
  EXPECT_TRUE(Parse({"--token="}).ok());  // empty = none (a config file's "token =")
}

TEST_F(ServeSecurityTest, TlsFlags) {
  ASSERT_EQ(std::system((std::string(IOFLEET_GEN_CERTS) + " " + dir_ + "/pki").c_str()), 0);
  const std::string pki = dir_ + "/pki/";
  auto o = Parse({"--tls-ca=" + pki + "ca.pem", "--tls-cert=" + pki + "client.pem",
                  "--tls-key=" + pki + "client.key", "--tls-server-name=localhost"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->tls);
  EXPECT_NE(o->tls_ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(o->tls_key_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(o->tls_server_name, "localhost");

  auto ca_only = Parse({"--tls-ca=" + pki + "ca.pem"});
  ASSERT_TRUE(ca_only.ok());
  EXPECT_TRUE(ca_only->tls);
  EXPECT_FALSE(Parse({})->tls);

  auto half = Parse({"--tls-cert=" + pki + "client.pem"});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("--tls-key"), absl::string_view::npos);
  auto mismatch = Parse({"--tls-cert=" + pki + "client.pem", "--tls-key=" + pki + "server.key"});
  EXPECT_FALSE(mismatch.ok());
  auto not_pem = Parse({"--tls-ca=" + Write("junk", "junk")});
  ASSERT_FALSE(not_pem.ok());
  EXPECT_NE(not_pem.status().message().find("--tls-ca"), absl::string_view::npos);
  EXPECT_FALSE(Parse({"--tls-key=" + pki + "missing.key"}).ok());
}

}  // namespace
}  // namespace iofleet::agent
