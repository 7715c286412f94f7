#include "common/stats/fio_units.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace iofleet::stats {
namespace {

// Every line of testdata/fio-3.33-iops-bw.txt: the counters fio's JSON gave
// and the text fio printed from them.
TEST(FioUnitsTest, MatchesFioNormalOutput) {
  std::ifstream in(IOFLEET_FIO_UNITS_TESTDATA);
  ASSERT_TRUE(in) << IOFLEET_FIO_UNITS_TESTDATA;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    uint64_t ios = 0, bytes = 0, runtime = 0;
    uint32_t kb_base = 0;
    ls >> ios >> bytes >> runtime >> kb_base;
    std::string want;
    std::getline(ls >> std::ws, want);
    ASSERT_GT(runtime, 0u) << line;
    EXPECT_EQ(FioIopsBw(ios * 1000 / runtime, bytes * 1000 / runtime, kb_base), want) << line;
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(FioUnitsTest, Num2StrEdges) {
  EXPECT_EQ(FioIops(0), "0");
  EXPECT_EQ(FioIops(9999), "9999");
  EXPECT_EQ(FioIops(10000), "10.0k");
  EXPECT_EQ(FioIops(99960), "100.0k");  // fio's carry: .96 rounds to a whole unit
  EXPECT_EQ(FioBwOne(512ull << 20, 1024), "512MiB/s");
  EXPECT_EQ(FioBwOne(512ull << 20, 1000), "537MB/s");
  EXPECT_EQ(FioBw(0, 0), "0B/s (0B/s)");
  EXPECT_EQ(FioNum2Str(4096, 4, true, "B", 1), "4096KiB");
}

}  // namespace
}  // namespace iofleet::stats
