// Thread counts for the library's OpenMP loops, so that more threads are never slower: a loop
// starts threads only when each gets enough work to repay waking it (its grain), and executables
// pick an OpenMP wait policy that yields the cores to other processes (docs in docs/benchmarks.md,
// "Threads").
#pragma once

#include <cstddef>

namespace fem {

/// Threads worth starting for a loop of `work` units when a thread must get at least `grain`
/// units to repay its wake-up: 1 below 2·grain or inside a parallel region, else work / grain
/// capped at omp_get_max_threads() and, when the policy is adaptive, at the cores no other
/// process is running on (the system's runnable threads less this process's, sampled at most
/// once a millisecond from /proc). Use as `#pragma omp parallel for num_threads(t) if (t > 1)`.
int threads_for(std::size_t work, std::size_t grain) noexcept;

/// How threads_for() decides, for the whole process.
struct ThreadPolicy {
  /// Leave out the cores other processes are running on (default: on, unless the environment
  /// has FEM_ADAPTIVE_THREADS=0).
  bool adaptive = true;
  /// Multiplies every grain: 0 starts threads for any loop of two units or more (tests use it
  /// to run the parallel paths on small meshes).
  double grain_scale = 1.0;
};
ThreadPolicy thread_policy() noexcept;
void set_thread_policy(const ThreadPolicy& policy) noexcept;

/// Set the BLAS's own thread count where the BLAS has one that can be set at run time
/// (OpenBLAS's openblas_set_num_threads, looked up when called); false where it has none.
bool set_blas_threads(int threads) noexcept;

/// The BLAS's thread count where it has one (OpenBLAS), else 0.
int blas_threads() noexcept;

/// The thread defaults of fem's executables: call first thing in main(). Where the environment
/// leaves them open it sets OMP_WAIT_POLICY=passive (idle OpenMP threads sleep: a spinning one
/// burns a core another process may need and, on such a core, waits for its time slice at
/// every region) and OPENBLAS_NUM_THREADS=1 (OpenBLAS's threads spin for about 0.1 s after
/// every threaded call and at start-up; CHOLMOD's factorization gains nothing from them in 2D
/// and about 15% in 3D on two idle cores, and runs 3-4x slower with one core busy), then runs
/// the program again with the same arguments (/proc/self/exe): libgomp and OpenBLAS read these
/// only when they are loaded, before main, and glibc hands them the environment the process
/// started with even when .preinit_array changed it. Returns when there is nothing to set, or
/// when the exec failed (the BLAS is then set to one thread at run time). A user's setting of
/// any of OMP_WAIT_POLICY, GOMP_SPINCOUNT, OPENBLAS_NUM_THREADS or GOTO_NUM_THREADS is kept.
void apply_executable_thread_defaults(char** argv) noexcept;

}  // namespace fem
