// Leader election and fencing on a real PostgreSQL (pg_leader.h): one winner,
// renewals keep the epoch, a takeover only after the lease lapsed (or was
// resigned) and with a new epoch, and a deposed leader's store writes nothing.
// Skips when PostgreSQL is not installed.
#include "controller/store/pg_leader.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "controller/store/pg_test_server.h"
#include "controller/store/postgres_store.h"
#include "controller/store/store_conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using conformance::Job;
using ::testing::HasSubstr;
using pgtest::PgTestServer;

class PgLeaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = PgTestServer::Shared();
    if (absl::IsNotFound(s.status())) GTEST_SKIP() << s.status();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *s;
    auto db = server_->CreateDatabase();
    ASSERT_TRUE(db.ok()) << db.status();
    uri_ = *db;
  }
  void TearDown() override {
    if (server_ != nullptr && !uri_.empty()) (void)server_->DropDatabase(uri_);
  }
  std::unique_ptr<LeaderElector> Elector(const std::string& holder, uint64_t ttl_ms = 60000) {
    LeaderElectorOptions o;
    o.holder = holder;
    o.address = holder + ":7070";
    o.ttl_ms = ttl_ms;
    auto e = LeaderElector::Create(uri_, o);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }

  PgTestServer* server_ = nullptr;
  std::string uri_;
};

TEST_F(PgLeaderTest, OneWinnerRenewalKeepsEpochTakeoverIncrementsIt) {
  auto a = Elector("a");
  auto b = Elector("b");
  ASSERT_TRUE(a && b);
  auto ea = a->TryAcquireOrRenew();
  ASSERT_TRUE(ea.ok()) << ea.status();
  EXPECT_EQ(*ea, 1);
  auto eb = b->TryAcquireOrRenew();
  ASSERT_TRUE(eb.ok()) << eb.status();
  EXPECT_EQ(*eb, 0) << "a live lease was taken over";
  auto cur = b->Current();
  ASSERT_TRUE(cur.ok());
  EXPECT_EQ(cur->holder, "a");
  EXPECT_EQ(cur->address, "a:7070");
  EXPECT_EQ(cur->epoch, 1);
  EXPECT_TRUE(cur->live);
  EXPECT_EQ(*a->TryAcquireOrRenew(), 1) << "a renewal changed the epoch";

  a->Resign();
  EXPECT_EQ(*b->TryAcquireOrRenew(), 2);
  EXPECT_EQ(*a->TryAcquireOrRenew(), 0) << "the resigned leader took the lease back";
  EXPECT_EQ(b->Current()->holder, "b");
}

TEST_F(PgLeaderTest, ConcurrentCampaignersElectExactlyOne) {
  constexpr int kN = 6;
  std::vector<std::unique_ptr<LeaderElector>> es;
  for (int i = 0; i < kN; ++i) es.push_back(Elector("c" + std::to_string(i)));
  std::atomic<int> winners{0};
  std::vector<std::thread> ts;
  for (auto& e : es) {
    ts.emplace_back([&e, &winners] {
      auto r = e->TryAcquireOrRenew();
      if (r.ok() && *r > 0) winners.fetch_add(1);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(winners.load(), 1);
}

TEST_F(PgLeaderTest, DeposedLeadersStoreWritesNothing) {
  auto a = Elector("a", /*ttl_ms=*/1000);
  auto b = Elector("b");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(*a->TryAcquireOrRenew(), 1);
  PostgresStoreOptions po;
  po.init = true;
  po.fencing_epoch = 1;
  po.fencing_holder = "a";
  std::atomic<int> fenced{0};
  po.on_fenced = [&fenced](const absl::Status&) { fenced.fetch_add(1); };
  auto store = OpenPostgresStore(uri_, po);
  ASSERT_TRUE(store.ok()) << store.status();
  WriteBatch b1;
  b1.upsert_jobs = {Job("j1")};
  ASSERT_TRUE((*store)->Write(b1).ok());

  // The lease lapses (nobody renews it): a write is refused even before a
  // takeover, then b takes over with epoch 2.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  WriteBatch b2;
  b2.upsert_jobs = {Job("j2")};
  absl::Status s = (*store)->Write(b2);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("fenced"));
  ASSERT_EQ(*b->TryAcquireOrRenew(), 2);
  WriteBatch b3;
  b3.upsert_jobs = {Job("j3")};
  EXPECT_EQ((*store)->Write(b3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fenced.load(), 2);
  EXPECT_TRUE((*store)->GetJob("j1").ok());
  EXPECT_TRUE(absl::IsNotFound((*store)->GetJob("j2").status()));
  EXPECT_TRUE(absl::IsNotFound((*store)->GetJob("j3").status()));

  // The new leader's store writes, and two stores open at once (no controller
  // lock in this mode).
  PostgresStoreOptions pb;
  pb.fencing_epoch = 2;
  pb.fencing_holder = "b";
  auto store_b = OpenPostgresStore(uri_, pb);
  ASSERT_TRUE(store_b.ok()) << store_b.status();
  ASSERT_TRUE((*store_b)->Write(b3).ok());
  EXPECT_TRUE((*store_b)->GetJob("j3").ok());
}

}  // namespace
}  // namespace iofleet::controller
