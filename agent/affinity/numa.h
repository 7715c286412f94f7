// NUMA topology, per-thread CPU-node and memory policies, node-local buffers.
//
// Topology comes from sysfs (/sys/devices/system/node); a machine without
// NUMA support reports a single node 0 holding every online CPU. Policies are
// applied with the set_mempolicy/mbind system calls directly, so behaviour is
// the same with or without libnuma.
//
// numa_mem_policy strings (as in JobSpec, fio's syntax):
//   ""/"default"      no policy (kernel default)
//   "prefer:N"        prefer node N
//   "bind:LIST"       only the nodes in LIST ("0-1,3")
//   "interleave:LIST" interleave over LIST
//   "local"           allocate on the node of the allocating CPU
// LIST may also be "all".
//
// Thread-safety: all functions are thread-safe; Apply* affect the calling
// thread only. None is meant for the per-I/O path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::affinity {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;      // sorted; may be empty (memory-only node)
  uint64_t memory_bytes = 0;  // MemTotal of the node; 0 if unknown
};

struct NumaTopology {
  std::vector<NumaNode> nodes;  // sorted by id; never empty
  bool numa_available = false;  // false: synthesized single node 0

  const NumaNode* Find(int node) const;
  int NodeOfCpu(int cpu) const;  // -1 if no node lists the CPU
  std::vector<int> NodeIds() const;
};

absl::StatusOr<NumaTopology> DiscoverNumaTopology();

enum class MemPolicyMode { kDefault, kPrefer, kBind, kInterleave, kLocal };

struct MemPolicy {
  MemPolicyMode mode = MemPolicyMode::kDefault;
  std::vector<int> nodes;  // sorted; empty with all_nodes or for default/local
  bool all_nodes = false;  // LIST was "all"
};

// Parses a numa_mem_policy string (syntax above). InvalidArgument on a bad
// mode or list, a missing list for prefer/bind/interleave, prefer with more
// than one node, or a list after default/local.
absl::StatusOr<MemPolicy> ParseNumaMemPolicy(absl::string_view spec);

// Checks the job's numa_cpu_nodes (each must exist and have CPUs) and
// numa_mem_policy (must parse, nodes must exist) against `topology`.
// InvalidArgument names the field and the offending node, e.g.
// "numa_cpu_nodes: NUMA node 3 does not exist (nodes: 0-1)".
absl::Status ValidateNuma(const jobspec::JobSpec& job, const NumaTopology& topology);
absl::Status ValidateNuma(const jobspec::JobSpec& job);  // discovers the topology

// Restricts the calling thread to the CPUs of `nodes` (numa_cpu_nodes).
absl::Status ApplyNumaCpuNodes(const std::vector<int>& nodes);

// Sets the calling thread's memory policy (numa_mem_policy); "" is a no-op.
absl::Status ApplyNumaMemPolicy(absl::string_view policy);

// Anonymous, page-aligned memory bound to `node` (mmap + mbind MPOL_BIND);
// node < 0 means no binding. Release with FreeOnNode(ptr, bytes). On a
// single-node machine where mbind is not permitted (containers), the memory
// is returned unbound, as it can only live on that node anyway.
absl::StatusOr<void*> AllocOnNode(size_t bytes, int node);
void FreeOnNode(void* ptr, size_t bytes);

// RAII owner of an AllocOnNode() buffer.
class NodeBuffer {
 public:
  static absl::StatusOr<NodeBuffer> Allocate(size_t bytes, int node);

  NodeBuffer() = default;
  NodeBuffer(NodeBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  NodeBuffer& operator=(NodeBuffer&& o) noexcept;
  NodeBuffer(const NodeBuffer&) = delete;
  NodeBuffer& operator=(const NodeBuffer&) = delete;
  ~NodeBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace iofleet::agent::affinity
