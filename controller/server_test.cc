#include "controller/server.h"

#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/testing/temp_dir.h"
#include "controller/scheduler/field_error.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

TEST(ParseHostPortTest, Forms) {
  auto a = ParseHostPort("127.0.0.1:7070", "grpc-listen");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 7070);
  auto b = ParseHostPort("[::1]:0", "http-listen");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "::1");
  EXPECT_EQ(ErrorField(ParseHostPort("nohost", "grpc-listen").status()), "grpc-listen");
  EXPECT_FALSE(ParseHostPort("h:99999", "x").ok());
}

TEST(ControllerServerTest, StartsOnPortZeroAndSurvivesRestart) {
  iofleet::testing::TempDir tmp("iofleet_srv");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  ServerOptions o;
  o.data_dir = dir + "/data";
  o.grpc_listen = "127.0.0.1:0";
  o.http_listen = "127.0.0.1:0";
  std::string job_id;
  for (int round = 0; round < 2; ++round) {
    o.init = round == 0;  // the restart finds the store without --init
    auto s = ControllerServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    const std::string http = (*s)->http_address();
    int port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(http.substr(http.rfind(':') + 1), &port));
    ASSERT_GT(port, 0);
    httplib::Client c("127.0.0.1", port);
    auto h = c.Get("/healthz");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    if (round == 0) {
      auto r = c.Post("/api/v1/jobs",
                      R"({"fio": "[j]\nfilename=/dev/nvme0n1\nsize=1m\n", "hosts": ["x"],
                          "wait_for_hosts": true})",
                      "application/json");
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 201) << r->body;
      job_id = r->body;
    } else {
      auto r = c.Get("/api/v1/jobs");
      ASSERT_TRUE(r);
      EXPECT_NE(r->body.find(job_id.substr(7, 13)), std::string::npos) << r->body;
    }
    (*s)->Shutdown();
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/data/iofleet.db"));
}

TEST(ControllerServerTest, NoStoreWithoutInitAndOneControllerPerDataDir) {
  iofleet::testing::TempDir tmp("iofleet_srv");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  ServerOptions o;
  o.data_dir = dir + "/data";
  o.grpc_listen = "127.0.0.1:0";
  o.http_listen = "127.0.0.1:0";
  auto missing = ControllerServer::Start(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--init"), absl::string_view::npos);
  EXPECT_FALSE(std::filesystem::exists(o.data_dir));  // nothing made

  o.init = true;
  auto first = ControllerServer::Start(o);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->store_id().size(), 36u);  // a UUID
  auto second = ControllerServer::Start(o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(absl::StrCat("pid ", getpid())), absl::string_view::npos)
      << second.status();
  const std::string id = (*first)->store_id();
  (*first)->Shutdown();
  o.init = false;
  auto again = ControllerServer::Start(o);  // the lock is free; the same store
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->store_id(), id);
  (*again)->Shutdown();
}

}  // namespace
}  // namespace iofleet::controller
