#include "agent/affinity/cpu.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace iofleet::agent::affinity {
namespace {

using jobspec::CpusAllowedPolicy;

TEST(CpuTest, OnlineCpusIsSortedAndNonEmpty) {
  auto cpus = OnlineCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  ASSERT_FALSE(cpus->empty());
  EXPECT_TRUE(std::is_sorted(cpus->begin(), cpus->end()));
}

TEST(CpuTest, ParseAndFormatCpuList) {
  auto l = ParseCpuList("0-3,8, 10-11\n");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(FormatCpuList(*l), "0-3,8,10-11");
  EXPECT_TRUE(ParseCpuList("")->empty());
  EXPECT_EQ(*ParseCpuList("5,1,5"), (std::vector<int>{1, 5}));
  for (const char* bad : {"a", "3-1", "1-", "-1", "1-2-3"}) {
    EXPECT_EQ(ParseCpuList(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CpuTest, PinCurrentThreadToOneCpuAndReadBack) {
  auto cpus = OnlineCpus();
  ASSERT_TRUE(cpus.ok());
  // Pin a scratch thread so the test runner's own affinity is untouched.
  for (int target : {cpus->front(), cpus->back()}) {
    absl::Status pin;
    absl::StatusOr<std::vector<int>> back;
    std::thread t([&] {
      pin = PinCurrentThread({target});
      back = CurrentThreadCpus();
    });
    t.join();
    ASSERT_TRUE(pin.ok()) << pin;
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, std::vector<int>{target});
  }
}

TEST(CpuTest, PinRejectsEmptySet) {
  EXPECT_EQ(PinCurrentThread({}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuTest, SplitPolicyKeepsOneCpuPerThread) {
  const std::vector<int> set = {2, 4, 6, 8};
  struct Case {
    uint32_t thread_number;
    int want;
  } cases[] = {{1, 2}, {2, 4}, {3, 6}, {4, 8}, {5, 2}, {7, 6}, {100, 8}};
  for (const auto& c : cases) {
    auto got = CpusForJob(set, CpusAllowedPolicy::kSplit, c.thread_number);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, std::vector<int>{c.want}) << "thread " << c.thread_number;
  }
  // Unsorted input is treated as the sorted set, as fio walks the mask.
  EXPECT_EQ(*CpusForJob({8, 2, 6, 4}, CpusAllowedPolicy::kSplit, 2), std::vector<int>{4});
}

TEST(CpuTest, SharedPolicyAndEmptySet) {
  EXPECT_EQ(*CpusForJob({1, 3}, CpusAllowedPolicy::kShared, 5), (std::vector<int>{1, 3}));
  EXPECT_TRUE(CpusForJob({}, CpusAllowedPolicy::kSplit, 3)->empty());
  EXPECT_EQ(CpusForJob({1}, CpusAllowedPolicy::kSplit, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CpuTest, ValidateNamesMissingCpu) {
  EXPECT_TRUE(ValidateCpus({0, 1}, {0, 1, 2, 3}).ok());
  absl::Status s = ValidateCpus({1, 17}, {0, 1, 2, 3});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("CPU 17"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("0-3"), absl::string_view::npos) << s;

  auto online = OnlineCpus();
  ASSERT_TRUE(online.ok());
  EXPECT_TRUE(ValidateCpus(*online).ok());
  const int missing = online->back() + 1000;
  s = ValidateCpus({online->front(), missing});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(absl::StrCat("CPU ", missing)), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace iofleet::agent::affinity
