// Monotonic nanosecond clock for hot paths. Reads the TSC when it is invariant
// (constant_tsc + nonstop_tsc) and calibrated against CLOCK_MONOTONIC at start-up,
// else CLOCK_MONOTONIC through the vDSO. Thread-safe after Init().
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace iofleet {

class Clock {
 public:
  // Calibrates once; later calls are no-ops. Called by the first NowNs() user
  // through EnsureInit(); call it early to keep calibration out of measurements.
  static void Init();

  // Nanoseconds on a monotonic time line (CLOCK_MONOTONIC's epoch).
  static inline uint64_t NowNs() {
#if defined(__x86_64__)
    if (use_tsc_) {
      const uint64_t t = __rdtsc() - tsc_base_;
      return mono_base_ + static_cast<uint64_t>((static_cast<unsigned __int128>(t) * mult_) >> kShift);
    }
#endif
    return MonotonicNs();
  }

  static inline uint64_t MonotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }

  // Wall clock in ms since the epoch (for reports only).
  static uint64_t RealtimeMs();

  static bool UsingTsc() { return use_tsc_; }
  static const char* SourceName() { return use_tsc_ ? "tsc" : "clock_gettime"; }

 private:
  static constexpr int kShift = 32;
  static inline bool use_tsc_ = false;
  static inline uint64_t tsc_base_ = 0;
  static inline uint64_t mono_base_ = 0;
  static inline uint64_t mult_ = 0;  // ns per tick << kShift
};

}  // namespace iofleet
