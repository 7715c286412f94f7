#include "controller/store/row_codec.h"

#include "nlohmann/json.hpp"

namespace iofleet::controller::internal {

namespace {

using nlohmann::json;

json ParseJsonOr(const std::string& text, json fallback) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

}  // namespace

std::string MapToJson(const std::map<std::string, std::string>& m) { return json(m).dump(); }
std::map<std::string, std::string> MapFromJson(const std::string& text) {
  std::map<std::string, std::string> out;
  json j = ParseJsonOr(text, json::object());
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}
std::string ListToJson(const std::vector<std::string>& v) { return json(v).dump(); }
std::vector<std::string> ListFromJson(const std::string& text) {
  std::vector<std::string> out;
  json j = ParseJsonOr(text, json::array());
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}
std::string HistToJson(const std::vector<std::pair<uint32_t, uint64_t>>& h) {
  json j = json::array();
  for (const auto& [b, c] : h) j.push_back(json::array({b, c}));
  return j.dump();
}
std::vector<std::pair<uint32_t, uint64_t>> HistFromJson(const std::string& text) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  json j = ParseJsonOr(text, json::array());
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_array() && e.size() == 2 && e[0].is_number_unsigned() && e[1].is_number_unsigned()) {
      out.emplace_back(e[0].get<uint32_t>(), e[1].get<uint64_t>());
    }
  }
  return out;
}

std::string TargetIdsToJson(const std::vector<TargetIdentityRow>& ids) {
  json j = json::array();
  for (const TargetIdentityRow& t : ids) {
    j.push_back({{"path", t.path}, {"real_path", t.real_path}, {"keys", t.keys}});
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}
std::vector<TargetIdentityRow> TargetIdsFromJson(const std::string& text) {
  std::vector<TargetIdentityRow> out;
  json j = ParseJsonOr(text, json::array());
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (!e.is_object()) continue;
    TargetIdentityRow t;
    t.path = e.value("path", "");
    t.real_path = e.value("real_path", "");
    if (auto it = e.find("keys"); it != e.end() && it->is_array()) {
      for (const auto& k : *it) {
        if (k.is_string()) t.keys.push_back(k.get<std::string>());
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}
std::string SeqRangesToJson(const std::vector<SeqRangeRow>& v) {
  json j = json::array();
  for (const SeqRangeRow& r : v) j.push_back(json::array({r.job_index, r.first, r.last}));
  return j.dump();
}
std::vector<SeqRangeRow> SeqRangesFromJson(const std::string& text) {
  std::vector<SeqRangeRow> out;
  json j = ParseJsonOr(text, json::array());
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_array() && e.size() == 3 && e[0].is_number_unsigned() && e[1].is_number_unsigned() &&
        e[2].is_number_unsigned()) {
      out.push_back(SeqRangeRow{e[0].get<uint32_t>(), e[1].get<uint64_t>(), e[2].get<uint64_t>()});
    }
  }
  return out;
}

}  // namespace iofleet::controller::internal
