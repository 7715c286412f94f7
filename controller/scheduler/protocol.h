// The edge between wire messages and the core's domain types (types.h): the
// agent protocol's messages in and out, a job's placement from its spec, and
// the state the core starts from, read from the store.
//
// Thread-safety: pure functions, except the ones taking a Store (which read
// it; Store is thread-safe).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "controller/scheduler/core.h"
#include "controller/scheduler/types.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller {

// The store row of an interval record an agent sent (the fuzz targets drive it
// with arbitrary records), and back.
IntervalRow ToRow(const v1::IntervalRecord& record);
v1::IntervalRecord FromRow(const IntervalRow& row);

// The JSON stored for an inventory, and the facts selectors use.
InventoryFacts InventoryFactsOf(const v1::Inventory& inventory);
// Kernel and CPU model of a stored inventory (empty when it does not parse).
void FactsOfInventoryJson(const std::string& json, std::string* kernel, std::string* cpu_model);

// A Hello that passed the edge's checks as the core's event (without the
// stored rows of reported runs, which the caller reads). The inventory is
// taken when the Hello carries one or has no inventory_hash.
HelloEvent HelloEventOf(const v1::Hello& hello, uint32_t version, uint64_t session,
                        std::string peer);

// Where the job's arms may run (retries, core.h).
JobPlacement PlacementOf(const v1::JobSpec& spec);

// The wire form of a decided message. Welcome gets the store's identity and,
// per run the agent may replay, the next seq the store expects (read here).
v1::ControllerMessage ToProto(const Outbound& out, const std::string& store_id, Store& store);

// What the core starts from: agents, active runs, leases, and their jobs with
// counters (each active job's runs are read once).
absl::StatusOr<CoreInput> LoadCoreInput(Store& store);

}  // namespace iofleet::controller
