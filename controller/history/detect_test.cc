#include "controller/history/detect.h"

#include <cmath>
#include <string>
#include <vector>

#include "controller/compare/stat_tests.h"
#include "controller/scheduler/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using ::testing::HasSubstr;

// Deterministic multiplicative noise without the corpus generator: a fixed
// pseudo-random pattern in [-1, 1] scaled by cv.
std::vector<double> Noisy(std::vector<double> level, double cv, uint64_t seed) {
  compare::Rng rng(seed);
  for (double& v : level) {
    const double u = static_cast<double>(rng.Below(2000001)) / 1000000.0 - 1.0;
    v *= 1 + cv * u;
  }
  return level;
}

std::vector<double> Step(size_t n, size_t at, double size) {
  std::vector<double> v(n, 1000.0);
  for (size_t i = at; i < n; ++i) v[i] *= 1 + size;
  return v;
}

TEST(EnergyQ, MatchesTheDefinitionByHand) {
  // Between: |1-10|+|1-11|+|2-10|+|2-11| = 36, mean 9 -> 2*9 = 18; within 1 and 1.
  // q = (2*2/4) * (18 - 1 - 1) = 16.
  EXPECT_DOUBLE_EQ(EnergyQ(std::vector<double>{1, 2, 10, 11}, 2, 1.0), 16);
  EXPECT_TRUE(std::isnan(EnergyQ(std::vector<double>{1, 2, 10, 11}, 1, 1.0)));
  // Identical halves: no energy between them beyond the within-part.
  EXPECT_LT(EnergyQ(std::vector<double>{1, 2, 1, 2}, 2, 1.0), 1e-12);
}

TEST(BestSplit, IncrementalSumsEqualTheDirectFormula) {
  for (double alpha : {1.0, 0.5, 1.5}) {
    const std::vector<double> x = Noisy(Step(40, 17, 0.03), 0.02, 7);
    const Split s = BestSplit(x, alpha, 5);
    size_t best = 0, best_end = 0;
    double best_q = -1;
    for (size_t kappa = 10; kappa <= x.size(); ++kappa) {
      const std::span<const double> head(x.data(), kappa);
      for (size_t t = 5; t + 5 <= kappa; ++t) {
        const double q = EnergyQ(head, t, alpha);
        if (q > best_q) {
          best_q = q;
          best = t;
          best_end = kappa;
        }
      }
    }
    EXPECT_EQ(s.index, best) << "alpha " << alpha;
    EXPECT_EQ(s.end, best_end) << "alpha " << alpha;
    EXPECT_NEAR(s.q, best_q, 1e-9 * best_q) << "alpha " << alpha;
  }
  EXPECT_TRUE(std::isnan(BestSplit(std::vector<double>(9, 1.0), 1.0, 5).q));
}

TEST(BestSplit, AShortMiddleSegmentStandsOut) {
  // 8 low points inside 40: the right part ends where they end.
  std::vector<double> v = Noisy(std::vector<double>(40, 1000.0), 0.01, 2);
  for (size_t i = 20; i < 28; ++i) v[i] *= 0.9;
  const Split s = BestSplit(v, 1.0, 6);
  EXPECT_EQ(s.index, 20u);
  EXPECT_EQ(s.end, 28u);
}

TEST(PermutationTest, ClearStepHasTheSmallestPNoiseDoesNot) {
  EDivisiveParams p;  // p_max 0.002, 999 permutations
  const std::vector<double> step = Noisy(Step(30, 15, 0.10), 0.01, 3);
  const Split s = BestSplit(step, 1.0, p.min_segment);
  EXPECT_EQ(s.index, 15u);
  EXPECT_DOUBLE_EQ(BestSplitPValue(step, s.q, p, 42), 1.0 / 1000);
  EXPECT_DOUBLE_EQ(FixedSplitPValue(step, 15, p, 42), 1.0 / 1000);

  const std::vector<double> flat = Noisy(std::vector<double>(30, 1000.0), 0.01, 3);
  const Split f = BestSplit(flat, 1.0, p.min_segment);
  const double pf = BestSplitPValue(flat, f.q, p, 42);
  EXPECT_GT(pf, p.p_max);
  // Deterministic for a seed.
  EXPECT_EQ(pf, BestSplitPValue(flat, f.q, p, 42));
  EXPECT_TRUE(std::isnan(FixedSplitPValue(flat, 3, p, 42)));  // under min_segment
}

TEST(EDivisive, FindsOneStepAtItsIndex) {
  const std::vector<Candidate> c = EDivisive(Noisy(Step(60, 33, -0.08), 0.02, 11), EDivisiveParams{});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].index, 33u);
  EXPECT_EQ(c[0].detector, Detector::kEDivisive);
  EXPECT_LE(c[0].p_value, 0.002);
}

TEST(EDivisive, FindsStepsInALongSeriesThroughItsWindows) {
  // 150 points, window 50: the steps sit in different windows.
  std::vector<double> v(150, 1000.0);
  for (size_t i = 40; i < 150; ++i) v[i] *= 0.9;
  for (size_t i = 110; i < 150; ++i) v[i] *= 1.15;
  const std::vector<Candidate> c = EDivisive(Noisy(v, 0.01, 5), EDivisiveParams{});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].index, 40u);
  EXPECT_EQ(c[1].index, 110u);
}

TEST(EDivisive, NoiseSpikesAndTheSeriesStartAreNotChanges) {
  EXPECT_TRUE(EDivisive(Noisy(std::vector<double>(60, 1000.0), 0.02, 1), EDivisiveParams{}).empty());
  // A single 50 % spike, in the middle and as the very first point.
  for (size_t at : {0u, 1u, 30u, 59u}) {
    std::vector<double> v = Noisy(std::vector<double>(60, 1000.0), 0.01, 9);
    v[at] *= 1.5;
    EXPECT_TRUE(EDivisive(v, EDivisiveParams{}).empty()) << "spike at " << at;
  }
  // Too short for two segments of min_segment.
  EXPECT_TRUE(EDivisive(Step(11, 5, 0.5), EDivisiveParams{}).empty());
}

TEST(WindowTests, PValueAtAPositionAndTheScan) {
  const std::vector<double> v = Noisy(Step(40, 20, 0.06), 0.01, 4);
  WindowTestParams w;
  double u = -1;
  const double p = WindowTestP(Detector::kMannWhitney, v, 20, 0, v.size(), w, &u);
  EXPECT_EQ(u, 0);  // every point before is below every point after
  EXPECT_LT(p, 1e-5);
  double t = 0;
  EXPECT_LT(WindowTestP(Detector::kWelch, v, 20, 0, v.size(), w, &t), 1e-6);
  EXPECT_GT(t, 0);
  // Cut at 25 leaves 5 points after 20: not tested.
  EXPECT_TRUE(std::isnan(WindowTestP(Detector::kWelch, v, 20, 0, 25, w)));
  for (Detector d : {Detector::kMannWhitney, Detector::kWelch}) {
    const std::vector<Candidate> c = ScanWindowTest(d, v, w);
    ASSERT_EQ(c.size(), 1u) << DetectorName(d);
    EXPECT_NEAR(static_cast<double>(c[0].index), 20, 2);
  }
}

TEST(Detect, AStepGetsAllThreeVotes) {
  const std::vector<double> v = Noisy(Step(60, 25, 0.10), 0.02, 21);
  absl::StatusOr<Detection> d = Detect(v, DetectorParams{});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->change_points.size(), 1u);
  const ChangePoint& cp = d->change_points[0];
  EXPECT_EQ(cp.index, 25u);
  EXPECT_TRUE(cp.proposed[0]);
  EXPECT_FALSE(cp.proposed[1]);  // the window tests only vote by default
  EXPECT_EQ(cp.votes, 3);
  EXPECT_TRUE(cp.confirmed);
  EXPECT_LE(cp.p[1], 0.01);
  EXPECT_LE(cp.p[2], 0.01);
  EXPECT_TRUE(d->note.empty());
}

TEST(Detect, UnconfirmedWhenTheWindowTestsDisagree) {
  // A change in spread only: E-divisive (energy distance) sees it, a test of
  // location does not.
  std::vector<double> v(60, 1000.0);
  compare::Rng rng(5);
  for (size_t i = 0; i < 60; ++i) {
    const double amp = i < 30 ? 0.002 : 0.08;
    v[i] *= 1 + amp * (i % 2 == 0 ? 1 : -1) * (0.5 + 0.5 * static_cast<double>(rng.Below(1000)) / 1000);
  }
  DetectorParams p;
  absl::StatusOr<Detection> d = Detect(v, p);
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->change_points.empty());  // proposed by E-divisive...
  for (const ChangePoint& cp : d->change_points) {  // ...but not confirmed
    EXPECT_FALSE(cp.confirmed) << "at " << cp.index << " votes " << cp.votes;
  }
  // E-divisive alone reports it.
  p.mann_whitney_role = p.welch_role = Role::kOff;
  p.min_votes = 1;
  d = Detect(v, p);
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->change_points.empty());
  EXPECT_TRUE(d->change_points[0].confirmed);
}

TEST(Detect, IsDeterministic) {
  const std::vector<double> v = Noisy(Step(80, 40, 0.03), 0.02, 99);
  absl::StatusOr<Detection> a = Detect(v, DetectorParams{});
  absl::StatusOr<Detection> b = Detect(v, DetectorParams{});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->candidates.size(), b->candidates.size());
  for (size_t i = 0; i < a->candidates.size(); ++i) {
    EXPECT_EQ(a->candidates[i].index, b->candidates[i].index);
    EXPECT_EQ(a->candidates[i].p_value, b->candidates[i].p_value);
  }
}

TEST(Detect, ShortSeriesSaysWhy) {
  absl::StatusOr<Detection> d = Detect(std::vector<double>(9, 5.0), DetectorParams{});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->change_points.empty());
  EXPECT_THAT(d->note, HasSubstr("9 points: edivisive needs >= 12"));
}

TEST(Detect, RejectsBadInputNamingTheField) {
  DetectorParams p;
  p.edivisive.permutations = 99;  // cannot reach p <= 0.002
  absl::StatusOr<Detection> d = Detect(std::vector<double>(20, 1.0), p);
  EXPECT_EQ(ErrorField(d.status()), "edivisive.permutations");
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("needs >= 499"));
  p = DetectorParams{};
  p.min_votes = 3;
  p.welch_role = Role::kOff;
  EXPECT_EQ(ErrorField(Detect(std::vector<double>(20, 1.0), p).status()), "min_votes");
  p = DetectorParams{};
  p.edivisive_role = Role::kVote;
  EXPECT_EQ(ErrorField(Detect(std::vector<double>(20, 1.0), p).status()), "edivisive_role");
  p = DetectorParams{};
  p.edivisive.window = 10;
  EXPECT_EQ(ErrorField(ValidateDetectorParams(p)), "edivisive.window");
  p = DetectorParams{};
  p.welch.confirm_p_max = 0;
  EXPECT_EQ(ErrorField(ValidateDetectorParams(p)), "welch.confirm_p_max");
  std::vector<double> v(20, 1.0);
  v[7] = -3;
  d = Detect(v, DetectorParams{});
  EXPECT_EQ(ErrorField(d.status()), "values[7]");
}

TEST(Detect, PrintsItsParameterSet) {
  EXPECT_EQ(DescribeDetectorParams(DetectorParams{}),
            "edivisive:propose(alpha=1 min_segment=6 window=50 p_max=0.002 permutations=999 "
            "seed=1) mann_whitney:vote(window=12 min_side=6 p_max=0.001 confirm_p_max=0.01) "
            "welch_log:vote(window=12 min_side=6 p_max=0.001 confirm_p_max=0.01) votes=2/3 "
            "tolerance=2");
}

}  // namespace
}  // namespace iofleet::controller::history
