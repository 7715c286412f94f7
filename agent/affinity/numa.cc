#include "agent/affinity/numa.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/affinity/cpu.h"
#include "common/status.h"

namespace iofleet::agent::affinity {
namespace {

// Kernel mempolicy modes (linux/mempolicy.h), spelled locally so this file
// builds without numaif.h.
constexpr int kMpolDefault = 0;
constexpr int kMpolPreferred = 1;
constexpr int kMpolBind = 2;
constexpr int kMpolInterleave = 3;
constexpr int kMpolLocal = 4;

constexpr int kMaxNodes = 1024;
constexpr char kNodeDir[] = "/sys/devices/system/node";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string NodeListString(const NumaTopology& t) { return FormatCpuList(t.NodeIds()); }

// Node bitmask for set_mempolicy/mbind.
struct NodeMask {
  std::vector<unsigned long> words;
  unsigned long maxnode = 0;  // bits + 1: the kernel reads maxnode - 1 bits
};

NodeMask MakeMask(const std::vector<int>& nodes) {
  NodeMask m;
  constexpr int kBits = sizeof(unsigned long) * 8;
  int max_node = 0;
  for (int n : nodes) max_node = std::max(max_node, n);
  m.words.assign(max_node / kBits + 1, 0);
  for (int n : nodes) m.words[n / kBits] |= 1ul << (n % kBits);
  m.maxnode = m.words.size() * kBits + 1;
  return m;
}

long SetMempolicy(int mode, const NodeMask* m) {
  return syscall(SYS_set_mempolicy, mode, m ? m->words.data() : nullptr, m ? m->maxnode : 0);
}

absl::Status CheckNodes(absl::string_view field, const std::vector<int>& nodes,
                        const NumaTopology& t, bool need_cpus) {
  for (int n : nodes) {
    const NumaNode* node = t.Find(n);
    if (node == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": NUMA node ", n, " does not exist (nodes: ", NodeListString(t), ")"));
    }
    if (need_cpus && node->cpus.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": NUMA node ", n, " has no CPUs"));
    }
  }
  return absl::OkStatus();
}

std::vector<int> ResolveNodes(const MemPolicy& p, const NumaTopology& t) {
  return p.all_nodes ? t.NodeIds() : p.nodes;
}

}  // namespace

const NumaNode* NumaTopology::Find(int node) const {
  for (const NumaNode& n : nodes) {
    if (n.id == node) return &n;
  }
  return nullptr;
}

int NumaTopology::NodeOfCpu(int cpu) const {
  for (const NumaNode& n : nodes) {
    if (std::binary_search(n.cpus.begin(), n.cpus.end(), cpu)) return n.id;
  }
  return -1;
}

std::vector<int> NumaTopology::NodeIds() const {
  std::vector<int> ids;
  for (const NumaNode& n : nodes) ids.push_back(n.id);
  return ids;
}

absl::StatusOr<NumaTopology> DiscoverNumaTopology() {
  NumaTopology t;
  std::string online;
  if (ReadFile(absl::StrCat(kNodeDir, "/online"), &online)) {
    absl::StatusOr<std::vector<int>> ids = ParseCpuList(online);
    if (ids.ok()) {
      for (int id : *ids) {
        NumaNode node;
        node.id = id;
        const std::string dir = absl::StrCat(kNodeDir, "/node", id);
        std::string text;
        if (ReadFile(dir + "/cpulist", &text)) {
          absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text);
          if (cpus.ok()) node.cpus = *std::move(cpus);
        }
        if (ReadFile(dir + "/meminfo", &text)) {
          // "Node 0 MemTotal:       16318412 kB"
          for (absl::string_view line : absl::StrSplit(text, '\n')) {
            size_t pos = line.find("MemTotal:");
            if (pos == absl::string_view::npos) continue;
            absl::string_view rest = absl::StripAsciiWhitespace(line.substr(pos + 9));
            uint64_t kb = 0;
            std::vector<absl::string_view> f = absl::StrSplit(rest, ' ', absl::SkipEmpty());
            if (!f.empty() && absl::SimpleAtoi(f[0], &kb)) node.memory_bytes = kb * 1024;
          }
        }
        t.nodes.push_back(std::move(node));
      }
    }
  }
  if (!t.nodes.empty()) {
    t.numa_available = true;
    return t;
  }
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  if (!cpus.ok()) return cpus.status();
  NumaNode only;
  only.id = 0;
  only.cpus = *std::move(cpus);
  t.nodes.push_back(std::move(only));
  return t;
}

absl::StatusOr<MemPolicy> ParseNumaMemPolicy(absl::string_view spec) {
  MemPolicy p;
  spec = absl::StripAsciiWhitespace(spec);
  absl::string_view mode = spec, list;
  const size_t colon = spec.find(':');
  const bool has_list = colon != absl::string_view::npos;
  if (has_list) {
    mode = spec.substr(0, colon);
    list = absl::StripAsciiWhitespace(spec.substr(colon + 1));
  }
  if (mode.empty() || mode == "default") {
    p.mode = MemPolicyMode::kDefault;
  } else if (mode == "prefer") {
    p.mode = MemPolicyMode::kPrefer;
  } else if (mode == "bind") {
    p.mode = MemPolicyMode::kBind;
  } else if (mode == "interleave") {
    p.mode = MemPolicyMode::kInterleave;
  } else if (mode == "local") {
    p.mode = MemPolicyMode::kLocal;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("numa_mem_policy: unknown mode '", mode,
                     "' (want default, prefer:N, bind:LIST, interleave:LIST or local)"));
  }
  const bool wants_list = p.mode == MemPolicyMode::kPrefer || p.mode == MemPolicyMode::kBind ||
                          p.mode == MemPolicyMode::kInterleave;
  if (!wants_list) {
    if (has_list && !list.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("numa_mem_policy: '", mode, "' takes no node list"));
    }
    return p;
  }
  if (list.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("numa_mem_policy: '", mode, "' needs a node list, e.g. ", mode, ":0"));
  }
  if (list == "all") {
    p.all_nodes = true;
  } else {
    absl::StatusOr<std::vector<int>> nodes = ParseCpuList(list);
    if (!nodes.ok() || nodes->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("numa_mem_policy: bad node list '", list, "'"));
    }
    p.nodes = *std::move(nodes);
  }
  if (p.mode == MemPolicyMode::kPrefer && (p.all_nodes || p.nodes.size() != 1)) {
    return absl::InvalidArgumentError("numa_mem_policy: prefer takes exactly one node");
  }
  return p;
}

absl::Status ValidateNuma(const jobspec::JobSpec& job, const NumaTopology& topology) {
  if (absl::Status s = CheckNodes("numa_cpu_nodes", job.numa_cpu_nodes, topology, true); !s.ok()) {
    return s;
  }
  if (job.numa_mem_policy.empty()) return absl::OkStatus();
  absl::StatusOr<MemPolicy> p = ParseNumaMemPolicy(job.numa_mem_policy);
  if (!p.ok()) return p.status();
  return CheckNodes("numa_mem_policy", p->nodes, topology, false);
}

absl::Status ValidateNuma(const jobspec::JobSpec& job) {
  absl::StatusOr<NumaTopology> t = DiscoverNumaTopology();
  if (!t.ok()) return t.status();
  return ValidateNuma(job, *t);
}

absl::Status ApplyNumaCpuNodes(const std::vector<int>& nodes) {
  if (nodes.empty()) return absl::OkStatus();
  absl::StatusOr<NumaTopology> t = DiscoverNumaTopology();
  if (!t.ok()) return t.status();
  if (absl::Status s = CheckNodes("numa_cpu_nodes", nodes, *t, true); !s.ok()) return s;
  std::vector<int> cpus;
  for (int n : nodes) {
    const NumaNode* node = t->Find(n);
    cpus.insert(cpus.end(), node->cpus.begin(), node->cpus.end());
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return PinCurrentThread(cpus);
}

absl::Status ApplyNumaMemPolicy(absl::string_view policy) {
  if (absl::StripAsciiWhitespace(policy).empty()) return absl::OkStatus();
  absl::StatusOr<MemPolicy> p = ParseNumaMemPolicy(policy);
  if (!p.ok()) return p.status();
  absl::StatusOr<NumaTopology> t = DiscoverNumaTopology();
  if (!t.ok()) return t.status();
  const std::vector<int> nodes = ResolveNodes(*p, *t);
  if (absl::Status s = CheckNodes("numa_mem_policy", nodes, *t, false); !s.ok()) return s;

  const std::string what = absl::StrCat("numa_mem_policy=", policy);
  long rc = 0;
  switch (p->mode) {
    case MemPolicyMode::kDefault:
      rc = SetMempolicy(kMpolDefault, nullptr);
      break;
    case MemPolicyMode::kLocal:
      rc = SetMempolicy(kMpolLocal, nullptr);
      if (rc != 0 && errno == EINVAL) {
        // Kernels before 3.8: PREFERRED with an empty mask means local.
        rc = SetMempolicy(kMpolPreferred, nullptr);
      }
      break;
    case MemPolicyMode::kPrefer:
    case MemPolicyMode::kBind:
    case MemPolicyMode::kInterleave: {
      const int mode = p->mode == MemPolicyMode::kPrefer ? kMpolPreferred
                       : p->mode == MemPolicyMode::kBind ? kMpolBind
                                                         : kMpolInterleave;
      const NodeMask mask = MakeMask(nodes);
      rc = SetMempolicy(mode, &mask);
      break;
    }
  }
  if (rc != 0) return IoError("set_mempolicy", what, errno);
  return absl::OkStatus();
}

absl::StatusOr<void*> AllocOnNode(size_t bytes, int node) {
  if (bytes == 0) return absl::InvalidArgumentError("AllocOnNode: zero bytes");
  if (node >= kMaxNodes) {
    return absl::InvalidArgumentError(absl::StrCat("AllocOnNode: node ", node, " out of range"));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return IoError("mmap", absl::StrCat(bytes, " bytes"), errno);
  if (node < 0) return p;
  const NodeMask mask = MakeMask({node});
  if (syscall(SYS_mbind, p, bytes, kMpolBind, mask.words.data(), mask.maxnode, 0) != 0) {
    const int err = errno;
    if (err == EPERM || err == ENOSYS) {
      absl::StatusOr<NumaTopology> t = DiscoverNumaTopology();
      if (t.ok() && t->nodes.size() == 1 && t->nodes[0].id == node) return p;
    }
    munmap(p, bytes);
    return IoError("mbind", absl::StrCat(bytes, " bytes on NUMA node ", node), err);
  }
  return p;
}

void FreeOnNode(void* ptr, size_t bytes) {
  if (ptr != nullptr && bytes != 0) munmap(ptr, bytes);
}

absl::StatusOr<NodeBuffer> NodeBuffer::Allocate(size_t bytes, int node) {
  absl::StatusOr<void*> p = AllocOnNode(bytes, node);
  if (!p.ok()) return p.status();
  NodeBuffer b;
  b.data_ = *p;
  b.size_ = bytes;
  return b;
}

NodeBuffer& NodeBuffer::operator=(NodeBuffer&& o) noexcept {
  if (this != &o) {
    FreeOnNode(data_, size_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

NodeBuffer::~NodeBuffer() { FreeOnNode(data_, size_); }

}  // namespace iofleet::agent::affinity
