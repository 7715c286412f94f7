#include "common/targets/targets.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace iofleet::targets {
namespace {

std::string JoinUnder(const std::string& directory, const std::string& name) {
  if (directory.empty() || name.empty() || name.front() == '/') return name;
  return absl::StrCat(directory, directory.back() == '/' ? "" : "/", name);
}

}  // namespace

std::vector<std::string> JobFiles(const jobspec::JobSpec& job, int subjob) {
  std::vector<std::string> out;
  if (!job.filenames.empty()) {
    for (const std::string& f : job.filenames) out.push_back(JoinUnder(job.directory, f));
    return out;
  }
  for (uint32_t i = 0; i < job.nrfiles; ++i) {
    out.push_back(JoinUnder(job.directory, FormatFileName(job.filename_format, job.name, subjob, i)));
  }
  return out;
}

std::string FormatFileName(const std::string& format, const std::string& job_name, int subjob,
                           uint32_t file_number) {
  if (format.empty()) return absl::StrCat(job_name, ".", subjob, ".", file_number);
  // fio's make_filename: each keyword, matched without regard to case, is
  // replaced wherever it appears; $clientuid is the client's address in
  // client/server mode and empty otherwise.
  const std::pair<std::string_view, std::string> keys[] = {
      {"$jobname", job_name},
      {"$jobnum", std::to_string(subjob)},
      {"$filenum", std::to_string(file_number)},
      {"$clientuid", ""}};
  std::string out = format;
  for (const auto& [key, value] : keys) {
    size_t at = 0;
    while (true) {
      auto it = std::search(out.begin() + static_cast<std::ptrdiff_t>(at), out.end(), key.begin(), key.end(),
                            [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
      if (it == out.end()) break;
      const size_t pos = static_cast<size_t>(it - out.begin());
      out.replace(pos, key.size(), value);
      at = pos + value.size();
    }
  }
  return out;
}

std::vector<Target> TargetsOf(const jobspec::JobList& list) {
  std::vector<Target> out;
  for (const jobspec::JobSpec& j : list.jobs) {
    if (j.ioengine == "null") continue;  // opens no file
    if (!j.filenames.empty()) {
      for (const std::string& f : JobFiles(j, 0)) out.push_back(Target{f, Kind::kFile});
    } else {
      out.push_back(Target{j.directory.empty() ? "." : j.directory, Kind::kDirectory});
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> PathsOf(const std::vector<Target>& targets) {
  std::vector<std::string> out;
  out.reserve(targets.size());
  for (const Target& t : targets) out.push_back(t.path);
  return out;
}

std::string LexicalNormal(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    const std::string_view c = path.substr(i, j - i);
    i = j + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(c);  // a relative path keeps what it cannot fold
      }                      // "/.." is "/"
      continue;
    }
    parts.push_back(c);
  }
  std::string out = absolute ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k > 0) out += '/';
    out += parts[k];
  }
  if (out.empty()) out = ".";
  return out;
}

bool PathUnder(std::string_view path, std::string_view prefix) {
  if (prefix.empty()) return false;
  const std::string p = LexicalNormal(path);
  const std::string pre = LexicalNormal(prefix);
  if ((p.front() == '/') != (pre.front() == '/')) return false;
  if (pre == "/") return true;
  if (pre == ".") return p != ".." && p.compare(0, 3, "../") != 0;
  if (p == pre) return true;
  return p.size() > pre.size() && p.compare(0, pre.size(), pre) == 0 && p[pre.size()] == '/';
}

bool AllowedLexically(const std::vector<std::string>& allow, std::string_view path) {
  if (allow.empty()) return true;
  if (path.empty() || path.front() != '/') return true;  // the agent decides
  return std::any_of(allow.begin(), allow.end(),
                     [&](const std::string& a) { return PathUnder(path, a); });
}

}  // namespace iofleet::targets
