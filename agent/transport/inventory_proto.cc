// CollectInventory(): the Hello inventory. Kept apart from convert.cc because it
// depends on host discovery (agent/affinity) and the engine registry.
#include <sys/utsname.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "agent/affinity/inventory.h"
#include "agent/engines/engine.h"
#include "agent/transport/convert.h"

#ifndef IOFLEET_AGENT_VERSION
#define IOFLEET_AGENT_VERSION "0.1.0"
#endif

namespace iofleet::agent {

void CollectInventory(iofleet::v1::Inventory* out) {
  auto inv = affinity::HostInventory::Collect();
  if (inv.ok()) {
    out->set_hostname(inv->hostname);
    out->set_kernel_release(inv->kernel_release);
    out->set_kernel_cmdline(inv->kernel_cmdline);
    out->set_cpu_model(inv->cpu_model);
    out->set_cpu_count(static_cast<uint32_t>(inv->cpu_count > 0 ? inv->cpu_count : 0));
    for (const affinity::NumaNode& n : inv->numa_nodes) {
      auto* pn = out->add_numa_nodes();
      pn->set_id(n.id);
      for (int c : n.cpus) pn->add_cpus(c);
    }
    for (const affinity::BlockDeviceInfo& d : inv->block_devices) {
      auto* pd = out->add_block_devices();
      pd->set_name(d.name);
      pd->set_model(d.model);
      pd->set_size_bytes(d.size_bytes);
      pd->set_logical_block_size(d.logical_block_size);
      pd->set_rotational(d.rotational);
      pd->set_numa_node(d.numa_node);
      pd->set_kind(d.kind);
      pd->set_serial(d.serial);
      pd->set_firmware(d.firmware);
      pd->set_nvme_controller(d.nvme_controller);
      pd->set_nsid(d.nsid);
      pd->set_hw_queues(d.hw_queues);
      pd->set_physical_block_size(d.physical_block_size);
      pd->set_zoned(d.zoned);
      pd->set_zone_size_bytes(d.zone_size_bytes);
      pd->set_nr_zones(d.nr_zones);
      pd->set_fingerprint(d.fingerprint);
    }
    for (const affinity::NvmeControllerInfo& c : inv->nvme_controllers) {
      auto* pc = out->add_nvme_controllers();
      pc->set_name(c.name);
      pc->set_model(c.model);
      pc->set_serial(c.serial);
      pc->set_firmware(c.firmware);
      pc->set_transport(c.transport);
      pc->set_address(c.address);
      pc->set_subsysnqn(c.subsysnqn);
      pc->set_version(c.version);
      pc->set_numa_node(c.numa_node);
      pc->set_queue_count(c.queue_count);
      for (const std::string& ns : c.namespaces) pc->add_namespaces(ns);
    }
  } else {
    // Degraded but still useful: the controller places by name and labels.
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) == 0) out->set_hostname(host);
    struct utsname u;
    if (uname(&u) == 0) out->set_kernel_release(u.release);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    out->set_cpu_count(cpus > 0 ? static_cast<uint32_t>(cpus) : 0);
  }
  for (const EngineInfo& e : AvailableEngines()) {
    if (e.available) out->add_engines(e.name);
  }
  out->set_agent_version(IOFLEET_AGENT_VERSION);
}

std::string InventoryHash(const iofleet::v1::Inventory& inv) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream zero_copy(&bytes);
    google::protobuf::io::CodedOutputStream coded(&zero_copy);
    coded.SetSerializationDeterministic(true);
    inv.SerializeToCodedStream(&coded);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    return "";  // never seen; an empty hash makes every Hello carry the inventory
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

}  // namespace iofleet::agent
