#include "common/stats/report.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::stats {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::ordered_json;

// A worker's results: `ios` 4 KiB reads with lognormal clat around `median_ns`,
// slat a tenth of it, bw/iops window samples around the true rate.
JobStats MakeJob(const std::string& name, int groupid, int thread, uint32_t seed, uint64_t ios,
                 uint64_t runtime_ms, double median_ns) {
  JobStats js;
  js.jobname = name;
  js.groupid = groupid;
  js.thread_number = thread;
  js.pid = 1000 + thread;
  js.job_start_ms = 1700000000000ull + thread;
  js.elapsed_s = runtime_ms / 1000 + 1;
  js.job_options = {{"rw", "randread"}, {"bs", "4k"}, {"numjobs", std::to_string(thread)}};
  js.job_runtime_ms = runtime_ms;
  js.usr_time_us = runtime_ms * 100;  // 10 %
  js.sys_time_us = runtime_ms * 250;  // 25 %
  js.ctx = 10 * thread;
  js.minf = 3;
  DirStats& r = js.dir[0];
  r.io_bytes = ios * 4096;
  r.total_ios = ios;
  r.runtime_ms = runtime_ms;
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(std::log(median_ns), 0.5);
  for (uint64_t i = 0; i < ios; ++i) {
    const uint64_t clat = static_cast<uint64_t>(dist(rng));
    const uint64_t slat = clat / 10;
    r.lat[kClat].Add(static_cast<double>(clat));
    r.hist[kClat].Add(clat);
    r.lat[kSlat].Add(static_cast<double>(slat));
    r.hist[kSlat].Add(slat);
    r.lat[kLat].Add(static_cast<double>(clat + slat));
    r.hist[kLat].Add(clat + slat);
    AddLatencyBucket(js, clat);
    js.iodepth_level[DepthLevelBin(32)]++;
  }
  const double kib_per_s = static_cast<double>(r.io_bytes) / 1024.0 * 1000.0 / runtime_ms;
  const double iops = static_cast<double>(ios) * 1000.0 / runtime_ms;
  for (uint64_t w = 0; w < runtime_ms / 500; ++w) {
    const double jitter = 0.9 + 0.2 * static_cast<double>(w % 5) / 4.0;
    r.bw.Add(std::floor(kib_per_s * jitter));
    r.iops.Add(std::floor(iops * jitter));
  }
  js.total_submit = ios / 4;
  js.iodepth_submit[BatchBin(4)] = ios / 4;
  js.total_complete = ios / 4;
  js.iodepth_complete[BatchBin(4)] = ios / 4 - 1;
  js.iodepth_complete[BatchBin(0)] = 1;
  return js;
}

ReportHeader Header() {
  ReportHeader h;
  h.version = "iofleet-test";
  h.timestamp_ms = 1700000123456ull;
  return h;
}

TEST(GroupReportingTest, FourJobsFoldIntoOne) {
  std::vector<JobStats> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(MakeJob(i == 0 ? "first" : "member", 0, i + 1, 10 + i, 2000 + 500 * i,
                           1000 + 250 * i, 50000.0 * (i + 1)));
    jobs.back().group_reporting = true;
  }
  jobs[2].error = 5;
  jobs[2].error_text = "Input/output error";
  jobs[3].error = 28;

  const std::vector<JobStats> out = ApplyGroupReporting(jobs);
  ASSERT_EQ(out.size(), 1u);
  const JobStats& g = out[0];
  EXPECT_EQ(g.jobname, "first");
  EXPECT_EQ(g.thread_number, 1);
  EXPECT_EQ(g.job_start_ms, jobs[0].job_start_ms);
  EXPECT_EQ(g.job_options, jobs[3].job_options);  // last member's options
  EXPECT_EQ(g.members, 4);
  EXPECT_EQ(g.error, 5);  // first nonzero
  EXPECT_EQ(g.error_text, "Input/output error");

  const DirStats& r = g.dir[0];
  EXPECT_EQ(r.total_ios, 2000u + 2500u + 3000u + 3500u);
  EXPECT_EQ(r.io_bytes, r.total_ios * 4096);
  EXPECT_EQ(r.runtime_ms, 1750u);                              // max, not sum
  EXPECT_EQ(g.job_runtime_ms, 1000u + 1250u + 1500u + 1750u);  // fio sums job runtimes
  EXPECT_EQ(g.ctx, 10u + 20u + 30u + 40u);

  // bw/iops: plain sums (fio's group quirk).
  double bw_mean = 0, iops_mean = 0;
  uint64_t bw_min = 0, bw_max = 0, bw_n = 0;
  for (const auto& j : jobs) {
    bw_mean += j.dir[0].bw.mean;
    iops_mean += j.dir[0].iops.mean;
    bw_min += j.dir[0].bw.min;
    bw_max += j.dir[0].bw.max;
    bw_n += j.dir[0].bw.n;
  }
  EXPECT_DOUBLE_EQ(r.bw.mean, bw_mean);
  EXPECT_DOUBLE_EQ(r.iops.mean, iops_mean);
  EXPECT_EQ(r.bw.min, bw_min);
  EXPECT_EQ(r.bw.max, bw_max);
  EXPECT_EQ(r.bw.n, bw_n);

  // Latency: a true merge, equal to one pass over all samples.
  RunningStat all;
  Histogram all_hist;
  for (const auto& j : jobs) {
    all.Merge(j.dir[0].lat[kClat]);
    all_hist.Merge(j.dir[0].hist[kClat]);
  }
  EXPECT_EQ(r.lat[kClat].n, r.total_ios);
  EXPECT_EQ(r.lat[kClat].min, all.min);
  EXPECT_EQ(r.lat[kClat].max, all.max);
  EXPECT_NEAR(r.lat[kClat].mean, all.mean, all.mean * 1e-12);
  EXPECT_NEAR(r.lat[kClat].Stddev(), all.Stddev(), all.Stddev() * 1e-9);
  EXPECT_EQ(r.hist[kClat], all_hist);
  uint64_t lat_sum = 0;
  for (auto c : g.lat_us) lat_sum += c;
  for (auto c : g.lat_ms) lat_sum += c;
  for (auto c : g.lat_ns) lat_sum += c;
  EXPECT_EQ(lat_sum, r.total_ios);
  EXPECT_EQ(g.iodepth_level[5], r.total_ios);

  // Aggregate: all bytes over the longest runtime.
  EXPECT_DOUBLE_EQ(r.group_agg_bytes_per_sec,
                   std::floor(static_cast<double>(r.io_bytes) * 1000.0 / 1750.0));
}

TEST(GroupReportingTest, PassThroughAndSharedGroupAggregate) {
  JobStats a = MakeJob("a", 0, 1, 1, 1000, 1000, 20000);
  JobStats b = MakeJob("b", 0, 2, 2, 3000, 2000, 20000);
  JobStats c = MakeJob("c", 1, 3, 3, 500, 500, 20000);
  JobStats d = MakeJob("d", 1, 4, 4, 500, 500, 20000);
  c.group_reporting = d.group_reporting = true;
  const std::vector<JobStats> out = ApplyGroupReporting({a, b, c, d});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].jobname, "a");
  EXPECT_EQ(out[1].jobname, "b");
  EXPECT_EQ(out[2].jobname, "c");
  EXPECT_EQ(out[0].dir[0].total_ios, 1000u);
  EXPECT_EQ(out[2].dir[0].total_ios, 1000u);
  EXPECT_EQ(out[2].members, 2);
  // Group 0 has two separately reported jobs: agg = (a+b bytes) / 2000 ms.
  const double agg0 = (1000.0 + 3000.0) * 4096 * 1000 / 2000;
  EXPECT_DOUBLE_EQ(out[0].dir[0].group_agg_bytes_per_sec, agg0);
  EXPECT_DOUBLE_EQ(out[1].dir[0].group_agg_bytes_per_sec, agg0);
  EXPECT_DOUBLE_EQ(out[2].dir[0].group_agg_bytes_per_sec, 1000.0 * 4096 * 1000 / 500);
  EXPECT_EQ(out[0].dir[1].group_agg_bytes_per_sec, 0.0);
}

TEST(FillMixedTest, FoldsDirections) {
  JobStats js = MakeJob("m", 0, 1, 5, 1000, 1000, 30000);
  JobStats w = MakeJob("w", 0, 1, 6, 3000, 1500, 60000);
  js.dir[1] = w.dir[0];
  FillMixed(js);
  EXPECT_EQ(js.mixed.total_ios, 4000u);
  EXPECT_EQ(js.mixed.io_bytes, 4000u * 4096);
  EXPECT_EQ(js.mixed.runtime_ms, 1500u);
  EXPECT_EQ(js.mixed.lat[kClat].n, 4000u);
  EXPECT_EQ(js.mixed.hist[kClat].Count(), 4000u);
  EXPECT_DOUBLE_EQ(js.mixed.bw.mean, js.dir[0].bw.mean + js.dir[1].bw.mean);
}

std::vector<std::string> Keys(const json& obj) {
  std::vector<std::string> keys;
  for (auto it = obj.begin(); it != obj.end(); ++it) keys.push_back(it.key());
  return keys;
}

void ExpectLatObject(const json& lat) {
  ASSERT_TRUE(lat.is_object());
  EXPECT_TRUE(lat["min"].is_number_integer());
  EXPECT_TRUE(lat["max"].is_number_integer());
  EXPECT_TRUE(lat["mean"].is_number_float());
  EXPECT_TRUE(lat["stddev"].is_number_float());
  EXPECT_TRUE(lat["N"].is_number_integer());
}

TEST(FioJsonTest, FieldsTypesOrderAndNesting) {
  ReportHeader h = Header();
  h.global_options = {{"ioengine", "io_uring"}, {"direct", "1"}};
  std::vector<JobStats> jobs = {MakeJob("job1", 0, 1, 7, 5000, 2000, 80000)};
  jobs[0].lat_percentiles = true;
  const std::string text = FioJson(h, ApplyGroupReporting(jobs), /*json_plus=*/false);
  const json root = json::parse(text);

  EXPECT_THAT(Keys(root), ElementsAreArray({"fio version", "timestamp", "timestamp_ms", "time",
                                            "global options", "jobs"}));
  EXPECT_EQ(root["fio version"], "iofleet-test");
  EXPECT_EQ(root["timestamp"], 1700000123);
  EXPECT_EQ(root["timestamp_ms"], 1700000123456ull);
  EXPECT_TRUE(root["time"].is_string());
  EXPECT_THAT(root["time"].get<std::string>(), Not(HasSubstr("\n")));
  EXPECT_EQ(root["global options"]["ioengine"], "io_uring");
  ASSERT_TRUE(root["jobs"].is_array());
  ASSERT_EQ(root["jobs"].size(), 1u);

  const json& job = root["jobs"][0];
  EXPECT_THAT(
      Keys(job),
      ElementsAreArray(
          {"jobname",    "groupid",     "job_start",     "error",          "eta",
           "elapsed",    "job options", "read",          "write",          "trim",
           "sync",       "job_runtime", "usr_cpu",       "sys_cpu",        "ctx",
           "majf",       "minf",        "iodepth_level", "iodepth_submit", "iodepth_complete",
           "latency_ns", "latency_us",  "latency_ms",    "latency_depth",  "latency_target",
           "latency_percentile", "latency_window"}));
  EXPECT_EQ(job["jobname"], "job1");
  EXPECT_EQ(job["groupid"], 0);
  EXPECT_EQ(job["job_start"], jobs[0].job_start_ms);
  EXPECT_EQ(job["error"], 0);
  EXPECT_EQ(job["job options"]["bs"], "4k");
  EXPECT_EQ(job["job_runtime"], 2000);
  EXPECT_TRUE(job["usr_cpu"].is_number_float());
  EXPECT_NEAR(job["usr_cpu"].get<double>(), 10.0, 1e-6);
  EXPECT_NEAR(job["sys_cpu"].get<double>(), 25.0, 1e-6);

  const json& rd = job["read"];
  EXPECT_THAT(Keys(rd),
              ElementsAreArray({"io_bytes",  "io_kbytes",   "bw_bytes",    "bw",       "iops",
                                "runtime",   "total_ios",   "short_ios",   "drop_ios", "slat_ns",
                                "clat_ns",   "lat_ns",      "bw_min",      "bw_max",   "bw_agg",
                                "bw_mean",   "bw_dev",      "bw_samples",  "iops_min", "iops_max",
                                "iops_mean", "iops_stddev", "iops_samples"}));
  EXPECT_EQ(rd["io_bytes"], 5000u * 4096);
  EXPECT_EQ(rd["io_kbytes"], 5000u * 4);
  EXPECT_EQ(rd["bw_bytes"], 5000ull * 4096 * 1000 / 2000);
  EXPECT_EQ(rd["bw"], 5000ull * 4096 * 1000 / 2000 / 1024);
  EXPECT_TRUE(rd["iops"].is_number_float());
  EXPECT_DOUBLE_EQ(rd["iops"].get<double>(), 2500.0);
  EXPECT_EQ(rd["runtime"], 2000);
  EXPECT_EQ(rd["total_ios"], 5000);
  for (const char* k : {"bw_min", "bw_max", "bw_samples", "iops_min", "iops_max", "iops_samples",
                        "io_bytes", "bw_bytes", "bw", "short_ios"}) {
    EXPECT_TRUE(rd[k].is_number_integer()) << k;
  }
  for (const char* k : {"bw_agg", "bw_mean", "bw_dev", "iops_mean", "iops_stddev"}) {
    EXPECT_TRUE(rd[k].is_number_float()) << k;
  }
  EXPECT_EQ(rd["bw_samples"], 4);
  // A lone job: its mean bandwidth is ~100 % of the group aggregate.
  EXPECT_GT(rd["bw_agg"].get<double>(), 90.0);
  EXPECT_LE(rd["bw_agg"].get<double>(), 100.0);

  for (const char* k : {"slat_ns", "clat_ns", "lat_ns"}) ExpectLatObject(rd[k]);
  EXPECT_EQ(rd["clat_ns"]["N"], 5000);
  EXPECT_EQ(rd["clat_ns"]["min"], jobs[0].dir[0].lat[kClat].min);
  EXPECT_FALSE(rd["slat_ns"].contains("percentile"));  // slat_percentiles off
  ASSERT_TRUE(rd["clat_ns"].contains("percentile"));
  ASSERT_TRUE(rd["lat_ns"].contains("percentile"));  // lat_percentiles on
  EXPECT_FALSE(rd["clat_ns"].contains("bins"));      // json+ only

  const json& pct = rd["clat_ns"]["percentile"];
  EXPECT_THAT(Keys(pct),
              ElementsAreArray({"1.000000", "5.000000", "10.000000", "20.000000", "30.000000",
                                "40.000000", "50.000000", "60.000000", "70.000000", "80.000000",
                                "90.000000", "95.000000", "99.000000", "99.500000", "99.900000",
                                "99.950000", "99.990000"}));
  const std::vector<double> list = {50, 99.9};
  const auto expect = Percentiles(jobs[0].dir[0].hist[kClat], list);
  EXPECT_EQ(pct["50.000000"], expect[0].second);
  EXPECT_EQ(pct["99.900000"], expect[1].second);
  EXPECT_TRUE(pct["99.900000"].is_number_integer());

  // Unused directions: zeros, no percentiles.
  const json& wr = job["write"];
  EXPECT_EQ(wr["io_bytes"], 0);
  EXPECT_EQ(wr["iops"].get<double>(), 0.0);
  EXPECT_EQ(wr["clat_ns"]["N"], 0);
  EXPECT_FALSE(wr["clat_ns"].contains("percentile"));
  EXPECT_EQ(wr["bw_agg"].get<double>(), 0.0);

  EXPECT_THAT(Keys(job["sync"]), ElementsAreArray({"total_ios", "lat_ns"}));
  ExpectLatObject(job["sync"]["lat_ns"]);

  EXPECT_THAT(Keys(job["iodepth_level"]),
              ElementsAreArray({"1", "2", "4", "8", "16", "32", ">=64"}));
  EXPECT_THAT(Keys(job["iodepth_submit"]),
              ElementsAreArray({"0", "4", "8", "16", "32", "64", ">=64"}));
  EXPECT_THAT(Keys(job["iodepth_complete"]),
              ElementsAreArray({"0", "4", "8", "16", "32", "64", ">=64"}));
  EXPECT_DOUBLE_EQ(job["iodepth_level"]["32"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(job["iodepth_submit"]["4"].get<double>(), 100.0);
  // 1 of 1250 reap calls returned 0 events: 0.08 % is floored to 0.1 %.
  EXPECT_DOUBLE_EQ(job["iodepth_complete"]["0"].get<double>(), 0.1);
  EXPECT_THAT(Keys(job["latency_ns"]),
              ElementsAreArray({"2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"}));
  EXPECT_THAT(Keys(job["latency_us"]),
              ElementsAreArray({"2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"}));
  EXPECT_THAT(Keys(job["latency_ms"]), ElementsAreArray({"2", "4", "10", "20", "50", "100", "250",
                                                         "500", "750", "1000", "2000", ">=2000"}));
  double lat_total = 0;
  for (const char* m : {"latency_ns", "latency_us", "latency_ms"}) {
    for (const auto& [k, v] : job[m].items()) {
      EXPECT_TRUE(v.is_number_float());
      lat_total += v.get<double>();
    }
  }
  EXPECT_NEAR(lat_total, 100.0, 0.1);
}

TEST(FioJsonTest, PrintsLikeFio) {
  const std::vector<JobStats> jobs = {MakeJob("job1", 0, 1, 7, 100, 1000, 80000)};
  const std::string text = FioJson(Header(), jobs, false);
  EXPECT_EQ(
      text.rfind("{\n  \"fio version\" : \"iofleet-test\",\n  \"timestamp\" : 1700000123,\n", 0),
      0u);
  EXPECT_THAT(text, HasSubstr("\n  \"jobs\" : [\n    {\n      \"jobname\" : \"job1\",\n"));
  EXPECT_THAT(text, HasSubstr("\n      \"read\" : {\n        \"io_bytes\" : 409600,\n"));
  EXPECT_THAT(text, HasSubstr("\"iops\" : 100.000000,"));
  EXPECT_THAT(text, HasSubstr("          \"percentile\" : {\n            \"1.000000\" : "));
  EXPECT_THAT(text, Not(HasSubstr("global options")));  // omitted when empty
  EXPECT_EQ(text.substr(text.size() - 12), "    }\n  ]\n}\n");
}

TEST(FioJsonTest, JsonPlusBinsSumToN) {
  std::vector<JobStats> jobs = {MakeJob("job1", 0, 1, 9, 7777, 1000, 150000)};
  const json root = json::parse(FioJson(Header(), jobs, /*json_plus=*/true));
  const json& clat = root["jobs"][0]["read"]["clat_ns"];
  ASSERT_TRUE(clat.contains("bins"));
  uint64_t sum = 0;
  uint64_t prev = 0;
  for (const auto& [k, v] : clat["bins"].items()) {
    const uint64_t val = std::stoull(k);
    EXPECT_EQ(PlatIdxToVal(PlatValToIdx(val)), val) << "bin key is a bucket value";
    EXPECT_GT(val, prev);
    prev = val;
    sum += v.get<uint64_t>();
  }
  EXPECT_EQ(sum, clat["N"].get<uint64_t>());
  EXPECT_EQ(sum, 7777u);
  // Disabled percentiles: neither percentile nor bins.
  EXPECT_FALSE(root["jobs"][0]["read"]["slat_ns"].contains("bins"));
}

TEST(FioJsonTest, CustomPercentileListIsSortedAndFormatted) {
  std::vector<JobStats> jobs = {MakeJob("job1", 0, 1, 9, 1000, 1000, 150000)};
  jobs[0].percentile_list = {99.99, 50, 1.5};
  const json root = json::parse(FioJson(Header(), jobs, false));
  EXPECT_THAT(Keys(root["jobs"][0]["read"]["clat_ns"]["percentile"]),
              ElementsAreArray({"1.500000", "50.000000", "99.990000"}));
}

TEST(FioJsonTest, UnifiedRwReporting) {
  JobStats js = MakeJob("job1", 0, 1, 9, 1000, 1000, 150000);
  JobStats w = MakeJob("w", 0, 1, 10, 3000, 2000, 150000);
  js.dir[1] = w.dir[0];
  js.unified_rw_reporting = 1;  // mixed
  json root = json::parse(FioJson(Header(), {js}, false));
  json job = root["jobs"][0];
  EXPECT_FALSE(job.contains("read"));
  EXPECT_FALSE(job.contains("write"));
  ASSERT_TRUE(job.contains("mixed"));
  EXPECT_EQ(job["mixed"]["total_ios"], 4000);
  EXPECT_EQ(job["mixed"]["runtime"], 2000);
  EXPECT_EQ(job["mixed"]["clat_ns"]["N"], 4000);

  js.unified_rw_reporting = 2;  // both
  root = json::parse(FioJson(Header(), {js}, false));
  job = root["jobs"][0];
  EXPECT_EQ(job["read"]["total_ios"], 1000);
  EXPECT_EQ(job["write"]["total_ios"], 3000);
  EXPECT_EQ(job["mixed"]["total_ios"], 4000);
  const std::vector<std::string> keys = Keys(job);
  const auto pos = [&](const std::string& k) { return std::find(keys.begin(), keys.end(), k); };
  EXPECT_LT(pos("sync"), pos("mixed"));
  EXPECT_LT(pos("mixed"), pos("job_runtime"));
}

TEST(FioJsonTest, EscapesStrings) {
  JobStats js = MakeJob("we\"ird\\name\n", 0, 1, 9, 10, 1000, 150000);
  const json root = json::parse(FioJson(Header(), {js}, false));
  EXPECT_EQ(root["jobs"][0]["jobname"], "we\"ird\\name\n");
}

TEST(FioNormalTest, ContainsFioLines) {
  // 1 GiB of 4 KiB reads in exactly 1 s, ~200 us clat.
  JobStats js = MakeJob("job1", 0, 1, 3, 262144, 1000, 200000);
  const std::string text = FioNormal(Header(), ApplyGroupReporting({js}));
  EXPECT_THAT(text, HasSubstr("job1: (groupid=0, jobs=1): err= 0: pid=1001: "));
  EXPECT_THAT(text, HasSubstr("\n  read: IOPS=262k, BW=1024MiB/s (1074MB/s)(1024MiB/1000msec)\n"));
  // slat min is under 2 us, so fio keeps nsec for it.
  EXPECT_THAT(text, HasSubstr("\n    slat (nsec): min=1988, max=270225, avg=22701.84, "));
  EXPECT_THAT(text, HasSubstr("\n    clat (usec): min="));
  EXPECT_THAT(text, HasSubstr("\n     lat (usec): min="));
  EXPECT_THAT(text, HasSubstr("\n    clat percentiles (usec):\n     |  1.00th=["));
  EXPECT_THAT(text, HasSubstr("th=[  200],"));
  EXPECT_THAT(text, HasSubstr("\n     | 99.00th=["));
  EXPECT_THAT(text, HasSubstr("\n     | 99.99th=["));
  EXPECT_THAT(text, Not(HasSubstr("slat percentiles")));
  // Mean 969932 KiB/s of a 1 GiB/s aggregate: per = 969932 * 100 / 1048576.
  EXPECT_THAT(text,
              HasSubstr("\n   bw (  KiB/s): min=943718, max=996147, per=92.50%, avg=969932.50, "));
  EXPECT_THAT(text, HasSubstr(", samples=2\n"));
  EXPECT_THAT(text, HasSubstr("\n   iops        : min="));
  EXPECT_THAT(text, HasSubstr("\n  lat (usec)   : "));
  EXPECT_THAT(text,
              HasSubstr("\n  cpu          : usr=10.00%, sys=25.00%, ctx=10, majf=0, minf=3\n"));
  EXPECT_THAT(text, HasSubstr("\n  IO depths    : 1=0.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, "
                              "32=100.0%, >=64=0.0%\n"));
  EXPECT_THAT(text, HasSubstr("\n     submit    : 0=0.0%, 4=100.0%, 8=0.0%"));
  EXPECT_THAT(text, HasSubstr("\n     complete  : 0=0.1%, 4=100.0%, 8=0.0%"));
  EXPECT_THAT(text, HasSubstr("\n     issued rwts: total=262144,0,0,0 short=0,0,0,0 "
                              "dropped=0,0,0,0\n"));
  EXPECT_THAT(text, HasSubstr("\nRun status group 0 (all jobs):\n   READ: bw=1024MiB/s (1074MB/s), "
                              "1024MiB/s-1024MiB/s (1074MB/s-1074MB/s), io=1024MiB (1074MB), "
                              "run=1000-1000msec\n"));
  EXPECT_THAT(text, Not(HasSubstr("WRITE:")));
  EXPECT_THAT(text, Not(HasSubstr("  write:")));
}

TEST(FioNormalTest, GroupOfFourAndErrors) {
  std::vector<JobStats> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(MakeJob("grp", 1, i + 1, 20 + i, 1000, 1000 + 1000 * i, 5000));
    jobs.back().group_reporting = true;
  }
  jobs[1].error = 5;
  jobs[1].error_text = "Input/output error";
  const std::string text = FioNormal(Header(), ApplyGroupReporting(jobs));
  EXPECT_THAT(text, HasSubstr("grp: (groupid=1, jobs=4): err= 5 (Input/output error): pid=1001: "));
  // 16000 KiB over 4 s (the longest member) ~ 3.9 MiB/s; members ran 1-4 s.
  EXPECT_THAT(text, HasSubstr("\nRun status group 1 (all jobs):\n   READ: bw=4000KiB/s (4096kB/s), "
                              "4000KiB/s-4000KiB/s (4096kB/s-4096kB/s), io=15.6MiB (16.4MB), "
                              "run=4000-4000msec\n"));
  // Short latencies print in nsec.
  EXPECT_THAT(text, HasSubstr("\n    clat (nsec): min="));
  EXPECT_THAT(text, HasSubstr("\n    clat percentiles (nsec):\n"));
}

// The lines fio 3.33 prints for steadystate and continue_on_error, e.g.
//   fio --ioengine=null --rw=randread --time_based --runtime=4s --ss=iops_slope:20% --ss_dur=2s
//   "  steadystate  : attained=yes, bw=3828MiB/s (3919MB/s), iops=980k, iops slope=-0.330%"
//   fio --rw=read --size=64k --continue_on_error=all
//   "     errors    : total=0, first_error=0/<Success>"
TEST(FioNormalTest, SteadyStateAndErrorsLines) {
  JobStats js = MakeJob("ss", 0, 1, 3, 262144, 1000, 200000);
  js.steadystate.enabled = true;
  js.steadystate.attained = true;
  js.steadystate.ss = "iops_slope:20.000000%";
  js.steadystate.iops = true;
  js.steadystate.slope = true;
  js.steadystate.pct = true;
  js.steadystate.criterion = -0.33;
  js.steadystate.bw_mean = 3919400ull * 1024;  // bytes/s (3827.5 MiB: fio rounds up)
  js.steadystate.iops_mean = 980000;
  js.continue_on_error = 7u;
  std::string text = FioNormal(Header(), ApplyGroupReporting({js}));
  EXPECT_THAT(text, HasSubstr("\n  steadystate  : attained=yes, bw=3828MiB/s (3919MB/s), iops=980k, "
                              "iops slope=-0.330%\n"));
  EXPECT_THAT(text, HasSubstr("\n     errors    : total=0, first_error=0/<Success>\n"));
  js.steadystate.ss = "bw:10.000000";
  js.steadystate.attained = false;
  js.steadystate.pct = false;
  js.steadystate.criterion = 12.5;
  js.steadystate.bw_mean = 12ull * 1024;
  js.steadystate.iops_mean = 3;
  js.continue_on_error = 0;
  text = FioNormal(Header(), ApplyGroupReporting({js}));
  EXPECT_THAT(text, HasSubstr("\n  steadystate  : attained=no, bw=12KiB/s (12kB/s), iops=3, "
                              "bw mean dev=12.500\n"));
  EXPECT_THAT(text, Not(HasSubstr("errors    :")));
}

TEST(FioNormalTest, SkipsIdleJobs) {
  JobStats idle;
  idle.jobname = "idle";
  const std::string text = FioNormal(Header(), {idle});
  EXPECT_THAT(text, Not(HasSubstr("idle:")));
  EXPECT_THAT(text, HasSubstr("Run status group 0 (all jobs):"));
}

}  // namespace
}  // namespace iofleet::stats
