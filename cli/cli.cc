#include "cli/cli.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/format.h"
#include "cli/history_cmd.h"
#include "cli/http_client.h"

namespace iofleet::cli {
namespace {

constexpr char kUsage[] =
    "usage: iofleet [--controller=URL] [--token=TOKEN] [--ca=PEM] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  submit JOBFILE [--hosts h1,h2 | --selector k=v,...] [--repeat N] [--tag k=v]...\n"
    "                 [--name NAME] [--wait [--fail-on=WHAT] [--allow-unaudited]]\n"
    "                 [--timeout SECONDS] [--baseline tag:KEY=VALUE (with --wait)]\n"
    "  status [JOB]            jobs, or one job with its runs\n"
    "  watch JOB               live IOPS, bandwidth and p99 per run, with ETA\n"
    "  agents                  registered agents\n"
    "  runs [--job JOB]        runs (of one job)\n"
    "  result RUN [--format=json|normal]\n"
    "  cancel JOB\n"
    "  compare JOB [JOB_B] [--format=markdown|json|junit] [--fail-on=WHAT] [--allow-unaudited]\n"
    "                          a job's variants, or two jobs (A = JOB, B = JOB_B)\n"
    "  history series [--AXIS=V]... | show SERIES | alerts [--state S] [--metric M]\n"
    "          | report ALERT | triage ALERT STATE | repro ALERT [--output FILE]\n"
    "\n"
    "--controller defaults to $IOFLEET_CONTROLLER or http://127.0.0.1:7080;\n"
    "--token to $IOFLEET_TOKEN (sent as Authorization: Bearer); --ca (CA bundle that\n"
    "signed an https:// controller's certificate) to $IOFLEET_CA, else the system's.\n"
    "JOBFILE is fio job text; a .json file holds fio options as JSON, or a whole\n"
    "POST /jobs body (with \"fio\" or \"options\", plus \"variants\", \"sweep\", ...);\n"
    "'-' reads stdin.\n"
    "\n"
    "A/B verdicts (compare, submit --wait of a job with variants): every answer opens\n"
    "with \"N of M runs usable\" and why the others are not. --fail-on=WHAT picks what\n"
    "exits non-zero: regression (default), inconclusive (any row without a decided\n"
    "verdict: inconclusive, noisy, no usable data), both as regression,inconclusive,\n"
    "or none. --allow-unaudited admits runs with no arm audit on record (older runs).\n"
    "\n"
    "Exit status: 0 ok; 1 the operation failed (HTTP error, a run did not succeed,\n"
    "timeout, no comparison could be made); 2 bad usage; 3 a regression (compare\n"
    "outcome fail) with --fail-on regression; 4 an inconclusive comparison (outcome\n"
    "warn) with --fail-on inconclusive.\n";

struct FlagDef {
  const char* name;
  bool takes_value;
};

struct Args {
  std::map<std::string, std::vector<std::string>> flags;
  std::vector<std::string> positional;
  bool Has(const std::string& f) const { return flags.count(f) != 0; }
  std::string Get(const std::string& f, const std::string& def = "") const {
    auto it = flags.find(f);
    return it == flags.end() || it->second.empty() ? def : it->second.back();
  }
};

struct UsageError {
  std::string message;
};

// Parses command flags; returns an error message naming the flag.
std::optional<std::string> ParseFlags(const std::string& cmd, const std::vector<std::string>& in,
                                      const std::vector<FlagDef>& defs, Args* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& a = in[i];
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      out->positional.push_back(a);
      continue;
    }
    if (a == "--") {
      for (size_t k = i + 1; k < in.size(); ++k) out->positional.push_back(in[k]);
      break;
    }
    std::string name = a.substr(a[1] == '-' ? 2 : 1), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    const FlagDef* def = nullptr;
    for (const FlagDef& d : defs) {
      if (name == d.name) def = &d;
    }
    if (def == nullptr) return absl::StrCat("unknown flag --", name, " for `", cmd, "`");
    if (def->takes_value) {
      if (!has_value) {
        if (i + 1 >= in.size()) return absl::StrCat("flag --", name, " needs a value");
        value = in[++i];
      }
    } else if (has_value) {
      return absl::StrCat("flag --", name, " takes no value");
    }
    out->flags[name].push_back(value);
  }
  return std::nullopt;
}

int Usage(const std::string& msg) {
  fprintf(stderr, "iofleet: %s\n(run `iofleet --help` for usage)\n", msg.c_str());
  return kExitUsage;
}

int Fail(const std::string& msg) {
  fprintf(stderr, "iofleet: %s\n", TerminalSafe(msg).c_str());
  return kExitFailed;
}

int Fail(const absl::Status& s) { return Fail(std::string(s.message())); }

// JSON escapes C0 controls itself; C1 ones (e.g. CSI, U+009B) only as ASCII.
std::string Pretty(const json& j) {
  std::string out = j.dump(2, ' ', false, json::error_handler_t::replace);
  if (TerminalSafe(out, /*keep_layout=*/true) != out) {
    out = j.dump(2, ' ', true, json::error_handler_t::replace);
  }
  return out;
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string Ago(uint64_t ms) {
  if (ms == 0) return "-";
  const uint64_t now = NowMs();
  return now > ms ? FormatDuration((now - ms) / 1000) + " ago" : "now";
}

std::string RunDuration(const json& run) {
  const uint64_t s = JU64(run, {"started_ms"});
  if (s == 0) return "-";
  uint64_t e = JU64(run, {"finished_ms"});
  if (e == 0) e = NowMs();
  return e > s ? FormatDuration((e - s) / 1000) : "0s";
}

std::string RunState(const json& run) { return NormState(JStr(run, {"state", "status"})); }

std::string RunId(const json& run) { return JStr(run, {"id", "run_id"}); }

// A job's fio text, for the ETA.
std::string JobFioText(const json& job) {
  std::string t = JStr(job, {"fio", "fio_text"});
  if (t.empty()) {
    for (const char* k : {"spec", "job"}) {
      auto it = job.find(k);
      if (it != job.end() && it->is_object()) t = JStr(*it, {"fio", "fio_text"});
      if (!t.empty()) break;
    }
  }
  return t;
}

absl::StatusOr<std::string> ReadJobFile(const std::string& path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read job file \"", path, "\""));
  ss << f.rdbuf();
  return ss.str();
}

bool SamplesIncomplete(const json& run) {
  auto it = run.find("samples_incomplete");
  return it != run.end() && it->is_boolean() && it->get<bool>();
}

std::vector<std::vector<std::string>> RunRows(const json& runs) {
  std::vector<std::vector<std::string>> rows;
  for (const json& r : runs) {
    // A failed run's error, or why a queued run waits (lease held by another
    // run, targets being resolved, agent down, host not registered).
    std::string note = JStr(r, {"error"});
    if (note.size() > 100) note = note.substr(0, 97) + "...";
    const std::string waiting = JStr(r, {"waiting_for"});
    if (RunState(r) == "queued" && !waiting.empty()) note = "waiting: " + waiting;  // whole
    // '*': the run's interval records are incomplete (footnote below the table).
    rows.push_back({RunId(r), JStr(r, {"host", "agent"}), JStr(r, {"target"}),
                    RunState(r) + (SamplesIncomplete(r) ? "*" : ""), JStr(r, {"variant"}),
                    JStr(r, {"repetition"}), RunDuration(r), note});
  }
  return rows;
}

// One line per run whose interval records are not all stored (the STATE '*').
std::string SampleNotes(const json& runs, const char* prefix) {
  std::string out;
  for (const json& r : runs) {
    if (!SamplesIncomplete(r)) continue;
    absl::StrAppend(&out, prefix, "run ", TerminalSafe(RunId(r)),
                    ": samples incomplete: ", TerminalSafe(JStr(r, {"samples_note"})), "\n");
  }
  return out;
}

const std::vector<std::string> kRunHeader = {"RUN", "HOST", "TARGET", "STATE", "VARIANT",
                                             "REP", "TIME", "ERROR / WAITING FOR"};

// Outcome of a finished job: exit code and one-line reason.
struct Outcome {
  int code = kExitOk;
  std::string reason;
};

Outcome JudgeRuns(const std::string& job_id, const json& job) {
  const json& runs = JArray(job, "runs");
  Outcome o;
  if (runs.empty()) {
    const std::string js = NormState(JStr(job, {"state"}));
    if (!IsSuccess(js)) {
      o.code = kExitFailed;
      o.reason = absl::StrCat("job ", job_id, " ended ", js.empty() ? "without runs" : js);
    }
    return o;
  }
  int bad = 0;
  std::string first;
  for (const json& r : runs) {
    if (IsSuccess(RunState(r))) continue;
    ++bad;
    if (first.empty()) {
      first = absl::StrCat("run ", RunId(r), " on ", JStr(r, {"host", "agent"}), " ", RunState(r));
      const std::string err = JStr(r, {"error"});
      if (!err.empty()) absl::StrAppend(&first, ": ", err);
    }
  }
  if (bad > 0) {
    o.code = kExitFailed;
    o.reason = absl::StrCat("job ", job_id, ": ", bad, " of ", runs.size(),
                            " runs did not succeed; ", first);
  }
  return o;
}

bool AllTerminal(const json& job) {
  const json& runs = JArray(job, "runs");
  if (runs.empty()) return IsTerminal(JStr(job, {"state"}));
  for (const json& r : runs) {
    if (!IsTerminal(RunState(r))) return false;
  }
  return true;
}

// Polls GET /jobs/{id} until every run is terminal. Controller restarts are
// ridden out (up to 60 s of consecutive errors).
absl::StatusOr<json> PollUntilDone(const ApiClient& api, const std::string& id,
                                   uint64_t timeout_s, uint32_t poll_ms, bool progress) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  std::map<std::string, std::string> seen;
  for (;;) {
    auto job = api.Get("/jobs/" + id);
    if (!job.ok()) {
      if (job.status().code() == absl::StatusCode::kNotFound) return job.status();
      if (!failing_since) failing_since = std::chrono::steady_clock::now();
      if (std::chrono::steady_clock::now() - *failing_since > std::chrono::seconds(60)) {
        return job.status();
      }
    } else {
      failing_since.reset();
      if (progress) {
        for (const json& r : JArray(*job, "runs")) {
          const std::string st = RunState(r);
          std::string& prev = seen[RunId(r)];
          if (st != prev && IsTerminal(st)) {
            std::string line = absl::StrCat("run ", RunId(r), " on ", JStr(r, {"host", "agent"}),
                                            ": ", st);
            const std::string err = JStr(r, {"error"});
            if (!err.empty()) absl::StrAppend(&line, " (", err, ")");
            fprintf(stderr, "%s\n", TerminalSafe(line).c_str());
          }
          prev = st;
        }
      }
      if (AllTerminal(*job)) return job;
    }
    if (timeout_s > 0 &&
        std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
      return absl::DeadlineExceededError(
          absl::StrCat("job ", id, ": not finished after ", timeout_s, " s (--timeout)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
}

std::string CompareQuery(bool allow_unaudited, const std::string& format = "") {
  std::vector<std::string> q;
  if (!format.empty()) q.push_back("format=" + format);
  if (allow_unaudited) q.push_back("unaudited=allow");
  return q.empty() ? "" : "?" + absl::StrJoin(q, "&");
}

// The exit status a compare answer calls for under --fail-on; says why on stderr.
int GateExit(const std::string& id, const json& cmp, const FailOn& fail_on) {
  const VerdictGate gate = GateCompare(cmp, fail_on);
  if (gate == VerdictGate::kPass) return kExitOk;
  std::string why;
  for (const json& r : JArray(cmp, "outcome_reasons")) {
    if (!r.is_string()) continue;
    const std::string s = r.get<std::string>();
    const bool reg = s.rfind("regression", 0) == 0;
    if (reg == (gate == VerdictGate::kRegression)) {
      why = s;
      break;
    }
  }
  if (why.empty() && gate == VerdictGate::kRegression) {
    for (const json& row : CompareRows(cmp)) {
      if (NormState(JStr(row, {"verdict"})) != "regression") continue;
      why = absl::StrCat(JStr(row, {"metric"}), " in cell ", JStr(row, {"cell"}));
      const std::string d = JStr(row, {"delta_pct"});
      if (!d.empty()) absl::StrAppend(&why, ", delta ", d, "%");
      break;
    }
  }
  const std::string headline = CompareHeadline(cmp);
  if (gate == VerdictGate::kRegression) {
    fprintf(stderr, "iofleet: job %s: compare verdict is a regression%s%s\n", id.c_str(),
            why.empty() ? "" : ": ", TerminalSafe(why).c_str());
    return kExitRegression;
  }
  fprintf(stderr, "iofleet: job %s: compare is inconclusive (--fail-on inconclusive)%s%s%s%s\n",
          id.c_str(), why.empty() ? "" : ": ", TerminalSafe(why).c_str(),
          headline.empty() ? "" : "; ", TerminalSafe(headline).c_str());
  return kExitInconclusive;
}

// After `submit --wait`: the job's comparison, when it has one, gated by --fail-on.
int VerdictCheck(const ApiClient& api, const std::string& id, const FailOn& fail_on,
                 bool allow_unaudited) {
  auto cmp = api.Get("/jobs/" + id + "/compare" + CompareQuery(allow_unaudited));
  if (!cmp.ok()) {
    // A job without two variants has nothing to compare: nothing to gate on.
    if (cmp.status().code() == absl::StatusCode::kInvalidArgument &&
        absl::StrContains(cmp.status().message(), "(field variants)")) {
      return kExitOk;
    }
    return Fail(absl::StrCat("job ", id, ": no verdict: ", cmp.status().message()));
  }
  const std::string headline = CompareHeadline(*cmp);
  fprintf(stderr, "iofleet: job %s: %s%scompare outcome %s\n", id.c_str(),
          TerminalSafe(headline).c_str(), headline.empty() ? "" : "; ",
          TerminalSafe(JStr(*cmp, {"outcome"})).c_str());
  return GateExit(id, *cmp, fail_on);
}

// After `submit --wait --baseline tag:K=V`: the newest comparable job tagged K=V
// (GET /baseline, docs/history.md) as arm A, this job as arm B, gated like an A/B.
int BaselineCheck(const ApiClient& api, const std::string& id, const std::string& baseline,
                  const FailOn& fail_on, bool allow_unaudited) {
  std::string tag;
  for (unsigned char c : baseline.substr(4)) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      tag.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&tag, "%%%02X", c);
    }
  }
  auto base = api.Get(absl::StrCat("/baseline?job=", id, "&tag=", tag));
  if (!base.ok()) return Fail(absl::StrCat("job ", id, ": --baseline: ", base.status().message()));
  const std::string base_id = JStr(*base, {"baseline_job_id"});
  const std::string q = CompareQuery(allow_unaudited);
  auto cmp = api.Get(absl::StrCat("/compare?a=", base_id, "&b=", id, q.empty() ? "" : "&",
                                  q.empty() ? "" : q.substr(1)));
  if (!cmp.ok()) {
    return Fail(absl::StrCat("job ", id, ": no verdict against baseline ", base_id, ": ",
                             cmp.status().message()));
  }
  const std::string headline = CompareHeadline(*cmp);
  fprintf(stderr, "iofleet: job %s vs baseline %s (%s): %s%scompare outcome %s\n", id.c_str(),
          base_id.c_str(), TerminalSafe(baseline).c_str(), TerminalSafe(headline).c_str(),
          headline.empty() ? "" : "; ", TerminalSafe(JStr(*cmp, {"outcome"})).c_str());
  return GateExit(id, *cmp, fail_on);
}

// GET of a paged list ({"KEY": [...], "next_page_token": "..."}), all pages.
absl::StatusOr<json> GetAll(const ApiClient& api, const std::string& path, const char* key) {
  json all = json::array();
  std::string token;
  for (int page = 0; page < 10000; ++page) {
    std::string p = path + (path.find('?') == std::string::npos ? "?" : "&") + "page_size=1000";
    if (!token.empty()) p += "&page_token=" + token;
    auto res = api.Get(p);
    if (!res.ok()) return res.status();
    for (const json& x : JArray(*res, key)) all.push_back(x);
    token = JStr(*res, {"next_page_token"});
    if (token.empty()) break;
  }
  return all;
}

std::string RunCounts(const json& job) {
  const json& runs = JArray(job, "runs");
  if (!runs.empty()) {
    int done = 0;
    for (const json& r : runs) done += IsTerminal(RunState(r)) ? 1 : 0;
    return absl::StrCat(done, "/", runs.size());
  }
  auto it = job.find("run_counts");
  if (it == job.end() || !it->is_object()) return "-";
  std::vector<std::string> parts;
  for (auto c = it->begin(); c != it->end(); ++c) {
    parts.push_back(absl::StrCat(NormState(c.key()), ":", JU64(*it, {c.key().c_str()})));
  }
  return parts.empty() ? "0" : absl::StrJoin(parts, ",");
}

int CmdSubmit(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("submit", rest,
                          {{"hosts", true},
                           {"selector", true},
                           {"repeat", true},
                           {"tag", true},
                           {"name", true},
                           {"wait", false},
                           {"timeout", true},
                           {"poll-ms", true},
                           {"fail-on", true},
                           {"allow-unaudited", false},
                           {"baseline", true}},
                          &a)) {
    return Usage(*e);
  }
  FailOn fail_on;
  if (a.Has("fail-on")) {
    if (auto e = ParseFailOn(a.Get("fail-on"), &fail_on)) return Usage(*e);
  }
  if ((a.Has("fail-on") || a.Has("allow-unaudited")) && !a.Has("wait")) {
    return Usage("flags --fail-on and --allow-unaudited need --wait");
  }
  if (a.Has("baseline")) {
    if (!a.Has("wait")) return Usage("flag --baseline needs --wait");
    const std::string b = a.Get("baseline");
    if (b.rfind("tag:", 0) != 0 || b.find('=') == std::string::npos) {
      return Usage(absl::StrCat("flag --baseline: \"", a.Get("baseline"),
                                "\" is not tag:KEY=VALUE (e.g. tag:branch=v6.12)"));
    }
  }
  if (a.positional.size() != 1) return Usage("submit: exactly one JOBFILE expected");
  if (a.Has("hosts") && a.Has("selector")) {
    return Usage("flags --hosts and --selector are mutually exclusive");
  }
  json body = json::object();
  const std::string& path = a.positional[0];
  auto text = ReadJobFile(path);
  if (!text.ok()) return Fail(text.status());
  std::string name = a.Get("name");
  if (name.empty()) {
    name = path == "-" ? "stdin" : path.substr(path.find_last_of('/') + 1);
    if (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  }
  body["name"] = name;
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    json opts = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (opts.is_discarded() || !opts.is_object()) {
      return Fail(absl::StrCat("job file \"", path, "\" is not a JSON object"));
    }
    if (opts.contains("fio") || opts.contains("options")) {
      // A whole POST /jobs body (variants, sweep, host_overrides...); flags override.
      const std::string default_name = body["name"].get<std::string>();
      body = opts;
      if (!a.Has("name") && !body.contains("name")) body["name"] = default_name;
      if (a.Has("name")) body["name"] = a.Get("name");
    } else {
      body["options"] = opts;
    }
  } else {
    body["fio"] = *text;
  }
  if (a.Has("hosts")) {
    json hosts = json::array();
    for (absl::string_view h : absl::StrSplit(a.Get("hosts"), ',', absl::SkipEmpty())) {
      hosts.push_back(std::string(h));
    }
    if (hosts.empty()) return Usage("flag --hosts: empty host list");
    body["hosts"] = hosts;
  }
  if (a.Has("selector")) {
    json sel = json::object();
    for (absl::string_view kv : absl::StrSplit(a.Get("selector"), ',', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (eq == absl::string_view::npos || eq == 0) {
        return Usage(absl::StrCat("flag --selector: \"", kv, "\" is not key=value"));
      }
      sel[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    if (sel.empty()) return Usage("flag --selector: empty selector");
    body["selector"] = sel;
  }
  if (a.Has("repeat")) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(a.Get("repeat"), &n) || n < 1) {
      return Usage(absl::StrCat("flag --repeat: \"", a.Get("repeat"), "\" is not an integer >= 1"));
    }
    body["repeat"] = n;
  }
  if (a.Has("tag")) {
    json tags = json::object();
    for (const std::string& kv : a.flags["tag"]) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Usage(absl::StrCat("flag --tag: \"", kv, "\" is not key=value"));
      }
      tags[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    body["tags"] = tags;
  }
  uint64_t timeout_s = 0;
  if (a.Has("timeout") && !ParseDurationSeconds(a.Get("timeout"), &timeout_s)) {
    return Usage(absl::StrCat("flag --timeout: \"", a.Get("timeout"), "\" is not a duration"));
  }
  uint32_t poll_ms = 1000;
  if (a.Has("poll-ms") && (!absl::SimpleAtoi(a.Get("poll-ms"), &poll_ms) || poll_ms == 0)) {
    return Usage(absl::StrCat("flag --poll-ms: \"", a.Get("poll-ms"), "\" is not an integer >= 1"));
  }
  auto res = api.Post("/jobs", body);
  if (!res.ok()) return Fail(res.status());
  const std::string id = JStr(*res, {"id", "job_id"});
  if (id.empty()) return Fail("submit: the controller returned no job id");
  printf("%s\n", TerminalSafe(id).c_str());
  fflush(stdout);
  if (!a.Has("wait")) return kExitOk;
  auto job = PollUntilDone(api, id, timeout_s, poll_ms, /*progress=*/true);
  if (!job.ok()) return Fail(job.status());
  const Outcome o = JudgeRuns(id, *job);
  fputs(SampleNotes(JArray(*job, "runs"), "iofleet: warning: ").c_str(), stderr);
  if (o.code != kExitOk) return Fail(o.reason);
  if (a.Has("baseline")) return BaselineCheck(api, id, a.Get("baseline"), fail_on,
                                              a.Has("allow-unaudited"));
  return VerdictCheck(api, id, fail_on, a.Has("allow-unaudited"));
}

int CmdStatus(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("status", rest, {{"json", false}}, &a)) return Usage(*e);
  if (a.positional.size() > 1) return Usage("status: at most one JOB");
  if (a.positional.empty()) {
    auto jobs = GetAll(api, "/jobs", "jobs");
    if (!jobs.ok()) return Fail(jobs.status());
    if (a.Has("json")) {
      printf("%s\n", Pretty(*jobs).c_str());
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const json& j : *jobs) {
      rows.push_back({JStr(j, {"id"}), JStr(j, {"name"}), NormState(JStr(j, {"state"})),
                      RunCounts(j), Ago(JU64(j, {"created_ms"}))});
    }
    printf("%s", RenderTable({"JOB", "NAME", "STATE", "RUNS", "CREATED"}, rows).c_str());
    return kExitOk;
  }
  auto job = api.Get("/jobs/" + a.positional[0]);
  if (!job.ok()) return Fail(job.status());
  if (a.Has("json")) {
    printf("%s\n", Pretty(*job).c_str());
    return kExitOk;
  }
  printf("job %s  name=%s  state=%s  created %s\n", TerminalSafe(JStr(*job, {"id"})).c_str(),
         TerminalSafe(JStr(*job, {"name"})).c_str(),
         TerminalSafe(NormState(JStr(*job, {"state"}))).c_str(),
         Ago(JU64(*job, {"created_ms"})).c_str());
  printf("%s", RenderTable(kRunHeader, RunRows(JArray(*job, "runs"))).c_str());
  printf("%s", SampleNotes(JArray(*job, "runs"), "* ").c_str());
  return kExitOk;
}

int CmdRuns(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("runs", rest, {{"job", true}, {"json", false}}, &a)) return Usage(*e);
  if (!a.positional.empty()) return Usage("runs: unexpected argument (use --job JOB)");
  json runs = json::array();
  if (a.Has("job")) {
    auto job = api.Get("/jobs/" + a.Get("job"));  // NotFound names the job
    if (!job.ok()) return Fail(job.status());
    auto list = GetAll(api, "/runs?job_id=" + a.Get("job"), "runs");
    runs = list.ok() ? *list : JArray(*job, "runs");
  } else {
    auto list = GetAll(api, "/runs", "runs");
    if (!list.ok()) return Fail(list.status());
    runs = *list;
  }
  if (a.Has("json")) {
    printf("%s\n", Pretty(runs).c_str());
  } else {
    printf("%s", RenderTable(kRunHeader, RunRows(runs)).c_str());
    printf("%s", SampleNotes(runs, "* ").c_str());
  }
  return kExitOk;
}

int CmdAgents(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("agents", rest, {{"json", false}}, &a)) return Usage(*e);
  if (!a.positional.empty()) return Usage("agents: no arguments expected");
  auto agents = api.Get("/agents");
  if (!agents.ok()) return Fail(agents.status());
  if (a.Has("json")) {
    printf("%s\n", Pretty(*agents).c_str());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& ag : JArray(*agents, "agents")) {
    json inv = json::object();
    if (auto it = ag.find("inventory"); it != ag.end() && it->is_object()) {
      inv = *it;
    } else {
      const std::string s = JStr(ag, {"inventory_json"});
      json p = json::parse(s, nullptr, false);
      if (p.is_object()) inv = p;
    }
    std::vector<std::string> labels;
    if (auto it = ag.find("labels"); it != ag.end() && it->is_object()) {
      for (auto l = it->begin(); l != it->end(); ++l) {
        labels.push_back(l.key() + "=" + (l.value().is_string() ? l.value().get<std::string>() : ""));
      }
    }
    std::vector<std::string> engines;
    if (auto it = inv.find("engines"); it != inv.end() && it->is_array()) {
      for (const json& e : *it) {
        if (e.is_string()) engines.push_back(e.get<std::string>());
      }
    }
    rows.push_back({JStr(ag, {"name"}), JStr(ag, {"state"}),
                    JStr(inv, {"kernel_release", "kernel"}), JStr(inv, {"cpu_count"}),
                    absl::StrJoin(engines, ","), absl::StrJoin(labels, ","),
                    Ago(JU64(ag, {"last_seen_ms"}))});
  }
  printf("%s", RenderTable({"AGENT", "STATE", "KERNEL", "CPUS", "ENGINES", "LABELS", "LAST SEEN"},
                           rows)
                   .c_str());
  return kExitOk;
}

int CmdResult(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("result", rest, {{"format", true}}, &a)) return Usage(*e);
  if (a.positional.size() != 1) return Usage("result: exactly one RUN expected");
  const std::string fmt = a.Get("format", "json");
  if (fmt != "json" && fmt != "normal") {
    return Usage(absl::StrCat("flag --format: \"", fmt, "\" is not json or normal"));
  }
  auto run = api.Get("/runs/" + a.positional[0]);
  if (!run.ok()) return Fail(run.status());
  json result;
  for (const char* k : {"result", "result_json"}) {
    auto it = run->find(k);
    if (it == run->end() || it->is_null()) continue;
    if (it->is_string()) {
      result = json::parse(it->get<std::string>(), nullptr, false);
      if (result.is_discarded()) result = json();
    } else {
      result = *it;
    }
    if (!result.is_null()) break;
  }
  if (result.is_null() || (result.is_object() && result.empty())) {
    return Fail(absl::StrCat("run ", a.positional[0], " has no result (state ", RunState(*run),
                             ")"));
  }
  if (fmt == "json") {
    printf("%s\n", Pretty(result).c_str());
  } else {
    auto text = RenderResultNormal(result);
    if (!text.ok()) return Fail(absl::StrCat("run ", a.positional[0], ": ", text.status().message()));
    printf("%s", text->c_str());
    // Where the run's fio logs are (they stay on the agent: docs/logs.md);
    // on stderr, so stdout is what the agent would have printed.
    fprintf(stderr, "%s", RenderLogFiles(result).c_str());
  }
  return kExitOk;
}

int CmdCancel(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("cancel", rest, {}, &a)) return Usage(*e);
  if (a.positional.size() != 1) return Usage("cancel: exactly one JOB expected");
  auto res = api.Post("/jobs/" + a.positional[0] + "/cancel", json::object());
  if (!res.ok()) return Fail(res.status());
  const std::string st = NormState(JStr(*res, {"state"}));
  printf("job %s: cancel requested%s\n", TerminalSafe(a.positional[0]).c_str(),
         st.empty() ? "" : TerminalSafe(" (state " + st + ")").c_str());
  return kExitOk;
}

int CmdCompare(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("compare", rest,
                          {{"format", true}, {"fail-on", true}, {"allow-unaudited", false}}, &a)) {
    return Usage(*e);
  }
  if (a.positional.size() != 1 && a.positional.size() != 2) {
    return Usage("compare: JOB (its variants), or JOB_A JOB_B (two jobs) expected");
  }
  const std::string fmt = a.Get("format", "markdown");
  if (fmt != "markdown" && fmt != "json" && fmt != "junit") {
    return Usage(absl::StrCat("flag --format: \"", fmt, "\" is not markdown, json or junit"));
  }
  FailOn fail_on;
  if (a.Has("fail-on")) {
    if (auto e = ParseFailOn(a.Get("fail-on"), &fail_on)) return Usage(*e);
  }
  const bool allow = a.Has("allow-unaudited");
  // Two jobs: GET /compare?a=&b= (arms A and B are the jobs).
  const bool two = a.positional.size() == 2;
  const std::string id = two ? a.positional[0] + " vs " + a.positional[1] : a.positional[0];
  auto path = [&](const std::string& q) {
    return two ? absl::StrCat("/compare?a=", a.positional[0], "&b=", a.positional[1],
                              q.empty() ? "" : "&", q.empty() ? "" : q.substr(1))
               : absl::StrCat("/jobs/", id, "/compare", q);
  };
  // The controller renders all three formats (?format=), each opening with the
  // usable-runs headline; the exit status needs the JSON's outcome.
  std::string content_type;
  auto body = api.GetRaw(path(CompareQuery(allow, fmt)), &content_type);
  if (!body.ok()) return Fail(body.status());
  json cmp;
  if (content_type.find("json") != std::string::npos) {
    cmp = json::parse(*body, nullptr, /*allow_exceptions=*/false);
    if (cmp.is_discarded()) return Fail("compare: response is not JSON");
  }
  if (fmt == "json") {
    // As served: "headline" and "usable" first.
    printf("%s", body->c_str());
    if (!body->empty() && body->back() != '\n') printf("\n");
  } else if (cmp.is_null()) {
    printf("%s", TerminalSafe(*body, /*keep_layout=*/true).c_str());
    if (!body->empty() && body->back() != '\n') printf("\n");
    auto j = api.Get(path(CompareQuery(allow)));
    if (!j.ok()) return Fail(j.status());
    cmp = *j;
  } else {
    // An older controller answered JSON to a markdown/junit request: render here.
    const std::string headline = CompareHeadline(cmp);
    if (!headline.empty() && fmt == "markdown") {
      printf("%s\n\n", TerminalSafe(headline).c_str());
    }
    printf("%s", TerminalSafe(fmt == "junit" ? RenderCompareJunit(cmp, id)
                                             : RenderCompareMarkdown(cmp),
                              /*keep_layout=*/true)
                     .c_str());
  }
  fflush(stdout);
  return GateExit(id, cmp, fail_on);
}

int CmdWatch(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("watch", rest, {{"interval-ms", true}}, &a)) return Usage(*e);
  if (a.positional.size() != 1) return Usage("watch: exactly one JOB expected");
  uint32_t every_ms = 1000;
  if (a.Has("interval-ms") && (!absl::SimpleAtoi(a.Get("interval-ms"), &every_ms) || every_ms == 0)) {
    return Usage(absl::StrCat("flag --interval-ms: \"", a.Get("interval-ms"),
                              "\" is not an integer >= 1"));
  }
  const std::string& id = a.positional[0];
  const bool tty = isatty(STDOUT_FILENO) == 1;
  int drawn = 0;
  std::map<std::string, WindowStats> final_stats;  // terminal runs: fetched once
  std::map<std::string, uint64_t> printed_seq;      // non-tty: print on change only
  uint64_t est = 0;
  bool est_known = false;
  int failures = 0;
  for (;;) {
    auto job = api.Get("/jobs/" + id);
    if (!job.ok()) {
      if (job.status().code() == absl::StatusCode::kNotFound || ++failures > 60) {
        return Fail(job.status());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
      continue;
    }
    failures = 0;
    if (!est_known) {
      est = EstimateRuntimeSeconds(JobFioText(*job));
      est_known = true;
    }
    const json& runs = JArray(*job, "runs");
    const uint64_t now = NowMs();
    std::vector<std::vector<std::string>> rows;
    uint64_t eta = 0;
    bool eta_known = est > 0;
    size_t queued = 0;
    bool changed = false;
    for (const json& r : runs) {
      const std::string rid = RunId(r), st = RunState(r);
      WindowStats w;
      if (auto it = final_stats.find(rid); it != final_stats.end()) {
        w = it->second;
      } else if (st != "queued" && st != "assigned") {
        auto samples = api.Get("/runs/" + rid + "/samples");
        if (samples.ok()) w = LatestWindow(*samples);
        if (IsTerminal(st)) final_stats[rid] = w;
      }
      if (st == "queued" || st == "assigned") ++queued;
      if (st == "running" && est > 0) {
        const uint64_t started = JU64(r, {"started_ms"});
        const uint64_t end = (started ? started : now) + est * 1000;
        eta = std::max(eta, end > now ? (end - now) / 1000 : 0);
      }
      if (printed_seq[rid] != w.seq + 1 + (IsTerminal(st) ? 1u << 30 : 0)) changed = true;
      printed_seq[rid] = w.seq + 1 + (IsTerminal(st) ? 1u << 30 : 0);
      rows.push_back({rid, JStr(r, {"host", "agent"}), st,
                      w.valid ? FormatCount(w.iops) : "-",
                      w.valid ? FormatBytesPerSec(w.bytes_per_s) : "-",
                      w.valid && w.p99_ns ? FormatNs(w.p99_ns) : "-",
                      w.valid ? std::to_string(w.records) : "0"});
    }
    if (eta_known && queued > 0) eta += est * queued;  // pessimistic: one after another
    const bool done = AllTerminal(*job);
    std::string head = absl::StrCat("job ", TerminalSafe(id), " (", TerminalSafe(JStr(*job, {"name"})),
                                    ")  ", TerminalSafe(NormState(JStr(*job, {"state"}))));
    if (!done) absl::StrAppend(&head, "  ETA ", eta_known ? FormatDuration(eta) : "?");
    std::string table = RenderTable({"RUN", "HOST", "STATE", "IOPS", "BW", "P99", "SAMPLES"}, rows);
    std::string block = head + "\n" + table;
    if (tty) {
      std::string out;
      if (drawn > 0) out += absl::StrCat("\x1b[", drawn, "A");
      int lines = 0;
      for (absl::string_view l : absl::StrSplit(block, '\n', absl::SkipEmpty())) {
        out += "\x1b[2K";
        out.append(l.data(), l.size());
        out += "\n";
        ++lines;
      }
      for (int i = lines; i < drawn; ++i) out += "\x1b[2K\n";
      if (drawn > lines) out += absl::StrCat("\x1b[", drawn - lines, "A");
      drawn = lines;
      fputs(out.c_str(), stdout);
      fflush(stdout);
    } else if (changed || done) {
      printf("%s\n", block.c_str());
      fflush(stdout);
    }
    if (done) {
      const Outcome o = JudgeRuns(id, *job);
      if (o.code != kExitOk) return Fail(o.reason);
      return kExitOk;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
  }
}

}  // namespace

int CliMain(int argc, char** argv) {
  std::string controller;
  if (const char* env = getenv("IOFLEET_CONTROLLER"); env != nullptr && *env) controller = env;
  if (controller.empty()) controller = "http://127.0.0.1:7080";
  std::string token;
  if (const char* env = getenv("IOFLEET_TOKEN"); env != nullptr) token = env;
  std::string ca;
  if (const char* env = getenv("IOFLEET_CA"); env != nullptr) ca = env;
  std::string cmd;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // Global flags are accepted before or after the command.
    if (a == "--controller" || a == "--token" || a == "--ca") {
      if (i + 1 >= argc) return Usage(absl::StrCat("flag ", a, " needs a value"));
      (a == "--controller" ? controller : a == "--token" ? token : ca) = argv[++i];
      continue;
    }
    if (a.rfind("--ca=", 0) == 0) {
      ca = a.substr(5);
      continue;
    }
    if (a.rfind("--controller=", 0) == 0) {
      controller = a.substr(13);
      continue;
    }
    if (a.rfind("--token=", 0) == 0) {
      token = a.substr(8);
      continue;
    }
    if (cmd.empty()) {
      if (a == "-h" || a == "--help" || a == "help") {
        fputs(kUsage, stdout);
        return kExitOk;
      }
      if (a == "--version") {
        printf("iofleet 0.1.0\n");
        return kExitOk;
      }
      if (a.rfind("-", 0) == 0) return Usage(absl::StrCat("unknown global flag ", a));
      cmd = a;
      continue;
    }
    rest.push_back(a);
  }
  if (cmd.empty()) {
    fputs(kUsage, stderr);
    return kExitUsage;
  }
  for (const std::string& r : rest) {
    if (r == "-h" || r == "--help") {
      fputs(kUsage, stdout);
      return kExitOk;
    }
  }
  auto url = NormalizeControllerUrl(controller);
  if (!url.ok()) return Usage(std::string(url.status().message()));
  ApiClient api(*url, token);
  if (!ca.empty()) {
    if (url->rfind("https://", 0) != 0) return Usage("--ca needs an https:// --controller URL");
    api.set_ca_file(ca);
  }
  if (cmd == "submit") return CmdSubmit(api, rest);
  if (cmd == "status") return CmdStatus(api, rest);
  if (cmd == "watch") return CmdWatch(api, rest);
  if (cmd == "agents") return CmdAgents(api, rest);
  if (cmd == "runs") return CmdRuns(api, rest);
  if (cmd == "result") return CmdResult(api, rest);
  if (cmd == "cancel") return CmdCancel(api, rest);
  if (cmd == "compare") return CmdCompare(api, rest);
  if (cmd == "history") return CmdHistory(api, rest);
  return Usage(absl::StrCat("unknown command \"", cmd, "\""));
}

}  // namespace iofleet::cli
