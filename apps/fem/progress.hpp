// Progress on long runs, one facility for every subcommand: on a terminal, a live line for time
// steps (step k/N, simulated time, elapsed, ETA), and for any phase that lasts longer than about
// 2 s (a big factorization, reading a large mesh) its name and the seconds so far. Silent under
// --quiet, when the JSON goes to standard output, when standard error is not a terminal, and on
// every rank but 0.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace fem::app {

class Progress {
 public:
  /// `enabled`: what the run allows (rank 0, not --quiet, the JSON not on stdout); the terminal
  /// check is made here.
  explicit Progress(bool enabled);

  /// Step k of n done at simulated time t (a live line; the last step ends it).
  void step(int k, int n, double t);

  /// A phase of the run: after `after` seconds (FEM_PROGRESS_AFTER, when set, for all phases),
  /// its name and the seconds so far, updated until it ends (then "name  12.3 s" stays on its
  /// line). Nothing for a phase that ends sooner.
  class Phase {
   public:
    Phase(const Progress& progress, std::string name, double after = 2.0);
    ~Phase();
    Phase(const Phase&) = delete;
    Phase& operator=(const Phase&) = delete;

   private:
    std::string name_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    bool shown_ = false;
    std::thread thread_;
  };
  Phase phase(std::string name) const { return Phase(*this, std::move(name)); }

  bool enabled() const noexcept { return enabled_; }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace fem::app
