// The grain rule of fem::threads_for: one thread for small loops and inside parallel regions,
// never more than OpenMP allows, and none of the cores another process is running on.
#include <gtest/gtest.h>
#include <omp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "fem/threads.hpp"

namespace {

// Restores OpenMP's thread count at the end of a test.
struct KeepThreads {
  int saved = omp_get_max_threads();
  ~KeepThreads() { omp_set_num_threads(saved); }
};

TEST(Threads, OneThreadBelowTwoGrains) {
  KeepThreads keep;
  omp_set_num_threads(4);
  EXPECT_EQ(fem::threads_for(0, 100), 1);
  EXPECT_EQ(fem::threads_for(199, 100), 1);
  EXPECT_EQ(fem::threads_for(1, 0), 1);  // a grain of 0 counts as 1
}

TEST(Threads, NeverMoreThanOpenMPAllows) {
  KeepThreads keep;
  for (int most : {1, 2, 3}) {
    omp_set_num_threads(most);
    const int t = fem::threads_for(std::size_t{1} << 30, 1000);
    EXPECT_GE(t, 1);
    EXPECT_LE(t, most);
    EXPECT_LE(fem::threads_for(2500, 1000), 2);  // at most work / grain
  }
}

TEST(Threads, OneThreadInsideAParallelRegion) {
  KeepThreads keep;
  omp_set_num_threads(2);
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    inside = fem::threads_for(std::size_t{1} << 30, 1);
  }
  EXPECT_EQ(inside, 1);
}

// Processes spinning on every core but one, for the life of the object.
class SpinningProcesses {
 public:
  explicit SpinningProcesses(long count) {
    for (long k = 0; k < count; ++k) {
      const pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) asm volatile("" ::: "memory");
      }
      if (pid > 0) pids_.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // running, and past the last sample
  }
  ~SpinningProcesses() {
    for (pid_t pid : pids_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  SpinningProcesses(const SpinningProcesses&) = delete;
  SpinningProcesses& operator=(const SpinningProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// A process spinning on every core but one: a loop gets the caller's core only, unless the
// policy says not to adapt.
TEST(Threads, LeavesCoresOtherProcessesUse) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 2) GTEST_SKIP() << "one core";
  KeepThreads keep;
  const fem::ThreadPolicy saved = fem::thread_policy();
  omp_set_num_threads(2);
  const SpinningProcesses spinning(online - 1);
  fem::set_thread_policy({/*adaptive=*/true, 1.0});
  EXPECT_EQ(fem::threads_for(std::size_t{1} << 30, 1), 1);
  fem::set_thread_policy({/*adaptive=*/false, 1.0});
  EXPECT_EQ(fem::threads_for(std::size_t{1} << 30, 1), 2);
  fem::set_thread_policy(saved);
}

TEST(Threads, GrainScaleZeroStartsThreadsForAnyLoop) {
  KeepThreads keep;
  const fem::ThreadPolicy saved = fem::thread_policy();
  omp_set_num_threads(2);
  fem::set_thread_policy({/*adaptive=*/false, /*grain_scale=*/0.0});
  EXPECT_EQ(fem::threads_for(1, 1u << 20), 1);
  EXPECT_EQ(fem::threads_for(2, 1u << 20), 2);
  fem::set_thread_policy(saved);
  EXPECT_EQ(fem::threads_for(2, 1u << 20), 1);
}

TEST(Threads, BlasThreadsWhereTheBlasHasThem) {
  // The shared library does not link a BLAS: without one in the process there is nothing to set.
  if (fem::blas_threads() == 0) {
    EXPECT_FALSE(fem::set_blas_threads(1));
    return;
  }
  const int saved = fem::blas_threads();
  EXPECT_TRUE(fem::set_blas_threads(1));
  EXPECT_EQ(fem::blas_threads(), 1);
  fem::set_blas_threads(saved);
}

}  // namespace
