// Config files for the iofleet daemons: `key = value` lines whose keys are the
// binaries' long flag names without the leading "--".
//
//   # comment (a whole line, or after whitespace following a value)
//   data-dir    = /var/lib/iofleet
//   http-listen = 0.0.0.0:7080
//   allow-path  = /mnt/scratch        # repeatable keys repeat, in order
//   allow-path  = /dev/nvme0n1
//   token       = "value with # or leading/trailing spaces"
//
// Grammar, line by line (UTF-8 BOM and CRLF line ends are tolerated):
//   - blank lines and lines whose first non-blank character is '#' are ignored;
//   - otherwise `KEY = VALUE`: KEY is [A-Za-z0-9][A-Za-z0-9_.-]* (no "--");
//     VALUE is trimmed and may be empty;
//   - an unquoted VALUE ends at the first '#' that follows whitespace;
//   - a VALUE starting with '"' runs to the closing '"' (escapes: \" \\ \n \t);
//     only whitespace or a comment may follow it.
//
// Which keys exist and how often each may appear is not checked here: the
// binaries' flag parsers validate the flags produced by ConfigToFlags(), so an
// unknown key fails exactly like an unknown flag.
//
// Thread-safety: all functions are pure apart from reading the file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace iofleet::config {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Parses config text. `source` names the text in errors ("FILE:LINE: ...").
// Errors are InvalidArgument naming source:line and, once known, the key.
absl::StatusOr<KeyValues> ParseConfig(std::string_view text, std::string_view source);

// Reads and parses the file at `path`. A file that cannot be read gives the
// errno-derived code (NotFound, PermissionDenied, ...) with the path; syntax
// errors are as for ParseConfig with `path` as the source.
absl::StatusOr<KeyValues> ReadConfigFile(const std::string& path);

// {"data-dir", "/x"} -> "--data-dir=/x", in order, duplicates kept.
std::vector<std::string> ConfigToFlags(const KeyValues& pairs);

// Convenience for main(): finds `--config=FILE` or `--config FILE` in
// args[first..] (the last one wins if repeated), removes it, and inserts the
// file's flags at position `first`, so flags given on the command line come after
// the file's and override them (for repeatable flags, both apply). Without
// --config the args are returned unchanged. `first` is 1 for a plain binary
// (after argv[0]) and 2 after a subcommand such as `iofleet-agent serve`.
absl::StatusOr<std::vector<std::string>> ExpandConfigArgs(const std::vector<std::string>& args,
                                                          size_t first);

}  // namespace iofleet::config
