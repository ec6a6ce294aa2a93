// Progress lines on standard error (progress.hpp).
#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace fem::app {

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Progress::Progress(bool enabled) : enabled_(enabled && ::isatty(::fileno(stderr))) {}

void Progress::step(int k, int n, double t) {
  if (!enabled_ || n <= 0) return;
  const int width = 30, done = k * width / n;
  const double elapsed = since(start_), eta = k > 0 ? elapsed * (n - k) / k : 0.0;
  fmt::print(stderr, "\r[{}{}] step {}/{}  t = {:.4g}  elapsed {:.1f} s  ETA {:.1f} s ",
             std::string(done, '#'), std::string(width - done, ' '), k, n, t, elapsed, eta);
  if (k == n) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

Progress::Phase::Phase(const Progress& progress, std::string name, double after) : name_(std::move(name)) {
  if (!progress.enabled()) return;
  if (const char* env = std::getenv("FEM_PROGRESS_AFTER")) after = std::atof(env);
  if (after <= 0) {  // shown at once, however soon the phase ends
    fmt::print(stderr, "\r{}  0.0 s ", name_);
    shown_ = true;
  }
  thread_ = std::thread([this, after] {
    std::unique_lock lock(mutex_);
    if (done_cv_.wait_for(lock, std::chrono::duration<double>(after), [this] { return done_; })) return;
    while (!done_) {
      fmt::print(stderr, "\r{}  {:.1f} s ", name_, since(start_));
      std::fflush(stderr);
      shown_ = true;
      done_cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
    }
  });
}

Progress::Phase::~Phase() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_all();
  thread_.join();
  if (shown_) {
    fmt::print(stderr, "\r{}  {:.1f} s\n", name_, since(start_));
    std::fflush(stderr);
  }
}

}  // namespace fem::app
