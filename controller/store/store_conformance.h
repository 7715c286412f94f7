// The store conformance suite: what every Store backend must do, checked the
// same way on each (a gtest typed test suite). A new backend is checked by one
// file that instantiates it with a Backend class:
//
//   struct MyBackend {
//     static constexpr const char* kName = "my";
//     // A fresh, empty location for this test (a temp dir, a new database).
//     // NotFound: the backend cannot run here (the test skips, saying why).
//     absl::Status SetUp();
//     // Opens the store at that location, initialising it the first time.
//     absl::StatusOr<std::unique_ptr<Store>> Open();
//     // Opens a store at a second, separate location (another identity).
//     absl::StatusOr<std::unique_ptr<Store>> OpenOther();
//     void TearDown();  // removes the locations (stores are closed by then)
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(My, StoreConformanceTest, MyBackend);
//
// Backend-specific behaviour (schema migrations of a file, init rules of a
// data dir or database, reconnecting) is tested beside each backend.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/store/row_codec.h"
#include "controller/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::conformance {

inline JobRow Job(const std::string& id) {
  JobRow j;
  j.id = id;
  j.name = "name-" + id;
  j.state = "queued";
  j.created_ms = 1000;
  j.spec_json = "{}";
  return j;
}

inline RunRow MakeRun(const std::string& id, const std::string& job_id, int64_t pos) {
  RunRow r;
  r.id = id;
  r.job_id = job_id;
  r.queue_pos = pos;
  r.host = "host-a";
  r.targets = {"/dev/nvme0n1"};
  r.fio_text = "[j]\nrw=read\n";
  r.created_ms = 1000;
  return r;
}

inline IntervalRow Interval(const std::string& run_id, uint32_t job_index, uint64_t seq) {
  IntervalRow r;
  r.run_id = run_id;
  r.job_index = job_index;
  r.job_name = "j";
  r.seq = seq;
  r.t_start_ms = seq * 1000;
  r.t_end_ms = seq * 1000 + 1000;
  r.dir[0].ios = 10 + seq;
  r.dir[0].bytes = 4096 * (10 + seq);
  r.dir[0].clat_hist = {{100, 3}, {200, 7}};
  if (seq % 2 == 0) {  // total latency measured in every other record (NULL in the rest)
    r.dir[0].lat_measured = true;
    r.dir[0].lat_hist = {{110, 3}, {210, 7}};
  }
  return r;
}

// Text that trips naive quoting and escaping: quotes, backslashes, COPY's and
// array syntax's specials, control characters, multi-byte UTF-8.
inline std::string Awkward(const std::string& tag) {
  return tag + " 'q' \"dq\" \\ back\\slash\ttab\nnewline\r{a,b} (x) % _ ; -- é ü 測試 🚀";
}

template <typename T>
std::vector<std::string> Rows(const std::vector<T>& rows) {
  std::vector<std::string> out;
  for (const T& r : rows) out.push_back(internal::RowJson(r));
  return out;
}

template <typename Backend>
class StoreConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status s = backend_.SetUp();
    if (absl::IsNotFound(s)) GTEST_SKIP() << Backend::kName << ": " << s;
    ASSERT_TRUE(s.ok()) << s;
    set_up_ = true;
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    if (set_up_) backend_.TearDown();
  }

  // Closes the store (draining its queue) and opens it again.
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> s = backend_.Open();
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  Store& store() { return *store_; }
  void WriteOk(WriteBatch b) { ASSERT_TRUE(store_->Write(std::move(b)).ok()); }

  // A run with every field set to something other than its default.
  static RunRow FullRun(const std::string& id, const std::string& job_id) {
    RunRow r;
    r.id = id;
    r.job_id = job_id;
    r.queue_pos = 42;
    r.host = "host-é";
    r.targets = {"/dev/nvme0n1", Awkward("target")};
    r.targets_resolved = true;
    r.target_ids = {{"/dev/disk/by-id/x", "/dev/nvme0n1p1", {"blk:259:0", "blk:259:1"}},
                    {Awkward("p"), Awkward("rp"), {}}};
    r.state = RunState::kRunning;
    r.variant = Awkward("variant");
    r.cell = "iodepth=32";
    r.repetition = 3;
    r.warmup = true;
    r.attempt = 2;
    r.retry_of = "j-0-lost";
    r.fio_text = "[global]\nfilename=" + Awkward("f") + "\n[j]\nrw=randread\n";
    r.num_clones = 4;
    r.created_ms = 1700000000001;
    r.assigned_ms = 1700000000002;
    r.started_ms = 1700000000003;
    r.finished_ms = 1700000000004;
    r.error = Awkward("error");
    r.samples_incomplete = true;
    r.missing_seqs = {{0, 2, 16}, {3, 5, 5}};
    r.samples_note = Awkward("note");
    r.arm_json = R"([["variant","iodepth","32"],["host","filename","/dev/x"]])";
    r.audit = "arm audit: " + Awkward("audit");
    return r;
  }

  Backend backend_;
  std::unique_ptr<Store> store_;
  bool set_up_ = false;
};

TYPED_TEST_SUITE_P(StoreConformanceTest);

// Every field of every row type comes back as written, across a reopen.
TYPED_TEST_P(StoreConformanceTest, EveryFieldRoundTrips) {
  AgentRow a;
  a.name = "agent-é";
  a.state = "up";
  a.last_seen_ms = 1700000000123;
  a.labels = {{"rack", "r1"}, {"k", Awkward("label")}};
  a.inventory_json = R"({"hostname":"h","devices":[{"path":"/dev/nvme0n1"}]})";
  a.allow_paths = {"/dev/", Awkward("allow")};
  a.protocol_version = 3;
  a.registered_ms = 1700000000000;
  a.inventory_hash = "3f2a9c";
  JobRow j = Job("j1");
  j.name = Awkward("job");
  j.state = "running";
  j.spec_json = R"({"fio":"[j]\nrw=read\n","tags":{"a":"b"}})";
  j.retries = 2;
  j.cancel_requested = true;
  RunRow r = this->FullRun("j1-1", "j1");
  LeaseRow l{"host-é", "blk:259:0", "j1-1", 1700000000005, Awkward("lease path")};
  ResultRow res{"j1-1", true, Awkward("res"), R"({"jobs":[{"jobname":"j"}]})", 77,
                1700000000006, "null_blk::fw=:lba=512:cap=1073741824"};
  WriteBatch b;
  b.upsert_agents = {a};
  b.upsert_jobs = {j};
  b.upsert_runs = {r};
  b.acquire_leases = {l};
  b.results = {res};
  this->WriteOk(std::move(b));
  IntervalRow iv = Interval("j1-1", 3, 9);
  iv.job_name = Awkward("clone");
  for (int d = 0; d < 3; ++d) {
    iv.dir[d].ios = 1000 * (d + 1);
    iv.dir[d].bytes = std::numeric_limits<int64_t>::max() - d;
    iv.dir[d].errors = static_cast<uint64_t>(d);
    iv.dir[d].clat_hist = {{0, 1}, {1855, std::numeric_limits<uint64_t>::max()}};
  }
  // Total latency (issue 18): measured (read), measured with nothing done
  // (write: an empty histogram), not measured (trim: absent, stored NULL).
  iv.dir[0].lat_measured = true;
  iv.dir[0].lat_hist = {{1, 2}, {1855, std::numeric_limits<uint64_t>::max() - 1}};
  iv.dir[1].lat_measured = true;
  iv.t_start_ms = std::numeric_limits<uint64_t>::max();  // stored as its 64 bits
  this->store().AppendInterval(iv, nullptr);
  ASSERT_TRUE(this->store().Flush().ok());

  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "as written" : "after reopen");
    auto agents = this->store().ListAgents();
    ASSERT_TRUE(agents.ok()) << agents.status();
    EXPECT_EQ(Rows(*agents), Rows(std::vector<AgentRow>{a}));
    auto job = this->store().GetJob("j1");
    ASSERT_TRUE(job.ok()) << job.status();
    j.seq = job->seq;  // assigned by the store
    EXPECT_GT(job->seq, 0);
    EXPECT_EQ(internal::RowJson(*job), internal::RowJson(j));
    auto run = this->store().GetRun("j1-1");
    ASSERT_TRUE(run.ok()) << run.status();
    r.seq = run->seq;
    EXPECT_GT(run->seq, 0);
    EXPECT_EQ(internal::RowJson(*run), internal::RowJson(r));
    auto leases = this->store().ListLeases();
    ASSERT_TRUE(leases.ok()) << leases.status();
    EXPECT_EQ(Rows(*leases), Rows(std::vector<LeaseRow>{l}));
    auto got = this->store().GetResult("j1-1");
    ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
    EXPECT_EQ(internal::RowJson(**got), internal::RowJson(res));
    auto ivs = this->store().ListIntervals("j1-1");
    ASSERT_TRUE(ivs.ok()) << ivs.status();
    EXPECT_EQ(Rows(*ivs), Rows(std::vector<IntervalRow>{iv}));
    this->Reopen();
  }
}

// Upserting an existing job, run or agent changes what the scheduler updates and
// keeps the rest (seq, creation time, the run's arm and identity in its job).
TYPED_TEST_P(StoreConformanceTest, UpsertsKeepImmutableFields) {
  AgentRow a;
  a.name = "a";
  a.state = "up";
  a.registered_ms = 100;
  a.last_seen_ms = 100;
  JobRow j = Job("j1");
  RunRow r = this->FullRun("r1", "j1");
  {
    WriteBatch b;
    b.upsert_agents = {a};
    b.upsert_jobs = {j, Job("j2")};
    b.upsert_runs = {r, MakeRun("r2", "j2", 50)};
    this->WriteOk(std::move(b));
  }
  const auto job_before = this->store().GetJob("j1");
  const auto run_before = this->store().GetRun("r1");
  ASSERT_TRUE(job_before.ok() && run_before.ok());

  AgentRow a2 = a;
  a2.state = "down";
  a2.last_seen_ms = 200;
  a2.registered_ms = 999;  // ignored on update
  a2.labels = {{"x", "y"}};
  a2.protocol_version = 9;
  JobRow j2 = j;
  j2.name = "renamed";
  j2.state = "cancelled";
  j2.spec_json = "{\"x\":1}";
  j2.retries = 5;
  j2.cancel_requested = true;
  j2.created_ms = 999;  // ignored on update
  j2.seq = 12345;       // ignored
  RunRow u;             // every field different from r
  u.id = "r1";
  u.job_id = "other-job";
  u.queue_pos = 7;
  u.host = "host-b";
  u.targets = {"/dev/sdb"};
  u.state = RunState::kSucceeded;
  u.variant = "other-variant";
  u.cell = "other-cell";
  u.repetition = 9;
  u.attempt = 9;
  u.retry_of = "other";
  u.fio_text = "[k]\n";
  u.num_clones = 9;
  u.created_ms = 9;
  u.assigned_ms = 11;
  u.started_ms = 12;
  u.finished_ms = 13;
  u.error = "e";
  u.targets_resolved = false;
  u.samples_incomplete = false;
  u.samples_note = "";
  u.arm_json = "[]";
  u.audit = "ok";
  u.seq = 12345;  // ignored
  {
    WriteBatch b;
    b.upsert_agents = {a2};
    b.upsert_jobs = {j2};
    b.upsert_runs = {u};
    this->WriteOk(std::move(b));
  }
  auto agents = this->store().ListAgents();
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 1u);
  AgentRow want_a = a2;
  want_a.registered_ms = 100;
  EXPECT_EQ(internal::RowJson((*agents)[0]), internal::RowJson(want_a));

  auto job = this->store().GetJob("j1");
  ASSERT_TRUE(job.ok());
  JobRow want_j = j2;
  want_j.seq = job_before->seq;
  want_j.created_ms = j.created_ms;
  EXPECT_EQ(internal::RowJson(*job), internal::RowJson(want_j));

  auto run = this->store().GetRun("r1");
  ASSERT_TRUE(run.ok());
  RunRow want_r = u;  // mutable fields from the update...
  want_r.seq = run_before->seq;  // ...the rest as first written
  want_r.job_id = r.job_id;
  want_r.variant = r.variant;
  want_r.cell = r.cell;
  want_r.repetition = r.repetition;
  want_r.warmup = r.warmup;
  want_r.attempt = r.attempt;
  want_r.retry_of = r.retry_of;
  want_r.num_clones = r.num_clones;
  want_r.created_ms = r.created_ms;
  EXPECT_EQ(internal::RowJson(*run), internal::RowJson(want_r));

  // Updates do not move a row in insertion order.
  auto runs = this->store().ListRuns("", 0, 0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].id, "r1");
  EXPECT_EQ((*runs)[1].id, "r2");
}

TYPED_TEST_P(StoreConformanceTest, EmptyBatchAndFlushSucceed) {
  EXPECT_TRUE(this->store().Write(WriteBatch{}).ok());
  EXPECT_TRUE(this->store().Flush().ok());
  auto jobs = this->store().ListJobs(0, 0);
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

// A (host, key) lease is held by one run: a second acquire fails AlreadyExists,
// naming the lease, and nothing of its batch is applied.
TYPED_TEST_P(StoreConformanceTest, LeaseConflictRollsBackWholeBatch) {
  {
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j1"));
    b.upsert_runs = {MakeRun("r1", "j1", 1), MakeRun("r2", "j1", 2)};
    b.acquire_leases.push_back(LeaseRow{"h", "blk:259:0", "r1", 1, "/dev/disk/by-id/x"});
    this->WriteOk(std::move(b));
  }
  RunRow r2 = MakeRun("r2", "j1", 2);
  r2.state = RunState::kAssigned;
  AgentRow a;
  a.name = "new-agent";
  a.state = "up";
  WriteBatch conflict;
  conflict.upsert_agents = {a};
  conflict.upsert_jobs = {Job("j-new")};
  conflict.upsert_runs = {r2};
  conflict.acquire_leases = {LeaseRow{"h", "blk:259:1", "r2", 2, ""},
                             LeaseRow{"h", "blk:259:0", "r2", 2, "/dev/nvme0n1"}};
  conflict.results = {ResultRow{"r2", true, "", "{}", 0, 5, ""}};
  const absl::Status st = this->store().Write(std::move(conflict));
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists) << st;
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("h:blk:259:0 (/dev/nvme0n1)"));
  auto run = this->store().GetRun("r2");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, RunState::kQueued);
  EXPECT_EQ(this->store().GetJob("j-new").status().code(), absl::StatusCode::kNotFound);
  auto agents = this->store().ListAgents();
  ASSERT_TRUE(agents.ok());
  EXPECT_TRUE(agents->empty());
  auto res = this->store().GetResult("r2");
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(res->has_value());
  auto leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].run_id, "r1");

  // Two acquires of one key in one batch conflict with each other.
  WriteBatch twice;
  twice.acquire_leases = {LeaseRow{"h2", "k", "r3", 1, ""}, LeaseRow{"h2", "k", "r4", 1, ""}};
  EXPECT_EQ(this->store().Write(std::move(twice)).code(), absl::StatusCode::kAlreadyExists);
  leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->size(), 1u);

  // The same key on another host is another lease.
  WriteBatch other_host;
  other_host.acquire_leases = {LeaseRow{"h2", "blk:259:0", "r2", 3, ""}};
  EXPECT_TRUE(this->store().Write(std::move(other_host)).ok());
}

// release_leases_of_runs applies before acquire_leases: a lease moves from one
// run to the next in one batch.
TYPED_TEST_P(StoreConformanceTest, ReleaseBeforeAcquireInOneBatch) {
  {
    WriteBatch b;
    b.acquire_leases = {LeaseRow{"h", "k1", "r1", 1, ""}, LeaseRow{"h", "k2", "r1", 1, ""},
                        LeaseRow{"h", "k3", "r9", 1, ""}};
    this->WriteOk(std::move(b));
  }
  WriteBatch move;
  move.release_leases_of_runs = {"r1", "never-held"};
  move.acquire_leases = {LeaseRow{"h", "k1", "r2", 3, ""}};
  EXPECT_TRUE(this->store().Write(std::move(move)).ok());
  auto leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 2u);
  EXPECT_EQ(internal::RowJson((*leases)[0]), internal::RowJson(LeaseRow{"h", "k1", "r2", 3, ""}));
  EXPECT_EQ((*leases)[1].key, "k3");
}

// Batches written together from many threads succeed or fail on their own: a
// conflicting one does not take the others of its transaction with it.
TYPED_TEST_P(StoreConformanceTest, ConcurrentBatchesFailAlone) {
  {
    WriteBatch b;
    b.acquire_leases = {LeaseRow{"h", "taken", "owner", 1, ""}};
    this->WriteOk(std::move(b));
  }
  constexpr int kThreads = 8, kPerThread = 40;
  std::atomic<int> ok{0}, conflicts{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = "r" + std::to_string(t) + "-" + std::to_string(i);
        WriteBatch b;
        b.upsert_runs = {MakeRun(id, "j", t * 1000 + i)};
        const bool bad = i % 5 == 0;
        b.acquire_leases = {LeaseRow{"h", bad ? "taken" : "key-" + id, id, 1, ""}};
        const absl::Status s = this->store().Write(std::move(b));
        if (s.ok() && !bad) {
          ++ok;
        } else if (absl::IsAlreadyExists(s) && bad) {
          ++conflicts;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok.load(), kThreads * kPerThread * 4 / 5);
  EXPECT_EQ(conflicts.load(), kThreads * kPerThread / 5);
  auto runs = this->store().ListRuns("", 0, 0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), static_cast<size_t>(ok.load()));
  auto leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->size(), static_cast<size_t>(ok.load()) + 1);
}

// A batch larger than any internal chunking applies whole.
TYPED_TEST_P(StoreConformanceTest, LargeBatchAppliesWhole) {
  constexpr int kRuns = 1500;
  WriteBatch b;
  b.upsert_jobs = {Job("big")};
  for (int i = 0; i < kRuns; ++i) {
    const std::string id = "big-" + std::to_string(i);
    b.upsert_runs.push_back(MakeRun(id, "big", i));
    b.acquire_leases.push_back(LeaseRow{"h", "k" + std::to_string(i), id, 1, ""});
  }
  this->WriteOk(b);
  auto runs = this->store().ListRuns("big", 0, 0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), static_cast<size_t>(kRuns));
  // The same batch plus one conflicting lease at its very end: none of it.
  WriteBatch again = b;
  for (RunRow& r : again.upsert_runs) r.state = RunState::kCancelled;
  again.release_leases_of_runs.clear();
  again.acquire_leases = {LeaseRow{"h", "k" + std::to_string(kRuns - 1), "x", 1, ""}};
  again.acquire_leases.insert(again.acquire_leases.begin(), LeaseRow{"h", "fresh", "x", 1, ""});
  EXPECT_EQ(this->store().Write(std::move(again)).code(), absl::StatusCode::kAlreadyExists);
  auto active = this->store().ListActiveRuns();
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->size(), static_cast<size_t>(kRuns));
  auto leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->size(), static_cast<size_t>(kRuns));
}

// A result written again for the same run replaces the first.
TYPED_TEST_P(StoreConformanceTest, ResultIsReplaced) {
  {
    WriteBatch b;
    b.results = {ResultRow{"r1", false, "first", "{}", 1, 10, "fp1"}};
    this->WriteOk(std::move(b));
  }
  const ResultRow second{"r1", true, "", "{\"jobs\":[]}", 2, 20, ""};
  {
    WriteBatch b;
    b.results = {second};
    this->WriteOk(std::move(b));
  }
  auto got = this->store().GetResult("r1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(internal::RowJson(**got), internal::RowJson(second));
}

// (run_id, job_index, seq) is stored once: a replayed record is acknowledged
// with inserted=false, also when both copies are queued together.
TYPED_TEST_P(StoreConformanceTest, IntervalRecordsAreStoredExactlyOnce) {
  std::atomic<int> inserted{0}, ignored{0};
  auto count = [&](bool ins) { (ins ? inserted : ignored)++; };
  for (int pass = 0; pass < 2; ++pass) {  // second pass = replay after reconnect
    for (uint64_t seq = 0; seq < 5; ++seq) {
      this->store().AppendInterval(Interval("r1", 0, seq), count);
      this->store().AppendInterval(Interval("r1", 1, seq), count);
    }
  }
  ASSERT_TRUE(this->store().Flush().ok());
  // Every callback ran before Flush returned.
  EXPECT_EQ(inserted.load(), 10);
  EXPECT_EQ(ignored.load(), 10);
  // A replay after the first copy is committed.
  std::promise<bool> p;
  this->store().AppendInterval(Interval("r1", 0, 3), [&p](bool ins) { p.set_value(ins); });
  EXPECT_FALSE(p.get_future().get());
  // A replayed record with other contents keeps the first copy.
  IntervalRow changed = Interval("r1", 1, 2);
  changed.dir[0].ios = 999999;
  this->store().AppendInterval(changed, nullptr);
  ASSERT_TRUE(this->store().Flush().ok());
  auto rows = this->store().ListIntervals("r1");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 10u);
  EXPECT_EQ(internal::RowJson((*rows)[7]), internal::RowJson(Interval("r1", 1, 2)));
}

// done(true) means committed: a reader that hears of it sees the record.
TYPED_TEST_P(StoreConformanceTest, IntervalDoneRunsAfterCommit) {
  for (uint64_t seq = 0; seq < 20; ++seq) {
    std::promise<bool> p;
    this->store().AppendInterval(Interval("r", 0, seq), [&p](bool ins) { p.set_value(ins); });
    ASSERT_TRUE(p.get_future().get());
    auto seqs = this->store().IntervalSeqs("r");  // another thread's read
    ASSERT_TRUE(seqs.ok());
    ASSERT_EQ(seqs->size(), seq + 1);
    EXPECT_EQ(seqs->back(), (std::pair<uint32_t, uint64_t>{0, seq}));
  }
}

// Reads of a run's records: order by (job_index, seq) whatever the arrival
// order; counts and next seqs per clone; gaps show; unknown runs are empty.
TYPED_TEST_P(StoreConformanceTest, IntervalReadsOrderCountAndGaps) {
  for (uint64_t seq : {17, 0, 1}) this->store().AppendInterval(Interval("r1", 0, seq), nullptr);
  this->store().AppendInterval(Interval("r1", 1, 0), nullptr);
  this->store().AppendInterval(Interval("r2", 0, 5), nullptr);
  ASSERT_TRUE(this->store().Flush().ok());
  auto rows = this->store().ListIntervals("r1");
  ASSERT_TRUE(rows.ok());
  std::vector<std::pair<uint32_t, uint64_t>> keys;
  for (const IntervalRow& r : *rows) keys.emplace_back(r.job_index, r.seq);
  const std::vector<std::pair<uint32_t, uint64_t>> want{{0, 0}, {0, 1}, {0, 17}, {1, 0}};
  EXPECT_EQ(keys, want);
  auto seqs = this->store().IntervalSeqs("r1");
  ASSERT_TRUE(seqs.ok());
  EXPECT_EQ(*seqs, want);
  auto next = this->store().NextSeqs("r1");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, (std::map<uint32_t, uint64_t>{{0, 18}, {1, 1}}));
  auto counts = this->store().IntervalCounts("r1");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts, (std::map<uint32_t, std::pair<uint64_t, uint64_t>>{{0, {3, 18}}, {1, {1, 1}}}));
  for (const std::string& id : {std::string("none"), std::string("")}) {
    EXPECT_TRUE(this->store().ListIntervals(id)->empty());
    EXPECT_TRUE(this->store().IntervalSeqs(id)->empty());
    EXPECT_TRUE(this->store().NextSeqs(id)->empty());
    EXPECT_TRUE(this->store().IntervalCounts(id)->empty());
  }
}

// Jobs and runs page by seq: insertion order, strictly increasing, after_seq
// exclusive, limit <= 0 = all, runs per job or all.
TYPED_TEST_P(StoreConformanceTest, PagingBySeq) {
  for (int i = 0; i < 5; ++i) {
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j" + std::to_string(i)));
    b.upsert_runs.push_back(MakeRun("j" + std::to_string(i) + "-1", "j" + std::to_string(i), i));
    b.upsert_runs.push_back(MakeRun("j" + std::to_string(i) + "-2", "j" + std::to_string(i), i));
    this->WriteOk(std::move(b));
    // Updates between inserts do not disturb the order.
    WriteBatch u;
    JobRow again = Job("j0");
    again.state = "running";
    u.upsert_jobs = {again};
    this->WriteOk(std::move(u));
  }
  auto all = this->store().ListJobs(0, 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ((*all)[i].id, "j" + std::to_string(i));
    if (i > 0) {
      EXPECT_GT((*all)[i].seq, (*all)[i - 1].seq);
    }
  }
  EXPECT_EQ(this->store().ListJobs(0, -1)->size(), 5u);
  auto page1 = this->store().ListJobs(0, 2);
  ASSERT_TRUE(page1.ok());
  ASSERT_EQ(page1->size(), 2u);
  auto page2 = this->store().ListJobs(page1->back().seq, 2);
  ASSERT_TRUE(page2.ok());
  ASSERT_EQ(page2->size(), 2u);
  EXPECT_EQ((*page2)[0].id, "j2");
  auto page3 = this->store().ListJobs(page2->back().seq, 2);
  ASSERT_TRUE(page3.ok());
  ASSERT_EQ(page3->size(), 1u);
  EXPECT_EQ((*page3)[0].id, "j4");
  EXPECT_TRUE(this->store().ListJobs(page3->back().seq, 2)->empty());

  auto runs = this->store().ListRuns("j3", 0, 0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].id, "j3-1");
  EXPECT_EQ((*runs)[1].id, "j3-2");
  auto after = this->store().ListRuns("j3", (*runs)[0].seq, 0);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].id, "j3-2");
  auto all_runs = this->store().ListRuns("", 0, 0);
  ASSERT_TRUE(all_runs.ok());
  ASSERT_EQ(all_runs->size(), 10u);
  for (size_t i = 1; i < all_runs->size(); ++i) {
    EXPECT_GT((*all_runs)[i].seq, (*all_runs)[i - 1].seq);
  }
  auto some = this->store().ListRuns("", (*all_runs)[3].seq, 4);
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 4u);
  EXPECT_EQ((*some)[0].id, (*all_runs)[4].id);
  EXPECT_TRUE(this->store().ListRuns("no-such-job", 0, 0)->empty());
}

// Active runs: not terminal, or terminal but still holding a lease; in queue
// order (queue_pos, then seq).
TYPED_TEST_P(StoreConformanceTest, ActiveRunsInQueueOrder) {
  WriteBatch b;
  auto run = [](const std::string& id, int64_t pos, RunState s) {
    RunRow r = MakeRun(id, "j", pos);
    r.state = s;
    return r;
  };
  b.upsert_runs = {run("queued-late", 9, RunState::kQueued),
                   run("assigned", 1, RunState::kAssigned),
                   run("running", 3, RunState::kRunning),
                   run("done", 0, RunState::kSucceeded),
                   run("failed-holding", 2, RunState::kFailed),
                   run("cancelled", 4, RunState::kCancelled),
                   run("lost", 5, RunState::kLost),
                   run("queued-same-pos-a", 6, RunState::kQueued),
                   run("queued-same-pos-b", 6, RunState::kQueued)};
  b.acquire_leases = {LeaseRow{"h", "k", "failed-holding", 1, ""}};
  this->WriteOk(std::move(b));
  auto active = this->store().ListActiveRuns();
  ASSERT_TRUE(active.ok());
  std::vector<std::string> ids;
  for (const RunRow& r : *active) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"assigned", "failed-holding", "running",
                                           "queued-same-pos-a", "queued-same-pos-b",
                                           "queued-late"}));
}

// Agents by name and leases by (host, key), in byte order (not a locale's).
TYPED_TEST_P(StoreConformanceTest, ListsInByteOrder) {
  WriteBatch b;
  for (const char* n : {"b", "B", "a", "_x", "\xc3\xa9", "A-1", "a-1", "a1"}) {
    AgentRow a;
    a.name = n;
    a.state = "up";
    b.upsert_agents.push_back(a);
    b.acquire_leases.push_back(LeaseRow{n, "z", "r", 1, ""});
    b.acquire_leases.push_back(LeaseRow{n, "Z", "r", 1, ""});
  }
  this->WriteOk(std::move(b));
  const std::vector<std::string> want{"A-1", "B", "_x", "a", "a-1", "a1", "b", "\xc3\xa9"};
  auto agents = this->store().ListAgents();
  ASSERT_TRUE(agents.ok());
  std::vector<std::string> names;
  for (const AgentRow& a : *agents) names.push_back(a.name);
  EXPECT_EQ(names, want);
  auto leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 2 * want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*leases)[2 * i].host, want[i]);
    EXPECT_EQ((*leases)[2 * i].key, "Z");
    EXPECT_EQ((*leases)[2 * i + 1].key, "z");
  }
}

TYPED_TEST_P(StoreConformanceTest, MissingRowsAreNotFound) {
  EXPECT_EQ(this->store().GetJob("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(this->store().GetRun("nope").status().code(), absl::StatusCode::kNotFound);
  auto res = this->store().GetResult("nope");
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(res->has_value());
  EXPECT_TRUE(this->store().ListAgents()->empty());
  EXPECT_TRUE(this->store().ListLeases()->empty());
  EXPECT_TRUE(this->store().ListActiveRuns()->empty());
  EXPECT_TRUE(this->store().ListRuns("", 0, 0)->empty());
}

// A store has an identity made when it was created: a UUID v4, the same for
// as long as the store exists, another for another store.
TYPED_TEST_P(StoreConformanceTest, StoreIdentity) {
  auto id = this->store().StoreId();
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(std::regex_match(
      *id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << *id;
  {
    WriteBatch b;
    b.upsert_jobs = {Job("j")};
    this->WriteOk(std::move(b));
  }
  this->Reopen();
  auto again = this->store().StoreId();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *id);
  auto other = this->backend_.OpenOther();
  ASSERT_TRUE(other.ok()) << other.status();
  auto other_id = (*other)->StoreId();
  ASSERT_TRUE(other_id.ok());
  EXPECT_NE(*other_id, *id);
  EXPECT_TRUE((*other)->ListJobs(0, 0)->empty());  // a separate store
}

// Queue, leases, states, results and records survive closing the store.
TYPED_TEST_P(StoreConformanceTest, ReopenKeepsQueueLeasesAndStates) {
  {
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j1"));
    b.upsert_runs = {MakeRun("j1-1", "j1", 1), MakeRun("j1-2", "j1", 2), MakeRun("j1-3", "j1", 3)};
    this->WriteOk(std::move(b));
    RunRow running = MakeRun("j1-1", "j1", 1);
    running.state = RunState::kRunning;
    running.started_ms = 2000;
    RunRow done = MakeRun("j1-3", "j1", 3);
    done.state = RunState::kSucceeded;
    WriteBatch b2;
    b2.upsert_runs = {running, done};
    b2.acquire_leases.push_back(LeaseRow{"host-a", "blk:259:0", "j1-1", 2000, "/dev/nvme0n1"});
    b2.results.push_back(ResultRow{"j1-3", true, "", "{\"jobs\":[]}", 5, 3000, ""});
    this->WriteOk(std::move(b2));
    for (uint64_t s = 0; s < 3; ++s) this->store().AppendInterval(Interval("j1-1", 0, s), nullptr);
  }
  this->Reopen();
  auto active = this->store().ListActiveRuns();
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 2u);
  EXPECT_EQ((*active)[0].id, "j1-1");
  EXPECT_EQ((*active)[0].state, RunState::kRunning);
  EXPECT_EQ((*active)[0].started_ms, 2000u);
  EXPECT_EQ((*active)[1].id, "j1-2");
  EXPECT_EQ((*active)[1].state, RunState::kQueued);
  auto leases = this->store().ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].run_id, "j1-1");
  auto result = this->store().GetResult("j1-3");
  ASSERT_TRUE(result.ok() && result->has_value());
  EXPECT_EQ((*result)->last_seq_total, 5u);
  EXPECT_EQ(this->store().ListIntervals("j1-1")->size(), 3u);
  // New rows continue the insertion order after a reopen.
  auto before = this->store().GetRun("j1-3");
  ASSERT_TRUE(before.ok());
  {
    WriteBatch b;
    b.upsert_runs = {MakeRun("j1-4", "j1", 4)};
    this->WriteOk(std::move(b));
  }
  auto after = this->store().GetRun("j1-4");
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->seq, before->seq);
}

// Closing the store commits what was queued (the writer drains its queue).
TYPED_TEST_P(StoreConformanceTest, QueuedWritesAreFlushedOnClose) {
  std::atomic<int> acked{0};
  for (int i = 0; i < 500; ++i) {
    this->store().AppendInterval(Interval("r", 0, i), [&acked](bool ins) { acked += ins; });
  }
  this->Reopen();
  EXPECT_EQ(acked.load(), 500);
  EXPECT_EQ(this->store().ListIntervals("r")->size(), 500u);
}

// One writer batches queued records into few transactions.
TYPED_TEST_P(StoreConformanceTest, WriterBatchesManyRecordsIntoFewTransactions) {
  constexpr int kRecords = 3000;
  for (int i = 0; i < kRecords; ++i) this->store().AppendInterval(Interval("r", 0, i), nullptr);
  ASSERT_TRUE(this->store().Flush().ok());
  EXPECT_EQ(this->store().ListIntervals("r")->size(), static_cast<size_t>(kRecords));
  const StoreStats stats = this->store().Stats();
  EXPECT_GE(stats.items, static_cast<uint64_t>(kRecords));
  EXPECT_LT(stats.transactions, static_cast<uint64_t>(kRecords));
}

// Writers, record streams and readers at once: everything lands, reads never fail.
TYPED_TEST_P(StoreConformanceTest, ConcurrentWritesRecordsAndReads) {
  constexpr int kStreams = 4, kRecords = 300, kBatches = 50;
  std::atomic<int> inserted{0}, read_errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int s = 0; s < kStreams; ++s) {
    threads.emplace_back([&, s] {
      for (int i = 0; i < kRecords; ++i) {
        this->store().AppendInterval(Interval("run-" + std::to_string(s), 0, i),
                                     [&inserted](bool ins) { inserted += ins; });
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < kBatches; ++i) {
      WriteBatch b;
      b.upsert_jobs = {Job("j" + std::to_string(i))};
      b.upsert_runs = {MakeRun("r" + std::to_string(i), "j" + std::to_string(i), i)};
      if (!this->store().Write(std::move(b)).ok()) ++read_errors;
    }
  });
  std::thread reader([&] {
    while (!stop) {
      if (!this->store().ListJobs(0, 0).ok() || !this->store().IntervalCounts("run-0").ok() ||
          !this->store().ListActiveRuns().ok()) {
        ++read_errors;
      }
    }
  });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(this->store().Flush().ok());
  stop = true;
  reader.join();
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_EQ(inserted.load(), kStreams * kRecords);
  EXPECT_EQ(this->store().ListJobs(0, 0)->size(), static_cast<size_t>(kBatches));
  for (int s = 0; s < kStreams; ++s) {
    auto c = this->store().IntervalCounts("run-" + std::to_string(s));
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->at(0), (std::pair<uint64_t, uint64_t>{kRecords, kRecords}));
  }
}

// History rows: series and points are inserted once, points read in order with
// exact doubles (NaN kept), an alert upsert keeps its triage state, a triage
// write changes only the state, and the ingest cursor survives a reopen.
TYPED_TEST_P(StoreConformanceTest, HistorySeriesPointsAlertsAndCursor) {
  EXPECT_EQ(this->store().HistoryCursor().value_or(-1), 0);
  WriteBatch b;
  b.insert_series.push_back(SeriesRow{"s1", "iops", R"({"workload":"w"})", 1000});
  b.insert_series.push_back(SeriesRow{"s0", "p99_ns", Awkward("axes"), 1001});
  for (int i = 3; i >= 0; --i) {  // written out of order
    SeriesPointRow p;
    p.series_key = "s1";
    p.run_id = "run-" + std::to_string(i);
    p.job_id = "job-" + std::to_string(i);
    p.order = 10 + i;
    p.time_ms = 5000 + i;
    p.value = 1.0 / 3.0 + i;
    p.cv = i == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.0125;
    p.axes_json = Awkward("point");
    b.insert_points.push_back(p);
  }
  AlertRow a;
  a.id = "alert-1";
  a.series_key = "s1";
  a.metric = "iops";
  a.state = "untriaged";
  a.change_pct = -7.25;
  a.first_run_id = "run-2";
  a.job_id = "job-2";
  a.created_ms = 6000;
  a.updated_ms = 6000;
  a.detail_json = Awkward("detail");
  b.upsert_alerts.push_back(a);
  b.history_cursor = 12;
  this->WriteOk(std::move(b));

  // A second insert of a series or point is ignored; triage sets the state.
  WriteBatch again;
  again.insert_series.push_back(SeriesRow{"s1", "changed", "{}", 9});
  SeriesPointRow dup;
  dup.series_key = "s1";
  dup.run_id = "run-1";
  dup.value = 99;
  again.insert_points.push_back(dup);
  again.alert_states.push_back(AlertStateRow{"alert-1", "acknowledged", 7000});
  again.alert_states.push_back(AlertStateRow{"no-such-alert", "fixed", 7000});
  this->WriteOk(std::move(again));
  // The detector's next upsert keeps the triage state and created_ms.
  WriteBatch redetect;
  a.state = "untriaged";
  a.change_pct = -7.5;
  a.created_ms = 8000;
  a.updated_ms = 8000;
  redetect.upsert_alerts.push_back(a);
  this->WriteOk(std::move(redetect));
  this->Reopen();

  auto series = this->store().ListSeries();
  ASSERT_TRUE(series.ok()) << series.status();
  ASSERT_EQ(series->size(), 2u);
  EXPECT_EQ((*series)[0], (SeriesRow{"s0", "p99_ns", Awkward("axes"), 1001}));
  EXPECT_EQ((*series)[1], (SeriesRow{"s1", "iops", R"({"workload":"w"})", 1000}));
  EXPECT_EQ(this->store().GetSeries("s1")->metric, "iops");
  EXPECT_TRUE(absl::IsNotFound(this->store().GetSeries("nope").status()));

  auto points = this->store().ListSeriesPoints("s1");
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const SeriesPointRow& p = (*points)[static_cast<size_t>(i)];
    EXPECT_EQ(p.run_id, "run-" + std::to_string(i));
    EXPECT_EQ(p.job_id, "job-" + std::to_string(i));
    EXPECT_EQ(p.order, 10 + i);
    EXPECT_EQ(p.time_ms, 5000u + static_cast<uint64_t>(i));
    EXPECT_EQ(p.value, 1.0 / 3.0 + i);  // exact
    if (i == 0) {
      EXPECT_TRUE(std::isnan(p.cv));
    } else {
      EXPECT_EQ(p.cv, 0.0125);
    }
    EXPECT_EQ(p.axes_json, Awkward("point"));
  }
  EXPECT_TRUE(this->store().ListSeriesPoints("s0")->empty());

  auto alerts = this->store().ListAlerts();
  ASSERT_TRUE(alerts.ok()) << alerts.status();
  ASSERT_EQ(alerts->size(), 1u);
  const AlertRow& got = (*alerts)[0];
  EXPECT_EQ(got.state, "acknowledged");
  EXPECT_EQ(got.change_pct, -7.5);
  EXPECT_EQ(got.created_ms, 6000u);
  EXPECT_EQ(got.updated_ms, 8000u);
  EXPECT_EQ(got.first_run_id, "run-2");
  EXPECT_EQ(got.job_id, "job-2");
  EXPECT_EQ(got.detail_json, Awkward("detail"));
  EXPECT_EQ(this->store().GetAlert("alert-1")->state, "acknowledged");
  EXPECT_TRUE(absl::IsNotFound(this->store().GetAlert("no-such-alert").status()));
  EXPECT_EQ(this->store().HistoryCursor().value_or(-1), 12);
}

// A run's uploaded log files (docs/logs.md): listed by name without data,
// served whole, replaced by a second upload of the same name, kept across a
// reopen; an unknown name is NotFound.
TYPED_TEST_P(StoreConformanceTest, RunLogsRoundTripAndReplace) {
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "1000, 4242, 0, 4096, 0\n";
  {
    WriteBatch b;
    b.run_logs.push_back(RunLogRow{"r1", "l_lat.1.log", "/var/tmp/a/l_lat.1.log", 999999, true,
                                   0, big});
    b.run_logs.push_back(RunLogRow{"r1", "l_slat.1.log", "/p", 0, false, 0, ""});
    b.run_logs.push_back(RunLogRow{"r2", "l_lat.1.log", "/q", 3, false, 0, "x\n"});
    this->WriteOk(std::move(b));
  }
  {
    WriteBatch b;  // a replay of r2's file: replaced
    b.run_logs.push_back(RunLogRow{"r2", "l_lat.1.log", "/q2", 5, false, 0, "1, 2\n"});
    this->WriteOk(std::move(b));
  }
  this->Reopen();
  auto list = this->store().ListRunLogs("r1");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "l_lat.1.log");
  EXPECT_EQ((*list)[0].path, "/var/tmp/a/l_lat.1.log");
  EXPECT_EQ((*list)[0].size_bytes, 999999u);
  EXPECT_TRUE((*list)[0].truncated);
  EXPECT_EQ((*list)[0].stored_bytes, big.size());
  EXPECT_EQ((*list)[0].data, "");
  EXPECT_EQ((*list)[1].name, "l_slat.1.log");
  EXPECT_EQ((*list)[1].stored_bytes, 0u);
  auto got = this->store().GetRunLog("r1", "l_lat.1.log");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data, big);
  auto r2 = this->store().GetRunLog("r2", "l_lat.1.log");
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->data, "1, 2\n");
  EXPECT_EQ(r2->path, "/q2");
  EXPECT_EQ(r2->size_bytes, 5u);
  EXPECT_TRUE(absl::IsNotFound(this->store().GetRunLog("r1", "nope").status()));
  EXPECT_TRUE(this->store().ListRunLogs("r3")->empty());
}

// The history worker's reads: a series' points written after a position, in
// the order written (a run that finished late comes after later runs), over a
// reopen; each series' newest point time and last position, 0 for a series
// without points.
TYPED_TEST_P(StoreConformanceTest, HistoryPointsAfterAndNewest) {
  auto point = [](const std::string& key, int run, uint64_t time_ms) {
    SeriesPointRow p;
    p.series_key = key;
    p.run_id = "run-" + std::to_string(run);
    p.job_id = "job";
    p.order = run;
    p.time_ms = time_ms;
    p.value = 1 + run;
    p.axes_json = "{}";
    return p;
  };
  WriteBatch b;
  b.insert_series.push_back(SeriesRow{"a", "iops", "{}", 1});
  b.insert_series.push_back(SeriesRow{"b", "iops", "{}", 1});
  b.insert_series.push_back(SeriesRow{"empty", "iops", "{}", 1});
  for (int i = 0; i < 5; ++i) b.insert_points.push_back(point("a", 10 + i, 1000 + i));
  b.insert_points.push_back(point("b", 1, 9000));
  this->WriteOk(std::move(b));
  auto first = this->store().ListSeriesPointsAfter("a", 0);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 5u);
  for (size_t i = 1; i < first->size(); ++i) {
    EXPECT_GT((*first)[i].stored_seq, (*first)[i - 1].stored_seq);
  }
  const int64_t seen = first->back().stored_seq;
  auto whole = this->store().ListSeriesPoints("a");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->back().stored_seq, seen);  // the full read gives the positions too

  // A late run (order 5, before every point) and a newer one, in two batches;
  // a point of another series between them.
  WriteBatch late;
  late.insert_points.push_back(point("a", 20, 1100));
  this->WriteOk(std::move(late));
  WriteBatch other;
  other.insert_points.push_back(point("b", 2, 9500));
  this->WriteOk(std::move(other));
  WriteBatch older;
  older.insert_points.push_back(point("a", 5, 1200));
  this->WriteOk(std::move(older));
  this->Reopen();

  auto after = this->store().ListSeriesPointsAfter("a", seen);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].run_id, "run-20");  // written first
  EXPECT_EQ((*after)[1].run_id, "run-5");
  EXPECT_EQ((*after)[1].order, 5);
  EXPECT_EQ((*after)[1].time_ms, 1200u);
  EXPECT_TRUE(this->store().ListSeriesPointsAfter("a", (*after)[1].stored_seq)->empty());
  EXPECT_TRUE(this->store().ListSeriesPointsAfter("empty", 0)->empty());

  auto newest = this->store().ListSeriesNewest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  ASSERT_EQ(newest->size(), 3u);
  EXPECT_EQ((*newest)[0], (SeriesNewestRow{"a", 1200, (*after)[1].stored_seq}));
  EXPECT_EQ((*newest)[1].key, "b");
  EXPECT_EQ((*newest)[1].newest_time_ms, 9500u);
  EXPECT_GT((*newest)[1].last_stored_seq, seen);
  EXPECT_EQ((*newest)[2], (SeriesNewestRow{"empty", 0, 0}));
}

REGISTER_TYPED_TEST_SUITE_P(StoreConformanceTest, EveryFieldRoundTrips, UpsertsKeepImmutableFields,
                            EmptyBatchAndFlushSucceed, LeaseConflictRollsBackWholeBatch,
                            ReleaseBeforeAcquireInOneBatch, ConcurrentBatchesFailAlone,
                            LargeBatchAppliesWhole, ResultIsReplaced,
                            IntervalRecordsAreStoredExactlyOnce, IntervalDoneRunsAfterCommit,
                            IntervalReadsOrderCountAndGaps, PagingBySeq, ActiveRunsInQueueOrder,
                            ListsInByteOrder, MissingRowsAreNotFound, StoreIdentity,
                            ReopenKeepsQueueLeasesAndStates, QueuedWritesAreFlushedOnClose,
                            WriterBatchesManyRecordsIntoFewTransactions,
                            ConcurrentWritesRecordsAndReads,
                            HistorySeriesPointsAlertsAndCursor, HistoryPointsAfterAndNewest,
                            RunLogsRoundTripAndReplace);

}  // namespace iofleet::controller::conformance
