// The I/O sequence of a job, checked against what fio 3.33 issues for the same
// options (fio --write_iolog / strace of its pread/pwrite calls): sizes,
// alignment, wrap-around and end-of-pass rules.
#include "agent/run/io_generator.h"

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/jobspec/parser.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

struct Io {
  IoOp op;
  uint64_t offset;
  uint32_t len;
};

class IoGeneratorTest : public ::testing::Test {
 protected:
  // Every I/O of one pass of `options` (a job-file body) over one file.
  std::vector<Io> Pass(const std::string& options, uint64_t region, uint64_t io_bytes,
                       bool wrap = false, uint64_t file_size = 0, size_t limit = 100000) {
    auto list = jobspec::ParseJobText("[t]\n" + options + "\n", "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return {};
    job_ = list->jobs[0];
    buffers_.assign(1 << 20, 0);
    IoGenerator gen;
    absl::Status s = gen.Init(job_, 1, {GenFile{3, 0, region, file_size}}, io_bytes, wrap,
                              buffers_.data(), 0);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<Io> out;
    IoRequest r;
    while (out.size() < limit && gen.Next(r)) out.push_back({r.op, r.offset, r.len});
    return out;
  }

  static uint64_t Bytes(const std::vector<Io>& ios) {
    uint64_t b = 0;
    for (const Io& io : ios) b += io.len;
    return b;
  }

  jobspec::JobSpec job_;
  std::vector<char> buffers_;
};

// A default random job reads fio's own offsets in fio's order: the first 8
// I/Os of fio 3.33 (--write_iolog) for the same jobs on a 1 MiB file. With a
// bs range the sizes are fio's too, each cut where it meets a block already
// read as fio's random map cuts it.
TEST_F(IoGeneratorTest, RandomOffsetsAreFiosForTheSameJob) {
  const std::vector<Io> fixed = Pass("rw=randread\nbs=4k\nsize=1m", 1 << 20, 1 << 20);
  ASSERT_GE(fixed.size(), 8u);
  const uint64_t want[8] = {61440, 774144, 880640, 491520, 417792, 884736, 397312, 368640};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(fixed[i].offset, want[i]) << "I/O " << i;
  const std::vector<Io> range = Pass("rw=randread\nbsrange=4k-64k\nsize=1m", 1 << 20, 1 << 20);
  ASSERT_GE(range.size(), 8u);
  const std::pair<uint64_t, uint32_t> want_range[8] = {
      {61440, 12288}, {774144, 45056}, {880640, 53248}, {491520, 24576},
      {417792, 61440}, {933888, 8192}, {397312, 20480}, {368640, 12288}};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(range[i].offset, want_range[i].first) << "I/O " << i;
    EXPECT_EQ(range[i].len, want_range[i].second) << "I/O " << i;
  }
  EXPECT_EQ(range.size(), 43u) << "fio 3.33 issues 43 reads for this job";
}

// blockalign (ba) on random I/O: offsets are multiples of it, drawn from
// size / ba blocks without the random map (fio turns it off), in fio 3.33's
// order: the first 8 I/Os of its write_iolog for the same jobs on 1 MiB, the
// count of I/Os and of distinct offsets. The agent before aligned to bs.
TEST_F(IoGeneratorTest, BlockalignAlignsRandomOffsetsAsFio) {
  auto check = [&](const std::string& opts, const std::vector<std::pair<uint64_t, uint32_t>>& want,
                   size_t n, size_t distinct, uint64_t align) {
    SCOPED_TRACE(opts);
    const std::vector<Io> ios = Pass(opts + "\nsize=1m", 1 << 20, 1 << 20);
    ASSERT_EQ(ios.size(), n);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(ios[i].offset, want[i].first) << "I/O " << i;
      EXPECT_EQ(ios[i].len, want[i].second) << "I/O " << i;
    }
    std::set<uint64_t> offsets;
    for (const Io& io : ios) {
      EXPECT_EQ(io.offset % align, 0u) << io.offset;
      offsets.insert(io.offset);
    }
    EXPECT_EQ(offsets.size(), distinct);
  };
  EXPECT_TRUE(jobspec::ParseJobText("[t]\nrw=randread\nbs=4k\nba=16k\n", "t.fio")->jobs[0].norandommap);
  check("rw=randread\nbs=4k\nba=16k",
        {{49152, 4096}, {770048, 4096}, {868352, 4096}, {491520, 4096},
         {409600, 4096}, {868352, 4096}, {393216, 4096}, {360448, 4096}}, 256, 64, 16384);
  // Below bs: 1k steps, the last block kept whole (fio's last_block).
  check("rw=randread\nbs=4k\nba=1k",
        {{62464, 4096}, {773120, 4096}, {880640, 4096}, {490496, 4096},
         {419840, 4096}, {877568, 4096}, {397312, 4096}, {368640, 4096}}, 256, 230, 1024);
  // fio's examples/jesd219.fio shape: sub-4k blocks at 4k boundaries.
  check("rw=randread\nbssplit=512/20:1k/20:2k/20:3584/40\nblockalign=4k",
        {{61440, 512}, {774144, 3584}, {880640, 3584}, {491520, 1024},
         {417792, 3584}, {880640, 512}, {397312, 3584}, {368640, 512}}, 503, 224, 4096);
  // Per direction (ba=r,w): reads at 8k, writes at 16k.
  const std::vector<Io> rw = Pass("rw=randrw\nbs=4k\nba=8k,16k\nsize=1m", 1 << 20, 1 << 20);
  ASSERT_EQ(rw.size(), 256u);
  const uint64_t want_rw[8] = {57344, 770048, 876544, 491520, 417792, 876544, 393216, 360448};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rw[i].offset, want_rw[i]) << "I/O " << i;
  for (const Io& io : rw) EXPECT_EQ(io.offset % (io.op == IoOp::kRead ? 8192 : 16384), 0u);
  // Sequential I/O: fio ignores blockalign (0, 4k, 8k ...).
  const std::vector<Io> seq = Pass("rw=read\nbs=4k\nba=16k\nsize=1m", 1 << 20, 1 << 20);
  ASSERT_EQ(seq.size(), 256u);
  for (size_t i = 0; i < seq.size(); ++i) EXPECT_EQ(seq[i].offset, i * 4096);
}

// file_service_type over three 64k files, 4k sequential writes: the files of
// the first 16 I/Os are fio 3.33's (fio --debug=file, get_next_file lines,
// same job). Before, every type was served round robin one I/O at a time.
TEST_F(IoGeneratorTest, FileServiceTypeFollowsFio) {
  auto files_of = [&](const std::string& fst) {
    auto list = jobspec::ParseJobText("[f]\nrw=write\nbs=4k\nnrfiles=3\nfile_service_type=" + fst + "\n",
                                      "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    job_ = list->jobs[0];
    buffers_.assign(1 << 20, 0);
    IoGenerator gen;
    absl::Status s = gen.Init(job_, 1, {GenFile{3, 0, 64 << 10, 0}, GenFile{4, 0, 64 << 10, 0},
                                        GenFile{5, 0, 64 << 10, 0}},
                              192 << 10, false, buffers_.data(), 0);
    EXPECT_TRUE(s.ok()) << s;
    std::string seq;
    IoRequest r;
    size_t n = 0;
    std::array<int, 3> per_file{};
    while (gen.Next(r)) {
      if (n++ < 16) seq += std::to_string(r.file_index);
      ++per_file[static_cast<size_t>(r.file_index)];
    }
    EXPECT_EQ(per_file, (std::array<int, 3>{16, 16, 16})) << fst;  // every block once
    return seq;
  };
  EXPECT_EQ(files_of("roundrobin"), "0120120120120120");
  EXPECT_EQ(files_of("roundrobin:3"), "0001112220001112");
  EXPECT_EQ(files_of("sequential"), "0000000000000000");
  EXPECT_EQ(files_of("random"), "2200202212210220");
}

// rw=randrw bs=4k,64k: fio issues every write as one 64k I/O at a 64k boundary.
// Before, writes shared the read's 4k random map and were cut into 4k-60k
// pieces at 4k offsets.
TEST_F(IoGeneratorTest, PerDirectionBlockSizesKeepTheirSizeAndAlignment) {
  const auto ios = Pass("rw=randrw\nbs=4k,64k", 4 << 20, 4 << 20);
  ASSERT_FALSE(ios.empty());
  size_t writes = 0, reads = 0;
  for (const Io& io : ios) {
    if (io.op == IoOp::kWrite) {
      ++writes;
      EXPECT_EQ(io.len, 65536u) << "write at " << io.offset;
      EXPECT_EQ(io.offset % 65536, 0u) << "write at " << io.offset;
    } else {
      ++reads;
      EXPECT_EQ(io.len, 4096u);
      EXPECT_EQ(io.offset % 4096, 0u);
    }
    EXPECT_LE(io.offset + io.len, 4u << 20);
  }
  EXPECT_GT(writes, 0u);
  EXPECT_GT(reads, 0u);
  // Writes never hit the same 64k block twice in a pass (their own random map).
  std::set<uint64_t> blocks;
  for (const Io& io : ios) {
    if (io.op == IoOp::kWrite) {
      EXPECT_TRUE(blocks.insert(io.offset).second) << io.offset;
    }
  }
}

// Sequential rw with per-direction sizes: each direction keeps its own cursor
// and unit (fio: 55 reads of 4k from 0, 61 writes of 64k from 0 over 4 MiB).
TEST_F(IoGeneratorTest, SequentialMixPerDirectionCursors) {
  const auto ios = Pass("rw=rw\nbs=4k,64k", 4 << 20, 4 << 20);
  uint64_t next[2] = {0, 0};
  size_t n[2] = {0, 0};
  for (const Io& io : ios) {
    const int d = static_cast<int>(io.op);
    EXPECT_EQ(io.offset, next[d]);
    next[d] = io.offset + io.len;
    ++n[d];
  }
  EXPECT_EQ(n[0], 55u);
  EXPECT_EQ(n[1], 61u);
}

// io_size larger than size: the file is read again from the start until
// io_size bytes are done (fio: 64 reads of 64k over a 1 MiB file for
// io_size=4m, sequential or random). Before, the pass stopped at 1 MiB.
TEST_F(IoGeneratorTest, IoSizeLargerThanSizeWraps) {
  for (const char* rw : {"read", "randread"}) {
    const auto ios = Pass(std::string("rw=") + rw + "\nbs=64k", 1 << 20, 4 << 20, /*wrap=*/true);
    ASSERT_EQ(ios.size(), 64u) << rw;
    std::map<uint64_t, int> per_offset;
    for (const Io& io : ios) {
      EXPECT_EQ(io.len, 65536u);
      ++per_offset[io.offset];
    }
    EXPECT_EQ(per_offset.size(), 16u) << rw;
    for (const auto& [off, n] : per_offset) EXPECT_EQ(n, 4) << rw << " offset " << off;
  }
  // Without io_size the pass ends with the file.
  EXPECT_EQ(Pass("rw=read\nbs=64k", 1 << 20, 4 << 20, /*wrap=*/false).size(), 16u);
}

// rw=read:4k (4k hole after each 4k read) over a 1 MiB file: fio reads the
// even blocks, wraps at the end of the file and reads them again, 256 reads
// (size bytes). On a 4 MiB file with size=1m it stops at the region's end:
// 128 reads. Before, both stopped at 128.
TEST_F(IoGeneratorTest, SequentialHoleWrapsAtEndOfFile) {
  auto ios = Pass("rw=read:4k\nbs=4k", 1 << 20, 1 << 20);
  ASSERT_EQ(ios.size(), 256u);
  for (size_t i = 0; i < ios.size(); ++i) {
    EXPECT_EQ(ios[i].offset, (i % 128) * 8192) << i;
    EXPECT_EQ(ios[i].len, 4096u);
  }
  ios = Pass("rw=read:4k\nbs=4k", 1 << 20, 1 << 20, false, /*file_size=*/4 << 20);
  EXPECT_EQ(ios.size(), 128u);
}

// The last I/O of a pass is never cut to the bytes left: fio issues 2 x 64k for
// io_size=100k (and a bssplit job only its own sizes). Before: 64k + 36k.
TEST_F(IoGeneratorTest, NoIoIsCutToTheBytesLeft) {
  auto ios = Pass("rw=read\nbs=64k", 1 << 20, 100 << 10, true);
  ASSERT_EQ(ios.size(), 2u);
  EXPECT_EQ(ios[1].len, 65536u);
  ios = Pass("rw=randread\nbssplit=4k/50:64k/50\nnorandommap", 1 << 20, 100 << 10, true);
  ASSERT_FALSE(ios.empty());
  for (const Io& io : ios) EXPECT_TRUE(io.len == 4096 || io.len == 65536) << io.len;
  EXPECT_GE(Bytes(ios), 100u << 10);
}

// At the end of a region that is not a whole number of the largest block, a
// sequential bssplit/bsrange job issues only sizes it may draw, inside the file.
TEST_F(IoGeneratorTest, EndOfFileSizesStayInTheSplit) {
  const uint64_t region = (1 << 20) + (12 << 10);  // 1 MiB + 12 KiB
  auto ios = Pass("rw=read\nbssplit=4k/30:16k/30:64k/40", region, region);
  ASSERT_FALSE(ios.empty());
  for (const Io& io : ios) {
    EXPECT_TRUE(io.len == 4096 || io.len == 16384 || io.len == 65536) << io.len;
    EXPECT_LE(io.offset + io.len, region);
  }
  ios = Pass("rw=read\nbsrange=4k-64k", region, region);
  for (const Io& io : ios) {
    EXPECT_GE(io.len, 4096u);
    EXPECT_LE(io.len, 65536u);
    EXPECT_EQ(io.len % 4096, 0u);
    EXPECT_LE(io.offset + io.len, region);
  }
}

TEST_F(IoGeneratorTest, RegionBelowADirectionsBlockSizeIsRefused) {
  auto list = jobspec::ParseJobText("[t]\nrw=randrw\nbs=4k,64k\n", "test.fio");
  ASSERT_TRUE(list.ok());
  std::vector<char> buf(1 << 20);
  IoGenerator gen;
  absl::Status s = gen.Init(list->jobs[0], 1, {GenFile{3, 0, 32 << 10}}, 32 << 10, false,
                            buf.data(), 0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("write block size 65536"), std::string::npos) << s;
}

}  // namespace
}  // namespace iofleet::agent
