#include "controller/fleet/fleet.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

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

std::string FormatUnixMs(uint64_t unix_ms) {
  if (unix_ms == 0) return "never";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(static_cast<int64_t>(unix_ms)),
                          absl::UTCTimeZone());
}

}  // namespace iofleet::controller
