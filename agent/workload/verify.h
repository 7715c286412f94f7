// Data verification (fio's verify=): what a write puts in its buffer and how a
// read is checked.
//
// Block layout. A written block is cut into verify_interval pieces (the block
// size when unset). Each piece starts with a 40-byte header, then the checksum
// of the piece's remaining bytes, then those bytes:
//
//   offset  size  field
//        0     2  magic 0xacca
//        2     2  verify type (fio's number: md5 2, crc32c 5, ..., pattern 17)
//        4     4  piece length (the interval)
//        8     8  seed of the piece's random contents
//       16     8  file offset of the piece
//       24     4  time of the write, seconds (CLOCK_REALTIME)
//       28     4  ... nanoseconds
//       32     2  job number (fio's thread_number)
//       34     2  write number in the job, mod 2^16 (fio's numberio)
//       36     4  crc32c (fio's variant, checksum.h) of bytes 0..35
//       40     n  checksum of bytes 40+n..interval (n = ChecksumBytes(type))
//
// all little-endian. That is fio 3.33's layout, field for field, so fio checks
// blocks iofleet wrote and iofleet checks blocks fio wrote, for every type
// (sha256 and sha512 included: iofleet reproduces fio 3.33's non-standard
// 64- and 128-byte values, checksum.h; fio's sha512 value depends only on the
// first 128 bytes and the bytes after the last whole 128-byte block, so it
// misses most corruption: use another type to catch it).
// verify=pattern writes no header (the pattern alone); verify_pattern with a
// checksum type or meta writes the header and then the pattern; verify_offset
// swaps the header (and checksum) with the bytes that many bytes into the piece.
//
// Checks, as fio's verify_io_u: per piece, the header (magic, length, seed
// where known, offset, write number where meaningful, header crc), then the
// checksum or pattern. A failure returns EILSEQ and appends fio's message lines
// ("md5: verify failed at file F offset O, length L (requested block: ...)",
// "       Expected CRC: ...", "       Received CRC: ...") to `log`.
//
// Thread-safety: one BlockVerifier per worker thread (it owns a digest context).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/workload/checksum.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/pattern.h"

namespace iofleet::agent::workload {

inline constexpr uint16_t kVerifyMagic = 0xacca;
inline constexpr size_t kVerifyHeaderBytes = 40;

struct VerifyHeader {
  uint16_t magic;
  uint16_t verify_type;
  uint32_t len;
  uint64_t rand_seed;
  uint64_t offset;
  uint32_t time_sec;
  uint32_t time_nsec;
  uint16_t thread;
  uint16_t numberio;
  uint32_t crc32;
};
static_assert(sizeof(VerifyHeader) == kVerifyHeaderBytes);

struct VerifyOptions {
  jobspec::VerifyType type = jobspec::VerifyType::kNone;
  uint32_t interval = 0;       // bytes per header; 0 = the whole I/O
  uint32_t header_offset = 0;  // verify_offset
  jobspec::Pattern pattern;    // verify_pattern (files read); empty = random data
  uint32_t compress_pct = 0;   // buffer_compress_percentage for the random data
  bool fatal = false;          // verify_fatal: stop at the first bad piece
  bool dump = false;           // verify_dump
  std::string dump_dir;        // where verify_dump writes ("" = working directory)
  uint16_t thread_number = 1;
};

// What a read is checked against. Fields left at their "unknown" value are not
// checked (a job that only reads knows neither seed nor write number).
struct Expected {
  uint64_t offset = 0;          // the block's file offset
  uint32_t len = 0;             // bytes
  uint64_t seed = 0;
  bool check_seed = false;
  uint16_t numberio = 0;
  bool check_numberio = false;
  // What fio prints as the read's io_u flags in a failure line: in flight
  // (IO_U_F_IN_CUR_DEPTH, 0x8), plus 0x80 (IO_U_F_VER_LIST) for the read-back
  // of a logged write.
  uint32_t io_flags = 0x8;
};

class BlockVerifier {
 public:
  static absl::StatusOr<std::unique_ptr<BlockVerifier>> Create(VerifyOptions options);

  const VerifyOptions& options() const { return o_; }
  // Bytes the header and checksum take at the start of each piece (0 for
  // verify=pattern).
  size_t header_bytes() const { return header_bytes_; }
  // Piece size for an I/O of `len` bytes.
  uint32_t Interval(uint32_t len) const {
    return o_.interval != 0 && o_.interval <= len ? o_.interval : len;
  }

  // Fills buf[0..len) for a write at `offset`: contents from `seed` (or the
  // pattern), then a header per piece (fio's populate_verify_io_u).
  void Populate(char* buf, uint32_t len, uint64_t offset, uint64_t seed, uint16_t numberio,
                uint64_t realtime_ns);

  // Checks buf[0..e.len) read from `file` at e.offset. 0 or EILSEQ; messages
  // in fio's words appended to *log.
  int Check(char* buf, const Expected& e, const std::string& file, std::string* log);

  // Checks that a trimmed block reads back as zeroes (trim_verify_zero).
  static int CheckZero(const char* buf, uint64_t offset, uint32_t len, const std::string& file,
                       std::string* log);

 private:
  static constexpr int kBadHeader = -1;  // CheckPiece: the header is bad
  explicit BlockVerifier(VerifyOptions o) : o_(std::move(o)) {}
  void FillData(char* buf, uint32_t len, uint64_t offset, uint64_t seed);
  int CheckPiece(char* piece, uint32_t piece_len, uint32_t piece_num, const Expected& e,
                 const std::string& file, std::string* log);
  int CheckPattern(const char* piece, uint32_t piece_len, uint32_t piece_num, const Expected& e,
                   const std::string& file, std::string* log);
  void Dump(const char* data, uint32_t len, uint64_t offset, const char* kind,
            const std::string& file, std::string* log) const;
  void LogFailure(const char* name, const Expected& e, uint32_t piece_num, uint32_t piece_len,
                  const uint8_t* good, const uint8_t* bad, size_t n, const std::string& file,
                  std::string* log);

  VerifyOptions o_;
  size_t header_bytes_ = 0;
  std::unique_ptr<Digester> digester_;
};

}  // namespace iofleet::agent::workload
