#include "cli/history_cmd.h"

#include <cctype>
#include <cstdio>
#include <optional>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "common/flags/flags.h"
#include "nlohmann/json.hpp"

namespace iofleet::cli {
namespace {

using nlohmann::json;

int Usage(const std::string& msg) {
  std::fprintf(stderr, "iofleet: history: %s\n(run `iofleet --help` for usage)\n", msg.c_str());
  return kExitUsage;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "iofleet: %s\n", TerminalSafe(std::string(s.message())).c_str());
  return ExitCodeFor(s);  // 4 for an unreachable controller, as every command
}

void Print(const std::string& s) { std::printf("%s\n", TerminalSafe(s, true).c_str()); }

std::string S(const json& j, const char* k) {
  auto it = j.find(k);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string Pct(const json& v) {
  return v.is_number() ? absl::StrFormat("%+.1f%%", v.get<double>()) : std::string("-");
}

// Query string of --k=v / --k v flags (only letters, digits, '_' in k); values
// percent-encoded.
std::string Encode(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

struct Parsed {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;  // filters (series, alerts); repro's output
  bool json = false;
};

// The axes `history series` filters on (controller/history/query.cc's
// SeriesAxes(), which refuses any other).
constexpr const char* kSeriesAxes[] = {"metric",    "workload", "variant", "cell",
                                       "cpu_model", "numa",     "device",  "kernel_cmdline",
                                       "branch",    "job_name"};

// Each subcommand's flags, one table (common/flags) each: series filters on
// an axis, alerts on state, metric or series, repro writes to --output, and
// every subcommand takes --json. A repeated flag keeps its last value.
void DeclareFlags(const std::string& sub, iofleet::flags::FlagSet& fs, Parsed* out) {
  auto value = [out](const std::string& name) {
    return [out, name](const std::string& v) {
      out->flags[name] = v;
      return absl::OkStatus();
    };
  };
  fs.Add({"json", "", "the API's JSON", "",
          [out](const std::string&) {
            out->json = true;
            return absl::OkStatus();
          },
          /*bare_only=*/true});
  if (sub == "series") {
    for (const char* axis : kSeriesAxes) {
      fs.Add({axis, "V", absl::StrCat("series whose ", axis, " is V"), "", value(axis)});
    }
  } else if (sub == "alerts") {
    fs.Add({"state", "S", "untriaged, acknowledged, invalid or fixed", "",
            [out](const std::string& v) {
              if (v != "untriaged" && v != "acknowledged" && v != "invalid" && v != "fixed") {
                return iofleet::flags::NotA(
                    v, "a triage state (untriaged, acknowledged, invalid, fixed)");
              }
              out->flags["state"] = v;
              return absl::OkStatus();
            }});
    fs.Add({"status", "S",
            "active, unknown, withdrawn or all (detection status; default: active and "
            "verifying)",
            "",
            [out](const std::string& v) {
              if (v != "active" && v != "unknown" && v != "withdrawn" && v != "all") {
                return iofleet::flags::NotA(
                    v, "an alert status (active, unknown, withdrawn, all)");
              }
              out->flags["status"] = v;
              return absl::OkStatus();
            }});
    fs.Add({"metric", "M", "alerts on metric M", "", value("metric")});
    fs.Add({"series", "SERIES", "alerts on one series", "", value("series")});
  } else if (sub == "repro") {
    fs.Add({"output", "FILE", "writes the bundle to FILE", "stdout", value("output")});
  }
}

// Parses the words after SUB through SUB's table; an error names the flag.
std::optional<std::string> Parse(const std::string& sub, const std::vector<std::string>& in,
                                 Parsed* out) {
  iofleet::flags::FlagSet fs(absl::StrCat("iofleet history ", sub));
  DeclareFlags(sub, fs, out);
  absl::Status s = fs.Parse(in, 0, &out->positional);
  if (s.ok()) return std::nullopt;
  return absl::StrCat(sub, ": ", s.message());
}

std::string Query(const std::map<std::string, std::string>& flags) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : flags) parts.push_back(absl::StrCat(Encode(k), "=", Encode(v)));
  return parts.empty() ? "" : absl::StrCat("?", absl::StrJoin(parts, "&"));
}

int Series(const ApiClient& api, const Parsed& p) {
  if (!p.positional.empty()) return Usage("series: no arguments expected (filters are --AXIS=V)");
  auto r = api.Get("/series" + Query(p.flags));
  if (!r.ok()) return Fail(r.status());
  if (p.json) return Print(r->dump(2)), kExitOk;
  Print(absl::StrFormat("%-16s  %-13s  %-20s  %-10s  %s", "SERIES", "METRIC", "JOB", "BRANCH",
                        "HOST CLASS"));
  for (const json& s : (*r)["series"]) {
    const json& ax = s["axes"];
    std::string job = S(ax, "job_name");
    if (!S(ax, "variant").empty()) absl::StrAppend(&job, " [", S(ax, "variant"), "]");
    if (!S(ax, "cell").empty()) absl::StrAppend(&job, " {", S(ax, "cell"), "}");
    Print(absl::StrFormat("%-16s  %-13s  %-20s  %-10s  %s | %s", S(s, "key"), S(s, "metric"), job,
                          S(ax, "branch"), S(ax, "cpu_model"), S(ax, "device")));
  }
  return kExitOk;
}

int Show(const ApiClient& api, const Parsed& p) {
  if (p.positional.size() != 1) return Usage("show: exactly one SERIES expected");
  auto r = api.Get("/series/" + Encode(p.positional[0]));
  if (!r.ok()) return Fail(r.status());
  if (p.json) return Print(r->dump(2)), kExitOk;
  Print(absl::StrCat("series ", S(*r, "key"), " (", S(*r, "metric"), ")"));
  std::vector<std::string> axes;
  for (const auto& [k, v] : (*r)["axes"].items()) axes.push_back(absl::StrCat(k, "=", S((*r)["axes"], k.c_str())));
  Print(absl::StrCat("axes: ", absl::StrJoin(axes, " ")));
  std::map<std::string, const json*> change_at;
  for (const json& c : (*r)["change_points"]) change_at[S(c, "first_after_run")] = &c;
  for (const json& pt : (*r)["points"]) {
    const std::string run = S(pt, "run_id");
    auto c = change_at.find(run);
    if (c != change_at.end()) {
      Print(absl::StrFormat("  ---- change %s: %s (%s) %s", Pct((*c->second)["change_pct"]),
                            S(*c->second, "decision"), S(*c->second, "verdict"),
                            S(*c->second, "reason")));
    }
    const json& ax = pt["axes"];
    Print(absl::StrFormat("  %-20s %-14s %14s  %s %s", run, S(ax, "host"), S(pt, "value"),
                          S(ax, "kernel_release"), ax.contains("tags") ? ax["tags"].dump() : ""));
  }
  if (!S(*r, "note").empty()) Print(absl::StrCat("note: ", S(*r, "note")));
  // Per build (builds.h): only when some build ran more than once.
  const json builds = r->value("builds", json::object());
  bool several = false;
  for (const json& g : builds.value("groups", json::array())) {
    several = several || g.value("points", 0) > 1;
  }
  if (several) {
    Print(absl::StrFormat("per %s:", S(builds, "tag")));
    Print(absl::StrFormat("  %-20s %6s %14s %14s %9s %14s %14s  %s", "BUILD", "POINTS", "MEAN",
                          "MEDIAN", "%STDDEV", "MIN", "MAX", "HOSTS"));
    auto num = [](const json& g, const char* k, bool pct) -> std::string {
      auto it = g.find(k);
      if (it == g.end() || !it->is_number()) return "-";
      const double v = it->get<double>();
      return pct ? absl::StrFormat("%.2f", v) : absl::StrFormat("%.6g", v);
    };
    for (const json& g : builds["groups"]) {
      std::vector<std::string> hosts;
      for (const json& h : g.value("hosts", json::array())) hosts.push_back(h.get<std::string>());
      Print(absl::StrFormat("  %-20s %6s %14s %14s %9s %14s %14s  %s", S(g, "value"),
                            S(g, "points"), num(g, "mean", false), num(g, "median", false),
                            num(g, "stddev_pct", true), num(g, "min", false),
                            num(g, "max", false), absl::StrJoin(hosts, ",")));
    }
  }
  Print(absl::StrCat("parameters: ", S(*r, "parameters")));
  return kExitOk;
}

int Alerts(const ApiClient& api, const Parsed& p) {
  if (!p.positional.empty()) return Usage("alerts: no arguments expected");
  auto r = api.Get("/alerts" + Query(p.flags));
  if (!r.ok()) return Fail(r.status());
  if (p.json) return Print(r->dump(2)), kExitOk;
  Print(absl::StrFormat("%-16s  %-13s  %8s  %-12s  %-9s  %-20s  %s", "ALERT", "METRIC",
                        "CHANGE", "STATE", "STATUS", "FIRST RUN", "TAGS"));
  for (const json& a : (*r)["alerts"]) {
    Print(absl::StrFormat("%-16s  %-13s  %8s  %-12s  %-9s  %-20s  %s", S(a, "id"),
                          S(a, "metric"), Pct(a["change_pct"]), S(a, "state"), S(a, "status"),
                          S(a["first_run"], "run_id"), a["first_run"]["tags"].dump()));
    // Why a withdrawn alert was withdrawn (the newest analysis' decision).
    if (S(a, "status") == "withdrawn" && a.contains("status_change") &&
        a["status_change"].is_object()) {
      const json& c = a["status_change"];
      Print(absl::StrFormat("    withdrawn at %s points (run %s): %s: %s",
                            c.contains("points") ? c["points"].dump() : std::string("?"),
                            S(c, "last_run"), S(c, "decision"), S(c, "reason")));
    }
    // A change older than the analysed part: its status is the last decided.
    if (a.contains("decision_frozen") && a["decision_frozen"].is_object()) {
      Print(absl::StrCat("    not re-checked: ", S(a["decision_frozen"], "reason")));
    }
  }
  return kExitOk;
}

int Report(const ApiClient& api, const Parsed& p) {
  if (p.positional.size() != 1) return Usage("report: exactly one ALERT expected");
  auto r = api.Get("/alerts/" + Encode(p.positional[0]));
  if (!r.ok()) return Fail(r.status());
  if (p.json) return Print(r->dump(2)), kExitOk;
  Print(S(*r, "headline"));
  Print(absl::StrCat("axes: ", S(*r, "axes_line")));
  Print(absl::StrCat("state: ", S(*r, "state"), "; verdict ", S((*r)["assessment"], "verdict"),
                     ": ", S((*r)["assessment"], "reason")));
  if (const json& f = (*r)["assessment"].value("decision_frozen", json()); f.is_object()) {
    Print(absl::StrCat("not re-checked: ", S(f, "reason")));
  }
  Print("");
  Print(S(*r, "lkp"));
  if (!(*r)["moved_with_it"].empty()) {
    Print("\nmoved with it (same job):");
    for (const json& o : (*r)["moved_with_it"]) {
      Print(absl::StrFormat("  %-16s %-13s %8s", S(o, "id"), S(o, "metric"),
                            Pct(o["change_pct"])));
    }
  }
  Print(absl::StrCat("\nrepro bundle: iofleet history repro ", S(*r, "id"), " (GET ",
                     S(*r, "repro"), ")"));
  Print(absl::StrCat("parameters: ", S(*r, "parameters")));
  return kExitOk;
}

int Triage(const ApiClient& api, const Parsed& p) {
  if (p.positional.size() != 2) return Usage("triage: ALERT STATE expected");
  auto r = api.Post("/alerts/" + Encode(p.positional[0]) + "/state",
                    json{{"state", p.positional[1]}});
  if (!r.ok()) return Fail(r.status());
  Print(absl::StrCat(S(*r, "id"), ": ", S(*r, "state")));
  return kExitOk;
}

int Repro(const ApiClient& api, const Parsed& p) {
  if (p.positional.size() != 1) return Usage("repro: exactly one ALERT expected");
  auto r = api.Get("/alerts/" + Encode(p.positional[0]) + "/repro");
  if (!r.ok()) return Fail(r.status());
  auto out = p.flags.find("output");
  if (out == p.flags.end()) return Print(r->dump(2)), kExitOk;
  std::ofstream f(out->second);
  f << r->dump(2) << "\n";
  if (!f.good()) return Fail(absl::InternalError(absl::StrCat("cannot write ", out->second)));
  return kExitOk;
}

// One run's agent telemetry (GET /runs/{id}/telemetry): a row per second, one
// block of columns per device, then the run's means.
int Telemetry(const ApiClient& api, const Parsed& p) {
  if (p.positional.size() != 1) return Usage("telemetry: exactly one RUN expected");
  auto r = api.Get("/runs/" + Encode(p.positional[0]) + "/telemetry");
  if (!r.ok()) return Fail(r.status());
  if (p.json) return Print(r->dump(2)), kExitOk;
  auto num = [](const json& j, const char* k) -> std::string {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? absl::StrFormat("%.1f", it->get<double>())
                                            : std::string("-");
  };
  std::vector<std::string> irq;
  for (const json& l : r->value("irq_lines", json::array())) {
    irq.push_back(l.is_string() ? l.get<std::string>() : l.dump());
  }
  Print(absl::StrCat("run ", S(*r, "run_id"), " on ", S(*r, "host"), ", every ",
                     S(*r, "interval_ms"), " ms; device IRQ lines: ",
                     irq.empty() ? "none matched" : absl::StrJoin(irq, ",")));
  std::vector<std::string> devices;
  const json seconds = r->value("seconds", json::array());
  if (!seconds.empty() && seconds[0].contains("devices") && seconds[0]["devices"].is_object()) {
    for (const auto& [name, d] : seconds[0]["devices"].items()) devices.push_back(name);
  }
  std::string head = absl::StrFormat("%7s", "T_S");
  for (const std::string& d : devices) {
    absl::StrAppend(&head, absl::StrFormat("  %-10.10s %6s %8s %6s", d, "UTIL%", "AWAIT_MS",
                                           "AQU"));
  }
  absl::StrAppend(&head, absl::StrFormat("  %5s %5s %5s %5s %6s %9s %9s", "USR%", "SYS%", "IRQ%",
                                         "SIRQ%", "IOWT%", "DEVIRQ/S", "CTXT/S"));
  Print(head);
  for (const json& row : seconds) {
    std::string line = absl::StrFormat("%7s", num(row, "t_s"));
    const json devs = row.value("devices", json::object());
    for (const std::string& d : devices) {
      const json one = devs.value(d, json::object());
      absl::StrAppend(&line, absl::StrFormat("  %-10s %6s %8s %6s", "", num(one, "util_pct"),
                                             num(one, "await_ms"), num(one, "aqu_sz")));
    }
    const json cpu = row.value("cpu", json::object());
    absl::StrAppend(&line, absl::StrFormat("  %5s %5s %5s %5s %6s %9s %9s", num(cpu, "usr_pct"),
                                           num(cpu, "sys_pct"), num(cpu, "irq_pct"),
                                           num(cpu, "softirq_pct"), num(cpu, "iowait_pct"),
                                           num(row, "dev_irq_s"), num(row, "ctxt_s")));
    Print(line);
  }
  const json means = r->value("means", json::object());
  if (means.is_object() && !means.empty()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : means.items()) {
      parts.push_back(v.is_number() ? absl::StrFormat("%s=%.2f", k, v.get<double>())
                                    : absl::StrCat(k, "=", v.dump()));
    }
    Print(absl::StrCat("means: ", absl::StrJoin(parts, " ")));
  }
  return kExitOk;
}

}  // namespace

int CmdHistory(const ApiClient& api, const std::vector<std::string>& args) {
  if (args.empty()) {
    return Usage("a subcommand is needed: series, show, alerts, report, triage, repro, telemetry");
  }
  const std::string sub = args[0];
  if (sub != "series" && sub != "show" && sub != "alerts" && sub != "report" && sub != "triage" &&
      sub != "repro" && sub != "telemetry") {
    return Usage(absl::StrCat("unknown subcommand \"", sub,
                              "\" (series, show, alerts, report, triage, repro, telemetry)"));
  }
  Parsed p;
  if (auto e = Parse(sub, std::vector<std::string>(args.begin() + 1, args.end()), &p)) {
    return Usage(*e);
  }
  if (sub == "series") return Series(api, p);
  if (sub == "show") return Show(api, p);
  if (sub == "alerts") return Alerts(api, p);
  if (sub == "report") return Report(api, p);
  if (sub == "triage") return Triage(api, p);
  if (sub == "telemetry") return Telemetry(api, p);
  return Repro(api, p);
}

}  // namespace iofleet::cli
