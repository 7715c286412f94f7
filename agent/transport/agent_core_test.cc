// AgentCore over event sequences: what the agent sends, replays, starts, cancels
// and drops, with no thread, stream, clock or file involved.
#include "agent/transport/agent_core.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

using iofleet::v1::AgentMessage;
using iofleet::v1::ControllerMessage;

iofleet::v1::Inventory Inv(const std::string& host, int devices = 1) {
  iofleet::v1::Inventory inv;
  inv.set_hostname(host);
  for (int i = 0; i < devices; ++i) inv.add_block_devices()->set_name("nvme" + std::to_string(i));
  return inv;
}

template <typename T>
std::vector<T> Of(const std::vector<Action>& actions) {
  std::vector<T> out;
  for (const Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

std::vector<AgentMessage> Sent(const std::vector<Action>& actions) {
  std::vector<AgentMessage> out;
  for (const act::Send& s : Of<act::Send>(actions)) out.push_back(s.msg);
  return out;
}

bool Logged(const std::vector<Action>& actions, std::string_view what) {
  for (const act::Log& l : Of<act::Log>(actions)) {
    if (l.text.find(what) != std::string::npos) return true;
  }
  return false;
}

std::string Logs(const std::vector<Action>& actions) {
  std::string out;
  for (const act::Log& l : Of<act::Log>(actions)) out += l.text + "\n";
  return out;
}

class AgentCoreTest : public ::testing::Test {
 protected:
  AgentCoreTest() : core_(Config()) { core_.SetInventory(Inv("host-a"), "sha256:aaa"); }

  static CoreConfig Config() {
    CoreConfig c;
    c.controller = "ctl:7070";
    c.spool_dir = "/spool";
    c.agent_name = "agent-a";
    c.instance_id = "inst-1";
    c.backoff_initial_ms = 250;
    c.backoff_max_ms = 30000;
    c.seed = 5;
    c.inventory_check_ms = 60000;
    return c;
  }

  std::vector<Action> Feed(Event e) {
    std::vector<Action> out;
    core_.Handle(now_, std::move(e), &out);
    return out;
  }
  std::vector<Action> Advance(uint64_t ms) {
    now_.mono_ms += ms;
    now_.wall_ms += ms;
    return Feed(ev::Tick{});
  }
  // Advances to the core's next deadline (the reconnect after a stream ended).
  std::vector<Action> AdvanceToNextTick() {
    const uint64_t t = core_.NextTickMs();
    EXPECT_NE(t, UINT64_MAX);
    return Advance(t > now_.mono_ms ? t - now_.mono_ms : 0);
  }
  std::vector<Action> FromController(ControllerMessage m) {
    return Feed(ev::FromController{core_.conn(), std::move(m)});
  }
  std::vector<Action> Welcome(const std::string& store, uint32_t version = 2, uint32_t hb = 1000,
                              std::map<std::string, uint64_t> next_seq = {},
                              bool need_inventory = false) {
    ControllerMessage m;
    auto* w = m.mutable_welcome();
    w->set_protocol_version(version);
    w->set_heartbeat_interval_ms(hb);
    w->set_store_id(store);
    w->set_need_inventory(need_inventory);
    for (const auto& [k, v] : next_seq) (*w->mutable_next_seq())[k] = v;
    return FromController(std::move(m));
  }
  // Start (first time) and the Connect it makes.
  act::Connect Start() {
    auto a = Feed(ev::Start{});
    auto c = Of<act::Connect>(a);
    EXPECT_EQ(c.size(), 1u);
    return c.empty() ? act::Connect{} : c[0];
  }
  std::vector<Action> EndStream(bool hello_written = true) {
    return Feed(ev::StreamEnded{core_.conn(), hello_written, "code 14: unavailable"});
  }
  // Ends the stream and reconnects after the backoff: the new Hello.
  act::Connect Reconnect() {
    EndStream();
    auto a = AdvanceToNextTick();
    auto c = Of<act::Connect>(a);
    EXPECT_EQ(c.size(), 1u) << Logs(a);
    return c.empty() ? act::Connect{} : c[0];
  }
  std::vector<Action> Assign(const std::string& run, std::vector<std::string> leased = {}) {
    ControllerMessage m;
    m.mutable_assign()->set_run_id(run);
    m.mutable_assign()->set_job_id("job-" + run);
    m.mutable_assign()->set_fio_text("[x]\nioengine=null\nsize=1m\n");
    for (auto& k : leased) m.mutable_assign()->add_target_keys(k);
    return FromController(std::move(m));
  }
  std::vector<Action> Cancel(const std::string& run) {
    ControllerMessage m;
    m.mutable_cancel()->set_run_id(run);
    return FromController(std::move(m));
  }
  std::vector<Action> Spooled(const std::string& run, AgentMessage m, bool ok = true) {
    return Feed(ev::RunMessage{run, std::move(m), ok, ok ? "" : "No space left on device"});
  }
  std::vector<Action> Origin(const std::string& run, const std::string& store) {
    AgentMessage m;
    m.mutable_origin()->set_run_id(run);
    m.mutable_origin()->set_store_id(store);
    return Spooled(run, std::move(m));
  }
  std::vector<Action> Started(const std::string& run) {
    AgentMessage m;
    m.mutable_run_started()->set_run_id(run);
    return Spooled(run, std::move(m));
  }
  std::vector<Action> Interval(const std::string& run, uint32_t job, uint64_t seq, bool ok = true) {
    AgentMessage m;
    m.mutable_interval()->set_run_id(run);
    m.mutable_interval()->set_job_index(job);
    m.mutable_interval()->set_seq(seq);
    return Spooled(run, std::move(m), ok);
  }
  // A run assigned, granted its keys and running (origin and RunStarted spooled).
  void Running(const std::string& run, std::vector<std::string> keys, const std::string& store) {
    auto a = Assign(run);
    ASSERT_EQ(Of<act::StartRun>(a).size(), 1u) << Logs(a);
    Origin(run, store);
    auto k = Feed(ev::KeysWanted{run, std::move(keys)});
    auto d = Of<act::KeysDecided>(k);
    ASSERT_EQ(d.size(), 1u);
    ASSERT_TRUE(d[0].granted);
    Started(run);
  }
  // RunEnded -> WriteFinish; returns the RunFinished the core composed.
  AgentMessage End(const std::string& run, bool ok = true, const std::string& error = "") {
    auto a = Feed(ev::RunEnded{run, ok, error, "{}", ""});
    auto w = Of<act::WriteFinish>(a);
    EXPECT_EQ(w.size(), 1u);
    return w.empty() ? AgentMessage() : w[0].msg;
  }
  // The run thread wrote the RunFinished and exited.
  std::vector<Action> Finished(const std::string& run, const AgentMessage& fin, bool ok = true) {
    auto a = Spooled(run, fin, ok);
    auto x = Feed(ev::RunExited{run});
    a.insert(a.end(), x.begin(), x.end());
    return a;
  }

  CoreTime now_{1000000, 1700000000000};
  AgentCore core_;
};

TEST_F(AgentCoreTest, FirstHelloCarriesTheFullInventoryAndItsHash) {
  act::Connect c = Start();
  EXPECT_EQ(c.conn, 1u);
  const auto& h = c.hello.hello();
  EXPECT_EQ(h.agent_name(), "agent-a");
  EXPECT_EQ(h.protocol_version(), 2u);
  EXPECT_EQ(h.min_protocol_version(), 1u);
  EXPECT_EQ(h.inventory_hash(), "sha256:aaa");
  EXPECT_EQ(h.inventory().hostname(), "host-a");
  EXPECT_TRUE(h.resolves_targets());
  EXPECT_EQ(h.instance_id(), "inst-1");
}

TEST_F(AgentCoreTest, AControllerOfProtocolOneGetsTheFullInventoryOnEveryReconnect) {
  Start();
  auto a = Welcome("store-1", /*version=*/1);
  EXPECT_TRUE(core_.welcomed());
  EXPECT_TRUE(Logged(a, "controller negotiated protocol 1"));
  EXPECT_TRUE(Sent(a).empty());  // no InventoryUpdate: it has the inventory
  act::Connect c = Reconnect();
  EXPECT_TRUE(c.hello.hello().has_inventory());
  EXPECT_EQ(c.hello.hello().inventory_hash(), "sha256:aaa");
}

TEST_F(AgentCoreTest, AHashAwareControllerGetsOnlyTheHashOnReconnectAndAsksWhenItLacksIt) {
  Start();
  Welcome("store-1", /*version=*/2);
  EXPECT_TRUE(core_.controller_knows_hashes());
  act::Connect c = Reconnect();
  EXPECT_FALSE(c.hello.hello().has_inventory());
  EXPECT_EQ(c.hello.hello().inventory_hash(), "sha256:aaa");
  // It knows this hash: nothing more.
  auto a = Welcome("store-1", 2);
  EXPECT_TRUE(Sent(a).empty());
  // A controller that lost it asks: the InventoryUpdate goes first.
  Reconnect();
  a = Welcome("store-1", 2, 1000, {}, /*need_inventory=*/true);
  auto sent = Sent(a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].inventory_update().inventory_hash(), "sha256:aaa");
  EXPECT_EQ(sent[0].inventory_update().inventory().hostname(), "host-a");
}

TEST_F(AgentCoreTest, NeedInventoryAloneShowsTheControllerKnowsHashes) {
  Start();
  auto a = Welcome("s", /*version=*/1, 1000, {}, /*need_inventory=*/true);
  EXPECT_EQ(Sent(a).size(), 1u);
  EXPECT_TRUE(core_.controller_knows_hashes());
  EXPECT_FALSE(Reconnect().hello.hello().has_inventory());
}

TEST_F(AgentCoreTest, ADowngradedControllerIsToldTheInventoryAgainAtOnce) {
  Start();
  Welcome("s", 2);
  act::Connect c = Reconnect();
  ASSERT_FALSE(c.hello.hello().has_inventory());
  const uint32_t failures = core_.backoff().failures();
  // The controller behind the address now speaks protocol 1: it stored no
  // inventory. Close, and say Hello again in full, without a backoff.
  auto a = Welcome("s", 1);
  EXPECT_FALSE(core_.welcomed());
  auto close = Of<act::CloseStream>(a);
  ASSERT_EQ(close.size(), 1u);
  EXPECT_FALSE(close[0].graceful);
  EXPECT_TRUE(Logged(a, "reconnecting with the full inventory"));
  a = EndStream();
  EXPECT_TRUE(Logged(a, "in 0 ms")) << Logs(a);
  EXPECT_FALSE(Logged(a, "ended before Welcome"));
  auto c2 = Of<act::Connect>(a);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_TRUE(c2[0].hello.hello().has_inventory());
  EXPECT_EQ(core_.backoff().failures(), failures);
}

TEST_F(AgentCoreTest, AChangedInventoryIsSentDuringTheSessionAndOnlyThen) {
  Start();
  Welcome("s", 2);
  // The driver is asked to look again every inventory_check_ms.
  auto a = Advance(60000);
  ASSERT_EQ(Of<act::CollectInventory>(a).size(), 1u);
  EXPECT_TRUE(Of<act::CollectInventory>(Advance(60000)).empty());  // one in flight
  a = Feed(ev::InventoryCollected{Inv("host-a"), "sha256:aaa"});
  EXPECT_TRUE(Sent(a).empty());
  a = Advance(60000);
  ASSERT_EQ(Of<act::CollectInventory>(a).size(), 1u);
  // A device appeared.
  a = Feed(ev::InventoryCollected{Inv("host-a", 2), "sha256:bbb"});
  std::vector<AgentMessage> sent;
  for (const auto& m : Sent(a)) {
    if (m.has_inventory_update()) sent.push_back(m);
  }
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].inventory_update().inventory_hash(), "sha256:bbb");
  EXPECT_EQ(sent[0].inventory_update().inventory().block_devices_size(), 2);
  EXPECT_TRUE(Logged(a, "inventory changed (1 -> 2 block devices"));
  // Changed while disconnected: the next Hello carries the new hash, and the
  // Welcome of a controller that has it asks for nothing.
  EndStream();
  Feed(ev::InventoryCollected{Inv("host-a", 3), "sha256:ccc"});
  act::Connect c = Of<act::Connect>(AdvanceToNextTick())[0];
  EXPECT_EQ(c.hello.hello().inventory_hash(), "sha256:ccc");
  // Changed between Hello and Welcome: sent after the Welcome.
  Feed(ev::InventoryCollected{Inv("host-a", 4), "sha256:ddd"});
  a = Welcome("s", 2);
  ASSERT_EQ(Sent(a).size(), 1u);
  EXPECT_EQ(Sent(a)[0].inventory_update().inventory_hash(), "sha256:ddd");
}

TEST_F(AgentCoreTest, HeartbeatsKeepTheControllersIntervalExactlyAndListOnlyRunningRuns) {
  Start();
  Welcome("s", 2, /*hb=*/700);
  EXPECT_EQ(core_.heartbeat_ms(), 700u);
  Running("r1", {"k1"}, "s");
  Running("r2", {"k2"}, "s");
  End("r2");
  AgentMessage fin;
  fin.mutable_run_finished()->set_run_id("r2");
  Finished("r2", fin);
  std::vector<uint64_t> at;
  const uint64_t t0 = now_.mono_ms;
  for (int step = 0; step < 40; ++step) {
    // Ticks arrive late by up to 90 ms: the heartbeats stay on the 700 ms grid.
    auto a = Advance(step % 2 ? 90 : 100);
    for (const AgentMessage& m : Sent(a)) {
      if (!m.has_heartbeat()) continue;
      at.push_back(now_.mono_ms - t0);
      ASSERT_EQ(m.heartbeat().running_runs_size(), 1);
      EXPECT_EQ(m.heartbeat().running_runs(0), "r1");
      EXPECT_EQ(m.heartbeat().unix_ms(), now_.wall_ms);
    }
  }
  ASSERT_GE(at.size(), 4u);
  // Sent at the first tick at or after each multiple of 700 ms: 5 heartbeats in
  // 3.8 s, none early, none more than a tick late.
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_GE(at[i], 700 * (i + 1));
    EXPECT_LT(at[i], 700 * (i + 1) + 100);
  }
  EXPECT_EQ(at.size(), 5u);
  EXPECT_EQ(core_.NextTickMs() - t0, 700u * 6);
}

TEST_F(AgentCoreTest, ReconnectReplaysFromWelcomeNextSeqAndSendsLaterRecordsLive) {
  Start();
  Welcome("s", 2);
  Running("r1", {"k"}, "s");
  for (uint64_t seq = 0; seq < 5; ++seq) {
    auto a = Interval("r1", 0, seq);
    ASSERT_EQ(Sent(a).size(), 1u);  // live while connected
  }
  EndStream();
  // While disconnected: spooled only.
  EXPECT_TRUE(Sent(Interval("r1", 0, 5)).empty());
  act::Connect c = Of<act::Connect>(AdvanceToNextTick())[0];
  ASSERT_EQ(c.hello.hello().running_runs_size(), 1);
  EXPECT_EQ(c.hello.hello().run_store_ids().at("r1"), "s");
  auto a = Welcome("s", 2, 1000, {{"r1", 3}});
  auto replay = Of<act::Replay>(a);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].run_id, "r1");
  EXPECT_EQ(replay[0].conn, c.conn);
  EXPECT_EQ(replay[0].from_seq, 3u);
  // origin + RunStarted + seqs 0..5: the replay ends at what was spooled when the
  // Welcome came; what comes after goes live, once.
  EXPECT_EQ(replay[0].records, 8u);
  EXPECT_TRUE(Logged(a, "connected to ctl:7070 as agent-a"));
  auto live = Sent(Interval("r1", 0, 6));
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].interval().seq(), 6u);
}

TEST_F(AgentCoreTest, RunFinishedIsResentOnEveryReconnectUntilAWelcomeNoLongerListsIt) {
  Start();
  Welcome("s", 2);
  Running("r1", {"k"}, "s");
  Interval("r1", 0, 0);
  AgentMessage fin = End("r1");
  auto a = Finished("r1", fin);
  auto send = Of<act::Send>(a);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].finished_run, "r1");
  a = Feed(ev::FinishSent{core_.conn(), "r1"});
  ASSERT_EQ(Of<act::MarkSent>(a).size(), 1u);
  // The stream broke before the controller stored it: it still lists the run.
  Reconnect();
  a = Welcome("s", 2, 1000, {{"r1", 1}});
  ASSERT_EQ(Of<act::Replay>(a).size(), 1u);
  EXPECT_EQ(Of<act::Replay>(a)[0].records, 4u);  // origin, started, seq 0, RunFinished
  Feed(ev::FinishSent{core_.conn(), "r1"});
  // Stored: the next Welcome does not list it; the spool goes.
  Reconnect();
  a = Welcome("s", 2);
  EXPECT_TRUE(Of<act::Replay>(a).empty());
  auto rm = Of<act::RemoveSpool>(a);
  ASSERT_EQ(rm.size(), 1u);
  EXPECT_EQ(rm[0].run_id, "r1");
  EXPECT_FALSE(core_.has_run("r1"));
}

TEST_F(AgentCoreTest, AFinishedRunsSpoolGoesTwoMinutesAfterItWasSentOnAStreamStillUp) {
  Start();
  Welcome("s", 2, 5000);
  Running("r1", {"k"}, "s");
  Finished("r1", End("r1"));
  Feed(ev::FinishSent{core_.conn(), "r1"});
  std::vector<Action> all;
  for (int i = 0; i < 11; ++i) {  // 110 s
    auto a = Advance(10000);
    all.insert(all.end(), a.begin(), a.end());
  }
  EXPECT_TRUE(Of<act::RemoveSpool>(all).empty());
  auto a = Advance(20000);
  ASSERT_EQ(Of<act::RemoveSpool>(a).size(), 1u);
  EXPECT_FALSE(core_.has_run("r1"));
}

TEST_F(AgentCoreTest, AnotherStoresRunsAreNeitherSentToNorCancelledNorDroppedByThisController) {
  Start();
  Welcome("store-A", 2);
  Running("r1", {"k"}, "store-A");
  Interval("r1", 0, 0);
  EndStream();
  // An empty store at the same address.
  act::Connect c = Of<act::Connect>(AdvanceToNextTick())[0];
  EXPECT_EQ(c.hello.hello().run_store_ids().at("r1"), "store-A");
  auto a = Welcome("store-B", 2);
  EXPECT_TRUE(Of<act::Replay>(a).empty());
  EXPECT_TRUE(Of<act::RemoveSpool>(a).empty());
  EXPECT_TRUE(Logged(a, "WARNING: the controller at ctl:7070 serves store store-B"));
  EXPECT_TRUE(Logged(a, "belong to store store-A: r1 (running)"));
  a = Cancel("r1");
  EXPECT_TRUE(Of<act::CancelRun>(a).empty());
  EXPECT_TRUE(Logged(a, "WARNING: CancelRun for run r1 ignored: the run belongs to store store-A"));
  EXPECT_TRUE(Sent(Interval("r1", 0, 1)).empty());
  // The heartbeat still says it runs (the controller places nothing until it ends).
  auto hb = Sent(Advance(1000));
  ASSERT_EQ(hb.size(), 1u);
  EXPECT_EQ(hb[0].heartbeat().running_runs(0), "r1");
  Finished("r1", End("r1"));
  // Store B never lists it, and it is never dropped on B's word.
  Reconnect();
  a = Welcome("store-B", 2);
  EXPECT_TRUE(Of<act::RemoveSpool>(a).empty());
  EXPECT_TRUE(core_.has_run("r1"));
  // Store A's controller returns: everything is replayed.
  Reconnect();
  a = Welcome("store-A", 2, 1000, {{"r1", 1}});
  auto replay = Of<act::Replay>(a);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].from_seq, 1u);
  EXPECT_EQ(replay[0].records, 5u);
}

TEST_F(AgentCoreTest, ACancelDuringSetUpStopsTheRunBeforeItHoldsAnything) {
  Start();
  Welcome("s", 2);
  auto a = Assign("r1", {"blk:259:0"});
  auto start = Of<act::StartRun>(a);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].store_id, "s");
  EXPECT_EQ(start[0].leased_keys, std::vector<std::string>{"blk:259:0"});
  Origin("r1", "s");
  // Cancelled while the run thread lays out files or parses.
  a = Cancel("r1");
  ASSERT_EQ(Of<act::CancelRun>(a).size(), 1u);
  EXPECT_TRUE(Logged(a, "run r1 cancel requested"));
  a = Feed(ev::KeysWanted{"r1", {"blk:259:0"}});
  auto d = Of<act::KeysDecided>(a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].granted);
  EXPECT_TRUE(core_.held_keys().empty());
  AgentMessage fin = End("r1", false, "cancelled");
  EXPECT_FALSE(fin.run_finished().ok());
  EXPECT_EQ(fin.run_finished().error(), "cancelled");
  a = Finished("r1", fin);
  ASSERT_EQ(Sent(a).size(), 1u);
  EXPECT_TRUE(Sent(a)[0].has_run_finished());
}

TEST_F(AgentCoreTest, AFullSpoolNamesTheRecordsItCouldNotTakeAndKeepsTheResultInMemory) {
  Start();
  Welcome("s", 2);
  Running("r1", {"k"}, "s");
  EndStream();  // the controller is away: the spool is all there is
  // Two clones; the disk fills for job 0 seqs 2-4 and job 1 seq 3.
  for (uint64_t seq = 0; seq < 7; ++seq) {
    auto a0 = Interval("r1", 0, seq, !(seq >= 2 && seq <= 4));
    if (seq == 2) {
      EXPECT_TRUE(Logged(a0, "cannot spool interval records from job 0 seq 2 on (No space"));
    }
    auto a1 = Interval("r1", 1, seq, seq != 3);
    if (seq == 4) {
      EXPECT_TRUE(Logged(a1, "spooling interval records again from job 1 seq 4")) << Logs(a1);
    }
  }
  auto a = Feed(ev::RunEnded{"r1", true, "", "{\"jobs\":[]}", "nvme:x"});
  auto w = Of<act::WriteFinish>(a);
  ASSERT_EQ(w.size(), 1u);
  const auto& f = w[0].msg.run_finished();
  EXPECT_TRUE(f.ok());
  EXPECT_EQ(f.last_seq_total(), 14u);
  ASSERT_EQ(f.next_seq_size(), 2);
  EXPECT_EQ(f.next_seq(0), 7u);
  EXPECT_EQ(f.next_seq(1), 7u);
  ASSERT_EQ(f.unspooled_size(), 2);
  EXPECT_EQ(FormatSeqRanges({f.unspooled().begin(), f.unspooled().end()}),
            "job 0 seq 2-4, job 1 seq 3");
  EXPECT_EQ(f.device_fingerprint(), "nvme:x");
  EXPECT_TRUE(Logged(a, "run r1: interval records not spooled: job 0 seq 2-4, job 1 seq 3 (named"));
  EXPECT_TRUE(Logged(a, "run r1 succeeded"));
  // The RunFinished itself does not fit either: kept here, sent after the replay.
  a = Finished("r1", w[0].msg, /*ok=*/false);
  EXPECT_TRUE(Logged(a, "cannot spool its RunFinished (kept in memory until delivered)"));
  AdvanceToNextTick();
  a = Welcome("s", 2, 1000, {{"r1", 0}});
  ASSERT_EQ(Of<act::Replay>(a).size(), 1u);
  // origin, started, 4 + 6 interval records: the unspooled ones are not in the file.
  EXPECT_EQ(Of<act::Replay>(a)[0].records, 12u);
  auto send = Of<act::Send>(a);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].finished_run, "r1");
  EXPECT_EQ(send[0].msg.run_finished().unspooled_size(), 2);
  // Replay first, then the RunFinished from memory.
  size_t replay_at = 0, send_at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::holds_alternative<act::Replay>(a[i])) replay_at = i;
    if (std::holds_alternative<act::Send>(a[i])) send_at = i;
  }
  EXPECT_LT(replay_at, send_at);
}

TEST_F(AgentCoreTest, ResolveQuestionsAreAnsweredOnTheStreamThatAskedOnly) {
  Start();
  Welcome("s", 2);
  ControllerMessage q;
  q.mutable_resolve_targets()->set_run_id("r9");
  q.mutable_resolve_targets()->add_paths("/dev/nvme0n1");
  auto a = FromController(q);
  auto r = Of<act::Resolve>(a);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].req.paths(0), "/dev/nvme0n1");
  AgentMessage ans;
  ans.mutable_targets_resolved()->set_run_id("r9");
  auto* t = ans.mutable_targets_resolved()->add_targets();
  t->set_path("/dev/nvme0n1");
  t->add_keys("blk:259:0");
  a = Feed(ev::Resolved{r[0].conn, ans});
  ASSERT_EQ(Sent(a).size(), 1u);
  EXPECT_EQ(Sent(a)[0].targets_resolved().targets(0).keys(0), "blk:259:0");
  EXPECT_TRUE(Logged(a, "run r9 targets: /dev/nvme0n1 -> blk:259:0"));
  // Answered after that stream ended: dropped (the controller asks again).
  a = FromController(q);
  r = Of<act::Resolve>(a);
  Reconnect();
  Welcome("s", 2);
  EXPECT_TRUE(Sent(Feed(ev::Resolved{r[0].conn, ans})).empty());
  // An error is logged and sent.
  AgentMessage err;
  err.mutable_targets_resolved()->set_run_id("r9");
  err.mutable_targets_resolved()->set_error("/etc/passwd is outside --allow-path");
  a = Feed(ev::Resolved{core_.conn(), err});
  EXPECT_EQ(Sent(a).size(), 1u);
  EXPECT_TRUE(Logged(a, "run r9: cannot run here: /etc/passwd is outside"));
}

TEST_F(AgentCoreTest, ARunWaitsForKeysHeldByAnotherRunAndGetsThemWhenReleased) {
  Start();
  Welcome("s", 2);
  Running("a", {"file:1:2", "name:1:3/x"}, "s");
  Assign("b");
  Origin("b", "s");
  auto w = Feed(ev::KeysWanted{"b", {"name:1:3/x"}});
  EXPECT_TRUE(Of<act::KeysDecided>(w).empty());
  EXPECT_TRUE(Logged(w, "run b waits: target name:1:3/x is in use by run a on this agent"));
  Assign("c");
  auto wc = Feed(ev::KeysWanted{"c", {"other"}});
  ASSERT_EQ(Of<act::KeysDecided>(wc).size(), 1u);  // disjoint: runs at once
  EXPECT_EQ(core_.held_keys().at("name:1:3/x"), "a");
  auto a = Feed(ev::RunEnded{"a", true, "", "{}", ""});
  auto d = Of<act::KeysDecided>(a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].run_id, "b");
  EXPECT_TRUE(d[0].granted);
  EXPECT_EQ(core_.held_keys().at("name:1:3/x"), "b");
  EXPECT_EQ(core_.held_keys().count("file:1:2"), 0u);
  Feed(ev::RunEnded{"b", true, "", "{}", ""});
  Feed(ev::RunEnded{"c", true, "", "{}", ""});
  EXPECT_TRUE(core_.held_keys().empty());
}

TEST_F(AgentCoreTest, ACancelWhileWaitingForKeysEndsTheWait) {
  Start();
  Welcome("s", 2);
  Running("a", {"k"}, "s");
  Assign("b");
  Feed(ev::KeysWanted{"b", {"k"}});
  auto a = Cancel("b");
  auto d = Of<act::KeysDecided>(a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].granted);
  Feed(ev::RunEnded{"b", false, "cancelled", "", ""});
  // When a's keys are released, nobody is waiting any more.
  a = Feed(ev::RunEnded{"a", true, "", "{}", ""});
  EXPECT_TRUE(Of<act::KeysDecided>(a).empty());
  EXPECT_TRUE(core_.held_keys().empty());
}

TEST_F(AgentCoreTest, NoWelcomeInFifteenSecondsClosesAndBacksOff) {
  Start();
  auto a = Advance(14999);
  EXPECT_TRUE(Of<act::CloseStream>(a).empty());
  a = Advance(1);
  ASSERT_EQ(Of<act::CloseStream>(a).size(), 1u);
  EXPECT_TRUE(Logged(a, "no Welcome from the controller within 15 s"));
  a = EndStream();
  EXPECT_FALSE(Logged(a, "ended before Welcome"));
  EXPECT_TRUE(Logged(a, "reconnecting to ctl:7070 in"));
  EXPECT_EQ(core_.backoff().failures(), 1u);
  // A Welcome from that stream after all is not acted on.
  a = Feed(ev::FromController{1, ControllerMessage()});
  EXPECT_TRUE(a.empty());
}

TEST_F(AgentCoreTest, ARejectionIsLoggedWithItsReason) {
  Start();
  ControllerMessage m;
  m.mutable_reject()->set_reason("agent name \"agent-a\" is in use by a live session from x");
  auto a = FromController(m);
  EXPECT_TRUE(Logged(a, "controller rejected this agent: agent name \"agent-a\" is in use"));
  ASSERT_EQ(Of<act::CloseStream>(a).size(), 1u);
  a = EndStream();
  EXPECT_FALSE(Logged(a, "ended before Welcome"));
  EXPECT_FALSE(core_.welcomed());
}

TEST_F(AgentCoreTest, MessagesOfAnEarlierStreamAreIgnored) {
  Start();
  Welcome("s", 2);
  const uint64_t old = core_.conn();
  Reconnect();
  Welcome("s", 2);
  ControllerMessage m;
  m.mutable_assign()->set_run_id("r1");
  auto a = Feed(ev::FromController{old, m});
  EXPECT_TRUE(Of<act::StartRun>(a).empty());
  a = Feed(ev::StreamEnded{old, true, "late"});
  EXPECT_TRUE(core_.welcomed());
  EXPECT_TRUE(a.empty());
}

TEST_F(AgentCoreTest, AnAssignmentIsTakenOnce) {
  Start();
  Welcome("s", 2);
  EXPECT_EQ(Of<act::StartRun>(Assign("r1")).size(), 1u);
  auto a = Assign("r1");
  EXPECT_TRUE(Of<act::StartRun>(a).empty());
  EXPECT_TRUE(Logged(a, "run r1 assigned again; already known, ignored"));
  a = Assign("");
  EXPECT_TRUE(Of<act::StartRun>(a).empty());
}

TEST_F(AgentCoreTest, ShutdownCancelsDrainsClosesGracefullyAndExitsWhenThreadsAreDone) {
  Start();
  Welcome("s", 2);
  Running("r1", {"k"}, "s");
  Assign("r2");
  Feed(ev::KeysWanted{"r2", {"k"}});  // waits for r1
  auto a = Feed(ev::Shutdown{});
  EXPECT_EQ(Of<act::CancelRun>(a).size(), 2u);
  auto d = Of<act::KeysDecided>(a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].granted);
  EXPECT_TRUE(Of<act::CloseStream>(a).empty());  // runs still end
  EXPECT_TRUE(Of<act::StartRun>(Assign("r3")).empty());
  // r1's last records and RunFinished go out before the close.
  a = Interval("r1", 0, 0);
  EXPECT_EQ(Sent(a).size(), 1u);
  Finished("r1", End("r1", false, "cancelled"));
  a = Feed(ev::RunEnded{"r2", false, "cancelled", "", ""});
  a = Spooled("r2", Of<act::WriteFinish>(a)[0].msg);
  ASSERT_EQ(Sent(a).size(), 1u);
  auto close = Of<act::CloseStream>(a);
  ASSERT_EQ(close.size(), 1u);
  EXPECT_TRUE(close[0].graceful);
  a = EndStream();
  EXPECT_TRUE(Of<act::Exit>(a).empty());  // r2's thread has not exited yet
  EXPECT_TRUE(Of<act::Connect>(Advance(60000)).empty());
  a = Feed(ev::RunExited{"r2"});
  EXPECT_EQ(Of<act::Exit>(a).size(), 1u);
}

TEST_F(AgentCoreTest, ShutdownClosesAfterTheDrainTimeEvenIfARunDoesNotEnd) {
  Start();
  Welcome("s", 2);
  Running("r1", {"k"}, "s");
  Feed(ev::Shutdown{});
  EXPECT_TRUE(Of<act::CloseStream>(Advance(4999)).empty());
  auto a = Advance(1);
  ASSERT_EQ(Of<act::CloseStream>(a).size(), 1u);
  EXPECT_TRUE(Of<act::CloseStream>(a)[0].graceful);
  // A Write stuck on a dead peer: cancelled 3 s later.
  a = Advance(3000);
  ASSERT_EQ(Of<act::CloseStream>(a).size(), 1u);
  EXPECT_FALSE(Of<act::CloseStream>(a)[0].graceful);
  EndStream();
  Finished("r1", End("r1", false, "cancelled"));
  EXPECT_EQ(core_.NextTickMs(), UINT64_MAX);
}

TEST_F(AgentCoreTest, ShutdownWhileDisconnectedExitsOnceRunsAreDone) {
  Start();
  EndStream(/*hello_written=*/false);
  auto a = Feed(ev::Shutdown{});
  EXPECT_EQ(Of<act::Exit>(a).size(), 1u);
}

TEST_F(AgentCoreTest, ALastingSessionSpreadsTheNextReconnectOverOneHeartbeatInterval) {
  Start();
  Welcome("s", 2, /*hb=*/4000);
  Advance(3000);
  EndStream();
  // Short session: counts as a failure, the window doubles from 250 ms.
  EXPECT_EQ(core_.backoff().failures(), 1u);
  EXPECT_EQ(core_.backoff().window_ms(), 500u);
  EXPECT_LT(core_.NextTickMs() - now_.mono_ms, 250u);
  AdvanceToNextTick();
  Welcome("s", 2, 4000);
  Advance(10000);
  EndStream();
  // Lasting: reset to one heartbeat interval (the controller scales it with the
  // fleet), then doubling from there.
  EXPECT_EQ(core_.backoff().failures(), 1u);
  EXPECT_EQ(core_.backoff().window_ms(), 8000u);
  EXPECT_LT(core_.NextTickMs() - now_.mono_ms, 4000u);
}

TEST_F(AgentCoreTest, ConnectFailuresAreLoggedAndBackedOffExponentially) {
  Start();
  for (uint64_t window : {250, 500, 1000, 2000}) {
    EXPECT_EQ(core_.backoff().window_ms(), window);
    auto a = EndStream(/*hello_written=*/false);
    EXPECT_TRUE(Logged(a, "connect to ctl:7070 failed: code 14: unavailable"));
    EXPECT_LT(core_.NextTickMs() - now_.mono_ms, window);
    ASSERT_EQ(Of<act::Connect>(AdvanceToNextTick()).size(), 1u);
  }
}

TEST(AgentCoreSpoolTest, ARunSpooledByAnEarlierProcessIsClosedAndReplayed) {
  std::vector<AgentMessage> recs(5);
  recs[0].mutable_origin()->set_run_id("r1");
  recs[0].mutable_origin()->set_job_id("j1");
  recs[0].mutable_origin()->set_store_id("s");
  recs[1].mutable_run_started()->set_run_id("r1");
  recs[2].mutable_interval()->set_run_id("r1");
  recs[2].mutable_interval()->set_seq(0);
  recs[3].mutable_interval()->set_run_id("r1");
  recs[3].mutable_interval()->set_job_index(1);
  recs[3].mutable_interval()->set_seq(4);
  recs[4].mutable_interval()->set_run_id("r1");
  recs[4].mutable_interval()->set_seq(1);
  AdoptedRun run = ScanSpool(recs);
  EXPECT_EQ(run.run_id, "r1");
  EXPECT_EQ(run.job_id, "j1");
  EXPECT_EQ(run.store_id, "s");
  EXPECT_EQ(run.records, 3u);
  EXPECT_EQ(run.spool_records, 5u);
  EXPECT_EQ(run.next_seq, (std::vector<uint64_t>{2, 5}));
  EXPECT_FALSE(run.finished);
  AgentMessage fin = RestartFinish(run, 123);
  EXPECT_FALSE(fin.run_finished().ok());
  EXPECT_EQ(fin.run_finished().error(), "the agent restarted while the run was in progress");
  EXPECT_EQ(fin.run_finished().last_seq_total(), 3u);
  EXPECT_EQ(fin.run_finished().next_seq_size(), 2);
  ++run.spool_records;  // the driver appended it
  run.finished = true;

  CoreConfig cfg;
  cfg.controller = "c";
  AgentCore core(cfg);
  std::vector<Action> out;
  core.Adopt(run, &out);
  EXPECT_TRUE(Logged(out, "re-adopted spooled run r1 (3 interval records, store s)"));
  CoreTime now{1000, 1000};
  out.clear();
  core.Handle(now, ev::Start{}, &out);
  auto c = Of<act::Connect>(out);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].hello.hello().running_runs_size(), 0);  // it is over
  out.clear();
  ControllerMessage w;
  w.mutable_welcome()->set_store_id("s");
  w.mutable_welcome()->set_protocol_version(2);
  (*w.mutable_welcome()->mutable_next_seq())["r1"] = 1;
  core.Handle(now, ev::FromController{1, w}, &out);
  auto replay = Of<act::Replay>(out);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].records, 6u);
  EXPECT_EQ(replay[0].from_seq, 1u);
}

}  // namespace
}  // namespace iofleet::agent

namespace iofleet::agent {
namespace {

// --- High availability: several controller addresses, leader epochs.
namespace ha {

struct Driver {
  explicit Driver(std::vector<std::string> controllers) : core(Cfg(std::move(controllers))) {
    core.SetInventory(Inv("host-a"), "sha256:aaa");
  }
  static CoreConfig Cfg(std::vector<std::string> controllers) {
    CoreConfig c;
    c.controller = controllers.front();
    c.controllers = std::move(controllers);
    c.spool_dir = "/spool";
    c.agent_name = "agent-a";
    c.backoff_initial_ms = 250;
    c.backoff_max_ms = 1000;
    c.seed = 5;
    return c;
  }
  std::vector<Action> Feed(Event e) {
    std::vector<Action> out;
    core.Handle(now, std::move(e), &out);
    return out;
  }
  // The Connect the core makes after the stream ended: at once (in `ended`'s
  // actions) or at its next deadline; its address ("" if none).
  std::string NextConnect(const std::vector<Action>& ended) {
    if (auto c = Of<act::Connect>(ended); !c.empty()) return c[0].address;
    const uint64_t t = core.NextTickMs();
    if (t != UINT64_MAX && t > now.mono_ms) {
      now.wall_ms += t - now.mono_ms;
      now.mono_ms = t;
    }
    auto c = Of<act::Connect>(Feed(ev::Tick{}));
    return c.empty() ? "" : c[0].address;
  }
  std::vector<Action> Welcome(uint64_t epoch) {
    ControllerMessage m;
    m.mutable_welcome()->set_protocol_version(2);
    m.mutable_welcome()->set_heartbeat_interval_ms(1000);
    m.mutable_welcome()->set_store_id("store-1");
    m.mutable_welcome()->set_leader_epoch(epoch);
    return Feed(ev::FromController{core.conn(), std::move(m)});
  }
  std::vector<Action> Assign(const std::string& run, uint64_t epoch) {
    ControllerMessage m;
    m.mutable_assign()->set_run_id(run);
    m.mutable_assign()->set_job_id("job-1");
    m.mutable_assign()->set_fio_text("[j]\nsize=4k\n");
    m.mutable_assign()->set_leader_epoch(epoch);
    return Feed(ev::FromController{core.conn(), std::move(m)});
  }
  std::vector<Action> End(bool hello_written = true) {
    return Feed(ev::StreamEnded{core.conn(), hello_written, "code 14: unavailable"});
  }
  AgentCore core;
  CoreTime now{1000, 1700000000000};
};

TEST(AgentCoreHaTest, TriesEveryControllerInTurnThenBacksOff) {
  Driver d({"a:7070", "b:7070", "c:7070"});
  auto first = Of<act::Connect>(d.Feed(ev::Start{}));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].address, "a:7070");
  const uint64_t t0 = d.now.mono_ms;
  // a is a follower: nothing listens there.
  EXPECT_EQ(d.NextConnect(d.End(/*hello_written=*/false)), "b:7070");
  EXPECT_EQ(d.NextConnect(d.End(false)), "c:7070");
  EXPECT_EQ(d.now.mono_ms, t0) << "the next address of a round is dialled at once";
  auto round = d.End(false);  // a whole round failed: one backoff step
  EXPECT_TRUE(Of<act::Connect>(round).empty());
  EXPECT_EQ(d.NextConnect(round), "a:7070");
  EXPECT_GT(d.now.mono_ms, t0);
  d.Welcome(1);
  EXPECT_EQ(d.core.leader_epoch(), 1u);
  // The leader goes away: the agent moves on to the next address at once.
  const uint64_t t1 = d.now.mono_ms;
  EXPECT_EQ(d.NextConnect(d.End()), "b:7070");
  EXPECT_EQ(d.now.mono_ms, t1);
}

TEST(AgentCoreHaTest, RefusesAssignmentOlderThanNewestEpochSeen) {
  Driver d({"a:7070", "b:7070"});
  d.Feed(ev::Start{});
  d.Welcome(5);
  auto ok = d.Assign("run-new", 5);
  ASSERT_EQ(Of<act::StartRun>(ok).size(), 1u) << Logs(ok);
  auto newer = d.Assign("run-newer", 6);  // a newer leader's assignment raises the mark
  ASSERT_EQ(Of<act::StartRun>(newer).size(), 1u) << Logs(newer);
  EXPECT_EQ(d.core.leader_epoch(), 6u);
  auto stale = d.Assign("run-old", 5);
  EXPECT_TRUE(Of<act::StartRun>(stale).empty()) << "a deposed leader's assignment ran";
  EXPECT_TRUE(Logged(stale, "refused: assigned by leader epoch 5, older than epoch 6")) << Logs(stale);
  auto plain = d.Assign("run-plain", 0);  // no epoch: a controller that is not HA
  EXPECT_EQ(Of<act::StartRun>(plain).size(), 1u) << Logs(plain);
}

TEST(AgentCoreHaTest, RefusesWelcomeOfDeposedLeaderAndTriesTheNext) {
  Driver d({"a:7070", "b:7070"});
  d.Feed(ev::Start{});
  d.Welcome(7);
  EXPECT_EQ(d.NextConnect(d.End()), "b:7070");
  auto w = d.Welcome(6);  // b still thinks it leads with an older epoch
  EXPECT_EQ(Of<act::CloseStream>(w).size(), 1u) << Logs(w);
  EXPECT_TRUE(Logged(w, "deposed leader (epoch 6; this agent has seen epoch 7)")) << Logs(w);
  EXPECT_TRUE(Of<act::Replay>(w).empty());
  EXPECT_EQ(d.NextConnect(d.End()), "a:7070");
}

TEST(AgentCoreHaTest, FollowsAFollowersRedirectToTheLeaderAtOnce) {
  Driver d({"a:7070", "b:7070", "c:7070"});
  d.Feed(ev::Start{});
  const uint64_t t0 = d.now.mono_ms;
  auto reject = [&](const std::string& leader) {
    ControllerMessage m;
    m.mutable_reject()->set_reason("this controller is a follower; the leader is at " + leader);
    m.mutable_reject()->set_leader_address(leader);
    return d.Feed(ev::FromController{d.core.conn(), std::move(m)});
  };
  // a is a follower naming c (in the list): c next, not b, at once.
  auto r = reject("c:7070");
  EXPECT_EQ(Of<act::CloseStream>(r).size(), 1u) << Logs(r);
  EXPECT_EQ(d.NextConnect(d.End()), "c:7070");
  EXPECT_EQ(d.now.mono_ms, t0) << "a redirect is followed at once";
  // c has lost the lease meanwhile and names an address not in the list.
  reject("10.0.0.9:7070");
  EXPECT_EQ(d.NextConnect(d.End()), "10.0.0.9:7070");
  d.Welcome(3);
  EXPECT_EQ(d.core.leader_epoch(), 3u);
  // That leader goes away: back to the list, from where the round was.
  EXPECT_EQ(d.NextConnect(d.End()), "a:7070");
}

TEST(AgentCoreHaTest, ARedirectLoopFallsBackToTheList) {
  Driver d({"a:7070", "b:7070"});
  d.Feed(ev::Start{});
  auto reject = [&](const std::string& leader) {
    ControllerMessage m;
    m.mutable_reject()->set_reason("follower");
    m.mutable_reject()->set_leader_address(leader);
    d.Feed(ev::FromController{d.core.conn(), std::move(m)});
  };
  // Followers that name each other (an election under way): three redirects
  // are followed, then the list goes on as after a failure.
  reject("b:7070");
  EXPECT_EQ(d.NextConnect(d.End()), "b:7070");
  reject("a:7070");
  EXPECT_EQ(d.NextConnect(d.End()), "a:7070");
  reject("b:7070");
  EXPECT_EQ(d.NextConnect(d.End()), "b:7070");
  reject("b:7070");  // the fourth is not followed: the next address (a)
  EXPECT_EQ(d.NextConnect(d.End()), "a:7070");
  // The next chain is followed again (the leader may be up by now).
  reject("b:7070");
  EXPECT_EQ(d.NextConnect(d.End()), "b:7070");
}

// An agent that knows one follower only, redirected three times to a new
// leader that is not listening yet, still reaches it once it listens (seen in
// faults.ha_followers: the agent stayed on the follower for good).
TEST(AgentCoreHaTest, OneFollowerOnlyStillReachesALateLeader) {
  Driver d({"f:7070"});
  d.Feed(ev::Start{});
  auto reject = [&] {
    ControllerMessage m;
    m.mutable_reject()->set_reason("follower");
    m.mutable_reject()->set_leader_address("l:7070");
    d.Feed(ev::FromController{d.core.conn(), std::move(m)});
  };
  for (int i = 0; i < 3; ++i) {
    reject();
    EXPECT_EQ(d.NextConnect(d.End()), "l:7070");  // followed; the dial fails
    EXPECT_EQ(d.NextConnect(d.End()), "f:7070");
  }
  reject();  // not followed: the list (f) after a backoff
  EXPECT_EQ(d.NextConnect(d.End()), "f:7070");
  reject();  // followed again
  EXPECT_EQ(d.NextConnect(d.End()), "l:7070");
}

}  // namespace ha

}  // namespace
}  // namespace iofleet::agent
