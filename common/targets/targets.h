// "Which targets does this job touch" and "is this path allowed", answered once
// for the controller and the agent (docs/leases.md has the whole lease rule).
//
// The pure half (this header) works on path strings only, so the controller can
// call it: the files a job opens, the targets it leases, lexical normalisation
// and whole-component prefix matching. The host half (resolve.h) looks at the
// agent's filesystem: real paths with symlinks resolved and device identities.
//
// Thread-safety: every function is pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/jobspec/job_spec.h"

namespace iofleet::targets {

enum class Kind {
  kFile,       // a named file or device (fio's filename=)
  kDirectory,  // a directory the job generates its files in (directory=, or ".")
};

struct Target {
  std::string path;  // as the job names it; a relative filename joined to `directory`
  Kind kind = Kind::kFile;
  bool operator==(const Target&) const = default;
  auto operator<=>(const Target&) const = default;
};

// The files clone `subjob` (0-based) of `job` opens, in fio's order: each of its
// filenames (a relative one under `directory`), or else `nrfiles` generated names
// under `directory` from filename_format (fio's default "<name>.<subjob>.<i>").
std::vector<std::string> JobFiles(const jobspec::JobSpec& job, int subjob);

// fio's filename_format expansion: $jobname, $jobnum (the clone's 0-based
// subjob), $filenum and $clientuid (empty: no client/server mode), matched
// without regard to case; an empty format is fio's "$jobname.$jobnum.$filenum".
std::string FormatFileName(const std::string& format, const std::string& job_name, int subjob,
                           uint32_t file_number);

// What `list` touches, sorted and unique: every named file of every job; a job
// with generated file names touches its directory ("." when it has none). Jobs on
// the null engine touch nothing.
std::vector<Target> TargetsOf(const jobspec::JobList& list);

// The paths of `targets`, in order.
std::vector<std::string> PathsOf(const std::vector<Target>& targets);

// Lexical normal form: repeated and trailing slashes dropped, "." removed, ".."
// folded into its parent ("/.." is "/"; a relative path keeps leading ".."s);
// "" and "./" become ".". Does not look at the filesystem.
std::string LexicalNormal(std::string_view path);

// True when `path` is `prefix` or lies below it, by whole path components, both
// taken in LexicalNormal form: "/dev/nvme1" holds "/dev/nvme1/x" but not
// "/dev/nvme10n1"; "/" holds every absolute path. An empty prefix holds nothing.
bool PathUnder(std::string_view path, std::string_view prefix);

// The controller's allow check (it cannot see the agent's filesystem): an
// absolute `path` must lie under one of `allow` (PathUnder); an empty `allow`
// allows everything. A relative path depends on the agent's working directory and
// is left to the agent's check (AllowedOnHost in resolve.h): true here.
bool AllowedLexically(const std::vector<std::string>& allow, std::string_view path);

}  // namespace iofleet::targets
