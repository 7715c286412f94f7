#include "controller/store/row_codec.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "nlohmann/json.hpp"

namespace iofleet::controller::internal {

namespace {

using nlohmann::json;

json ParseJsonOr(const std::string& text, json fallback) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

}  // namespace

std::string DoubleToText(double v) {
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

double DoubleFromText(const std::string& text) {
  if (text.empty() || text == "nan") return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : std::numeric_limits<double>::quiet_NaN();
}

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

namespace {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string RowJson(const AgentRow& r) {
  return Dump({{"name", r.name}, {"state", r.state}, {"last_seen_ms", r.last_seen_ms},
               {"labels", r.labels}, {"inventory_json", r.inventory_json},
               {"allow_paths", r.allow_paths}, {"protocol_version", r.protocol_version},
               {"registered_ms", r.registered_ms}, {"inventory_hash", r.inventory_hash}});
}

std::string RowJson(const JobRow& r) {
  return Dump({{"id", r.id}, {"seq", r.seq}, {"name", r.name}, {"state", r.state},
               {"created_ms", r.created_ms}, {"spec_json", r.spec_json}, {"retries", r.retries},
               {"cancel_requested", r.cancel_requested}});
}

std::string RowJson(const RunRow& r) {
  return Dump({{"id", r.id},
               {"seq", r.seq},
               {"job_id", r.job_id},
               {"queue_pos", r.queue_pos},
               {"host", r.host},
               {"targets", r.targets},
               {"targets_resolved", r.targets_resolved},
               {"target_ids", json::parse(TargetIdsToJson(r.target_ids))},
               {"state", RunStateName(r.state)},
               {"variant", r.variant},
               {"cell", r.cell},
               {"repetition", r.repetition},
               {"attempt", r.attempt},
               {"retry_of", r.retry_of},
               {"fio_text", r.fio_text},
               {"num_clones", r.num_clones},
               {"created_ms", r.created_ms},
               {"assigned_ms", r.assigned_ms},
               {"started_ms", r.started_ms},
               {"finished_ms", r.finished_ms},
               {"error", r.error},
               {"samples_incomplete", r.samples_incomplete},
               {"missing_seqs", json::parse(SeqRangesToJson(r.missing_seqs))},
               {"samples_note", r.samples_note},
               {"arm_json", r.arm_json},
               {"audit", r.audit},
               {"warmup", r.warmup}});
}

std::string RowJson(const LeaseRow& r) {
  return Dump({{"host", r.host}, {"key", r.key}, {"run_id", r.run_id},
               {"acquired_ms", r.acquired_ms}, {"path", r.path}});
}

std::string RowJson(const IntervalRow& r) {
  json dirs = json::array();
  for (const IntervalDirRow& d : r.dir) {
    dirs.push_back({{"ios", d.ios}, {"bytes", d.bytes}, {"errors", d.errors},
                    {"clat_hist", json::parse(HistToJson(d.clat_hist))},
                    {"lat_hist", d.lat_measured ? json::parse(HistToJson(d.lat_hist)) : json()}});
  }
  return Dump({{"run_id", r.run_id}, {"job_index", r.job_index}, {"job_name", r.job_name},
               {"seq", r.seq}, {"t_start_ms", r.t_start_ms}, {"t_end_ms", r.t_end_ms},
               {"dir", dirs}});
}

std::string RowJson(const ResultRow& r) {
  return Dump({{"run_id", r.run_id}, {"ok", r.ok}, {"error", r.error},
               {"result_json", r.result_json}, {"last_seq_total", r.last_seq_total},
               {"finished_ms", r.finished_ms}, {"device_fingerprint", r.device_fingerprint}});
}

}  // namespace iofleet::controller::internal
