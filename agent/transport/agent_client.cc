#include "agent/transport/agent_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <optional>
#include <random>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/run/job_log.h"
#include "agent/transport/run_log_upload.h"
#include "agent/run/runner.h"
#include "agent/transport/convert.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "iofleet/v1/agent.grpc.pb.h"

namespace iofleet::agent {
namespace {

using iofleet::v1::AgentMessage;
using iofleet::v1::ControllerMessage;
using Stream = grpc::ClientReaderWriter<AgentMessage, ControllerMessage>;

// Wall clock: for timestamps sent to the controller and shown, never for durations.
uint64_t WallMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

// Monotonic clock (steady_clock is CLOCK_MONOTONIC): every duration and deadline.
uint64_t MonoMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
}

std::string RandomInstanceId() {
  std::mt19937_64 rng(RandomSeed());
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

std::string StatusText(const grpc::Status& s) {
  return absl::StrCat("code ", static_cast<int>(s.error_code()), ": ", s.error_message());
}

// The run's log directory, <log_dir>/<run_id>, made when a job of the run
// writes a log or a verify state file (nothing is made otherwise; *out stays "").
absl::Status RunLogDir(const std::string& log_dir, const jobspec::JobList& list,
                       const std::string& run_id, std::string* out) {
  bool any = false;
  for (const jobspec::JobSpec& job : list.jobs) {
    // A verifying job's state file (verify_state_save, on by default) goes
    // there too, not into the agent's working directory.
    const bool state = job.verify != jobspec::VerifyType::kNone &&
                       (job.verify_state_save || job.verify_state_load);
    any = any || LogPlan::For(job).Any() || state;
  }
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

std::shared_ptr<grpc::Channel> MakeChannel(const ServeOptions& opt, const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(opt.backoff_initial_ms));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(opt.backoff_initial_ms));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(opt.backoff_max_ms));
  // Servers refuse pings more often than every 5 minutes by default.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 300000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (opt.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = opt.tls_ca_pem;
    ssl.pem_private_key = opt.tls_key_pem;
    ssl.pem_cert_chain = opt.tls_cert_pem;
    creds = grpc::SslCredentials(ssl);
    if (!opt.tls_server_name.empty()) args.SetSslTargetNameOverride(opt.tls_server_name);
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

}  // namespace

// ---------------------------------------------------------------------------
// One stream: its writer (this thread) and its reader.
class AgentClient::Session {
 public:
  struct CloseItem {
    bool graceful = false;
  };
  using Item = std::variant<act::Send, act::Replay, CloseItem>;

  Session(AgentClient* owner, uint64_t conn, AgentMessage hello, std::string address)
      : owner_(owner), conn_(conn), hello_(std::move(hello)), address_(std::move(address)) {}

  uint64_t conn() const { return conn_; }
  void Start() {
    thread_ = std::thread([this] { Main(); });
  }
  void Push(Item item) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      items_.push_back(std::move(item));
    }
    cv_.notify_all();
  }
  // Ends the stream now: a blocked Write or Read returns.
  void Cancel() {
    std::lock_guard<std::mutex> lk(mu_);
    cancelled_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
    cv_.notify_all();
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Main();
  void ReaderMain(Stream* stream);
  // Writes the run's spool records as the Replay says; false when a Write failed.
  bool Replay(Stream* stream, const act::Replay& r);
  bool Write(Stream* stream, const AgentMessage& msg, bool more) {
    grpc::WriteOptions wo;
    if (more) wo.set_buffer_hint();
    return stream->Write(msg, wo);
  }

  AgentClient* const owner_;
  const uint64_t conn_;
  const AgentMessage hello_;
  const std::string address_;  // the controller dialled
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  bool reader_done_ = false;
  bool cancelled_ = false;
  grpc::ClientContext* ctx_ = nullptr;
};

void AgentClient::Session::Main() {
  const ServeOptions& opt = owner_->opt_;
  auto stub = iofleet::v1::AgentService::NewStub(MakeChannel(opt, address_.empty() ? opt.controller : address_));
  grpc::ClientContext ctx;
  if (!opt.token.empty()) ctx.AddMetadata("authorization", "Bearer " + opt.token);
  ctx.set_wait_for_ready(false);
  {
    std::lock_guard<std::mutex> lk(mu_);
    ctx_ = &ctx;
    if (cancelled_) ctx.TryCancel();
  }
  std::unique_ptr<Stream> stream = stub->Connect(&ctx);
  const bool hello_ok = stream->Write(hello_);
  std::thread reader;
  bool graceful = false;
  if (hello_ok) {
    reader = std::thread([this, s = stream.get()] { ReaderMain(s); });
    bool ok = true;
    bool closing = false;
    while (ok && !closing) {
      std::deque<Item> batch;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return !items_.empty() || reader_done_ || cancelled_; });
        if (reader_done_ || cancelled_) break;
        batch.swap(items_);
      }
      for (size_t i = 0; ok && i < batch.size(); ++i) {
        const bool more = i + 1 < batch.size();
        if (auto* send = std::get_if<act::Send>(&batch[i])) {
          ok = Write(stream.get(), send->msg, more);
          if (ok && !send->finished_run.empty()) {
            owner_->Post(ev::FinishSent{conn_, send->finished_run});
          }
        } else if (auto* replay = std::get_if<act::Replay>(&batch[i])) {
          ok = Replay(stream.get(), *replay);
        } else {
          graceful = std::get<CloseItem>(batch[i]).graceful;
          closing = true;
          break;
        }
      }
    }
  }
  if (graceful && stream->WritesDone()) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::seconds(2), [&] { return reader_done_ || cancelled_; });
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    ctx.TryCancel();
  }
  if (reader.joinable()) reader.join();
  const grpc::Status st = stream->Finish();
  {
    std::lock_guard<std::mutex> lk(mu_);
    ctx_ = nullptr;
  }
  owner_->Post(ev::StreamEnded{conn_, hello_ok, StatusText(st)});
}

void AgentClient::Session::ReaderMain(Stream* stream) {
  ControllerMessage m;
  while (stream->Read(&m)) {
    owner_->Post(ev::FromController{conn_, std::move(m)});
    m.Clear();
  }
  std::lock_guard<std::mutex> lk(mu_);
  reader_done_ = true;
  cv_.notify_all();
}

bool AgentClient::Session::Replay(Stream* stream, const act::Replay& r) {
  const std::string path = owner_->opt_.spool_dir + "/" + SpoolFileName(r.run_id);
  auto msgs = ReadSpoolFile(path);
  if (!msgs.ok()) {
    Log(absl::StrCat("run ", r.run_id, ": cannot replay: ", msgs.status().ToString()));
    return true;
  }
  // Records past `records` were appended after the Welcome: they go live.
  const size_t n = std::min<uint64_t>(r.records, msgs->size());
  for (size_t i = 0; i < n; ++i) {
    const AgentMessage& m = (*msgs)[i];
    if (m.has_origin()) continue;  // spool-only
    if (m.has_interval() && m.interval().seq() < r.from_seq) continue;
    if (!Write(stream, m, i + 1 < n)) return false;
    if (m.has_run_finished()) owner_->Post(ev::FinishSent{conn_, r.run_id});
  }
  return true;
}

// ---------------------------------------------------------------------------
// fdatasync of spool files in batches: every sync_interval_ms, or when a run has
// sync_batch records unsynced (Wake()).
class AgentClient::Syncer {
 public:
  explicit Syncer(uint32_t interval_ms) : interval_ms_(interval_ms) {
    thread_ = std::thread([this] { Main(); });
  }
  ~Syncer() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Add(std::shared_ptr<SpoolWriter> w) {
    std::lock_guard<std::mutex> lk(mu_);
    spools_.push_back(std::move(w));
  }
  void Remove(const SpoolWriter* w) {
    std::lock_guard<std::mutex> lk(mu_);
    std::erase_if(spools_, [w](const auto& s) { return s.get() == w; });
  }
  void Wake() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }

 private:
  void Main() {
    for (;;) {
      std::vector<std::shared_ptr<SpoolWriter>> all;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_for(lk, std::chrono::milliseconds(interval_ms_),
                     [&] { return stop_ || woken_; });
        if (stop_) return;
        woken_ = false;
        all = spools_;
      }
      for (auto& w : all) {
        if (w->ClaimUnsynced() == 0) continue;
        if (absl::Status s = w->SyncFd(); !s.ok()) Log(s.ToString());
      }
    }
  }

  const uint32_t interval_ms_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  std::vector<std::shared_ptr<SpoolWriter>> spools_;
};

// ---------------------------------------------------------------------------
// File and host work the loop must not wait for, in order.
class AgentClient::IoWorker {
 public:
  IoWorker() {
    thread_ = std::thread([this] { Main(); });
  }
  ~IoWorker() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Push(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
  }

 private:
  void Main() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stop_, and everything done
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<std::function<void()>> tasks_;
};

// ---------------------------------------------------------------------------
// One run's thread and its mailbox from the loop.
struct AgentClient::RunHandle {
  std::string run_id;
  std::atomic<bool> cancel{false};
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<bool> keys_granted;
  std::optional<AgentMessage> finish;
};

AgentClient::AgentClient(ServeOptions options)
    : opt_(std::move(options)), instance_id_(RandomInstanceId()) {}

AgentClient::~AgentClient() {
  // Run() joins everything it started; a client destroyed without Run() (Init
  // failed) started nothing.
  for (auto& [id, h] : runs_) {
    h->cancel = true;
    if (h->thread.joinable()) h->thread.join();
  }
  if (session_) {
    session_->Cancel();
    session_->Join();
  }
}

CoreTime AgentClient::Now() const { return CoreTime{MonoMs(), WallMs()}; }

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
  CoreConfig cfg;
  cfg.controller = opt_.controller;
  cfg.controllers = opt_.controllers;
  cfg.spool_dir = opt_.spool_dir;
  cfg.agent_name = opt_.name;
  cfg.labels = opt_.labels;
  cfg.allow_paths = opt_.allow_paths;
  cfg.token = opt_.token;
  cfg.instance_id = instance_id_;
  cfg.backoff_initial_ms = opt_.backoff_initial_ms;
  cfg.backoff_max_ms = opt_.backoff_max_ms;
  cfg.seed = RandomSeed();
  cfg.inventory_check_ms = inventory_check_ms_;
  core_ = std::make_unique<AgentCore>(std::move(cfg));
  {
    iofleet::v1::Inventory inv;
    CollectInventory(&inv);
    std::string hash = InventoryHash(inv);
    core_->SetInventory(std::move(inv), std::move(hash));
  }

  // Re-adopt what an earlier agent process left behind.
  std::vector<Action> logs;
  for (const auto& de : std::filesystem::directory_iterator(opt_.spool_dir, ec)) {
    const std::string path = de.path().string();
    if (de.path().extension() != ".spool") continue;
    auto msgs = ReadSpoolFile(path);
    if (!msgs.ok()) {
      Log(absl::StrCat("spool ", path, ": ", msgs.status().ToString(), " (skipped)"));
      continue;
    }
    AdoptedRun run = ScanSpool(*msgs);
    if (run.run_id.empty() || SpoolFileName(run.run_id) != de.path().filename().string()) {
      Log(absl::StrCat("spool ", path, ": no usable records, removing"));
      std::filesystem::remove(path, ec);
      continue;
    }
    run.finish_sent =
        run.finished &&
        access((opt_.spool_dir + "/" + SentMarkerName(run.run_id)).c_str(), F_OK) == 0;
    if (!run.finished) {
      ReleaseReserve(opt_.spool_dir, run.run_id);  // the room kept for this record
      AgentMessage fin = RestartFinish(run, WallMs());
      auto writer = SpoolWriter::Open(opt_.spool_dir, run.run_id);
      absl::Status s = writer.ok() ? (*writer)->Append(fin) : writer.status();
      if (s.ok()) s = (*writer)->Sync();
      if (s.ok()) {
        ++run.spool_records;
      } else {
        Log(absl::StrCat("run ", run.run_id, ": cannot spool its RunFinished (kept in memory "
                         "until delivered): ", s.ToString()));
        run.unspooled_finish = std::move(fin);
      }
      run.finished = true;
    }
    core_->Adopt(run, &logs);
  }
  for (const Action& a : logs) Log(std::get<act::Log>(a).text);
  // Reserves left behind belong to runs that are over (or were just closed above).
  for (const auto& de : std::filesystem::directory_iterator(opt_.spool_dir, ec)) {
    if (de.path().extension() == ".reserve") std::filesystem::remove(de.path(), ec);
  }
  return absl::OkStatus();
}

void AgentClient::Shutdown() { Post(ev::Shutdown{}); }

void AgentClient::Post(Event event) {
  {
    std::lock_guard<std::mutex> lk(q_mu_);
    queue_.push_back(std::move(event));
  }
  q_cv_.notify_one();
}

void AgentClient::Run() {
  syncer_ = std::make_unique<Syncer>(opt_.sync_interval_ms);
  io_ = std::make_unique<IoWorker>();
  Apply(ev::Start{});
  while (!exit_) {
    std::optional<Event> next;
    {
      std::unique_lock<std::mutex> lk(q_mu_);
      const uint64_t deadline = core_->NextTickMs();
      if (deadline == UINT64_MAX) {
        q_cv_.wait(lk, [&] { return !queue_.empty(); });
      } else {
        q_cv_.wait_until(lk,
                         std::chrono::steady_clock::time_point(std::chrono::milliseconds(deadline)),
                         [&] { return !queue_.empty(); });
      }
      if (!queue_.empty()) {
        next.emplace(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    Apply(next ? std::move(*next) : Event(ev::Tick{}));
  }
  // The core exits once the stream is closed and every run thread has exited.
  if (session_) session_->Join();
  session_.reset();
  for (auto& [id, h] : runs_) {
    if (h->thread.joinable()) h->thread.join();
  }
  runs_.clear();
  io_.reset();  // finishes its queued removals and markers
  syncer_.reset();
}

void AgentClient::Apply(Event event) {
  // The driver's own bookkeeping first: the thread that sent these is done.
  if (auto* e = std::get_if<ev::StreamEnded>(&event)) {
    if (session_ && session_->conn() == e->conn) {
      session_->Join();
      session_.reset();
    }
  } else if (auto* e = std::get_if<ev::RunExited>(&event)) {
    auto it = runs_.find(e->run_id);
    if (it != runs_.end()) {
      if (it->second->thread.joinable()) it->second->thread.join();
      runs_.erase(it);
    }
  }
  actions_.clear();
  core_->Handle(Now(), std::move(event), &actions_);
  for (Action& a : actions_) Execute(std::move(a));
  actions_.clear();
}

void AgentClient::Execute(Action action) {
  std::visit(
      [&](auto&& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, act::Log>) {
          Log(a.text);
        } else if constexpr (std::is_same_v<T, act::Connect>) {
          session_ = std::make_shared<Session>(this, a.conn, std::move(a.hello), std::move(a.address));
          session_->Start();
        } else if constexpr (std::is_same_v<T, act::Send> || std::is_same_v<T, act::Replay>) {
          if (session_ && session_->conn() == a.conn) session_->Push(std::move(a));
        } else if constexpr (std::is_same_v<T, act::CloseStream>) {
          if (session_ && session_->conn() == a.conn) {
            if (a.graceful) {
              session_->Push(Session::CloseItem{true});
            } else {
              session_->Cancel();
            }
          }
        } else if constexpr (std::is_same_v<T, act::StartRun>) {
          auto h = std::make_shared<RunHandle>();
          h->run_id = a.run_id;
          runs_[a.run_id] = h;
          h->thread = std::thread(
              [this, h, start = std::move(a)]() mutable { RunThread(h, std::move(start)); });
        } else if constexpr (std::is_same_v<T, act::CancelRun>) {
          auto it = runs_.find(a.run_id);
          if (it != runs_.end()) it->second->cancel = true;
        } else if constexpr (std::is_same_v<T, act::KeysDecided>) {
          auto it = runs_.find(a.run_id);
          if (it != runs_.end()) {
            std::lock_guard<std::mutex> lk(it->second->mu);
            it->second->keys_granted = a.granted;
            it->second->cv.notify_all();
          }
        } else if constexpr (std::is_same_v<T, act::WriteFinish>) {
          auto it = runs_.find(a.run_id);
          if (it != runs_.end()) {
            std::lock_guard<std::mutex> lk(it->second->mu);
            it->second->finish = std::move(a.msg);
            it->second->cv.notify_all();
          }
        } else if constexpr (std::is_same_v<T, act::MarkSent>) {
          io_->Push([dir = opt_.spool_dir, id = std::move(a.run_id)] {
            const std::string marker = dir + "/" + SentMarkerName(id);
            const int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (fd >= 0) close(fd);
          });
        } else if constexpr (std::is_same_v<T, act::RemoveSpool>) {
          io_->Push([dir = opt_.spool_dir, id = std::move(a.run_id)] {
            std::error_code ec;
            std::filesystem::remove(dir + "/" + SpoolFileName(id), ec);
            std::filesystem::remove(dir + "/" + SentMarkerName(id), ec);
            ReleaseReserve(dir, id);
          });
        } else if constexpr (std::is_same_v<T, act::Resolve>) {
          io_->Push([this, conn = a.conn, req = std::move(a.req)] {
            AgentMessage m;
            AnswerResolveTargets(req, opt_.allow_paths, m.mutable_targets_resolved());
            Post(ev::Resolved{conn, std::move(m)});
          });
        } else if constexpr (std::is_same_v<T, act::CollectInventory>) {
          io_->Push([this] {
            ev::InventoryCollected e;
            CollectInventory(&e.inventory);
            e.hash = InventoryHash(e.inventory);
            Post(std::move(e));
          });
        } else if constexpr (std::is_same_v<T, act::Exit>) {
          exit_ = true;
        }
      },
      std::move(action));
}

namespace {

// The inventory fields history keys series on (controller/history/ingest.h), as
// protobuf JSON; collected at the end of a run, off the I/O threads.
std::string RunInventoryJson() {
  iofleet::v1::Inventory inv;
  CollectInventory(&inv);
  iofleet::v1::Inventory keep;
  keep.set_hostname(inv.hostname());
  keep.set_kernel_release(inv.kernel_release());
  keep.set_kernel_cmdline(inv.kernel_cmdline());
  keep.set_cpu_model(inv.cpu_model());
  *keep.mutable_numa_nodes() = inv.numa_nodes();
  keep.set_agent_version(inv.agent_version());
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(keep, &out, opts).ok()) return "";
  return out;
}

}  // namespace

void AgentClient::RunThread(std::shared_ptr<RunHandle> h, act::StartRun start) {
  const std::string& id = start.run_id;
  std::shared_ptr<SpoolWriter> spool;
  bool reserved = false;
  auto emit = [&](AgentMessage m, bool sync) {
    absl::Status st = spool ? spool->Append(m)
                            : absl::FailedPreconditionError("the run has no spool");
    if (spool && sync && st.ok()) {
      if (absl::Status s = spool->Sync(); !s.ok()) Log(s.ToString());
    } else if (spool && spool->unsynced() >= opt_.sync_batch) {
      syncer_->Wake();
    }
    Post(ev::RunMessage{id, std::move(m), st.ok(), st.ok() ? "" : std::string(st.message())});
  };

  // A run needs its spool and room in it for its result before it starts: a full
  // spool disk must not lose what the run measured without a word.
  ev::RunEnded end{id, false, "", "", ""};
  auto writer = SpoolWriter::Open(opt_.spool_dir, id);
  if (writer.ok()) {
    spool = std::shared_ptr<SpoolWriter>(std::move(*writer));
    syncer_->Add(spool);
    // The run's first record says which store it belongs to, so that no other
    // store's controller can cancel or drop it, even after an agent restart.
    AgentMessage origin;
    origin.mutable_origin()->set_run_id(id);
    origin.mutable_origin()->set_job_id(start.job_id);
    origin.mutable_origin()->set_store_id(start.store_id);
    absl::Status st = spool->Append(origin);
    if (st.ok()) {
      Post(ev::RunMessage{id, std::move(origin), true, ""});
      st = ReserveSpace(opt_.spool_dir, id, opt_.spool_reserve_bytes);
    }
    reserved = st.ok();
    if (!st.ok()) {
      end.error =
          absl::StrCat("cannot keep room for the run's result in --spool-dir: ", st.message());
    }
  } else {
    end.error = absl::StrCat("no spool for the run: ", writer.status().message());
  }

  std::optional<jobspec::JobList> list;
  std::vector<std::string> keys;
  if (end.error.empty()) {
    // Text from the network: no include (no reading local files), no ${VAR} from
    // this agent's environment (the controller already substituted).
    static const std::map<std::string, std::string> kNoEnv;
    jobspec::ParseOptions popts;
    popts.env = &kNoEnv;
    popts.allow_include = false;
    auto parsed = jobspec::ParseJobText(start.fio_text, absl::StrCat("run ", id), popts);
    if (!parsed.ok()) {
      end.error = absl::StrCat("invalid job: ", parsed.status().message());
    } else {
      list = std::move(*parsed);
    }
  }
  if (end.error.empty()) {
    // What the targets are now (their identity may have changed since the
    // controller leased them), checked against --allow-path on the real paths.
    absl::StatusOr<std::vector<std::string>> resolved = ResolveTargetKeys(*list, opt_.allow_paths);
    if (!resolved.ok()) {
      end.error = std::string(resolved.status().message());
    } else {
      keys = std::move(*resolved);
    }
  }
  if (end.error.empty() && !start.leased_keys.empty()) {
    std::vector<std::string> leased = start.leased_keys;
    std::sort(leased.begin(), leased.end());
    std::vector<std::string> unleased;
    std::set_difference(keys.begin(), keys.end(), leased.begin(), leased.end(),
                        std::back_inserter(unleased));
    if (!unleased.empty()) {
      Log(absl::StrCat("run ", id, ": targets changed identity since leased (now also ",
                       absl::StrJoin(unleased, ","), "); this agent keeps its own runs off them"));
    }
  }
  if (end.error.empty()) {
    Post(ev::KeysWanted{id, keys});
    std::unique_lock<std::mutex> lk(h->mu);
    h->cv.wait(lk, [&] { return h->keys_granted.has_value(); });
    if (!*h->keys_granted) end.error = "cancelled";
  }
  // fio's logs with relative names go to a directory of the run's own under
  // --log-dir (docs/logs.md); the result lists them (JSON iofleet.logs).
  std::string log_dir;
  if (end.error.empty()) {
    if (absl::Status s = RunLogDir(opt_.log_dir, *list, id, &log_dir); !s.ok()) {
      end.error = std::string(s.message());
    }
  }
  if (end.error.empty()) {
    AgentMessage m;
    m.mutable_run_started()->set_run_id(id);
    m.mutable_run_started()->set_unix_ms(WallMs());
    emit(std::move(m), false);

    RunOptions ro;
    ro.cancel = &h->cancel;
    ro.allow_paths = opt_.allow_paths;
    ro.log_dir = log_dir;
    ro.interval_ms = opt_.interval_ms;
    ro.on_interval = [&](const stats::IntervalRecord& rec) {
      AgentMessage im;
      IntervalToProto(rec, id, im.mutable_interval());
      emit(std::move(im), false);
    };
    auto result = RunJobs(*list, ro);
    if (!result.ok()) {
      // A cancel that stopped the set-up (file layout, buffers) reports as one.
      end.error = std::string(result.status().message());
      if (h->cancel.load() && !absl::StartsWith(end.error, "cancelled")) {
        end.error = "cancelled: " + end.error;
      }
    } else {
      // The host class and kernel the run ran with, stored with its result: the
      // controller's history keys series on them even after the inventory changes.
      result->header.inventory_json = RunInventoryJson();
      // With the "iofleet" object (pids, error texts, kb_base, the run's log
      // files): `iofleet result --format=normal` renders the agent's text from it.
      end.result_json = stats::FioJson(result->header, result->reported, /*json_plus=*/true,
                                       /*iofleet_fields=*/true);
      end.device_fingerprint = result->device_fingerprint;
      if (h->cancel.load()) {
        end.error = "cancelled";
      } else if (result->error != 0) {
        end.error = absl::StrCat("I/O error: ", strerror(result->error));
        for (const stats::JobStats& js : result->jobs) {
          if (js.error != 0 && !js.error_text.empty()) {
            absl::StrAppend(&end.error, " (job \"", js.jobname, "\": ", js.error_text, ")");
            break;
          }
        }
      } else if (!result->log_error.empty()) {
        // The logs the job asked for are incomplete: the run fails, its result kept.
        end.error = result->log_error;
      } else {
        end.ok = true;
      }
      // The run's log files go to the controller (docs/logs.md), spooled like
      // its records and before its RunFinished; the files stay in --log-dir.
      std::vector<std::string> unread;
      for (v1::RunLogFile& f : ReadRunLogs(id, result->log_files, kUploadMaxFileBytes,
                                           kUploadMaxRunBytes, &unread)) {
        if (f.truncated()) {
          Log(absl::StrCat("run ", id, ": log ", f.path(), " is ", f.size_bytes(),
                           " bytes; the controller gets its first ", f.data().size()));
        }
        AgentMessage lm;
        *lm.mutable_run_log() = std::move(f);
        emit(std::move(lm), false);
      }
      for (const std::string& e : unread) Log(absl::StrCat("run ", id, ": log not uploaded: ", e));
    }
  }

  // The core composes RunFinished (it counted the records); this thread writes it.
  Post(std::move(end));
  AgentMessage fin;
  {
    std::unique_lock<std::mutex> lk(h->mu);
    h->cv.wait(lk, [&] { return h->finish.has_value(); });
    fin = std::move(*h->finish);
  }
  // The room kept for this record is given back just before it is written.
  if (reserved) ReleaseReserve(opt_.spool_dir, id);
  emit(std::move(fin), /*sync=*/true);
  if (spool) syncer_->Remove(spool.get());
  Post(ev::RunExited{id});
}

}  // namespace iofleet::agent
