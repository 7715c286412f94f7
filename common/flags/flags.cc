#include "common/flags/flags.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace iofleet::flags {

absl::Status NotA(const std::string& value, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", value, "\" is not ", absl::string_view(what.data(), what.size())));
}

bool ParseBool(const std::string& v, bool* out) {
  if (v == "true" || v == "1" || v == "yes") {
    *out = true;
  } else if (v == "false" || v == "0" || v == "no") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

bool ParseDurationMs(const std::string& v, uint64_t* ms) {
  double secs = 0;
  if (absl::SimpleAtod(v, &secs) && secs > 0) {
    *ms = static_cast<uint64_t>(secs * 1000);
    return *ms > 0;
  }
  absl::Duration d;
  if (!absl::ParseDuration(v, &d) || d <= absl::ZeroDuration()) return false;
  *ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
  return *ms > 0;
}

FlagSet& FlagSet::Section(const std::string& title) {
  return Add({"", "", title, "", nullptr, false});
}

FlagSet& FlagSet::Add(FlagDef def) {
  defs_.push_back(std::move(def));
  return *this;
}

FlagSet& FlagSet::String(const std::string& name, std::string* out, const std::string& help,
                         const std::string& value_name, const std::string& default_text) {
  return Add({name, value_name, help, default_text, [out](const std::string& v) {
                *out = v;
                return absl::OkStatus();
              }});
}

FlagSet& FlagSet::Switch(const std::string& name, bool* out, const std::string& help) {
  return Add({name, "", help, "", [out](const std::string& v) {
                if (!ParseBool(v, out)) return NotA(v, "true or false");
                return absl::OkStatus();
              }});
}

FlagSet& FlagSet::Uint(const std::string& name, uint64_t* out, uint64_t min, uint64_t max,
                       const std::string& help, const std::string& default_text) {
  const std::string what = min == 1 && max == std::numeric_limits<uint64_t>::max()
                               ? std::string("a positive integer")
                               : absl::StrCat("an integer in ", min, "..", max);
  return Add({name, "N", help, default_text, [out, min, max, what](const std::string& v) {
                uint64_t n = 0;
                if (!absl::SimpleAtoi(v, &n) || n < min || n > max) return NotA(v, what);
                *out = n;
                return absl::OkStatus();
              }});
}

FlagSet& FlagSet::Duration(const std::string& name, uint64_t* ms, const std::string& help,
                           const std::string& default_text, uint64_t min_ms) {
  return Add({name, "DURATION", help, default_text, [ms, min_ms](const std::string& v) {
                uint64_t x = 0;
                if (!ParseDurationMs(v, &x)) {
                  return absl::InvalidArgumentError(absl::StrCat("bad duration \"", v, "\""));
                }
                if (x < min_ms) {
                  return NotA(v, absl::StrCat("a duration of at least ", min_ms, " ms"));
                }
                *ms = x;
                return absl::OkStatus();
              }});
}

const FlagDef* FlagSet::Find(std::string_view name) const {
  for (const FlagDef& d : defs_) {
    if (!d.name.empty() && d.name == name) return &d;
  }
  return nullptr;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args, size_t first,
                            std::vector<std::string>* positional) {
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      return absl::OkStatus();
    }
    if (arg == "--" && positional != nullptr) {  // the rest is positional
      positional->insert(positional->end(), args.begin() + static_cast<ptrdiff_t>(i) + 1,
                         args.end());
      return absl::OkStatus();
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") {
      if (positional != nullptr) {
        positional->push_back(arg);
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", arg, "\" (flags are --name=value)"));
    }
    // --name or -name (the CLI's -o).
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1), value;
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const FlagDef* def = Find(name);
    if (def == nullptr) {
      return absl::NotFoundError(absl::StrCat("unknown flag \"", arg, "\""));
    }
    if (has_value && def->bare_only) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": takes no value"));
    }
    if (!has_value) {
      if (def->value_name.empty()) {
        value = "true";  // a bare switch
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(arg, ": needs a value"));
      }
    }
    if (absl::Status s = def->apply(value); !s.ok()) {
      // Helpers that already name the flag (common/secrets) keep their message.
      const std::string prefix = absl::StrCat("--", name);
      if (absl::StartsWith(s.message(), prefix)) return s;
      return absl::Status(s.code(), absl::StrCat(prefix, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

std::string FlagSet::Help(const std::string& header) const {
  std::vector<std::string> lefts;
  size_t width = 0;
  for (const FlagDef& d : defs_) {
    lefts.push_back(d.name.empty() ? std::string()
                                   : absl::StrCat("  --", d.name, d.value_name.empty() ? "" : "=",
                                                  d.value_name));
    width = std::max(width, lefts.back().size());
  }
  width = std::min<size_t>(width, 34);
  std::string out = header;
  for (size_t k = 0; k < defs_.size(); ++k) {
    const FlagDef& d = defs_[k];
    if (d.name.empty()) {  // a section heading
      absl::StrAppend(&out, d.help, "\n");
      continue;
    }
    std::string help = d.help;
    if (!d.default_text.empty()) absl::StrAppend(&help, " (default ", d.default_text, ")");
    std::vector<std::string> lines = absl::StrSplit(help, '\n');
    std::string left = lefts[k];
    if (left.size() > width) {
      absl::StrAppend(&out, left, "\n");
      left.clear();
    }
    for (const std::string& line : lines) {
      absl::StrAppend(&out, left, std::string(width - left.size() + 2, ' '), line, "\n");
      left.clear();
    }
  }
  return out;
}

absl::Status FlagSet::CheckConfigKeys(const config::KeyValues& pairs,
                                      std::string_view source) const {
  for (const auto& [key, value] : pairs) {
    if (Find(key) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          absl::string_view(source.data(), source.size()), ": key \"", key, "\" is not a flag of ",
          program_, " (run ", program_, " --help)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FlagSet::ExpandConfig(
    const std::vector<std::string>& args, size_t first) const {
  std::string path;  // the last --config wins, as in config::ExpandConfigArgs
  for (size_t i = first; i < args.size(); ++i) {
    if (absl::StartsWith(args[i], "--config=")) {
      path = args[i].substr(9);
    } else if (args[i] == "--config" && i + 1 < args.size()) {
      path = args[++i];
    }
  }
  if (!path.empty()) {
    absl::StatusOr<config::KeyValues> pairs = config::ReadConfigFile(path);
    if (!pairs.ok()) return pairs.status();
    if (absl::Status s = CheckConfigKeys(*pairs, path); !s.ok()) return s;
  }
  return config::ExpandConfigArgs(args, first);
}

}  // namespace iofleet::flags
