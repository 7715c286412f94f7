#include "agent/telemetry/sampler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent::telemetry {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Counters wrap or reset (device re-added): a delta that would go negative is 0.
uint64_t Delta(uint64_t a, uint64_t b) { return b >= a ? b - a : 0; }

double Round3(double v) { return static_cast<double>(static_cast<int64_t>(v * 1000 + 0.5)) / 1000; }

}  // namespace

std::map<std::string, DiskCounters> ParseDiskstats(const std::string& text,
                                                   const std::vector<std::string>& wanted) {
  std::map<std::string, DiskCounters> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    unsigned major_nr = 0, minor_nr = 0;
    std::string name;
    DiskCounters c;
    uint64_t rd_sectors = 0, wr_sectors = 0, in_flight = 0;
    if (!(f >> major_nr >> minor_nr >> name >> c.reads >> c.read_merges >> rd_sectors >>
          c.read_ticks >> c.writes >> c.write_merges >> wr_sectors >> c.write_ticks >> in_flight >>
          c.io_ticks >> c.time_in_queue)) {
      continue;
    }
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    out[name] = c;
  }
  return out;
}

StatCounters ParseStat(const std::string& text) {
  StatCounters out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string key;
    f >> key;
    if (key.size() > 3 && key.compare(0, 3, "cpu") == 0) {
      CpuTimes t;
      t.cpu = std::atoi(key.c_str() + 3);
      f >> t.user >> t.nice >> t.system >> t.idle >> t.iowait >> t.irq >> t.softirq >> t.steal;
      out.cpus.push_back(t);
    } else if (key == "ctxt") {
      f >> out.ctxt;
    } else if (key == "intr") {
      f >> out.intr;  // the first number is the total
    }
  }
  return out;
}

std::vector<uint64_t> ParseInterrupts(const std::string& text,
                                      const std::vector<std::string>& prefixes,
                                      std::vector<std::string>* matched) {
  return ParseInterrupts(text, prefixes, {}, matched);
}

std::vector<uint64_t> ParseInterrupts(const std::string& text,
                                      const std::vector<std::string>& prefixes,
                                      const std::vector<int>& irqs,
                                      std::vector<std::string>* matched) {
  std::istringstream in(text);
  std::string line;
  size_t ncpu = 0;
  if (std::getline(in, line)) {
    std::istringstream f(line);
    std::string col;
    while (f >> col) {
      if (col.compare(0, 3, "CPU") == 0) ++ncpu;
    }
  }
  std::vector<uint64_t> out(ncpu, 0);
  if (prefixes.empty() && irqs.empty()) return out;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string irq;
    if (!(f >> irq) || irq.empty() || irq.back() != ':') continue;
    std::vector<uint64_t> counts(ncpu, 0);
    size_t n = 0;
    for (; n < ncpu && (f >> counts[n]); ++n) {
    }
    if (n != ncpu) continue;  // NMI-style lines with fewer columns
    std::string tok, name;
    while (f >> tok) name = tok;
    int number = -1;
    if (!absl::SimpleAtoi(absl::string_view(irq).substr(0, irq.size() - 1), &number)) number = -1;
    const bool hit = std::any_of(prefixes.begin(), prefixes.end(),
                                 [&](const std::string& p) {
                                   return !p.empty() && name.compare(0, p.size(), p) == 0;
                                 }) ||
                     (number >= 0 && std::find(irqs.begin(), irqs.end(), number) != irqs.end());
    if (!hit) continue;
    if (matched != nullptr) matched->push_back(name);
    for (size_t i = 0; i < ncpu; ++i) out[i] += counts[i];
  }
  return out;
}

Sample Derive(const Snapshot& prev, const Snapshot& cur, uint64_t elapsed_ms) {
  Sample s;
  s.ms = elapsed_ms;
  const double ms = elapsed_ms > 0 ? static_cast<double>(elapsed_ms) : 1.0;
  for (const auto& [name, b] : cur.disks) {
    auto it = prev.disks.find(name);
    if (it == prev.disks.end()) continue;
    const DiskCounters& a = it->second;
    DiskRates r;
    r.util_pct = std::min(100.0, 100.0 * static_cast<double>(Delta(a.io_ticks, b.io_ticks)) / ms);
    const uint64_t ios = Delta(a.reads, b.reads) + Delta(a.writes, b.writes);
    const uint64_t ticks = Delta(a.read_ticks, b.read_ticks) + Delta(a.write_ticks, b.write_ticks);
    r.await_ms = ios > 0 ? static_cast<double>(ticks) / static_cast<double>(ios) : 0.0;
    r.aqu_sz = static_cast<double>(Delta(a.time_in_queue, b.time_in_queue)) / ms;
    r.rrqm_s = 1000.0 * static_cast<double>(Delta(a.read_merges, b.read_merges)) / ms;
    r.wrqm_s = 1000.0 * static_cast<double>(Delta(a.write_merges, b.write_merges)) / ms;
    s.disks[name] = r;
  }
  for (const CpuTimes& b : cur.stat.cpus) {
    auto it = std::find_if(prev.stat.cpus.begin(), prev.stat.cpus.end(),
                           [&](const CpuTimes& x) { return x.cpu == b.cpu; });
    if (it == prev.stat.cpus.end()) continue;
    const CpuTimes& a = *it;
    const uint64_t total = Delta(a.Total(), b.Total());
    CpuRates r;
    r.cpu = b.cpu;
    if (total > 0) {
      const double t = static_cast<double>(total);
      r.usr = 100.0 * static_cast<double>(Delta(a.user + a.nice, b.user + b.nice)) / t;
      r.sys = 100.0 * static_cast<double>(Delta(a.system, b.system)) / t;
      r.irq = 100.0 * static_cast<double>(Delta(a.irq, b.irq)) / t;
      r.softirq = 100.0 * static_cast<double>(Delta(a.softirq, b.softirq)) / t;
      r.iowait = 100.0 * static_cast<double>(Delta(a.iowait, b.iowait)) / t;
    }
    s.cpus.push_back(r);
  }
  s.ctxt_s = 1000.0 * static_cast<double>(Delta(prev.stat.ctxt, cur.stat.ctxt)) / ms;
  s.intr_s = 1000.0 * static_cast<double>(Delta(prev.stat.intr, cur.stat.intr)) / ms;
  const size_t n = std::min(prev.dev_irqs.size(), cur.dev_irqs.size());
  for (size_t i = 0; i < n; ++i) {
    s.dev_irq_s.push_back(1000.0 * static_cast<double>(Delta(prev.dev_irqs[i], cur.dev_irqs[i])) / ms);
  }
  return s;
}

std::string IrqPrefixFor(const std::string& sysfs_root, const std::string& dev_name) {
  char buf[4096];
  const std::string link = absl::StrCat(sysfs_root, "/block/", dev_name, "/device");
  const ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string target(buf, static_cast<size_t>(n));
  const size_t slash = target.rfind('/');
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  if (base.compare(0, 4, "nvme") == 0) return base + "q";      // nvme0 -> nvme0q3
  if (base.compare(0, 6, "virtio") == 0) return base + "-req";  // virtio1 -> virtio1-req.0
  return "";
}

std::vector<int> IrqNumbersFor(const std::string& sysfs_root, const std::string& dev_name) {
  std::error_code ec;
  const std::filesystem::path top =
      std::filesystem::canonical(std::filesystem::path(sysfs_root) / "devices", ec);
  if (ec) return {};
  std::filesystem::path dir = std::filesystem::canonical(
      std::filesystem::path(sysfs_root) / "block" / dev_name / "device", ec);
  if (ec) return {};
  std::vector<int> out;
  // Up from the device to the first PCI function with IRQs, never above devices/.
  for (; !dir.empty() && dir != top && dir.native().rfind(top.native(), 0) == 0;
       dir = dir.parent_path()) {
    if (std::filesystem::is_directory(dir / "msi_irqs", ec)) {
      for (const auto& e : std::filesystem::directory_iterator(dir / "msi_irqs", ec)) {
        int n = 0;
        if (absl::SimpleAtoi(e.path().filename().string(), &n)) out.push_back(n);
      }
      if (!out.empty()) break;
    }
    // A PCI function (its "class" file) with a legacy interrupt line.
    if (std::filesystem::exists(dir / "class", ec) && std::filesystem::exists(dir / "irq", ec)) {
      int n = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadAll((dir / "irq").string())), &n) &&
          n > 0) {
        out.push_back(n);
        break;
      }
    }
    if (dir == dir.parent_path()) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string TelemetryJson(uint64_t interval_ms, const std::vector<std::string>& devices,
                          const std::vector<std::string>& irq_lines,
                          const std::vector<Sample>& samples, uint64_t start_unix_ms) {
  using nlohmann::json;
  json doc;
  doc["interval_ms"] = interval_ms;
  if (start_unix_ms != 0) doc["start_unix_ms"] = start_unix_ms;
  json ms = json::array();
  for (const Sample& s : samples) ms.push_back(s.ms);
  doc["sample_ms"] = ms;
  json devs = json::object();
  for (const std::string& d : devices) {
    json util = json::array(), await = json::array(), aqu = json::array(), rrqm = json::array(),
         wrqm = json::array();
    for (const Sample& s : samples) {
      auto it = s.disks.find(d);
      const DiskRates r = it != s.disks.end() ? it->second : DiskRates{};
      util.push_back(Round3(r.util_pct));
      await.push_back(Round3(r.await_ms));
      aqu.push_back(Round3(r.aqu_sz));
      rrqm.push_back(Round3(r.rrqm_s));
      wrqm.push_back(Round3(r.wrqm_s));
    }
    devs[d] = {{"util_pct", util}, {"await_ms", await}, {"aqu_sz", aqu},
               {"rrqm_s", rrqm},   {"wrqm_s", wrqm}};
  }
  doc["devices"] = devs;
  json cpus = json::array();
  if (!samples.empty()) {
    for (size_t c = 0; c < samples.front().cpus.size(); ++c) {
      json usr = json::array(), sys = json::array(), irq = json::array(), soft = json::array(),
           iow = json::array(), dirq = json::array();
      for (const Sample& s : samples) {
        const CpuRates r = c < s.cpus.size() ? s.cpus[c] : CpuRates{};
        usr.push_back(Round3(r.usr));
        sys.push_back(Round3(r.sys));
        irq.push_back(Round3(r.irq));
        soft.push_back(Round3(r.softirq));
        iow.push_back(Round3(r.iowait));
        dirq.push_back(Round3(c < s.dev_irq_s.size() ? s.dev_irq_s[c] : 0.0));
      }
      cpus.push_back({{"cpu", samples.front().cpus[c].cpu},
                      {"usr_pct", usr},
                      {"sys_pct", sys},
                      {"irq_pct", irq},
                      {"softirq_pct", soft},
                      {"iowait_pct", iow},
                      {"dev_irq_s", dirq}});
    }
  }
  doc["cpus"] = cpus;
  json ctxt = json::array(), intr = json::array();
  for (const Sample& s : samples) {
    ctxt.push_back(Round3(s.ctxt_s));
    intr.push_back(Round3(s.intr_s));
  }
  doc["ctxt_s"] = ctxt;
  doc["intr_s"] = intr;
  doc["irq_lines"] = irq_lines;
  return doc.dump();
}

Sampler::Sampler(Options options) : options_(std::move(options)) {
  for (const std::string& d : options_.devices) {
    std::string p = IrqPrefixFor(options_.sysfs_root, d);
    if (!p.empty()) {
      irq_prefixes_.push_back(std::move(p));
      continue;
    }
    for (int n : IrqNumbersFor(options_.sysfs_root, d)) {
      if (std::find(irq_numbers_.begin(), irq_numbers_.end(), n) == irq_numbers_.end()) {
        irq_numbers_.push_back(n);
      }
    }
  }
}

Sampler::~Sampler() {
  if (started_) Stop();
}

Snapshot Sampler::Take() {
  Snapshot s;
  s.disks = ParseDiskstats(ReadAll(options_.proc_root + "/diskstats"), options_.devices);
  s.stat = ParseStat(ReadAll(options_.proc_root + "/stat"));
  std::vector<std::string> matched;
  s.dev_irqs = ParseInterrupts(ReadAll(options_.proc_root + "/interrupts"), irq_prefixes_,
                               irq_numbers_, irq_lines_.empty() ? &matched : nullptr);
  if (irq_lines_.empty()) irq_lines_ = std::move(matched);
  return s;
}

void Sampler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return;
  started_ = true;
  last_ = Take();
  last_ns_ = Clock::MonotonicNs();
  start_unix_ms_ = Clock::RealtimeMs();
  thread_ = std::thread([this] { Loop(); });
}

void Sampler::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const uint64_t due_ns = last_ns_ + options_.interval_ms * 1000000ull;
    const uint64_t now = Clock::MonotonicNs();
    if (now < due_ns) {
      cv_.wait_for(lock, std::chrono::nanoseconds(due_ns - now));
      continue;
    }
    Snapshot cur = Take();
    const uint64_t t = Clock::MonotonicNs();
    samples_.push_back(Derive(last_, cur, (t - last_ns_) / 1000000));
    last_ = std::move(cur);
    last_ns_ = t;
  }
}

std::string Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) return "";
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  started_ = false;
  const uint64_t t = Clock::MonotonicNs();
  const uint64_t since_ms = (t - last_ns_) / 1000000;
  if (samples_.empty() || since_ms * 5 > options_.interval_ms) {
    Snapshot cur = Take();
    samples_.push_back(Derive(last_, cur, std::max<uint64_t>(since_ms, 1)));
  }
  return TelemetryJson(options_.interval_ms, options_.devices, irq_lines_, samples_,
                       start_unix_ms_);
}

}  // namespace iofleet::agent::telemetry
