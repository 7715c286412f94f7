// The checksums fio's verify= offers, each computed the way fio 3.33 computes
// and stores it, so a block iofleet writes verifies under fio and the other way
// round (agent/workload/verify.h says which types that holds for).
//
// The CRCs are table driven (tables built at compile time from the polynomial);
// crc32c uses the SSE4.2 instruction where the CPU has it. The cryptographic
// digests come from OpenSSL (libcrypto) through a context made once per job.
//
// Thread-safety: the free functions are pure; a Digester belongs to one thread.
// Nothing here allocates after Digester::Create.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

// CRC-32C (Castagnoli, reflected 0x82F63B78), initial value ~0 and, as fio's
// crc32c, no final inversion (standard CRC-32C == ~Crc32c()).
uint32_t Crc32c(const void* data, size_t len);
// fio's crc32: MSB-first polynomial 0x04C11DB7, initial value 0, no final
// inversion (the core of POSIX cksum, without the length).
uint32_t Crc32(const void* data, size_t len);
// fio's crc64: reflected, polynomial 0x95AC9329AC4BC9B5 applied LSB first,
// initial value 0, no final inversion.
uint64_t Crc64(const void* data, size_t len);
// fio's crc16: reflected 0x8005 (0xA001), initial value 0 (CRC-16/ARC).
uint16_t Crc16(const void* data, size_t len);
// fio's crc7: x^7 + x^3 + 1, MSB first, initial value 0; a 7-bit value (the
// MMC CRC-7).
uint8_t Crc7(const void* data, size_t len);
// xxHash32 (Yann Collet's XXH32) of `data` with `seed` (fio uses seed 1).
uint32_t XxHash32(const void* data, size_t len, uint32_t seed);

// Bytes of checksum a verify type stores after the verify header (0 for
// meta, pattern and null, which store none).
size_t ChecksumBytes(jobspec::VerifyType type);

// Computes the checksum of `type` over `data` into `out` (ChecksumBytes(type)
// bytes), in the byte order fio stores it: integers little-endian, md5 and the
// sha3 digests as the standard digest bytes, sha1 as its five 32-bit words in
// little-endian order (fio keeps them in host order). sha256 and sha512 are
// fio 3.33's own functions, byte for byte (not the standard digests: fio
// stores a 64-byte sha256 context buffer and an unfinalised 128-byte sha512
// buffer; see checksum.cc), so fio and iofleet check each other's blocks.
class Digester {
 public:
  static absl::StatusOr<std::unique_ptr<Digester>> Create(jobspec::VerifyType type);
  ~Digester();
  Digester(const Digester&) = delete;
  Digester& operator=(const Digester&) = delete;

  jobspec::VerifyType type() const { return type_; }
  size_t size() const { return size_; }
  void Compute(const void* data, size_t len, uint8_t* out);

 private:
  Digester() = default;
  jobspec::VerifyType type_ = jobspec::VerifyType::kNone;
  size_t size_ = 0;
  const void* md_ = nullptr;  // EVP_MD* for the OpenSSL digests
  void* ctx_ = nullptr;       // EVP_MD_CTX*, reused
};

}  // namespace iofleet::agent::workload
