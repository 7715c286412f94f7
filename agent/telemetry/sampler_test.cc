#include "agent/telemetry/sampler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/clock.h"
#include "common/testing/temp_dir.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent::telemetry {
namespace {

using iofleet::testing::TempDir;

// Two /proc snapshots one second (1000 ms) apart.
constexpr char kDisk0[] =
    " 252       0 vda 1000 10 8000 500 2000 40 16000 1500 0 600 2000 0 0 0 0\n"
    " 252       1 vda1 900 10 7000 400 1900 40 15000 1400 0 500 1900 0 0 0 0\n"
    "   7       0 loop0 5 0 40 1 0 0 0 0 0 1 1\n";
constexpr char kDisk1[] =
    " 252       0 vda 1400 30 11200 900 2600 100 20800 2700 3 1100 4400 0 0 0 0\n"
    " 252       1 vda1 900 10 7000 400 1900 40 15000 1400 0 500 1900 0 0 0 0\n"
    "   7       0 loop0 9 0 72 2 0 0 0 0 0 2 2\n";
constexpr char kStat0[] =
    "cpu  300 0 300 1000 20 10 20 0 0 0\n"
    "cpu0 100 0 100 500 10 0 10 0 0 0\n"
    "cpu1 200 0 200 500 10 10 10 0 0 0\n"
    "intr 5000 0 1 2 3\n"
    "ctxt 10000\n"
    "btime 1\n";
constexpr char kStat1[] =
    "cpu  350 0 340 1100 50 20 40 0 0 0\n"
    "cpu0 110 10 120 530 30 0 20 0 0 0\n"  // +10 usr +10 nice +20 sys +30 idle +20 iowait +10 softirq = 100
    "cpu1 210 0 220 580 20 20 20 0 0 0\n"  // = 140 jiffies
    "intr 7000 0 1 2 3\n"
    "ctxt 13000\n";
constexpr char kIrq0[] =
    "           CPU0       CPU1       \n"
    " 24:          2          0  IO-APIC   5-edge      ACPI:Ged\n"
    " 31:        100         50 PCI-MSIX-0000:00:02.0   0-edge      virtio1-config\n"
    " 32:       1000        200 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
    " 33:         10       2000 PCI-MSIX-0000:00:02.0   2-edge      virtio1-req.1\n"
    "NMI:          0          0   Non-maskable interrupts\n";
constexpr char kIrq1[] =
    "           CPU0       CPU1       \n"
    " 24:          2          0  IO-APIC   5-edge      ACPI:Ged\n"
    " 31:        900         50 PCI-MSIX-0000:00:02.0   0-edge      virtio1-config\n"
    " 32:       1500        200 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
    " 33:         10       2300 PCI-MSIX-0000:00:02.0   2-edge      virtio1-req.1\n"
    "NMI:          0          0   Non-maskable interrupts\n";

Snapshot Snap(const char* disk, const char* stat, const char* irq,
              std::vector<std::string>* lines = nullptr) {
  Snapshot s;
  s.disks = ParseDiskstats(disk, {"vda"});
  s.stat = ParseStat(stat);
  s.dev_irqs = ParseInterrupts(irq, {"virtio1-req"}, lines);
  return s;
}

TEST(TelemetryParse, KeepsOnlyWantedDevicesAndAllCpus) {
  auto d = ParseDiskstats(kDisk0, {"vda"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d["vda"].reads, 1000u);
  EXPECT_EQ(d["vda"].write_merges, 40u);
  EXPECT_EQ(d["vda"].time_in_queue, 2000u);
  StatCounters st = ParseStat(kStat0);
  ASSERT_EQ(st.cpus.size(), 2u);  // the "cpu" sum line is not a CPU
  EXPECT_EQ(st.cpus[1].cpu, 1);
  EXPECT_EQ(st.ctxt, 10000u);
  EXPECT_EQ(st.intr, 5000u);
  std::vector<std::string> lines;
  auto irq = ParseInterrupts(kIrq0, {"virtio1-req"}, &lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"virtio1-req.0", "virtio1-req.1"}));
  EXPECT_EQ(irq, (std::vector<uint64_t>{1010, 2200}));  // virtio1-config is not a queue
}

TEST(TelemetryDerive, TwoSnapshotsGiveIostatRates) {
  Sample s = Derive(Snap(kDisk0, kStat0, kIrq0), Snap(kDisk1, kStat1, kIrq1), 1000);
  ASSERT_EQ(s.disks.count("vda"), 1u);
  const DiskRates& d = s.disks["vda"];
  EXPECT_DOUBLE_EQ(d.util_pct, 50.0);  // io_ticks +500 ms of 1000
  // 400 reads + 600 writes took 400 + 1200 ms.
  EXPECT_DOUBLE_EQ(d.await_ms, 1.6);
  EXPECT_DOUBLE_EQ(d.aqu_sz, 2.4);   // time_in_queue +2400 ms / 1000 ms
  EXPECT_DOUBLE_EQ(d.rrqm_s, 20.0);  // read merges +20
  EXPECT_DOUBLE_EQ(d.wrqm_s, 60.0);  // write merges +60
  ASSERT_EQ(s.cpus.size(), 2u);
  // cpu0: +100 jiffies: usr 20 (user+nice), sys 20, iowait 20, softirq 10.
  EXPECT_DOUBLE_EQ(s.cpus[0].usr, 20.0);
  EXPECT_DOUBLE_EQ(s.cpus[0].sys, 20.0);
  EXPECT_DOUBLE_EQ(s.cpus[0].iowait, 20.0);
  EXPECT_DOUBLE_EQ(s.cpus[0].softirq, 10.0);
  EXPECT_DOUBLE_EQ(s.cpus[0].irq, 0.0);
  // cpu1: +10 usr +20 sys +80 idle +10 iowait +10 irq +10 softirq = 140 jiffies.
  EXPECT_DOUBLE_EQ(s.cpus[1].irq, 100.0 * 10 / 140);
  EXPECT_DOUBLE_EQ(s.cpus[1].sys, 100.0 * 20 / 140);
  EXPECT_DOUBLE_EQ(s.ctxt_s, 3000.0);
  EXPECT_DOUBLE_EQ(s.intr_s, 2000.0);
  EXPECT_EQ(s.dev_irq_s, (std::vector<double>{500.0, 300.0}));
}

TEST(TelemetryDerive, RatesScaleWithTheMeasuredInterval) {
  Sample s = Derive(Snap(kDisk0, kStat0, kIrq0), Snap(kDisk1, kStat1, kIrq1), 500);
  EXPECT_DOUBLE_EQ(s.disks["vda"].util_pct, 100.0);  // capped
  EXPECT_DOUBLE_EQ(s.disks["vda"].wrqm_s, 120.0);
  EXPECT_DOUBLE_EQ(s.ctxt_s, 6000.0);
  EXPECT_DOUBLE_EQ(s.disks["vda"].await_ms, 1.6);  // per I/O: does not scale
}

TEST(TelemetryJson, ColumnsPerMetric) {
  std::vector<std::string> lines;
  Snapshot a = Snap(kDisk0, kStat0, kIrq0, &lines);
  Sample s = Derive(a, Snap(kDisk1, kStat1, kIrq1), 1000);
  auto j = nlohmann::json::parse(TelemetryJson(1000, {"vda"}, lines, {s, s}));
  EXPECT_EQ(j["interval_ms"], 1000);
  EXPECT_EQ(j["devices"]["vda"]["util_pct"], nlohmann::json({50.0, 50.0}));
  EXPECT_EQ(j["cpus"][1]["dev_irq_s"], nlohmann::json({300.0, 300.0}));
  EXPECT_EQ(j["ctxt_s"].size(), 2u);
  EXPECT_EQ(j["irq_lines"].size(), 2u);
  // No start time given: none written (readers then cannot align by clock).
  EXPECT_FALSE(j.contains("start_unix_ms"));
  auto k = nlohmann::json::parse(TelemetryJson(1000, {"vda"}, lines, {s}, 1700000000123));
  EXPECT_EQ(k["start_unix_ms"], 1700000000123u);
}

// The sampler over the real /proc stamps the wall clock of its first snapshot,
// so the dashboard can put the samples on the time axis of the run's interval
// records (unix ms as well).
TEST(TelemetrySampler, StampsTheWallClockOfItsFirstSnapshot) {
  const uint64_t before = Clock::RealtimeMs();
  Sampler sampler(Sampler::Options{});
  sampler.Start();
  const uint64_t started = Clock::RealtimeMs();
  auto j = nlohmann::json::parse(sampler.Stop());
  ASSERT_TRUE(j.contains("start_unix_ms")) << j.dump();
  EXPECT_GE(j["start_unix_ms"].get<uint64_t>(), before);
  EXPECT_LE(j["start_unix_ms"].get<uint64_t>(), started);
  EXPECT_EQ(j["sample_ms"].size(), 1u);  // Stop took the one (partial) sample
}

// A SATA disk behind ahci (MSI) and a SAS disk behind a controller with a
// legacy INTx line: their /proc/interrupts lines are the controllers', found by
// IRQ number from the sysfs tree (a canned tree in a temp dir); nvme/virtio
// keep their queue-name prefixes.
TEST(TelemetryIrq, ControllersWithoutQueueNamesMatchByIrqNumber) {
  TempDir tmp("iofleet_telemetry_irq");
  ASSERT_TRUE(tmp.ok());
  namespace fs = std::filesystem;
  const fs::path root = tmp.path();
  const fs::path ahci = root / "devices/pci0000:00/0000:00:1f.2";
  const fs::path sda = ahci / "ata1/host0/target0:0:0/0:0:0:0";
  const fs::path sas = root / "devices/pci0000:00/0000:03:00.0";
  const fs::path sdb = sas / "host1/target1:0:0/1:0:0:0";
  fs::create_directories(sda);
  fs::create_directories(ahci / "msi_irqs");
  for (const char* n : {"45", "46"}) std::ofstream(ahci / "msi_irqs" / n) << "msi\n";
  std::ofstream(ahci / "class") << "0x010601\n";
  fs::create_directories(sdb);
  std::ofstream(sas / "class") << "0x010700\n";
  std::ofstream(sas / "irq") << "17\n";
  fs::create_directories(root / "block/sda");
  fs::create_directories(root / "block/sdb");
  fs::create_directories(root / "block/loop0");
  fs::create_directory_symlink(sda, root / "block/sda/device");
  fs::create_directory_symlink(sdb, root / "block/sdb/device");

  EXPECT_EQ(IrqPrefixFor(root.string(), "sda"), "");
  EXPECT_EQ(IrqNumbersFor(root.string(), "sda"), (std::vector<int>{45, 46}));
  EXPECT_EQ(IrqNumbersFor(root.string(), "sdb"), (std::vector<int>{17}));
  EXPECT_TRUE(IrqNumbersFor(root.string(), "loop0").empty());  // no device link
  EXPECT_TRUE(IrqNumbersFor(root.string(), "nope").empty());

  constexpr char kIrq[] =
      "           CPU0       CPU1       \n"
      " 17:          5          7  IO-APIC  17-fasteoi   mpt3sas0\n"
      " 24:          2          0  IO-APIC   5-edge      ACPI:Ged\n"
      " 45:        300         20  IR-PCI-MSI 512000-edge      ahci[0000:00:1f.2]\n"
      " 46:          1          2  IR-PCI-MSI 512001-edge      ahci[0000:00:1f.2]\n"
      " 145:        9          9  IR-PCI-MSI 1-edge      xhci_hcd\n"
      "NMI:          0          0   Non-maskable interrupts\n";
  std::vector<std::string> lines;
  EXPECT_EQ(ParseInterrupts(kIrq, {}, {45, 46}, &lines), (std::vector<uint64_t>{301, 22}));
  EXPECT_EQ(lines, (std::vector<std::string>{"ahci[0000:00:1f.2]", "ahci[0000:00:1f.2]"}));
  lines.clear();
  EXPECT_EQ(ParseInterrupts(kIrq, {}, {17}, &lines), (std::vector<uint64_t>{5, 7}));
  EXPECT_EQ(lines, (std::vector<std::string>{"mpt3sas0"}));
  // Before: neither disk had IRQ lines (no queue-name prefix).
  EXPECT_EQ(ParseInterrupts(kIrq, {}, nullptr), (std::vector<uint64_t>{0, 0}));
}

}  // namespace
}  // namespace iofleet::agent::telemetry
