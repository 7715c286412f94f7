// The writer thread's own rules, with a commit function that fails on cue
// (the real faults, a full disk and a stopped database, are in the backends'
// tests: faults.disk_full, PostgresStoreTest.*).
#include "controller/store/batch_writer.h"

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::controller::internal {
namespace {

// A "database": a set of interval keys; fails with `failure` while `down`.
struct FakeDb {
  std::mutex mu;
  bool down = false;
  absl::Status failure = absl::UnavailableError("database is away");
  std::set<std::pair<std::string, uint64_t>> rows;
  int commits = 0;

  absl::Status Commit(std::vector<std::unique_ptr<WriterItem>>& items) {
    std::lock_guard<std::mutex> l(mu);
    ++commits;
    if (down) return failure;
    for (auto& it : items) {
      if (it->kind == WriterItem::kInterval) {
        it->inserted = rows.insert({it->interval.run_id, it->interval.seq}).second;
      }
    }
    return absl::OkStatus();
  }
  void SetDown(bool d) {
    std::lock_guard<std::mutex> l(mu);
    down = d;
  }
};

IntervalRow Rec(uint64_t seq) {
  IntervalRow r;
  r.run_id = "r";
  r.seq = seq;
  return r;
}

TEST(BatchWriterTest, RetriesRecordsUntilTheDatabaseIsBackAndAcksOnce) {
  FakeDb db;
  db.SetDown(true);
  std::atomic<int> acks{0}, inserted{0};
  {
    BatchWriter w(64, [&db](auto& items) { return db.Commit(items); });
    for (uint64_t i = 0; i < 10; ++i) {
      w.AppendInterval(Rec(i), [&](bool ins) {
        ++acks;
        inserted += ins;
      });
    }
    // While the database is away: batches fail at once with its error, a flush
    // does not claim the records are stored, and no record is acknowledged.
    WriteBatch b;
    b.upsert_jobs = {JobRow{}};
    EXPECT_TRUE(absl::IsUnavailable(w.Write(std::move(b))));
    EXPECT_TRUE(absl::IsUnavailable(w.Flush()));
    EXPECT_EQ(acks.load(), 0);
    db.SetDown(false);
    absl::Status flushed = w.Flush();
    for (int i = 0; i < 100 && !flushed.ok(); ++i) flushed = w.Flush();
    EXPECT_TRUE(flushed.ok()) << flushed;
    EXPECT_EQ(acks.load(), 10);
    EXPECT_EQ(inserted.load(), 10);
  }
  EXPECT_EQ(db.rows.size(), 10u);
}

TEST(BatchWriterTest, OtherErrorsAreNotRetried) {
  FakeDb db;
  db.failure = absl::InvalidArgumentError("bad data");
  db.SetDown(true);
  std::atomic<int> acks{0}, inserted{0};
  BatchWriter w(64, [&db](auto& items) { return db.Commit(items); });
  w.AppendInterval(Rec(1), [&](bool ins) {
    ++acks;
    inserted += ins;
  });
  EXPECT_EQ(w.Flush().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(acks.load(), 1);  // answered (not stored), not held
  EXPECT_EQ(inserted.load(), 0);
}

TEST(BatchWriterTest, StopDrainsTheQueueAndRefusesNewItems) {
  FakeDb db;
  std::atomic<int> inserted{0};
  BatchWriter w(8, [&db](auto& items) { return db.Commit(items); });
  for (uint64_t i = 0; i < 100; ++i) w.AppendInterval(Rec(i), [&](bool ins) { inserted += ins; });
  w.Stop();
  EXPECT_EQ(inserted.load(), 100);
  EXPECT_GE(db.commits, 100 / 8);
  bool refused = false;
  w.AppendInterval(Rec(1000), [&](bool ins) { refused = !ins; });
  EXPECT_TRUE(refused);
  EXPECT_TRUE(absl::IsUnavailable(w.Flush()));
}

}  // namespace
}  // namespace iofleet::controller::internal
