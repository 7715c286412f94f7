// How the backends store the structured fields of a row in one text column
// (JSON), so SQLite and PostgreSQL hold the same text and `migrate` copies it
// unchanged. Readers are lenient: malformed text reads as empty.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "controller/store/store.h"

namespace iofleet::controller::internal {

std::string MapToJson(const std::map<std::string, std::string>& m);  // {"k": "v", ...}
std::map<std::string, std::string> MapFromJson(const std::string& text);
std::string ListToJson(const std::vector<std::string>& v);  // ["a", ...]
std::vector<std::string> ListFromJson(const std::string& text);
// Sparse histogram: [[bucket, count], ...].
std::string HistToJson(const std::vector<std::pair<uint32_t, uint64_t>>& h);
std::vector<std::pair<uint32_t, uint64_t>> HistFromJson(const std::string& text);
// [{"path", "real_path", "keys": [...]}, ...]
std::string TargetIdsToJson(const std::vector<TargetIdentityRow>& ids);
std::vector<TargetIdentityRow> TargetIdsFromJson(const std::string& text);
// [[job_index, first, last], ...]
std::string SeqRangesToJson(const std::vector<SeqRangeRow>& v);
std::vector<SeqRangeRow> SeqRangesFromJson(const std::string& text);

// Every field of a row as canonical JSON (keys sorted): equal rows give equal
// text. Comparing stores (migrate's verification, tests) and messages.
std::string RowJson(const AgentRow& r);
std::string RowJson(const JobRow& r);
std::string RowJson(const RunRow& r);
std::string RowJson(const LeaseRow& r);
std::string RowJson(const IntervalRow& r);
std::string RowJson(const ResultRow& r);

// Doubles (history values) are stored as text, "%.17g" (exact round trip; NaN as
// "nan"), in both backends.
std::string DoubleToText(double v);
double DoubleFromText(const std::string& text);  // malformed: NaN

// Unsigned fields are stored as the 64-bit signed integer of the same bits.
inline int64_t I(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace iofleet::controller::internal
