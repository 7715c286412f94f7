// A few threads for the agent protocol's blocking work (store reads, waiting
// for queued interval records to be committed), so that no gRPC callback thread
// ever waits on the store: gRPC runs every stream's reactions on a small pool,
// and one blocked reaction stops reading on every stream it would serve, which
// makes live agents look silent (found with iofleet-loadgen at 6,000 agents:
// RunFinished's sample check waited up to 1.9 s for the store per run).
//
// Thread-safety: Post may be called from any thread, also from a task.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace iofleet::controller {

class WorkPool {
 public:
  explicit WorkPool(size_t threads);
  // Runs every task posted before, then joins the threads.
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Runs `task` on one of the pool's threads, in FIFO order of start.
  void Post(std::function<void()> task);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace iofleet::controller
