// Thread counts for loops (the grain rule, less the cores other processes are using) and for
// the BLAS.
#include "fem/threads.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace fem {
namespace {

// Runnable threads of the whole system now, the caller included: the fourth field of
// /proc/loadavg ("0.52 0.58 0.59 2/81 1234"); 1 where it cannot be read.
int runnable_threads() noexcept {
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  char text[128];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return 1;
  text[n] = '\0';
  const char* p = text;
  for (int field = 0; field < 3 && p; ++field) {
    p = std::strchr(p, ' ');
    if (p) ++p;
  }
  return p ? std::max(1, std::atoi(p)) : 1;
}

// This process's threads that are runnable now, the caller included (state R in
// /proc/self/task/*/stat): OpenMP or BLAS threads spinning after a loop, under a wait policy
// that spins, are runnable without using a core anyone else wants.
int own_runnable_threads() noexcept {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return 1;
  int count = 0;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[sizeof(e->d_name) + 32];
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char text[256];
    const ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    const char* state = std::strrchr(text, ')');  // "tid (name) S ..."; the name may hold ')'
    count += state && state[1] == ' ' && state[2] == 'R';
  }
  closedir(tasks);
  return std::max(1, count);
}

ThreadPolicy initial_policy() noexcept {
  ThreadPolicy p;
  const char* v = std::getenv("FEM_ADAPTIVE_THREADS");
  p.adaptive = !(v && std::strcmp(v, "0") == 0);
  return p;
}

// The policy as two atomics (read at every call, from any thread).
std::atomic<bool> adaptive_policy{initial_policy().adaptive};
std::atomic<double> grain_scale{1.0};

// Cores that other processes' threads are using, sampled at most once a millisecond (about
// 7 µs; 20 µs more when something else is runnable).
int cores_in_use_by_others() noexcept {
  static std::atomic<std::int64_t> sampled_at{0};
  static std::atomic<int> others{0};
  const std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = sampled_at.load(std::memory_order_relaxed);
  if (now - last < 1000 || !sampled_at.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return others.load(std::memory_order_relaxed);
  int n = runnable_threads() - 1;  // all but the caller
  if (n > 0) n = std::max(0, n - (own_runnable_threads() - 1));
  others.store(n, std::memory_order_relaxed);
  return n;
}

}  // namespace

int threads_for(std::size_t work, std::size_t grain) noexcept {
  const double scaled = static_cast<double>(grain) * grain_scale.load(std::memory_order_relaxed);
  grain = std::max<std::size_t>(1, static_cast<std::size_t>(scaled));
  if (work < 2 * grain || omp_in_parallel()) return 1;
  const int most = std::max(1, omp_get_max_threads());
  if (most == 1) return 1;
  const std::size_t wanted = std::min(static_cast<std::size_t>(most), work / grain);
  if (!adaptive_policy.load(std::memory_order_relaxed)) return static_cast<int>(wanted);
  // The caller's core, and the cores nothing else is running on: a thread woken on a busy
  // core waits for its time slice at every barrier, which costs more than it brings.
  static const long online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long idle = std::max(0L, online - 1 - cores_in_use_by_others());
  return static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(1 + idle)));
}

ThreadPolicy thread_policy() noexcept {
  return {adaptive_policy.load(std::memory_order_relaxed), grain_scale.load(std::memory_order_relaxed)};
}

void set_thread_policy(const ThreadPolicy& policy) noexcept {
  adaptive_policy.store(policy.adaptive, std::memory_order_relaxed);
  grain_scale.store(std::max(0.0, policy.grain_scale), std::memory_order_relaxed);
}

bool set_blas_threads(int threads) noexcept {
  // Looked up, not linked: the BLAS may be another (reference, BLIS, MKL) or absent.
  using SetThreads = void (*)(int);
  static const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!set) return false;
  set(std::max(1, threads));
  return true;
}

int blas_threads() noexcept {
  using GetThreads = int (*)();
  static const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 0;
}

void apply_executable_thread_defaults(char** argv) noexcept {
  const bool wait_open = !std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT");
  const bool blas_open = !std::getenv("OPENBLAS_NUM_THREADS") && !std::getenv("GOTO_NUM_THREADS");
  if (!wait_open && !blas_open) return;
  if (wait_open) setenv("OMP_WAIT_POLICY", "passive", 1);
  if (blas_open) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (argv && argv[0]) execv("/proc/self/exe", argv);  // returns only on failure
  if (blas_open) set_blas_threads(1);
}

}  // namespace fem
