#include "controller/api/rest/rest_server.h"

#include <httplib.h>

#include "controller/testing/rest_stack.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

constexpr char kFio[] = "[job]\nfilename=/dev/nvme0n1\nrw=randread\nsize=1m\n";

class RestServerTest : public testing::RestStackTest {
 protected:
  void SetUp() override {
    StartStack();
    sched_ = stack_->scheduler();
    client_ = stack_->client();
  }

  // Returns {status, parsed body}.
  std::pair<int, json> Post(const std::string& path, const std::string& body) {
    auto res = client_->Post(path.c_str(), body, "application/json");
    if (!res) return {0, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  std::pair<int, json> Get(const std::string& path) {
    auto res = client_->Get(path.c_str());
    if (!res) return {0, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  // No agent connects in these tests: jobs may wait for their hosts.
  std::pair<int, json> Submit(json body) {
    if (body.is_object() && !body.contains("wait_for_hosts")) body["wait_for_hosts"] = true;
    return Post("/api/v1/jobs", body.dump());
  }

  void ExpectFieldError(const std::pair<int, json>& r, int status, const std::string& field) {
    EXPECT_EQ(r.first, status) << r.second.dump();
    ASSERT_TRUE(r.second.is_object()) << r.second.dump();
    ASSERT_TRUE(r.second.contains("error")) << r.second.dump();
    EXPECT_EQ(r.second["error"]["field"], field) << r.second.dump();
    EXPECT_TRUE(r.second["error"]["message"].is_string());
    EXPECT_TRUE(r.second["error"]["code"].is_string());
  }

  Scheduler* sched_ = nullptr;
  httplib::Client* client_ = nullptr;
};

TEST_F(RestServerTest, Healthz) {
  auto r = Get("/healthz");
  EXPECT_EQ(r.first, 200);
  EXPECT_EQ(r.second["status"], "ok");
}

TEST_F(RestServerTest, BadBodiesAre400NamingTheField) {
  ExpectFieldError(Post("/api/v1/jobs", "{not json"), 400, "body");
  ExpectFieldError(Post("/api/v1/jobs", "[1,2]"), 400, "body");
  ExpectFieldError(Post("/api/v1/jobs", std::string(100, '[') + std::string(100, ']')), 400,
                   "body");
  ExpectFieldError(Submit({{"name", "x"}, {"hosts", {"a"}}}), 400, "fio");
  ExpectFieldError(Submit({{"fio", kFio}, {"hosts", {"a"}}, {"repeats", 3}}), 400, "repeats");
  ExpectFieldError(Submit({{"fio", kFio}, {"hosts", 5}}), 400, "hosts");
  ExpectFieldError(Submit({{"fio", kFio}, {"hosts", {"a"}}, {"repeat", -1}}), 400, "repeat");
  ExpectFieldError(Submit({{"fio", kFio}}), 400, "hosts");
  ExpectFieldError(Submit({{"fio", kFio}, {"hosts", {"a"}}, {"sweep", {{"bs", "4k"}}}}), 400,
                   "sweep.bs");
  ExpectFieldError(
      Submit({{"fio", kFio}, {"hosts", {"a"}}, {"variants", {{{"name", "A"}, {"extra", 1}}}}}),
      400, "variants[0].extra");
  ExpectFieldError(Submit({{"fio", kFio},
                           {"hosts", {"a"}},
                           {"host_overrides", {{"a", {{"iodepth", {1, 2}}}}}}}),
                   400, "host_overrides.a.iodepth");
}

TEST_F(RestServerTest, BadFioTextIs400NamingFio) {
  auto r = Submit({{"fio", "[job]\nrw=sideways\n"}, {"hosts", {"a"}}});
  ExpectFieldError(r, 400, "fio");
  EXPECT_THAT(r.second["error"]["message"].get<std::string>(), ::testing::HasSubstr("rw"));
  auto o = Submit({{"options", {{"rw", "randread"}, {"iodepth", 0}}}, {"hosts", {"a"}}});
  ExpectFieldError(o, 400, "options");
}

TEST_F(RestServerTest, SubmitGetRunsAndCancel) {
  auto r = Submit({{"name", "n1"},
                   {"fio", kFio},
                   {"hosts", {"a", "b"}},
                   {"repeat", 2},
                   {"tags", {{"branch", "main"}}},
                   {"host_overrides", {{"b", {{"filename", "/dev/nvme1n1"}}}}}});
  ASSERT_EQ(r.first, 201) << r.second.dump();
  const std::string id = r.second["id"];
  auto job = Get("/api/v1/jobs/" + id);
  ASSERT_EQ(job.first, 200);
  EXPECT_EQ(job.second["name"], "n1");
  EXPECT_EQ(job.second["state"], "queued");
  EXPECT_EQ(job.second["tags"]["branch"], "main");
  ASSERT_EQ(job.second["runs"].size(), 4u);
  const std::string run_id = job.second["runs"][0]["id"];
  auto run = Get("/api/v1/runs/" + run_id);
  ASSERT_EQ(run.first, 200);
  EXPECT_EQ(run.second["state"], "queued");
  EXPECT_TRUE(run.second["result"].is_null());
  auto samples = Get("/api/v1/runs/" + run_id + "/samples");
  ASSERT_EQ(samples.first, 200);
  EXPECT_TRUE(samples.second["records"].empty());
  auto runs = Get("/api/v1/runs?job_id=" + id);
  ASSERT_EQ(runs.first, 200);
  EXPECT_EQ(runs.second["runs"].size(), 4u);

  auto cancelled = Post("/api/v1/jobs/" + id + "/cancel", "");
  ASSERT_EQ(cancelled.first, 200) << cancelled.second.dump();
  EXPECT_EQ(cancelled.second["state"], "cancelled");
  EXPECT_EQ(cancelled.second["runs"][0]["state"], "cancelled");

  // No variants: nothing to compare (controller/compare/job_compare_test.cc has the rest).
  auto cmp = Get("/api/v1/jobs/" + id + "/compare");
  EXPECT_EQ(cmp.first, 400);
  EXPECT_EQ(cmp.second["error"]["field"], "variants");
}

TEST_F(RestServerTest, NotFoundIs404) {
  for (const char* path : {"/api/v1/jobs/nope", "/api/v1/runs/nope", "/api/v1/runs/nope/samples",
                           "/api/v1/jobs/nope/compare", "/api/v1/nothing"}) {
    auto r = Get(path);
    EXPECT_EQ(r.first, 404) << path;
    EXPECT_EQ(r.second["error"]["code"], "NOT_FOUND") << path << r.second.dump();
  }
  EXPECT_EQ(Post("/api/v1/jobs/nope/cancel", "").first, 404);
}

TEST_F(RestServerTest, Paging) {
  std::set<std::string> submitted;
  for (int i = 0; i < 5; ++i) {
    auto r = Submit({{"fio", kFio}, {"hosts", {"a"}}});
    ASSERT_EQ(r.first, 201);
    submitted.insert(r.second["id"].get<std::string>());
  }
  std::set<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto r = Get("/api/v1/jobs?page_size=2" + (token.empty() ? "" : "&page_token=" + token));
    ASSERT_EQ(r.first, 200);
    EXPECT_LE(r.second["jobs"].size(), 2u);
    for (const auto& j : r.second["jobs"]) seen.insert(j["id"].get<std::string>());
    token = r.second["next_page_token"];
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, submitted);
  ExpectFieldError(Get("/api/v1/jobs?page_token=bogus"), 400, "page_token");
  ExpectFieldError(Get("/api/v1/jobs?page_size=abc"), 400, "page_size");
  ExpectFieldError(Get("/api/v1/runs?state=weird"), 400, "state");
}

// The status view: newest first, filtered and limited by the controller, with
// run counts, tags and arms per job; the page token continues to older jobs.
TEST_F(RestServerTest, JobsNewestFirstFilteredWithCounts) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    json body = {{"name", i % 2 == 0 ? "fio-even" : "other"},
                 {"fio", kFio},
                 {"hosts", {"a"}},
                 {"repeat", i + 1},
                 {"tags", {{"branch", i < 3 ? "x" : "y"}, {"n", std::to_string(i)}}}};
    if (i == 4) body["sweep"] = {{"bs", {"4k", "64k"}}};
    auto r = Submit(body);
    ASSERT_EQ(r.first, 201) << r.second.dump();
    ids.push_back(r.second["id"]);
  }
  ASSERT_EQ(Post("/api/v1/jobs/" + ids[1] + "/cancel", "").first, 200);

  auto all = Get("/api/v1/jobs?order=newest&page_size=3");
  ASSERT_EQ(all.first, 200) << all.second.dump();
  ASSERT_EQ(all.second["jobs"].size(), 3u);
  EXPECT_EQ(all.second["jobs"][0]["id"], ids[4]);
  EXPECT_EQ(all.second["jobs"][1]["id"], ids[3]);
  EXPECT_EQ(all.second["jobs"][2]["id"], ids[2]);
  // Job 4: repeat 5 x 2 sweep cells, all queued; its sweep and tags come along.
  EXPECT_EQ(all.second["jobs"][0]["run_counts"]["queued"], 10);
  EXPECT_EQ(all.second["jobs"][0]["spec"]["sweep"]["bs"].size(), 2u);
  EXPECT_EQ(all.second["jobs"][0]["tags"]["branch"], "y");
  const std::string token = all.second["next_page_token"];
  ASSERT_FALSE(token.empty());
  auto older = Get("/api/v1/jobs?order=newest&page_size=3&page_token=" + token);
  ASSERT_EQ(older.first, 200);
  ASSERT_EQ(older.second["jobs"].size(), 2u);
  EXPECT_EQ(older.second["jobs"][0]["id"], ids[1]);
  EXPECT_EQ(older.second["jobs"][0]["run_counts"]["cancelled"], 2);
  EXPECT_EQ(older.second["jobs"][1]["id"], ids[0]);
  EXPECT_EQ(older.second["next_page_token"], "");

  auto named = Get("/api/v1/jobs?order=newest&name=even");
  ASSERT_EQ(named.first, 200);
  ASSERT_EQ(named.second["jobs"].size(), 3u);  // 4, 2, 0
  EXPECT_EQ(named.second["jobs"][2]["id"], ids[0]);
  auto tagged = Get("/api/v1/jobs?order=newest&tag=branch%3Dx&tag=n%3D2");
  ASSERT_EQ(tagged.second["jobs"].size(), 1u);
  EXPECT_EQ(tagged.second["jobs"][0]["id"], ids[2]);
  auto state = Get("/api/v1/jobs?order=newest&state=cancelled");
  ASSERT_EQ(state.second["jobs"].size(), 1u);
  EXPECT_EQ(state.second["jobs"][0]["id"], ids[1]);
  ExpectFieldError(Get("/api/v1/jobs?order=sideways"), 400, "order");
  ExpectFieldError(Get("/api/v1/jobs?tag=novalue"), 400, "tag");
  // Oldest first stays the default order.
  auto plain = Get("/api/v1/jobs");
  EXPECT_EQ(plain.second["jobs"][0]["id"], ids[0]);
}

TEST_F(RestServerTest, JobRecordsRoute) {
  auto r = Submit({{"fio", kFio}, {"hosts", {"a"}}});
  ASSERT_EQ(r.first, 201);
  auto recs = Get("/api/v1/jobs/" + r.second["id"].get<std::string>() + "/records");
  ASSERT_EQ(recs.first, 200) << recs.second.dump();
  EXPECT_TRUE(recs.second["records"].is_array());
  EXPECT_EQ(recs.second["state"], "queued");
  EXPECT_EQ(Get("/api/v1/jobs/nope/records").first, 404);
}

TEST_F(RestServerTest, AgentsListIsJson) {
  auto r = Get("/api/v1/agents");
  ASSERT_EQ(r.first, 200);
  EXPECT_TRUE(r.second["agents"].is_array());
}

}  // namespace
}  // namespace iofleet::controller::rest
