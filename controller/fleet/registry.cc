#include "controller/fleet/registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace iofleet::controller {

const AgentView* FleetSnapshot::Get(const std::string& name) const {
  auto it = std::lower_bound(agents_.begin(), agents_.end(), name,
                             [](const AgentView& a, const std::string& n) { return a.s->name < n; });
  return it != agents_.end() && it->s->name == name ? &*it : nullptr;
}

std::vector<std::string> FleetSnapshot::Match(
    const std::map<std::string, std::string>& selector) const {
  std::vector<std::string> out;
  for (const AgentView& a : agents_) {
    if (SelectorMatches(selector, a.s->facts)) out.push_back(a.s->name);
  }
  return out;
}

FleetSnapshot FleetSnapshotOf(std::vector<AgentStatic> agents) {
  std::sort(agents.begin(), agents.end(),
            [](const AgentStatic& a, const AgentStatic& b) { return a.name < b.name; });
  std::vector<AgentView> out;
  for (AgentStatic& a : agents) {
    if (a.facts.labels.empty()) a.facts.labels = a.labels;
    out.push_back(AgentView{std::make_shared<const AgentStatic>(std::move(a)), false, 0, 0});
  }
  return FleetSnapshot(std::move(out));
}

void AgentRegistry::RebuildView(Agent& a, const std::string& peer, const std::string* kernel,
                                const std::string* cpu_model) {
  auto v = std::make_shared<AgentStatic>();
  v->name = a.row.name;
  v->labels = a.row.labels;
  v->inventory_json = a.row.inventory_json;
  v->inventory_hash = a.row.inventory_hash;
  v->allow_paths = a.row.allow_paths;
  v->protocol_version = a.row.protocol_version;
  v->registered_ms = a.row.registered_ms;
  v->peer = peer;
  v->facts.labels = a.row.labels;
  if (kernel != nullptr) {
    v->facts.kernel = *kernel;
    v->facts.cpu_model = *cpu_model;
  } else if (a.view != nullptr) {
    v->facts.kernel = a.view->facts.kernel;
    v->facts.cpu_model = a.view->facts.cpu_model;
  }
  a.view = std::move(v);
}

void AgentRegistry::Load(const std::vector<LoadedAgent>& rows, FleetTime now) {
  for (const LoadedAgent& l : rows) {
    const AgentRow& r = l.row;
    Agent& a = agents_[r.name];
    a.row = r;
    a.row.state = "down";  // row.last_seen_ms keeps when it was last heard of
    a.persisted_seen_ms = r.last_seen_ms;
    a.last_heard_mono_ms = now.mono_ms;  // give every agent one timeout to come back
    a.session = 0;
    RebuildView(a, "", &l.kernel, &l.cpu_model);
  }
}

absl::Status AgentRegistry::CheckNameFree(const std::string& name, const std::string& instance_id,
                                          FleetTime now, uint64_t timeout_ms) const {
  const Agent* a = Get(name);
  if (a == nullptr || !a->connected()) return absl::OkStatus();
  if (!instance_id.empty() && instance_id == a->instance_id) {
    return absl::OkStatus();  // the same agent process reconnecting
  }
  const uint64_t silent_ms =
      now.mono_ms > a->last_heard_mono_ms ? now.mono_ms - a->last_heard_mono_ms : 0;
  if (silent_ms > timeout_ms) return absl::OkStatus();  // the old session is dead
  return absl::AlreadyExistsError(absl::StrCat(
      "agent name \"", name, "\" is in use by a live session from ",
      a->view->peer.empty() ? std::string("an unknown peer") : a->view->peer,
      ", connected since ", FormatUnixMs(a->connected_ms), " (last heard ", silent_ms,
      " ms ago); give this agent another --name, or stop the other one (its name is free "
      "once it disconnects or is silent for more than the heartbeat timeout of ",
      timeout_ms, " ms)"));
}

Agent& AgentRegistry::Register(const AgentRegistration& reg, uint64_t session, FleetTime now,
                               uint64_t* replaced) {
  Agent& a = agents_[reg.name];
  *replaced = a.session;
  if (a.session != 0) by_session_.erase(a.session);
  AgentRow& row = a.row;
  if (row.name.empty()) row.registered_ms = now.wall_ms;
  row.name = reg.name;
  row.state = "up";
  row.last_seen_ms = now.wall_ms;
  row.labels = reg.labels;
  if (reg.inventory_json != nullptr) {
    row.inventory_json = *reg.inventory_json;
    row.inventory_hash = reg.inventory_hash;
  }
  if (row.inventory_json.empty()) row.inventory_json = "{}";
  row.allow_paths = reg.allow_paths;
  row.protocol_version = reg.version;
  a.session = session;
  a.instance_id = reg.instance_id;
  a.connected_ms = now.wall_ms;
  a.last_heard_mono_ms = std::max(a.last_heard_mono_ms, now.mono_ms);
  a.resolves_targets = reg.resolves_targets;
  a.foreign_runs.clear();
  by_session_[session] = reg.name;
  if (reg.inventory_json != nullptr) {
    RebuildView(a, reg.peer, &reg.inventory_kernel, &reg.inventory_cpu_model);
  } else {
    RebuildView(a, reg.peer, nullptr, nullptr);
  }
  return a;
}

void AgentRegistry::SetInventory(Agent& a, const std::string& json, const std::string& kernel,
                                 const std::string& cpu_model, const std::string& hash) {
  a.row.inventory_json = json;
  a.row.inventory_hash = hash;
  auto v = std::make_shared<AgentStatic>(*a.view);
  v->inventory_json = json;
  v->inventory_hash = hash;
  v->facts.kernel = kernel;
  v->facts.cpu_model = cpu_model;
  a.view = std::move(v);
}

Agent* AgentRegistry::Disconnect(const std::string& name, uint64_t session, FleetTime now) {
  auto it = agents_.find(name);
  if (it == agents_.end() || it->second.session != session || session == 0) return nullptr;
  Agent& a = it->second;
  by_session_.erase(a.session);
  a.session = 0;
  a.connected_ms = 0;
  a.foreign_runs.clear();
  a.resolves_targets = false;
  a.row.state = "down";
  // Shown as "down since": the later of the last message and the disconnect.
  a.row.last_seen_ms = std::max(a.row.last_seen_ms, now.wall_ms);
  RebuildView(a, "", nullptr, nullptr);
  return &a;
}

void AgentRegistry::Heard(const std::string& name, uint64_t session, uint64_t mono_ms,
                          uint64_t wall_ms) {
  auto it = agents_.find(name);
  if (it == agents_.end() || it->second.session != session || session == 0) return;
  it->second.last_heard_mono_ms = std::max(it->second.last_heard_mono_ms, mono_ms);
  if (wall_ms != 0) it->second.row.last_seen_ms = std::max(it->second.row.last_seen_ms, wall_ms);
}

void AgentRegistry::Adopt(const Agent& a) {
  Agent& mine = agents_[a.row.name];
  if (mine.session != 0) by_session_.erase(mine.session);
  mine = a;
  if (a.session != 0) by_session_[a.session] = a.row.name;
}

const Agent* AgentRegistry::Get(const std::string& name) const {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

Agent* AgentRegistry::GetMutable(const std::string& name) {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

Agent* AgentRegistry::BySession(uint64_t session) {
  auto it = by_session_.find(session);
  return it == by_session_.end() ? nullptr : GetMutable(it->second);
}

std::shared_ptr<const FleetSnapshot> AgentRegistry::Snapshot() const {
  std::vector<AgentView> out;
  out.reserve(agents_.size());
  for (const auto& [name, a] : agents_) {
    out.push_back(AgentView{a.view, a.connected(), a.row.last_seen_ms, a.connected_ms});
  }
  return std::make_shared<const FleetSnapshot>(std::move(out));
}

}  // namespace iofleet::controller
