// Test support: the library's parallel paths on small test meshes. Every grain is scaled to 0
// and the thread count does not adapt to the machine's load, for one scope; with
// omp_set_num_threads(t) a loop then runs on t threads whatever its size and however busy the
// machine is, so tests of thread-count independence compare what they mean to.
#pragma once

#include "fem/threads.hpp"

namespace fem::testing {

class ParallelPaths {
 public:
  ParallelPaths() { fem::set_thread_policy({/*adaptive=*/false, /*grain_scale=*/0.0}); }
  ~ParallelPaths() { fem::set_thread_policy(saved_); }
  ParallelPaths(const ParallelPaths&) = delete;
  ParallelPaths& operator=(const ParallelPaths&) = delete;

 private:
  fem::ThreadPolicy saved_ = fem::thread_policy();
};

}  // namespace fem::testing
