#include "controller/scheduler/store_reads.h"

#include "common/status.h"

namespace iofleet::controller {

StoreReads::StoreReads(Store* store) : store_(store), read_(store, &view_) {}

absl::StatusOr<v1::ListAgentsResponse> StoreReads::ListAgents(const v1::ListRequest& req) {
  (void)req;  // as the read side: every agent in one answer
  IOFLEET_ASSIGN_OR_RETURN(std::vector<AgentRow> rows, store_->ListAgents());
  v1::ListAgentsResponse resp;
  for (const AgentRow& row : rows) {
    v1::Agent* a = resp.add_agents();
    a->set_name(row.name);
    a->set_state(row.state);
    a->set_last_seen_ms(row.last_seen_ms);
    for (const auto& [k, v] : row.labels) (*a->mutable_labels())[k] = v;
    a->set_inventory_json(row.inventory_json);
    a->set_protocol_version(row.protocol_version);
    for (const std::string& p : row.allow_paths) a->add_allow_paths(p);
  }
  return resp;
}

}  // namespace iofleet::controller
