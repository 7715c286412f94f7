#include "agent/transport/agent_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <random>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/run/job_log.h"
#include "agent/run/runner.h"
#include "agent/transport/convert.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "grpcpp/grpcpp.h"

namespace iofleet::agent {
namespace {

using iofleet::v1::AgentMessage;
using iofleet::v1::ControllerMessage;

constexpr uint32_t kProtocolVersion = 1;
constexpr uint32_t kMinProtocolVersion = 1;
constexpr auto kWelcomeTimeout = std::chrono::seconds(15);
constexpr uint64_t kDefaultHeartbeatMs = 5000;
// A finished run's spool is kept until the controller has surely stored it: the
// next Welcome no longer lists it, or it was sent this long ago on a stream that
// is still up.
constexpr uint64_t kSpoolKeepMs = 120000;
// A session that lasted this long resets the reconnect backoff.
constexpr auto kStableSession = std::chrono::seconds(10);
constexpr auto kShutdownDrain = std::chrono::seconds(5);

// Wall clock: for timestamps sent to the controller and shown, never for durations.
uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

// Monotonic clock: every duration the agent measures.
uint64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

std::string RandomInstanceId() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()));
  char buf[33];
  snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng()),
           static_cast<unsigned long long>(rng()));
  return buf;
}

void Log(const std::string& msg) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof(when), "%H:%M:%S", &tm);
  fprintf(stderr, "iofleet-agent %s.%03ld %s\n", when, ts.tv_nsec / 1000000, msg.c_str());
}

// Adds `seq` of job `job` to `ranges`, extending that job's last range when contiguous.
void AddSeqRange(std::vector<iofleet::v1::SeqRange>* ranges, uint32_t job, uint64_t seq) {
  for (auto it = ranges->rbegin(); it != ranges->rend(); ++it) {
    if (it->job_index() != job) continue;
    if (it->last() + 1 == seq) {
      it->set_last(seq);
      return;
    }
    break;
  }
  iofleet::v1::SeqRange r;
  r.set_job_index(job);
  r.set_first(seq);
  r.set_last(seq);
  ranges->push_back(std::move(r));
}

std::string FormatRanges(const std::vector<iofleet::v1::SeqRange>& ranges) {
  std::string out;
  for (const auto& r : ranges) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", "job ", r.job_index(), " seq ", r.first());
    if (r.last() != r.first()) absl::StrAppend(&out, "-", r.last());
  }
  return out;
}

std::string StatusText(const grpc::Status& s) {
  return absl::StrCat("code ", static_cast<int>(s.error_code()), ": ", s.error_message());
}

// The run's log directory, <log_dir>/<run_id>, made when a job of the run
// writes a log (nothing is made otherwise; *out stays "").
absl::Status RunLogDir(const std::string& log_dir, const jobspec::JobList& list,
                       const std::string& run_id, std::string* out) {
  bool any = false;
  for (const jobspec::JobSpec& job : list.jobs) any = any || LogPlan::For(job).Any();
  if (!any) return absl::OkStatus();
  if (run_id.empty() || run_id.find('/') != std::string::npos || run_id[0] == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat("run id \"", run_id, "\" cannot name a log directory"));
  }
  const std::string dir = absl::StrCat(log_dir, "/", run_id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("--log-dir ", log_dir, ": cannot create ", dir, ": ", ec.message()));
  }
  *out = dir;
  return absl::OkStatus();
}

}  // namespace

AgentClient::AgentClient(ServeOptions options)
    : opt_(std::move(options)), instance_id_(RandomInstanceId()) {}

AgentClient::~AgentClient() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  for (auto& [id, e] : runs_) {
    e->cancel = true;
    if (e->thread.joinable()) e->thread.join();
  }
  for (auto& e : graveyard_) {
    if (e->thread.joinable()) e->thread.join();
  }
  {
    std::lock_guard<std::mutex> lk(sync_mu_);
    sync_stop_ = true;
  }
  sync_cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  if (killer_.joinable()) killer_.join();
}

absl::Status AgentClient::Init() {
  std::error_code ec;
  std::filesystem::create_directories(opt_.spool_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("--spool-dir ", opt_.spool_dir, ": cannot create: ", ec.message()));
  }
  if (access(opt_.spool_dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--spool-dir ", opt_.spool_dir, ": not writable: ", strerror(errno)));
  }
  CollectInventory(&inventory_);

  // Re-adopt what an earlier agent process left behind.
  for (const auto& de : std::filesystem::directory_iterator(opt_.spool_dir, ec)) {
    const std::string path = de.path().string();
    if (de.path().extension() != ".spool") continue;
    auto msgs = ReadSpoolFile(path);
    if (!msgs.ok()) {
      Log(absl::StrCat("spool ", path, ": ", msgs.status().ToString(), " (skipped)"));
      continue;
    }
    std::string run_id, job_id, store_id;
    uint64_t records = 0;
    bool finished = false;
    std::vector<uint64_t> next_seq;
    for (const AgentMessage& m : *msgs) {
      if (m.has_origin()) {
        run_id = m.origin().run_id();
        job_id = m.origin().job_id();
        store_id = m.origin().store_id();
      }
      if (m.has_run_started()) run_id = m.run_started().run_id();
      if (m.has_interval()) {
        run_id = m.interval().run_id();
        ++records;
        const uint32_t j = m.interval().job_index();
        if (j < 65536) {
          if (next_seq.size() <= j) next_seq.resize(j + 1, 0);
          next_seq[j] = std::max(next_seq[j], m.interval().seq() + 1);
        }
      }
      if (m.has_run_finished()) {
        run_id = m.run_finished().run_id();
        finished = true;
      }
    }
    if (run_id.empty() || SpoolFileName(run_id) != de.path().filename().string()) {
      Log(absl::StrCat("spool ", path, ": no usable records, removing"));
      std::filesystem::remove(path, ec);
      continue;
    }
    auto entry = std::make_shared<RunEntry>();
    entry->run_id = run_id;
    entry->job_id = job_id;
    entry->store_id = store_id;
    entry->records = records;
    entry->finished = finished;
    auto writer = SpoolWriter::Open(opt_.spool_dir, run_id);
    if (!writer.ok()) {
      Log(absl::StrCat("spool ", path, ": ", writer.status().ToString(), " (skipped)"));
      continue;
    }
    entry->spool = std::move(*writer);
    entry->finish_sent = finished && access((opt_.spool_dir + "/" + SentMarkerName(run_id)).c_str(),
                                            F_OK) == 0;
    if (!finished) {
      ReleaseReserve(opt_.spool_dir, run_id);  // the room kept for this record
      AgentMessage m;
      auto* f = m.mutable_run_finished();
      f->set_run_id(run_id);
      f->set_ok(false);
      f->set_error("the agent restarted while the run was in progress");
      f->set_last_seq_total(records);
      // What the spool holds; records it never took before the restart are
      // unknown here, and the controller reports them as unexplained gaps.
      for (uint64_t n : next_seq) f->add_next_seq(n);
      f->set_unix_ms(NowMs());
      if (absl::Status s = entry->spool->Append(m); !s.ok()) Log(s.ToString());
      (void)entry->spool->Sync();
      entry->finished = true;
    }
    Log(absl::StrCat("re-adopted spooled run ", run_id, " (", records, " interval records",
                     entry->finish_sent ? ", already reported" : "",
                     store_id.empty() ? std::string() : absl::StrCat(", store ", store_id), ")"));
    runs_[run_id] = std::move(entry);
  }
  // Reserves left behind belong to runs that are over (or were just closed above).
  for (const auto& de : std::filesystem::directory_iterator(opt_.spool_dir, ec)) {
    if (de.path().extension() == ".reserve") std::filesystem::remove(de.path(), ec);
  }
  syncer_ = std::thread([this] { SyncerLoop(); });
  return absl::OkStatus();
}

void AgentClient::Shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    for (auto& [id, e] : runs_) e->cancel = true;
    // A Write() blocked on a dead peer would hold up the drain: cancel the stream
    // if the drain has not finished in time.
    killer_ = std::thread([this] {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, kShutdownDrain + std::chrono::seconds(3), [&] { return run_done_; });
      if (ctx_ != nullptr) ctx_->TryCancel();
    });
  }
  cv_.notify_all();
}

uint64_t AgentClient::NextBackoffMs(uint32_t attempt) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  double d = opt_.backoff_initial_ms;
  for (uint32_t i = 0; i < attempt && d < opt_.backoff_max_ms; ++i) d *= 2;
  if (d > opt_.backoff_max_ms) d = opt_.backoff_max_ms;
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return static_cast<uint64_t>(d * jitter(rng));
}

void AgentClient::Run() {
  uint32_t attempt = 0;
  uint64_t conn_id = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (shutdown_) break;
    }
    const auto start = std::chrono::steady_clock::now();
    const bool welcomed = Session(++conn_id);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (shutdown_) break;
    }
    if (welcomed && std::chrono::steady_clock::now() - start > kStableSession) attempt = 0;
    const uint64_t delay = NextBackoffMs(attempt);
    if (attempt < 64) ++attempt;
    Log(absl::StrCat("reconnecting to ", opt_.controller, " in ", delay, " ms"));
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::milliseconds(delay), [&] { return shutdown_; });
  }
  // Shutdown: runs were cancelled; wait for their threads.
  std::vector<std::shared_ptr<RunEntry>> all;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [id, e] : runs_) {
      e->cancel = true;
      all.push_back(e);
    }
    for (auto& e : graveyard_) all.push_back(e);
    graveyard_.clear();
  }
  for (auto& e : all) {
    if (e->thread.joinable()) e->thread.join();
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& e : all) {
      if (e->spool) (void)e->spool->Sync();
    }
    run_done_ = true;
  }
  cv_.notify_all();
  std::thread killer;
  {
    std::lock_guard<std::mutex> lk(mu_);
    killer = std::move(killer_);
  }
  if (killer.joinable()) killer.join();
}

bool AgentClient::Session(uint64_t conn_id) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(opt_.backoff_initial_ms));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(opt_.backoff_initial_ms));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(opt_.backoff_max_ms));
  // Servers refuse pings more often than every 5 minutes by default.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 300000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (opt_.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = opt_.tls_ca_pem;
    ssl.pem_private_key = opt_.tls_key_pem;
    ssl.pem_cert_chain = opt_.tls_cert_pem;
    creds = grpc::SslCredentials(ssl);
    if (!opt_.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(opt_.tls_server_name);
    }
  }
  auto channel = grpc::CreateCustomChannel(opt_.controller, creds, args);
  auto stub = iofleet::v1::AgentService::NewStub(channel);

  grpc::ClientContext ctx;
  if (!opt_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + opt_.token);
  ctx.set_wait_for_ready(false);

  AgentMessage hello_msg;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (shutdown_) return false;
    ctx_ = &ctx;
    stream_dead_ = false;
    welcomed_ = false;
    rejected_ = false;
    reject_reason_.clear();
    auto* hello = hello_msg.mutable_hello();
    hello->set_agent_name(opt_.name);
    hello->set_protocol_version(kProtocolVersion);
    hello->set_min_protocol_version(kMinProtocolVersion);
    *hello->mutable_inventory() = inventory_;
    for (const auto& [k, v] : opt_.labels) (*hello->mutable_labels())[k] = v;
    for (const std::string& p : opt_.allow_paths) hello->add_allow_paths(p);
    hello->set_enrolment_token(opt_.token);
    hello->set_instance_id(instance_id_);
    hello->set_resolves_targets(true);
    for (const std::string& id : RunningRunsLocked()) {
      hello->add_running_runs(id);
      const std::string& store = runs_.at(id)->store_id;
      if (!store.empty()) (*hello->mutable_run_store_ids())[id] = store;
    }
  }

  auto stream = stub->Connect(&ctx);
  auto end_session = [&](std::thread* reader, bool graceful) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      connected_ = false;
      queue_.clear();
    }
    if (graceful && stream->WritesDone()) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, std::chrono::seconds(2), [&] { return stream_dead_; });
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      ctx.TryCancel();
    }
    if (reader != nullptr && reader->joinable()) reader->join();
    const grpc::Status st = stream->Finish();
    std::lock_guard<std::mutex> lk(mu_);
    ctx_ = nullptr;
    return st;
  };

  if (!stream->Write(hello_msg)) {
    const grpc::Status st = end_session(nullptr, false);
    Log(absl::StrCat("connect to ", opt_.controller, " failed: ", StatusText(st)));
    return false;
  }
  std::thread reader([this, s = stream.get()] { ReaderLoop(s); });
  uint64_t hb_ms = kDefaultHeartbeatMs;

  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, kWelcomeTimeout,
                 [&] { return welcomed_ || rejected_ || stream_dead_ || shutdown_; });
    if (!welcomed_) {
      const bool rejected = rejected_;
      const std::string reason = reject_reason_;
      const bool timed_out = !rejected_ && !stream_dead_ && !shutdown_;
      lk.unlock();
      const grpc::Status st = end_session(&reader, false);
      if (rejected) {
        Log(absl::StrCat("controller rejected this agent: ", reason));
      } else if (timed_out) {
        Log("no Welcome from the controller within 15 s");
      } else {
        Log(absl::StrCat("stream to ", opt_.controller, " ended before Welcome: ", StatusText(st)));
      }
      return false;
    }
    if (welcome_.protocol_version() != kProtocolVersion) {
      Log(absl::StrCat("controller negotiated protocol ", welcome_.protocol_version(),
                       "; this agent speaks ", kProtocolVersion));
    }
    hb_ms = welcome_.heartbeat_interval_ms() > 0 ? welcome_.heartbeat_interval_ms()
                                                 : kDefaultHeartbeatMs;
    store_id_ = welcome_.store_id();
    ReplayLocked(welcome_, conn_id);
    connected_ = true;
    conn_id_ = conn_id;
    Log(absl::StrCat("connected to ", opt_.controller, " as ", opt_.name, "; replaying ",
                     queue_.size(), " spooled messages"));
  }

  auto next_hb = std::chrono::steady_clock::now() + std::chrono::milliseconds(hb_ms);
  auto next_gc = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::chrono::steady_clock::time_point drain_deadline{};
  bool graceful = false;
  for (;;) {
    std::vector<Outgoing> batch;
    std::vector<std::shared_ptr<RunEntry>> to_join;
    bool send_hb = false;
    AgentMessage hb;
    {
      std::unique_lock<std::mutex> lk(mu_);
      const auto wake = std::min(next_hb, next_gc);
      cv_.wait_until(lk, wake, [&] { return !queue_.empty() || stream_dead_ || shutdown_; });
      if (stream_dead_) break;
      const auto now = std::chrono::steady_clock::now();
      if (shutdown_) {
        if (drain_deadline == std::chrono::steady_clock::time_point{}) {
          drain_deadline = now + kShutdownDrain;
        }
        if ((queue_.empty() && RunningRunsLocked().empty()) || now >= drain_deadline) {
          graceful = true;
          break;
        }
        if (queue_.empty()) {
          lk.unlock();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          continue;
        }
      }
      while (!queue_.empty() && batch.size() < 256) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (now >= next_hb) {
        send_hb = true;
        hb.mutable_heartbeat()->set_unix_ms(NowMs());
        for (const std::string& id : RunningRunsLocked()) hb.mutable_heartbeat()->add_running_runs(id);
        next_hb = now + std::chrono::milliseconds(hb_ms);
      }
      if (now >= next_gc) {
        CollectGarbageLocked(conn_id);
        next_gc = now + std::chrono::seconds(10);
      }
      to_join.swap(graveyard_);
    }
    for (auto& e : to_join) {
      if (e->thread.joinable()) e->thread.join();
    }
    bool ok = true;
    if (send_hb) ok = stream->Write(hb);
    for (size_t i = 0; ok && i < batch.size(); ++i) {
      grpc::WriteOptions wo;
      if (i + 1 < batch.size()) wo.set_buffer_hint();
      ok = stream->Write(batch[i].msg, wo);
      if (ok && !batch[i].finished_run.empty()) {
        std::lock_guard<std::mutex> lk(mu_);
        auto it = runs_.find(batch[i].finished_run);
        if (it != runs_.end()) {
          RunEntry& e = *it->second;
          e.finish_sent = true;
          e.finish_sent_conn = conn_id;
          e.finish_sent_mono_ms = MonoMs();
          const std::string marker = opt_.spool_dir + "/" + SentMarkerName(e.run_id);
          const int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
          if (fd >= 0) close(fd);
        }
      }
    }
    if (!ok) break;
  }
  const grpc::Status st = end_session(&reader, graceful);
  Log(absl::StrCat("stream to ", opt_.controller, " closed: ", StatusText(st)));
  return true;
}

void AgentClient::ReaderLoop(
    grpc::ClientReaderWriter<AgentMessage, ControllerMessage>* stream) {
  ControllerMessage m;
  while (stream->Read(&m)) {
    switch (m.msg_case()) {
      case ControllerMessage::kWelcome: {
        std::lock_guard<std::mutex> lk(mu_);
        welcome_ = m.welcome();
        // Set here, before any AssignRun or CancelRun of this stream is read.
        store_id_ = welcome_.store_id();
        welcomed_ = true;
        cv_.notify_all();
        break;
      }
      case ControllerMessage::kReject: {
        std::lock_guard<std::mutex> lk(mu_);
        rejected_ = true;
        reject_reason_ = m.reject().reason();
        cv_.notify_all();
        break;
      }
      case ControllerMessage::kAssign:
        HandleAssign(m.assign());
        break;
      case ControllerMessage::kCancel:
        HandleCancel(m.cancel());
        break;
      case ControllerMessage::kResolveTargets:
        HandleResolve(m.resolve_targets());
        break;
      default:
        break;
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  stream_dead_ = true;
  cv_.notify_all();
}

void AgentClient::HandleAssign(const iofleet::v1::AssignRun& assign) {
  std::lock_guard<std::mutex> lk(mu_);
  if (shutdown_) return;
  if (assign.run_id().empty()) {
    Log("AssignRun without run_id ignored");
    return;
  }
  if (runs_.count(assign.run_id()) != 0) {
    Log(absl::StrCat("run ", assign.run_id(), " assigned again; already known, ignored"));
    return;
  }
  auto entry = std::make_shared<RunEntry>();
  entry->run_id = assign.run_id();
  entry->job_id = assign.job_id();
  entry->store_id = store_id_;
  // A run needs its spool and room in it for its result before it starts: a
  // full spool disk must not lose what the run measured without a word.
  std::string setup_error;
  auto writer = SpoolWriter::Open(opt_.spool_dir, assign.run_id());
  if (writer.ok()) {
    entry->spool = std::move(*writer);
    // The run's first record says which store it belongs to, so that no other
    // store's controller can cancel or drop it, even after an agent restart.
    AgentMessage origin;
    origin.mutable_origin()->set_run_id(entry->run_id);
    origin.mutable_origin()->set_job_id(entry->job_id);
    origin.mutable_origin()->set_store_id(entry->store_id);
    absl::Status reserved = entry->spool->Append(origin);
    if (reserved.ok()) {
      reserved = ReserveSpace(opt_.spool_dir, assign.run_id(), opt_.spool_reserve_bytes);
    }
    entry->reserved = reserved.ok();
    if (!reserved.ok()) {
      setup_error = absl::StrCat("cannot keep room for the run's result in --spool-dir: ",
                                 reserved.message());
    }
  } else {
    setup_error = absl::StrCat("no spool for the run: ", writer.status().message());
  }
  runs_[entry->run_id] = entry;
  Log(absl::StrCat("run ", entry->run_id, " (job ", entry->job_id, ") assigned"));
  std::vector<std::string> leased(assign.target_keys().begin(), assign.target_keys().end());
  entry->thread = std::thread([this, entry, text = assign.fio_text(), leased = std::move(leased),
                               setup_error = std::move(setup_error)]() mutable {
    if (!setup_error.empty()) {
      FinishRun(*entry, false, setup_error, "");
      return;
    }
    RunMain(entry, std::move(text), std::move(leased));
  });
}

void AgentClient::HandleCancel(const iofleet::v1::CancelRun& cancel) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = runs_.find(cancel.run_id());
  if (it == runs_.end()) {
    Log(absl::StrCat("CancelRun for unknown run ", cancel.run_id(), " ignored"));
    return;
  }
  if (!OfCurrentStoreLocked(*it->second)) {
    Log(absl::StrCat("WARNING: CancelRun for run ", cancel.run_id(), " ignored: the run belongs "
                     "to store ", it->second->store_id, ", this controller serves store ",
                     store_id_.empty() ? std::string("(none)") : store_id_));
    return;
  }
  it->second->cancel = true;
  cv_.notify_all();  // a run waiting for its targets (AcquireKeys) gives up
  Log(absl::StrCat("run ", cancel.run_id(), " cancel requested"));
}

void AgentClient::HandleResolve(const iofleet::v1::ResolveTargets& req) {
  AgentMessage m;
  AnswerResolveTargets(req, opt_.allow_paths, m.mutable_targets_resolved());
  const auto& tr = m.targets_resolved();
  if (!tr.error().empty()) {
    Log(absl::StrCat("run ", req.run_id(), ": cannot run here: ", tr.error()));
  } else {
    std::string line;
    for (const auto& t : tr.targets()) {
      absl::StrAppend(&line, line.empty() ? "" : "; ", t.path(), " -> ");
      for (int i = 0; i < t.keys_size(); ++i) absl::StrAppend(&line, i ? "," : "", t.keys(i));
    }
    Log(absl::StrCat("run ", req.run_id(), " targets: ", line));
  }
  std::unique_lock<std::mutex> lk(mu_);
  // The Welcome before this question may not have been acted on yet.
  cv_.wait_for(lk, kWelcomeTimeout, [&] { return connected_ || shutdown_; });
  if (!connected_) return;  // the controller asks again on the next stream
  queue_.push_back(Outgoing{std::move(m), std::string()});
  cv_.notify_all();
}

bool AgentClient::AcquireKeys(RunEntry& entry, std::vector<std::string> keys) {
  std::unique_lock<std::mutex> lk(mu_);
  std::string logged;
  for (;;) {
    if (shutdown_ || entry.cancel.load()) return false;
    std::string holder, key;
    for (const std::string& k : keys) {
      auto it = held_keys_.find(k);
      if (it != held_keys_.end() && it->second != entry.run_id) {
        holder = it->second;
        key = k;
        break;
      }
    }
    if (holder.empty()) break;
    if (logged != holder) {
      Log(absl::StrCat("run ", entry.run_id, " waits: target ", key, " is in use by run ", holder,
                       " on this agent"));
      logged = holder;
    }
    cv_.wait_for(lk, std::chrono::seconds(1));
  }
  for (const std::string& k : keys) held_keys_[k] = entry.run_id;
  entry.keys = std::move(keys);
  return true;
}

void AgentClient::RunMain(std::shared_ptr<RunEntry> entry, std::string fio_text,
                          std::vector<std::string> leased_keys) {
  // Text from the network: no include (no reading local files), no ${VAR} from
  // this agent's environment (the controller already substituted).
  static const std::map<std::string, std::string> kNoEnv;
  jobspec::ParseOptions popts;
  popts.env = &kNoEnv;
  popts.allow_include = false;
  auto list = jobspec::ParseJobText(fio_text, absl::StrCat("run ", entry->run_id), popts);
  if (!list.ok()) {
    FinishRun(*entry, false, absl::StrCat("invalid job: ", list.status().message()), "");
    return;
  }
  // What the targets are now (their identity may have changed since the
  // controller leased them), checked against --allow-path on the real paths.
  absl::StatusOr<std::vector<std::string>> keys = ResolveTargetKeys(*list, opt_.allow_paths);
  if (!keys.ok()) {
    FinishRun(*entry, false, std::string(keys.status().message()), "");
    return;
  }
  if (!leased_keys.empty()) {
    std::sort(leased_keys.begin(), leased_keys.end());
    std::vector<std::string> unleased;
    std::set_difference(keys->begin(), keys->end(), leased_keys.begin(), leased_keys.end(),
                        std::back_inserter(unleased));
    if (!unleased.empty()) {
      std::string list_text;
      for (const auto& k : unleased) absl::StrAppend(&list_text, list_text.empty() ? "" : ",", k);
      Log(absl::StrCat("run ", entry->run_id, ": targets changed identity since leased (now also ",
                       list_text, "); this agent keeps its own runs off them"));
    }
  }
  if (!AcquireKeys(*entry, *keys)) {
    FinishRun(*entry, false, "cancelled", "");
    return;
  }
  {
    AgentMessage m;
    m.mutable_run_started()->set_run_id(entry->run_id);
    m.mutable_run_started()->set_unix_ms(NowMs());
    Emit(*entry, std::move(m));
  }
  RunOptions ro;
  ro.cancel = &entry->cancel;
  ro.allow_paths = opt_.allow_paths;
  // fio's logs with relative names go to a directory of the run's own under
  // --log-dir (docs/logs.md); the result lists them (JSON iofleet.logs).
  if (absl::Status s = RunLogDir(opt_.log_dir, *list, entry->run_id, &ro.log_dir); !s.ok()) {
    FinishRun(*entry, false, std::string(s.message()), "");
    return;
  }
  ro.interval_ms = opt_.interval_ms;
  ro.on_interval = [this, e = entry.get()](const stats::IntervalRecord& rec) {
    AgentMessage m;
    IntervalToProto(rec, e->run_id, m.mutable_interval());
    Emit(*e, std::move(m));
  };
  auto result = RunJobs(*list, ro);
  if (!result.ok()) {
    // A cancel that stopped the set-up (file layout, buffers) reports as one.
    std::string why(result.status().message());
    if (entry->cancel.load() && !absl::StartsWith(why, "cancelled")) why = "cancelled: " + why;
    FinishRun(*entry, false, why, "");
    return;
  }
  // With the "iofleet" object (pids, error texts, kb_base, the run's log
  // files): `iofleet result --format=normal` renders the agent's text from it.
  std::string json = stats::FioJson(result->header, result->reported, /*json_plus=*/true,
                                    /*iofleet_fields=*/true);
  if (entry->cancel.load()) {
    FinishRun(*entry, false, "cancelled", std::move(json), result->device_fingerprint);
  } else if (result->error != 0) {
    std::string why = absl::StrCat("I/O error: ", strerror(result->error));
    for (const stats::JobStats& js : result->jobs) {
      if (js.error != 0 && !js.error_text.empty()) {
        absl::StrAppend(&why, " (job \"", js.jobname, "\": ", js.error_text, ")");
        break;
      }
    }
    FinishRun(*entry, false, why, std::move(json), result->device_fingerprint);
  } else {
    FinishRun(*entry, true, "", std::move(json), result->device_fingerprint);
  }
}

void AgentClient::FinishRun(RunEntry& entry, bool ok, const std::string& error,
                            std::string result_json, const std::string& device_fingerprint) {
  AgentMessage m;
  auto* f = m.mutable_run_finished();
  f->set_device_fingerprint(device_fingerprint);
  f->set_run_id(entry.run_id);
  f->set_ok(ok);
  f->set_error(error);
  f->set_result_json(std::move(result_json));
  f->set_unix_ms(NowMs());
  std::string unspooled;
  {
    std::lock_guard<std::mutex> lk(mu_);
    f->set_last_seq_total(entry.records);
    for (uint64_t n : entry.next_seq) f->add_next_seq(n);
    for (const auto& r : entry.unspooled) *f->add_unspooled() = r;
    unspooled = FormatRanges(entry.unspooled);
    for (const std::string& k : entry.keys) {
      auto it = held_keys_.find(k);
      if (it != held_keys_.end() && it->second == entry.run_id) held_keys_.erase(it);
    }
    entry.keys.clear();
    // The room kept for this record is given back just before it is written.
    if (entry.reserved) {
      ReleaseReserve(opt_.spool_dir, entry.run_id);
      entry.reserved = false;
    }
  }
  cv_.notify_all();
  if (!unspooled.empty()) {
    Log(absl::StrCat("run ", entry.run_id, ": interval records not spooled: ", unspooled,
                     " (named in RunFinished)"));
  }
  Log(absl::StrCat("run ", entry.run_id, ok ? " succeeded" : " failed: ", error));
  Emit(entry, std::move(m));
  std::lock_guard<std::mutex> lk(mu_);
  if (entry.spool) {
    if (absl::Status s = entry.spool->Sync(); !s.ok()) Log(s.ToString());
  }
}

void AgentClient::Emit(RunEntry& entry, AgentMessage msg) {
  bool wake_syncer = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    absl::Status spooled = absl::FailedPreconditionError("the run has no spool");
    if (entry.spool) {
      spooled = entry.spool->Append(msg);
      wake_syncer = entry.spool->unsynced() >= opt_.sync_batch;
    }
    const bool finished = msg.has_run_finished();
    if (msg.has_interval()) {
      // Every record produced counts, spooled or not: the controller compares
      // what it stored with next_seq and names the gaps.
      const uint32_t j = msg.interval().job_index();
      const uint64_t seq = msg.interval().seq();
      ++entry.records;
      if (j < 65536) {
        if (entry.next_seq.size() <= j) entry.next_seq.resize(j + 1, 0);
        entry.next_seq[j] = std::max(entry.next_seq[j], seq + 1);
      }
      if (!spooled.ok()) {
        AddSeqRange(&entry.unspooled, j, seq);
        if (!entry.spool_failing) {
          Log(absl::StrCat("run ", entry.run_id, ": cannot spool interval records from job ", j,
                           " seq ", seq, " on (", spooled.message(),
                           "); they reach the controller only while it is connected, and "
                           "RunFinished names each one"));
        }
        entry.spool_failing = true;
      } else if (entry.spool_failing) {
        Log(absl::StrCat("run ", entry.run_id, ": spooling interval records again from job ", j,
                         " seq ", seq));
        entry.spool_failing = false;
      }
    } else if (!spooled.ok() && entry.spool) {
      Log(absl::StrCat("run ", entry.run_id, ": cannot spool its ",
                       finished ? "RunFinished (kept in memory until delivered)" : "RunStarted",
                       ": ", spooled.message()));
    }
    if (finished) {
      entry.finished = true;
      if (!spooled.ok()) entry.unspooled_finish = std::make_unique<AgentMessage>(msg);
    }
    // A run of another store is spooled only: its controller gets it on replay.
    if (connected_ && OfCurrentStoreLocked(entry)) {
      queue_.push_back(Outgoing{std::move(msg), finished ? entry.run_id : std::string()});
      cv_.notify_all();
    }
  }
  if (wake_syncer) sync_cv_.notify_all();
}

void AgentClient::ReplayLocked(const iofleet::v1::Welcome& welcome, uint64_t conn_id) {
  queue_.clear();
  std::vector<std::string> drop;
  std::map<std::string, std::vector<std::string>> foreign;  // store -> runs
  for (auto& [id, e] : runs_) {
    if (!OfCurrentStoreLocked(*e)) {
      // Not this controller's run: never replayed to it, never dropped on its
      // word. The spool keeps it for a controller of its own store.
      foreign[e->store_id].push_back(absl::StrCat(id, e->finished ? "" : " (running)"));
      continue;
    }
    const auto it = welcome.next_seq().find(id);
    if (it == welcome.next_seq().end() && e->finished && e->finish_sent) {
      drop.push_back(id);  // reported, and the controller no longer asks for it
      continue;
    }
    bool finish_queued = false;
    if (e->spool) {
      const uint64_t from = it == welcome.next_seq().end() ? 0 : it->second;
      auto msgs = ReadSpoolFile(e->spool->path());
      if (!msgs.ok()) {
        Log(absl::StrCat("run ", id, ": cannot replay: ", msgs.status().ToString()));
      } else {
        for (AgentMessage& m : *msgs) {
          if (m.has_origin()) continue;  // spool-only
          if (m.has_interval() && m.interval().seq() < from) continue;
          const bool finished = m.has_run_finished();
          finish_queued = finish_queued || finished;
          queue_.push_back(Outgoing{std::move(m), finished ? id : std::string()});
        }
      }
    }
    if (!finish_queued && e->unspooled_finish) {
      queue_.push_back(Outgoing{*e->unspooled_finish, id});  // the spool could not take it
    }
  }
  for (const std::string& id : drop) RemoveSpoolLocked(id);
  for (const auto& [store, ids] : foreign) {
    Log(absl::StrCat(
        "WARNING: the controller at ", opt_.controller, " serves store ",
        welcome.store_id().empty() ? std::string("(none: an older controller)") : welcome.store_id(),
        ", but ", ids.size(), " run(s) of this agent belong to store ", store, ": ",
        absl::StrJoin(ids, ", "), ". They are not sent to this controller and not dropped: running "
        "ones run to completion, and their data stays in ", opt_.spool_dir,
        " until a controller of store ", store, " connects (docs/state-safety.md)"));
  }
}

bool AgentClient::OfCurrentStoreLocked(const RunEntry& e) const {
  return e.store_id.empty() || e.store_id == store_id_;
}

void AgentClient::CollectGarbageLocked(uint64_t conn_id) {
  const uint64_t now = MonoMs();
  std::vector<std::string> drop;
  for (auto& [id, e] : runs_) {
    if (e->finished && e->finish_sent && e->finish_sent_conn == conn_id &&
        now - e->finish_sent_mono_ms > kSpoolKeepMs) {
      drop.push_back(id);
    }
  }
  for (const std::string& id : drop) RemoveSpoolLocked(id);
}

void AgentClient::RemoveSpoolLocked(const std::string& run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return;
  std::error_code ec;
  std::filesystem::remove(opt_.spool_dir + "/" + SpoolFileName(run_id), ec);
  std::filesystem::remove(opt_.spool_dir + "/" + SentMarkerName(run_id), ec);
  ReleaseReserve(opt_.spool_dir, run_id);
  graveyard_.push_back(it->second);
  runs_.erase(it);
}

std::vector<std::string> AgentClient::RunningRunsLocked() const {
  std::vector<std::string> out;
  for (const auto& [id, e] : runs_) {
    if (!e->finished) out.push_back(id);
  }
  return out;
}

void AgentClient::SyncerLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(sync_mu_);
      sync_cv_.wait_for(lk, std::chrono::milliseconds(opt_.sync_interval_ms),
                        [&] { return sync_stop_; });
      if (sync_stop_) return;
    }
    std::vector<std::shared_ptr<RunEntry>> dirty;
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (auto& [id, e] : runs_) {
        if (e->spool && e->spool->unsynced() > 0) dirty.push_back(e);
      }
      // fdatasync under mu_ would stall the runners' interval callbacks; sync each
      // file through its own descriptor outside the lock instead.
      for (auto& e : dirty) e->spool->BeginSync();
    }
    for (auto& e : dirty) {
      if (absl::Status s = e->spool->SyncFd(); !s.ok()) Log(s.ToString());
    }
  }
}

}  // namespace iofleet::agent
