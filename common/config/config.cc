#include "common/config/config.h"

#include <cerrno>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status.h"

namespace iofleet::config {
namespace {

bool ValidKey(absl::string_view k) {
  if (k.empty() || !absl::ascii_isalnum(static_cast<unsigned char>(k[0]))) return false;
  for (char c : k) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

absl::Status LineError(absl::string_view source, int line, absl::string_view key,
                       absl::string_view why) {
  if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", why));
  return absl::InvalidArgumentError(
      absl::StrCat(source, ":", line, ": key \"", key, "\": ", why));
}

// Strips a trailing comment: '#' at the start or after whitespace.
absl::string_view StripComment(absl::string_view v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '#' && (i == 0 || v[i - 1] == ' ' || v[i - 1] == '\t')) return v.substr(0, i);
  }
  return v;
}

}  // namespace

absl::StatusOr<KeyValues> ParseConfig(std::string_view text_in, std::string_view source_in) {
  // Debian's Abseil has its own string_view type: convert once, here.
  absl::string_view text(text_in.data(), text_in.size());
  const absl::string_view source(source_in.data(), source_in.size());
  if (absl::StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  KeyValues out;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    absl::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == absl::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.find('\0') != absl::string_view::npos) {
      return LineError(source, line_no, "", "NUL byte in line");
    }

    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      absl::string_view word = StripComment(line);
      word = absl::StripAsciiWhitespace(word);
      return LineError(source, line_no, word, "expected `key = value` (no '=' found)");
    }
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
    if (key.empty()) return LineError(source, line_no, "", "empty key before '='");
    if (absl::StartsWith(key, "-")) {
      return LineError(source, line_no, key, "write the key without leading dashes");
    }
    if (!ValidKey(key)) {
      return LineError(source, line_no, key,
                       "invalid key (letters, digits, '-', '_' and '.' only)");
    }

    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line.substr(eq + 1));
    std::string value;
    if (!rest.empty() && rest[0] == '"') {
      size_t i = 1;
      bool closed = false;
      for (; i < rest.size(); ++i) {
        const char c = rest[i];
        if (c == '"') {
          closed = true;
          ++i;
          break;
        }
        if (c == '\\') {
          if (i + 1 >= rest.size()) break;
          const char e = rest[++i];
          switch (e) {
            case '"': value += '"'; break;
            case '\\': value += '\\'; break;
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            default:
              return LineError(source, line_no, key,
                               absl::StrCat("unknown escape \"\\", std::string(1, e),
                                            "\" in quoted value"));
          }
          continue;
        }
        value += c;
      }
      if (!closed) return LineError(source, line_no, key, "unterminated quoted value");
      absl::string_view tail = absl::StripAsciiWhitespace(rest.substr(i));
      if (!tail.empty() && tail[0] != '#') {
        return LineError(source, line_no, key,
                         absl::StrCat("unexpected text after quoted value: \"", tail, "\""));
      }
    } else {
      value = std::string(absl::StripTrailingAsciiWhitespace(StripComment(rest)));
    }
    out.emplace_back(std::string(key), std::move(value));
  }
  return out;
}

absl::StatusOr<KeyValues> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("open config file", path, errno != 0 ? errno : ENOENT);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return IoError("read config file", path, errno != 0 ? errno : EIO);
  return ParseConfig(text, path);
}

std::vector<std::string> ConfigToFlags(const KeyValues& pairs) {
  std::vector<std::string> flags;
  flags.reserve(pairs.size());
  for (const auto& [k, v] : pairs) flags.push_back(absl::StrCat("--", k, "=", v));
  return flags;
}

absl::StatusOr<std::vector<std::string>> ExpandConfigArgs(const std::vector<std::string>& args,
                                                          size_t first) {
  if (first > args.size()) first = args.size();
  std::vector<std::string> rest;
  std::string path;
  bool found = false;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // end of flags: keep the remainder verbatim
      rest.insert(rest.end(), args.begin() + i, args.end());
      break;
    }
    if (absl::StartsWith(a, "--config=")) {
      path = a.substr(9);
      found = true;
    } else if (a == "--config") {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError("--config: needs a FILE");
      path = args[++i];
      found = true;
    } else {
      rest.push_back(a);
    }
  }
  if (!found) return args;
  if (path.empty()) return absl::InvalidArgumentError("--config: empty file name");
  absl::StatusOr<KeyValues> kv = ReadConfigFile(path);
  if (!kv.ok()) {
    return absl::Status(kv.status().code(), absl::StrCat("--config: ", kv.status().message()));
  }
  for (const auto& [k, v] : *kv) {
    if (k == "config") {
      return absl::InvalidArgumentError(
          absl::StrCat("--config: ", path, ": key \"config\": config files cannot include others"));
    }
  }
  std::vector<std::string> out(args.begin(), args.begin() + first);
  for (std::string& f : ConfigToFlags(*kv)) out.push_back(std::move(f));
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace iofleet::config
