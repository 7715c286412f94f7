#include "cli/format.h"

#include "common/stats/histogram.h"
#include "gtest/gtest.h"

namespace iofleet::cli {
namespace {

TEST(FormatTest, TolerantAccessors) {
  const json j = json::parse(R"({"a":"x","n":"123","m":45,"f":1.5,"arr":[1,2]})");
  EXPECT_EQ(JStr(j, {"zz", "a"}), "x");
  EXPECT_EQ(JU64(j, {"n"}), 123u);
  EXPECT_EQ(JU64(j, {"m"}), 45u);
  EXPECT_DOUBLE_EQ(JDouble(j, {"f"}), 1.5);
  EXPECT_EQ(JArray(j, "arr").size(), 2u);
  EXPECT_TRUE(JArray(j, "missing").empty());
  EXPECT_EQ(JStr(json::array(), {"a"}), "");
}

TEST(FormatTest, States) {
  EXPECT_EQ(NormState("RUN_STATE_SUCCEEDED"), "succeeded");
  EXPECT_EQ(NormState("Canceled"), "cancelled");
  EXPECT_TRUE(IsTerminal("lost"));
  EXPECT_FALSE(IsTerminal("running"));
  EXPECT_TRUE(IsSuccess("succeeded"));
}

TEST(FormatTest, SparseHistFormats) {
  auto a = SparseHist(json::parse(R"({"clat_bucket":[1,5],"clat_count":["2",3]})"));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1], (std::pair<uint32_t, uint64_t>(5, 3)));
  auto b = SparseHist(json::parse(R"({"clat_hist":[[7,1],[9,4]]})"));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].second, 4u);
  auto c = SparseHist(json::parse(R"({"clat_hist":{"3":2}})"));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].first, 3u);
}

TEST(FormatTest, LatestWindowSumsClonesOfTheLastSeq) {
  const uint32_t b1 = stats::PlatValToIdx(10000), b2 = stats::PlatValToIdx(900000);
  json recs = json::array();
  for (int clone = 0; clone < 2; ++clone) {
    for (int seq = 0; seq < 3; ++seq) {
      json r = {{"job_index", clone}, {"seq", seq}, {"t_start_ms", 1000 * seq},
                {"t_end_ms", 1000 * (seq + 1)}};
      r["read"] = {{"ios", 100}, {"bytes", 409600}, {"clat_bucket", {b1, b2}},
                   {"clat_count", {98, 2}}};
      recs.push_back(r);
    }
  }
  const WindowStats w = LatestWindow(json{{"records", recs}});
  ASSERT_TRUE(w.valid);
  EXPECT_EQ(w.seq, 2u);
  EXPECT_DOUBLE_EQ(w.iops, 200.0);
  EXPECT_DOUBLE_EQ(w.bytes_per_s, 819200.0);
  EXPECT_EQ(w.p99_ns, stats::PlatIdxToVal(b2));
  EXPECT_EQ(w.total_ios, 600u);
  EXPECT_EQ(w.records, 6u);
  EXPECT_FALSE(LatestWindow(json::array()).valid);
}

// Total latency (lat) beside clat: the latest window's lat_hist (REST pairs),
// merged over clones and directions; none when no record carries it.
TEST(FormatTest, LatestWindowTotalLatencyFromLatHist) {
  const uint32_t c1 = stats::PlatValToIdx(10000), l1 = stats::PlatValToIdx(12000),
                 l2 = stats::PlatValToIdx(1000000);
  json recs = json::array();
  for (int seq = 0; seq < 2; ++seq) {
    json r = {{"job_index", 0}, {"seq", seq}, {"t_start_ms", 1000 * seq},
              {"t_end_ms", 1000 * (seq + 1)}};
    r["read"] = {{"ios", 100}, {"bytes", 409600}, {"clat_hist", {{c1, 100}}},
                 {"lat_hist", {{l1, seq == 1 ? 98 : 100}, {l2, seq == 1 ? 2 : 0}}}};
    recs.push_back(r);
  }
  WindowStats w = LatestWindow(json{{"records", recs}});
  ASSERT_TRUE(w.valid);
  EXPECT_TRUE(w.has_lat);
  EXPECT_EQ(w.p99_ns, stats::PlatIdxToVal(c1));
  EXPECT_EQ(w.lat_p99_ns, stats::PlatIdxToVal(l2));
  const double mean =
      (98.0 * stats::PlatIdxToVal(l1) + 2.0 * stats::PlatIdxToVal(l2)) / 100.0;
  EXPECT_NEAR(static_cast<double>(w.lat_mean_ns), mean, 1.0);
  EXPECT_NEAR(static_cast<double>(w.lat_mean_ns), 0.98 * 12000 + 0.02 * 1000000, 0.02 * 31250);
  // gtod_reduce/disable_lat: no lat_hist in any record.
  for (json& r : recs) r["read"].erase("lat_hist");
  w = LatestWindow(json{{"records", recs}});
  EXPECT_FALSE(w.has_lat);
  EXPECT_EQ(w.lat_mean_ns, 0u);
}

TEST(FormatTest, Units) {
  EXPECT_EQ(FormatCount(950), "950");
  EXPECT_EQ(FormatCount(123456), "123k");   // fio: IOPS=123k
  EXPECT_EQ(FormatCount(12345), "12.3k");   // fio: IOPS=12.3k
  EXPECT_EQ(FormatCount(2.5e6), "2500k");   // fio: IOPS=2500k
  EXPECT_EQ(FormatBytesPerSec(512.0 * 1024 * 1024), "512MiB/s");
  EXPECT_EQ(FormatNs(850), "850ns");
  EXPECT_EQ(FormatNs(12300), "12.3us");
  EXPECT_EQ(FormatDuration(3723), "1h02m03s");
  EXPECT_EQ(FormatDuration(65), "1m05s");
}

TEST(FormatTest, Durations) {
  uint64_t s = 0;
  EXPECT_TRUE(ParseDurationSeconds("30", &s));
  EXPECT_EQ(s, 30u);
  EXPECT_TRUE(ParseDurationSeconds("2m", &s));
  EXPECT_EQ(s, 120u);
  EXPECT_TRUE(ParseDurationSeconds("1500ms", &s));
  EXPECT_EQ(s, 2u);
  EXPECT_FALSE(ParseDurationSeconds("abc", &s));
  EXPECT_FALSE(ParseDurationSeconds("5 parsecs", &s));
  EXPECT_EQ(EstimateRuntimeSeconds("[global]\nruntime=10\n[a]\nrw=read\n[b]\nruntime=1m\n"
                                   "ramp_time=5s\n"),
            65u);
  EXPECT_EQ(EstimateRuntimeSeconds("[a]\nsize=1g\n"), 0u);
}

TEST(FormatTest, CompareRendering) {
  const json cmp = json::parse(R"({"rows":[
      {"metric":"iops","a":100,"b":80,"verdict":"regression"},
      {"metric":"p99","a":1.5,"b":1.4,"verdict":"no change"}]})");
  const std::string md = RenderCompareMarkdown(cmp);
  EXPECT_NE(md.find("| metric | a | b | verdict |"), std::string::npos) << md;
  EXPECT_NE(md.find("| iops | 100 | 80 | regression |"), std::string::npos) << md;
  const std::string xml = RenderCompareJunit(cmp, "j1");
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_TRUE(HasRegression(cmp));
  EXPECT_FALSE(HasRegression(json::parse(R"({"rows":[{"verdict":"faster"}]})")));
  EXPECT_TRUE(HasRegression(json::parse(R"({"verdict":"slower"})")));
  EXPECT_TRUE(HasRegression(json::parse(R"({"outcome":"fail","rows":[]})")));
  EXPECT_FALSE(HasRegression(json::parse(R"({"outcome":"warn","rows":[]})")));
}

TEST(FormatTest, TableAlignsColumns) {
  EXPECT_EQ(RenderTable({"A", "BB"}, {{"xxx", "y"}}), "A    BB\nxxx  y\n");
}

// The stored result prints as fio's normal output (the agent's renderer), and
// the run's log files are listed from iofleet.logs.
TEST(FormatTest, ResultNormalAndLogFiles) {
  const json fio = json::parse(R"({"jobs":[{"jobname":"j","groupid":0,"error":0,
      "job options":{},
      "read":{"total_ios":10,"io_bytes":40960,"io_kbytes":40,"iops":10.0,"bw_bytes":40960,
      "bw":40,"runtime":1000,
      "clat_ns":{"min":1,"max":9,"mean":5.0,"stddev":1.0,"percentile":{"99.000000":9}}}}],
      "iofleet":{"jobs":[{"pid":42,"members":1,"error_text":"","kb_base":1024}],
                 "logs":{"host":"h1","files":["/l/j_bw.1.log","/l/j_iops.1.log"]}}})");
  const auto out = RenderResultNormal(fio);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->find("j: (groupid=0, jobs=1): err= 0: pid=42"), std::string::npos) << *out;
  EXPECT_NE(out->find("read: IOPS=10, BW=40.0KiB/s"), std::string::npos) << *out;
  EXPECT_NE(out->find("Run status group 0"), std::string::npos) << *out;
  EXPECT_EQ(RenderLogFiles(fio), "fio logs on agent host h1:\n  /l/j_bw.1.log\n  /l/j_iops.1.log\n");
  EXPECT_EQ(RenderLogFiles(json::parse(R"({"jobs":[]})")), "");
  EXPECT_FALSE(RenderResultNormal(json::parse(R"({"x":1})")).ok());
}

}  // namespace
}  // namespace iofleet::cli

namespace iofleet::cli {
namespace {

TEST(FormatTest, ParseFailOn) {
  FailOn f;
  EXPECT_FALSE(ParseFailOn("regression", &f).has_value());
  EXPECT_TRUE(f.regression);
  EXPECT_FALSE(f.inconclusive);
  EXPECT_FALSE(ParseFailOn("inconclusive, regression", &f).has_value());
  EXPECT_TRUE(f.regression && f.inconclusive);
  EXPECT_FALSE(ParseFailOn("inconclusive", &f).has_value());
  EXPECT_FALSE(f.regression);
  EXPECT_TRUE(f.inconclusive);
  EXPECT_FALSE(ParseFailOn("none", &f).has_value());
  EXPECT_FALSE(f.regression || f.inconclusive);
  auto e = ParseFailOn("regression,slower", &f);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("--fail-on: \"slower\""), std::string::npos) << *e;
  EXPECT_TRUE(ParseFailOn("", &f).has_value());
}

// Issue 10 item 9: the outcome decides the exit; inconclusive only when asked for.
TEST(FormatTest, GateCompareByOutcomeAndFailOn) {
  const FailOn def;               // regression
  const FailOn both{true, true};  // regression,inconclusive
  const FailOn none{false, false};
  const json fail = json::parse(R"({"outcome":"fail","rows":[{"verdict":"regression"},
                                    {"verdict":"inconclusive"}]})");
  const json warn = json::parse(R"({"outcome":"warn","headline":"0 of 20 runs usable",
                                    "rows":[{"verdict":"inconclusive"}]})");
  const json pass = json::parse(R"({"outcome":"pass","rows":[{"verdict":"no_change"}]})");
  EXPECT_EQ(GateCompare(fail, def), VerdictGate::kRegression);
  EXPECT_EQ(GateCompare(warn, def), VerdictGate::kPass);
  EXPECT_EQ(GateCompare(warn, both), VerdictGate::kInconclusive);
  EXPECT_EQ(GateCompare(pass, both), VerdictGate::kPass);
  EXPECT_EQ(GateCompare(fail, none), VerdictGate::kPass);
  // Only inconclusive asked for: a table with a regression and an undecided row.
  EXPECT_EQ(GateCompare(fail, FailOn{false, true}), VerdictGate::kInconclusive);
  // Older controllers without an outcome: the rows decide.
  EXPECT_EQ(GateCompare(json::parse(R"({"rows":[{"verdict":"noisy"}]})"), both),
            VerdictGate::kInconclusive);
  EXPECT_EQ(CompareHeadline(warn), "0 of 20 runs usable");
  EXPECT_EQ(CompareHeadline(json::parse(R"({"usable":{"headline":"x"}})")), "x");
}

TEST(FormatTest, OutcomeDecidesRegressionOverGeomeanRows) {
  const json pass = json::parse(R"({"outcome":"pass","geomean":[{"verdict":"regression"}],
                                    "rows":[{"verdict":"no_change"}]})");
  EXPECT_FALSE(HasRegression(pass));
  const json fail = json::parse(R"({"outcome":"fail","rows":[{"verdict":"regression"}]})");
  EXPECT_TRUE(HasRegression(fail));
  // Without an outcome the rows are read.
  EXPECT_TRUE(HasRegression(json::parse(R"({"rows":[{"verdict":"regression"}]})")));
}

}  // namespace
}  // namespace iofleet::cli

namespace iofleet::cli {
namespace {

// Names from older stores may hold a NUL or ANSI escapes: a table shows them
// escaped, whole, and never sends the terminal a control sequence.
TEST(FormatTest, TablesEscapeControlCharacters) {
  const std::string nul_name("before\0after", 12);
  const std::string out =
      RenderTable({"JOB", "NAME"}, {{"j1", nul_name}, {"j2", "\x1b[2J\x1b[Hwiped"}, {"j3", "ok"}});
  EXPECT_EQ(out.find('\0'), std::string::npos);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_NE(out.find("before\\x00after"), std::string::npos);
  EXPECT_NE(out.find("\\x1b[2J\\x1b[Hwiped"), std::string::npos);
  EXPECT_NE(out.find("j3"), std::string::npos);  // the rows after it are all there
  EXPECT_EQ(TerminalSafe("a\nb", /*keep_layout=*/true), "a\nb");
  EXPECT_EQ(TerminalSafe("a\nb"), "a\\nb");
  EXPECT_EQ(RenderCompareMarkdown(json::parse(R"({"rows":[{"name":"x\u001b[31m"}]})")).find('\x1b'),
            std::string::npos);
}

}  // namespace
}  // namespace iofleet::cli
