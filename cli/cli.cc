#include "cli/cli.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
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
#include "cli/watch_view.h"
#include "common/flags/flags.h"
#include "common/secrets/secrets.h"

namespace iofleet::cli {
namespace {

constexpr char kUsageHead[] =
    "usage: iofleet [--controller=URL] [--token=TOKEN | --token-file=FILE] [--ca=PEM]\n"
    "               [--cert=PEM --key=PEM] COMMAND [ARGS]\n"
    "\n"
    "commands (`iofleet help COMMAND` or `iofleet COMMAND --help` for each):\n"
    "  submit JOBFILE [--wait]  submit a job (fio job file or JSON), optionally wait\n"
    "  status [JOB]             jobs newest first with run counts, or one job's runs\n"
    "  watch JOB                live IOPS, bandwidth and p99 per run, with ETA\n"
    "  agents                   registered agents\n"
    "  runs [--job JOB]         runs (of one job)\n"
    "  result RUN               a run's fio result (--format=json|normal)\n"
    "  logs RUN [NAME]          a run's fio log files (--type=lat|clat|slat|bw|iops)\n"
    "  cancel JOB               cancel a job's queued and running runs\n"
    "  compare JOB [JOB_B]      A/B (or sweep) verdicts of a job's variants, or two jobs\n"
    "  history ...              regression series, alerts, reports, triage, repro\n"
    "\n"
    "global flags, before or after the command:\n";

constexpr char kUsageTail[] =
    "\n"
    "List commands (status, runs, agents) take -o json (the API's JSON) or -o wide.\n"
    "\n"
    "Exit status, the same for every command:\n"
    "  0  ok\n"
    "  1  the operation or a run failed (the controller's error, a run that did\n"
    "     not succeed, no comparison could be made)\n"
    "  2  bad usage (the message names the flag)\n"
    "  3  a regression verdict (compare outcome fail) under --fail-on regression\n"
    "  4  the controller is unreachable, unavailable (HTTP 503) or did not answer\n"
    "     in time, or submit --wait --timeout passed\n"
    "  5  an inconclusive comparison (outcome warn) under --fail-on inconclusive\n";

constexpr char kFailOnHelp[] =
    "A/B verdicts: every answer opens with \"N of M runs usable\" and why the others\n"
    "are not. --fail-on=WHAT picks what exits non-zero: regression (default, exit 3),\n"
    "inconclusive (any row without a decided verdict: inconclusive, noisy, no usable\n"
    "data; exit 5), both as regression,inconclusive, or none. --allow-unaudited admits\n"
    "runs with no arm audit on record (older runs).\n";

// The global flags: one table (common/flags), read wherever they stand on
// the line; the values are checked here, the environment's after parsing.
struct GlobalFlags {
  std::string controller, token, token_file, ca, cert, key;
  bool token_flag = false, token_file_flag = false;
};

void DeclareGlobalFlags(iofleet::flags::FlagSet& fs, GlobalFlags* g) {
  auto store = [](std::string* out, bool* given = nullptr) {
    return [out, given](const std::string& v) {
      *out = v;
      if (given != nullptr) *given = true;
      return absl::OkStatus();
    };
  };
  fs.Add({"controller", "URL", "the controller's REST API, http[s]://HOST:PORT\n($IOFLEET_CONTROLLER)",
          "http://127.0.0.1:7080", [g](const std::string& v) {
            // Its errors name --controller and the value.
            if (absl::Status s = NormalizeControllerUrl(v).status(); !s.ok()) return s;
            g->controller = v;
            return absl::OkStatus();
          }});
  fs.Add({"token", "TOKEN", "API token, sent as Authorization: Bearer ($IOFLEET_TOKEN)", "",
          [g](const std::string& v) {
            // Names --token, never echoing the secret.
            if (absl::Status s = secrets::CheckToken(v, "token"); !s.ok()) return s;
            g->token = v;
            g->token_flag = true;
            return absl::OkStatus();
          }});
  fs.Add({"token-file", "FILE",
          "reads the token from FILE, mode 0600, not with --token\n($IOFLEET_TOKEN_FILE)", "",
          store(&g->token_file, &g->token_file_flag)});
  fs.Add({"ca", "PEM",
          "CA bundle that signed an https:// controller's certificate\n"
          "($IOFLEET_CA; default: the system's)",
          "", store(&g->ca)});
  fs.Add({"cert", "PEM",
          "client certificate, with --key, for a REST port that requires\n"
          "mutual TLS ($IOFLEET_CERT)",
          "", store(&g->cert)});
  fs.Add({"key", "PEM", "the client certificate's private key ($IOFLEET_KEY)", "", store(&g->key)});
}

std::string UsageText() {
  GlobalFlags unused;
  iofleet::flags::FlagSet fs("iofleet");
  DeclareGlobalFlags(fs, &unused);
  return fs.Help(kUsageHead) + kUsageTail;
}

struct CommandHelp {
  const char* name;
  const char* text;
};

const CommandHelp kCommandHelp[] = {
    {"submit",
     "usage: iofleet submit JOBFILE [--hosts h1,h2 | --selector k=v,...] [--repeat N]\n"
     "                      [--tag k=v]... [--name NAME]\n"
     "                      [--wait [--timeout DURATION] [--poll-ms MS]\n"
     "                              [--fail-on=WHAT] [--allow-unaudited]\n"
     "                              [--baseline tag:KEY=VALUE]]\n"
     "\n"
     "Submits JOBFILE and prints the job id. JOBFILE is fio job text; a .json file\n"
     "holds fio options as JSON, or a whole POST /jobs body (with \"fio\" or\n"
     "\"options\", plus \"variants\", \"sweep\", ...); '-' reads stdin.\n"
     "--wait polls until every run ended: on a terminal it shows the live progress\n"
     "of `iofleet watch` and a summary at the end; otherwise it prints one line\n"
     "per finished run on stderr. --timeout (30, 90s, 2m, 1h) gives up (exit 4).\n"
     "Exit: 0 all runs succeeded (and no gated verdict), 1 a run failed,\n"
     "3 regression, 4 unreachable or timeout, 5 inconclusive.\n"},
    {"status",
     "usage: iofleet status [JOB] [--limit N] [--name TEXT] [--tag k=v]... [--state S]\n"
     "                      [-o json|wide]\n"
     "\n"
     "Without JOB: jobs newest first, with their run counts (queued, running, done,\n"
     "failed) and variants/sweep; --limit N (default 20, 0 = all), --name (jobs whose\n"
     "name contains TEXT), --tag k=v (all given tags match), --state (queued, running,\n"
     "succeeded, failed, cancelled) are applied by the controller.\n"
     "With JOB: the job and every run (host, target, state, variant, cell, time,\n"
     "error or why a queued run waits).\n"},
    {"watch",
     "usage: iofleet watch JOB [--interval-ms MS]\n"
     "\n"
     "Live view of a job until it ends: per run IOPS, bandwidth and p99 of the last\n"
     "interval, then each finished run's final result; ETA across hosts. Redraws in\n"
     "place on a terminal; prints a block on each change otherwise.\n"
     "Exit: 0 all runs succeeded, 1 a run failed, 4 unreachable.\n"},
    {"agents",
     "usage: iofleet agents [-o json|wide]\n"
     "\n"
     "Registered agents: state, kernel, CPUs, engines, labels, last heartbeat;\n"
     "-o wide adds CPU model, NUMA nodes, devices, peer and protocol version.\n"},
    {"runs",
     "usage: iofleet runs [--job JOB] [--state S] [-o json|wide]\n"
     "\n"
     "Runs (of one job), oldest first; -o wide adds job, cell, attempt and audit.\n"},
    {"result",
     "usage: iofleet result RUN [--format=json|normal]\n"
     "\n"
     "A finished run's result: fio's JSON (default), or fio's normal text output as\n"
     "the agent prints it (--format=normal), disk stats included. Where the run's\n"
     "fio log files are goes to stderr.\n"},
    {"logs",
     "usage: iofleet logs RUN [NAME | --type=lat|clat|slat|bw|iops|clat_hist] [-o json]\n"
     "\n"
     "A run's fio log files (write_lat_log, write_bw_log, ...), as its agent uploaded\n"
     "them to the controller after the run. Without NAME or --type: the list (name,\n"
     "type, size on the agent, bytes the controller holds). With NAME: that file on\n"
     "stdout. With --type: every file of that type on stdout, each announced on\n"
     "stderr (==> NAME <==). The controller keeps at most 8 MiB of one file and\n"
     "32 MiB of one run's files, cut at a line end; a cut file is said on stderr,\n"
     "with where the whole file is on the agent's host.\n"
     "Exit: 0 ok, 1 no such run or log, 2 bad usage, 4 unreachable.\n"},
    {"cancel",
     "usage: iofleet cancel JOB\n"
     "\n"
     "Cancels the job's queued and running runs (exit 1 when it already ended).\n"},
    {"compare",
     "usage: iofleet compare JOB [JOB_B] [--format=markdown|json|junit] [--fail-on=WHAT]\n"
     "                       [--allow-unaudited] [--require-steady-state]\n"
     "\n"
     "The job's A/B (or sweep) comparison table with verdicts; with JOB_B, the two\n"
     "jobs compared (A = JOB, B = JOB_B). --require-steady-state excludes runs of a\n"
     "steadystate= job that did not attain steady state (default: used, flagged).\n"},
    {"history",
     "usage: iofleet history series [--AXIS=V]... | show SERIES\n"
     "                       | alerts [--state S] [--metric M] | report ALERT\n"
     "                       | triage ALERT STATE | repro ALERT [--output FILE]\n"
     "                       | telemetry RUN\n"
     "\n"
     "Regression tracking: the series runs feed, their points, alerts and their\n"
     "triage, an alert's report and its reproduction bundle; a run's agent\n"
     "telemetry second by second (disk util/await/queue, CPU, device IRQs).\n"},
};

const char* CommandHelpText(const std::string& cmd) {
  for (const CommandHelp& h : kCommandHelp) {
    if (cmd == h.name) return h.text;
  }
  return nullptr;
}

int PrintHelp(const std::string& cmd) {
  const char* t = CommandHelpText(cmd);
  if (t == nullptr) {
    fprintf(stderr, "iofleet: no command \"%s\"\n%s", cmd.c_str(), UsageText().c_str());
    return kExitUsage;
  }
  fputs(t, stdout);
  if (cmd == "submit" || cmd == "compare") printf("\n%s", kFailOnHelp);
  printf("\nGlobal flags and exit codes: iofleet --help\n");
  return kExitOk;
}

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

// Parses command flags through the binaries' one flag parser (common/flags):
// the command's table, values kept per flag in order; a switch takes no
// value. Returns an error message naming the flag.
std::optional<std::string> ParseFlags(const std::string& cmd, const std::vector<std::string>& in,
                                      const std::vector<FlagDef>& defs, Args* out) {
  iofleet::flags::FlagSet fs(absl::StrCat("iofleet ", cmd));
  for (const FlagDef& d : defs) {
    const std::string name = d.name;
    if (d.takes_value) {
      fs.Add({name, "VALUE", "", "", [out, name](const std::string& v) {
                out->flags[name].push_back(v);
                return absl::OkStatus();
              }});
    } else {
      fs.Add({name, "", "", "",
              [out, name](const std::string&) {
                out->flags[name].push_back("");
                return absl::OkStatus();
              },
              /*bare_only=*/true});
    }
  }
  absl::Status s = fs.Parse(in, 0, &out->positional);
  if (s.ok()) return std::nullopt;
  if (absl::IsNotFound(s)) return absl::StrCat(s.message(), " for `", cmd, "`");
  return std::string(s.message());
}

std::string g_cmd;  // the command being run, for usage hints

int Usage(const std::string& msg) {
  fprintf(stderr, "iofleet: %s\n(run `iofleet %s--help` for usage)\n", msg.c_str(),
          CommandHelpText(g_cmd) != nullptr ? (g_cmd + " ").c_str() : "");
  return kExitUsage;
}

int Fail(const std::string& msg, int code = kExitFailed) {
  fprintf(stderr, "iofleet: %s\n", TerminalSafe(msg).c_str());
  return code;
}

int Fail(const absl::Status& s) { return Fail(std::string(s.message()), ExitCodeFor(s)); }

// A failed call's status with context in front, keeping its code (and so its exit code).
absl::Status Context(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// -o / --output (and the older --json): "table", "json" or "wide".
enum class OutMode { kTable, kJson, kWide };
std::optional<std::string> ParseOutMode(const Args& a, OutMode* out) {
  *out = a.Has("json") ? OutMode::kJson : OutMode::kTable;
  for (const char* f : {"o", "output"}) {
    if (!a.Has(f)) continue;
    const std::string v = a.Get(f);
    if (v == "json") {
      *out = OutMode::kJson;
    } else if (v == "wide") {
      *out = OutMode::kWide;
    } else if (v == "table") {
      *out = OutMode::kTable;
    } else {
      return absl::StrCat("flag -", std::string(f).size() > 1 ? "-" : "", f, ": \"", v,
                          "\" is not json, wide or table");
    }
  }
  return std::nullopt;
}

// The flags every list command takes.
void AddOutputFlags(std::vector<FlagDef>* defs) {
  defs->push_back({"json", false});
  defs->push_back({"o", true});
  defs->push_back({"output", true});
}

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

// A host's warm-up run (docs/ab-method.md "The first run"): REP says "warm-up".
bool Warmup(const json& run) {
  auto it = run.find("warmup");
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
                    Warmup(r) ? "warm-up" : JStr(r, {"repetition"}), RunDuration(r), note});
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
    return Fail(Context(cmp.status(), absl::StrCat("job ", id, ": no verdict: ")));
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

// The final job and its view (WatchLoop, below).
struct Watched {
  json job;
  WatchView view;
};
absl::StatusOr<Watched> WatchLoop(const ApiClient& api, const std::string& id, uint32_t every_ms,
                                  bool tty, bool print_changes, uint64_t timeout_s);

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
  absl::StatusOr<json> job;
  if (isatty(STDOUT_FILENO) == 1) {
    // The live view of `iofleet watch`, then a summary of every run.
    auto w = WatchLoop(api, id, poll_ms, /*tty=*/true, /*print_changes=*/false, timeout_s);
    if (w.ok()) {
      printf("%s", RenderWatchSummary(w->view).c_str());
      job = std::move(w->job);
    } else {
      job = w.status();
    }
  } else {
    job = PollUntilDone(api, id, timeout_s, poll_ms, /*progress=*/true);
  }
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
  std::vector<FlagDef> defs = {{"limit", true}, {"name", true}, {"tag", true}, {"state", true}};
  AddOutputFlags(&defs);
  if (auto e = ParseFlags("status", rest, defs, &a)) return Usage(*e);
  OutMode mode;
  if (auto e = ParseOutMode(a, &mode)) return Usage(*e);
  if (a.positional.size() > 1) return Usage("status: at most one JOB");
  if (a.positional.empty()) {
    uint32_t limit = 20;
    if (a.Has("limit") && !absl::SimpleAtoi(a.Get("limit"), &limit)) {
      return Usage(absl::StrCat("flag --limit: \"", a.Get("limit"), "\" is not an integer >= 0"));
    }
    std::vector<std::pair<std::string, std::string>> query = {{"order", "newest"}};
    if (a.Has("name")) query.push_back({"name", a.Get("name")});
    if (a.Has("state")) {
      const std::string st = a.Get("state");
      if (st != "queued" && st != "running" && st != "succeeded" && st != "failed" &&
          st != "cancelled") {
        return Usage(absl::StrCat("flag --state: \"", st,
                                  "\" is not queued, running, succeeded, failed or cancelled"));
      }
      query.push_back({"state", st});
    }
    auto tags = a.flags.find("tag");
    if (tags != a.flags.end()) {
      for (const std::string& kv : tags->second) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
          return Usage(absl::StrCat("flag --tag: \"", kv, "\" is not key=value"));
        }
        query.push_back({"tag", kv});
      }
    }
    // The controller filters, orders and limits: a large store is not paged
    // through in full for the newest 20.
    absl::StatusOr<json> jobs;
    if (limit == 0) {
      jobs = GetAll(api, "/jobs" + BuildQuery(query), "jobs");
    } else {
      query.push_back({"page_size", std::to_string(limit)});
      auto page = api.Get("/jobs" + BuildQuery(query));
      if (page.ok()) {
        json list = json::array();
        for (const json& j : JArray(*page, "jobs")) {
          if (list.size() < limit) list.push_back(j);
        }
        jobs = std::move(list);
      } else {
        jobs = page.status();
      }
    }
    if (!jobs.ok()) return Fail(jobs.status());
    if (mode == OutMode::kJson) {
      printf("%s\n", Pretty(*jobs).c_str());
      return kExitOk;
    }
    std::vector<std::string> header = {"JOB",    "NAME",   "STATE",   "QUEUED", "RUNNING",
                                       "DONE",   "FAILED", "VARIANTS/SWEEP", "CREATED"};
    if (mode == OutMode::kWide) {
      header.insert(header.end() - 1, {"CANCELLED", "TAGS"});
    }
    std::vector<std::vector<std::string>> rows;
    for (const json& j : *jobs) {
      const RunTally t = TallyRuns(j);
      auto n = [&](uint64_t v) { return t.known ? std::to_string(v) : std::string("-"); };
      std::vector<std::string> row = {JStr(j, {"id"}),    JStr(j, {"name"}),
                                      NormState(JStr(j, {"state"})),
                                      n(t.queued),        n(t.running),
                                      n(t.done),          n(t.failed),
                                      ArmsSummary(j),     Ago(JU64(j, {"created_ms"}))};
      if (mode == OutMode::kWide) {
        std::vector<std::string> tags;
        if (auto it = j.find("tags"); it != j.end() && it->is_object()) {
          for (auto kv = it->begin(); kv != it->end(); ++kv) {
            tags.push_back(kv.key() + "=" + (kv->is_string() ? kv->get<std::string>() : kv->dump()));
          }
        }
        row.insert(row.end() - 1, {n(t.cancelled), absl::StrJoin(tags, ",")});
      }
      rows.push_back(std::move(row));
    }
    printf("%s", RenderTable(header, rows).c_str());
    return kExitOk;
  }
  auto job = api.Get("/jobs/" + a.positional[0]);
  if (!job.ok()) return Fail(job.status());
  if (mode == OutMode::kJson) {
    printf("%s\n", Pretty(*job).c_str());
    return kExitOk;
  }
  const RunTally t = TallyRuns(*job);
  printf("job %s  name=%s  state=%s  created %s  runs: %llu queued, %llu running, %llu done, "
         "%llu failed, %llu cancelled\n",
         TerminalSafe(JStr(*job, {"id"})).c_str(), TerminalSafe(JStr(*job, {"name"})).c_str(),
         TerminalSafe(NormState(JStr(*job, {"state"}))).c_str(),
         Ago(JU64(*job, {"created_ms"})).c_str(), static_cast<unsigned long long>(t.queued),
         static_cast<unsigned long long>(t.running), static_cast<unsigned long long>(t.done),
         static_cast<unsigned long long>(t.failed), static_cast<unsigned long long>(t.cancelled));
  printf("%s", RenderTable(kRunHeader, RunRows(JArray(*job, "runs"))).c_str());
  printf("%s", SampleNotes(JArray(*job, "runs"), "* ").c_str());
  return kExitOk;
}

int CmdRuns(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  std::vector<FlagDef> defs = {{"job", true}, {"state", true}};
  AddOutputFlags(&defs);
  if (auto e = ParseFlags("runs", rest, defs, &a)) return Usage(*e);
  OutMode mode;
  if (auto e = ParseOutMode(a, &mode)) return Usage(*e);
  if (!a.positional.empty()) return Usage("runs: unexpected argument (use --job JOB)");
  std::vector<std::pair<std::string, std::string>> query;
  if (a.Has("job")) query.push_back({"job_id", a.Get("job")});
  if (a.Has("state")) query.push_back({"state", a.Get("state")});
  json runs = json::array();
  if (a.Has("job")) {
    auto job = api.Get("/jobs/" + UrlEncode(a.Get("job")));  // NotFound names the job
    if (!job.ok()) return Fail(job.status());
  }
  auto list = GetAll(api, "/runs" + BuildQuery(query), "runs");
  if (!list.ok()) return Fail(list.status());
  runs = *list;
  if (mode == OutMode::kJson) {
    printf("%s\n", Pretty(runs).c_str());
    return kExitOk;
  }
  if (mode == OutMode::kWide) {
    std::vector<std::vector<std::string>> rows = RunRows(runs);
    for (size_t i = 0; i < rows.size(); ++i) {
      const json& r = runs[i];
      rows[i].insert(rows[i].begin() + 1, JStr(r, {"job_id"}));
      rows[i].insert(rows[i].begin() + 6, JStr(r, {"cell"}));
      rows[i].insert(rows[i].end() - 1, {JStr(r, {"attempt"}), JStr(r, {"audit"})});
    }
    std::vector<std::string> header = kRunHeader;
    header.insert(header.begin() + 1, "JOB");
    header.insert(header.begin() + 6, "CELL");
    header.insert(header.end() - 1, {"ATTEMPT", "AUDIT"});
    printf("%s", RenderTable(header, rows).c_str());
  } else {
    printf("%s", RenderTable(kRunHeader, RunRows(runs)).c_str());
  }
  printf("%s", SampleNotes(runs, "* ").c_str());
  return kExitOk;
}

int CmdAgents(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  std::vector<FlagDef> defs;
  AddOutputFlags(&defs);
  if (auto e = ParseFlags("agents", rest, defs, &a)) return Usage(*e);
  OutMode mode;
  if (auto e = ParseOutMode(a, &mode)) return Usage(*e);
  if (!a.positional.empty()) return Usage("agents: no arguments expected");
  auto agents = api.Get("/agents");
  if (!agents.ok()) return Fail(agents.status());
  if (mode == OutMode::kJson) {
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
    std::vector<std::string> row = {JStr(ag, {"name"}), JStr(ag, {"state"}),
                                    JStr(inv, {"kernel_release", "kernel"}),
                                    JStr(inv, {"cpu_count"}), absl::StrJoin(engines, ","),
                                    absl::StrJoin(labels, ","), Ago(JU64(ag, {"last_seen_ms"}))};
    if (mode == OutMode::kWide) {
      const size_t numa = JArray(inv, "numa_nodes").size();
      const size_t devs = JArray(inv, "block_devices").size();
      row.insert(row.end() - 1,
                 {JStr(inv, {"cpu_model"}), numa ? std::to_string(numa) : "-",
                  std::to_string(devs), JStr(ag, {"peer"}), JStr(ag, {"protocol_version"})});
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"AGENT", "STATE", "KERNEL", "CPUS", "ENGINES", "LABELS",
                                     "LAST SEEN"};
  if (mode == OutMode::kWide) {
    header.insert(header.end() - 1, {"CPU MODEL", "NUMA", "DEVICES", "PEER", "PROTO"});
  }
  printf("%s", RenderTable(header, rows).c_str());
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

int CmdLogs(const ApiClient& api, const std::vector<std::string>& rest) {
  Args a;
  if (auto e = ParseFlags("logs", rest, {{"type", true}, {"json", false}, {"o", true},
                                         {"output", true}}, &a)) {
    return Usage(*e);
  }
  OutMode mode;
  if (auto e = ParseOutMode(a, &mode)) return Usage(*e);
  if (a.positional.empty() || a.positional.size() > 2) {
    return Usage("logs: RUN expected, and at most one log NAME");
  }
  const std::string type = a.Get("type");
  if (a.Has("type")) {
    static const std::set<std::string> kTypes = {"lat", "clat", "slat", "bw", "iops", "clat_hist"};
    if (!kTypes.contains(type)) {
      return Usage(absl::StrCat("flag --type: \"", type,
                                "\" is not lat, clat, slat, bw, iops or clat_hist"));
    }
    if (a.positional.size() == 2) return Usage("logs: give a log NAME or --type, not both");
  }
  const std::string run = a.positional[0];
  auto list = api.Get("/runs/" + UrlEncode(run) + "/logs");
  if (!list.ok()) return Fail(list.status());
  const json& logs = JArray(*list, "logs");
  if (a.positional.size() == 1 && !a.Has("type")) {
    if (mode == OutMode::kJson) {
      printf("%s\n", Pretty(*list).c_str());
      return kExitOk;
    }
    if (logs.empty()) {
      fprintf(stderr, "run %s has no log files on the controller\n", TerminalSafe(run).c_str());
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const json& l : logs) {
      const bool cut = l.value("truncated", false);
      rows.push_back({JStr(l, {"name"}), JStr(l, {"type"}), JStr(l, {"size_bytes"}),
                      JStr(l, {"stored_bytes"}), cut ? "truncated" : ""});
    }
    printf("%s", RenderTable({"NAME", "TYPE", "SIZE", "STORED", "NOTE"}, rows).c_str());
    return kExitOk;
  }
  std::vector<const json*> want;
  for (const json& l : logs) {
    if (a.positional.size() == 2 ? JStr(l, {"name"}) == a.positional[1]
                                 : JStr(l, {"type"}) == type) {
      want.push_back(&l);
    }
  }
  if (want.empty()) {
    std::vector<std::string> names;
    for (const json& l : logs) names.push_back(JStr(l, {"name"}));
    return Fail(absl::StrCat("run ", run, " has no ",
                             a.positional.size() == 2 ? "log file \"" + a.positional[1] + "\""
                                                      : type + " log",
                             names.empty() ? std::string(" (it has no log files)")
                                           : " (its logs: " + absl::StrJoin(names, ", ") + ")"));
  }
  for (const json* l : want) {
    const std::string name = JStr(*l, {"name"});
    std::string ctype;
    auto body = api.GetRaw("/runs/" + UrlEncode(run) + "/logs/" + UrlEncode(name), &ctype);
    if (!body.ok()) return Fail(body.status());
    if (a.Has("type")) fprintf(stderr, "==> %s <==\n", TerminalSafe(name).c_str());
    fwrite(body->data(), 1, body->size(), stdout);
    fflush(stdout);
    if (l->value("truncated", false)) {
      fprintf(stderr,
              "iofleet: log %s: the controller holds the first %zu of its %s bytes; the whole "
              "file is at %s on the run's host\n",
              TerminalSafe(name).c_str(), body->size(), JStr(*l, {"size_bytes"}).c_str(),
              TerminalSafe(JStr(*l, {"path"})).c_str());
    }
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
                          {{"format", true}, {"fail-on", true}, {"allow-unaudited", false},
                           {"require-steady-state", false}},
                          &a)) {
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
  auto path = [&](std::string q) {
    if (a.Has("require-steady-state")) q += q.empty() ? "?steady_state=require" : "&steady_state=require";
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

// The terminal's size (80x24 when unknown).
void TerminalSize(int* width, int* height) {
  *width = 80;
  *height = 24;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    *width = ws.ws_col;
    *height = ws.ws_row;
  }
}

// Follows a job until every run is terminal: on a terminal the view redraws in
// place (RenderWatch, fitted to the screen); otherwise, with `print_changes`,
// a block is printed whenever something changed. Returns the final job and
// its view. A controller never reached fails at once; one reached before is
// given 60 failed polls (a restart). `timeout_s` > 0: DeadlineExceeded after it.
absl::StatusOr<Watched> WatchLoop(const ApiClient& api, const std::string& id, uint32_t every_ms,
                                  bool tty, bool print_changes, uint64_t timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  int drawn = 0;
  std::map<std::string, WatchRun> finals;      // terminal runs: result read once
  std::map<std::string, uint64_t> printed_seq;  // non-tty: print on change only
  uint64_t est = 0;
  int kb_base = 1024;
  bool reached = false;
  int failures = 0;
  for (;;) {
    if (timeout_s > 0 &&
        std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
      return absl::DeadlineExceededError(
          absl::StrCat("job ", id, ": not finished after ", timeout_s, " s (--timeout)"));
    }
    auto job = api.Get("/jobs/" + id);
    if (!job.ok()) {
      if (job.status().code() == absl::StatusCode::kNotFound || !reached || ++failures > 60) {
        return job.status();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
      continue;
    }
    if (!reached) {
      const std::string text = JobFioText(*job);
      est = EstimateRuntimeSeconds(text);
      kb_base = KbBaseOf(text);
    }
    failures = 0;
    reached = true;
    const json& runs = JArray(*job, "runs");
    const uint64_t now = NowMs();
    WatchView v;
    v.job_id = id;
    v.name = JStr(*job, {"name"});
    v.state = NormState(JStr(*job, {"state"}));
    v.kb_base = kb_base;
    v.eta_known = est > 0;
    uint64_t first_start = 0;
    size_t queued = 0;
    bool changed = false;
    for (const json& r : runs) {
      const std::string rid = RunId(r), st = RunState(r);
      if (auto it = finals.find(rid); it != finals.end()) {
        v.runs.push_back(it->second);
        continue;
      }
      WatchRun w;
      w.id = rid;
      w.host = JStr(r, {"host", "agent"});
      w.variant = JStr(r, {"variant"});
      w.cell = JStr(r, {"cell"});
      w.state = st + (SamplesIncomplete(r) ? "*" : "");
      w.note = JStr(r, {"error"});
      if (st == "queued" && !JStr(r, {"waiting_for"}).empty()) {
        w.note = "waiting: " + JStr(r, {"waiting_for"});
      }
      const uint64_t started = JU64(r, {"started_ms"});
      if (started > 0) {
        w.started = true;
        if (first_start == 0 || started < first_start) first_start = started;
        const uint64_t end = JU64(r, {"finished_ms"}) ? JU64(r, {"finished_ms"}) : now;
        w.elapsed_s = end > started ? (end - started) / 1000 : 0;
      }
      if (IsTerminal(st)) {
        // The final result, not the last 1 s sample.
        auto full = api.Get("/runs/" + rid);
        if (full.ok()) {
          json result;
          if (auto it = full->find("result"); it != full->end() && it->is_object()) result = *it;
          FinalFromResult(result, &w);
        }
        finals[rid] = w;
        changed = true;
      } else if (st != "queued" && st != "assigned") {
        auto samples = api.Get("/runs/" + rid + "/samples");
        if (samples.ok()) {
          const WindowStats ws = LatestWindow(*samples);
          if (ws.valid) {
            w.have_rates = true;
            for (int d = 0; d < 2; ++d) {
              w.iops[d] = ws.dir_iops[d];
              w.bps[d] = ws.dir_bytes_per_s[d];
            }
            w.p99_ns = ws.p99_ns;
            w.has_lat = ws.has_lat;
            w.lat_mean_ns = ws.lat_mean_ns;
            w.lat_p99_ns = ws.lat_p99_ns;
          }
          if (printed_seq[rid] != ws.seq + 1) changed = true;
          printed_seq[rid] = ws.seq + 1;
        }
      }
      if (st == "queued" || st == "assigned") ++queued;
      if (st == "running" && est > 0) {
        const uint64_t end = (started ? started : now) + est * 1000;
        v.eta_s = std::max(v.eta_s, end > now ? (end - now) / 1000 : 0);
      }
      v.runs.push_back(std::move(w));
    }
    // ETA across hosts: the longest running run, then the queued ones one
    // after another (pessimistic: a lease per host serialises them).
    if (v.eta_known && queued > 0) v.eta_s += est * queued;
    if (first_start > 0 && now > first_start) v.elapsed_s = (now - first_start) / 1000;
    v.done = AllTerminal(*job);
    if (tty && v.done && !print_changes) {
      // The caller prints a summary in its place.
      if (drawn > 0) printf("\x1b[%dA\x1b[J", drawn);
      fflush(stdout);
    } else if (tty) {
      int width, height;
      TerminalSize(&width, &height);
      const std::string block = RenderWatch(v, width, height - 1);
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
    } else if (print_changes && (changed || v.done)) {
      printf("%s\n", RenderWatch(v, 0, 0).c_str());
      fflush(stdout);
    }
    if (v.done) return Watched{*std::move(job), std::move(v)};
    std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
  }
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
  auto w = WatchLoop(api, id, every_ms, isatty(STDOUT_FILENO) == 1, /*print_changes=*/true, 0);
  if (!w.ok()) return Fail(w.status());
  const Outcome o = JudgeRuns(id, w->job);
  if (o.code != kExitOk) return Fail(o.reason);
  return kExitOk;
}

}  // namespace

int ExitCodeFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnreachable;
    default:
      return kExitFailed;
  }
}

int CliMain(int argc, char** argv) {
  g_cmd.clear();
  GlobalFlags g;
  iofleet::flags::FlagSet globals("iofleet");
  DeclareGlobalFlags(globals, &g);
  if (const char* env = getenv("IOFLEET_CONTROLLER"); env != nullptr && *env) g.controller = env;
  if (g.controller.empty()) g.controller = "http://127.0.0.1:7080";
  if (const char* env = getenv("IOFLEET_CA"); env != nullptr) g.ca = env;
  if (const char* env = getenv("IOFLEET_CERT"); env != nullptr) g.cert = env;
  if (const char* env = getenv("IOFLEET_KEY"); env != nullptr) g.key = env;
  std::string cmd;
  std::vector<std::string> rest;
  std::vector<std::string> global_args;  // parsed by the table after this pass
  bool want_help = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // Global flags are accepted before or after the command.
    const std::string name = a.substr(0, a.find('='));
    if (name.size() > 2 && name.rfind("--", 0) == 0 && globals.Find(name.substr(2)) != nullptr) {
      global_args.push_back(a);
      if (a.size() == name.size() && i + 1 < argc) global_args.push_back(argv[++i]);
      continue;
    }
    if (cmd.empty()) {
      if (a == "-h" || a == "--help") {
        fputs(UsageText().c_str(), stdout);
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
    if (a == "-h" || a == "--help") want_help = true;
    rest.push_back(a);
  }
  if (absl::Status s = globals.Parse(global_args, 0); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  std::string& controller = g.controller;
  std::string& token = g.token;
  std::string& token_file = g.token_file;
  bool& token_flag = g.token_flag;
  bool& token_file_flag = g.token_file_flag;
  std::string& ca = g.ca;
  std::string& cert = g.cert;
  std::string& key = g.key;
  if (cmd.empty()) {
    fputs(UsageText().c_str(), stderr);
    return kExitUsage;
  }
  if (cmd == "help") {
    if (rest.empty() || rest[0] == "-h" || rest[0] == "--help") {
      fputs(UsageText().c_str(), stdout);
      return kExitOk;
    }
    return PrintHelp(rest[0]);
  }
  if (CommandHelpText(cmd) == nullptr) {
    return Usage(absl::StrCat("unknown command \"", cmd, "\""));
  }
  g_cmd = cmd;
  if (want_help) return PrintHelp(cmd);
  // The token: --token or --token-file (not both), else $IOFLEET_TOKEN, else
  // $IOFLEET_TOKEN_FILE. A file is checked as the controller checks its own
  // (common/secrets): not readable by others, no whitespace inside.
  if (token_flag && token_file_flag) return Usage("flags --token and --token-file are exclusive");
  if (!token_flag && !token_file_flag) {
    if (const char* env = getenv("IOFLEET_TOKEN"); env != nullptr && *env) {
      token = env;
    } else if (const char* envf = getenv("IOFLEET_TOKEN_FILE"); envf != nullptr && *envf) {
      token_file = envf;
      token_file_flag = true;
    }
  }
  if (token_file_flag) {
    auto t = secrets::ReadTokenFile(token_file, "token-file");
    if (!t.ok()) return Usage(std::string(t.status().message()));
    token = *t;
  }
  auto url = NormalizeControllerUrl(controller);
  if (!url.ok()) return Usage(std::string(url.status().message()));
  ApiClient api(*url, token);
  if (!ca.empty()) {
    if (url->rfind("https://", 0) != 0) return Usage("--ca needs an https:// --controller URL");
    if (access(ca.c_str(), R_OK) != 0) {
      return Usage(absl::StrCat("--ca: cannot read \"", ca, "\": ", strerror(errno)));
    }
    api.set_ca_file(ca);
  }
  if (!cert.empty() || !key.empty()) {
    if (cert.empty() || key.empty()) return Usage("--cert and --key go together");
    if (url->rfind("https://", 0) != 0) return Usage("--cert needs an https:// --controller URL");
    for (const std::string* f : {&cert, &key}) {
      if (access(f->c_str(), R_OK) != 0) {
        return Usage(absl::StrCat(f == &cert ? "--cert" : "--key", ": cannot read \"", *f,
                                  "\": ", strerror(errno)));
      }
    }
    api.set_client_cert(cert, key);
  }
  if (cmd == "submit") return CmdSubmit(api, rest);
  if (cmd == "status") return CmdStatus(api, rest);
  if (cmd == "watch") return CmdWatch(api, rest);
  if (cmd == "agents") return CmdAgents(api, rest);
  if (cmd == "runs") return CmdRuns(api, rest);
  if (cmd == "result") return CmdResult(api, rest);
  if (cmd == "logs") return CmdLogs(api, rest);
  if (cmd == "cancel") return CmdCancel(api, rest);
  if (cmd == "compare") return CmdCompare(api, rest);
  if (cmd == "history") return CmdHistory(api, rest);
  return Usage(absl::StrCat("unknown command \"", cmd, "\""));  // unreachable
}

}  // namespace iofleet::cli
