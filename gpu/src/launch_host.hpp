// The host launch policy: the builders' parallel loops as OpenMP loops on host memory (used by
// the host twin and by the debug device, whose "device" buffers are host memory).
#pragma once

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fem/gpu/detail/table_ops.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/threads.hpp"

namespace fem::gpu::detail {

struct HostLaunch {
  using Atomics = HostAtomics;
#if defined(__SSE2__)
  static constexpr bool has_row_positions = true;  // else the builder's scalar scan
#else
  static constexpr bool has_row_positions = false;
#endif

  /// Items per thread below which a loop runs on one thread (fem/threads.hpp): the cheapest
  /// bodies here (a flag, a copy) take a few ns, so 32768 of them are about 0.1 ms, ten times
  /// the wake-up of a sleeping thread; the per-cell bodies are ten times dearer.
  static constexpr std::size_t grain = 65536;

  /// Threads for a loop of n items (1: run it serially).
  static int threads(std::size_t n) { return threads_for(n, grain); }

  /// Dynamic chunks, about 16 per thread: a thread on a core another process also wants takes
  /// fewer of them instead of holding up the loop with a fixed share.
  static std::int64_t chunk(std::size_t n, int threads) {
    return std::max<std::int64_t>(2048, static_cast<std::int64_t>(n) / (16 * threads));
  }

  template <class F>
  static void for_each(const Executor&, std::size_t n, F f) {
    const auto nn = static_cast<std::int64_t>(n);
    const int nt = threads(n);
    if (nt == 1) {
      Atomics::serial = true;
      for (std::int64_t i = 0; i < nn; ++i) f(static_cast<std::size_t>(i));
      Atomics::serial = false;
      return;
    }
#pragma omp parallel for num_threads(nt) schedule(dynamic, chunk(n, nt))
    for (std::int64_t i = 0; i < nn; ++i) f(static_cast<std::size_t>(i));
  }

#if defined(__SSE2__)
  /// pos[j] = the position of nodes[j] in the sorted row cols[b, e) (where present; else left
  /// as it was), for j < m. SSE2/AVX2: each 8-column chunk is compared with every node at once;
  /// rows of up to 8 columns (P1 in 2D) take no data-dependent branch. `end` bounds the cols
  /// array: chunks past it are read one column at a time. With AVX2, a row of up to 8 columns
  /// must hold every node (a cell's rows hold all its nodes): its chunk is not masked, so a
  /// missing node could match in the next row (masking cost about 4 ms of a 2D build).
  static void row_positions(const index_t* cols, index_t b, index_t e, index_t end, const index_t* nodes,
                            int m, index_t* pos) {
#if defined(__AVX2__)
    if (e - b <= 8 && end - b >= 8) {
      // One chunk holds the row (2D P1); a node's first match lies inside it.
      const __m256i chunk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + b));
      for (int j = 0; j < m; ++j) {
        const int hit =
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(chunk, _mm256_set1_epi32(nodes[j]))));
        pos[j] = hit ? b + __builtin_ctz(static_cast<unsigned>(hit)) : pos[j];
      }
      return;
    }
#endif
    for (index_t k = b; k < e; k += 8) {
      const int valid = (1 << std::min<index_t>(8, e - k)) - 1;
      if (end - k < 8) {  // the last row(s) of the array: no over-read
        for (int i = 0; i < 8 && k + i < e; ++i)
          for (int j = 0; j < m; ++j)
            if (cols[k + i] == nodes[j]) pos[j] = k + i;
        continue;
      }
#if defined(__AVX2__)
      const __m256i chunk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + k));
      for (int j = 0; j < m; ++j) {
        const int hit =
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(chunk, _mm256_set1_epi32(nodes[j])))) &
            valid;
        pos[j] = hit ? k + __builtin_ctz(static_cast<unsigned>(hit)) : pos[j];
      }
#else
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cols + k));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cols + k + 4));
      for (int j = 0; j < m; ++j) {
        const __m128i x = _mm_set1_epi32(nodes[j]);
        const int hit = (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lo, x))) |
                         (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(hi, x))) << 4)) &
                        valid;
        pos[j] = hit ? k + __builtin_ctz(static_cast<unsigned>(hit)) : pos[j];
      }
#endif
    }
  }
#endif

#if defined(__AVX2__)
  /// All bits set in the lanes i < n (n ≤ 8): the mask of a row's columns in one register.
  static __m256i lanes_below(index_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  /// One layer of a sorting network: lane i and its partner perm[i] keep the min (the lower
  /// lane) and the max (the upper lanes, the bits of Upper: an immediate operand).
  template <int Upper>
  static __m256i sort_layer(__m256i x, __m256i perm) {
    const __m256i p = _mm256_permutevar8x32_epi32(x, perm);
    return _mm256_blend_epi32(_mm256_min_epi32(x, p), _mm256_max_epi32(x, p), Upper);
  }

  /// Sort cols[b, e) ascending when it has at most 8 columns (2D P1 rows have 7 inside), in one
  /// register through Batcher's odd-even merge network (19 compare-exchanges in 6 layers, no
  /// data-dependent branch: insertion sort mispredicts on every row). The store is masked to
  /// the row. The load is not (a masked one cost about 4 ms of a 2D build): it reads up to 7
  /// columns of the next rows, which another thread may be sorting; they are replaced by
  /// padding before use. Thread-sanitizer builds take the masked load. Returns false, touching
  /// nothing, for longer rows and the last rows of the array (`end`: no read past it).
  static bool sort_short_row(index_t* cols, index_t b, index_t e, index_t end) {
    const index_t len = e - b;
    if (len > 8 || end - b < 8) return false;
    const __m256i live = lanes_below(len);
#if defined(__SANITIZE_THREAD__)
    __m256i v = _mm256_maskload_epi32(cols + b, live);
#else
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + b));
#endif
    v = _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MAX), v, live);  // padding sorts last
    v = sort_layer<0b10101010>(v, _mm256_setr_epi32(1, 0, 3, 2, 5, 4, 7, 6));
    v = sort_layer<0b11001100>(v, _mm256_setr_epi32(2, 3, 0, 1, 6, 7, 4, 5));
    v = sort_layer<0b01000100>(v, _mm256_setr_epi32(0, 2, 1, 3, 4, 6, 5, 7));
    v = sort_layer<0b11110000>(v, _mm256_setr_epi32(4, 5, 6, 7, 0, 1, 2, 3));
    v = sort_layer<0b00110000>(v, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
    v = sort_layer<0b01010100>(v, _mm256_setr_epi32(0, 2, 1, 4, 3, 6, 5, 7));
    _mm256_maskstore_epi32(cols + b, live, v);
    return true;
  }
#else
  static bool sort_short_row(index_t*, index_t, index_t, index_t) {
    return false;
  }  // the builder's insertion sort
#endif

  /// data[0..n) becomes its exclusive prefix sum; returns the total.
  template <class T>
  static std::uint64_t exclusive_scan(const Executor&, T* data, std::size_t n) {
    const auto nn = static_cast<std::int64_t>(n);
    const int threads_wanted = threads(n);
    if (threads_wanted == 1) {
      std::uint64_t run = 0;
      for (std::int64_t i = 0; i < nn; ++i) {
        const auto v = static_cast<std::uint64_t>(data[i]);
        data[i] = static_cast<T>(run);
        run += v;
      }
      return run;
    }
    // The team may be smaller than asked (nested in a parallel region, OMP_THREAD_LIMIT,
    // OMP_DYNAMIC): the blocks follow the team OpenMP actually gives.
    std::vector<std::uint64_t> partial(threads_wanted + 1, 0);
    int team = 1;
#pragma omp parallel num_threads(threads_wanted)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
#pragma omp single
      team = nt;
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
    return partial[team];
  }
};

}  // namespace fem::gpu::detail
