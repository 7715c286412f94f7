#include "controller/history/telemetry.h"

#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

TEST(TelemetryMeans, WeightsSamplesByTheirLengthAndFoldsCpus) {
  json t = {{"interval_ms", 1000},
            {"sample_ms", {1000, 500}},  // a full second, then a half one
            {"devices", {{"vda", {{"util_pct", {90, 30}}, {"aqu_sz", {2, 2}}}}}},
            {"cpus",
             {{{"cpu", 0}, {"sys_pct", {10, 40}}, {"dev_irq_s", {100, 100}}},
              {{"cpu", 1}, {"sys_pct", {30, 60}}, {"dev_irq_s", {50, 50}}}}},
            {"ctxt_s", {3000, 0}}};
  auto m = TelemetryMeans(t);
  EXPECT_DOUBLE_EQ(m["dev.vda.util_pct"], 70.0);  // (90*1000 + 30*500) / 1500
  EXPECT_DOUBLE_EQ(m["dev.vda.aqu_sz"], 2.0);
  EXPECT_DOUBLE_EQ(m["cpu0.sys_pct"], 20.0);
  EXPECT_DOUBLE_EQ(m["cpu1.sys_pct"], 40.0);
  EXPECT_DOUBLE_EQ(m["cpu.sys_pct"], 30.0);     // machine-wide: mean over CPUs
  EXPECT_DOUBLE_EQ(m["dev_irq_s"], 150.0);      // device IRQs: total over CPUs
  EXPECT_DOUBLE_EQ(m["ctxt_s"], 2000.0);
  EXPECT_TRUE(TelemetryMeans(json::object()).empty());
  EXPECT_TRUE(TelemetryMeansOfResult(R"({"jobs":[]})").empty());
  EXPECT_TRUE(TelemetryMeansOfResult("not json").empty());
  EXPECT_DOUBLE_EQ(TelemetryMeansOfResult(json{{"iofleet", {{"telemetry", t}}}}.dump())["ctxt_s"],
                   2000.0);
  // As the agent writes it: the telemetry object on one line, last in "iofleet".
  const std::string agent_text = "{\n  \"jobs\" : [],\n  \"iofleet\" : {\n    \"jobs\" : [],\n"
                                 "    \"telemetry\" : " + t.dump() + "\n  }\n}";
  ASSERT_TRUE(json::accept(agent_text));
  EXPECT_DOUBLE_EQ(TelemetryMeansOfResult(agent_text)["dev.vda.util_pct"], 70.0);
}

TEST(TelemetryMoved, ThresholdAndNoiseFloor) {
  std::vector<std::map<std::string, double>> before = {
      {{"dev.vda.util_pct", 50}, {"cpu.irq_pct", 0.2}, {"ctxt_s", 1000}, {"dev.vda.await_ms", 0.5}},
      {{"dev.vda.util_pct", 50}, {"cpu.irq_pct", 0.2}, {"ctxt_s", 1000}, {"dev.vda.await_ms", 0.5}}};
  std::vector<std::map<std::string, double>> after = {
      {{"dev.vda.util_pct", 54}, {"cpu.irq_pct", 0.6}, {"ctxt_s", 1500}, {"dev.vda.await_ms", 1.0}},
      {}};  // a run without telemetry is left out of its side's mean
  json j = TelemetryMoved(before, after, 10.0);
  EXPECT_EQ(j["runs"], json({2, 1}));
  ASSERT_EQ(j["moved"].size(), 2u) << j.dump(2);
  // util +8% is under the threshold; irq +200% but 0.4 points is under the floor.
  EXPECT_EQ(j["moved"][0]["metric"], "dev.vda.await_ms");  // +100%, biggest first
  EXPECT_DOUBLE_EQ(j["moved"][0]["change_pct"].get<double>(), 100.0);
  EXPECT_EQ(j["moved"][1]["metric"], "ctxt_s");
  EXPECT_DOUBLE_EQ(j["moved"][1]["before_mean"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(j["moved"][1]["after_mean"].get<double>(), 1500.0);
  EXPECT_FALSE(j.contains("note"));

  json none = TelemetryMoved({{}}, after);
  EXPECT_TRUE(none["moved"].empty());
  EXPECT_NE(none["note"].get<std::string>().find("before side"), std::string::npos);
}

}  // namespace
}  // namespace iofleet::controller::history
