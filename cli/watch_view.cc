#include "cli/watch_view.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace iofleet::cli {
namespace {

std::string Pair(const double v[2], bool bytes, int kb_base) {
  auto one = [&](double x) { return bytes ? FormatBytesPerSec(x, kb_base) : FormatCount(x); };
  if (v[1] == 0) return "r=" + one(v[0]);
  if (v[0] == 0) return "w=" + one(v[1]);
  return absl::StrCat("r=", one(v[0]), ",w=", one(v[1]));
}

int Rank(const std::string& state) {
  if (state == "running") return 0;
  if (state == "assigned" || state == "queued") return 1;
  return 2;
}

std::string StatusLine(const WatchView& v) {
  size_t running = 0, queued = 0, done = 0, failed = 0;
  double iops[2] = {0, 0}, bps[2] = {0, 0};
  for (const WatchRun& r : v.runs) {
    if (r.state == "running") {
      ++running;
      for (int d = 0; d < 2; ++d) {
        if (!r.have_rates) continue;
        iops[d] += r.iops[d];
        bps[d] += r.bps[d];
      }
    } else if (r.state == "queued" || r.state == "assigned") {
      ++queued;
    } else if (r.state == "succeeded") {
      ++done;
    } else {
      ++failed;
    }
  }
  std::string out = absl::StrCat("job ", v.job_id, " (", v.name, ") ", v.state, ": ", running,
                                 " running, ", queued, " queued, ", done, " done");
  if (failed > 0) absl::StrAppend(&out, ", ", failed, " failed/cancelled");
  if (running > 0) {
    absl::StrAppend(&out, " [", Pair(bps, true, v.kb_base), "][", Pair(iops, false, v.kb_base),
                    " IOPS]");
  }
  absl::StrAppend(&out, " [elapsed ", FormatDuration(v.elapsed_s), "]");
  if (!v.done) absl::StrAppend(&out, " [eta ", v.eta_known ? FormatDuration(v.eta_s) : "?", "]");
  return out;
}

std::string Table(const WatchView& v, const std::vector<const WatchRun*>& runs) {
  std::vector<std::vector<std::string>> rows;
  for (const WatchRun* r : runs) {
    auto rate = [&](const double x[2], int d, bool bytes) -> std::string {
      if (!r->have_rates) return "-";
      return bytes ? FormatBytesPerSec(x[d], v.kb_base) : FormatCount(x[d]);
    };
    rows.push_back({r->id, r->host, r->variant.empty() ? "-" : r->variant,
                    r->cell.empty() ? "-" : r->cell,
                    r->state + (r->final ? " (final)" : ""),
                    r->started ? FormatDuration(r->elapsed_s) : "-", rate(r->iops, 0, false),
                    rate(r->iops, 1, false), rate(r->bps, 0, true), rate(r->bps, 1, true),
                    r->have_rates && r->p99_ns ? FormatNs(r->p99_ns) : "-",
                    r->have_rates && r->has_lat && r->lat_mean_ns ? FormatNs(r->lat_mean_ns) : "-",
                    r->have_rates && r->has_lat && r->lat_p99_ns ? FormatNs(r->lat_p99_ns) : "-",
                    r->note});
  }
  return RenderTable({"RUN", "HOST", "VARIANT", "CELL", "STATE", "TIME", "R-IOPS", "W-IOPS",
                      "R-BW", "W-BW", "CLAT-P99", "LAT-MEAN", "LAT-P99", "NOTE"},
                     rows);
}

// Cuts a line to `width` columns (the CLI prints ASCII-escaped text).
std::string Fit(absl::string_view line, int width) {
  if (width > 0 && static_cast<int>(line.size()) > width) line = line.substr(0, width);
  return absl::StrCat(line, "\n");
}

}  // namespace

std::string RenderWatch(const WatchView& v, int width, int height) {
  std::vector<const WatchRun*> order;
  for (const WatchRun& r : v.runs) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const WatchRun* a, const WatchRun* b) {
    return Rank(a->state) < Rank(b->state);
  });
  std::string out = Fit(TerminalSafe(StatusLine(v)), width);
  // Below the status line: the header and as many runs as fit; when not all
  // do, the last line says how many are left out.
  const size_t avail = height > 0 ? static_cast<size_t>(height - 1) : SIZE_MAX;
  size_t shown = order.size();
  if (order.size() + 1 > avail) shown = avail >= 3 ? avail - 2 : 0;
  if (shown > 0 || order.empty()) {
    const std::vector<const WatchRun*> visible(order.begin(), order.begin() + shown);
    if (avail >= 1 + shown) {
      for (absl::string_view l : absl::StrSplit(Table(v, visible), '\n', absl::SkipEmpty())) {
        out += Fit(l, width);
      }
    }
  }
  if (shown < order.size() && avail >= 1) {
    size_t running = 0, queued = 0, ended = 0;
    for (size_t i = shown; i < order.size(); ++i) {
      const int k = Rank(order[i]->state);
      (k == 0 ? running : k == 1 ? queued : ended)++;
    }
    out += Fit(absl::StrCat("... ", order.size() - shown, " more runs (", running, " running, ",
                            queued, " queued, ", ended, " ended)"),
               width);
  }
  return out;
}

std::string RenderWatchSummary(const WatchView& v) { return RenderWatch(v, 0, 0); }

bool FinalFromResult(const json& fio, WatchRun* run) {
  const json& jobs = JArray(fio, "jobs");
  if (jobs.empty()) return false;
  double iops[2] = {0, 0}, bps[2] = {0, 0};
  uint64_t p99 = 0, lat_p99 = 0;
  double lat_sum = 0, lat_n = 0;
  for (const json& j : jobs) {
    if (!j.is_object()) continue;
    int d = 0;
    for (const char* dir : {"read", "write"}) {
      const int di = d++;
      auto it = j.find(dir);
      if (it == j.end() || !it->is_object()) continue;
      iops[di] += JDouble(*it, {"iops"});
      bps[di] += JDouble(*it, {"bw_bytes"});
      if (auto lat = it->find("lat_ns"); lat != it->end() && lat->is_object()) {
        const double n = JDouble(*lat, {"N"});
        if (n > 0) {
          lat_sum += n * JDouble(*lat, {"mean"});
          lat_n += n;
        }
        if (auto pct = lat->find("percentile"); pct != lat->end() && pct->is_object()) {
          lat_p99 = std::max(lat_p99, JU64(*pct, {"99.000000"}));
        }
      }
      auto clat = it->find("clat_ns");
      if (clat == it->end() || !clat->is_object()) continue;
      auto pct = clat->find("percentile");
      if (pct == clat->end() || !pct->is_object()) continue;
      p99 = std::max(p99, JU64(*pct, {"99.000000"}));
    }
  }
  for (int d = 0; d < 2; ++d) {
    run->iops[d] = iops[d];
    run->bps[d] = bps[d];
  }
  run->p99_ns = p99;
  // fio writes lat_ns with N 0 (and mean 0) under gtod_reduce/disable_lat.
  run->has_lat = lat_n > 0;
  run->lat_mean_ns = lat_n > 0 ? static_cast<uint64_t>(lat_sum / lat_n + 0.5) : 0;
  run->lat_p99_ns = lat_p99;
  run->have_rates = true;
  run->final = true;
  return true;
}

int KbBaseOf(const std::string& fio_text) {
  for (absl::string_view line : absl::StrSplit(fio_text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "kb_base")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "=")) continue;
    if (absl::StripAsciiWhitespace(line) == "1000") return 1000;
  }
  return 1024;
}

}  // namespace iofleet::cli
