// fio's pattern grammar for buffer_pattern and verify_pattern: a sequence of
//   0x<hex digits>   bytes in the order written (an odd count: the first digit
//                    alone is a byte); a hex run whose last digit is the '0' of a
//                    following "0x" stops before it
//   <decimal>        a 32-bit integer, its bytes little-endian, as few as it
//                    needs (0 is one zero byte; -12 is f4 ff ff ff)
//   "text"           the bytes between the quotes
//   'file'           the file's contents (read by the agent, not when parsing)
//   %o               (verify_pattern only) the I/O's offset, 8 bytes
//                    little-endian, pasted where it stands
// at most 512 bytes in all, as in fio. The pattern repeats over a buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace iofleet::jobspec {

inline constexpr size_t kMaxPatternBytes = 512;

struct Pattern {
  std::string bytes;                 // the pattern (placeholders zero-filled)
  std::vector<uint32_t> offset_at;   // positions of %o (8 bytes each) in `bytes`
  // 'file' pieces: (position in `bytes`, file name); the agent reads each file
  // and splices its contents in at that position (ResolvePatternFiles).
  std::vector<std::pair<uint32_t, std::string>> files;
};

// Parses `text`. Errors are a message tail ("is not a valid pattern: ...").
absl::StatusOr<Pattern> ParsePattern(std::string_view text, bool allow_formats);

// Reads the pattern's 'file' pieces into it (each up to what is left of the 512
// bytes), shifting later positions. Errors name the file.
absl::Status ResolvePatternFiles(Pattern& p);

// Fills out[0..len) with the pattern repeated from its first byte, with %o
// replaced by `offset` (in every repetition, as fio pastes it once and spreads
// the result).
void FillPattern(const Pattern& p, uint64_t offset, char* out, size_t len);

}  // namespace iofleet::jobspec
