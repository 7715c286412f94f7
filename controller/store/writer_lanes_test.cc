// The writer's two lanes (batch_writer.h) on a real SQLite file: a Write batch
// is committed ahead of interval records queued before it, while a flush, and
// so a run's end written after a flush, never overtakes the records queued
// before it; no record is lost or stored twice.
//
// To queue work deterministically the writer is held inside the commit
// callback of one record (it runs on the writer thread after its transaction),
// and the test waits on the writer's queue counts (Store::Stats), not on time.
// Each later record's callback asks the file itself, through its own SQLite
// connection, whether the batch was committed by then.
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/temp_dir.h"
#include "controller/store/sqlite_store.h"
#include "controller/store/store_conformance.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using conformance::Interval;
using conformance::Job;
using conformance::MakeRun;
using iofleet::testing::TempDir;

constexpr int kMaxBatch = 4;  // small, so 40 queued records take 10 transactions
constexpr uint64_t kRecords = 40;

// Counts rows through a connection of the test's own (the store's are its own).
class Reader {
 public:
  explicit Reader(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_busy_timeout(db_, 10000);
  }
  ~Reader() { sqlite3_close(db_); }
  int64_t Count(const std::string& sql) {
    std::lock_guard<std::mutex> l(mu_);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    int64_t n = -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
  }

 private:
  std::mutex mu_;
  sqlite3* db_ = nullptr;
};

class WriterLanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("lanes.db");
    SqliteStoreOptions o;
    o.max_batch = kMaxBatch;
    auto s = OpenSqliteStore(path_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    WriteBatch b;
    b.upsert_jobs = {Job("j1")};
    b.upsert_runs = {MakeRun("r1", "j1", 1)};
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
    reader_ = std::make_unique<Reader>(path_);
  }

  // Queues record 0 of r1 and returns once the writer thread is inside its
  // callback, where it stays until Release().
  void HoldWriter() {
    std::future<void> is_held = held_.get_future();
    store_->AppendInterval(Interval("r1", 0, 0), [this](bool inserted) {
      EXPECT_TRUE(inserted);
      held_.set_value();
      release_.wait();
    });
    is_held.wait();
  }
  void Release() {
    if (!released_) go_.set_value();
    released_ = true;
  }
  void TearDown() override { Release(); }  // never leave the writer held

  // Waits (no time bound of its own: ctest's timeout is the bound) until the
  // writer's queue holds the `items` the test put there, in either lane (so a
  // writer that files an item in the wrong lane fails the test's checks, not
  // this wait).
  void AwaitQueued(uint64_t items) {
    for (;;) {
      const StoreStats s = store_->Stats();
      if (s.queued_batches + s.queued_in_order == items) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Records 1..kRecords of r1; each one's callback notes whether `probe`
  // (a count query) found the row it looks for already committed.
  void QueueRecords(const std::string& probe) {
    for (uint64_t seq = 1; seq <= kRecords; ++seq) {
      store_->AppendInterval(Interval("r1", 0, seq), [this, probe](bool inserted) {
        const bool seen = reader_->Count(probe) > 0;
        std::lock_guard<std::mutex> l(mu_);
        (inserted ? inserted_ : not_inserted_) += 1;
        (seen ? after_ : before_) += 1;
      });
    }
  }

  void ExpectEveryRecordStoredOnce() {
    ASSERT_TRUE(store_->Flush().ok());
    std::lock_guard<std::mutex> l(mu_);
    EXPECT_EQ(inserted_, static_cast<int>(kRecords));
    EXPECT_EQ(not_inserted_, 0);
    auto counts = store_->IntervalCounts("r1");
    ASSERT_TRUE(counts.ok()) << counts.status();
    ASSERT_EQ(counts->size(), 1u);
    EXPECT_EQ(counts->at(0).first, kRecords + 1);   // records stored
    EXPECT_EQ(counts->at(0).second, kRecords + 1);  // highest seq + 1: no hole
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Reader> reader_;
  std::promise<void> held_;
  std::promise<void> go_;
  std::shared_future<void> release_ = go_.get_future().share();
  bool released_ = false;
  std::mutex mu_;
  int inserted_ = 0, not_inserted_ = 0;
  int before_ = 0;  // records committed before the probed row
  int after_ = 0;   // records committed with it or after it
};

// The lane's point: the control loop's batch (here a job's state) does not
// wait behind the interval records queued before it. In one FIFO all 40 were
// committed first.
TEST_F(WriterLanesTest, ABatchIsCommittedAheadOfRecordsQueuedBeforeIt) {
  HoldWriter();
  QueueRecords("SELECT count(*) FROM jobs WHERE id = 'j2'");
  std::thread loop([this] {
    WriteBatch b;
    b.upsert_jobs = {Job("j2")};
    EXPECT_TRUE(store_->Write(std::move(b)).ok());
  });
  AwaitQueued(kRecords + 1);
  Release();
  loop.join();
  ExpectEveryRecordStoredOnce();
  std::lock_guard<std::mutex> l(mu_);
  EXPECT_EQ(before_, 0) << "records queued before the batch were committed ahead of it";
  EXPECT_EQ(after_, static_cast<int>(kRecords));
}

// Records before results: what Scheduler::PrepareFinished does when a run's
// records are still queued (a Flush), then what the control loop commits (the
// run's end and result, a priority batch). Not one record may be committed
// after the result. A lane that let the flush (or the end) ahead of the
// records fails here.
TEST_F(WriterLanesTest, AFinishWrittenAfterAFlushNeverOvertakesItsRecords) {
  HoldWriter();
  QueueRecords("SELECT count(*) FROM results WHERE run_id = 'r1'");
  std::thread finisher([this] {
    EXPECT_TRUE(store_->Flush().ok());
    WriteBatch b;
    RunRow r = MakeRun("r1", "j1", 1);
    r.state = RunState::kSucceeded;
    b.upsert_runs = {r};
    b.results = {ResultRow{"r1", true, "", "{}", kRecords + 1, 2000, ""}};
    EXPECT_TRUE(store_->Write(std::move(b)).ok());
  });
  AwaitQueued(kRecords + 1);  // the records and the flush
  // Other state batches meanwhile still go ahead of the records.
  std::thread other([this] {
    WriteBatch b;
    b.upsert_jobs = {Job("j2")};
    EXPECT_TRUE(store_->Write(std::move(b)).ok());
  });
  AwaitQueued(kRecords + 2);
  Release();
  other.join();
  finisher.join();
  ExpectEveryRecordStoredOnce();
  EXPECT_EQ(reader_->Count("SELECT count(*) FROM results WHERE run_id = 'r1'"), 1);
  std::lock_guard<std::mutex> l(mu_);
  EXPECT_EQ(after_, 0) << "the run's result was committed before some of its records";
  EXPECT_EQ(before_, static_cast<int>(kRecords));
}

// Many writers at once, small transactions: every record is acknowledged once
// and stored once, every batch committed, whatever the interleaving.
TEST_F(WriterLanesTest, RecordsAndBatchesFromManyThreadsAreNeitherLostNorDuplicated) {
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 300;
  std::atomic<int> acks{0}, inserted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        store_->AppendInterval(Interval("r1", static_cast<uint32_t>(t), i), [&](bool ins) {
          ++acks;
          inserted += ins;
        });
        if (i % 30 == 0) {
          WriteBatch b;
          b.upsert_jobs = {Job("jt" + std::to_string(t) + "-" + std::to_string(i))};
          EXPECT_TRUE(store_->Write(std::move(b)).ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(acks.load(), kThreads * static_cast<int>(kPerThread));
  EXPECT_EQ(inserted.load(), kThreads * static_cast<int>(kPerThread));
  EXPECT_EQ(reader_->Count("SELECT count(*) FROM intervals"),
            kThreads * static_cast<int64_t>(kPerThread));
  EXPECT_EQ(reader_->Count("SELECT count(*) FROM jobs"), 1 + kThreads * 10);
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.queued_batches, 0u);
  EXPECT_EQ(s.queued_in_order, 0u);
}

}  // namespace
}  // namespace iofleet::controller
