// Control characters in names that reach a terminal or a page: found at the
// API's door (names, tags, labels are refused with them) and escaped on output
// (data from older stores may still hold them).
//
// A control character is a C0 byte (0x00-0x1f), DEL (0x7f), or a C1 code point
// (U+0080-U+009F, UTF-8 bytes 0xc2 0x80-0x9f), which some terminals also obey.
// Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace iofleet {

// Byte offset of the first control character in `s`; std::string_view::npos if none.
size_t FindControlChar(std::string_view s);

// "control character 0x1b at byte 3" for the first one in `s`; empty if none.
std::string DescribeControlChar(std::string_view s);

// `s` with every control character replaced by a visible escape: "\n", "\r",
// "\t", "\0"-style C0 as "\x1b", DEL as "\x7f", C1 as "\u009b". With
// `keep_layout`, '\n' and '\t' pass through (multi-line text such as a
// rendered table). Everything else, including other UTF-8, is unchanged.
std::string EscapeControlChars(std::string_view s, bool keep_layout = false);

}  // namespace iofleet
