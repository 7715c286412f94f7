#include "agent/run/agent_cli.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "agent/run/runner.h"
#include "common/clock.h"
#include "common/jobspec/verify_phase.h"
#include "common/stats/report.h"

namespace iofleet::agent {
namespace {

std::atomic<bool> g_cancel{false};

void OnSignal(int) { g_cancel.store(true); }

absl::Status FlagError(const std::string& flag, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("flag --", flag, ": value \"", value, "\": ", why));
}

// fio's banner for normal output: a line per job (a "..." line for its clones),
// the version, and how many threads/processes start.
std::string Banner(const jobspec::JobList& list) {
  std::string out;
  uint32_t threads = 0;
  uint32_t processes = 0;
  int groupid = 0;
  int prev_file_index = 1;
  bool first = true;
  for (const auto& j : list.jobs) {
    // The runner's group rule (runner.cc MakePlan): stonewall, new_group or a new job file.
    if (!first && (j.stonewall || j.new_group || j.file_index != prev_file_index)) ++groupid;
    first = false;
    prev_file_index = j.file_index;
    (j.thread ? threads : processes) += j.numjobs;
    if (j.numjobs == 0) continue;
    auto bs = [&](int d) { return absl::StrCat(j.bs_min[d], "B-", j.bs_max[d], "B"); };
    absl::StrAppendFormat(&out, "%s: (g=%d): rw=%s, bs=(R) %s, (W) %s, (T) %s, ioengine=%s, iodepth=%u\n",
                          j.name, groupid, jobspec::RwPatternName(j.rw), bs(0), bs(1), bs(2),
                          j.ioengine, j.iodepth);
    if (j.numjobs > 1) out += "...\n";
  }
  absl::StrAppend(&out, "iofleet-", kAgentVersion, "\nStarting ");
  if (threads != 0) absl::StrAppend(&out, threads, " thread", threads > 1 ? "s" : "");
  if (processes != 0) {
    absl::StrAppend(&out, threads != 0 ? " and " : "", processes, " process",
                    processes > 1 ? "es" : "");
  }
  out += "\n";
  return out;
}

}  // namespace

std::string RenderReport(uint32_t formats, int terse_version, const stats::ReportHeader& header,
                         const std::vector<stats::JobStats>& reported) {
  std::string out;
  if (formats & kOutputTerse) out += stats::FioTerse(header, reported, terse_version);
  if (formats & kOutputJson) out += stats::FioJson(header, reported, (formats & kOutputJsonPlus) != 0);
  if (formats & kOutputNormal) out += stats::FioNormal(header, reported);
  return out;
}

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args) {
  RunFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (a.empty() || a[0] == '-') return FlagError(a, "", "unknown flag");
      flags.cmd.job_files.push_back(a);
      continue;
    }
    std::string key = a.substr(2);
    std::string value;
    bool has_value = false;
    if (const size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
        value = args[++i];
        return true;
      }
      return false;
    };
    if (key == "output-format") {
      if (!take()) return FlagError(key, "", "needs normal, json, json+ or terse");
      // fio takes a comma list ("json,normal") and prints each format; the list
      // replaces any earlier choice.
      uint32_t formats = 0;
      for (absl::string_view f : absl::StrSplit(value, ',')) {
        if (f == "normal") {
          formats |= kOutputNormal;
        } else if (f == "json") {
          formats |= kOutputJson;
        } else if (f == "json+") {
          formats |= kOutputJson | kOutputJsonPlus;
        } else if (f == "terse" || f == "minimal" || f == "csv") {
          formats |= kOutputTerse;
        } else {
          return FlagError(key, value,
                           "must be normal, json, json+ or terse (minimal, csv), or a comma list");
        }
      }
      flags.formats = formats;
    } else if (key == "minimal") {
      flags.formats = kOutputTerse;
    } else if (key == "append-terse") {
      flags.formats |= kOutputTerse;
    } else if (key == "terse-version") {
      if (!take() || (value != "2" && value != "3" && value != "4" && value != "5")) {
        return FlagError(key, value, "must be 2, 3, 4 or 5");
      }
      flags.terse_version = value[0] - '0';
    } else if (key == "output") {
      if (!take() || value.empty()) return FlagError(key, value, "needs a file name");
      flags.output_path = value;
    } else if (key == "parse-only") {
      flags.parse_only = true;
    } else if (key == "status-interval") {
      if (!take()) return FlagError(key, "", "needs a number of seconds");
      auto us = jobspec::ParseTimeUs(value);
      if (!us.ok() || *us < 1000000) {
        return FlagError(key, value, "must be a time of at least 1 s (e.g. 1, 5s, 1m)");
      }
      flags.status_interval_s = static_cast<uint32_t>(*us / 1000000);
    } else if (key == "eta" || key == "eta-newline" || key == "eta-interval") {
      take();  // accepted for fio compatibility; iofleet prints no ETA line
    } else {
      // A job option: fio's --name=value form; a bare --flag is a set flag.
      flags.cmd.options.emplace_back(key, has_value ? value : "");
    }
  }
  if (flags.cmd.job_files.empty() && flags.cmd.options.empty()) {
    return absl::InvalidArgumentError("no job file and no --name=... job given");
  }
  return flags;
}

int RunMain(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  auto flags = ParseRunFlags(args);
  if (!flags.ok()) {
    std::fprintf(stderr, "iofleet-agent run: %s\n", std::string(flags.status().message()).c_str());
    return 1;
  }
  auto list = jobspec::ParseCommandLine(flags->cmd);
  if (!list.ok()) {
    std::fprintf(stderr, "iofleet-agent run: %s\n", std::string(list.status().message()).c_str());
    return 1;
  }
  if (list->jobs.empty()) {
    std::fprintf(stderr, "iofleet-agent run: no jobs defined\n");
    return 1;
  }
  // fio's parse-time notes (init.c), in this tool's words.
  for (const jobspec::JobSpec& j : list->jobs) {
    if (const std::string n = jobspec::VerifyNeverStartsNote(j); !n.empty()) {
      std::fprintf(stderr, "iofleet-agent run: note: %s\n", n.c_str());
    }
  }
  if (flags->parse_only) return 0;

  FILE* out = stdout;
  if (!flags->output_path.empty()) {
    out = std::fopen(flags->output_path.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "iofleet-agent run: flag --output: value \"%s\": %s\n",
                   flags->output_path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  RunOptions ro;
  ro.cancel = &g_cancel;
  ro.status_interval_s = flags->status_interval_s;
  const uint32_t formats = flags->formats;
  const int terse_version = flags->terse_version;
  stats::ReportHeader status_header;
  status_header.global_options = list->global_options;
  if (ro.status_interval_s) {
    ro.on_status = [&](const std::vector<stats::JobStats>& snap) {
      status_header.timestamp_ms = Clock::RealtimeMs();
      const std::string text =
          RenderReport(formats, terse_version, status_header, stats::ApplyGroupReporting(snap));
      std::fwrite(text.data(), 1, text.size(), out);
      std::fflush(out);
    };
  }
  if (formats & kOutputNormal) {
    const std::string banner = Banner(*list);
    std::fwrite(banner.data(), 1, banner.size(), out);
    std::fflush(out);
  }
  auto result = RunJobs(*list, ro);
  if (!result.ok()) {
    std::fprintf(stderr, "iofleet-agent run: %s\n", std::string(result.status().message()).c_str());
    if (out != stdout) std::fclose(out);
    return 1;
  }
  const std::string text = RenderReport(formats, terse_version, result->header, result->reported);
  std::fwrite(text.data(), 1, text.size(), out);
  if (out != stdout) std::fclose(out);
  for (const auto& js : result->jobs) {
    if (js.error != 0) {
      std::fprintf(stderr, "iofleet-agent run: job \"%s\": error %d: %s\n", js.jobname.c_str(),
                   js.error, js.error_text.c_str());
    }
  }
  // Logs the job asked for and did not get fail the command (the report stands).
  if (!result->log_error.empty()) {
    std::fprintf(stderr, "iofleet-agent run: %s\n", result->log_error.c_str());
  }
  return result->error == 0 && result->log_error.empty() ? 0 : 1;
}

}  // namespace iofleet::agent
