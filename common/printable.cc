#include "common/printable.h"

#include <cstdio>

namespace iofleet {
namespace {

// Length of the control character at s[i] (1 for C0/DEL, 2 for a UTF-8 C1), or 0.
size_t ControlAt(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7f) return 1;
  if (c == 0xc2 && i + 1 < s.size()) {
    const unsigned char d = static_cast<unsigned char>(s[i + 1]);
    if (d >= 0x80 && d <= 0x9f) return 2;
  }
  return 0;
}

}  // namespace

size_t FindControlChar(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (ControlAt(s, i) != 0) return i;
  }
  return std::string_view::npos;
}

std::string DescribeControlChar(std::string_view s) {
  const size_t i = FindControlChar(s);
  if (i == std::string_view::npos) return "";
  char buf[64];
  if (ControlAt(s, i) == 2) {
    snprintf(buf, sizeof(buf), "control character U+%04X at byte %zu",
             static_cast<unsigned>(static_cast<unsigned char>(s[i + 1])), i);
  } else {
    snprintf(buf, sizeof(buf), "control character 0x%02x at byte %zu",
             static_cast<unsigned>(static_cast<unsigned char>(s[i])), i);
  }
  return buf;
}

std::string EscapeControlChars(std::string_view s, bool keep_layout) {
  if (FindControlChar(s) == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t n = ControlAt(s, i);
    const char c = s[i];
    if (n == 0 || (keep_layout && (c == '\n' || c == '\t'))) {
      out.push_back(c);
      continue;
    }
    char buf[8];
    if (n == 2) {
      snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(s[i + 1])));
      ++i;
    } else if (c == '\n') {
      snprintf(buf, sizeof(buf), "\\n");
    } else if (c == '\r') {
      snprintf(buf, sizeof(buf), "\\r");
    } else if (c == '\t') {
      snprintf(buf, sizeof(buf), "\\t");
    } else {
      snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    }
    out += buf;
  }
  return out;
}

}  // namespace iofleet
