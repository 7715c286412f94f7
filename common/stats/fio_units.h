// fio's number formatting (fio's num2str and the "IOPS=..., BW=... (...)"
// pair of its normal output), shared by the agent's normal output
// (report_text.cc), the CLI and, ported line for line, the dashboard
// (dashboard/src/fio_units.js). Both are tested against strings fio 3.33
// printed (testdata/fio-3.33-iops-bw.txt).
#pragma once

#include <cstdint>
#include <string>

namespace iofleet::stats {

// fio's num2str(): at most `maxlen` digits (the '.' counts), scaled by 1000
// (SI: k, M, G) or 1024 (IEC: Ki, Mi, Gi when `pow2`) with fio's carry
// rounding, then `unit`. `first_prefix`: the prefix `num` already counts in
// (1 for a value in KiB).
std::string FioNum2Str(uint64_t num, int maxlen, bool pow2, const char* unit,
                       int first_prefix = 0);

// IOPS as fio prints them: 36, 1233, 12.1k, 1503k.
std::string FioIops(uint64_t iops);
// A bandwidth as fio prints it, in kb_base's units first and the other in
// parentheses: "47.4MiB/s (49.8MB/s)" (kb_base 1024), "50.5MB/s (48.2MiB/s)"
// (kb_base 1000). kb_base 0 reads as 1024.
std::string FioBw(uint64_t bytes_per_sec, uint32_t kb_base);
// One unit only: "47.4MiB/s" (kb_base 1024) or "49.8MB/s" (1000).
std::string FioBwOne(uint64_t bytes_per_sec, uint32_t kb_base);
// "IOPS=12.1k, BW=47.4MiB/s (49.8MB/s)": fio's normal-output pair.
std::string FioIopsBw(uint64_t iops, uint64_t bytes_per_sec, uint32_t kb_base);

}  // namespace iofleet::stats
