#include "controller/scheduler/samples.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::pair<uint32_t, uint64_t>> Seqs(uint32_t job, std::vector<uint64_t> seqs) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint64_t s : seqs) out.emplace_back(job, s);
  return out;
}

TEST(CheckSamplesTest, CompleteRun) {
  auto stored = Seqs(0, {0, 1, 2});
  auto more = Seqs(1, {0, 1, 2});
  stored.insert(stored.end(), more.begin(), more.end());
  SampleCheck c = CheckSamples(stored, {3, 3}, 6, {});
  EXPECT_FALSE(c.incomplete);
  EXPECT_THAT(c.missing, IsEmpty());
  EXPECT_EQ(c.note, "");
}

TEST(CheckSamplesTest, ExactMissingRangesPerJob) {
  // The case: seqs 2-16 of job 0 vanished; job 1 lost its tail too.
  auto stored = Seqs(0, {0, 1, 17, 18, 19});
  auto more = Seqs(1, {0, 1, 2});
  stored.insert(stored.end(), more.begin(), more.end());
  SampleCheck c = CheckSamples(stored, {20, 6}, 26, {{0, 2, 16}, {1, 3, 5}});
  EXPECT_TRUE(c.incomplete);
  EXPECT_THAT(c.missing, ElementsAre(SeqRangeRow{0, 2, 16}, SeqRangeRow{1, 3, 5}));
  EXPECT_THAT(c.note, HasSubstr("18 of 26 interval records are not stored"));
  EXPECT_THAT(c.note, HasSubstr("job 0 seq 2-16, job 1 seq 3-5"));
  EXPECT_THAT(c.note, HasSubstr("could not write 18 of them to its spool"));
  EXPECT_THAT(c.note, Not(HasSubstr("not explained")));
}

TEST(CheckSamplesTest, UnexplainedGapsAreSaid) {
  SampleCheck c = CheckSamples(Seqs(0, {0, 2}), {4}, 4, {});
  EXPECT_TRUE(c.incomplete);
  EXPECT_THAT(c.missing, ElementsAre(SeqRangeRow{0, 1, 1}, SeqRangeRow{0, 3, 3}));
  EXPECT_THAT(c.note, HasSubstr("2 of them not explained by the agent"));
}

TEST(CheckSamplesTest, JobWithNothingStored) {
  SampleCheck c = CheckSamples(Seqs(0, {0, 1}), {2, 2}, 4, {});
  EXPECT_THAT(c.missing, ElementsAre(SeqRangeRow{1, 0, 1}));
}

TEST(CheckSamplesTest, AgentWithoutNextSeqIsCheckedByHolesAndCount) {
  SampleCheck holes = CheckSamples(Seqs(0, {0, 3}), {}, 2, {});
  EXPECT_THAT(holes.missing, ElementsAre(SeqRangeRow{0, 1, 2}));
  SampleCheck count = CheckSamples(Seqs(0, {0, 1}), {}, 5, {});
  EXPECT_TRUE(count.incomplete);
  EXPECT_THAT(count.missing, IsEmpty());
  EXPECT_THAT(count.note, HasSubstr("3 of 5"));
  EXPECT_FALSE(CheckSamples(Seqs(0, {0, 1}), {}, 2, {}).incomplete);
}

TEST(FormatSeqRangesTest, Limits) {
  EXPECT_EQ(FormatSeqRanges({{0, 1, 1}, {2, 3, 9}}), "job 0 seq 1, job 2 seq 3-9");
  EXPECT_EQ(FormatSeqRanges({{0, 1, 1}, {0, 3, 3}, {0, 5, 5}}, 2),
            "job 0 seq 1, job 0 seq 3 and 1 more");
}

}  // namespace
}  // namespace iofleet::controller
