// One flag table for the iofleet binaries: each flag declared once (name,
// value placeholder, default shown in help, help text, and how a value is
// checked and stored), and from that one table the command line is parsed,
// errors name the flag and the value, --help is generated and a config
// file's keys are checked (a config key is a flag name: common/config).
//
//   uint64_t timeout_ms = 15000;
//   iofleet::flags::FlagSet fs("iofleet-controller");
//   fs.Duration("heartbeat-timeout", &timeout_ms, "agent silence before ...", "15s");
//   absl::Status s = fs.Parse(args, 1);   // "--heartbeat-timeout: bad duration \"x\""
//
// Syntax accepted: --name=value, --name value (a flag that takes a value),
// a bare --switch (or --switch=true|false|1|0|yes|no), -h / --help, -name
// as --name (the CLI's -o), and "--" (what follows is positional). A
// repeated flag applies each value in order (a repeatable flag accumulates,
// others keep the last).
//
// Thread-safety: a FlagSet is used from one thread (main).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/config/config.h"

namespace iofleet::flags {

struct FlagDef {
  std::string name;          // without the leading "--"
  std::string value_name;    // placeholder in help ("DIR"); empty: a switch
  std::string help;          // may hold '\n' for more lines
  std::string default_text;  // shown as "(default X)"; empty: none shown
  // Checks and stores a value. An error's message says what is wrong with
  // the value; Parse puts "--NAME: " in front of it.
  std::function<absl::Status(const std::string& value)> apply;
  // A switch that takes no value at all: --name=V is refused (the CLI's
  // switches); other switches take --name=true|false.
  bool bare_only = false;
};

// A value error in the house form: `"VALUE" is not WHAT`.
absl::Status NotA(const std::string& value, std::string_view what);

// "true|1|yes" / "false|0|no"; false when neither.
bool ParseBool(const std::string& v, bool* out);

// A positive duration: a bare number is seconds ("2.5"), else absl's form
// ("500ms", "1m"). False for zero, negative or malformed.
bool ParseDurationMs(const std::string& v, uint64_t* ms);

class FlagSet {
 public:
  explicit FlagSet(std::string program) : program_(std::move(program)) {}

  // A heading line in --help before the flags added after it.
  FlagSet& Section(const std::string& title);

  // Any flag; its name must be new (a duplicate is a programming error the
  // table test catches: Find returns the first).
  FlagSet& Add(FlagDef def);

  // Typed flags.
  FlagSet& String(const std::string& name, std::string* out, const std::string& help,
                  const std::string& value_name = "VALUE", const std::string& default_text = "");
  FlagSet& Switch(const std::string& name, bool* out, const std::string& help);
  // An integer in [min, max]: `"V" is not an integer in MIN..MAX` (or
  // `is not a positive integer` when min is 1 and max is the type's).
  FlagSet& Uint(const std::string& name, uint64_t* out, uint64_t min, uint64_t max,
                const std::string& help, const std::string& default_text = "");
  FlagSet& Duration(const std::string& name, uint64_t* ms, const std::string& help,
                    const std::string& default_text = "", uint64_t min_ms = 1);

  // Parses args[first..]. Positional arguments go to *positional, or are an
  // error when it is null. Stops at the first error: InvalidArgument
  // "--NAME: why" (unknown flags: NotFound `unknown flag "ARG"`), and at
  // -h/--help (help_requested(); what follows is not read).
  absl::Status Parse(const std::vector<std::string>& args, size_t first = 1,
                     std::vector<std::string>* positional = nullptr);
  bool help_requested() const { return help_; }

  // "  --name=VALUE_NAME  help (default X)" for every flag, in table order,
  // the help column aligned; `header` (the usage lines) first.
  std::string Help(const std::string& header = "") const;

  // Every key of a config file names a flag of this set (the same check the
  // command line gets); an unknown key's error names the key and the file.
  absl::Status CheckConfigKeys(const config::KeyValues& pairs, std::string_view source) const;

  // config::ExpandConfigArgs (--config=FILE's keys become flags before the
  // command line's), with the file's keys checked by this table first, so an
  // unknown key is refused naming the file and the key.
  absl::StatusOr<std::vector<std::string>> ExpandConfig(const std::vector<std::string>& args,
                                                        size_t first) const;

  const FlagDef* Find(std::string_view name) const;
  const std::vector<FlagDef>& defs() const { return defs_; }
  const std::string& program() const { return program_; }

 private:
  std::string program_;
  std::vector<FlagDef> defs_;
  bool help_ = false;
};

}  // namespace iofleet::flags
