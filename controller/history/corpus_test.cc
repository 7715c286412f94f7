// The detector's decisions on clear cases of the labelled corpus. Every series
// comes from a fixed seed, so these cannot flake; the cases are chosen clear
// (steps of 10-20 % at CV <= 2 %, noise, spikes, transients) so that a correct
// detector passes them with margin. The rates over the whole corpus are measured
// by bench/history (bench/RESULTS.md), not asserted here.
#include "controller/history/corpus.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "controller/history/alert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using corpus::Case;
using corpus::Generate;
using corpus::Kind;

const MetricPolicy kIops{"iops", true, 0.02};

Analysis AnalyzeValues(const std::vector<double>& values, const Params& params = Params{}) {
  absl::StatusOr<Analysis> an = Analyze(*Series::FromValues(values), kIops, params);
  EXPECT_TRUE(an.ok()) << an.status();
  return an.ok() ? *std::move(an) : Analysis{};
}

TEST(Corpus, GeneratorIsDeterministicAndLabelled) {
  const Case a = Generate(Kind::kStep, 0.05, 0.02, 42);
  const Case b = Generate(Kind::kStep, 0.05, 0.02, 42);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.cls, "step 5% cv 2%");
  ASSERT_EQ(a.label.changes.size(), 1u);
  EXPECT_GE(a.label.changes[0], 20u);
  EXPECT_LE(a.label.changes[0], 40u);
  EXPECT_TRUE(a.label.expect_alert);
  EXPECT_DOUBLE_EQ(std::fabs(a.label.size), 0.05);
  EXPECT_NE(Generate(Kind::kStep, 0.05, 0.02, 43).values, a.values);
  // Pinned values: a change to the generator changes the corpus, and with it
  // every published figure; it must be deliberate.
  const Case pinned = Generate(Kind::kNoise, 0, 0.01, 1);
  ASSERT_EQ(pinned.values.size(), corpus::kLength);
  EXPECT_EQ(corpus::Dump(pinned).substr(0, 40), "noise cv 1%|1|noise|0|0.01||0|100368.740");
}

TEST(Corpus, LabelsMatchTheShapes) {
  const Case t = Generate(Kind::kTransient, 0.10, 0.01, 7);
  ASSERT_EQ(t.label.changes.size(), 2u);
  const size_t d = t.label.changes[1] - t.label.changes[0];
  EXPECT_GE(d, 6u);
  EXPECT_LE(d, 10u);
  EXPECT_FALSE(t.label.expect_alert);
  EXPECT_EQ(Generate(Kind::kShortNoise, 0, 0.01, 7).values.size(), corpus::kShortLength);
  EXPECT_FALSE(Generate(Kind::kStep, 0.01, 0.01, 7).label.expect_alert);  // under 2 %
  const std::vector<Case> all = corpus::StandardCorpus(2);
  EXPECT_EQ(all.size(), 64u * 2);
  for (const Case& c : all) {
    for (double v : c.values) ASSERT_GT(v, 0) << c.cls;
  }
}

TEST(Corpus, ClearStepsAlertOnceAtTheRightPointAndDirection) {
  for (double size : {0.10, 0.20}) {
    for (double cv : {0.01, 0.02}) {
      for (uint64_t seed = 1; seed <= 8; ++seed) {
        const Case c = Generate(Kind::kStep, size, cv, seed);
        const Analysis an = AnalyzeValues(c.values);
        const auto alerts = an.Alerts();
        ASSERT_EQ(alerts.size(), 1u) << c.cls << " seed " << seed;
        EXPECT_LE(std::labs(static_cast<long>(alerts[0]->change.index) -
                            static_cast<long>(c.label.changes[0])),
                  1)
            << c.cls << " seed " << seed;
        EXPECT_EQ(alerts[0]->change_pct > 0, c.label.size > 0) << c.cls << " seed " << seed;
        EXPECT_NEAR(alerts[0]->change_pct, c.label.size * 100, 3) << c.cls << " seed " << seed;
      }
    }
  }
}

TEST(Corpus, NoAlertOnNoiseSpikesBimodalNoiseTransientsOrShortSeries) {
  struct Neg {
    Kind kind;
    double size;
  };
  for (const Neg& n : {Neg{Kind::kNoise, 0}, Neg{Kind::kShortNoise, 0}, Neg{Kind::kSpike, 0.30},
                       Neg{Kind::kBimodal, 0.10}, Neg{Kind::kTransient, 0.10}}) {
    for (double cv : {0.01, 0.02, 0.05}) {
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        const Case c = Generate(n.kind, n.size, cv, seed);
        EXPECT_TRUE(AnalyzeValues(c.values).Alerts().empty()) << c.cls << " seed " << seed;
      }
    }
  }
}

TEST(Corpus, AsResultsArriveAClearStepAlertsSoonAndNotBefore) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Case c = Generate(Kind::kStep, 0.10, 0.01, seed);
    const size_t k = c.label.changes[0];
    size_t first = 0;
    for (size_t end = 12; end <= c.values.size() && first == 0; ++end) {
      const std::vector<double> prefix(c.values.begin(), c.values.begin() + end);
      if (!AnalyzeValues(prefix).Alerts().empty()) first = end;
    }
    // No alert before min_segment points at the new level; one by 8.
    EXPECT_GE(first, k + 6) << "seed " << seed;
    EXPECT_LE(first, k + 8) << "seed " << seed;
  }
}

// Identical jobs (the soak's finding, issue 16): a p50 that flips between two
// latency modes, IOPS quantized by fio's whole-ms runtime, each host's cold first
// run. None is a change worth an alert; each alerts when the points' resolution
// and the warm-up are ignored (what the detector did before).
Analysis AnalyzeCase(const Case& c, int warmup_per_host) {
  absl::StatusOr<Series> s = corpus::SeriesOf(c, c.values.size(), warmup_per_host);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Analysis> an = Analyze(*s, kIops, Params{});
  EXPECT_TRUE(an.ok()) << an.status();
  return an.ok() ? *std::move(an) : Analysis{};
}

TEST(Corpus, IdenticalJobsDoNotAlert) {
  const Params defaults;
  // The detector before the resolution, the warm-up and the mode-switch rule.
  Params before;
  before.decide.mode_switch_visits = 0;
  int alerts_before = 0;  // with the resolution and the warm-up ignored
  for (const auto& [kind, size] : {std::pair{Kind::kQuantizedP50, 0.04},
                                   std::pair{Kind::kQuantizedIops, 0.01},
                                   std::pair{Kind::kColdStart, 0.30}}) {
    int kind_before = 0;
    for (double cv : {0.01, 0.02, 0.05}) {
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        const Case c = Generate(kind, size, cv, seed);
        ASSERT_FALSE(c.label.expect_alert);
        const Analysis an = AnalyzeCase(c, defaults.decide.warmup_per_host);
        EXPECT_TRUE(an.Alerts().empty())
            << c.cls << " seed " << seed << ": "
            << (an.Alerts().empty() ? "" : an.Alerts()[0]->reason);
        kind_before += AnalyzeValues(c.values, before).Alerts().empty() ? 0 : 1;

      }
    }
    // The cases are hard: without the fix most of them alert.
    EXPECT_GE(kind_before, 5) << corpus::KindName(kind) << ": only " << kind_before
                              << " of 18 alert without the resolution and warm-up";
    alerts_before += kind_before;
  }
  EXPECT_GE(alerts_before, 27);
}

TEST(Corpus, AQuantizedSeriesStillAlertsOnARealStep) {
  // A 20 % step in cold-start series is still found (the warm-up drops only each
  // host's first point), and a real 2x step of the IOPS level at CV 2 % too.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Case c = Generate(Kind::kColdStart, 0.30, 0.01, seed);
    for (size_t i = 35; i < c.values.size(); ++i) c.values[i] *= 0.8;
    const Analysis an = AnalyzeCase(c, 1);
    ASSERT_EQ(an.Alerts().size(), 1u) << "seed " << seed;
    EXPECT_NEAR(an.Alerts()[0]->change_pct, -20, 3);
  }
  Case q = Generate(Kind::kQuantizedIops, 0.01, 0.01, 3);
  for (size_t i = 0; i < q.values.size(); ++i) {
    // 4 ms runs (64,000 IOPS, resolution 12.5 %) then 2 ms runs (128,000).
    const bool after = i >= 30;
    q.values[i] = after ? 128000 : 64000;
    q.resolution[i] = after ? 0.25 : 0.125;
  }
  const Analysis an = AnalyzeCase(q, 1);
  ASSERT_EQ(an.Alerts().size(), 1u);
  EXPECT_NEAR(an.Alerts()[0]->change_pct, 100, 1);
}

// The soak's p50 (docs/history.md, "Identical jobs"): each run decisively in one
// of two latency modes, the mode kept for several runs in a row. Without the
// mode-switch rule (mode_switch_visits = 0, the code before it) a run of one mode
// at the end is a DIFFERENT change that does not go away; with it, no alert,
// offline nor as the points arrive.
TEST(Corpus, AModeSwitchingP50DoesNotAlert) {
  Params off;
  off.decide.mode_switch_visits = 0;
  int alerts = 0, alerts_before = 0, online = 0, online_before = 0;
  for (double cv : {0.01, 0.02, 0.05}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const Case c = Generate(Kind::kModeSwitchP50, 0.80, cv, seed);
      ASSERT_FALSE(c.label.expect_alert);
      absl::StatusOr<Series> s = corpus::SeriesOf(c, c.values.size(), 1);
      ASSERT_TRUE(s.ok()) << s.status();
      absl::StatusOr<Analysis> an = Analyze(*s, kIops, Params{});
      ASSERT_TRUE(an.ok()) << an.status();
      alerts += an->Alerts().empty() ? 0 : 1;
      if (!an->Alerts().empty() && seed != 7) {
        std::string why = corpus::Dump(c);
        for (const Assessment& a : an->changes) {
          why += "\n  at " + a.first_after_id + ": " + a.reason;
        }
        ADD_FAILURE() << c.cls << " seed " << seed << ": " << why;
      }
      absl::StatusOr<Analysis> old = Analyze(*s, kIops, off);
      ASSERT_TRUE(old.ok()) << old.status();
      alerts_before += old->Alerts().empty() ? 0 : 1;
      if (seed > 4) continue;
      bool now = false, before = false;
      for (size_t end = 12; end <= c.values.size(); ++end) {
        absl::StatusOr<Series> p = corpus::SeriesOf(c, end, 1);
        ASSERT_TRUE(p.ok());
        now = now || !Analyze(*p, kIops, Params{})->Alerts().empty();
        before = before || !Analyze(*p, kIops, off)->Alerts().empty();
      }
      online += now;
      online_before += before;
    }
  }
  std::printf("mode-switching p50, 30 series: %d alert offline (%d without the rule); 12 "
              "replayed: %d alert online (%d without the rule)\n",
              alerts, alerts_before, online, online_before);
  // Seed 7 is one mode for 12 points, then the other for 48 with one 3-point
  // return: a step by any rule that reads this metric alone (docs/history.md,
  // "Identical jobs": what the rule cannot tell apart). Every other series is
  // quiet.
  EXPECT_LE(alerts, 3);
  EXPECT_LE(online, 3);
  // The cases are hard: without the rule many of them alert.
  EXPECT_GE(alerts_before, alerts + 5) << "offline";
  EXPECT_GE(online_before, online + 3) << "online";
}

// The rule must not hide real steps in a percentile: p50 steps of 5 % at CV 1 %
// and 10 % at CV 1-2 % still alert once, at the right place and direction (the
// harder cells are measured by bench/history).
TEST(Corpus, RealP50StepsStillAlert) {
  for (const auto& [size, cv] : {std::pair{0.05, 0.01}, std::pair{0.10, 0.01},
                                 std::pair{0.10, 0.02}}) {
    {
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        const Case c = Generate(Kind::kStepP50, size, cv, seed);
        ASSERT_TRUE(c.label.expect_alert);
        const Analysis an = AnalyzeCase(c, 1);
        ASSERT_EQ(an.Alerts().size(), 1u) << c.cls << " seed " << seed;
        const Assessment& a = *an.Alerts()[0];
        EXPECT_LE(std::labs(std::stol(a.first_after_id) - static_cast<long>(c.label.changes[0])),
                  3)
            << c.cls << " seed " << seed;
        EXPECT_EQ(a.change_pct > 0, c.label.size > 0) << c.cls << " seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace iofleet::controller::history
