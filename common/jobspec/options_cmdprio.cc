#include "common/jobspec/options_cmdprio.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace iofleet::jobspec::internal {
namespace {

constexpr int kCmdprioDirs = 2;  // read and write; fio never prioritises trims

std::string U(uint64_t v) { return absl::StrCat(v); }

// "r" or "r,w": fio's two-offset integer options (off1 read, off2 write).
std::string PerRw(const std::array<uint32_t, 2>& v) {
  return v[0] == v[1] ? U(v[0]) : absl::StrCat(v[0], ",", v[1]);
}

absl::Status ApplyRwInts(const OptionRow& row, Builder& b, const OptCtx& c, std::array<uint32_t, 2>* field) {
  auto pieces = SplitDdir(c.value, false);
  if (!pieces.ok()) return pieces.status();
  std::array<uint32_t, 2> vals = *field;
  for (int d = 0; d < kCmdprioDirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto v = UintValue(row, *(*pieces)[d], b.spec.kb_base);
    if (!v.ok()) return v.status();
    vals[d] = static_cast<uint32_t>(*v);
  }
  *field = vals;
  return absl::OkStatus();
}

// The engines that carry a per-I/O priority. io_uring_cmd owns the options in
// fio 3.33 too, but no priority reaches a device that way: fio writes each
// I/O's priority into sqes[index] of a ring of 128-byte entries (for every
// slot index but 0, another command's entry or the middle of one), and the
// kernel's NVMe passthrough (IORING_OP_URING_CMD) never reads
// sqe->ioprio (NVMe read/write commands carry no priority). A run would report
// latencies per priority that no priority shaped, so the job is refused.
std::optional<CheckFailure> EngineCheck(const JobSpec& j, const std::string& value) {
  if (j.ioengine == "io_uring" || j.ioengine == "libaio") return std::nullopt;
  if (j.ioengine == "io_uring_cmd") {
    return Fail(value,
                "is refused: per-command priorities do not reach the device with ioengine "
                "io_uring_cmd: NVMe "
                "passthrough commands carry no I/O priority (the kernel's IORING_OP_URING_CMD "
                "ignores sqe->ioprio, and fio 3.33 writes the priority into another command's "
                "ring slot), so the per-priority latencies would measure nothing; use "
                "ioengine=io_uring or libaio on the block device (/dev/nvmeXnY) for cmdprio");
  }
  return Fail(value, absl::StrCat("per-command priorities are not implemented for ioengine ", j.ioengine,
                                  " (iofleet has them with io_uring and libaio)"));
}

std::string EntryText(const CmdprioSplitEntry& e) {
  if (e.ioprio < 0) return absl::StrCat(e.bs, "/", e.perc);
  return absl::StrCat(e.bs, "/", e.perc, "/", e.ioprio >> 13, "/", e.ioprio & 7);
}

std::string DirText(const std::vector<CmdprioSplitEntry>& v) {
  std::vector<std::string> parts;
  for (const auto& e : v) parts.push_back(EntryText(e));
  return absl::StrJoin(parts, ":");
}

}  // namespace

absl::Status ApplyCmdprioPercentage(const OptionRow& row, Builder& b, const OptCtx& c) {
  return ApplyRwInts(row, b, c, &b.spec.cmdprio_percentage);
}
void RenderCmdprioPercentage(const JobSpec& j, const Builder& t, Options* out) {
  if (j.cmdprio_percentage != t.spec.cmdprio_percentage) {
    out->emplace_back("cmdprio_percentage", PerRw(j.cmdprio_percentage));
  }
}
std::optional<CheckFailure> CheckCmdprioPercentage(const OptionRow&, const JobSpec& j) {
  for (uint32_t p : j.cmdprio_percentage) {
    if (p > 100) return Fail(PerRw(j.cmdprio_percentage), "must be <= 100");
  }
  if (j.cmdprio_percentage[0] == 0 && j.cmdprio_percentage[1] == 0) return std::nullopt;
  if (!j.cmdprio_bssplit[0].empty() || !j.cmdprio_bssplit[1].empty()) {
    return Fail(PerRw(j.cmdprio_percentage),
                "cmdprio_percentage and cmdprio_bssplit are mutually exclusive (as in fio)");
  }
  return EngineCheck(j, PerRw(j.cmdprio_percentage));
}

absl::Status ApplyCmdprioClass(const OptionRow& row, Builder& b, const OptCtx& c) {
  return ApplyRwInts(row, b, c, &b.spec.cmdprio_class);
}
void RenderCmdprioClass(const JobSpec& j, const Builder& t, Options* out) {
  if (j.cmdprio_class != t.spec.cmdprio_class) out->emplace_back("cmdprio_class", PerRw(j.cmdprio_class));
}
std::optional<CheckFailure> CheckCmdprioClass(const OptionRow&, const JobSpec& j) {
  for (uint32_t v : j.cmdprio_class) {
    // fio: minval IOPRIO_MIN_PRIO_CLASS + 1; 0 here is "not given".
    if (v > 3) return Fail(PerRw(j.cmdprio_class), "must be a priority class in 1..3 (1 RT, 2 BE, 3 IDLE)");
  }
  return std::nullopt;
}

absl::Status ApplyCmdprioLevel(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto st = ApplyRwInts(row, b, c, &b.spec.cmdprio_level);
  if (!st.ok()) return st;
  return absl::OkStatus();
}
void RenderCmdprioLevel(const JobSpec& j, const Builder& t, Options* out) {
  if (j.cmdprio_level != t.spec.cmdprio_level) out->emplace_back("cmdprio", PerRw(j.cmdprio_level));
}
std::optional<CheckFailure> CheckCmdprioLevel(const OptionRow&, const JobSpec& j) {
  for (uint32_t v : j.cmdprio_level) {
    if (v > 7) return Fail(PerRw(j.cmdprio_level), "must be a priority level in 0..7");
  }
  return std::nullopt;
}

// fio 3.33's grammar per direction: entries "bs/perc" or "bs/perc/class/level"
// (or "bs/", perc 0) separated by ':'; an empty entry ends the list; perc is
// clipped to 100, class to 3, level to 7; perc 0 entries are dropped; the rest
// are ordered by block size. A trim part is accepted and ignored, as fio.
absl::Status ApplyCmdprioBssplit(const OptionRow&, Builder& b, const OptCtx& c) {
  auto pieces = SplitDdir(c.value, false);
  if (!pieces.ok()) return pieces.status();
  std::array<std::vector<CmdprioSplitEntry>, 2> out;
  for (int d = 0; d < kCmdprioDirs; ++d) {
    if (!(*pieces)[d]) continue;
    for (const std::string& raw : SplitTopLevel(*(*pieces)[d], ':')) {
      const std::string e = Trim(raw);
      if (e.empty()) break;
      if (out[d].size() == static_cast<size_t>(kMaxBsSplit)) return Tail("has more than 64 entries per direction");
      std::vector<std::string> f = SplitTopLevel(e, '/');
      if (f.size() == 3 || f.size() > 4) {
        return Tail(absl::StrFormat("has \"%s\": an entry is bs/percentage or bs/percentage/class/level", e));
      }
      auto bs = SizeImpl(Trim(f[0]), b.spec.kb_base);
      if (!bs.ok()) return Tail(absl::StrFormat("has a bad block size in \"%s\"", e));
      CmdprioSplitEntry entry;
      entry.bs = *bs;
      std::vector<uint64_t> n;
      for (size_t i = 1; i < f.size(); ++i) {
        const std::string t = Trim(f[i]);
        if (t.empty() && i == 1 && f.size() == 2) break;  // "bs/"
        uint64_t v = 0;
        std::string suffix, err;
        if (!SplitNumber(t, &v, &suffix, &err) || !suffix.empty()) {
          return Tail(absl::StrFormat("has a bad number \"%s\" in \"%s\"", t, e));
        }
        n.push_back(v);
      }
      entry.perc = n.empty() ? 0 : static_cast<uint32_t>(std::min<uint64_t>(n[0], 100));
      if (n.size() == 3) {
        const uint32_t cls = static_cast<uint32_t>(std::min<uint64_t>(n[1], 3));
        const uint32_t lvl = static_cast<uint32_t>(std::min<uint64_t>(n[2], 7));
        entry.ioprio = static_cast<int32_t>(((cls ? cls : 2u) << 13) | lvl);  // class 0 = BE, as fio
      }
      if (entry.perc != 0) out[d].push_back(entry);
    }
    std::stable_sort(out[d].begin(), out[d].end(),
                     [](const CmdprioSplitEntry& x, const CmdprioSplitEntry& y) { return x.bs < y.bs; });
  }
  for (int d = 0; d < kCmdprioDirs; ++d) {
    if ((*pieces)[d]) b.spec.cmdprio_bssplit[d] = std::move(out[d]);
  }
  return absl::OkStatus();
}
void RenderCmdprioBssplit(const JobSpec& j, const Builder& t, Options* out) {
  if (j.cmdprio_bssplit == t.spec.cmdprio_bssplit) return;
  const std::string r = DirText(j.cmdprio_bssplit[0]), w = DirText(j.cmdprio_bssplit[1]);
  // An empty direction renders as "0/0" (an entry that is dropped), so the
  // other direction's list is not copied into it.
  const std::string rr = r.empty() ? "0/0" : r, ww = w.empty() ? "0/0" : w;
  out->emplace_back("cmdprio_bssplit", r == w ? rr : absl::StrCat(rr, ",", ww));
}
std::optional<CheckFailure> CheckCmdprioBssplit(const OptionRow&, const JobSpec& j) {
  if (j.cmdprio_bssplit[0].empty() && j.cmdprio_bssplit[1].empty()) return std::nullopt;
  const std::string text = DirText(j.cmdprio_bssplit[0]) + "," + DirText(j.cmdprio_bssplit[1]);
  for (int d = 0; d < kCmdprioDirs; ++d) {
    const auto& v = j.cmdprio_bssplit[d];
    for (size_t i = 0; i < v.size();) {
      uint32_t sum = 0;
      size_t k = i;
      for (; k < v.size() && v[k].bs == v[i].bs; ++k) sum += v[k].perc;
      if (sum > 100) {
        return Fail(text, absl::StrFormat("total percentage for bs %u of the %s direction exceeds 100 (as fio refuses)",
                                          v[i].bs, d == 0 ? "read" : "write"));
      }
      i = k;
    }
  }
  return EngineCheck(j, text);
}

}  // namespace iofleet::jobspec::internal
