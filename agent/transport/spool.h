// On-disk replay buffer for one run: an append-only file of length-prefixed,
// checksummed AgentMessage records (RunStarted, IntervalRecord, RunFinished).
//
// Every message the agent sends about a run goes here first, so that a run keeps
// going while the controller is away and nothing is lost: on reconnect the agent
// re-reads the file and replays what the controller's Welcome.next_seq says it is
// missing. Writes are plain write(2) calls (readable at once by ReadSpoolFile);
// durability comes from Sync() (fdatasync), which the owner calls in batches.
//
// File layout: records of [u32 little-endian length][u32 FNV-1a of payload][payload].
// A torn tail (crash mid-write) is detected and ignored by the reader.
//
// Thread-safety: Append() and Sync() from one thread at a time (the run's own);
// unsynced(), ClaimUnsynced() and SyncFd() from any thread, concurrently with
// them (the agent's syncer makes spools durable off the run's thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iofleet/v1/agent.pb.h"

namespace iofleet::agent {

// File names used in a spool directory for `run_id` (sanitised: characters
// outside [A-Za-z0-9._-] are hex-escaped so any id maps to one safe name).
std::string SpoolFileName(const std::string& run_id);   // "<id>.spool"
std::string SentMarkerName(const std::string& run_id);  // "<id>.sent"
std::string ReserveFileName(const std::string& run_id);  // "<id>.reserve"

// Sets `bytes` aside in `dir` for the run's last record (RunFinished with its
// result), so a full spool disk cannot take it: a file with that many bytes
// allocated, removed by ReleaseReserve just before the record is appended.
absl::Status ReserveSpace(const std::string& dir, const std::string& run_id, uint64_t bytes);
// Removes the reserve (if any). Safe to call twice.
void ReleaseReserve(const std::string& dir, const std::string& run_id);

class SpoolWriter {
 public:
  // Opens (creating if needed) dir/SpoolFileName(run_id) for appending. Truncates a
  // torn tail left by a crash so new records stay readable.
  static absl::StatusOr<std::unique_ptr<SpoolWriter>> Open(const std::string& dir,
                                                           const std::string& run_id);
  ~SpoolWriter();
  SpoolWriter(const SpoolWriter&) = delete;
  SpoolWriter& operator=(const SpoolWriter&) = delete;

  // Appends one record (one write(2)). Does not sync. On failure (e.g. ENOSPC)
  // the file is cut back to its last whole record, so later appends stay readable.
  absl::Status Append(const iofleet::v1::AgentMessage& msg);
  // fdatasync when records were appended since the last Sync(). Cheap otherwise.
  absl::Status Sync();
  // Sync() split for another thread: ClaimUnsynced() takes the count of records
  // appended since the last sync (0: nothing to do); SyncFd() then makes them (and
  // any appended meanwhile) durable.
  uint32_t ClaimUnsynced() { return unsynced_.exchange(0); }
  absl::Status SyncFd() const;
  // Records appended since the last Sync() or ClaimUnsynced().
  uint32_t unsynced() const { return unsynced_.load(); }
  const std::string& path() const { return path_; }

 private:
  SpoolWriter(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_;
  std::string path_;
  uint64_t size_;  // bytes of whole records in the file
  std::atomic<uint32_t> unsynced_{0};
};

// Reads every complete record of a spool file, in append order. A torn or corrupt
// tail ends the read (those records are dropped); a missing file is NotFound.
absl::StatusOr<std::vector<iofleet::v1::AgentMessage>> ReadSpoolFile(const std::string& path);

// Byte offset just past the last valid record (for tail repair).
absl::StatusOr<uint64_t> ValidSpoolLength(const std::string& path);

}  // namespace iofleet::agent
