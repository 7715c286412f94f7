// Authentication, request limits and malformed bodies of the REST API.
#include <httplib.h>

#include "controller/api/rest/rest_server.h"
#include "controller/metrics/metrics.h"
#include "controller/testing/rest_stack.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kFio[] = "[job]\nfilename=/dev/nvme0n1\nrw=randread\nsize=1m\n";
constexpr char kToken[] = "s3cret-Token_1";

class RestSecurityTest : public testing::RestStackTest {
 protected:
  void Start(RestOptions ro, ApiLimits limits = ApiLimits()) {
    metrics_ = std::make_unique<metrics::ControllerMetrics>();
    testing::RestStackOptions o;
    o.scheduler.limits = limits;
    o.rest = std::move(ro);
    o.metrics = metrics_.get();
    StartStack(std::move(o));
    client_ = stack_->client();
  }
  void TearDown() override {
    stack_.reset();  // the server before the metrics it reports to
    metrics_.reset();
  }

  std::pair<int, json> Do(const std::string& method, const std::string& path,
                          const std::string& body = "", const std::string& auth = "") {
    httplib::Headers h;
    if (!auth.empty()) h.emplace("Authorization", auth);
    httplib::Result res = method == "POST"
                              ? client_->Post(path.c_str(), h, body, "application/json")
                              : client_->Get(path.c_str(), h);
    if (!res) return {0, json()};
    last_headers_ = res->headers;
    raw_ = res->body;
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  // No agent connects in these tests: jobs may wait for their hosts.
  std::pair<int, json> Submit(json body) {
    if (body.is_object() && !body.contains("wait_for_hosts")) body["wait_for_hosts"] = true;
    return Do("POST", "/api/v1/jobs", body.dump());
  }

  void ExpectFieldError(const std::pair<int, json>& r, int status, const std::string& field,
                        const std::string& text = "") {
    EXPECT_EQ(r.first, status) << r.second.dump();
    ASSERT_TRUE(r.second.is_object() && r.second.contains("error")) << r.second.dump();
    EXPECT_EQ(r.second["error"]["field"], field) << r.second.dump();
    EXPECT_THAT(r.second["error"]["message"].get<std::string>(), HasSubstr(text));
  }

  std::string raw_;
  httplib::Headers last_headers_;
  std::unique_ptr<metrics::ControllerMetrics> metrics_;
  httplib::Client* client_ = nullptr;
};

TEST_F(RestSecurityTest, TokenGuardsTheApi) {
  RestOptions ro;
  ro.api_token = kToken;
  Start(ro);
  const std::string good = std::string("Bearer ") + kToken;
  const json job = {{"fio", kFio}, {"hosts", {"a"}}, {"wait_for_hosts", true}};

  EXPECT_EQ(Do("GET", "/healthz").first, 200);
  EXPECT_EQ(Do("GET", "/metrics").first, 200);  // --metrics-auth=none (default)
  for (const std::string& auth :
       {std::string(), std::string("Bearer wrong"), std::string("Basic ") + kToken,
        std::string(kToken), std::string("Bearer ") + kToken + "x"}) {
    for (const char* path : {"/api/v1/jobs", "/api/v1/agents", "/api/v1/runs", "//api/v1/jobs",
                             "/api/v1/nothing", "/api"}) {
      auto r = Do("GET", path, "", auth);
      EXPECT_EQ(r.first, 401) << path << " " << auth;
      EXPECT_EQ(r.second["error"]["code"], "UNAUTHENTICATED") << path << r.second.dump();
    }
    auto r = Do("POST", "/api/v1/jobs", job.dump(), auth);
    EXPECT_EQ(r.first, 401);
    EXPECT_EQ(r.second["error"]["code"], "UNAUTHENTICATED");
    EXPECT_EQ(last_headers_.count("WWW-Authenticate"), 1u);
  }
  // Nothing changed: no job was created by the refused submits.
  auto list = Do("GET", "/api/v1/jobs", "", good);
  ASSERT_EQ(list.first, 200) << list.second.dump();
  EXPECT_TRUE(list.second["jobs"].empty());

  auto created = Do("POST", "/api/v1/jobs", job.dump(), good);
  ASSERT_EQ(created.first, 201) << created.second.dump();
  EXPECT_EQ(Do("GET", "/api/v1/jobs", "", "bearer  " + std::string(kToken)).first, 200);
  const std::string id = created.second["id"];
  EXPECT_EQ(Do("POST", "/api/v1/jobs/" + id + "/cancel", "", "Bearer nope").first, 401);
  EXPECT_EQ(Do("GET", "/api/v1/jobs/" + id, "", good).second["state"], "queued");
}

TEST_F(RestSecurityTest, MetricsAuthToken) {
  RestOptions ro;
  ro.api_token = kToken;
  ro.metrics_auth = true;
  Start(ro);
  auto r = Do("GET", "/metrics");
  EXPECT_EQ(r.first, 401);
  EXPECT_EQ(r.second["error"]["code"], "UNAUTHENTICATED");
  EXPECT_EQ(Do("GET", "/metrics", "", std::string("Bearer ") + kToken).first, 200);
  EXPECT_THAT(raw_, HasSubstr("iofleet_"));
  EXPECT_EQ(Do("GET", "/healthz").first, 200);
}

TEST_F(RestSecurityTest, NoTokenMeansOpen) {
  Start(RestOptions());
  EXPECT_EQ(Do("GET", "/api/v1/jobs").first, 200);
  EXPECT_EQ(Do("GET", "/api/v1/jobs", "", "Bearer anything").first, 200);
}

TEST_F(RestSecurityTest, BodyOverTheLimitIs413) {
  RestOptions ro;
  ro.max_body_bytes = 4096;
  Start(ro);
  json big = {{"fio", std::string(kFio) + "# " + std::string(5000, 'x') + "\n"}, {"hosts", {"a"}}};
  auto r = Submit(big);
  ExpectFieldError(r, 413, "body", "--max-body-bytes");
  EXPECT_EQ(Submit({{"fio", kFio}, {"hosts", {"a"}}}).first, 201);
}

TEST_F(RestSecurityTest, LimitsAre400NamingFieldAndFlag) {
  ApiLimits l;
  l.max_fio_text_bytes = 300;
  l.max_jobs_per_submit = 2;
  l.max_runs_per_job = 5;
  l.max_labels = 3;
  l.max_label_length = 16;
  Start(RestOptions(), l);
  ExpectFieldError(
      Submit({{"fio", std::string(kFio) + "#" + std::string(400, 'x') + "\n"}, {"hosts", {"a"}}}),
      400, "fio", "--max-fio-text-bytes");
  ExpectFieldError(Submit({{"options", {{"rw", "read"}, {"description", std::string(400, 'x')}}},
                           {"hosts", {"a"}}}),
                   400, "options", "--max-fio-text-bytes");
  ExpectFieldError(Submit({{"fio", "[a]\nioengine=null\n[b]\nioengine=null\n[c]\nioengine=null\n"},
                           {"hosts", {"a"}}}),
                   400, "fio", "--max-jobs-per-submit");
  ExpectFieldError(Submit({{"fio", kFio}, {"hosts", {"a", "b", "c"}}, {"repeat", 2}}), 400,
                   "repeat", "--max-runs-per-job");
  ExpectFieldError(Submit({{"fio", kFio}, {"hosts", {"a"}}, {"repeat", 6}}), 400, "repeat",
                   "--max-runs-per-job");
  ExpectFieldError(Submit({{"fio", kFio},
                           {"hosts", {"a"}},
                           {"tags", {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}}}),
                   400, "tags", "--max-labels");
  ExpectFieldError(
      Submit({{"fio", kFio}, {"hosts", {"a"}}, {"tags", {{"k", std::string(17, 'v')}}}}), 400,
      "tags.k", "--max-label-length");
  ExpectFieldError(Submit({{"fio", kFio}, {"selector", {{std::string(17, 'k'), "v"}}}}), 400,
                   "selector key", "--max-label-length");
  EXPECT_EQ(Submit({{"fio", kFio}, {"hosts", {"a"}}, {"repeat", 5}, {"tags", {{"k", "v"}}}}).first,
            201);
}

TEST_F(RestSecurityTest, MalformedBodiesAre4xxNamingTheField) {
  Start(RestOptions());
  const json base = {{"fio", kFio}, {"hosts", {"a"}}};
  auto with = [&](const std::string& k, const json& v) {
    json b = base;
    b[k] = v;
    return Submit(b);
  };
  // Unknown fields, at the top and inside variants.
  ExpectFieldError(with("bogus", 1), 400, "bogus", "unknown field");
  ExpectFieldError(with("Name", "x"), 400, "Name", "unknown field");
  ExpectFieldError(with("", "x"), 400, "body", "unknown field \"\"");
  // Wrong types.
  ExpectFieldError(with("name", 5), 400, "name");
  ExpectFieldError(with("name", json::array()), 400, "name");
  ExpectFieldError(with("fio", 3.5), 400, "fio");
  ExpectFieldError(with("fio", ""), 400, "fio");
  ExpectFieldError(with("tags", json::array({1})), 400, "tags");
  ExpectFieldError(with("tags", {{"k", {{"nested", 1}}}}), 400, "tags.k");
  ExpectFieldError(with("tags", {{"k", nullptr}}), 400, "tags.k");
  ExpectFieldError(with("retries", "3"), 400, "retries");
  ExpectFieldError(with("retries", 1.5), 400, "retries");
  ExpectFieldError(with("repeat", true), 400, "repeat");
  ExpectFieldError(with("variants", {{"name", "A"}}), 400, "variants");
  ExpectFieldError(with("variants", json::array({"A"})), 400, "variants[0]");
  ExpectFieldError(with("variants", json::array({{{"name", 1}}})), 400, "variants[0].name");
  ExpectFieldError(with("variants", json::array({{{"options", {{"bs", json::array()}}}}})), 400,
                   "variants[0].options.bs");
  ExpectFieldError(with("sweep", json::array({"bs"})), 400, "sweep");
  ExpectFieldError(with("sweep", {{"bs", {{"x", 1}}}}), 400, "sweep.bs");
  ExpectFieldError(with("host_overrides", json::array()), 400, "host_overrides");
  ExpectFieldError(with("hosts", json::array({1})), 400, "hosts[0]");
  ExpectFieldError(with("selector", "rack=a"), 400, "selector");
  // Huge values.
  ExpectFieldError(with("repeat", 4294967296ull), 400, "repeat");
  ExpectFieldError(with("repeat", 1e300), 400, "repeat");
  ExpectFieldError(with("retries", -1), 400, "retries");
  ExpectFieldError(Do("POST", "/api/v1/jobs",
                      R"({"fio": "[j]\nrw=read\n", "hosts": ["a"], "repeat": 1e999999})"),
                   400, "body");
  ExpectFieldError(Do("POST", "/api/v1/jobs",
                      R"({"fio": "x", "hosts": ["a"], "retries": 123456789012345678901234567890})"),
                   400, "retries");
  json huge_iodepth = base;
  huge_iodepth.erase("fio");
  huge_iodepth["options"] = {{"rw", "read"}, {"iodepth", 99999999999999999999.0}};
  ExpectFieldError(Submit(huge_iodepth), 400, "options", "iodepth");
  ExpectFieldError(with("fio", "[job]\nsize=99999999999999999999999\n"), 400, "fio", "size");
  ExpectFieldError(with("fio", "[job]\nbs=" + std::string(10000, '9') + "\n"), 400, "fio");
  // Deep nesting anywhere, and nesting inside an otherwise valid body.
  ExpectFieldError(Do("POST", "/api/v1/jobs", std::string(100000, '[')), 400, "body", "deep");
  ExpectFieldError(
      Do("POST", "/api/v1/jobs",
         R"({"fio": "x", "tags": )" + std::string(40, '[') + std::string(40, ']') + "}"),
      400, "body", "deep");
  ExpectFieldError(with("tags", {{"k", json::parse(std::string(20, '[') + std::string(20, ']'))}}),
                   400, "tags.k");
  // Not JSON / not an object / binary garbage / invalid UTF-8 in a string.
  ExpectFieldError(Do("POST", "/api/v1/jobs", ""), 400, "body");
  ExpectFieldError(Do("POST", "/api/v1/jobs", "null"), 400, "body");
  ExpectFieldError(Do("POST", "/api/v1/jobs", std::string("\x00\xff\xfe{", 4)), 400, "body");
  auto bad_utf8 = Do("POST", "/api/v1/jobs", "{\"name\": \"\xff\xfe\", \"fio\": \"x\"}");
  EXPECT_EQ(bad_utf8.first, 400);
  auto dup =
      Do("POST", "/api/v1/jobs", R"({"fio": "[j]\nioengine=null\n", "fio": 5, "hosts": ["a"]})");
  EXPECT_GE(dup.first, 200);  // last key wins (nlohmann): a 4xx or a clean submit, never a 5xx
  EXPECT_LT(dup.first, 500);
  // include would read (and echo in errors) the controller's own files.
  ExpectFieldError(with("fio", "include /etc/passwd\n[j]\nioengine=null\n"), 400, "fio",
                   "include is not allowed");
  ExpectFieldError(with("fio", "[j]\nioengine=null\ninclude /dev/zero\n"), 400, "fio",
                   "include is not allowed");
  // Nothing got through.
  auto list = Do("GET", "/api/v1/jobs");
  EXPECT_TRUE(list.second["jobs"].size() <= 1u) << list.second.dump();
}

}  // namespace
}  // namespace iofleet::controller::rest
