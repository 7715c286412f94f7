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

namespace iofleet::controller::history::corpus {

enum class Kind {
  kStep,        // one level shift of `size` at `changes[0]`, kept to the end
  kSpike,       // one point off by `size`, anywhere (the first point included)
  kBimodal,     // i.i.d. from two modes `size` apart (70 % / 30 %): no change
  kDrift,       // a linear trend of `size` over the whole series: no step
  kTransient,   // a shift of `size` for 6-10 points, then back: should go away
  kNoise,       // stationary noise
  kShortNoise,  // stationary noise, 16 points (series starts)
};
// "step", "spike", "bimodal", "drift", "transient", "noise", "short_noise".
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
};

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
// bimodal 10 % gap, drift 10 %, transient 10 %, noise and short noise, each at CV
// {1, 2, 5, 10} %; `per_cell` series per cell with seeds base_seed + cell * 1000 + i.
std::vector<Case> StandardCorpus(int per_cell, uint64_t base_seed = 1);

// Stable text form of a case for dumps: "cls|seed|kind|size|cv|changes|values...".
std::string Dump(const Case& c);

}  // namespace iofleet::controller::history::corpus
