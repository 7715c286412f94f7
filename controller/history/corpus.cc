#include "controller/history/corpus.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/stats/histogram.h"
#include "controller/compare/stat_tests.h"
#include "controller/history/resolution.h"

namespace iofleet::controller::history::corpus {
namespace {

using compare::MixSeed;
using compare::Rng;

// Uniform in (0, 1): 53 random bits, centred in their cell so 0 never occurs.
double Uniform(Rng& rng) {
  constexpr uint64_t kCells = uint64_t{1} << 53;
  return (static_cast<double>(rng.Below(kCells)) + 0.5) / static_cast<double>(kCells);
}

// Standard normal by Box-Muller (one of the pair; simple and portable).
double Normal(Rng& rng) {
  const double u1 = Uniform(rng), u2 = Uniform(rng);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

std::string Pct(double f) { return absl::StrFormat("%g%%", f * 100); }

// I/Os per run of the quantized kinds (the soak's 1 MiB at 4k).
constexpr int kQuantizedIos = 256;
// I/Os per run of kStepP50 (a 1 s run at 10 us), drawn as kStepP50Draws latencies
// each counted kStepP50Ios / kStepP50Draws times (the histogram and resolution of
// a 100,000-I/O run, the sampling noise of 2,000 draws: cheaper to generate), and
// its per-I/O latency spread (sigma of the logs) and level (ns).
constexpr int kStepP50Ios = 100000;
constexpr int kStepP50Draws = 2000;
constexpr double kStepP50Sigma = 0.3;
constexpr double kStepP50Level = 10000;
// Hosts taking turns in a cold-start series.
constexpr size_t kColdStartHosts = 8;

// One quantized run's p50 and its resolution: kQuantizedIos reads, each in
// the fast latency mode (~0.5 us) with probability `fast_share`, else the
// slow one (~1.15 us), spread by `cv` (the soak's two modes).
void TwoModeP50(Rng& rng, double fast_share, double cv, double* value, double* resolution) {
  stats::Histogram h;
  for (int io = 0; io < kQuantizedIos; ++io) {
    const double mode = Uniform(rng) < fast_share ? 480.0 : 1150.0;
    h.Add(static_cast<uint64_t>(std::llround(mode * std::exp(cv * Normal(rng)))));
  }
  *value = static_cast<double>(stats::Quantile(h, 0.5));
  *resolution = QuantileResolution(h, 0.5);
}

}  // namespace

std::string KindName(Kind k) {
  switch (k) {
    case Kind::kStep:
      return "step";
    case Kind::kSpike:
      return "spike";
    case Kind::kBimodal:
      return "bimodal";
    case Kind::kDrift:
      return "drift";
    case Kind::kTransient:
      return "transient";
    case Kind::kNoise:
      return "noise";
    case Kind::kShortNoise:
      return "short_noise";
    case Kind::kQuantizedP50:
      return "quantized_p50";
    case Kind::kQuantizedIops:
      return "quantized_iops";
    case Kind::kColdStart:
      return "cold_start";
    case Kind::kModeSwitchP50:
      return "mode_switch_p50";
    case Kind::kStepP50:
      return "step_p50";
  }
  return "?";
}

Case Generate(Kind kind, double size, double cv, uint64_t seed, double threshold) {
  Case c;
  c.seed = seed;
  c.label.kind = kind;
  c.label.cv = cv;
  Rng rng(MixSeed(seed));
  const size_t n = kind == Kind::kShortNoise ? kShortLength : kLength;
  // Shape parameters are drawn first, so they do not depend on the noise.
  const double sign = rng.Below(2) == 0 ? -1.0 : 1.0;
  std::vector<double> shift(n, 0.0);  // multiplicative: value *= 1 + shift
  switch (kind) {
    case Kind::kStep: {
      const size_t k = 20 + rng.Below(21);
      for (size_t i = k; i < n; ++i) shift[i] = sign * size;
      c.label.size = sign * size;
      c.label.changes = {k};
      c.label.expect_alert = size >= threshold;
      break;
    }
    case Kind::kSpike: {
      const size_t j = rng.Below(n);
      shift[j] = sign * size;
      c.label.size = sign * size;
      break;
    }
    case Kind::kBimodal: {
      for (size_t i = 0; i < n; ++i) shift[i] = rng.Below(10) < 3 ? size : 0;
      c.label.size = size;
      break;
    }
    case Kind::kDrift: {
      for (size_t i = 0; i < n; ++i) {
        shift[i] = sign * size * static_cast<double>(i) / static_cast<double>(n - 1);
      }
      c.label.size = sign * size;
      break;
    }
    case Kind::kTransient: {
      const size_t k = 20 + rng.Below(21);
      const size_t d = 6 + rng.Below(5);
      for (size_t i = k; i < k + d; ++i) shift[i] = sign * size;
      c.label.size = sign * size;
      c.label.changes = {k, k + d};
      break;
    }
    case Kind::kNoise:
    case Kind::kShortNoise:
      break;
    case Kind::kQuantizedP50: {
      const size_t k = 20 + rng.Below(21);
      c.label.size = sign * size;
      c.values.resize(n);
      c.resolution.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const double fast = 0.5 + (i < k ? -0.5 : 0.5) * sign * size;
        TwoModeP50(rng, fast, cv, &c.values[i], &c.resolution[i]);
      }
      c.cls = absl::StrCat(KindName(kind), " mix ", Pct(size), " cv ", Pct(cv));
      return c;
    }
    case Kind::kQuantizedIops: {
      const size_t k = 20 + rng.Below(21);
      c.label.size = sign * size;
      c.values.resize(n);
      c.resolution.resize(n);
      for (size_t i = 0; i < n; ++i) {
        // The true runtime around 2 ms, moved by `size` at k; fio counts whole ms.
        const double base = 2.0 * (1 + (i < k ? -0.5 : 0.5) * sign * size);
        // Runtime jitter cv/4 (5-50 us of 2 ms): a quiet machine's.
        const double ms = std::max(1.0, std::floor(base * std::exp(cv / 4 * Normal(rng))));
        c.values[i] = 1000.0 * kQuantizedIos / ms;
        c.resolution[i] = RuntimeResolution(ms);
      }
      c.cls = absl::StrCat(KindName(kind), " ", Pct(size), " cv ", Pct(cv));
      return c;
    }
    case Kind::kModeSwitchP50: {
      c.label.size = size;
      c.values.resize(n);
      c.resolution.resize(n);
      bool fast = rng.Below(2) == 0;
      for (size_t i = 0; i < n; ++i) {
        if (i > 0 && Uniform(rng) >= size) fast = !fast;
        const double share = (fast ? 0.58 : 0.25) + 0.17 * Uniform(rng);
        TwoModeP50(rng, share, cv, &c.values[i], &c.resolution[i]);
      }
      c.cls = absl::StrCat(KindName(kind), " stay ", Pct(size), " cv ", Pct(cv));
      return c;
    }
    case Kind::kStepP50: {
      const size_t k = 20 + rng.Below(21);
      c.label.size = sign * size;
      c.label.changes = {k};
      c.label.expect_alert = size >= threshold;
      c.values.resize(n);
      c.resolution.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const double level =
            kStepP50Level * (i < k ? 1.0 : 1 + sign * size) * std::exp(cv * Normal(rng));
        stats::Histogram h;
        for (int io = 0; io < kStepP50Draws; ++io) {
          h.AddN(static_cast<uint64_t>(std::llround(level * std::exp(kStepP50Sigma * Normal(rng)))),
                 kStepP50Ios / kStepP50Draws);
        }
        c.values[i] = static_cast<double>(stats::Quantile(h, 0.5));
        c.resolution[i] = QuantileResolution(h, 0.5);
      }
      c.cls = absl::StrCat(KindName(kind), " ", Pct(size), " cv ", Pct(cv));
      return c;
    }
    case Kind::kColdStart: {
      c.hosts.resize(n);
      for (size_t i = 0; i < n; ++i) {
        c.hosts[i] = absl::StrCat("h", i % kColdStartHosts);
        if (i < kColdStartHosts) shift[i] = sign * size;
      }
      c.label.size = sign * size;
      break;
    }
  }
  c.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    c.values[i] = kLevel * (1 + shift[i]) * std::exp(cv * Normal(rng));
  }
  if (kind == Kind::kStep || kind == Kind::kTransient) {
    c.cls = absl::StrCat(KindName(kind), " ", Pct(size), " cv ", Pct(cv));
  } else if (kind == Kind::kColdStart) {
    c.cls = absl::StrCat(KindName(kind), " ", Pct(size), " x", kColdStartHosts, " hosts cv ",
                         Pct(cv));
  } else if (kind == Kind::kNoise || kind == Kind::kShortNoise) {
    c.cls = absl::StrCat(KindName(kind), " cv ", Pct(cv));
  } else {
    c.cls = absl::StrCat(KindName(kind), " ", Pct(size), " cv ", Pct(cv));
  }
  return c;
}

std::vector<Case> StandardCorpus(int per_cell, uint64_t base_seed) {
  struct Cell {
    Kind kind;
    double size;
    double cv;
  };
  std::vector<Cell> cells;
  const double cvs[] = {0.01, 0.02, 0.05, 0.10};
  for (double size : {0.02, 0.05, 0.10, 0.20}) {
    for (double cv : cvs) cells.push_back({Kind::kStep, size, cv});
  }
  for (auto [kind, size] : {std::pair{Kind::kSpike, 0.30}, std::pair{Kind::kBimodal, 0.10},
                            std::pair{Kind::kDrift, 0.10}, std::pair{Kind::kTransient, 0.10},
                            std::pair{Kind::kNoise, 0.0}, std::pair{Kind::kShortNoise, 0.0},
                            std::pair{Kind::kQuantizedP50, 0.04},
                            std::pair{Kind::kQuantizedIops, 0.01},
                            std::pair{Kind::kColdStart, 0.30},
                            std::pair{Kind::kModeSwitchP50, 0.80},
                            std::pair{Kind::kStepP50, 0.05}, std::pair{Kind::kStepP50, 0.10}}) {
    for (double cv : cvs) cells.push_back({kind, size, cv});
  }
  std::vector<Case> out;
  out.reserve(cells.size() * static_cast<size_t>(per_cell));
  for (size_t k = 0; k < cells.size(); ++k) {
    for (int i = 0; i < per_cell; ++i) {
      out.push_back(Generate(cells[k].kind, cells[k].size, cells[k].cv,
                             base_seed + k * 1000 + static_cast<uint64_t>(i)));
    }
  }
  return out;
}

absl::StatusOr<Series> SeriesOf(const Case& c, size_t end, int warmup_per_host) {
  end = std::min(end, c.values.size());
  std::vector<std::string> hosts(c.hosts.begin(),
                                 c.hosts.begin() + static_cast<std::ptrdiff_t>(
                                                       std::min(end, c.hosts.size())));
  hosts.resize(end);
  const std::vector<bool> warmup = WarmupMask(hosts, warmup_per_host);
  std::vector<Point> pts;
  pts.reserve(end);
  for (size_t i = 0; i < end; ++i) {
    if (warmup[i]) continue;
    Point p;
    p.id = absl::StrCat(i);
    p.order = static_cast<int64_t>(i);
    p.value = c.values[i];
    p.resolution = i < c.resolution.size() ? c.resolution[i] : 0;
    pts.push_back(std::move(p));
  }
  return Series::Create(std::move(pts));
}

std::string Dump(const Case& c) {
  std::vector<std::string> v;
  v.reserve(c.values.size());
  for (double x : c.values) v.push_back(absl::StrFormat("%.3f", x));
  return absl::StrCat(c.cls, "|", c.seed, "|", KindName(c.label.kind), "|", c.label.size, "|",
                      c.label.cv, "|", absl::StrJoin(c.label.changes, ","), "|",
                      c.label.expect_alert ? 1 : 0, "|", absl::StrJoin(v, " "));
}

}  // namespace iofleet::controller::history::corpus
