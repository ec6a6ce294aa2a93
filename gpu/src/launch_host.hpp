// The host launch policy: the builders' parallel loops as OpenMP loops on host memory (used by
// the host twin and by the debug device, whose "device" buffers are host memory).
#pragma once

#include <omp.h>

#include <cstdint>
#include <vector>

#include "fem/gpu/detail/table_ops.hpp"
#include "fem/gpu/executor.hpp"

namespace fem::gpu::detail {

struct HostLaunch {
  using Atomics = HostAtomics;

  template <class F>
  static void for_each(const Executor&, std::size_t n, F f) {
    const auto nn = static_cast<std::int64_t>(n);
    if (omp_get_max_threads() == 1 || nn < 4096) {
      Atomics::serial = true;
      for (std::int64_t i = 0; i < nn; ++i) f(static_cast<std::size_t>(i));
      Atomics::serial = false;
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < nn; ++i) f(static_cast<std::size_t>(i));
  }

  /// data[0..n) becomes its exclusive prefix sum; returns the total.
  template <class T>
  static std::uint64_t exclusive_scan(const Executor&, T* data, std::size_t n) {
    const int nt = omp_get_max_threads();
    std::vector<std::uint64_t> partial(nt + 1, 0);
    const auto nn = static_cast<std::int64_t>(n);
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num();
      const std::int64_t b = nn * t / nt, e = nn * (t + 1) / nt;
      std::uint64_t s = 0;
      for (std::int64_t i = b; i < e; ++i) s += static_cast<std::uint64_t>(data[i]);
      partial[t + 1] = s;
#pragma omp barrier
#pragma omp single
      for (int k = 0; k < nt; ++k) partial[k + 1] += partial[k];
      std::uint64_t run = partial[t];
      for (std::int64_t i = b; i < e; ++i) {
        const auto v = static_cast<std::uint64_t>(data[i]);
        data[i] = static_cast<T>(run);
        run += v;
      }
    }
    return partial[nt];
  }
};

}  // namespace fem::gpu::detail
