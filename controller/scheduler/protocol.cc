#include "controller/scheduler/protocol.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/scheduler/expand.h"
#include "google/protobuf/util/json_util.h"

namespace iofleet::controller {

IntervalRow ToRow(const v1::IntervalRecord& r) {
  IntervalRow row;
  row.run_id = r.run_id();
  row.job_index = r.job_index();
  row.job_name = r.job_name();
  row.seq = r.seq();
  row.t_start_ms = r.t_start_ms();
  row.t_end_ms = r.t_end_ms();
  const v1::IntervalDir* dirs[3] = {&r.read(), &r.write(), &r.trim()};
  for (int d = 0; d < 3; ++d) {
    row.dir[d].ios = dirs[d]->ios();
    row.dir[d].bytes = dirs[d]->bytes();
    row.dir[d].errors = dirs[d]->errors();
    const int n = std::min(dirs[d]->clat_bucket_size(), dirs[d]->clat_count_size());
    row.dir[d].clat_hist.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      row.dir[d].clat_hist.emplace_back(dirs[d]->clat_bucket(i), dirs[d]->clat_count(i));
    }
    row.dir[d].lat_measured = dirs[d]->lat_measured();
    if (row.dir[d].lat_measured) {
      const int m = std::min(dirs[d]->lat_bucket_size(), dirs[d]->lat_count_size());
      row.dir[d].lat_hist.reserve(static_cast<size_t>(m));
      for (int i = 0; i < m; ++i) {
        row.dir[d].lat_hist.emplace_back(dirs[d]->lat_bucket(i), dirs[d]->lat_count(i));
      }
    }
  }
  return row;
}

v1::IntervalRecord FromRow(const IntervalRow& row) {
  v1::IntervalRecord r;
  r.set_run_id(row.run_id);
  r.set_job_index(row.job_index);
  r.set_job_name(row.job_name);
  r.set_seq(row.seq);
  r.set_t_start_ms(row.t_start_ms);
  r.set_t_end_ms(row.t_end_ms);
  v1::IntervalDir* dirs[3] = {r.mutable_read(), r.mutable_write(), r.mutable_trim()};
  for (int d = 0; d < 3; ++d) {
    dirs[d]->set_ios(row.dir[d].ios);
    dirs[d]->set_bytes(row.dir[d].bytes);
    dirs[d]->set_errors(row.dir[d].errors);
    for (const auto& [b, c] : row.dir[d].clat_hist) {
      dirs[d]->add_clat_bucket(b);
      dirs[d]->add_clat_count(c);
    }
    if (row.dir[d].lat_measured) {
      dirs[d]->set_lat_measured(true);
      for (const auto& [b, c] : row.dir[d].lat_hist) {
        dirs[d]->add_lat_bucket(b);
        dirs[d]->add_lat_count(c);
      }
    }
  }
  return r;
}

InventoryFacts InventoryFactsOf(const v1::Inventory& inventory) {
  InventoryFacts f;
  google::protobuf::util::JsonPrintOptions popts;
  popts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(inventory, &f.json, popts).ok()) f.json = "{}";
  f.kernel = inventory.kernel_release();
  f.cpu_model = inventory.cpu_model();
  return f;
}

void FactsOfInventoryJson(const std::string& json, std::string* kernel, std::string* cpu_model) {
  v1::Inventory inv;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (google::protobuf::util::JsonStringToMessage(json, &inv, opts).ok()) {
    *kernel = inv.kernel_release();
    *cpu_model = inv.cpu_model();
  }
}

HelloEvent HelloEventOf(const v1::Hello& hello, uint32_t version, uint64_t session,
                        std::string peer) {
  HelloEvent e;
  e.session = session;
  e.name = hello.agent_name();
  e.instance_id = hello.instance_id();
  e.peer = std::move(peer);
  e.version = version;
  for (const auto& [k, v] : hello.labels()) e.labels[k] = v;
  e.allow_paths.assign(hello.allow_paths().begin(), hello.allow_paths().end());
  e.inventory_hash = hello.inventory_hash();
  if (hello.has_inventory() || hello.inventory_hash().empty()) {
    e.inventory = InventoryFactsOf(hello.inventory());
  }
  e.resolves_targets = hello.resolves_targets();
  e.running_runs.assign(hello.running_runs().begin(), hello.running_runs().end());
  for (const auto& [k, v] : hello.run_store_ids()) e.run_store_ids[k] = v;
  return e;
}

JobPlacement PlacementOf(const v1::JobSpec& spec) {
  JobPlacement p;
  p.job.hosts.assign(spec.hosts().begin(), spec.hosts().end());
  p.job.selector.insert(spec.selector().begin(), spec.selector().end());
  for (int i = 0; i < spec.variants_size(); ++i) {
    const v1::Variant& v = spec.variants(i);
    if (v.hosts_size() == 0 && v.selector().empty()) continue;
    ArmPlacement& a = p.variants[VariantName(spec, i)];
    a.hosts.assign(v.hosts().begin(), v.hosts().end());
    a.selector.insert(v.selector().begin(), v.selector().end());
  }
  for (const auto& [host, o] : spec.host_overrides()) p.override_hosts.insert(host);
  return p;
}

v1::ControllerMessage ToProto(const Outbound& out, const std::string& store_id, Store& store) {
  v1::ControllerMessage msg;
  if (const auto* w = std::get_if<WelcomeMsg>(&out.msg)) {
    v1::Welcome* m = msg.mutable_welcome();
    m->set_protocol_version(w->version);
    m->set_heartbeat_interval_ms(w->heartbeat_interval_ms);
    m->set_store_id(store_id);
    m->set_need_inventory(w->need_inventory);
    for (const auto& [id, clones] : w->replay_runs) {
      // The agent replays from the lowest seq any clone still misses; the store
      // drops what it already has.
      absl::StatusOr<std::map<uint32_t, uint64_t>> next = store.NextSeqs(id);
      uint64_t lowest = 0;
      if (next.ok()) {
        lowest = UINT64_MAX;
        for (uint32_t j = 0; j < std::max<uint32_t>(1, clones); ++j) {
          auto it = next->find(j);
          lowest = std::min(lowest, it == next->end() ? 0 : it->second);
        }
      }
      (*m->mutable_next_seq())[id] = lowest;
    }
  } else if (const auto* a = std::get_if<AssignMsg>(&out.msg)) {
    v1::AssignRun* m = msg.mutable_assign();
    m->set_run_id(a->run_id);
    m->set_job_id(a->job_id);
    m->set_fio_text(a->fio_text);
    for (const std::string& k : a->target_keys) m->add_target_keys(k);
  } else if (const auto* c = std::get_if<CancelMsg>(&out.msg)) {
    msg.mutable_cancel()->set_run_id(c->run_id);
  } else if (const auto* r = std::get_if<ResolveMsg>(&out.msg)) {
    v1::ResolveTargets* m = msg.mutable_resolve_targets();
    m->set_run_id(r->run_id);
    for (const std::string& p : r->paths) m->add_paths(p);
  }
  return msg;
}

absl::StatusOr<CoreInput> LoadCoreInput(Store& store) {
  CoreInput in;
  IOFLEET_ASSIGN_OR_RETURN(std::vector<AgentRow> agents, store.ListAgents());
  for (AgentRow& r : agents) {
    LoadedAgent a;
    FactsOfInventoryJson(r.inventory_json, &a.kernel, &a.cpu_model);
    a.row = std::move(r);
    in.agents.push_back(std::move(a));
  }
  IOFLEET_ASSIGN_OR_RETURN(in.active_runs, store.ListActiveRuns());
  IOFLEET_ASSIGN_OR_RETURN(in.leases, store.ListLeases());
  std::set<std::string> job_ids;
  for (const RunRow& r : in.active_runs) job_ids.insert(r.job_id);
  for (const std::string& id : job_ids) {
    absl::StatusOr<JobRow> job = store.GetJob(id);
    if (!job.ok()) {
      std::fprintf(stderr, "iofleet-controller: loading job %s: %s\n", id.c_str(),
                   job.status().ToString().c_str());
      continue;
    }
    IOFLEET_ASSIGN_OR_RETURN(std::vector<RunRow> runs, store.ListRuns(id, 0, 0));
    LoadedJob lj;
    lj.counts = CountJobRuns(runs);
    v1::JobSpec spec;
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
    if (google::protobuf::util::JsonStringToMessage(job->spec_json, &spec, opts).ok()) {
      lj.placement = PlacementOf(spec);
    }
    lj.row = std::move(*job);
    in.jobs.push_back(std::move(lj));
  }
  return in;
}

}  // namespace iofleet::controller
