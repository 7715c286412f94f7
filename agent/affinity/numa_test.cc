#include "agent/affinity/numa.h"

#include <numaif.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/affinity/cpu.h"
#include "gtest/gtest.h"

namespace iofleet::agent::affinity {
namespace {

TEST(NumaTest, TopologyCoversAllOnlineCpus) {
  auto t = DiscoverNumaTopology();
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_GE(t->nodes.size(), 1u);
  auto online = OnlineCpus();
  ASSERT_TRUE(online.ok());
  for (int cpu : *online) EXPECT_GE(t->NodeOfCpu(cpu), 0) << "CPU " << cpu;
  std::set<int> ids;
  for (const auto& n : t->nodes) EXPECT_TRUE(ids.insert(n.id).second);
  EXPECT_NE(t->Find(t->nodes[0].id), nullptr);
  EXPECT_EQ(t->Find(100000), nullptr);
}

TEST(NumaTest, ParseMemPolicy) {
  auto p = ParseNumaMemPolicy("bind:0-1,3");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->mode, MemPolicyMode::kBind);
  EXPECT_EQ(p->nodes, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(ParseNumaMemPolicy("prefer:1")->mode, MemPolicyMode::kPrefer);
  EXPECT_TRUE(ParseNumaMemPolicy("interleave:all")->all_nodes);
  EXPECT_EQ(ParseNumaMemPolicy("local")->mode, MemPolicyMode::kLocal);
  EXPECT_EQ(ParseNumaMemPolicy("default")->mode, MemPolicyMode::kDefault);
  for (const char* bad : {"bogus", "bind", "bind:", "prefer:0-1", "local:0", "interleave:x"}) {
    EXPECT_EQ(ParseNumaMemPolicy(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(NumaTest, ValidateNamesBadNodes) {
  NumaTopology t;
  t.nodes = {{0, {0, 1}, 0}, {1, {2, 3}, 0}, {2, {}, 0}};
  jobspec::JobSpec job;
  EXPECT_TRUE(ValidateNuma(job, t).ok());
  job.numa_cpu_nodes = {1, 5};
  absl::Status s = ValidateNuma(job, t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("numa_cpu_nodes"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("node 5"), absl::string_view::npos) << s;
  job.numa_cpu_nodes = {2};
  EXPECT_NE(ValidateNuma(job, t).message().find("no CPUs"), absl::string_view::npos);
  job.numa_cpu_nodes = {0};
  job.numa_mem_policy = "interleave:0-3";
  s = ValidateNuma(job, t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("numa_mem_policy: NUMA node 3"), absl::string_view::npos) << s;
  job.numa_mem_policy = "bind:0-2";
  EXPECT_TRUE(ValidateNuma(job, t).ok());
}

TEST(NumaTest, ApplyCpuNodesPinsToNodeCpus) {
  auto t = DiscoverNumaTopology();
  ASSERT_TRUE(t.ok());
  const NumaNode* node = nullptr;
  for (const auto& n : t->nodes) {
    if (!n.cpus.empty()) {
      node = &n;
      break;
    }
  }
  ASSERT_NE(node, nullptr);
  auto online = OnlineCpus();
  ASSERT_TRUE(online.ok());
  absl::Status s;
  absl::StatusOr<std::vector<int>> back;
  std::thread th([&] {
    s = ApplyNumaCpuNodes({node->id});
    back = CurrentThreadCpus();
  });
  th.join();
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(back.ok());
  for (int cpu : *back) EXPECT_EQ(t->NodeOfCpu(cpu), node->id);
  EXPECT_EQ(ApplyNumaCpuNodes({100000}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(NumaTest, ApplyMemPolicy) {
  auto t = DiscoverNumaTopology();
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(ApplyNumaMemPolicy("").ok());
  EXPECT_EQ(ApplyNumaMemPolicy("bind:100000").code(), absl::StatusCode::kInvalidArgument);
  absl::Status bind, reset;
  std::thread th([&] {
    bind = ApplyNumaMemPolicy(absl::StrCat("bind:", t->nodes[0].id));
    reset = ApplyNumaMemPolicy("default");
  });
  th.join();
  if (bind.code() == absl::StatusCode::kPermissionDenied) {
    GTEST_SKIP() << "set_mempolicy not permitted here: " << bind;
  }
  EXPECT_TRUE(bind.ok()) << bind;
  EXPECT_TRUE(reset.ok()) << reset;
}

TEST(NumaTest, AllocOnNodeAndFree) {
  auto t = DiscoverNumaTopology();
  ASSERT_TRUE(t.ok());
  const size_t bytes = 1 << 20;
  auto p = AllocOnNode(bytes, t->nodes[0].id);
  ASSERT_TRUE(p.ok()) << p.status();
  std::memset(*p, 0xab, bytes);
  FreeOnNode(*p, bytes);

  auto unbound = AllocOnNode(4096, -1);
  ASSERT_TRUE(unbound.ok());
  FreeOnNode(*unbound, 4096);
  EXPECT_FALSE(AllocOnNode(0, 0).ok());

  auto b = NodeBuffer::Allocate(bytes, t->nodes[0].id);
  ASSERT_TRUE(b.ok());
  NodeBuffer moved = *std::move(b);
  ASSERT_NE(moved.data(), nullptr);
  EXPECT_EQ(moved.size(), bytes);
  static_cast<char*>(moved.data())[bytes - 1] = 1;
}

// The node the kernel placed each page of [p, p + bytes) on (move_pages with no
// target nodes only reports).
std::set<int> PageNodes(void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<void*> pages;
  for (size_t off = 0; off < bytes; off += page) pages.push_back(static_cast<char*>(p) + off);
  std::vector<int> status(pages.size(), -1);
  std::set<int> nodes;
  if (syscall(SYS_move_pages, 0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) {
    nodes.insert(-1000 - errno);
    return nodes;
  }
  for (int s : status) nodes.insert(s);
  return nodes;
}

// Needs two or more NUMA nodes (the test-bed guest: tests/vm, ctest -L vm).
TEST(NumaTest, BuffersLandOnTheRequestedNode) {
  auto t = DiscoverNumaTopology();
  ASSERT_TRUE(t.ok());
  if (t->nodes.size() < 2) GTEST_SKIP() << "one NUMA node";
  const size_t bytes = 1 << 20;
  for (const NumaNode& n : t->nodes) {
    auto p = AllocOnNode(bytes, n.id);
    ASSERT_TRUE(p.ok()) << p.status();
    std::memset(*p, 0x5a, bytes);
    EXPECT_EQ(PageNodes(*p, bytes), std::set<int>{n.id}) << "AllocOnNode(" << n.id << ")";
    int policy_node = -1;
    ASSERT_EQ(syscall(SYS_get_mempolicy, &policy_node, nullptr, 0, *p, MPOL_F_NODE | MPOL_F_ADDR), 0);
    EXPECT_EQ(policy_node, n.id);
    FreeOnNode(*p, bytes);
  }
  // A thread confined to a node's CPUs first-touches its memory there: what the
  // worker relies on for its I/O buffers (pin, then mmap and fill).
  for (const NumaNode& n : t->nodes) {
    if (n.cpus.empty()) continue;
    std::set<int> got;
    absl::Status pinned;
    std::thread th([&] {
      pinned = ApplyNumaCpuNodes({n.id});
      void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      std::memset(m, 1, bytes);
      got = PageNodes(m, bytes);
      munmap(m, bytes);
    });
    th.join();
    ASSERT_TRUE(pinned.ok()) << pinned;
    EXPECT_EQ(got, std::set<int>{n.id}) << "first touch on node " << n.id;
  }
}

}  // namespace
}  // namespace iofleet::agent::affinity
