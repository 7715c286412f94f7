#include "controller/history/builds.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

SeriesPointRow P(int order, double value, const json& tags, const std::string& host = "h1",
                 const std::string& kernel = "6.12.0") {
  SeriesPointRow p;
  p.series_key = "s";
  p.run_id = absl::StrCat("r", order);
  p.job_id = absl::StrCat("j", order);
  p.order = order;
  p.value = value;
  p.axes_json = json{{"tags", tags}, {"host", host}, {"kernel_release", kernel}}.dump();
  return p;
}

// Two builds of three runs each (two hosts), one of one run, one untagged run.
TEST(BuildsJsonTest, OnePerBuildWithItsSpreadInSeriesOrder) {
  std::vector<SeriesPointRow> pts = {
      P(1, 100, {{"build", "b1"}, {"commit", "c1"}}),
      P(2, 110, {{"build", "b1"}, {"commit", "c1"}}, "h2"),
      P(3, 90, {{"build", "b1"}, {"commit", "c1"}}),
      P(4, 200, {{"build", "b2"}}, "h1", "6.13.0"),
      P(5, 50, {{"branch", "main"}}),
      P(6, 210, {{"build", "b2"}}, "h2", "6.13.0"),
      P(7, 190, {{"build", "b2"}}, "h1", "6.13.0"),
      P(8, 300, {{"build", "b3"}}),
  };
  const json b = BuildsJson(pts);
  EXPECT_EQ(b["tag"], "build");
  EXPECT_EQ(b["untagged"], 1);
  ASSERT_EQ(b["groups"].size(), 3u) << b.dump(2);
  const json& g1 = b["groups"][0];
  EXPECT_EQ(g1["value"], "b1");
  EXPECT_EQ(g1["points"], 3);
  EXPECT_EQ(g1["runs"], json({"r1", "r2", "r3"}));
  EXPECT_DOUBLE_EQ(g1["mean"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(g1["median"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(g1["stddev_pct"].get<double>(), 10);  // sample sd 10 of mean 100
  EXPECT_DOUBLE_EQ(g1["min"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(g1["max"].get<double>(), 110);
  EXPECT_EQ(g1["hosts"], json({"h1", "h2"}));
  EXPECT_EQ(g1["first_order"], 1);
  EXPECT_EQ(g1["last_order"], 3);
  const json& g2 = b["groups"][1];
  EXPECT_EQ(g2["value"], "b2");
  EXPECT_EQ(g2["points"], 3);
  EXPECT_DOUBLE_EQ(g2["mean"].get<double>(), 200);
  EXPECT_EQ(g2["kernel_releases"], json({"6.13.0"}));
  EXPECT_EQ(g2["last_order"], 7);  // a build's runs need not be adjacent
  const json& g3 = b["groups"][2];
  EXPECT_EQ(g3["points"], 1);
  EXPECT_TRUE(g3["stddev_pct"].is_null());  // undefined for one point, not 0
}

TEST(BuildsJsonTest, CommitWhenNoBuildTagAndNothingWithoutTags) {
  std::vector<SeriesPointRow> pts = {P(1, 10, {{"commit", "c1"}}), P(2, 12, {{"commit", "c1"}}),
                                     P(3, 20, {{"commit", "c2"}})};
  json b = BuildsJson(pts);
  EXPECT_EQ(b["tag"], "commit");
  ASSERT_EQ(b["groups"].size(), 2u);
  EXPECT_DOUBLE_EQ(b["groups"][0]["mean"].get<double>(), 11);

  b = BuildsJson({P(1, 10, {{"branch", "main"}}), P(2, 11, json::object())});
  EXPECT_EQ(b["tag"], "");
  EXPECT_TRUE(b["groups"].empty());
  EXPECT_EQ(b["untagged"], 2);

  // A point without a finite value counts but does not poison the statistics.
  pts.push_back(P(4, std::numeric_limits<double>::quiet_NaN(), {{"commit", "c2"}}));
  b = BuildsJson(pts);
  EXPECT_EQ(b["groups"][1]["points"], 2);
  EXPECT_DOUBLE_EQ(b["groups"][1]["mean"].get<double>(), 20);
}

}  // namespace
}  // namespace iofleet::controller::history
