#include "controller/api/rest/proto_json.h"

#include "controller/scheduler/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

TEST(ProtoJsonTest, EveryRuleNamesAField) { EXPECT_EQ(FirstUnknownRuleField(), ""); }

// A run as REST shows it: enum spelled as before, 64-bit integers as numbers
// (protobuf's mapping would quote them), the result as JSON, every field present.
TEST(ProtoJsonTest, RunKeepsTheRestShape) {
  v1::Run r;
  r.set_id("j-1");
  r.set_state(v1::RUN_STATE_SUCCEEDED);
  r.set_created_ms(1764638000123);  // past 2^32, under 2^53
  r.set_result_json(R"({"jobs": [{"jobname": "x"}]})");
  json j = ToJson(r);
  EXPECT_EQ(j["state"], "succeeded");
  ASSERT_TRUE(j["created_ms"].is_number_unsigned()) << j.dump();
  EXPECT_EQ(j["created_ms"].get<uint64_t>(), 1764638000123u);
  EXPECT_EQ(j["result"]["jobs"][0]["jobname"], "x");
  EXPECT_EQ(j["finished_ms"], 0);
  EXPECT_EQ(j["error"], "");
  EXPECT_TRUE(j["missing_seqs"].is_array());
  EXPECT_FALSE(j.contains("result_json"));
  EXPECT_FALSE(j.contains("fio_text"));  // omitted when empty
  r.clear_result_json();
  EXPECT_TRUE(ToJson(r)["result"].is_null());
  r.set_result_json("{not json");
  EXPECT_EQ(ToJson(r)["result"], "{not json");
  r.set_state(v1::RUN_STATE_UNSPECIFIED);
  EXPECT_EQ(ToJson(r)["state"], "unspecified");
}

TEST(ProtoJsonTest, IntervalHistogramIsPairs) {
  v1::IntervalRecord rec;
  rec.set_seq(7);
  rec.mutable_read()->add_clat_bucket(175);
  rec.mutable_read()->add_clat_count(3);
  rec.mutable_read()->add_clat_bucket(180);
  rec.mutable_read()->add_clat_count(1);
  json j = ToJson(rec);
  EXPECT_EQ(j["read"]["clat_hist"], json::parse("[[175, 3], [180, 1]]"));
  EXPECT_FALSE(j["read"].contains("clat_count"));
  EXPECT_FALSE(j["read"].contains("clat_bucket"));
  EXPECT_EQ(j["write"]["clat_hist"], json::array());
  EXPECT_EQ(j["seq"], 7);
  EXPECT_EQ(j["write"]["ios"], 0);
}

// Total latency (issue 18): "lat_hist" pairs where measured, an empty list for
// a measured empty window, and no key at all where the job measured none.
TEST(ProtoJsonTest, IntervalLatHistogramOnlyWhereMeasured) {
  v1::IntervalRecord rec;
  rec.mutable_read()->set_lat_measured(true);
  rec.mutable_read()->add_lat_bucket(190);
  rec.mutable_read()->add_lat_count(4);
  rec.mutable_write()->set_lat_measured(true);
  rec.mutable_trim()->set_ios(0);
  json j = ToJson(rec);
  EXPECT_EQ(j["read"]["lat_hist"], json::parse("[[190, 4]]"));
  EXPECT_FALSE(j["read"].contains("lat_count"));
  EXPECT_FALSE(j["read"].contains("lat_bucket"));
  EXPECT_FALSE(j["read"].contains("lat_measured"));
  EXPECT_EQ(j["write"]["lat_hist"], json::array());
  EXPECT_FALSE(j["trim"].contains("lat_hist")) << j.dump();
  EXPECT_TRUE(j["trim"].contains("clat_hist"));
}

TEST(ProtoJsonTest, AgentInventoryIsAnObject) {
  v1::Agent a;
  a.set_inventory_json(R"({"hostname": "h"})");
  EXPECT_EQ(ToJson(a)["inventory"]["hostname"], "h");
  a.set_inventory_json("");
  EXPECT_EQ(ToJson(a)["inventory"], json::object());
}

TEST(ProtoJsonTest, InvalidUtf8IsReplacedNotLost) {
  v1::Run r;
  r.set_error(std::string("bad \xff\xfe byte"));
  json j = ToJson(r);
  ASSERT_TRUE(j["error"].is_string()) << Dump(j);
  EXPECT_THAT(j["error"].get<std::string>(), testing::StartsWith("bad "));
  EXPECT_EQ(j["state"], "unspecified");
}

// JobSpec.warmup is optional: absent (the default: on for 2+ variants) and an
// explicit false stay apart through REST; order_seed is a plain number.
TEST(ProtoJsonTest, WarmupKeepsPresenceAndOrderSeedIsANumber) {
  v1::JobSpec off;
  ASSERT_TRUE(FromJson(R"({"name": "n", "warmup": false, "order_seed": 12345})", &off).ok());
  EXPECT_TRUE(off.has_warmup());
  EXPECT_FALSE(off.warmup());
  EXPECT_EQ(off.order_seed(), 12345u);
  json j = ToJson(off);
  EXPECT_EQ(j["warmup"], false) << j.dump();
  EXPECT_EQ(j["order_seed"], 12345) << j.dump();
  v1::JobSpec unset;
  ASSERT_TRUE(FromJson(R"({"name": "n"})", &unset).ok());
  EXPECT_FALSE(unset.has_warmup());
  EXPECT_FALSE(ToJson(unset).contains("warmup")) << ToJson(unset).dump();
  v1::JobSpec bad;
  absl::Status st = FromJson(R"({"name": "n", "warmup": "sometimes"})", &bad);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), testing::HasSubstr("warmup"));
}

TEST(ProtoJsonTest, JobSpecBodyDecodesAndEncodesBack) {
  v1::JobSpec spec;
  ASSERT_TRUE(FromJson(R"({"name": "n", "options": {"rw": "read", "size": 1048576},
                            "hosts": {"rack": "r1"}, "selector": {"tier": "gold"},
                            "host_overrides": {"a": {"iodepth": 4, "direct": true}},
                            "variants": [{"name": "B", "options": {"bs": 8192}, "hosts": ["x"]}],
                            "sweep": {"iodepth": [1, "2", false]}, "tags": {"k": "v"},
                            "retries": 2, "wait_for_hosts": true})",
                       &spec)
                  .ok());
  EXPECT_EQ(spec.name(), "n");
  EXPECT_EQ(json::parse(spec.options_json()), json::parse(R"({"rw": "read", "size": 1048576})"));
  EXPECT_EQ(spec.selector().at("rack"), "r1");
  EXPECT_EQ(spec.selector().at("tier"), "gold");
  EXPECT_EQ(spec.hosts_size(), 0);
  EXPECT_EQ(spec.host_overrides().at("a").options().at("iodepth"), "4");
  EXPECT_EQ(spec.host_overrides().at("a").options().at("direct"), "1");
  EXPECT_EQ(spec.variants(0).options().at("bs"), "8192");
  EXPECT_EQ(spec.variants(0).hosts(0), "x");
  EXPECT_THAT(spec.sweep().at("iodepth").values(), testing::ElementsAre("1", "2", "0"));
  EXPECT_EQ(spec.retries(), 2u);
  EXPECT_TRUE(spec.wait_for_hosts());

  json j = ToJson(spec);
  EXPECT_EQ(j["options"]["size"], 1048576);
  EXPECT_EQ(j["host_overrides"]["a"]["direct"], "1");
  EXPECT_EQ(j["sweep"]["iodepth"], json::parse(R"(["1", "2", "0"])"));
  EXPECT_EQ(j["repeat"], 1);  // 0 reads as 1
  EXPECT_EQ(j["variants"][0], json::parse(R"({"name": "B", "options": {"bs": "8192"},
                                              "hosts": ["x"]})"));
  EXPECT_FALSE(j.contains("fio"));
  EXPECT_FALSE(j.contains("hosts"));
  v1::JobSpec again;
  ASSERT_TRUE(FromJson(Dump(j), &again).ok()) << Dump(j);
  EXPECT_EQ(again.selector().size(), 2u);
  EXPECT_EQ(again.repeat(), 1u);
}

// Each bad body: InvalidArgument naming the field path and what it must be.
TEST(ProtoJsonTest, BadBodiesNameTheField) {
  struct Case {
    const char* body;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {"{x", "body", "not valid JSON"},
      {"[]", "body", "must be a JSON object"},
      {R"({"fio_text": "x"})", "fio_text", "unknown field"},
      {R"({"": 1})", "body", "unknown field \"\""},
      {R"({"variants": [{"name": "A", "extra": 1}]})", "variants[0].extra", "unknown field"},
      {R"({"variants": [5]})", "variants[0]", "must be an object"},
      {R"({"variants": {}})", "variants", "must be a list"},
      {R"({"name": 5})", "name", "must be a string"},
      {R"({"fio": 5})", "fio", "must be a string (fio job file text)"},
      {R"({"fio": ""})", "fio", "is empty"},
      {R"({"options": 5})", "options", "must be an object of fio options"},
      {R"({"hosts": 5})", "hosts", "must be a list of host names or an object of label selectors"},
      {R"({"hosts": [1]})", "hosts[0]", "must be a string"},
      {R"({"hosts": {"k": [1]}})", "hosts.k", "must be a string, number or boolean"},
      {R"({"repeat": -1})", "repeat", "must be a non-negative integer"},
      {R"({"repeat": 4294967296})", "repeat", "must be a non-negative integer"},
      {R"({"repeat": 1.5})", "repeat", "must be a non-negative integer"},
      {R"({"wait_for_hosts": "yes"})", "wait_for_hosts", "must be true or false"},
      {R"({"sweep": {"bs": "4k"}})", "sweep.bs", "must be a list of values"},
      {R"({"sweep": {"bs": [[1]]}})", "sweep.bs[0]", "must be a string, number or boolean"},
      {R"({"sweep": 1})", "sweep", "must be an object: option -> [values]"},
      {R"({"host_overrides": {"a": {"iodepth": [1, 2]}}})", "host_overrides.a.iodepth",
       "must be a string, number or boolean"},
      {R"({"host_overrides": {"a": 1}})", "host_overrides.a", "must be an object"},
      {R"({"tags": {"k": null}})", "tags.k", "must be a string, number or boolean"},
  };
  for (const Case& c : cases) {
    v1::JobSpec spec;
    absl::Status st = FromJson(c.body, &spec);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(ErrorField(st), c.field) << c.body << " -> " << st;
    EXPECT_EQ(st.message(), std::string(c.field) + ": " + c.message) << c.body;
  }
  v1::JobSpec spec;
  EXPECT_EQ(ErrorField(FromJson(std::string(100, '[') + std::string(100, ']'), &spec)), "body");
}

TEST(ProtoJsonTest, ErrorShape) {
  EXPECT_EQ(ErrorToJson(FieldError("repeat", "bad")),
            json::parse(R"({"error": {"code": "INVALID_ARGUMENT", "message": "repeat: bad",
                                      "field": "repeat"}})"));
  EXPECT_TRUE(ErrorToJson(absl::NotFoundError("x"))["error"]["field"].is_null());
}

}  // namespace
}  // namespace iofleet::controller::rest
