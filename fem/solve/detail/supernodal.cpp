#include <omp.h>

#include <algorithm>
#include <fem/solve/detail/supernodal.hpp>
#include <numeric>
#include <queue>

namespace fem::solve::detail {
namespace {

// Factors with fewer stored entries (8 MB) are solved in one serial sweep: a parallel region
// costs more than the subtrees would save, and the sweep needs no buffers.
constexpr std::int64_t parallel_entries = std::int64_t{1} << 20;
// Subtrees are split until none holds more than 1/split_parts of the factor: enough for an
// even share on a few cores, few enough that the buffers of the rows above them stay small.
constexpr std::int64_t split_parts = 16;

using Structure = SupernodalSolve::Structure;

// Grown as needed, kept for the thread's next solve.
double* grow(std::vector<double>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

struct Node {
  int first_col, cols, rows;  // columns first_col .. first_col + cols - 1; rows (own included)
  const double* L;            // column-major, leading dimension `rows`
  const int* below;           // the row indices below the diagonal block (rows - cols)
};

inline Node node(const Structure& st, const double* x, int k) {
  const int k1 = st.super[k], psi = st.pi[k];
  const int cols = st.super[k + 1] - k1, rows = st.pi[k + 1] - psi;
  return {k1, cols, rows, x + st.px[k], st.s + psi + cols};
}

// The hardware prefetchers lose the factor's stream at every supernode boundary, every few
// hundred bytes in 2D: the sweeps keep the next `ahead` bytes of the factor requested.
class Prefetch {
 public:
  static constexpr std::ptrdiff_t ahead = 16384;
  // Forward: the factor is read upwards from `nd`.
  void up(const Node& nd) {
    const char* begin = reinterpret_cast<const char*>(nd.L);
    const char* want = begin + static_cast<std::ptrdiff_t>(nd.rows) * nd.cols * 8 + ahead;
    if (next_ < begin || next_ > want + ahead) next_ = begin;
    for (; next_ < want; next_ += 64) __builtin_prefetch(next_, 0, 3);
  }
  // Backward: downwards from the end of `nd`.
  void down(const Node& nd) {
    const char* end = reinterpret_cast<const char*>(nd.L + static_cast<std::ptrdiff_t>(nd.rows) * nd.cols);
    const char* want = reinterpret_cast<const char*>(nd.L) - ahead;
    if (next_ > end || next_ < want - ahead || next_ == nullptr) next_ = end;
    while (next_ > want) {
      next_ -= 64;
      __builtin_prefetch(next_, 0, 3);
    }
  }

 private:
  const char* next_ = nullptr;
};

// One right-hand side: the supernode's rows gathered into w (own, then below), columns taken
// four at a time so that w is loaded once per four columns of L and the four products are
// independent (a single running sum would wait on each multiply-add).
void forward1(const Node& nd, double* __restrict y, index_t column_end, const int* top_index,
              double* __restrict top, double* __restrict w) {
  const int cols = nd.cols, rows = nd.rows;
  double* __restrict yk = y + nd.first_col;
  std::copy(yk, yk + cols, w);
  std::fill(w + cols, w + rows, 0.0);
  int j = 0;
  for (; j + 4 <= cols; j += 4) {
    const double* __restrict L0 = nd.L + static_cast<std::size_t>(j) * rows;
    const double* __restrict L1 = L0 + rows;
    const double* __restrict L2 = L1 + rows;
    const double* __restrict L3 = L2 + rows;
    const double t0 = w[j] / L0[j];
    const double t1 = (w[j + 1] - L0[j + 1] * t0) / L1[j + 1];
    const double t2 = (w[j + 2] - L0[j + 2] * t0 - L1[j + 2] * t1) / L2[j + 2];
    const double t3 = (w[j + 3] - L0[j + 3] * t0 - L1[j + 3] * t1 - L2[j + 3] * t2) / L3[j + 3];
    w[j] = t0;
    w[j + 1] = t1;
    w[j + 2] = t2;
    w[j + 3] = t3;
#pragma omp simd
    for (int i = j + 4; i < rows; ++i) w[i] -= L0[i] * t0 + L1[i] * t1 + L2[i] * t2 + L3[i] * t3;
  }
  for (; j < cols; ++j) {
    const double* __restrict Lj = nd.L + static_cast<std::size_t>(j) * rows;
    const double t = w[j] / Lj[j];
    w[j] = t;
#pragma omp simd
    for (int i = j + 1; i < rows; ++i) w[i] -= Lj[i] * t;
  }
  std::copy(w, w + cols, yk);
  const double* __restrict u = w + cols;
  for (int i = 0; i < rows - cols; ++i) {
    const int row = nd.below[i];
    (row < column_end ? y[row] : top[top_index[row]]) += u[i];
  }
}

void backward1(const Node& nd, double* __restrict y, double* __restrict w) {
  const int cols = nd.cols, rows = nd.rows;
  double* __restrict yk = y + nd.first_col;
  std::copy(yk, yk + cols, w);
  for (int i = cols; i < rows; ++i) w[i] = y[nd.below[i - cols]];
  int j = cols - 1;
  for (; j >= 3; j -= 4) {  // columns j-3 .. j
    const double* __restrict L3 = nd.L + static_cast<std::size_t>(j) * rows;
    const double* __restrict L2 = L3 - rows;
    const double* __restrict L1 = L2 - rows;
    const double* __restrict L0 = L1 - rows;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int i = j + 1; i < rows; ++i) {
      const double x = w[i];
      s0 += L0[i] * x;
      s1 += L1[i] * x;
      s2 += L2[i] * x;
      s3 += L3[i] * x;
    }
    const double x3 = (w[j] - s3) / L3[j];
    const double x2 = (w[j - 1] - s2 - L2[j] * x3) / L2[j - 1];
    const double x1 = (w[j - 2] - s1 - L1[j - 1] * x2 - L1[j] * x3) / L1[j - 2];
    const double x0 = (w[j - 3] - s0 - L0[j - 2] * x1 - L0[j - 1] * x2 - L0[j] * x3) / L0[j - 3];
    w[j] = x3;
    w[j - 1] = x2;
    w[j - 2] = x1;
    w[j - 3] = x0;
  }
  for (; j >= 0; --j) {
    const double* __restrict Lj = nd.L + static_cast<std::size_t>(j) * rows;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = j + 1; i < rows; ++i) s += Lj[i] * w[i];
    w[j] = (w[j] - s) / Lj[j];
  }
  std::copy(w, w + cols, yk);
}

// Several right-hand sides: a chunk of W = 4·V columns, row-major in y (a row of the chunk is V
// vectors of 4 doubles, held in registers while the entries of L are applied to it). Columns of
// L are taken two at a time: a row of w is loaded and stored once per two entries.
using v4 = double __attribute__((vector_size(32), aligned(8), may_alias));

template <int V>
struct Chunk {
  v4 v[V];
  static Chunk load(const double* p) {
    Chunk c;
    for (int k = 0; k < V; ++k) c.v[k] = reinterpret_cast<const v4*>(p)[k];
    return c;
  }
  void store(double* p) const {
    for (int k = 0; k < V; ++k) reinterpret_cast<v4*>(p)[k] = v[k];
  }
};

template <int V>
void forward_block(const Node& nd, double* __restrict y, index_t column_end, const int* top_index,
                   double* __restrict top, double* __restrict w) {
  constexpr int W = 4 * V;
  using C = Chunk<V>;
  const int cols = nd.cols, rows = nd.rows;
  double* __restrict yk = y + static_cast<std::size_t>(nd.first_col) * W;
  std::copy(yk, yk + cols * W, w);
  std::fill(w + cols * W, w + rows * W, 0.0);
  int j = 0;
  for (; j + 2 <= cols; j += 2) {
    const double* __restrict L0 = nd.L + static_cast<std::size_t>(j) * rows;
    const double* __restrict L1 = L0 + rows;
    C t0 = C::load(w + j * W), t1 = C::load(w + (j + 1) * W);
    for (int k = 0; k < V; ++k) {
      t0.v[k] /= L0[j];
      t1.v[k] = (t1.v[k] - L0[j + 1] * t0.v[k]) / L1[j + 1];
    }
    t0.store(w + j * W);
    t1.store(w + (j + 1) * W);
    for (int i = j + 2; i < rows; ++i) {
      C x = C::load(w + i * W);
      for (int k = 0; k < V; ++k) x.v[k] -= L0[i] * t0.v[k] + L1[i] * t1.v[k];
      x.store(w + i * W);
    }
  }
  if (j < cols) {
    const double* __restrict Lj = nd.L + static_cast<std::size_t>(j) * rows;
    C t = C::load(w + j * W);
    for (int k = 0; k < V; ++k) t.v[k] /= Lj[j];
    t.store(w + j * W);
    for (int i = j + 1; i < rows; ++i) {
      C x = C::load(w + i * W);
      for (int k = 0; k < V; ++k) x.v[k] -= Lj[i] * t.v[k];
      x.store(w + i * W);
    }
  }
  std::copy(w, w + cols * W, yk);
  for (int i = 0; i < rows - cols; ++i) {
    const int row = nd.below[i];
    double* dst = row < column_end ? y + static_cast<std::size_t>(row) * W
                                   : top + static_cast<std::size_t>(top_index[row]) * W;
    C x = C::load(dst);
    const C u = C::load(w + (cols + i) * W);
    for (int k = 0; k < V; ++k) x.v[k] += u.v[k];
    x.store(dst);
  }
}

template <int V>
void backward_block(const Node& nd, double* __restrict y, double* __restrict w) {
  constexpr int W = 4 * V;
  using C = Chunk<V>;
  const int cols = nd.cols, rows = nd.rows;
  double* __restrict yk = y + static_cast<std::size_t>(nd.first_col) * W;
  std::copy(yk, yk + cols * W, w);
  for (int i = cols; i < rows; ++i) {
    const double* src = y + static_cast<std::size_t>(nd.below[i - cols]) * W;
    std::copy(src, src + W, w + i * W);
  }
  int j = cols - 1;
  for (; j >= 1; j -= 2) {  // columns j-1 and j
    const double* __restrict L1 = nd.L + static_cast<std::size_t>(j) * rows;
    const double* __restrict L0 = L1 - rows;
    C s0{}, s1{};
    for (int i = j + 1; i < rows; ++i) {
      const C x = C::load(w + i * W);
      for (int k = 0; k < V; ++k) {
        s0.v[k] += L0[i] * x.v[k];
        s1.v[k] += L1[i] * x.v[k];
      }
    }
    C x1 = C::load(w + j * W), x0 = C::load(w + (j - 1) * W);
    for (int k = 0; k < V; ++k) {
      x1.v[k] = (x1.v[k] - s1.v[k]) / L1[j];
      x0.v[k] = (x0.v[k] - s0.v[k] - L0[j] * x1.v[k]) / L0[j - 1];
    }
    x1.store(w + j * W);
    x0.store(w + (j - 1) * W);
  }
  if (j == 0) {
    const double* __restrict L0 = nd.L;
    C s{};
    for (int i = 1; i < rows; ++i) {
      const C x = C::load(w + i * W);
      for (int k = 0; k < V; ++k) s.v[k] += L0[i] * x.v[k];
    }
    C x0 = C::load(w);
    for (int k = 0; k < V; ++k) x0.v[k] = (x0.v[k] - s.v[k]) / L0[0];
    x0.store(w);
  }
  std::copy(w, w + cols * W, yk);
}

// The sweeps for a chunk of W right-hand sides (1, or a multiple of 4).
template <int W>
void forward(const Node& nd, double* y, index_t column_end, const int* top_index, double* top, double* w) {
  if constexpr (W == 1)
    forward1(nd, y, column_end, top_index, top, w);
  else
    forward_block<W / 4>(nd, y, column_end, top_index, top, w);
}

template <int W>
void backward(const Node& nd, double* y, double* w) {
  if constexpr (W == 1)
    backward1(nd, y, w);
  else
    backward_block<W / 4>(nd, y, w);
}

}  // namespace

SupernodalSolve::SupernodalSolve(const Structure& st) : st_(st) {
  const int ns = static_cast<int>(st.nsuper);
  const auto n = static_cast<std::size_t>(st.n);
  std::vector<int> supernode_of(n), parent(static_cast<std::size_t>(ns), -1);
  std::vector<int> first(static_cast<std::size_t>(ns));
  std::vector<std::int64_t> work(static_cast<std::size_t>(ns));
  position_.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    position_[st.perm ? static_cast<std::size_t>(st.perm[i]) : i] = static_cast<int>(i);
  for (int k = 0; k < ns; ++k) {
    const int cols = st.super[k + 1] - st.super[k], rows = st.pi[k + 1] - st.pi[k];
    for (int c = st.super[k]; c < st.super[k + 1]; ++c) supernode_of[static_cast<std::size_t>(c)] = k;
    work[static_cast<std::size_t>(k)] = std::int64_t{cols} * rows;
    entries_ += work[static_cast<std::size_t>(k)];
    max_rows_ = std::max(max_rows_, rows);
    first[static_cast<std::size_t>(k)] = k;
  }
  bool postordered = true;
  std::vector<int> size(static_cast<std::size_t>(ns), 1);
  for (int k = 0; k < ns; ++k) {
    const int cols = st.super[k + 1] - st.super[k], rows = st.pi[k + 1] - st.pi[k];
    if (rows == cols) continue;
    const int p = supernode_of[static_cast<std::size_t>(st.s[st.pi[k] + cols])];
    parent[static_cast<std::size_t>(k)] = p;
    if (p <= k) postordered = false;
  }
  for (int k = 0; k < ns && postordered; ++k) {
    const int p = parent[static_cast<std::size_t>(k)];
    if (size[static_cast<std::size_t>(k)] != k - first[static_cast<std::size_t>(k)] + 1) postordered = false;
    if (p < 0) continue;
    first[static_cast<std::size_t>(p)] =
        std::min(first[static_cast<std::size_t>(p)], first[static_cast<std::size_t>(k)]);
    size[static_cast<std::size_t>(p)] += size[static_cast<std::size_t>(k)];
    work[static_cast<std::size_t>(p)] += work[static_cast<std::size_t>(k)];
  }
  auto serial = [&] {
    parts_.clear();
    top_.resize(static_cast<std::size_t>(ns));
    std::iota(top_.begin(), top_.end(), 0);
    top_columns_.clear();
    top_index_.clear();
  };
  if (!postordered || entries_ < parallel_entries) {
    serial();
    return;
  }

  // Split the heaviest subtree (it joins the top; its children become subtrees) until every
  // subtree holds at most 1/split_parts of the factor; a leaf stays whole.
  std::vector<std::vector<int>> children(static_cast<std::size_t>(ns));
  using Item = std::pair<std::int64_t, int>;
  std::priority_queue<Item> heap;
  for (int k = 0; k < ns; ++k) {
    const int p = parent[static_cast<std::size_t>(k)];
    if (p >= 0)
      children[static_cast<std::size_t>(p)].push_back(k);
    else
      heap.emplace(work[static_cast<std::size_t>(k)], k);
  }
  std::vector<int> roots;
  while (!heap.empty() && heap.top().first * split_parts > entries_) {
    const int r = heap.top().second;
    heap.pop();
    if (children[static_cast<std::size_t>(r)].empty()) {
      roots.push_back(r);
      continue;
    }
    for (int c : children[static_cast<std::size_t>(r)]) heap.emplace(work[static_cast<std::size_t>(c)], c);
  }
  for (; !heap.empty(); heap.pop()) roots.push_back(heap.top().second);
  if (roots.size() < 2) {
    serial();
    return;
  }
  std::sort(roots.begin(), roots.end());

  std::vector<char> in_part(static_cast<std::size_t>(ns), 0);
  for (int r : roots) {
    const int f = first[static_cast<std::size_t>(r)];
    parts_.push_back({f, r, st.super[r + 1], work[static_cast<std::size_t>(r)]});
    std::fill(in_part.begin() + f, in_part.begin() + r + 1, 1);
  }
  top_index_.assign(n, -1);
  for (int k = 0; k < ns; ++k) {
    if (in_part[static_cast<std::size_t>(k)]) continue;
    top_.push_back(k);
    for (int c = st.super[k]; c < st.super[k + 1]; ++c) {
      top_index_[static_cast<std::size_t>(c)] = static_cast<int>(top_columns_.size());
      top_columns_.push_back(c);
    }
  }
  // Every row of a subtree beyond its columns must be a top column (ancestors only); a
  // structure that breaks this is solved serially.
  for (const Part& q : parts_)
    for (int k = q.first; k <= q.last; ++k)
      for (int p = st.pi[k] + (st.super[k + 1] - st.super[k]); p < st.pi[k + 1]; ++p)
        if (st.s[p] >= q.column_end && top_index_[static_cast<std::size_t>(st.s[p])] < 0) {
          serial();
          return;
        }
}

template <int W>
void SupernodalSolve::solve_chunk(const double* x, double* y, double* buffers, int threads) const {
  thread_local std::vector<double> u_storage;
  const std::size_t u_size = static_cast<std::size_t>(max_rows_) * W;
  const index_t n = st_.n;
  if (parts_.empty()) {
    double* u = grow(u_storage, u_size);
    Prefetch pf;
    for (int k : top_) {
      const Node nd = node(st_, x, k);
      pf.up(nd);
      forward<W>(nd, y, n, nullptr, nullptr, u);
    }
    for (auto k = top_.rbegin(); k != top_.rend(); ++k) {
      const Node nd = node(st_, x, *k);
      pf.down(nd);
      backward<W>(nd, y, u);
    }
    return;
  }
  const std::size_t ntop = top_columns_.size() * W;
  const int nparts = static_cast<int>(parts_.size());
  std::fill(buffers, buffers + ntop * static_cast<std::size_t>(nparts), 0.0);
  // Subtrees to threads: the heaviest first, each to the least loaded thread (the result does
  // not depend on it).
  thread_local std::vector<int> owner;
  owner.assign(static_cast<std::size_t>(nparts), 0);
  if (threads > 1) {
    std::vector<int> order(static_cast<std::size_t>(nparts));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return parts_[a].work > parts_[b].work; });
    std::vector<std::int64_t> load(static_cast<std::size_t>(threads), 0);
    for (int p : order) {
      const auto t = std::min_element(load.begin(), load.end()) - load.begin();
      owner[static_cast<std::size_t>(p)] = static_cast<int>(t);
      load[static_cast<std::size_t>(t)] += parts_[p].work;
    }
  }
  const int* owners = owner.data();
  auto subtrees = [&](int t, bool forward_sweep) {
    double* u = grow(u_storage, u_size);
    for (int p = 0; p < nparts; ++p) {
      if (owners[p] != t) continue;
      const Part& q = parts_[static_cast<std::size_t>(p)];
      if (forward_sweep) {
        double* top = buffers + ntop * static_cast<std::size_t>(p);
        Prefetch pf;
        for (int k = q.first; k <= q.last; ++k) {
          const Node nd = node(st_, x, k);
          pf.up(nd);
          forward<W>(nd, y, q.column_end, top_index_.data(), top, u);
        }
      } else {
        Prefetch pf;
        for (int k = q.last; k >= q.first; --k) {
          const Node nd = node(st_, x, k);
          pf.down(nd);
          backward<W>(nd, y, u);
        }
      }
    }
  };
  auto sweep = [&](bool forward_sweep) {
    if (threads == 1) return subtrees(0, forward_sweep);
#pragma omp parallel num_threads(threads)
    subtrees(omp_get_thread_num(), forward_sweep);
  };
  sweep(true);
  // The subtrees' updates of the top rows, in subtree order; then the top, serially.
  for (std::size_t c = 0; c < top_columns_.size(); ++c) {
    double* dst = y + static_cast<std::size_t>(top_columns_[c]) * W;
    for (int p = 0; p < nparts; ++p) {
      const double* src = buffers + ntop * static_cast<std::size_t>(p) + c * W;
      for (int r = 0; r < W; ++r) dst[r] += src[r];
    }
  }
  double* u = grow(u_storage, u_size);
  Prefetch pf;
  for (int k : top_) {
    const Node nd = node(st_, x, k);
    pf.up(nd);
    forward<W>(nd, y, n, nullptr, nullptr, u);
  }
  for (auto k = top_.rbegin(); k != top_.rend(); ++k) {
    const Node nd = node(st_, x, *k);
    pf.down(nd);
    backward<W>(nd, y, u);
  }
  sweep(false);
}

void SupernodalSolve::solve(const double* x, const double* B, double* X, index_t nrhs) const {
  const auto n = static_cast<std::size_t>(st_.n);
  if (n == 0 || nrhs <= 0) return;
  thread_local std::vector<double> y_storage, buffer_storage;
  const int threads = parts_.empty() || omp_in_parallel()
                          ? 1
                          : std::clamp(omp_get_max_threads(), 1, static_cast<int>(parts_.size()));
  for (index_t c0 = 0; c0 < nrhs;) {
    // Chunks of up to 16 columns: one sweep over the factor per chunk, each entry of L applied
    // to a row of the chunk (contiguous: y is row-major within a chunk).
    // Widths 1, 4, 8, 16; a partial chunk is padded with zero columns (at most a third).
    const index_t left = nrhs - c0;
    const int w = left >= 12 ? 16 : left >= 6 ? 8 : left >= 2 ? 4 : 1;
    const int used = static_cast<int>(std::min<index_t>(left, w));
    double* y = grow(y_storage, n * static_cast<std::size_t>(w));
    double* buffers = grow(buffer_storage, top_columns_.size() * parts_.size() * static_cast<std::size_t>(w));
    // In and out through the permutation. One column: gathered (random reads from b). A chunk:
    // in the order of b's rows, each row of the chunk written whole (the columns are read as
    // `used` sequential streams, where gathering would miss the cache once per entry).
    const int* perm = st_.perm;
    const double* b0 = B + static_cast<std::size_t>(c0) * n;
    if (w == 1) {
      for (std::size_t i = 0; i < n; ++i) y[i] = b0[perm ? perm[i] : i];
    } else {
      for (std::size_t j = 0; j < n; ++j) {
        double* row = y + static_cast<std::size_t>(position_[j]) * w;
        for (int r = 0; r < used; ++r) row[r] = b0[static_cast<std::size_t>(r) * n + j];
        for (int r = used; r < w; ++r) row[r] = 0.0;
      }
    }
    switch (w) {
      case 16:
        solve_chunk<16>(x, y, buffers, threads);
        break;
      case 8:
        solve_chunk<8>(x, y, buffers, threads);
        break;
      case 4:
        solve_chunk<4>(x, y, buffers, threads);
        break;
      default:
        solve_chunk<1>(x, y, buffers, threads);
        break;
    }
    double* x0 = X + static_cast<std::size_t>(c0) * n;
    if (w == 1) {
      for (std::size_t i = 0; i < n; ++i) x0[perm ? perm[i] : i] = y[i];
    } else {
      for (std::size_t j = 0; j < n; ++j) {
        const double* row = y + static_cast<std::size_t>(position_[j]) * w;
        for (int r = 0; r < used; ++r) x0[static_cast<std::size_t>(r) * n + j] = row[r];
      }
    }
    c0 += used;
  }
}

}  // namespace fem::solve::detail
