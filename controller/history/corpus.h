// The labelled synthetic corpus the detector is evaluated on (issue 16): steps of
// 2-20 % at CV 1-10 %, single spikes, bimodal noise, drifts, transients, pure
// noise. Every series is generated deterministically from its seed (a 64-bit
// Mersenne Twister, our own Box-Muller: no standard-library distribution, whose
// output differs between implementations), so a (class, seed) pair names a
// series for good and the labels travel with it.
//
// Noise is multiplicative: value = level * exp(cv * z), z standard normal, so a
// series' CV is `cv` and every value is positive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/history/series.h"

namespace iofleet::controller::history::corpus {

enum class Kind {
  kStep,        // one level shift of `size` at `changes[0]`, kept to the end
  kSpike,       // one point off by `size`, anywhere (the first point included)
  kBimodal,     // i.i.d. from two modes `size` apart (70 % / 30 %): no change
  kDrift,       // a linear trend of `size` over the whole series: no step
  kTransient,   // a shift of `size` for 6-10 points, then back: should go away
  kNoise,       // stationary noise
  kShortNoise,  // stationary noise, 16 points (series starts)
  // Identical jobs as the soak saw them (issue 16): no change worth an alert.
  kQuantizedP50,   // the p50 of 256-I/O runs whose latencies have two modes (480 and
                   // 1150 ns, each spread by `cv`) near 50/50: the share of the fast
                   // mode moves by `size` (0.48 -> 0.52) at a point, so the p50 flips
                   // between the modes (-58 %) while the mean moves ~1.6 %. Each
                   // point carries its resolution (resolution.h QuantileResolution).
  kQuantizedIops,  // the IOPS of 256-I/O runs of ~2 ms, fio's whole-ms runtime:
                   // 256,000 or 128,000; the true runtime moves by `size` (1 %,
                   // under the threshold) at a point, jitter cv/4. Resolution
                   // 0.5 / runtime ms.
  kColdStart,      // 8 hosts in turn (Case::hosts); the first run of each is off by
                   // `size` (a cold cache, a file just laid out), then noise.
  kModeSwitchP50,  // the soak's p50 (issue 16): 256-I/O runs of two latency modes
                   // (480 and 1150 ns, each spread by `cv`), each run decisively in
                   // one mode (fast share 58-75 % or 25-42 %, drawn per run), the mode
                   // kept from one run to the next with probability `size` (a
                   // Markov chain: runs of several points in one mode): the p50
                   // flips by -58 % / +140 % with no change in the job. Resolution
                   // per point as kQuantizedP50.
  kStepP50,        // a real step of `size` in the p50 of 100,000-I/O runs (per-I/O
                   // latency log-normal, sigma 0.3, around 10 us; 2,000 latencies
                   // drawn, each counted 50 times; the run's level varies by `cv`):
                   // a percentile series that must still alert. Resolution per point.
};
// "step", "spike", "bimodal", "drift", "transient", "noise", "short_noise",
// "quantized_p50", "quantized_iops", "cold_start", "mode_switch_p50", "step_p50".
std::string KindName(Kind k);

struct Label {
  Kind kind = Kind::kNoise;
  double size = 0;  // signed fraction (step, spike, transient, drift); gap for bimodal
  double cv = 0;    // noise CV, fraction
  // True change points (index of the first point of each new level). kStep: one;
  // kTransient: the shift and the return. Empty for the other kinds.
  std::vector<size_t> changes;
  // Whether a detector should raise an alert for this series: only a step of at
  // least the metric threshold that stays. Transients go away; spikes, bimodal
  // noise, drifts and noise have no step.
  bool expect_alert = false;
};

struct Case {
  std::string cls;  // "step 5% cv 2%": the reporting class
  uint64_t seed = 0;
  Label label;
  std::vector<double> values;
  // Per point, when the kind has them: the resolution (Point::resolution; empty =
  // 0) and the host it ran on (empty = one unnamed host).
  std::vector<double> resolution;
  std::vector<std::string> hosts;
};

// The first `end` points of a case as a Series (ids "0", "1", ... = the index in
// the case, order = index, resolution from the case), without the warm-up points
// (series.h WarmupMask with `warmup_per_host`; none without hosts).
absl::StatusOr<Series> SeriesOf(const Case& c, size_t end, int warmup_per_host);

// The level every series is built around (IOPS-like). 100,000.
inline constexpr double kLevel = 100000;
// Points per series (kShortNoise: kShortLength). Steps start at an index drawn
// uniformly from [20, 40].
inline constexpr size_t kLength = 60;
inline constexpr size_t kShortLength = 16;

// One series. `size` is the magnitude as a positive fraction; the sign of step,
// spike and transient shifts is drawn from the seed. `threshold` decides
// expect_alert for steps (|size| >= threshold).
Case Generate(Kind kind, double size, double cv, uint64_t seed, double threshold = 0.02);

// The standard grid: steps {2, 5, 10, 20} % x CV {1, 2, 5, 10} %; spikes 30 %,
// bimodal 10 % gap, drift 10 %, transient 10 %, noise and short noise, then
// quantized p50 (mix 4 %), quantized IOPS (1 %) and cold starts (30 %), then
// mode-switching p50 (stay 80 %) and p50 steps of 5 and 10 %, each at CV
// {1, 2, 5, 10} % (the new kinds last, so the older cells keep their seeds);
// `per_cell` series per cell with seeds base_seed + cell * 1000 + i.
std::vector<Case> StandardCorpus(int per_cell, uint64_t base_seed = 1);

// Stable text form of a case for dumps: "cls|seed|kind|size|cv|changes|values...".
std::string Dump(const Case& c);

}  // namespace iofleet::controller::history::corpus
