#include "common/clock.h"

#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace iofleet {
namespace {

bool TscIsInvariant() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

}  // namespace

void Clock::Init() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__x86_64__)
    if (getenv("IOFLEET_CLOCK") != nullptr && std::string(getenv("IOFLEET_CLOCK")) == "gettime") {
      return;
    }
    if (!TscIsInvariant()) return;
    // Calibrate over ~20 ms: long enough for <0.01% error, short for start-up.
    const uint64_t m0 = MonotonicNs();
    const uint64_t t0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const uint64_t m1 = MonotonicNs();
    const uint64_t t1 = __rdtsc();
    if (t1 <= t0 || m1 <= m0) return;
    mult_ = static_cast<uint64_t>((static_cast<unsigned __int128>(m1 - m0) << kShift) / (t1 - t0));
    tsc_base_ = t1;
    mono_base_ = m1;
    use_tsc_ = mult_ != 0;
#endif
  });
}

uint64_t Clock::RealtimeMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000ull + static_cast<uint64_t>(ts.tv_nsec) / 1000000ull;
}

}  // namespace iofleet
