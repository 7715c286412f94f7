// The fio option table: every option fio 3.33 knows (its --cmdhelp=all list,
// the options it hides there and its engines' options) plus iofleet's own, one
// row each. A row says what the option is (name, aliases, type, default,
// bounds, help, category, the engines that own it), what iofleet does with it
// (status) and, when implemented, how it parses into a JobSpec and renders back
// into job text. The parser (parser.h), validation, ToJobText, the arm audit,
// the generated reference (docs/options.md) and the tests all read this table.
//
// Adding an option = one row in options.cc (+ the JobSpec field and the agent
// code that uses it). Making a refused row real = give it an apply/render pair
// and set status to kImplemented.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::jobspec {

namespace internal {
struct Builder;
struct OptCtx;
}  // namespace internal

enum class OptionType {
  kBool,           // 0 or 1; a bare flag means 1
  kInt,            // integer, size suffixes allowed as in fio ("1k")
  kSize,           // bytes with suffixes (k, m, ...; kb_base), expressions
  kSizePercent,    // a size, N% of the file, or Nz (zones)
  kTime,           // time with suffix (us, ms, s, m, h, d)
  kFloatList,      // ':'-separated floats
  kString,         // free text
  kChoice,         // one of a fixed set of words
  kRange,          // lo-hi
  kCpuList,        // 0,2-5
  kDdirList,       // per direction: a or a,b or a,b,c
};

enum class OptionStatus {
  kImplemented,    // parsed into the JobSpec and honoured by the agent
  kNoOp,           // accepted with any well-formed value; cannot change results (reason: why)
  kRefused,        // the default value (and `noop_values`) accepted as a no-op; any other
                   // value is an error naming the feature (reason) that iofleet lacks
  kForeignEngine,  // belongs only to fio ioengines iofleet does not have: always an error
};

enum class OptionCategory {
  kJob, kFiles, kIo, kBlockSize, kIoDepth, kRuntime, kRandom, kCpu, kReporting, kLogs,
  kVerify, kRate, kLatency, kZones, kBuffers, kIolog, kProcess, kEngine, kIofleet,
};

struct OptionRow;
using ApplyFn = absl::Status (*)(const OptionRow& row, internal::Builder& b,
                                 const internal::OptCtx& c);
// Appends the option(s) that turn `tmpl` (a job's template, before fixup) into the
// fixed-up `job`; nothing when the template already gives the job's value.
using RenderFn = void (*)(const JobSpec& job, const internal::Builder& tmpl,
                          std::vector<std::pair<std::string, std::string>>* out);
// Bounds of the row's fields in a JobSpec built in code: the value and the
// message tail ("must be >= 1") of the first violation.
struct CheckFailure {
  std::string value;
  std::string tail;
};
using CheckFn = std::optional<CheckFailure> (*)(const OptionRow& row, const JobSpec& job);

struct OptionRow {
  const char* name;                  // fio's canonical name (what fio's JSON echoes)
  const char* aliases = "";          // space-separated
  OptionType type = OptionType::kString;
  const char* def = "";              // fio's default, as text; "" = none (unset)
  uint64_t min = 0;                  // integer bounds (kInt), checked by the generic code
  uint64_t max = UINT64_MAX;
  const char* help = "";
  OptionCategory category = OptionCategory::kJob;
  const char* engines = "";          // space-separated fio ioengines owning it; "" = any
  OptionStatus status = OptionStatus::kImplemented;
  const char* reason = "";           // kRefused: the missing feature; kNoOp: why it is one
  const char* noop_values = "";      // kRefused: values besides `def` that are no-ops (space-separated)
  int prio = 0;                      // fio's order within a section: 1 first, -1 last
  const char* example = "";          // a non-default value (round-trip test, refusal test)
  const char* example_with = "";     // options the example needs, "k=v k=v"
  const char* renders_as = "";       // the row whose option carries this one's value when
                                     // rendered (rwmixwrite -> rwmixread); "" = itself
  ApplyFn apply = nullptr;           // kImplemented
  RenderFn render = nullptr;         // kImplemented; nullptr = rendered by another row
  CheckFn check = nullptr;           // kImplemented; optional
  bool bare = false;                 // a bare name (no '=') is accepted though the type is
                                     // not kBool (fio's write_bw_log: the job's name)
};

// Every row, grouped by category (the order ToJobText renders in).
const std::vector<OptionRow>& OptionTable();
// The row for a canonical name or an alias; nullptr if fio has no such option.
const OptionRow* FindOptionRow(std::string_view name);
std::vector<std::string> RowAliases(const OptionRow& row);
// The key under which EffectiveOptions/ToJobText carry `name`'s value: the
// canonical name, or the row it renders as (buffered -> direct); "" if unknown.
std::string EffectiveKey(std::string_view name);
std::vector<std::string> RowEngines(const OptionRow& row);

// Engines iofleet runs, and every engine fio 3.33 has (built here or not).
const std::vector<std::string>& SupportedEngines();
bool IsFioEngine(std::string_view name);
bool IsSupportedEngine(std::string_view name);

const char* OptionTypeName(OptionType t);
const char* OptionStatusName(OptionStatus s);
const char* OptionCategoryName(OptionCategory c);

// The error text for `row` given `value` when the row refuses it (kRefused) or
// does not belong to iofleet's engines (kForeignEngine), e.g.
// "data verification is not implemented yet (only verify=0, fio's default, is accepted)".
std::string RefusalText(const OptionRow& row);

// docs/options.md: the generated reference (tools: gen_options_doc).
std::string OptionsReferenceMarkdown();

}  // namespace iofleet::jobspec
