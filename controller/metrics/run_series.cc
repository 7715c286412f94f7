#include "controller/metrics/run_series.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "common/stats/histogram.h"
#include "controller/metrics/metrics.h"

namespace iofleet::controller::metrics {
namespace {

static_assert(kClatBounds + 1 == 26, "RunSeriesTable::Dir::buckets holds kClatBounds + 1");

constexpr const char* kDirNames[3] = {"read", "write", "trim"};
// Most clones (job_index) a run may have before its records are ignored.
constexpr uint32_t kMaxClones = 4096;

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily Family(const char* name, const char* help, MetricType type) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

}  // namespace

RunSeriesTable::Shard& RunSeriesTable::ShardOf(const std::string& run_id) {
  return shards_[absl::HashOf(run_id) % kShards];
}
const RunSeriesTable::Shard& RunSeriesTable::ShardOf(const std::string& run_id) const {
  return shards_[absl::HashOf(run_id) % kShards];
}

void RunSeriesTable::Add(const std::string& run_id, RunLabels labels, uint32_t num_clones) {
  auto s = std::make_unique<Series>();
  s->labels = std::move(labels);
  s->dir[0].used = s->dir[1].used = true;  // trim appears on first use
  s->next_seq.assign(std::max<uint32_t>(1, std::min(num_clones, kMaxClones)), 0);
  Shard& sh = ShardOf(run_id);
  std::lock_guard<std::mutex> l(sh.mu);
  sh.runs.try_emplace(run_id, std::move(s));
}

bool RunSeriesTable::Contains(const std::string& run_id) const {
  const Shard& sh = ShardOf(run_id);
  std::lock_guard<std::mutex> l(sh.mu);
  return sh.runs.contains(run_id);
}

bool RunSeriesTable::Remove(const std::string& run_id) {
  std::unique_ptr<Series> gone;  // freed outside the lock
  Shard& sh = ShardOf(run_id);
  std::lock_guard<std::mutex> l(sh.mu);
  auto it = sh.runs.find(run_id);
  if (it == sh.runs.end()) return false;
  gone = std::move(it->second);
  sh.runs.erase(it);
  return true;
}

size_t RunSeriesTable::size() const {
  size_t n = 0;
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> l(sh.mu);
    n += sh.runs.size();
  }
  return n;
}

void RunSeriesTable::Record(const IntervalRow& row) {
  if (row.job_index >= kMaxClones) return;
  // The record's increments, computed before taking the lock.
  struct Add {
    std::array<uint64_t, 26> buckets{};
    double sum = 0;
    uint64_t count = 0;
  };
  auto bin = [](const std::vector<std::pair<uint32_t, uint64_t>>& hist, Add* a) {
    for (const auto& [b, c] : hist) {
      if (c == 0 || b >= static_cast<uint32_t>(stats::kPlatNr)) continue;
      a->buckets[ClatBucketOfFioBucket(b)] += c;
      a->sum += static_cast<double>(c) * ClatMidSecondsOfFioBucket(b);
      a->count += c;
    }
  };
  std::array<Add, 3> clat{}, lat{};
  for (int d = 0; d < 3; ++d) {
    bin(row.dir[d].clat_hist, &clat[d]);
    if (row.dir[d].lat_measured) bin(row.dir[d].lat_hist, &lat[d]);
  }
  Shard& sh = ShardOf(row.run_id);
  std::lock_guard<std::mutex> l(sh.mu);
  auto it = sh.runs.find(row.run_id);
  if (it == sh.runs.end()) return;
  Series& s = *it->second;
  if (s.next_seq.size() <= row.job_index) s.next_seq.resize(row.job_index + 1, 0);
  if (row.seq < s.next_seq[row.job_index]) return;  // replay of a counted record
  s.next_seq[row.job_index] = row.seq + 1;
  for (int d = 0; d < 3; ++d) {
    const IntervalDirRow& dr = row.dir[d];
    if (dr.ios == 0 && dr.bytes == 0 && dr.errors == 0 && dr.clat_hist.empty()) continue;
    Dir& o = s.dir[d];
    o.used = true;
    o.ios += dr.ios;
    o.bytes += dr.bytes;
    o.errors += dr.errors;
    if (dr.lat_measured) o.lat_used = true;
    if (lat[d].count > 0) {
      for (size_t k = 0; k < o.lat_buckets.size(); ++k) o.lat_buckets[k] += lat[d].buckets[k];
      o.lat_count += lat[d].count;
      o.lat_sum += lat[d].sum;
    }
    if (clat[d].count == 0) continue;
    for (size_t k = 0; k < o.buckets.size(); ++k) o.buckets[k] += clat[d].buckets[k];
    o.count += clat[d].count;
    o.sum += clat[d].sum;
  }
  if (row.job_index == 0 && row.t_end_ms > row.t_start_ms) {
    s.sampled_s += static_cast<double>(row.t_end_ms - row.t_start_ms) / 1000.0;
  }
}

std::vector<prometheus::MetricFamily> RunSeriesTable::Collect() const {
  MetricFamily info = Family(
      "iofleet_run_info",
      "A run on an agent while it is assigned/running (and shortly after); joins run and job "
      "ids to the host/slot labels of the iofleet_run_* series",
      MetricType::Gauge);
  MetricFamily ios =
      Family("iofleet_run_ios_total", "I/Os completed by the run, from its interval records",
             MetricType::Counter);
  MetricFamily bytes =
      Family("iofleet_run_bytes_total", "Bytes transferred by the run, from its interval records",
             MetricType::Counter);
  MetricFamily errors =
      Family("iofleet_run_errors_total", "I/O errors of the run, from its interval records",
             MetricType::Counter);
  MetricFamily sampled = Family(
      "iofleet_run_sampled_seconds_total",
      "Wall time covered by the run's interval records (clone 0); rate(iofleet_run_ios_total) "
      "/ rate(this) = IOPS on the agent clock",
      MetricType::Counter);
  MetricFamily clat = Family(
      "iofleet_run_clat_seconds",
      "Completion latency of the run's I/Os (fio clat), exact power-of-two buckets from fio's "
      "log-linear histogram",
      MetricType::Histogram);
  MetricFamily lat = Family(
      "iofleet_run_lat_seconds",
      "Total latency of the run's I/Os (fio lat = slat + clat, from submission), exact "
      "power-of-two buckets from fio's log-linear histogram; absent for a direction whose "
      "records carry none (gtod_reduce, disable_lat)",
      MetricType::Histogram);
  const std::vector<double>& bounds = ClatBoundsSeconds();
  auto histogram = [&bounds](const std::vector<ClientMetric::Label>& labels,
                             const std::array<uint64_t, 26>& buckets, uint64_t count,
                             double sum) {
    ClientMetric h;
    h.label = labels;
    h.histogram.sample_count = count;
    h.histogram.sample_sum = sum;
    h.histogram.bucket.resize(buckets.size());
    uint64_t cum = 0;
    for (size_t k = 0; k < buckets.size(); ++k) {
      cum += buckets[k];
      h.histogram.bucket[k].cumulative_count = cum;
      h.histogram.bucket[k].upper_bound =
          k < bounds.size() ? bounds[k] : std::numeric_limits<double>::infinity();
    }
    return h;
  };
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> l(sh.mu);
    for (const auto& [id, sp] : sh.runs) {
      const Series& s = *sp;
      const std::string slot = absl::StrCat(s.labels.slot);
      // Label names in order, as prometheus-cpp writes them.
      ClientMetric m;
      m.label = {{"cell", s.labels.cell},      {"host", s.labels.host},
                 {"job_id", s.labels.job_id},  {"job_name", s.labels.job_name},
                 {"run_id", s.labels.run_id},  {"slot", slot},
                 {"variant", s.labels.variant}};
      m.gauge.value = 1;
      info.metric.push_back(std::move(m));
      ClientMetric sm;
      sm.label = {{"host", s.labels.host}, {"slot", slot}};
      sm.counter.value = s.sampled_s;
      sampled.metric.push_back(std::move(sm));
      for (int d = 0; d < 3; ++d) {
        const Dir& o = s.dir[d];
        if (!o.used) continue;
        const std::vector<ClientMetric::Label> dl = {
            {"direction", kDirNames[d]}, {"host", s.labels.host}, {"slot", slot}};
        ClientMetric c;
        c.label = dl;
        c.counter.value = static_cast<double>(o.ios);
        ios.metric.push_back(c);
        c.counter.value = static_cast<double>(o.bytes);
        bytes.metric.push_back(c);
        c.counter.value = static_cast<double>(o.errors);
        errors.metric.push_back(std::move(c));
        clat.metric.push_back(histogram(dl, o.buckets, o.count, o.sum));
        if (o.lat_used) lat.metric.push_back(histogram(dl, o.lat_buckets, o.lat_count, o.lat_sum));
      }
    }
  }
  std::vector<MetricFamily> out;
  for (MetricFamily* f : {&info, &ios, &bytes, &errors, &sampled, &clat, &lat}) {
    if (!f->metric.empty()) out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace iofleet::controller::metrics
