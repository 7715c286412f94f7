// The detector's decisions on clear cases of the labelled corpus. Every series
// comes from a fixed seed, so these cannot flake; the cases are chosen clear
// (steps of 10-20 % at CV <= 2 %, noise, spikes, transients) so that a correct
// detector passes them with margin. The rates over the whole corpus are measured
// by bench/history (bench/RESULTS.md), not asserted here.
#include "controller/history/corpus.h"

#include <cmath>
#include <cstdlib>
#include <string>
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

Analysis AnalyzeValues(const std::vector<double>& values) {
  absl::StatusOr<Analysis> an = Analyze(*Series::FromValues(values), kIops, Params{});
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
  EXPECT_EQ(all.size(), 40u * 2);
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

}  // namespace
}  // namespace iofleet::controller::history
