#include "agent/workload/lfsr.h"

#include <array>
#include <bit>

#include "absl/status/status.h"

namespace iofleet::agent::workload {
namespace {

// Taps of one primitive polynomial per degree (x^n + sum x^t + 1 for the
// taps t < n): the positions fio 3.33 uses (its lib/lfsr.c table, from the
// widely published maximal-length tables; fio has none for 64, that one is
// Xilinx XAPP052's). Zero-terminated; the first tap is always the width.
constexpr int kMaxTaps = 6;
using TapList = std::array<uint8_t, kMaxTaps + 1>;
constexpr std::array<TapList, Lfsr::kMaxWidth + 1> kTaps = {{
    {},
    {},
    {},                   // 0..2 unused
    {3, 2},               // 3
    {4, 3},               // 4
    {5, 3},               // 5
    {6, 5},               // 6
    {7, 6},               // 7
    {8, 6, 5, 4},         // 8
    {9, 5},               // 9
    {10, 7},              // 10
    {11, 9},              // 11
    {12, 6, 4, 1},        // 12
    {13, 4, 3, 1},        // 13
    {14, 5, 3, 1},        // 14
    {15, 14},             // 15
    {16, 15, 13, 4},      // 16
    {17, 14},             // 17
    {18, 11},             // 18
    {19, 6, 2, 1},        // 19
    {20, 17},             // 20
    {21, 19},             // 21
    {22, 21},             // 22
    {23, 18},             // 23
    {24, 23, 22, 17},     // 24
    {25, 22},             // 25
    {26, 6, 2, 1},        // 26
    {27, 5, 2, 1},        // 27
    {28, 25},             // 28
    {29, 27},             // 29
    {30, 6, 4, 1},        // 30
    {31, 28},             // 31
    {32, 31, 29, 1},      // 32
    {33, 20},             // 33
    {34, 27, 2, 1},       // 34
    {35, 33},             // 35
    {36, 25},             // 36
    {37, 5, 4, 3, 2, 1},  // 37
    {38, 6, 5, 1},        // 38
    {39, 35},             // 39
    {40, 38, 21, 19},     // 40
    {41, 38},             // 41
    {42, 41, 20, 19},     // 42
    {43, 42, 38, 37},     // 43
    {44, 43, 18, 17},     // 44
    {45, 44, 42, 41},     // 45
    {46, 45, 26, 25},     // 46
    {47, 42},             // 47
    {48, 47, 21, 20},     // 48
    {49, 40},             // 49
    {50, 49, 24, 23},     // 50
    {51, 50, 36, 35},     // 51
    {52, 49},             // 52
    {53, 52, 38, 37},     // 53
    {54, 53, 18, 17},     // 54
    {55, 31},             // 55
    {56, 55, 35, 34},     // 56
    {57, 50},             // 57
    {58, 39},             // 58
    {59, 58, 38, 37},     // 59
    {60, 59},             // 60
    {61, 60, 46, 45},     // 61
    {62, 61, 6, 5},       // 62
    {63, 62},             // 63
    {64, 63, 61, 60},     // 64
}};

constexpr uint64_t MaskFor(const TapList& taps) {
  uint64_t m = 0;
  for (uint8_t t : taps) {
    if (t == 0) break;
    m |= uint64_t{1} << (t - 1);
  }
  return m;
}

constexpr std::array<uint64_t, Lfsr::kMaxWidth + 1> BuildMasks() {
  std::array<uint64_t, Lfsr::kMaxWidth + 1> out{};
  for (int w = Lfsr::kMinWidth; w <= Lfsr::kMaxWidth; ++w) out[w] = MaskFor(kTaps[w]);
  return out;
}
constexpr std::array<uint64_t, Lfsr::kMaxWidth + 1> kMasks = BuildMasks();

static_assert(kMasks[16] == 0xD008, "taps 16,15,13,4");
static_assert(kMasks[32] == 0xD0000001, "taps 32,31,29,1 (fio's)");
static_assert(kMasks[64] >> 63 == 1, "top tap sets the top bit");

}  // namespace

int Lfsr::WidthFor(uint64_t n_blocks) {
  // Smallest n with 2^n > N is bit_width(N) (N < 2^bit_width(N)).
  int n = static_cast<int>(std::bit_width(n_blocks));
  return n < kMinWidth ? kMinWidth : n;
}

uint64_t Lfsr::TapMask(int width) {
  if (width < kMinWidth || width > kMaxWidth) return 0;
  return kMasks[width];
}

absl::StatusOr<Lfsr> Lfsr::Create(uint64_t n_blocks, uint64_t seed) {
  if (n_blocks == 0) return absl::InvalidArgumentError("lfsr: number of blocks must be > 0");
  Lfsr l;
  l.n_blocks_ = n_blocks;
  l.width_ = WidthFor(n_blocks);
  l.mask_ = kMasks[l.width_];
  l.top_ = uint64_t{1} << (l.width_ - 1);
  const uint64_t all = l.width_ == 64 ? ~uint64_t{0} : (uint64_t{1} << l.width_) - 1;
  l.start_state_ = seed & all;
  // All ones is the register's fixed point: fio refuses it, here state 0.
  if (l.start_state_ == all) l.start_state_ = 0;
  l.Reset();
  return l;
}

}  // namespace iofleet::agent::workload
