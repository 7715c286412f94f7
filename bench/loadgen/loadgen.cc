// iofleet-loadgen: simulates N agents against a real iofleet-controller.
//
// Each simulated agent opens an AgentService.Connect stream (callback API, one
// reactor per agent, several agents per TCP connection), says Hello with a label
// unique to this session, and waits. One job is then submitted over REST with a
// selector on that label, so the controller places one run on every simulated
// agent. On AssignRun an agent sends RunStarted, then every second one
// IntervalRecord per simulated job (clone) with a realistic sparse clat histogram
// (20-60 nonzero buckets), and RunFinished after --duration-s. At the end the
// records the controller stored (SQLite, read-only) are compared with those sent,
// and the controller's CPU time and RSS are read from /proc/PID. Agents
// heartbeat at the interval the controller's Welcome tells them (it grows with
// the fleet), from Welcome until the load generator ends, as real agents do,
// and RunFinished carries next_seq as the agent's does. While runs stream, a
// prober times REST calls: GET /api/v1/jobs and POST /api/v1/jobs (a one-run
// job for a host that never registers, cancelled at the end), --probe-per-s of
// each.
//
//   iofleet-loadgen --agents=1000 [--jobs-per-agent=1] [--duration-s=30]
//                   [--group-size=250] [--stagger-ms=1000] [--probe-per-s=5]
//                   [--agents-per-conn=50] [--controller-bin=build/bin/iofleet-controller]
//                   [--data-dir=DIR]          (spawns a controller; default)
//   iofleet-loadgen --grpc=H:P --http=H:P --pid=PID --db=DIR/iofleet.db ...
//                                             (uses a running controller)
//   iofleet-loadgen --store=postgresql://... ...  (spawns a controller on that
//                                             PostgreSQL store, --init; counts there)
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "iofleet/v1/agent.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "sqlite3.h"
#ifdef IOFLEET_WITH_POSTGRESQL
#include "libpq-fe.h"
#endif

namespace {

using iofleet::v1::AgentMessage;
using iofleet::v1::ControllerMessage;
using Clock = std::chrono::steady_clock;

struct Options {
  int agents = 100;
  int jobs_per_agent = 1;
  int duration_s = 30;
  int agents_per_conn = 50;
  int settle_s = 60;
  int connect_per_s = 2000;
  int group_size = 250;     // agents per submitted job
  int stagger_ms = 1000;    // between job submissions
  int probe_per_s = 5;      // REST latency probes per second (each of GET and POST)
  std::string controller_bin;
  std::string data_dir;
  std::string store;  // postgresql:// URI: the controller's --store, counted there
  std::string grpc, http, db;
  int pid = 0;
};

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// fio's bucket index for a value in ns (common/stats/histogram.h layout).
uint32_t PlatValToIdx(uint64_t val) {
  if (val < 128) return static_cast<uint32_t>(val);
  const uint32_t msb = 63u - static_cast<uint32_t>(__builtin_clzll(val));
  const uint32_t e = msb - 6;
  const uint32_t idx = (e + 1) * 64 + static_cast<uint32_t>((val >> e) & 63);
  return idx < 1856 ? idx : 1855;
}

// A pool of realistic sparse histograms: log-normal latencies around 80-400 us,
// 20-60 distinct buckets, ~2000-60000 I/Os per second.
struct HistTemplate {
  std::vector<uint32_t> bucket;
  std::vector<uint64_t> count;
  uint64_t ios = 0;
};

std::vector<HistTemplate> MakeTemplates(int n) {
  std::mt19937_64 rng(42);
  std::vector<HistTemplate> out;
  for (int t = 0; t < n; ++t) {
    std::uniform_real_distribution<double> med(80e3, 400e3);
    std::uniform_int_distribution<int> want_buckets(20, 60);
    const double median = med(rng);
    const int target = want_buckets(rng);
    std::map<uint32_t, uint64_t> h;
    double sigma = 0.15;
    // Widen the distribution until it covers the wanted number of buckets.
    for (int tries = 0; tries < 40; ++tries) {
      h.clear();
      std::lognormal_distribution<double> lat(std::log(median), sigma);
      for (int i = 0; i < 4000; ++i) h[PlatValToIdx(static_cast<uint64_t>(lat(rng)))]++;
      if (static_cast<int>(h.size()) >= target) break;
      sigma *= 1.15;
    }
    while (static_cast<int>(h.size()) > 60) h.erase(std::prev(h.end()));
    std::uniform_int_distribution<int> scale(1, 15);
    const int k = scale(rng);
    HistTemplate ht;
    for (const auto& [b, c] : h) {
      ht.bucket.push_back(b);
      ht.count.push_back(c * static_cast<uint64_t>(k));
      ht.ios += c * static_cast<uint64_t>(k);
    }
    out.push_back(std::move(ht));
  }
  return out;
}

struct Stats {
  std::atomic<int> welcomed{0};
  std::atomic<int> assigned{0};
  std::atomic<int64_t> last_assign_ns{0};  // steady clock, when the last AssignRun arrived
  std::atomic<uint32_t> heartbeat_ms{0};   // interval the last Welcome told
  std::atomic<int> finished_sent{0};
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  std::atomic<uint64_t> records_sent{0};     // handed to the stream
  std::atomic<uint64_t> records_written{0};  // write completed OK
  std::atomic<uint64_t> write_failures{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> heartbeats_sent{0};
  std::atomic<int> ended_by_controller{0};  // streams the controller ended before the loadgen did
};

// A fio JSON result for a run of `fio_text` that streamed `seconds` records:
// "global options" and one entry per job (numjobs clones) with its "job
// options" echoed as written, as the agent (and fio) echo them, so the
// controller's arm audit checks a real echo and the run can succeed. Options
// are "key=value" lines; a bare flag echoes with an empty value.
std::string FakeResult(const std::string& fio_text, uint64_t seconds) {
  nlohmann::json globals = nlohmann::json::object();
  std::vector<std::pair<std::string, nlohmann::json>> sections;  // name, options
  nlohmann::json* cur = nullptr;
  std::istringstream in(fio_text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#' || line[b] == ';') continue;
    line = line.substr(b);
    if (line.front() == '[' && line.back() == ']') {
      const std::string name = line.substr(1, line.size() - 2);
      if (name == "global") {
        cur = &globals;
      } else {
        sections.emplace_back(name, nlohmann::json::object());
        cur = &sections.back().second;
      }
      continue;
    }
    if (cur == nullptr) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      (*cur)[line] = "";
    } else {
      (*cur)[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  nlohmann::json jobs = nlohmann::json::array();
  for (auto& [name, opts] : sections) {
    int clones = 1;
    const nlohmann::json& nj = opts.contains("numjobs") ? opts["numjobs"]
                               : globals.contains("numjobs") ? globals["numjobs"]
                                                             : nlohmann::json();
    if (nj.is_string()) clones = std::max(1, std::atoi(nj.get<std::string>().c_str()));
    for (int c = 0; c < clones; ++c) {
      jobs.push_back({{"jobname", name},
                      {"groupid", 0},
                      {"error", 0},
                      {"job options", opts},
                      {"job_runtime", seconds * 1000},
                      {"read", {{"io_bytes", 0}, {"io_kbytes", 0}, {"bw", 0}, {"iops", 0.0}}}});
    }
  }
  nlohmann::json root = {{"fio version", "iofleet-loadgen"},
                         {"global options", globals},
                         {"jobs", jobs}};
  return root.dump();
}

class SimAgent : public grpc::ClientBidiReactor<AgentMessage, ControllerMessage> {
 public:
  SimAgent(int index, const std::string& session, Stats* stats, const Options* opt,
           const std::vector<HistTemplate>* templates)
      : index_(index), session_(session), stats_(stats), opt_(opt), templates_(templates) {
    name_ = "lg-" + session + "-" + std::to_string(index);
  }

  void Start(iofleet::v1::AgentService::Stub* stub) {
    stub->async()->Connect(&ctx_, this);
    AgentMessage hello;
    auto* h = hello.mutable_hello();
    h->set_agent_name(name_);
    h->set_protocol_version(1);
    h->set_min_protocol_version(1);
    auto* inv = h->mutable_inventory();
    inv->set_hostname(name_);
    inv->set_kernel_release("6.1.0-loadgen");
    inv->set_cpu_model("simulated");
    inv->set_cpu_count(16);
    inv->add_engines("null");
    inv->set_agent_version("loadgen");
    h->set_inventory_hash("loadgen-inventory-1");
    (*h->mutable_labels())["loadgen"] = session_;
    (*h->mutable_labels())["lg_group"] = std::to_string(index_ / opt_->group_size);
    Send(std::move(hello));
    AddHold();
    StartRead(&in_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (in_.has_welcome()) {
      const uint32_t hb = in_.welcome().heartbeat_interval_ms();
      hb_ticks_.store(std::max<uint32_t>(1, (hb + 999) / 1000));
      stats_->heartbeat_ms = hb;
      stats_->welcomed++;
    } else if (in_.has_assign()) {
      AgentMessage m;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (run_id_.empty()) {
          run_id_ = in_.assign().run_id();
          fio_text_ = in_.assign().fio_text();
          run_start_ = Clock::now();
          stats_->assigned++;
          const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 run_start_.time_since_epoch())
                                 .count();
          int64_t prev = stats_->last_assign_ns.load();
          while (prev < ns && !stats_->last_assign_ns.compare_exchange_weak(prev, ns)) {
          }
          m.mutable_run_started()->set_run_id(run_id_);
          m.mutable_run_started()->set_unix_ms(NowMs());
        }
      }
      if (m.has_run_started()) Send(std::move(m));
    }
    StartRead(&in_);
  }

  // gRPC may run reactions inline (e.g. on a failed call), so no lock is held
  // across StartWrite()/TryCancel().
  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!ok) {
        stats_->write_failures++;
        broken_ = true;
        writing_ = false;
        queue_.clear();
        return;
      }
      if (cur_.has_interval()) stats_->records_written++;
      if (queue_.empty()) {
        writing_ = false;
        return;
      }
      cur_ = std::move(queue_.front());
      queue_.pop_front();
    }
    StartWrite(&cur_);
  }

  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!cancelled_by_us_) stats_->ended_by_controller++;
    if (!s.ok() && !cancelled_by_us_) {
      if (stats_->failed++ < 5) {
        fprintf(stderr, "agent %s: stream ended: %s\n", name_.c_str(), s.error_message().c_str());
      }
    }
    done_ = true;
    stats_->done++;
  }

  // Called by the ticker about once per second.
  void Tick(uint64_t tick) {
    std::vector<AgentMessage> out;
    {
      std::lock_guard<std::mutex> l(mu_);
      TickLocked(tick, &out);
    }
    for (AgentMessage& m : out) Send(std::move(m));
  }

  // A simulated agent behaves as a real one: it heartbeats from Welcome until
  // the load generator ends, before, during and after its run (listing the
  // run while it runs), so an idle agent is never closed as silent.
  void TickLocked(uint64_t tick, std::vector<AgentMessage>* out) {
    if (broken_ || done_) return;
    if ((tick + static_cast<uint64_t>(index_)) % hb_ticks_.load() == 0) {
      AgentMessage hb;
      hb.mutable_heartbeat()->set_unix_ms(NowMs());
      if (!run_id_.empty() && !finished_) hb.mutable_heartbeat()->add_running_runs(run_id_);
      out->push_back(std::move(hb));
      stats_->heartbeats_sent++;
    }
    if (run_id_.empty() || finished_) return;
    const uint64_t now = NowMs();
    if (seq_ >= static_cast<uint64_t>(opt_->duration_s)) {
      AgentMessage f;
      auto* rf = f.mutable_run_finished();
      rf->set_run_id(run_id_);
      rf->set_ok(true);
      rf->set_result_json(FakeResult(fio_text_, seq_));
      rf->set_last_seq_total(seq_ * static_cast<uint64_t>(opt_->jobs_per_agent));
      // As a real agent: the records made per job (seqs 0..next_seq-1), so the
      // controller checks counts instead of waiting for the store and reading
      // every seq (without it each RunFinished cost a Store::Flush()).
      for (int j = 0; j < opt_->jobs_per_agent; ++j) rf->add_next_seq(seq_);
      rf->set_unix_ms(now);
      out->push_back(std::move(f));
      finished_ = true;
      stats_->finished_sent++;
      return;
    }
    for (int j = 0; j < opt_->jobs_per_agent; ++j) {
      const HistTemplate& t = (*templates_)[(index_ * 7 + j * 13 + seq_) % templates_->size()];
      AgentMessage m;
      auto* r = m.mutable_interval();
      r->set_run_id(run_id_);
      r->set_job_index(static_cast<uint32_t>(j));
      r->set_job_name("lg");
      r->set_seq(seq_);
      r->set_t_start_ms(now - 1000);
      r->set_t_end_ms(now);
      auto* d = r->mutable_read();
      d->set_ios(t.ios);
      d->set_bytes(t.ios * 4096);
      d->mutable_clat_bucket()->Add(t.bucket.begin(), t.bucket.end());
      d->mutable_clat_count()->Add(t.count.begin(), t.count.end());
      stats_->bytes_sent += m.ByteSizeLong();
      out->push_back(std::move(m));
      stats_->records_sent++;
    }
    ++seq_;
  }

  void Finish() {
    {
      std::lock_guard<std::mutex> l(mu_);
      cancelled_by_us_ = true;
    }
    ctx_.TryCancel();
    RemoveHold();
  }

  bool done() {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }
  bool idle() {
    std::lock_guard<std::mutex> l(mu_);
    return !writing_ || broken_ || done_;
  }

 private:
  void Send(AgentMessage m) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (broken_ || done_) return;
      if (writing_) {
        queue_.push_back(std::move(m));
        return;
      }
      writing_ = true;
      cur_ = std::move(m);
    }
    StartWrite(&cur_);
  }

  const int index_;
  const std::string session_;
  Stats* stats_;
  const Options* opt_;
  const std::vector<HistTemplate>* templates_;
  std::string name_;
  grpc::ClientContext ctx_;
  ControllerMessage in_;
  std::mutex mu_;
  AgentMessage cur_;
  std::deque<AgentMessage> queue_;
  bool writing_ = false;
  bool broken_ = false;
  bool done_ = false;
  bool finished_ = false;
  bool cancelled_by_us_ = false;
  std::string run_id_;
  std::string fio_text_;  // the run's job file, as AssignRun gave it
  Clock::time_point run_start_;
  uint64_t seq_ = 0;
  std::atomic<uint32_t> hb_ticks_{5};  // heartbeat every this many 1 s ticks
};

// Latencies of one kind of REST call, ms.
struct Latencies {
  std::mutex mu;
  std::vector<double> ms;
  int errors = 0;
  void Add(double v, bool ok) {
    std::lock_guard<std::mutex> l(mu);
    if (ok) {
      ms.push_back(v);
    } else {
      ++errors;
    }
  }
  nlohmann::json Report() {
    std::lock_guard<std::mutex> l(mu);
    std::vector<double> v = ms;
    std::sort(v.begin(), v.end());
    auto q = [&](double p) {
      if (v.empty()) return -1.0;
      const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
      return v[i];
    };
    return {{"n", v.size()},   {"errors", errors}, {"p50_ms", q(0.50)},
            {"p99_ms", q(0.99)}, {"max_ms", v.empty() ? -1.0 : v.back()}};
  }
};

struct ProcSample {
  double cpu_s = 0;
  uint64_t rss_kb = 0;
  uint64_t hwm_kb = 0;
};

ProcSample ReadProc(int pid) {
  ProcSample s;
  std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (std::getline(st, line)) {
    const size_t p = line.rfind(')');
    if (p != std::string::npos) {
      std::istringstream in(line.substr(p + 2));
      std::string f;
      std::vector<std::string> fields;
      while (in >> f) fields.push_back(f);
      // fields[0] is field 3 (state); utime = field 14, stime = field 15.
      if (fields.size() > 13) {
        const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
        s.cpu_s = (std::stod(fields[11]) + std::stod(fields[12])) / tck;
      }
    }
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::stoull(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kb = std::stoull(line.substr(6));
  }
  return s;
}

// Spawns the controller with stdout on a pipe; fills grpc/http from its lines.
int SpawnController(Options& opt) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const std::string a1 = opt.store.empty() ? "--data-dir=" + opt.data_dir : "--store=" + opt.store;
  // A fresh store in the load generator's data dir (--init).
  std::vector<std::string> args = {opt.controller_bin, a1, "--init", "--grpc-listen=127.0.0.1:0",
                                   "--http-listen=127.0.0.1:0"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // The controller dies with the load generator, whatever ends it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(opt.controller_bin.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  FILE* f = fdopen(fds[0], "r");
  char buf[512];
  while ((opt.grpc.empty() || opt.http.empty()) && fgets(buf, sizeof(buf), f) != nullptr) {
    std::string l = buf;
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    if (l.rfind("grpc listening on ", 0) == 0) opt.grpc = l.substr(18);
    if (l.rfind("http listening on ", 0) == 0) opt.http = l.substr(18);
  }
  // Keep draining so the controller never blocks on a full pipe.
  std::thread([f] {
    char b[512];
    while (fgets(b, sizeof(b), f) != nullptr) {
    }
    fclose(f);
  }).detach();
  return pid;
}

#ifdef IOFLEET_WITH_POSTGRESQL
// The same counts from a PostgreSQL store.
int64_t CountStoredPg(const std::string& uri, const std::string& host_like, int64_t* results) {
  PGconn* c = PQconnectdb(uri.c_str());
  int64_t n = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    const char* params[] = {host_like.c_str()};
    for (int q = 0; q < 2; ++q) {
      if (q == 1 && results == nullptr) break;
      PGresult* r = PQexecParams(c,
                                 q == 0 ? "SELECT count(*) FROM intervals WHERE run_id IN "
                                          "(SELECT id FROM runs WHERE host LIKE $1)"
                                        : "SELECT count(*) FROM results WHERE run_id IN "
                                          "(SELECT id FROM runs WHERE host LIKE $1)",
                                 1, nullptr, params, nullptr, nullptr, 0);
      if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        (q == 0 ? n : *results) = std::stoll(PQgetvalue(r, 0, 0));
      }
      PQclear(r);
    }
  }
  PQfinish(c);
  return n;
}
#endif

// Counts what the controller stored for this session's runs (hosts lg-<session>-*).
// `run_states` (SQLite only): the session's runs by state.
int64_t CountStored(const std::string& db_path, const std::string& host_like, int64_t* results,
                    std::map<std::string, int64_t>* run_states = nullptr) {
#ifdef IOFLEET_WITH_POSTGRESQL
  if (db_path.rfind("postgres", 0) == 0) return CountStoredPg(db_path, host_like, results);
#endif
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    if (db) sqlite3_close(db);
    return -1;
  }
  sqlite3_busy_timeout(db, 5000);
  int64_t n = -1;
  sqlite3_stmt* st = nullptr;
  const char* q =
      "SELECT count(*) FROM intervals WHERE run_id IN (SELECT id FROM runs WHERE host LIKE ?1)";
  if (sqlite3_prepare_v2(db, q, -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, host_like.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  st = nullptr;
  const char* q2 =
      "SELECT count(*) FROM results WHERE run_id IN (SELECT id FROM runs WHERE host LIKE ?1)";
  if (results && sqlite3_prepare_v2(db, q2, -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, host_like.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) *results = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  st = nullptr;
  const char* q3 = "SELECT state, count(*) FROM runs WHERE host LIKE ?1 GROUP BY state";
  if (run_states && sqlite3_prepare_v2(db, q3, -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, host_like.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
      (*run_states)[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] =
          sqlite3_column_int64(st, 1);
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

bool Flag(const std::string& a, const char* name, std::string* v) {
  const std::string p = std::string("--") + name + "=";
  if (a.rfind(p, 0) != 0) return false;
  *v = a.substr(p.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  {
    std::string self = argv[0];
    const size_t slash = self.rfind('/');
    opt.controller_bin = (slash == std::string::npos ? "." : self.substr(0, slash)) +
                         "/iofleet-controller";
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    try {
      if (Flag(a, "agents", &v)) opt.agents = std::stoi(v);
      else if (Flag(a, "jobs-per-agent", &v)) opt.jobs_per_agent = std::stoi(v);
      else if (Flag(a, "duration-s", &v)) opt.duration_s = std::stoi(v);
      else if (Flag(a, "agents-per-conn", &v)) opt.agents_per_conn = std::stoi(v);
      else if (Flag(a, "settle-s", &v)) opt.settle_s = std::stoi(v);
      else if (Flag(a, "connect-per-s", &v)) opt.connect_per_s = std::stoi(v);
      else if (Flag(a, "group-size", &v)) opt.group_size = std::stoi(v);
      else if (Flag(a, "stagger-ms", &v)) opt.stagger_ms = std::stoi(v);
      else if (Flag(a, "probe-per-s", &v)) opt.probe_per_s = std::stoi(v);
      else if (Flag(a, "controller-bin", &v)) opt.controller_bin = v;
      else if (Flag(a, "data-dir", &v)) opt.data_dir = v;
      else if (Flag(a, "store", &v)) opt.store = v;
      else if (Flag(a, "grpc", &v)) opt.grpc = v;
      else if (Flag(a, "http", &v)) opt.http = v;
      else if (Flag(a, "db", &v)) opt.db = v;
      else if (Flag(a, "pid", &v)) opt.pid = std::stoi(v);
      else {
        fprintf(stderr, "iofleet-loadgen: unknown flag %s\n", a.c_str());
        return 2;
      }
    } catch (...) {
      fprintf(stderr, "iofleet-loadgen: bad value in %s\n", a.c_str());
      return 2;
    }
  }
  if (opt.agents < 1 || opt.jobs_per_agent < 1 || opt.duration_s < 1 || opt.agents_per_conn < 1 ||
      opt.group_size < 1 || opt.stagger_ms < 0 || opt.probe_per_s < 0) {
    fprintf(stderr, "iofleet-loadgen: --agents, --jobs-per-agent, --duration-s and "
                    "--agents-per-conn must be >= 1\n");
    return 2;
  }
#ifndef IOFLEET_WITH_POSTGRESQL
  if (!opt.store.empty()) {
    fprintf(stderr, "iofleet-loadgen: --store: built without libpq (no PostgreSQL support)\n");
    return 2;
  }
#endif
  signal(SIGPIPE, SIG_IGN);
  pid_t spawned = 0;
  if (opt.grpc.empty()) {
    if (opt.data_dir.empty() && opt.store.empty()) {
      char tmpl[] = "/tmp/iofleet-loadgen.XXXXXX";
      if (mkdtemp(tmpl) == nullptr) return 1;
      opt.data_dir = tmpl;
    }
    spawned = SpawnController(opt);
    if (spawned <= 0 || opt.grpc.empty()) {
      fprintf(stderr, "iofleet-loadgen: could not start %s\n", opt.controller_bin.c_str());
      return 1;
    }
    opt.pid = spawned;
    opt.db = opt.store.empty() ? opt.data_dir + "/iofleet.db" : opt.store;
  }
  fprintf(stderr, "controller pid %d grpc %s http %s db %s\n", opt.pid, opt.grpc.c_str(),
          opt.http.c_str(), opt.db.c_str());

  const std::string session = std::to_string(NowMs() % 100000000);
  const auto templates = MakeTemplates(256);
  Stats stats;
  const int nconn = (opt.agents + opt.agents_per_conn - 1) / opt.agents_per_conn;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<iofleet::v1::AgentService::Stub>> stubs;
  for (int c = 0; c < nconn; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("iofleet.loadgen.conn", c);  // distinct args -> distinct connection
    channels.push_back(grpc::CreateCustomChannel(opt.grpc, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(iofleet::v1::AgentService::NewStub(channels.back()));
  }
  std::vector<std::unique_ptr<SimAgent>> agents;
  agents.reserve(static_cast<size_t>(opt.agents));
  // Ticker: agents are spread over the second in 100 slots of 10 ms. It runs
  // from the first connection on, so agents welcomed early heartbeat while the
  // rest connect (a long connect phase must not make them look silent).
  std::atomic<size_t> started{0};
  std::atomic<bool> stop{false};
  std::thread ticker([&] {
    uint64_t tick = 0;
    auto next = Clock::now();
    while (!stop.load()) {
      for (int slot = 0; slot < 100 && !stop.load(); ++slot) {
        const size_t n = started.load(std::memory_order_acquire);
        for (size_t i = static_cast<size_t>(slot); i < n; i += 100) agents[i]->Tick(tick);
        next += std::chrono::milliseconds(10);
        std::this_thread::sleep_until(next);
      }
      ++tick;
    }
  });
  const auto t_connect = Clock::now();
  for (int i = 0; i < opt.agents; ++i) {
    agents.push_back(std::make_unique<SimAgent>(i, session, &stats, &opt, &templates));
    agents.back()->Start(stubs[static_cast<size_t>(i / opt.agents_per_conn)].get());
    started.store(agents.size(), std::memory_order_release);
    if ((i + 1) % 100 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100000 / opt.connect_per_s));
    }
  }
  while (stats.welcomed.load() < opt.agents &&
         Clock::now() - t_connect < std::chrono::seconds(120) && stats.failed.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double connect_s =
      std::chrono::duration<double>(Clock::now() - t_connect).count();
  fprintf(stderr, "%d/%d agents welcomed in %.1f s\n", stats.welcomed.load(), opt.agents,
          connect_s);

  // One job per group of agents (selector on the group label), submitted
  // --stagger-ms apart, so runs start spread out as in a live fleet.
  const int groups = (opt.agents + opt.group_size - 1) / opt.group_size;
  std::atomic<int> submitted{0}, submit_errors{0};
  std::thread submitter([&] {
    httplib::Client http("http://" + opt.http);
    http.set_read_timeout(300, 0);
    for (int g = 0; g < groups; ++g) {
      nlohmann::json body = {
          {"name", "loadgen-" + session + "-" + std::to_string(g)},
          {"fio", "[lg]\nioengine=null\nsize=1m\ntime_based=1\nruntime=" +
                      std::to_string(opt.duration_s) + "\nnumjobs=" +
                      std::to_string(opt.jobs_per_agent) + "\n"},
          {"selector", {{"loadgen", session}, {"lg_group", std::to_string(g)}}}};
      auto res = http.Post("/api/v1/jobs", body.dump(), "application/json");
      if (!res || res->status != 201) {
        if (submit_errors++ < 3) {
          fprintf(stderr, "submit failed: %s\n",
                  res ? res->body.c_str() : httplib::to_string(res.error()).c_str());
        }
      } else {
        submitted++;
      }
      if (g + 1 < groups) std::this_thread::sleep_for(std::chrono::milliseconds(opt.stagger_ms));
    }
  });
  // REST latency while the fleet streams: GET /jobs and POST /jobs.
  Latencies get_lat, post_lat;
  std::vector<std::string> probe_jobs;
  std::atomic<bool> probe_stop{false};
  std::thread prober([&] {
    if (opt.probe_per_s == 0) return;
    httplib::Client http("http://" + opt.http);
    http.set_read_timeout(60, 0);
    const auto period = std::chrono::microseconds(1000000 / opt.probe_per_s);
    auto next = Clock::now();
    int i = 0;
    while (!probe_stop.load()) {
      const auto t0 = Clock::now();
      auto g = http.Get("/api/v1/jobs");
      get_lat.Add(std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                  g && g->status == 200);
      nlohmann::json body = {
          {"name", "loadgen-probe-" + session + "-" + std::to_string(i++)},
          {"fio", "[probe]\nioengine=null\nsize=1m\n"},
          {"hosts", {"lg-probe-" + session}},
          {"wait_for_hosts", true}};
      const auto t1 = Clock::now();
      auto p = http.Post("/api/v1/jobs", body.dump(), "application/json");
      const bool ok = p && p->status == 201;
      post_lat.Add(std::chrono::duration<double, std::milli>(Clock::now() - t1).count(), ok);
      if (ok) {
        nlohmann::json j = nlohmann::json::parse(p->body, nullptr, false);
        if (j.is_object() && j.contains("id")) probe_jobs.push_back(j["id"].get<std::string>());
      }
      next += period;
      std::this_thread::sleep_until(next);
    }
  });
  const std::string host_like = "lg-" + session + "-%";
  const auto t_submit = Clock::now();
  const ProcSample p0 = ReadProc(opt.pid);
  const ProcSample self0 = ReadProc(getpid());

  // Wait for assignments, the run time and the RunFinished messages.
  const auto deadline = t_submit + std::chrono::seconds(
                                        opt.duration_s + 120 + groups * opt.stagger_ms / 1000);
  double all_assigned_s = -1;
  while (Clock::now() < deadline) {
    if (all_assigned_s < 0 && stats.assigned.load() >= opt.agents) {
      all_assigned_s = std::chrono::duration<double>(Clock::now() - t_submit).count();
    }
    if (stats.assigned.load() >= opt.agents && stats.finished_sent.load() >= opt.agents) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  submitter.join();
  probe_stop = true;
  prober.join();
  const auto t_sent = Clock::now();
  const ProcSample p1 = ReadProc(opt.pid);
  const ProcSample self1 = ReadProc(getpid());
  // What the controller had stored when the last record was sent: the backlog
  // shows whether it keeps up or only catches up afterwards.
  const int64_t stored_at_send_end = CountStored(opt.db, host_like, nullptr);
  // Let queued writes drain.
  for (int i = 0; i < 300; ++i) {
    bool idle = true;
    for (auto& a : agents) idle = idle && a->idle();
    if (idle) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const uint64_t sent = stats.records_written.load();
  int64_t stored = -1, results = 0;
  const auto settle_deadline = Clock::now() + std::chrono::seconds(opt.settle_s);
  int64_t last = -2;
  auto last_change = Clock::now();
  while (Clock::now() < settle_deadline) {
    stored = CountStored(opt.db, host_like, &results);
    if (stored >= 0 && static_cast<uint64_t>(stored) >= sent &&
        results >= stats.finished_sent.load()) {
      break;
    }
    if (stored != last) {
      last = stored;
      last_change = Clock::now();
    } else if (Clock::now() - last_change > std::chrono::seconds(15)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const double settle_s = std::chrono::duration<double>(Clock::now() - t_sent).count();
  std::map<std::string, int64_t> run_states;
  (void)CountStored(opt.db, host_like, nullptr, &run_states);
  const ProcSample p2 = ReadProc(opt.pid);
  stop = true;
  ticker.join();
  for (auto& a : agents) a->Finish();
  bool all_done = false;
  for (int i = 0; i < 300 && !all_done; ++i) {
    all_done = true;
    for (auto& a : agents) all_done = all_done && a->done();
    if (!all_done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  {
    // The probe jobs wait for a host that never comes: cancel them.
    httplib::Client http("http://" + opt.http);
    for (const std::string& id : probe_jobs) http.Post("/api/v1/jobs/" + id + "/cancel");
  }
  const double send_s = std::chrono::duration<double>(t_sent - t_submit).count();
  const int64_t last_assign_ns = stats.last_assign_ns.load();
  const double last_assign_s =
      last_assign_ns == 0
          ? -1
          : (static_cast<double>(last_assign_ns) -
             static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     t_submit.time_since_epoch())
                                     .count())) /
                1e9;
  const double cpu_pct = send_s > 0 ? 100.0 * (p1.cpu_s - p0.cpu_s) / send_s : 0;
  const int64_t lost = stored < 0 ? -1 : static_cast<int64_t>(sent) - stored;
  nlohmann::json report = {
      {"agents", opt.agents},
      {"agents_per_conn", opt.agents_per_conn},
      {"connections", nconn},
      {"jobs_per_agent", opt.jobs_per_agent},
      {"duration_s", opt.duration_s},
      {"welcomed", stats.welcomed.load()},
      {"assigned", stats.assigned.load()},
      {"connect_s", connect_s},
      {"records_sent", sent},
      {"records_queued", stats.records_sent.load()},
      {"jobs_submitted", submitted.load()},
      {"submit_errors", submit_errors.load()},
      {"all_assigned_s", all_assigned_s},
      {"last_assign_s", last_assign_s},
      {"heartbeat_interval_ms", stats.heartbeat_ms.load()},
      {"rest_get_jobs", get_lat.Report()},
      {"rest_post_jobs", post_lat.Report()},
      {"records_stored", stored},
      {"records_lost", lost},
      // Records made but not stored, whether or not their write completed: a
      // stream the controller closed fails the writes still queued in it, and
      // some of those were read before it closed (then records_lost < 0).
      {"records_not_stored",
       stored < 0 ? -1 : static_cast<int64_t>(stats.records_sent.load()) - stored},
      {"records_stored_at_send_end", stored_at_send_end},
      {"results_stored", results},
      {"runs_by_state", run_states},
      {"runs_finished_sent", stats.finished_sent.load()},
      {"stream_failures", stats.failed.load()},
      {"streams_ended_by_controller", stats.ended_by_controller.load()},
      {"heartbeats_sent", stats.heartbeats_sent.load()},
      {"write_failures", stats.write_failures.load()},
      {"send_phase_s", send_s},
      {"records_per_s", send_s > 0 ? static_cast<double>(sent) / send_s : 0},
      {"wire_bytes_per_record", sent ? static_cast<double>(stats.bytes_sent.load()) / sent : 0},
      {"settle_s", settle_s},
      {"controller_cpu_pct", cpu_pct},
      {"controller_cpu_s_total", p2.cpu_s},
      {"loadgen_cpu_pct", send_s > 0 ? 100.0 * (self1.cpu_s - self0.cpu_s) / send_s : 0},
      {"controller_rss_mb", static_cast<double>(p2.rss_kb) / 1024},
      {"controller_rss_peak_mb", static_cast<double>(p2.hwm_kb) / 1024},
  };
  printf("%s\n", report.dump().c_str());
  fflush(stdout);
  if (all_done) {
    agents.clear();
  } else {
    for (auto& a : agents) (void)a.release();  // a reaction may still run: never free it
  }
  if (spawned > 0) {
    kill(spawned, SIGTERM);
    int st = 0;
    for (int i = 0; i < 100 && waitpid(spawned, &st, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(spawned, SIGKILL);
    waitpid(spawned, &st, 0);
  }
  const bool ok = lost == 0 && stored == static_cast<int64_t>(stats.records_sent.load()) &&
                  stats.assigned.load() == opt.agents && sent > 0;
  return ok ? 0 : 1;
}
