// Change-point detection on one series: E-divisive means (Matteson & James 2014)
// as the primary detector, a windowed Mann-Whitney U scan and a windowed Welch
// t-test scan as the second and third, and a vote. Method and limits:
// docs/history-method.md.
//
// All functions are pure and deterministic (permutations are drawn from a seeded
// generator keyed by the segment's bounds), thread-compatible, and never throw.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iofleet::controller::history {

// ---------------------------------------------------------------- parameters

struct EDivisiveParams {
  // Exponent on |x - y| in the energy distance, in (0, 2). Default 1 (the paper's
  // and Otava's choice: sensitive to changes in mean and in spread).
  double alpha = 1.0;
  // Fewest points on either side of a change point. Default 6 (Chromium's minimum
  // segment size). A change cannot be seen until this many points follow it, and
  // a spike of fewer points can never form a segment of its own.
  int min_segment = 6;
  // Series longer than this are analysed in windows of this many points stepping
  // by half a window, so an old change does not mask a new one and the cost stays
  // O(n * window^2). Default 50 (Otava's default window).
  int window = 50;
  // A split is accepted when its permutation p-value is <= p_max. Default 0.002
  // (on the corpus, 0.01 finds a few more hard steps for ~40 % more false
  // alerts; bench/RESULTS.md).
  double p_max = 0.002;
  // Permutations per significance test; the smallest possible p is
  // 1 / (permutations + 1). Default 999. A test stops early once p > p_max is
  // certain (noise costs a few permutations, a real change the full count).
  int permutations = 999;
  // Seed of the permutation generator. Default 1.
  uint64_t seed = 1;
};

// The windowed two-sample scans (Perfherder's shape): at each position i, the
// points [i - window, i) against [i, i + window), cut at change points already
// accepted by the same scan.
struct WindowTestParams {
  // Points on each side. Default 12 (Perfherder's back/fore window).
  int window = 12;
  // Fewest points on a side for a position to be tested. Default 6.
  int min_side = 6;
  // A position is a candidate when its p <= p_max and it has the smallest p of
  // the positions still open. Default 0.001 (each series tests ~n positions).
  double p_max = 0.001;
  // At a change another detector proposed, this test votes for it when its p
  // there is <= confirm_p_max (one position tested, so a looser bar). Default 0.01.
  double confirm_p_max = 0.01;
};

// What a detector does in Detect().
enum class Role {
  kOff,      // not run
  kVote,     // tests each proposed change at its position and votes on it
  kPropose,  // scans the whole series for changes (and votes yes on its own)
};
// "off", "vote", "propose".
std::string_view RoleName(Role r);

struct DetectorParams {
  EDivisiveParams edivisive;
  WindowTestParams mann_whitney;
  WindowTestParams welch;  // the t-test runs on log values (relative changes)
  // Default: E-divisive proposes and locates changes; the two window tests
  // confirm them. The window scans locate a change less precisely (their p
  // saturates near a step) and agree with each other by construction (same
  // windows), so letting them propose adds mislocated, correlated proposals
  // (bench/RESULTS.md compares both).
  Role edivisive_role = Role::kPropose;
  Role mann_whitney_role = Role::kVote;
  Role welch_role = Role::kVote;
  // Votes a change needs to be confirmed. Every detector that is not off votes on
  // every proposal: yes when it proposed the change itself (within `tolerance`),
  // or when its test at that position, on the points between the neighbouring
  // proposals, passes: E-divisive's permutation test of that fixed split at
  // edivisive.p_max, a window test at its confirm_p_max. Default 2 (of 3).
  int min_votes = 2;
  // Proposals of different detectors at most this many points apart are the
  // same change. Default 2.
  int tolerance = 2;
};

// InvalidArgument naming the field ("edivisive.min_segment: 1 (must be >= 2)").
absl::Status ValidateDetectorParams(const DetectorParams& p);

// One line: "edivisive(alpha=1 min_segment=6 window=50 p_max=0.01 permutations=199
// seed=1) mann_whitney(window=12 min_side=6 p_max=0.001) welch(...) vote=2/3
// tolerance=2". Disabled detectors print as "-name".
std::string DescribeDetectorParams(const DetectorParams& p);

// ---------------------------------------------------------------- output

enum class Detector { kEDivisive = 0, kMannWhitney = 1, kWelch = 2 };
inline constexpr int kNumDetectors = 3;
// "edivisive", "mann_whitney", "welch".
std::string_view DetectorName(Detector d);

// One detector's finding. `index` is the first point of the new level.
struct Candidate {
  Detector detector = Detector::kEDivisive;
  size_t index = 0;
  double p_value = 1;
  // E-divisive: the q-hat energy statistic; Mann-Whitney: U of the points before
  // against the points after; Welch: t of log(after) - log(before).
  double statistic = 0;
};

// A proposed change: the candidates of different detectors within `tolerance`
// (one per detector at most), and every enabled detector's vote on it.
struct ChangePoint {
  // E-divisive's index when it proposed the change, else Mann-Whitney's, else Welch's.
  size_t index = 0;
  std::array<bool, kNumDetectors> proposed{};  // indexed by Detector
  std::array<bool, kNumDetectors> voted{};     // proposed, or its test at `index` passed
  // Each detector's p: the proposing candidate's, else its test's at `index` on
  // the points between the neighbouring proposals; NaN when it cannot be tested
  // there (too few points) or the detector is disabled.
  std::array<double, kNumDetectors> p{};
  int votes = 0;
  bool confirmed = false;  // votes >= min_votes
};

struct Detection {
  std::vector<Candidate> candidates;       // by detector, then index
  std::vector<ChangePoint> change_points;  // by index; confirmed or not
  // Why nothing could be found, when the series is too short for a detector
  // ("23 points: e-divisive needs >= 12"); empty otherwise.
  std::string note;
};

// Runs the enabled detectors and the vote. InvalidArgument for bad parameters or
// a non-finite / non-positive value (values[i] named). `origin`: the index of
// values[0] in the whole series when `values` is its trailing part (alert.h
// AnalyzeTrailing); it only keys the permutation seeds, so that a segment is
// tested with the same draws as in the whole series. Indices in the result are
// into `values`. Default 0.
absl::StatusOr<Detection> Detect(std::span<const double> values, const DetectorParams& p,
                                 size_t origin = 0);

// ---------------------------------------------------------------- building blocks
// Exposed for tests and the bench.

// The E-divisive statistic for the split of x into [0, tau) and [tau, n):
// q = m k / (m + k) * (2/(m k) sum|x_i - y_j|^a - sum_{i<j}|x_i - x_j|^a / C(m,2)
//                                               - sum_{i<j}|y_i - y_j|^a / C(k,2)).
// NaN when either side has fewer than 2 points.
double EnergyQ(std::span<const double> x, size_t tau, double alpha);

struct Split {
  size_t index = 0;  // tau: the first point of the right part
  size_t end = 0;    // kappa: the right part is [tau, kappa)
  double q = 0;      // EnergyQ of x[0, kappa) at tau; NaN when no split has
                     // min_segment points on both sides
};
// The split maximising EnergyQ(x[0, kappa), tau) over tau in [min_segment,
// n - min_segment] and kappa in [tau + min_segment, n] (Matteson & James: the
// free right end lets a short middle segment stand out).
Split BestSplit(std::span<const double> x, double alpha, int min_segment);

// Permutation p-value of the best split of x: (1 + #{permutations whose best q >=
// observed}) / (1 + permutations), stopping early once the result is > p_max.
double BestSplitPValue(std::span<const double> x, double observed_q, const EDivisiveParams& p,
                       uint64_t seed);

// Permutation p-value of the fixed split of x at tau: (1 + #{permutations with
// EnergyQ(tau) >= observed}) / (1 + permutations), stopping early once > p_max.
// NaN when a side has fewer than min_segment points.
double FixedSplitPValue(std::span<const double> x, size_t tau, const EDivisiveParams& p,
                        uint64_t seed);

// E-divisive candidates: hierarchical bisection in windows, candidates of
// overlapping windows merged, then every change re-tested on the points between
// its neighbours (the weakest removed first) until all are significant.
// `origin` as for Detect(): the seeds are keyed by origin + the segment's bounds.
std::vector<Candidate> EDivisive(std::span<const double> x, const EDivisiveParams& p,
                                 size_t origin = 0);

// The window tests at one position: the points [max(lo, i - window), i) against
// [i, min(hi, i + window)). NaN when a side has fewer than min_side points.
double WindowTestP(Detector d, std::span<const double> x, size_t i, size_t lo, size_t hi,
                   const WindowTestParams& p, double* statistic = nullptr);

// Greedy scan: the position with the smallest p is accepted while p <= p_max;
// later windows are cut at accepted positions. `d` is kMannWhitney or kWelch.
std::vector<Candidate> ScanWindowTest(Detector d, std::span<const double> x,
                                      const WindowTestParams& p);

}  // namespace iofleet::controller::history
