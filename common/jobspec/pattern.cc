#include "common/jobspec/pattern.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iofleet::jobspec {
namespace {

absl::Status Bad(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("is not a valid pattern: ", why));
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10;
}

bool IsHexStart(std::string_view t, size_t i) {
  return i + 2 < t.size() && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X') &&
         absl::ascii_isxdigit(static_cast<unsigned char>(t[i + 2]));
}

}  // namespace

absl::StatusOr<Pattern> ParsePattern(std::string_view text, bool allow_formats) {
  Pattern p;
  if (text.empty()) return Bad("it is empty");
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      const size_t close = text.find(c, i + 1);
      if (close == std::string_view::npos) {
        return Bad(absl::StrFormat("the %s starting at character %d is not closed",
                                   c == '"' ? "string" : "file name", i + 1));
      }
      const std::string_view body = text.substr(i + 1, close - i - 1);
      if (body.empty()) return Bad(c == '"' ? "an empty string (\"\")" : "an empty file name ('')");
      if (c == '"') {
        p.bytes.append(body);
      } else {
        p.files.emplace_back(static_cast<uint32_t>(p.bytes.size()), std::string(body));
      }
      i = close + 1;
    } else if (c == '%') {
      if (!allow_formats) return Bad("formats (%o) are only allowed in verify_pattern");
      if (text.substr(i, 2) != "%o") return Bad("the only format is %o (the block offset)");
      p.offset_at.push_back(static_cast<uint32_t>(p.bytes.size()));
      p.bytes.append(8, '\0');
      i += 2;
    } else if (IsHexStart(text, i)) {
      size_t j = i + 2;
      while (j < text.size() && absl::ascii_isxdigit(static_cast<unsigned char>(text[j]))) ++j;
      // "0xff0x12": the '0' before 'x' starts the next hex number.
      if (j < text.size() && (text[j] == 'x' || text[j] == 'X') && text[j - 1] == '0' && j - 1 > i + 2) {
        --j;
      }
      std::string_view d = text.substr(i + 2, j - i - 2);
      if (d.size() % 2 == 1) {
        p.bytes.push_back(static_cast<char>(HexVal(d[0])));
        d.remove_prefix(1);
      }
      for (size_t k = 0; k < d.size(); k += 2) {
        p.bytes.push_back(static_cast<char>(HexVal(d[k]) * 16 + HexVal(d[k + 1])));
      }
      i = j;
    } else {
      // A decimal integer, read up to the next "0x" (fio's rule).
      size_t stop = text.size();
      for (size_t k = i; k + 1 < text.size(); ++k) {
        if (text[k] == '0' && (text[k + 1] == 'x' || text[k + 1] == 'X')) {
          stop = k;
          break;
        }
      }
      size_t j = i;
      if (j < stop && (text[j] == '-' || text[j] == '+')) ++j;
      const size_t digits = j;
      while (j < stop && absl::ascii_isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j == digits) {
        if (stop == i && i + 1 < text.size()) {
          // "0x" at i with no hex digit after it.
          return Bad(absl::StrFormat("\"0x\" at character %d has no hex digits", i + 1));
        }
        return Bad(absl::StrFormat("unexpected '%c' at character %d (expected 0x.., a number, "
                                   "\"string\" or 'file')",
                                   text[i], i + 1));
      }
      const std::string num(text.substr(i, j - i));
      errno = 0;
      const long long v = std::strtoll(num.c_str(), nullptr, 10);
      if (errno != 0 || v > INT_MAX || v < INT_MIN) {
        return Bad(absl::StrCat("the number ", num, " does not fit in 32 bits (use 0x for longer)"));
      }
      if (v == 0) {
        p.bytes.push_back('\0');
      } else {
        for (uint32_t u = static_cast<uint32_t>(v); u != 0; u >>= 8) {
          p.bytes.push_back(static_cast<char>(u & 0xff));
        }
      }
      i = j;
    }
    if (p.bytes.size() > kMaxPatternBytes) {
      return Bad(absl::StrCat("it is longer than ", kMaxPatternBytes, " bytes"));
    }
  }
  return p;
}

absl::Status ResolvePatternFiles(Pattern& p) {
  if (p.files.empty()) return absl::OkStatus();
  std::string out;
  std::vector<uint32_t> offsets;
  size_t pos = 0, next_off = 0;
  for (const auto& [at, name] : p.files) {
    // Bytes before this file piece, carrying %o positions along.
    while (next_off < p.offset_at.size() && p.offset_at[next_off] < at) {
      offsets.push_back(static_cast<uint32_t>(out.size() + (p.offset_at[next_off] - pos)));
      ++next_off;
    }
    out.append(p.bytes, pos, at - pos);
    pos = at;
    const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pattern file '", name, "': ", std::strerror(errno)));
    }
    const size_t room = kMaxPatternBytes > out.size() + (p.bytes.size() - pos)
                            ? kMaxPatternBytes - out.size() - (p.bytes.size() - pos)
                            : 0;
    std::string buf(room, '\0');
    const ssize_t n = room > 0 ? ::read(fd, buf.data(), room) : 0;
    const int err = errno;
    ::close(fd);
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrCat("pattern file '", name, "': ", std::strerror(err)));
    }
    if (n == 0) {
      return absl::InvalidArgumentError(absl::StrCat("pattern file '", name,
                                                     "' is empty (or leaves no room in 512 bytes)"));
    }
    out.append(buf, 0, static_cast<size_t>(n));
  }
  while (next_off < p.offset_at.size()) {
    offsets.push_back(static_cast<uint32_t>(out.size() + (p.offset_at[next_off] - pos)));
    ++next_off;
  }
  out.append(p.bytes, pos, std::string::npos);
  p.bytes = std::move(out);
  p.offset_at = std::move(offsets);
  p.files.clear();
  return absl::OkStatus();
}

void FillPattern(const Pattern& p, uint64_t offset, char* out, size_t len) {
  const size_t n = p.bytes.size();
  if (n == 0 || len == 0) return;
  const size_t first = std::min(n, len);
  std::memcpy(out, p.bytes.data(), first);
  for (uint32_t at : p.offset_at) {
    if (at >= first) break;
    const size_t k = std::min<size_t>(8, first - at);
    std::memcpy(out + at, &offset, k);  // little-endian hosts only (x86-64, arm64)
  }
  // Double the filled prefix until the buffer is full.
  size_t filled = first;
  while (filled < len) {
    const size_t k = std::min(filled, len - filled);
    std::memcpy(out + filled, out, k);
    filled += k;
  }
}

}  // namespace iofleet::jobspec
