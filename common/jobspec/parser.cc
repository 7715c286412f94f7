#include "common/jobspec/parser.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/jobspec/expr.h"
#include "common/jobspec/internal.h"
#include "common/jobspec/options_zones.h"
#include "common/jobspec/options.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace iofleet::jobspec {
namespace {

using internal::Builder;
using internal::FormatDouble;
using internal::Lower;
using internal::OptCtx;
using internal::Options;
using internal::Origin;
using internal::SizeMultiplier;
using internal::Trim;

constexpr int kMaxIncludeDepth = 32;

std::string U(uint64_t v) { return absl::StrCat(v); }

// ---------------------------------------------------------------------------
// Sections and option entries.

struct OptEntry {
  const OptionRow* row = nullptr;
  std::string name;     // canonical (fio's)
  std::string written;  // the name as written (an alias, or --name on the command line)
  std::string value;
  bool has_value = false;
  std::string where;
};

struct Section {
  std::string name;
  bool global = false;
  std::vector<OptEntry> opts;
  std::string where;
  int file_index = 1;
};

bool IsGlobalName(const std::string& name) { return name.compare(0, 6, "global") == 0; }

std::string JobError(const std::string& where, const std::string& job, const std::string& tail) {
  if (where.empty()) return absl::StrFormat("job \"%s\": %s", job, tail);
  return absl::StrFormat("%s: job \"%s\": %s", where, job, tail);
}

absl::Status OptionError(const std::string& where, const std::string& job,
                         const std::string& option, const std::string& value,
                         absl::string_view tail) {
  const std::string sep = !tail.empty() && tail[0] == ':' ? "" : " ";
  return absl::InvalidArgumentError(JobError(
      where, job,
      absl::StrFormat("option \"%s\": value \"%s\"%s%s", option, value, sep, std::string(tail))));
}

// Builds an entry for `key` / `value` (already substituted), checking the name.
absl::StatusOr<OptEntry> MakeEntry(const std::string& key, const std::string& value, bool has_value,
                                   const std::string& where, const std::string& job) {
  const OptionRow* row = FindOptionRow(key);
  if (row == nullptr) {
    return absl::InvalidArgumentError(
        JobError(where, job, absl::StrFormat("unknown option \"%s\"", key)));
  }
  if (row->status == OptionStatus::kForeignEngine) {
    return absl::InvalidArgumentError(
        JobError(where, job, absl::StrFormat("option \"%s\" %s", key, RefusalText(*row))));
  }
  // A bare non-flag: an error for implemented options; for the others (fio takes
  // e.g. a bare write_bw_log) the refusal or no-op decides.
  if (!has_value && row->type != OptionType::kBool && !row->bare &&
      row->status == OptionStatus::kImplemented) {
    return absl::InvalidArgumentError(
        JobError(where, job, absl::StrFormat("option \"%s\" requires a value", key)));
  }
  OptEntry e;
  e.row = row;
  e.name = row->name;
  e.written = key;
  e.value = value;
  e.has_value = has_value;
  e.where = where;
  return e;
}

// ---------------------------------------------------------------------------
// Values of rows that are not implemented: checked by type (fio refuses a
// malformed value of any option), and compared with the default.

absl::StatusOr<bool> BoolOf(const std::string& v, bool has_value) {
  if (!has_value) return true;
  const std::string t = Trim(v);
  if (t == "1") return true;
  if (t == "0") return false;
  return internal::Tail("must be 0 or 1");
}

// A signed integer or size: "-1", "4k", "(1+2)".
absl::StatusOr<int64_t> SignedSize(const std::string& raw, uint32_t kb_base) {
  std::string s = Trim(raw);
  bool neg = false;
  if (!s.empty() && s[0] == '-') {
    neg = true;
    s = s.substr(1);
  }
  auto v = internal::SizeImpl(s, kb_base);
  if (!v.ok()) return v.status();
  if (*v > static_cast<uint64_t>(INT64_MAX)) return internal::Tail("is out of range");
  return neg ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

// The value as a list of comparable pieces (per direction, per list entry), or an
// error when it is not well formed for the row's type.
absl::StatusOr<std::vector<std::string>> Canonical(const OptionRow& row, const std::string& v,
                                                   bool has_value, uint32_t kb_base) {
  std::vector<std::string> out;
  switch (row.type) {
    case OptionType::kBool: {
      auto b = BoolOf(v, has_value);
      if (!b.ok()) return b.status();
      out.push_back(*b ? "1" : "0");
      return out;
    }
    case OptionType::kInt:
    case OptionType::kSize:
    case OptionType::kDdirList: {
      for (const std::string& piece : internal::SplitTopLevel(v, ',')) {
        if (Trim(piece).empty()) continue;
        if (row.type == OptionType::kDdirList && Trim(piece).find_first_of("/:") != std::string::npos) {
          out.push_back(Trim(piece));  // bssplit-like text (cmdprio_bssplit)
          continue;
        }
        auto n = SignedSize(piece, kb_base);
        if (!n.ok()) return n.status();
        out.push_back(absl::StrCat(*n));
      }
      if (out.empty()) return internal::Tail("is empty");
      return out;
    }
    case OptionType::kSizePercent: {
      const std::string t = Trim(v);
      if (t.size() > 1 && (t.back() == 'z' || t.back() == 'Z') &&
          std::all_of(t.begin(), t.end() - 1, [](char c) { return c >= '0' && c <= '9'; })) {
        out.push_back(t);
        return out;
      }
      auto s = internal::SizeOrPercentImpl(t, kb_base);
      if (!s.ok()) return s.status();
      out.push_back(s->is_percent ? absl::StrCat(s->percent, "%") : absl::StrCat(s->bytes));
      return out;
    }
    case OptionType::kTime: {
      for (const std::string& piece : internal::SplitTopLevel(v, ',')) {
        if (Trim(piece).empty()) continue;
        auto t = internal::TimeImpl(piece, 1);
        if (!t.ok()) return t.status();
        out.push_back(absl::StrCat(*t));
      }
      if (out.empty()) return internal::Tail("is empty");
      return out;
    }
    case OptionType::kFloatList: {
      for (const std::string& piece : internal::SplitTopLevel(v, ':')) {
        std::string p = Trim(piece);
        if (const size_t comma = p.find(','); comma != std::string::npos) p = p.substr(0, comma);
        auto f = internal::FloatImpl(p);
        if (!f.ok()) return f.status();
        out.push_back(FormatDouble(*f));
      }
      return out;
    }
    case OptionType::kCpuList: {
      auto c = internal::CpuListImpl(v);
      if (!c.ok()) return c.status();
      out.push_back(internal::CpuListText(*c));
      return out;
    }
    case OptionType::kRange:
    case OptionType::kString:
    case OptionType::kChoice:
      out.push_back(Lower(Trim(v)));
      return out;
  }
  return out;
}

// Whether `v` changes nothing for a refused row: every piece equals the default
// or one of the row's no-op values.
bool IsNoopValue(const OptionRow& row, const std::string& v, bool has_value, uint32_t kb_base) {
  auto got = Canonical(row, v, has_value, kb_base);
  if (!got.ok()) return false;
  std::vector<std::vector<std::string>> allowed;
  std::vector<std::string> texts;
  if (*row.def) texts.push_back(row.def);
  else if (row.type == OptionType::kBool) texts.push_back("0");  // unset flag = 0
  for (absl::string_view nv : absl::StrSplit(row.noop_values, ' ', absl::SkipEmpty())) {
    texts.emplace_back(nv);
  }
  std::set<std::string> ok;
  for (const std::string& t : texts) {
    auto c = Canonical(row, t, true, kb_base);
    if (c.ok()) ok.insert(c->begin(), c->end());
  }
  for (const std::string& p : *got) {
    if (!ok.contains(p)) return false;
  }
  return true;
}

absl::Status ApplyEntry(Builder& b, const OptEntry& e) {
  const OptionRow& row = *e.row;
  switch (row.status) {
    case OptionStatus::kImplemented: {
      OptCtx ctx{e.value, e.has_value};
      return row.apply(row, b, ctx);
    }
    case OptionStatus::kNoOp: {
      if (!e.has_value) return absl::OkStatus();
      auto c = Canonical(row, e.value, e.has_value, b.spec.kb_base);
      if (!c.ok()) {
        return internal::Tail(
            absl::StrFormat("is not a valid %s: %s", OptionTypeName(row.type), c.status().message()));
      }
      return absl::OkStatus();
    }
    case OptionStatus::kRefused:
      if (IsNoopValue(row, e.value, e.has_value, b.spec.kb_base)) return absl::OkStatus();
      return internal::Tail(absl::StrCat(": ", RefusalText(row)));
    case OptionStatus::kForeignEngine:
      return internal::Tail(absl::StrCat(": ", RefusalText(row)));
  }
  return absl::OkStatus();
}

// fio's order within a section: options of higher `prio` first (kb_base,
// cpus_allowed_policy), filename last, then the engine's options once the
// engine is known. The order is also fio's "job options" order.
int RowRank(const OptionRow& row) {
  if (row.category == OptionCategory::kEngine && *row.engines) return 3;
  return 1 - row.prio;  // prio 1 -> 0, 0 -> 1, -1 -> 2
}

int ApplyRank(const OptEntry& e) { return RowRank(*e.row); }

absl::Status ApplySection(Builder& b, const std::vector<OptEntry>& opts, const std::string& job,
                          Options* raw) {
  std::vector<const OptEntry*> order;
  for (const OptEntry& e : opts) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const OptEntry* x, const OptEntry* y) {
    return ApplyRank(*x) < ApplyRank(*y);
  });
  for (const OptEntry* e : order) {
    absl::Status st = ApplyEntry(b, *e);
    if (!st.ok()) return OptionError(e->where, job, e->written, e->value, st.message());
    b.origin[e->name] = Origin{e->where, e->value, e->written};
  }
  if (raw != nullptr) {
    for (const OptEntry* e : order) raw->emplace_back(e->name, e->has_value ? e->value : "");
  }
  return absl::OkStatus();
}

void Note(Builder& b, const char* option, uint64_t effective, const std::string& why) {
  if (b.notes == nullptr) return;
  auto it = b.origin.find(option);
  if (it == b.origin.end()) return;  // not written: nothing was changed
  b.notes->push_back(Normalisation{b.spec.name, option, it->second.value, U(effective), why});
}

// Log names given bare take the job's name; a bandwidth or IOPS log averaged
// over log_avg_msec also sets the sample window, unless bwavgtime/iopsavgtime
// were given (fio's add_job).
void FixupLogs(Builder& b) {
  JobSpec& s = b.spec;
  std::string* prefixes[] = {&s.write_bw_log, &s.write_iops_log, &s.write_lat_log,
                             &s.write_hist_log, &s.write_interval_hist_log};
  for (size_t i = 0; i < b.log_named_by_job.size(); ++i) {
    if (b.log_named_by_job[i]) *prefixes[i] = s.name;
  }
  if (s.log_avg_msec != 0) {
    if (!s.write_bw_log.empty() && b.origin.count("bwavgtime") == 0) s.bwavgtime = s.log_avg_msec;
    if (!s.write_iops_log.empty() && b.origin.count("iopsavgtime") == 0) {
      s.iopsavgtime = s.log_avg_msec;
    }
  }
}

// fio's fixup_options for the fields we carry. Reports, for values that were
// written, what it changed.
void Fixup(Builder& b) {
  JobSpec& s = b.spec;
  internal::FixupZones(b);
  for (int d = 0; d < kNumDdirs; ++d) {
    s.bs_min[d] = b.min_bs_raw[d] ? b.min_bs_raw[d] : s.bs[d];
    s.bs_max[d] = b.max_bs_raw[d] ? b.max_bs_raw[d] : s.bs[d];
  }
  if (s.iodepth >= 1) {
    const std::string at_depth = absl::StrFormat("clamped to iodepth (%u)", s.iodepth);
    if (s.iodepth_low == 0 || s.iodepth_low > s.iodepth) {
      if (s.iodepth_low > s.iodepth) Note(b, "iodepth_low", s.iodepth, at_depth);
      s.iodepth_low = s.iodepth;
    }
    if (s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth) {
      if (s.iodepth_batch_submit > s.iodepth) Note(b, "iodepth_batch", s.iodepth, at_depth);
      s.iodepth_batch_submit = s.iodepth;
    }
    if (s.iodepth_batch_complete_min > s.iodepth) {
      Note(b, "iodepth_batch_complete_min", s.iodepth, at_depth);
      s.iodepth_batch_complete_min = s.iodepth;
    }
    const uint32_t raw_max = s.iodepth_batch_complete_max;
    s.iodepth_batch_complete_max =
        std::max({s.iodepth_batch_complete_max, s.iodepth_batch_complete_min, 1u});
    if (s.iodepth_batch_complete_max > s.iodepth) s.iodepth_batch_complete_max = s.iodepth;
    if (raw_max != 0 && raw_max != s.iodepth_batch_complete_max) {
      Note(b, "iodepth_batch_complete_max", s.iodepth_batch_complete_max,
           raw_max > s.iodepth ? at_depth : "raised to iodepth_batch_complete_min");
    }
  }
  if (s.filesize_high < s.filesize) s.filesize_high = s.filesize;
  if (s.startdelay_high_us < s.startdelay_us) s.startdelay_high_us = s.startdelay_us;
  // fio: "time_based requires a runtime" and then ignores it.
  if (s.runtime_us == 0 && s.time_based) {
    Note(b, "time_based", 0, "ignored without a runtime");
    s.time_based = false;
  }
  if (s.loops == 0) s.loops = 1;  // fio runs a loops=0 job once
  // ignore_error's list of a class continue_on_error does not cover (set to
  // less after ignore_error) is never consulted (fio's break_on_this_error):
  // dropped, so the job renders back as it runs.
  for (size_t k = 0; k < s.ignore_error.size(); ++k) {
    if ((s.continue_on_error & (1u << k)) == 0) s.ignore_error[k].clear();
  }
  // fio's fixup_options: blockalign counts for random I/O only, and one other
  // than a direction's smallest block turns the random map off ("Any use of
  // blockalign= turns off randommap"): the aligned offsets are drawn from
  // size / blockalign blocks, some of them again.
  if (IsRandom(s.rw) && !s.norandommap) {
    for (int d = 0; d < kNumDdirs; ++d) {
      if (EffectiveBlockalign(s, d) == s.bs_min[d]) continue;
      Note(b, "ba", s.blockalign[d], "turns the random map off (norandommap=1), as fio's blockalign");
      s.norandommap = true;
      break;
    }
  }
  internal::FixupData(b);
  FixupLogs(b);
}

// An engine option set (in the job or its [global]) for a job whose ioengine
// does not own it: fio refuses it ("Bad option"), so do we, naming the owners.
absl::Status CheckEngineOptions(const Builder& b) {
  const JobSpec& s = b.spec;
  for (const auto& [name, origin] : b.origin) {
    const OptionRow* row = FindOptionRow(name);
    if (row == nullptr || !*row->engines) continue;
    const std::vector<std::string> owners = RowEngines(*row);
    if (std::find(owners.begin(), owners.end(), s.ioengine) != owners.end()) continue;
    std::vector<std::string> ours, theirs;
    for (const std::string& o : owners) (IsSupportedEngine(o) ? ours : theirs).push_back(o);
    std::string tail = absl::StrCat(": belongs to ioengine ", absl::StrJoin(ours, ", "));
    if (!theirs.empty()) {
      absl::StrAppend(&tail, " (also ", absl::StrJoin(theirs, ", "), ", which iofleet does not support)");
    }
    absl::StrAppend(&tail, ", not to this job's ioengine ", s.ioengine);
    return OptionError(origin.where, s.name, origin.written.empty() ? name : origin.written,
                       origin.value, tail);
  }
  return absl::OkStatus();
}

// Range and consistency checks on a fixed-up job: each row's own bounds, then
// what depends on several options. `origin` (optional) supplies the location,
// the name as written and the written value for messages.
absl::Status ValidateJobImpl(const JobSpec& s, const std::vector<std::string>& earlier_names,
                             const std::map<std::string, Origin>* origin) {
  auto fail = [&](const std::string& option, const std::string& value,
                  const std::string& tail) -> absl::Status {
    std::string where, v = value, name = option;
    if (origin != nullptr) {
      auto it = origin->find(option);
      if (it != origin->end()) {
        where = it->second.where;
        v = it->second.value;
        if (!it->second.written.empty()) name = it->second.written;
      }
    }
    return OptionError(where, s.name, name, v, tail);
  };
  static const Builder kDefaults;
  for (const OptionRow& row : OptionTable()) {
    if (row.check != nullptr) {
      if (auto f = row.check(row, s); f.has_value()) return fail(row.name, f->value, f->tail);
    }
    // An engine option away from its default needs its engine (JobSpecs built in code).
    if (*row.engines && row.render != nullptr && origin == nullptr) {
      Options diff;
      row.render(s, kDefaults, &diff);
      const auto owners = RowEngines(row);
      if (!diff.empty() && std::find(owners.begin(), owners.end(), s.ioengine) == owners.end()) {
        return fail(row.name, diff[0].second,
                    absl::StrCat(": belongs to ioengine ", absl::StrJoin(owners, ", "),
                                 ", not to this job's ioengine ", s.ioengine));
      }
    }
  }
  if (s.iodepth_batch_submit < 1 || s.iodepth_batch_submit > s.iodepth) {
    return fail("iodepth_batch", U(s.iodepth_batch_submit),
                absl::StrFormat("must be in 1..iodepth (%u)", s.iodepth));
  }
  if (s.iodepth_batch_complete_min > s.iodepth) {
    return fail("iodepth_batch_complete_min", U(s.iodepth_batch_complete_min),
                absl::StrFormat("must be <= iodepth (%u)", s.iodepth));
  }
  if (s.iodepth_batch_complete_max < std::max(s.iodepth_batch_complete_min, 1u) ||
      s.iodepth_batch_complete_max > s.iodepth) {
    return fail("iodepth_batch_complete_max", U(s.iodepth_batch_complete_max),
                "must be in max(iodepth_batch_complete_min,1)..iodepth");
  }
  if (s.iodepth_low < 1 || s.iodepth_low > s.iodepth) {
    return fail("iodepth_low", U(s.iodepth_low), "must be in 1..iodepth");
  }
  if (s.time_based && s.runtime_us == 0) {
    return fail("time_based", "1", "requires runtime > 0");
  }
  // blockalign other than the smallest block: the agent draws random offsets
  // over size / blockalign blocks (fio's last_block) and aligns them to it,
  // with every random_distribution (the law over those blocks; README,
  // "blockalign"). Not with lfsr (fio's LFSR walks the blocks of the smallest
  // size) or zonemode=zbd (writes at the zone's write pointer).
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!IsRandom(s.rw) || EffectiveBlockalign(s, d) == s.bs_min[d]) continue;
    if (s.random_generator == RandomGenerator::kLfsr || s.zone_mode == ZoneMode::kZbd) {
      return fail("ba", U(s.blockalign[d]),
                  "(other than the smallest block size) with random_generator=lfsr or zonemode=zbd "
                  "is not implemented by the agent yet");
    }
  }
  if (!s.wait_for.empty() &&
      std::find(earlier_names.begin(), earlier_names.end(), s.wait_for) == earlier_names.end()) {
    return fail("wait_for", s.wait_for, "does not name an earlier job");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Substitution.

long PageSize() {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? p : 4096;
}

std::string SubstituteEnv(const std::string& in, const ParseOptions& opts) {
  std::string out;
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '{') {
      const size_t close = in.find('}', i + 2);
      if (close != std::string::npos) {
        const std::string var = in.substr(i + 2, close - i - 2);
        if (opts.env != nullptr) {
          auto it = opts.env->find(var);
          if (it != opts.env->end()) out += it->second;
        } else if (const char* v = getenv(var.c_str()); v != nullptr) {
          out += v;
        }
        i = close + 1;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
  return out;
}

// $pagesize, $mb_memory, $ncpus. Returns true if any was replaced.
bool SubstituteKeywords(std::string* s) {
  struct Kw {
    const char* name;
    uint64_t value;
  };
  long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES);
  const Kw kws[] = {
      {"$pagesize", static_cast<uint64_t>(PageSize())},
      {"$mb_memory", pages > 0 ? static_cast<uint64_t>(pages) * PageSize() / (1024 * 1024) : 0},
      {"$ncpus", static_cast<uint64_t>(ncpus > 0 ? ncpus : 1)},
  };
  bool any = false;
  for (const Kw& k : kws) {
    const std::string name = k.name;
    size_t p;
    while ((p = s->find(name)) != std::string::npos) {
      s->replace(p, name.size(), absl::StrCat(k.value));
      any = true;
    }
  }
  return any;
}

// Turns one option line (or CLI key/value) into an entry: ${VAR}, keywords (and,
// where fio would call bc, our own evaluator), then key=value splitting.
absl::StatusOr<OptEntry> ParseOptionText(const std::string& text, const std::string& where,
                                         const std::string& job, const ParseOptions& opts) {
  std::string line = SubstituteEnv(text, opts);
  const size_t eq = line.find('=');
  std::string key = Trim(line.substr(0, eq));
  bool has_value = eq != std::string::npos;
  std::string value = has_value ? Trim(line.substr(eq + 1)) : "";
  if (key.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: missing option name", where));
  }
  if (SubstituteKeywords(&value) && value.find_first_of("+-*/") != std::string::npos &&
      !value.empty() && value[0] != '(') {
    auto v = internal::EvaluateExpression(absl::StrCat("(", value, ")"),
                                          [](const std::string& s) -> std::optional<uint64_t> {
                                            return SizeMultiplier(Lower(s), 1024);
                                          });
    if (v.ok()) value = absl::StrCat(*v);
  }
  return MakeEntry(key, value, has_value, where, job);
}

// ---------------------------------------------------------------------------
// Job files.

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string JoinPath(const std::string& dir, const std::string& p) {
  if (dir.empty()) return p;
  if (dir.back() == '/') return dir + p;
  return dir + "/" + p;
}

bool FileExists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot open job file: %s", path, strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct FileParser {
  const ParseOptions& opts;
  std::vector<Section>* sections;
  int file_index;
  std::vector<std::string> include_stack;  // canonical paths

  absl::Status Parse(const std::string& text, const std::string& source, const std::string& dir,
                     bool is_include) {
    size_t pos = 0;
    int lineno = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(pos, nl - pos);
      pos = nl + 1;
      ++lineno;
      const std::string where = absl::StrCat(source, ":", lineno);
      line = Trim(line);
      if (line.empty() || line[0] == ';' || line[0] == '#') {
        if (nl == text.size()) break;
        continue;
      }
      const size_t cut = line.find_first_of(";#");
      if (cut != std::string::npos) line = Trim(line.substr(0, cut));
      if (line[0] == '[') {
        if (is_include) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: include files must not contain sections (\"%s\")", where, line));
        }
        if (line.back() != ']' || line.size() < 3) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: bad section header \"%s\"", where, line));
        }
        Section s;
        s.name = Trim(line.substr(1, line.size() - 2));
        if (s.name.empty() || s.name.size() > 255) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: bad section name \"%s\"", where, line));
        }
        s.global = IsGlobalName(s.name);
        s.where = where;
        s.file_index = file_index;
        sections->push_back(std::move(s));
      } else if (line.compare(0, 7, "include") == 0 &&
                 (line.size() == 7 || absl::ascii_isspace(static_cast<unsigned char>(line[7])))) {
        absl::Status st = Include(Trim(line.substr(7)), where, dir);
        if (!st.ok()) return st;
      } else {
        if (sections->empty()) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: option \"%s\" appears before the first [section]", where, line));
        }
        Section& cur = sections->back();
        auto e = ParseOptionText(line, where, cur.name, opts);
        if (!e.ok()) return e.status();
        cur.opts.push_back(std::move(*e));
      }
      if (nl == text.size()) break;
    }
    return absl::OkStatus();
  }

  absl::Status Include(const std::string& path, const std::string& where, const std::string& dir) {
    if (!opts.allow_include) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: include is not allowed in job text received over the network", where));
    }
    if (path.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: include needs a file name", where));
    }
    std::string found;
    if (path[0] == '/' || FileExists(path)) {
      found = path;
    } else if (!dir.empty() && FileExists(JoinPath(dir, path))) {
      found = JoinPath(dir, path);
    }
    if (found.empty() || !FileExists(found)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: include file \"%s\" not found", where, path));
    }
    char buf[PATH_MAX];
    const std::string canonical = realpath(found.c_str(), buf) ? std::string(buf) : found;
    if (std::find(include_stack.begin(), include_stack.end(), canonical) != include_stack.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: include cycle: \"%s\" includes itself", where, path));
    }
    if (include_stack.size() >= kMaxIncludeDepth) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: includes nested too deeply", where));
    }
    auto text = ReadFile(found);
    if (!text.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s", where, text.status().message()));
    }
    include_stack.push_back(canonical);
    absl::Status st = Parse(*text, found, DirName(found), true);
    include_stack.pop_back();
    return st;
  }
};

// Turns sections into jobs. `tmpl` is the starting global template (CLI globals);
// `global_out` collects global options as written. `overrides` are set in every
// job section after its own options.
absl::Status BuildJobs(const std::vector<Section>& sections, Builder tmpl,
                       const std::vector<OptEntry>& overrides, std::vector<Builder>* jobs,
                       Options* global_out) {
  bool first_job_of_file = true;
  for (const Section& s : sections) {
    if (s.global) {
      absl::Status st = ApplySection(tmpl, s.opts, s.name, global_out);
      if (!st.ok()) return st;
      continue;
    }
    Builder b = tmpl;
    b.spec.name = s.name;
    b.spec.raw_options.clear();
    b.spec.file_index = s.file_index;
    if (first_job_of_file && s.file_index > 1) b.spec.stonewall = true;  // between files
    first_job_of_file = false;
    std::vector<OptEntry> opts = s.opts;
    opts.insert(opts.end(), overrides.begin(), overrides.end());
    absl::Status st = ApplySection(b, opts, s.name, &b.spec.raw_options);
    if (!st.ok()) return st;
    jobs->push_back(std::move(b));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<OptEntry>> OverrideEntries(const ParseOptions& opts) {
  std::vector<OptEntry> out;
  for (const OptionOverride& o : opts.overrides) {
    const std::string where = o.source.empty() ? "override" : o.source;
    auto e = MakeEntry(Trim(o.key), Trim(o.value), !o.value.empty(), where, "*");
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
  return out;
}

absl::StatusOr<JobList> Finish(std::vector<Builder> jobs, Options globals,
                               const std::string& source, const ParseOptions& opts) {
  if (jobs.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: no jobs defined", source));
  }
  JobList out;
  out.global_options = std::move(globals);
  std::vector<std::string> names;
  for (Builder& b : jobs) {
    b.notes = opts.normalised;
    Fixup(b);
    b.notes = nullptr;
    IOFLEET_RETURN_IF_ERROR(CheckEngineOptions(b));
    IOFLEET_RETURN_IF_ERROR(ValidateJobImpl(b.spec, names, &b.origin));
    names.push_back(b.spec.name);
    out.jobs.push_back(std::move(b.spec));
  }
  return out;
}

absl::Status ParseFileInto(const std::string& text, const std::string& source,
                           const std::string& dir, int file_index, const ParseOptions& opts,
                           const Builder& tmpl, const std::vector<OptEntry>& overrides,
                           std::vector<Builder>* jobs, Options* globals) {
  std::vector<Section> sections;
  FileParser fp{opts, &sections, file_index, {}};
  absl::Status st = fp.Parse(text, source, dir, false);
  if (!st.ok()) return st;
  return BuildJobs(sections, tmpl, overrides, jobs, globals);
}

// ---------------------------------------------------------------------------
// ToJobText.

// Options that turn the template `tb` (a job's starting point, before fixup) into
// the fixed-up job `j`: each row renders its own option(s), in table order.
Options RenderDiff(const JobSpec& j, const Builder& tb) {
  Options o;
  for (const OptionRow& row : OptionTable()) {
    if (row.status == OptionStatus::kImplemented && row.render != nullptr) row.render(j, tb, &o);
  }
  return o;
}

void AppendOptions(std::string* out, const Options& opts) {
  for (const auto& [k, v] : opts) {
    const OptionRow* row = FindOptionRow(k);
    if (v.empty() && row != nullptr && row->type == OptionType::kBool) {
      absl::StrAppend(out, k, "\n");  // bare flag
    } else {
      absl::StrAppend(out, k, "=", v, "\n");
    }
  }
}

// A job's section header. Its name as the header where that reads back as a
// job section with that name; otherwise (a name given with name= that starts
// with "global", which would make the section a [global] one as in fio, or
// holds a comment character or outer blanks) a header of its own, "job<N>",
// and the name in a name= line unless the options rendered after it set it.
void AppendSectionHeader(std::string* out, const JobSpec& j, size_t index,
                         const Options& rendered) {
  const bool as_header = !j.name.empty() && j.name.size() <= 255 && !IsGlobalName(j.name) &&
                         j.name.find_first_of(";#") == std::string::npos &&
                         Trim(j.name) == j.name;
  if (as_header) {
    absl::StrAppend(out, "[", j.name, "]\n");
    return;
  }
  absl::StrAppend(out, "[job", index + 1, "]\n");
  const bool named = std::any_of(rendered.begin(), rendered.end(),
                                 [](const auto& kv) { return kv.first == "name"; });
  if (!named) absl::StrAppend(out, "name=", j.name, "\n");
}

// `empty_value` is set when an option had to be rendered with an empty value
// ("bssplit=" clearing a [global] split): fio's JSON echo drops those.
std::string RenderJobs(const JobList& list, const Options& globals, const Builder& tmpl,
                       bool* empty_value) {
  std::string out;
  if (!globals.empty()) {
    out += "[global]\n";
    AppendOptions(&out, globals);
  }
  for (size_t i = 0; i < list.jobs.size(); ++i) {
    const JobSpec& j = list.jobs[i];
    if (!out.empty()) out += "\n";
    const Options diff = RenderDiff(j, tmpl);
    AppendSectionHeader(&out, j, i, diff);
    for (const auto& [k, v] : j.raw_options) {
      if (k == "description") absl::StrAppend(&out, k, "=", v, "\n");
    }
    for (const auto& kv : diff) {
      if (kv.second.empty()) *empty_value = true;
    }
    AppendOptions(&out, diff);
  }
  return out;
}

// The jobs as written: the [global] options and each job's own options as the
// user gave them (JobSpec::raw_options), so that the agent's JSON "job options"
// echo what was written (bs=4k, runtime=1), as fio's do.
// A job section's bare flags (`time_based`) as `time_based=1`: fio's JSON "job
// options" list no job-section bare flag (its "global options" do), and the arm
// audit reads what the agent ran from that echo.
Options WithFlagsSet(Options opts) {
  for (auto& [k, v] : opts) {
    const OptionRow* row = FindOptionRow(k);
    if (v.empty() && row != nullptr && row->type == OptionType::kBool) v = "1";
  }
  return opts;
}

// [global] options in the order one section applies them (several [global]
// sections become one).
Options InApplyOrder(Options globals) {
  std::stable_sort(globals.begin(), globals.end(), [](const auto& x, const auto& y) {
    const OptionRow* rx = FindOptionRow(x.first);
    const OptionRow* ry = FindOptionRow(y.first);
    return (rx ? RowRank(*rx) : 1) < (ry ? RowRank(*ry) : 1);
  });
  return globals;
}

// The [global] options go in the order one section applies them (see ToJobText).
std::string RenderAsWritten(const JobList& list, const Options& globals) {
  std::string out;
  if (!globals.empty()) {
    out += "[global]\n";
    AppendOptions(&out, globals);  // fio echoes [global] bare flags (as "")
  }
  for (size_t i = 0; i < list.jobs.size(); ++i) {
    const JobSpec& j = list.jobs[i];
    if (!out.empty()) out += "\n";
    const Options opts = WithFlagsSet(j.raw_options);
    AppendSectionHeader(&out, j, i, opts);
    AppendOptions(&out, opts);
  }
  return out;
}

JobSpec Comparable(JobSpec s) {
  s.raw_options.clear();
  s.file_index = 1;
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API.

absl::StatusOr<uint64_t> ParseSize(std::string_view v, uint32_t kb_base) {
  auto r = internal::SizeImpl(std::string(v), kb_base);
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

absl::StatusOr<SizeOrPercent> ParseSizeOrPercent(std::string_view v, uint32_t kb_base) {
  auto r = internal::SizeOrPercentImpl(std::string(v), kb_base);
  if (r.ok() && r->is_percent && r->percent == 0) {
    r = internal::Tail("must be a percentage in (0,100]");
  }
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

absl::StatusOr<uint64_t> ParseTimeUs(std::string_view v, uint64_t default_unit_us) {
  auto r = internal::TimeImpl(std::string(v), default_unit_us);
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view v) {
  auto r = internal::CpuListImpl(std::string(v));
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

std::vector<std::string> KnownOptionNames() {
  std::vector<std::string> out;
  for (const OptionRow& r : OptionTable()) {
    out.push_back(r.name);
    for (const std::string& a : RowAliases(r)) out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::Status ValidateJobSpec(const JobSpec& spec) {
  // A lone job cannot name an earlier one; wait_for is checked by ValidateJobList.
  JobSpec copy = spec;
  copy.wait_for.clear();
  return ValidateJobImpl(copy, {}, nullptr);
}

absl::Status ValidateJobList(const JobList& list) {
  std::vector<std::string> names;
  for (const JobSpec& j : list.jobs) {
    absl::Status st = ValidateJobImpl(j, names, nullptr);
    if (!st.ok()) return st;
    names.push_back(j.name);
  }
  return absl::OkStatus();
}

absl::Status CheckRunnable(const JobList& list) {
  for (const JobSpec& j : list.jobs) {
    auto fail = [&](const std::string& option, const std::string& value, const std::string& why) {
      return absl::InvalidArgumentError(
          JobError("", j.name, absl::StrFormat("option \"%s\": value \"%s\": %s", option, value, why)));
    };
    if (j.numjobs == 0) {
      return fail("numjobs", "0",
                  "fio accepts it when parsing but cannot run it (it clones the job until its job "
                  "limit and fails); give numjobs >= 1");
    }
    if (j.zone_mode == ZoneMode::kStrided) {
      // The agent runs fio's strided zones for sequential and uniform random
      // I/O on one file.
      if (IsRandom(j.rw) && j.random_distribution != RandomDistribution::kRandom) {
        return fail("zonemode", "strided",
                    "strided zones with a random_distribution other than random are not implemented by the agent yet");
      }
      if (IsRandom(j.rw) && j.rw_sequencer_nr > 1) {
        return fail("zonemode", "strided",
                    "strided zones with rw=...:N (a new random offset every N I/Os) are not implemented by the agent yet");
      }
      if (j.nrfiles > 1) {
        return fail("zonemode", "strided",
                    "strided zones work on one file (fio turns them off with several open files); give nrfiles=1");
      }
      if (j.open_files > 1) {
        return fail("openfiles", std::to_string(j.open_files),
                    "fio 3.33 turns strided zones off when openfiles is above 1; give openfiles=1 or leave it out");
      }
      if (j.rw_seq_add != 0) {
        return fail("zonemode", "strided", "strided zones with a sequential hole or step (rw=...:N) are not implemented by the agent yet");
      }
      if (HasTrim(j.rw)) {
        return fail("zonemode", "strided", "strided zones with trims are not implemented by the agent yet");
      }
    }
    if (j.sync_file_range != 0 || j.fdatasync != 0) {
      const std::string sfr = SyncFileRangeText(j);
      if (j.ioengine == "io_uring_cmd") {
        // fio 3.33's NVMe passthrough prepares reads and writes only: its
        // first fdatasync or sync_file_range fails the job (ENOTSUP).
        return fail(j.fdatasync != 0 ? "fdatasync" : "sync_file_range",
                    j.fdatasync != 0 ? std::to_string(j.fdatasync) : sfr,
                    "ioengine=io_uring_cmd has no fdatasync or sync_file_range (fio 3.33 fails the job at the "
                    "first one, ENOTSUP); use fsync=N (an NVMe Flush) or another ioengine");
      }
      if (j.ioengine == "io_uring" && j.sync_file_range != 0) {
        // fio 3.33's io_uring leaves the slot's buffer address in its
        // IORING_OP_SYNC_FILE_RANGE SQE: the kernel refuses every one
        // (EINVAL) and fio drops the error, so no range is ever synced.
        return fail("sync_file_range", sfr,
                    "fio 3.33 syncs nothing with it on ioengine=io_uring (the kernel refuses each of its "
                    "IORING_OP_SYNC_FILE_RANGE operations, EINVAL, and fio ignores the error), so the agent "
                    "refuses it rather than sync where fio does not; use ioengine=libaio or psync (which call "
                    "sync_file_range(2)), or fdatasync=N");
      }
    }
    if (j.OpenFilesLimited()) {
      // Files open and close during the run (openfiles below the file count):
      // what needs every file's descriptor from the start is not done yet.
      const std::string v = std::to_string(j.open_files);
      const std::string below = absl::StrCat("openfiles=", v, " below the job's ", j.FileCount(), " files");
      const struct {
        bool set;
        const char* what;
      } refused[] = {
          {j.verify != VerifyType::kNone, "verify"},
          {j.zone_mode == ZoneMode::kZbd, "zonemode=zbd"},
          {j.unlink_each_loop && j.loops > 1, "unlink_each_loop"},
          {HasTrim(j.rw), "trims (rw=trim, randtrim, trimwrite, randtrimwrite)"},
          {j.fsync != 0 || j.fdatasync != 0 || j.sync_file_range != 0, "fsync, fdatasync or sync_file_range every N writes"},
          {j.registerfiles, "registerfiles (the ring's file table is registered once, at the start)"},
          {j.sqthread_poll, "sqthread_poll (it registers the job's files once, at the start)"},
      };
      for (const auto& r : refused) {
        if (r.set) {
          return fail("openfiles", v, absl::StrCat(below, " with ", r.what, " is not implemented yet; leave openfiles out"));
        }
      }
    }
    const std::pair<const char*, uint32_t> zones[] = {{"size", j.size_zones},
                                                      {"io_size", j.io_size_zones},
                                                      {"offset", j.offset_zones},
                                                      {"offset_increment", j.offset_increment_zones}};
    for (const auto& [name, n] : zones) {
      if (n > 0) {
        return fail(name, absl::StrCat(n, "z"),
                    "a size in zones needs zonemode=zbd or strided with zonesize (fio ignores it "
                    "without a zone size; iofleet does not take it from a zoned device yet)");
      }
    }
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> JobOptionsEcho(const JobSpec& job) {
  std::vector<std::pair<std::string, std::string>> out;
  if (job.file_index == 0) out.emplace_back("name", job.name);
  for (const auto& kv : job.raw_options) {
    if (!kv.second.empty()) out.push_back(kv);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> EffectiveOptions(const JobSpec& job) {
  static const Builder kDefaults;
  return RenderDiff(job, kDefaults);
}

absl::StatusOr<JobList> ParseJobText(std::string_view text, std::string_view source,
                                     const ParseOptions& opts) {
  const std::string src = source.empty() ? std::string("<text>") : std::string(source);
  IOFLEET_ASSIGN_OR_RETURN(std::vector<OptEntry> overrides, OverrideEntries(opts));
  std::vector<Builder> jobs;
  Options globals;
  absl::Status st = ParseFileInto(std::string(text), src, opts.base_dir, 1, opts, Builder(),
                                  overrides, &jobs, &globals);
  if (!st.ok()) return st;
  return Finish(std::move(jobs), std::move(globals), src, opts);
}

absl::StatusOr<JobList> ParseCommandLine(const CommandLine& cmd, const ParseOptions& opts) {
  IOFLEET_ASSIGN_OR_RETURN(std::vector<OptEntry> overrides, OverrideEntries(opts));
  // Command-line sections: options before any --name form a global section.
  std::vector<Section> sections;
  sections.push_back(Section{"global", true, {}, "command line", 0});
  for (const auto& [key_raw, value] : cmd.options) {
    std::string key = key_raw;
    while (!key.empty() && key[0] == '-') key.erase(0, 1);
    if (key == "name") {
      Section s;
      s.name = Trim(value);
      if (s.name.empty()) {
        return absl::InvalidArgumentError("command line: option \"name\" needs a value");
      }
      s.global = IsGlobalName(s.name);
      s.where = "command line";
      s.file_index = 0;
      sections.push_back(std::move(s));
      continue;
    }
    Section& cur = sections.back();
    const std::string text = value.empty() ? key : absl::StrCat(key, "=", value);
    auto e = ParseOptionText(text, "command line", cur.name, opts);
    if (!e.ok()) return e.status();
    cur.opts.push_back(std::move(*e));
  }
  // CLI jobs come first (fio adds them before reading job files); every CLI
  // global applies to the job files too, which start from that template.
  Builder tmpl;
  std::vector<Builder> jobs;
  Options globals;
  for (const Section& s : sections) {
    if (s.global) {
      absl::Status st = ApplySection(tmpl, s.opts, s.name, &globals);
      if (!st.ok()) return st;
    }
  }
  {
    Builder cli_tmpl;
    Options ignored;
    absl::Status st = BuildJobs(sections, cli_tmpl, overrides, &jobs, &ignored);
    if (!st.ok()) return st;
  }
  for (size_t i = 0; i < cmd.job_files.size(); ++i) {
    std::string path = cmd.job_files[i];
    if (!FileExists(path) && !path.empty() && path[0] != '/' && !opts.base_dir.empty() &&
        FileExists(JoinPath(opts.base_dir, path))) {
      path = JoinPath(opts.base_dir, path);
    }
    auto text = ReadFile(path);
    if (!text.ok()) return text.status();
    absl::Status st = ParseFileInto(*text, cmd.job_files[i], DirName(path), static_cast<int>(i) + 1,
                                    opts, tmpl, overrides, &jobs, &globals);
    if (!st.ok()) return st;
  }
  return Finish(std::move(jobs), std::move(globals), "command line", opts);
}

absl::StatusOr<JobList> ParseJobJson(std::string_view json_text, const ParseOptions& opts) {
  using Json = nlohmann::ordered_json;
  IOFLEET_ASSIGN_OR_RETURN(std::vector<OptEntry> overrides, OverrideEntries(opts));
  Json root = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("json: not valid JSON");
  if (!root.is_object()) return absl::InvalidArgumentError("json: top level must be an object");

  auto value_text = [](const Json& v, std::string* out) {
    if (v.is_string())
      *out = v.get<std::string>();
    else if (v.is_boolean())
      *out = v.get<bool>() ? "1" : "0";
    else if (v.is_number_unsigned())
      *out = absl::StrCat(v.get<uint64_t>());
    else if (v.is_number_integer())
      *out = absl::StrCat(v.get<int64_t>());
    else if (v.is_number_float())
      *out = FormatDouble(v.get<double>());
    else
      return false;
    return true;
  };
  // One JSON object -> one section. `prefix` names fields in errors.
  // What a job file cannot hold: the job text rendered from this JSON (and sent
  // to agents) must parse back to the same job.
  auto check_text = [](const std::string& field, const std::string& v) -> absl::Status {
    for (unsigned char ch : v) {
      if (ch < 0x20 || ch == 0x7f) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: contains the control character 0x%02x, which a job file cannot hold", field, ch));
      }
      if (ch == ';' || ch == '#') {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: contains '%c', which starts a comment in a job file", field, ch));
      }
    }
    return absl::OkStatus();
  };
  auto to_section = [&](const Json& obj, const std::string& prefix, bool global,
                        Section* s) -> absl::Status {
    if (!obj.is_object()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: must be an object", prefix));
    }
    s->global = global;
    s->where = prefix;
    if (!global) {
      auto it = obj.find("name");
      std::string name;
      if (it == obj.end() || !value_text(*it, &name) || Trim(name).empty()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.name: a job needs a non-empty string name", prefix));
      }
      s->name = Trim(name);
      if (absl::Status st = check_text(prefix + ".name", s->name); !st.ok()) return st;
      if (IsGlobalName(s->name)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.name: \"%s\" is reserved for global sections", prefix, s->name));
      }
    } else {
      s->name = "global";
    }
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (!global && it.key() == "name") continue;
      const std::string field = absl::StrCat(prefix, ".", it.key());
      std::string v;
      if (!value_text(it.value(), &v)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: value must be a string, number or boolean", field));
      }
      if (absl::Status st = check_text(field, absl::StrCat(it.key(), v)); !st.ok()) return st;
      auto e = ParseOptionText(absl::StrCat(it.key(), "=", v), field, s->name, opts);
      if (!e.ok()) return e.status();
      s->opts.push_back(std::move(*e));
    }
    return absl::OkStatus();
  };

  std::vector<Section> sections;
  if (root.contains("jobs")) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it.key() != "jobs" && it.key() != "global") {
        return absl::InvalidArgumentError(absl::StrFormat(
            "json: unknown top-level field \"%s\" (expected \"global\" and \"jobs\")", it.key()));
      }
    }
    if (root.contains("global")) {
      Section g;
      absl::Status st = to_section(root["global"], "global", true, &g);
      if (!st.ok()) return st;
      sections.push_back(std::move(g));
    }
    const Json& arr = root["jobs"];
    if (!arr.is_array()) return absl::InvalidArgumentError("jobs: must be an array");
    for (size_t i = 0; i < arr.size(); ++i) {
      Section s;
      absl::Status st = to_section(arr[i], absl::StrCat("jobs[", i, "]"), false, &s);
      if (!st.ok()) return st;
      sections.push_back(std::move(s));
    }
  } else {
    Section s;
    absl::Status st = to_section(root, "job", false, &s);
    if (!st.ok()) return st;
    sections.push_back(std::move(s));
  }
  std::vector<Builder> jobs;
  Options globals;
  absl::Status st = BuildJobs(sections, Builder(), overrides, &jobs, &globals);
  if (!st.ok()) return st;
  return Finish(std::move(jobs), std::move(globals), "json", opts);
}

std::string ToJobText(const JobList& list) {
  static const std::map<std::string, std::string> kNoEnv;
  ParseOptions po;
  po.env = &kNoEnv;
  po.allow_include = false;
  auto same_jobs = [&list](const absl::StatusOr<JobList>& back) {
    if (!back.ok() || back->jobs.size() != list.jobs.size()) return false;
    for (size_t i = 0; i < list.jobs.size(); ++i) {
      if (Comparable(back->jobs[i]) != Comparable(list.jobs[i])) return false;
    }
    return true;
  };
  // First try: the options as written. Kept when re-parsing it gives back the
  // same jobs (not so for several files, globals between jobs, or options that
  // were set in code rather than written).
  // The [global] options in the order one section applies them (several [global]
  // sections become one), so that rendering the re-parsed list gives the same text.
  const Options globals = InApplyOrder(list.global_options);
  if (!list.jobs.empty()) {
    std::string text = RenderAsWritten(list, globals);
    if (same_jobs(ParseJobText(text, "ToJobText", po))) return text;
  }
  // Next: the list's own [global] section, with each job rendered as the
  // difference from that template. If re-parsing that does not give back the same
  // jobs (globals between jobs, several files), or it needs an option with an
  // empty value (which fio's JSON echo drops), render each job against fio's
  // defaults instead, which always reproduces the job settings.
  Builder tmpl;
  std::vector<OptEntry> entries;
  bool globals_ok = !globals.empty();
  for (const auto& [k, v] : globals) {
    if (!globals_ok) break;
    auto e = MakeEntry(k, v, true, "", "global");
    if (!e.ok()) {
      globals_ok = false;
      break;
    }
    e->has_value = !(v.empty() && e->row->type == OptionType::kBool);
    entries.push_back(std::move(*e));
  }
  // The rendered options come in table order; re-parsed, they are in fio's. So
  // that rendering is a fixed point (what the agent echoes renders the same
  // again), a rendering that re-parses to the same jobs is given as written.
  auto in_fio_order = [&](std::string text) {
    auto back = ParseJobText(text, "ToJobText", po);
    if (!same_jobs(back)) return text;
    std::string again = RenderAsWritten(*back, InApplyOrder(back->global_options));
    return same_jobs(ParseJobText(again, "ToJobText", po)) ? again : text;
  };
  if (globals_ok && ApplySection(tmpl, entries, "global", nullptr).ok()) {
    bool empty_value = false;
    std::string text = RenderJobs(list, globals, tmpl, &empty_value);
    if (!empty_value && same_jobs(ParseJobText(text, "ToJobText", po))) {
      return in_fio_order(std::move(text));
    }
  }
  bool unused = false;
  return in_fio_order(RenderJobs(list, {}, Builder(), &unused));
}

}  // namespace iofleet::jobspec
