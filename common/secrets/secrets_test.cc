#include "common/secrets/secrets.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::secrets {
namespace {

class SecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }

  std::string Write(const std::string& name, const std::string& content, mode_t mode = 0600) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << content;
    ::chmod(p.c_str(), mode);
    return p;
  }

  iofleet::testing::TempDir tmp_{"iofleet_secrets_test"};
  std::filesystem::path dir_;  // tmp_.path()
};

TEST_F(SecretsTest, TokenFileIsTrimmed) {
  auto t = ReadTokenFile(Write("t", "  s3cret-token\n\n"), "api-token-file");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "s3cret-token");
}

TEST_F(SecretsTest, TokenFileRefusals) {
  auto empty = ReadTokenFile(Write("e", " \n\t\n"), "api-token-file");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("--api-token-file"), absl::string_view::npos);
  EXPECT_NE(empty.status().message().find("empty"), absl::string_view::npos);

  auto world = ReadTokenFile(Write("w", "tok\n", 0644), "agent-token-file");
  ASSERT_FALSE(world.ok());
  EXPECT_NE(world.status().message().find("readable by every user"), absl::string_view::npos);

  EXPECT_TRUE(ReadTokenFile(Write("g", "tok\n", 0640), "x").ok());
  EXPECT_FALSE(ReadTokenFile(Write("s", "two words\n"), "x").ok());
  EXPECT_FALSE(ReadTokenFile((dir_ / "missing").string(), "x").ok());
  EXPECT_FALSE(ReadTokenFile(dir_.string(), "x").ok());
}

TEST(TokenTest, EqualsAndBearer) {
  EXPECT_TRUE(TokenEquals("abc", "abc"));
  EXPECT_FALSE(TokenEquals("abd", "abc"));
  EXPECT_FALSE(TokenEquals("ab", "abc"));
  EXPECT_FALSE(TokenEquals("abcd", "abc"));
  EXPECT_FALSE(TokenEquals("", "abc"));
  EXPECT_FALSE(TokenEquals("", ""));  // an unset token never matches
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer   abc "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer "), "");
  EXPECT_EQ(BearerToken(""), "");
}

TEST_F(SecretsTest, PemFiles) {
  const std::string pki = (dir_ / "pki").string();
  ASSERT_EQ(std::system((std::string(IOFLEET_GEN_CERTS) + " " + pki).c_str()), 0);
  auto cert = ReadPemFile(pki + "/server.pem", "tls-cert", PemKind::kCertificates);
  auto key = ReadPemFile(pki + "/server.key", "tls-key", PemKind::kPrivateKey);
  ASSERT_TRUE(cert.ok()) << cert.status();
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_TRUE(CheckKeyMatchesCertificate(*cert, *key).ok());
  auto other = ReadPemFile(pki + "/client.key", "tls-key", PemKind::kPrivateKey);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(CheckKeyMatchesCertificate(*cert, *other).ok());

  auto swapped = ReadPemFile(pki + "/server.key", "tls-cert", PemKind::kCertificates);
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("--tls-cert"), absl::string_view::npos);
  EXPECT_FALSE(ReadPemFile(Write("junk.pem", "not a pem"), "tls-key", PemKind::kPrivateKey).ok());
}

}  // namespace
}  // namespace iofleet::secrets
