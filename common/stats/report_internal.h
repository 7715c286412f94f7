// Helpers shared by the JSON writer (report.cc) and the text writers
// (report_text.cc). Not for use outside common/stats.
#pragma once

#include <cstdint>
#include <string>

namespace iofleet::stats::internal {

// printf-style append; all report text goes through here so field widths and
// float formatting are exactly the C library's, as in fio.
__attribute__((format(printf, 2, 3))) void Appendf(std::string& out, const char* fmt, ...);

// ctime() of a realtime ms stamp (now when 0), without the newline.
std::string CtimeText(uint64_t timestamp_ms);

}  // namespace iofleet::stats::internal
