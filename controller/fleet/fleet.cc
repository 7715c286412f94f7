#include "controller/fleet/fleet.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/util/json_util.h"

namespace iofleet::controller {

absl::StatusOr<uint32_t> NegotiateProtocolVersion(uint32_t version, uint32_t min_version) {
  if (version == 0) {
    return absl::FailedPreconditionError(
        "agent sent no protocol_version; this controller speaks protocol version " +
        std::to_string(kProtocolVersion));
  }
  if (min_version == 0 || min_version > version) min_version = version;
  const uint32_t chosen = std::min(version, kProtocolVersion);
  if (chosen < min_version || chosen < kOldestProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "unsupported protocol version: agent speaks ", min_version, "..", version,
        ", controller speaks ", kOldestProtocolVersion, "..", kProtocolVersion,
        version < kOldestProtocolVersion ? "; upgrade the agent" : "; upgrade the controller"));
  }
  return chosen;
}

bool ValueMatches(const std::string& pattern, const std::string& value) {
  if (!pattern.empty() && pattern.back() == '*') {
    return absl::StartsWith(value, absl::string_view(pattern).substr(0, pattern.size() - 1));
  }
  return pattern == value;
}

bool SelectorMatches(const std::map<std::string, std::string>& selector, const AgentFacts& facts) {
  for (const auto& [key, pattern] : selector) {
    const std::string* value = nullptr;
    if (key == "kernel") {
      value = &facts.kernel;
    } else if (key == "cpu_model") {
      value = &facts.cpu_model;
    } else {
      auto it = facts.labels.find(key);
      if (it == facts.labels.end()) return false;
      value = &it->second;
    }
    if (!ValueMatches(pattern, *value)) return false;
  }
  return true;
}

namespace {

AgentFacts FactsFromInventoryJson(const std::map<std::string, std::string>& labels,
                                  const std::string& inventory_json) {
  AgentFacts f;
  f.labels = labels;
  v1::Inventory inv;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (google::protobuf::util::JsonStringToMessage(inventory_json, &inv, opts).ok()) {
    f.kernel = inv.kernel_release();
    f.cpu_model = inv.cpu_model();
  }
  return f;
}

}  // namespace

void Fleet::Load(const std::vector<AgentRow>& rows, FleetTime now) {
  for (const AgentRow& r : rows) {
    AgentInfo& info = agents_[r.name];
    info.row = r;
    info.row.state = "down";  // row.last_seen_ms keeps when it was last heard of
    info.last_heard_mono_ms = now.mono_ms;  // give every agent one timeout to come back
    info.facts = FactsFromInventoryJson(r.labels, r.inventory_json);
    info.sender.reset();
  }
}

absl::Status Fleet::CheckNameFree(const v1::Hello& hello, FleetTime now,
                                  uint64_t timeout_ms) const {
  const AgentInfo* info = Get(hello.agent_name());
  if (info == nullptr || info->sender == nullptr) return absl::OkStatus();
  if (!hello.instance_id().empty() && hello.instance_id() == info->instance_id) {
    return absl::OkStatus();  // the same agent process reconnecting
  }
  const uint64_t silent_ms =
      now.mono_ms > info->last_heard_mono_ms ? now.mono_ms - info->last_heard_mono_ms : 0;
  if (silent_ms > timeout_ms) return absl::OkStatus();  // the old session is dead
  return absl::AlreadyExistsError(absl::StrCat(
      "agent name \"", hello.agent_name(), "\" is in use by a live session from ",
      info->peer.empty() ? std::string("an unknown peer") : info->peer, ", connected since ",
      FormatUnixMs(info->connected_ms), " (last heard ", silent_ms,
      " ms ago); give this agent another --name, or stop the other one (its name is free "
      "once it disconnects or is silent for more than the heartbeat timeout of ",
      timeout_ms, " ms)"));
}

AgentRow Fleet::Register(const v1::Hello& hello, uint32_t version,
                         std::shared_ptr<AgentSender> sender, FleetTime now,
                         std::shared_ptr<AgentSender>* replaced) {
  AgentInfo& info = agents_[hello.agent_name()];
  if (replaced) *replaced = info.sender;
  AgentRow& row = info.row;
  if (row.name.empty()) row.registered_ms = now.wall_ms;
  row.name = hello.agent_name();
  row.state = "up";
  row.last_seen_ms = now.wall_ms;
  info.last_heard_mono_ms = now.mono_ms;
  info.peer = sender ? sender->peer() : std::string();
  info.instance_id = hello.instance_id();
  info.connected_ms = now.wall_ms;
  info.foreign_runs.clear();
  row.labels.clear();
  for (const auto& [k, v] : hello.labels()) row.labels[k] = v;
  std::string inv_json;
  google::protobuf::util::JsonPrintOptions popts;
  popts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(hello.inventory(), &inv_json, popts).ok()) {
    inv_json = "{}";
  }
  row.inventory_json = inv_json;
  row.allow_paths.assign(hello.allow_paths().begin(), hello.allow_paths().end());
  row.protocol_version = version;
  info.facts.labels = row.labels;
  info.facts.kernel = hello.inventory().kernel_release();
  info.facts.cpu_model = hello.inventory().cpu_model();
  info.sender = std::move(sender);
  return row;
}

const AgentRow* Fleet::Disconnect(const std::string& name, const AgentSender* sender,
                                  FleetTime now) {
  auto it = agents_.find(name);
  if (it == agents_.end() || it->second.sender.get() != sender) return nullptr;
  AgentInfo& info = it->second;
  info.sender.reset();
  info.peer.clear();
  info.connected_ms = 0;
  info.foreign_runs.clear();
  info.row.state = "down";
  // Shown as "down since": the later of the last message and the disconnect.
  info.row.last_seen_ms = std::max(info.row.last_seen_ms, now.wall_ms);
  return &info.row;
}

void Fleet::Touch(const std::string& name, FleetTime now) {
  auto it = agents_.find(name);
  if (it != agents_.end() && it->second.sender) {
    it->second.row.last_seen_ms = now.wall_ms;
    it->second.last_heard_mono_ms = std::max(it->second.last_heard_mono_ms, now.mono_ms);
  }
}

const AgentInfo* Fleet::Get(const std::string& name) const {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

AgentInfo* Fleet::GetMutable(const std::string& name) {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

bool Fleet::Connected(const std::string& name) const {
  const AgentInfo* a = Get(name);
  return a != nullptr && a->sender != nullptr;
}

std::vector<std::string> Fleet::Silent(uint64_t mono_now_ms, uint64_t timeout_ms) const {
  std::vector<std::string> out;
  for (const auto& [name, info] : agents_) {
    if (info.last_heard_mono_ms + timeout_ms < mono_now_ms) out.push_back(name);
  }
  return out;
}

std::string FormatUnixMs(uint64_t unix_ms) {
  if (unix_ms == 0) return "never";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(static_cast<int64_t>(unix_ms)),
                          absl::UTCTimeZone());
}

std::vector<std::string> Fleet::Match(const std::map<std::string, std::string>& selector) const {
  std::vector<std::string> out;
  for (const auto& [name, info] : agents_) {
    if (SelectorMatches(selector, info.facts)) out.push_back(name);
  }
  return out;
}

}  // namespace iofleet::controller
