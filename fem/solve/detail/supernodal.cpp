// Our substitutions with a supernodal Cholesky factor, and the factor's packing for them.
#include <omp.h>

#include <algorithm>
#include <fem/solve/detail/supernodal.hpp>
#include <fem/threads.hpp>
#include <numeric>
#include <queue>
#include <ranges>

#ifdef __AVX__
#include <immintrin.h>
#endif

namespace fem::solve::detail {
namespace {

// Factors with fewer entries (8 MB) are solved in one serial sweep: a parallel region costs
// more than the subtrees would save, and the sweep needs no buffers.
constexpr std::int64_t parallel_entries = std::int64_t{1} << 20;
// Subtrees are split until none holds more than 1/split_parts of the factor: enough for an
// even share on a few cores, few enough that the buffers of the rows above them stay small.
constexpr std::int64_t split_parts = 16;
// Fundamental supernodes are chained (a child into its parent, when they are consecutive in
// one of CHOLMOD's supernodes) up to this many columns, whatever zeros that adds, and beyond it
// while the zeros added stay under a fraction of the node's entries: a node's fixed cost (its
// rows gathered and scattered, its columns' triangle) is worth a few entries.
constexpr int chain_columns = 4;
constexpr double chain_zeros = 0.05;

using Structure = SupernodalSolve::Structure;

// Grown as needed, kept with the workspace for the next solve.
double* grow(std::vector<double>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Entries of a node's lower trapezoid: cols columns, rows rows (its own columns included).
std::int64_t trapezoid(std::int64_t cols, std::int64_t rows) { return cols * rows - cols * (cols - 1) / 2; }

struct Node {
  int first_col, cols, rows;  // columns first_col .. first_col + cols - 1; rows (own included)
  const double* L;            // the lower trapezoid, column after column
  const int* below;           // the row indices below the diagonal block (rows - cols)
  std::int64_t size;          // entries
};

// Column j of a node: p[i] is L(i, j) for the node's rows i >= j (column j holds rows - j).
inline const double* column(const Node& nd, int j) {
  return nd.L + static_cast<std::ptrdiff_t>(j) * nd.rows - static_cast<std::ptrdiff_t>(j) * (j + 1) / 2;
}

// The hardware prefetchers lose the factor's stream at every node boundary, every few hundred
// bytes in 2D: the sweeps keep the next `ahead` bytes of the factor requested (beyond the
// first `ahead` bytes of a large node, whose columns the hardware streams by itself).
class Prefetch {
 public:
  static constexpr std::ptrdiff_t ahead = 16384;
  // Forward: the factor is read upwards from `nd`.
  void up(const Node& nd) {
    const char* begin = reinterpret_cast<const char*>(nd.L);
    const char* want = begin + std::min<std::ptrdiff_t>(nd.size * 8, ahead) + ahead;
    if (next_ < begin || next_ > want + ahead) next_ = begin;
    for (; next_ < want; next_ += 64) __builtin_prefetch(next_, 0, 3);
  }
  // Backward: downwards from the end of `nd`.
  void down(const Node& nd) {
    const char* end = reinterpret_cast<const char*>(nd.L + nd.size);
    const char* want = end - std::min<std::ptrdiff_t>(nd.size * 8, ahead) - ahead;
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
    const double* __restrict L0 = column(nd, j);
    const double* __restrict L1 = column(nd, j + 1);
    const double* __restrict L2 = column(nd, j + 2);
    const double* __restrict L3 = column(nd, j + 3);
    const double t0 = w[j] * L0[j];
    const double t1 = (w[j + 1] - L0[j + 1] * t0) * L1[j + 1];
    const double t2 = (w[j + 2] - L0[j + 2] * t0 - L1[j + 2] * t1) * L2[j + 2];
    const double t3 = (w[j + 3] - L0[j + 3] * t0 - L1[j + 3] * t1 - L2[j + 3] * t2) * L3[j + 3];
    w[j] = t0;
    w[j + 1] = t1;
    w[j + 2] = t2;
    w[j + 3] = t3;
#pragma omp simd
    for (int i = j + 4; i < rows; ++i) w[i] = w[i] - L0[i] * t0 - L1[i] * t1 - L2[i] * t2 - L3[i] * t3;
  }
  for (; j < cols; ++j) {
    const double* __restrict Lj = column(nd, j);
    const double t = w[j] * Lj[j];
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
    const double* __restrict L3 = column(nd, j);
    const double* __restrict L2 = column(nd, j - 1);
    const double* __restrict L1 = column(nd, j - 2);
    const double* __restrict L0 = column(nd, j - 3);
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int i = j + 1; i < rows; ++i) {
      const double x = w[i];
      s0 += L0[i] * x;
      s1 += L1[i] * x;
      s2 += L2[i] * x;
      s3 += L3[i] * x;
    }
    const double x3 = (w[j] - s3) * L3[j];
    const double x2 = (w[j - 1] - s2 - L2[j] * x3) * L2[j - 1];
    const double x1 = (w[j - 2] - s1 - L1[j - 1] * x2 - L1[j] * x3) * L1[j - 2];
    const double x0 = (w[j - 3] - s0 - L0[j - 2] * x1 - L0[j - 1] * x2 - L0[j] * x3) * L0[j - 3];
    w[j] = x3;
    w[j - 1] = x2;
    w[j - 2] = x1;
    w[j - 3] = x0;
  }
  for (; j >= 0; --j) {
    const double* __restrict Lj = column(nd, j);
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = j + 1; i < rows; ++i) s += Lj[i] * w[i];
    w[j] = (w[j] - s) * Lj[j];
  }
  std::copy(w, w + cols, yk);
}

// Nodes of at most eight columns (most of them in 2D), straight on y: the columns' triangle in
// registers, then one pass over the rows below, each updated once (no gather into w).
template <int C>
void forward_small(const Node& nd, double* __restrict y, index_t column_end, const int* top_index,
                   double* __restrict top) {
  const double* __restrict L[C];
  for (int c = 0; c < C; ++c) L[c] = column(nd, c);
  double* __restrict yk = y + nd.first_col;
  double t[C];
  for (int c = 0; c < C; ++c) {
    double v = yk[c];
    for (int k = 0; k < c; ++k) v -= L[k][c] * t[k];
    t[c] = v * L[c][c];
    yk[c] = t[c];
  }
  const int* __restrict below = nd.below;
  for (int i = C; i < nd.rows; ++i) {
    double s = L[0][i] * t[0];
    for (int c = 1; c < C; ++c) s += L[c][i] * t[c];
    const int row = below[i - C];
    (row < column_end ? y[row] : top[top_index[row]]) -= s;
  }
}

template <int C>
void backward_small(const Node& nd, double* __restrict y) {
  const double* __restrict L[C];
  for (int c = 0; c < C; ++c) L[c] = column(nd, c);
  double s[C] = {};
  const int* __restrict below = nd.below;
  for (int i = C; i < nd.rows; ++i) {
    const double x = y[below[i - C]];
    for (int c = 0; c < C; ++c) s[c] += L[c][i] * x;
  }
  double* __restrict yk = y + nd.first_col;
  double x[C];
  for (int c = C - 1; c >= 0; --c) {
    double v = yk[c] - s[c];
    for (int k = c + 1; k < C; ++k) v -= L[c][k] * x[k];
    x[c] = v * L[c][c];
    yk[c] = x[c];
  }
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

// Nodes of at most eight columns with a chunk of right-hand sides, straight on y: the columns'
// triangle in place on the node's own rows of y, then each row below updated once.
template <int C, int V>
void forward_small_block(const Node& nd, double* __restrict y, index_t column_end, const int* top_index,
                         double* __restrict top) {
  constexpr int W = 4 * V;
  using Ch = Chunk<V>;
  const double* __restrict L[C];
  for (int c = 0; c < C; ++c) L[c] = column(nd, c);
  double* __restrict yk = y + static_cast<std::size_t>(nd.first_col) * W;
  for (int c = 0; c < C; ++c) {
    Ch t = Ch::load(yk + c * W);
    for (int k = 0; k < c; ++k) {
      const Ch tk = Ch::load(yk + k * W);
      for (int v = 0; v < V; ++v) t.v[v] = t.v[v] - L[k][c] * tk.v[v];
    }
    for (int v = 0; v < V; ++v) t.v[v] *= L[c][c];
    t.store(yk + c * W);
  }
  const int* __restrict below = nd.below;
  // The rows below on H vectors of the chunk at a time, the columns' values in registers.
  constexpr int H = V < 2 ? V : 2;
  using P = Chunk<H>;
  for (int h = 0; h < V; h += H) {
    P t[C];
    for (int c = 0; c < C; ++c) t[c] = P::load(yk + c * W + 4 * h);
    for (int i = C; i < nd.rows; ++i) {
      const int row = below[i - C];
      double* dst = (row < column_end ? y + static_cast<std::size_t>(row) * W
                                      : top + static_cast<std::size_t>(top_index[row]) * W) +
                    4 * h;
      P x = P::load(dst);
      for (int c = 0; c < C; ++c)
        for (int v = 0; v < H; ++v) x.v[v] = x.v[v] - L[c][i] * t[c].v[v];
      x.store(dst);
    }
  }
}

template <int C, int V>
void backward_small_block(const Node& nd, double* __restrict y) {
  constexpr int W = 4 * V;
  using Ch = Chunk<V>;
  const double* __restrict L[C];
  for (int c = 0; c < C; ++c) L[c] = column(nd, c);
  double* __restrict yk = y + static_cast<std::size_t>(nd.first_col) * W;
  const int* __restrict below = nd.below;
  // The rows below, two columns at a time: y_c -= sum of L(i, c) y_i.
  for (int c = 0; c < C; c += 2) {
    const bool pair = c + 1 < C;
    Ch s0{}, s1{};
    for (int i = C; i < nd.rows; ++i) {
      const Ch x = Ch::load(y + static_cast<std::size_t>(below[i - C]) * W);
      for (int v = 0; v < V; ++v) s0.v[v] += L[c][i] * x.v[v];
      if (pair)
        for (int v = 0; v < V; ++v) s1.v[v] += L[c + 1][i] * x.v[v];
    }
    Ch x0 = Ch::load(yk + c * W);
    for (int v = 0; v < V; ++v) x0.v[v] -= s0.v[v];
    x0.store(yk + c * W);
    if (pair) {
      Ch x1 = Ch::load(yk + (c + 1) * W);
      for (int v = 0; v < V; ++v) x1.v[v] -= s1.v[v];
      x1.store(yk + (c + 1) * W);
    }
  }
  for (int c = C - 1; c >= 0; --c) {
    Ch x = Ch::load(yk + c * W);
    for (int k = c + 1; k < C; ++k) {
      const Ch xk = Ch::load(yk + k * W);
      for (int v = 0; v < V; ++v) x.v[v] = x.v[v] - L[c][k] * xk.v[v];
    }
    for (int v = 0; v < V; ++v) x.v[v] *= L[c][c];
    x.store(yk + c * W);
  }
}

// A chunk's columns of L in panels of four: each pass over the rows below applies four columns
// (w's rows, which outgrow L1 in wide nodes, are read and written once per four columns, not
// per column), on H vectors of the chunk at a time so that the panel's values of y stay in
// registers (four times H vectors).
template <int V>
void forward_block(const Node& nd, double* __restrict y, index_t column_end, const int* top_index,
                   double* __restrict top, double* __restrict w) {
  constexpr int W = 4 * V, H = V < 2 ? V : 2;
  using C = Chunk<V>;
  using P = Chunk<H>;
  const int cols = nd.cols, rows = nd.rows;
  double* __restrict yk = y + static_cast<std::size_t>(nd.first_col) * W;
  std::copy(yk, yk + cols * W, w);
  std::fill(w + cols * W, w + rows * W, 0.0);
  int j = 0;
  for (; j + 4 <= cols; j += 4) {
    const double* __restrict L0 = column(nd, j);
    const double* __restrict L1 = column(nd, j + 1);
    const double* __restrict L2 = column(nd, j + 2);
    const double* __restrict L3 = column(nd, j + 3);
    for (int h = 0; h < V; h += H) {
      double* __restrict wh = w + 4 * h;
      P t0 = P::load(wh + j * W), t1 = P::load(wh + (j + 1) * W), t2 = P::load(wh + (j + 2) * W),
        t3 = P::load(wh + (j + 3) * W);
      for (int k = 0; k < H; ++k) {
        t0.v[k] *= L0[j];
        t1.v[k] = (t1.v[k] - L0[j + 1] * t0.v[k]) * L1[j + 1];
        t2.v[k] = (t2.v[k] - L0[j + 2] * t0.v[k] - L1[j + 2] * t1.v[k]) * L2[j + 2];
        t3.v[k] = (t3.v[k] - L0[j + 3] * t0.v[k] - L1[j + 3] * t1.v[k] - L2[j + 3] * t2.v[k]) * L3[j + 3];
      }
      t0.store(wh + j * W);
      t1.store(wh + (j + 1) * W);
      t2.store(wh + (j + 2) * W);
      t3.store(wh + (j + 3) * W);
      for (int i = j + 4; i < rows; ++i) {
        P x = P::load(wh + i * W);
        for (int k = 0; k < H; ++k)
          x.v[k] = x.v[k] - L0[i] * t0.v[k] - L1[i] * t1.v[k] - L2[i] * t2.v[k] - L3[i] * t3.v[k];
        x.store(wh + i * W);
      }
    }
  }
  for (; j < cols; ++j) {
    const double* __restrict Lj = column(nd, j);
    C t = C::load(w + j * W);
    for (int k = 0; k < V; ++k) t.v[k] *= Lj[j];
    t.store(w + j * W);
    for (int i = j + 1; i < rows; ++i) {
      C x = C::load(w + i * W);
      for (int k = 0; k < V; ++k) x.v[k] = x.v[k] - Lj[i] * t.v[k];
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
  constexpr int W = 4 * V, H = V < 2 ? V : 2;
  using C = Chunk<V>;
  using P = Chunk<H>;
  const int cols = nd.cols, rows = nd.rows;
  double* __restrict yk = y + static_cast<std::size_t>(nd.first_col) * W;
  std::copy(yk, yk + cols * W, w);
  for (int i = cols; i < rows; ++i) {
    const double* src = y + static_cast<std::size_t>(nd.below[i - cols]) * W;
    std::copy(src, src + W, w + i * W);
  }
  int j = cols - 1;
  for (; j >= 3; j -= 4) {  // columns j-3 .. j
    const double* __restrict L3 = column(nd, j);
    const double* __restrict L2 = column(nd, j - 1);
    const double* __restrict L1 = column(nd, j - 2);
    const double* __restrict L0 = column(nd, j - 3);
    for (int h = 0; h < V; h += H) {
      double* __restrict wh = w + 4 * h;
      P s0{}, s1{}, s2{}, s3{};
      for (int i = j + 1; i < rows; ++i) {
        const P x = P::load(wh + i * W);
        for (int k = 0; k < H; ++k) {
          s0.v[k] += L0[i] * x.v[k];
          s1.v[k] += L1[i] * x.v[k];
          s2.v[k] += L2[i] * x.v[k];
          s3.v[k] += L3[i] * x.v[k];
        }
      }
      P x3 = P::load(wh + j * W), x2 = P::load(wh + (j - 1) * W), x1 = P::load(wh + (j - 2) * W),
        x0 = P::load(wh + (j - 3) * W);
      for (int k = 0; k < H; ++k) {
        x3.v[k] = (x3.v[k] - s3.v[k]) * L3[j];
        x2.v[k] = (x2.v[k] - s2.v[k] - L2[j] * x3.v[k]) * L2[j - 1];
        x1.v[k] = (x1.v[k] - s1.v[k] - L1[j - 1] * x2.v[k] - L1[j] * x3.v[k]) * L1[j - 2];
        x0.v[k] =
            (x0.v[k] - s0.v[k] - L0[j - 2] * x1.v[k] - L0[j - 1] * x2.v[k] - L0[j] * x3.v[k]) * L0[j - 3];
      }
      x3.store(wh + j * W);
      x2.store(wh + (j - 1) * W);
      x1.store(wh + (j - 2) * W);
      x0.store(wh + (j - 3) * W);
    }
  }
  for (; j >= 0; --j) {
    const double* __restrict Lj = column(nd, j);
    C s{};
    for (int i = j + 1; i < rows; ++i) {
      const C x = C::load(w + i * W);
      for (int k = 0; k < V; ++k) s.v[k] += Lj[i] * x.v[k];
    }
    C x = C::load(w + j * W);
    for (int k = 0; k < V; ++k) x.v[k] = (x.v[k] - s.v[k]) * Lj[j];
    x.store(w + j * W);
  }
  std::copy(w, w + cols * W, yk);
}

// Nodes of up to this many columns take the kernels straight on y (forward_small, ...).
constexpr int small_columns = 8;

// f.template operator()<C>() with C = cols, when 1 <= cols <= small_columns; false otherwise.
template <int C = 1, class F>
bool with_small_columns(int cols, F&& f) {
  if constexpr (C > small_columns) {
    return false;
  } else {
    if (cols != C) return with_small_columns<C + 1>(cols, f);
    f.template operator()<C>();
    return true;
  }
}

// The sweeps for a chunk of W right-hand sides (1, or a multiple of 4).
template <int W>
void forward(const Node& nd, double* y, index_t column_end, const int* top_index, double* top, double* w) {
  constexpr int V = W / 4;
  const bool small = with_small_columns(nd.cols, [&]<int C>() {
    if constexpr (W == 1)
      forward_small<C>(nd, y, column_end, top_index, top);
    else
      forward_small_block<C, V>(nd, y, column_end, top_index, top);
  });
  if (small) return;
  if constexpr (W == 1)
    forward1(nd, y, column_end, top_index, top, w);
  else
    forward_block<V>(nd, y, column_end, top_index, top, w);
}

template <int W>
void backward(const Node& nd, double* y, double* w) {
  constexpr int V = W / 4;
  const bool small = with_small_columns(nd.cols, [&]<int C>() {
    if constexpr (W == 1)
      backward_small<C>(nd, y);
    else
      backward_small_block<C, V>(nd, y);
  });
  if (small) return;
  if constexpr (W == 1)
    backward1(nd, y, w);
  else
    backward_block<V>(nd, y, w);
}

// Forward, L y = b: the nodes in increasing order, the factor read upwards; backward, Lᵀ x = y:
// in decreasing order, read downwards.
enum class Direction { forward, backward };

// One substitution over the nodes `ks`, in the order given (node(k) makes node k), with the
// factor prefetched ahead in that direction; u: the thread's update rows. A forward sweep sends
// the updates of rows at or beyond column_end to `top` (top_index: row → its place there); the
// top of the tree, and a factor solved serially, keep every row in y (column_end = n).
template <Direction D, int W, class Nodes, class NodeAt>
void sweep(const Nodes& ks, const NodeAt& node, double* y, double* u, index_t column_end = 0,
           const int* top_index = nullptr, double* top = nullptr) {
  Prefetch pf;
  for (const int k : ks) {
    const Node nd = node(k);
    if constexpr (D == Direction::forward) {
      pf.up(nd);
      forward<W>(nd, y, column_end, top_index, top, u);
    } else {
      pf.down(nd);
      backward<W>(nd, y, u);
    }
  }
}

}  // namespace

SupernodalSolve::SupernodalSolve(const Structure& factor, const Structure* fine) : factor_(factor) {
  const auto n = static_cast<std::size_t>(factor.n);
  const int ns = static_cast<int>(factor.nsuper);
  std::vector<int> supernode_of(n);
  for (int k = 0; k < ns; ++k)
    for (int c = factor.super[k]; c < factor.super[k + 1]; ++c) supernode_of[static_cast<std::size_t>(c)] = k;
  first_node_.assign(static_cast<std::size_t>(ns) + 1, 0);

  // Is every fine supernode inside one of the factor's, with the same permutation?
  bool nested = fine && fine->n == factor.n && fine->nsuper > 0;
  if (nested && (fine->perm != nullptr) != (factor.perm != nullptr)) nested = false;
  if (nested && factor.perm) nested = std::equal(factor.perm, factor.perm + n, fine->perm);
  for (index_t k = 0; nested && k < fine->nsuper; ++k)
    nested = supernode_of[static_cast<std::size_t>(fine->super[k])] ==
             supernode_of[static_cast<std::size_t>(fine->super[k + 1] - 1)];

  auto add_node = [&](int first_col, int last_col, const int* below, int nbelow) {
    const int cols = last_col - first_col;
    nodes_.push_back({first_col, cols, cols + nbelow, static_cast<int>(below_.size()), entries_});
    below_.insert(below_.end(), below, below + nbelow);
    entries_ += trapezoid(cols, cols + nbelow);
    max_rows_ = std::max(max_rows_, cols + nbelow);
  };
  if (nested) {
    // Chains of fine supernodes: k, k+1, ... while each is the next one's child, in one of the
    // factor's supernodes. A chain's rows are its columns and its last supernode's rows below
    // (a child's rows below are its parent's rows: the elimination tree's path property).
    const int* fs = fine->super;
    const int* fpi = fine->pi;
    auto below_of = [&](int k) { return fine->s + fpi[k] + (fs[k + 1] - fs[k]); };
    auto nbelow_of = [&](int k) { return (fpi[k + 1] - fpi[k]) - (fs[k + 1] - fs[k]); };
    const int nf = static_cast<int>(fine->nsuper);
    for (int k = 0; k < nf;) {
      int e = k;
      std::int64_t alone = trapezoid(fs[e + 1] - fs[e], fpi[e + 1] - fpi[e]);
      while (e + 1 < nf && nbelow_of(e) > 0 && below_of(e)[0] == fs[e + 1] &&
             supernode_of[static_cast<std::size_t>(fs[e + 1])] ==
                 supernode_of[static_cast<std::size_t>(fs[k])]) {
        const std::int64_t next_alone = alone + trapezoid(fs[e + 2] - fs[e + 1], fpi[e + 2] - fpi[e + 1]);
        const int cols = fs[e + 2] - fs[k];
        const std::int64_t chained = trapezoid(cols, cols + nbelow_of(e + 1));
        if (fs[e + 1] - fs[k] >= chain_columns &&
            static_cast<double>(chained - next_alone) > chain_zeros * static_cast<double>(chained))
          break;
        alone = next_alone;
        ++e;
      }
      add_node(fs[k], fs[e + 1], below_of(e), nbelow_of(e));
      k = e + 1;
    }
    // Every node's rows must be rows of its factor supernode (else: not the same factor).
    for (const NodeInfo& nd : nodes_) {
      const int K = supernode_of[static_cast<std::size_t>(nd.first_col)];
      const int* r = factor.s + factor.pi[K] + (factor.super[K + 1] - factor.super[K]);
      const int* end = factor.s + factor.pi[K + 1];
      for (int q = 0; q < nd.rows - nd.cols && nested; ++q) {
        const int row = below_[static_cast<std::size_t>(nd.below + q)];
        if (row < factor.super[K + 1]) continue;  // one of the supernode's own columns
        r = std::lower_bound(r, end, row);
        nested = r != end && *r == row;
      }
      if (!nested) break;
    }
  }
  if (!nested) {
    nodes_.clear();
    below_.clear();
    entries_ = 0;
    max_rows_ = 0;
    for (int k = 0; k < ns; ++k) {
      const int cols = factor.super[k + 1] - factor.super[k];
      add_node(factor.super[k], factor.super[k + 1], factor.s + factor.pi[k] + cols,
               factor.pi[k + 1] - factor.pi[k] - cols);
    }
  }
  for (std::size_t i = nodes_.size(); i-- > 0;)
    first_node_[static_cast<std::size_t>(supernode_of[static_cast<std::size_t>(nodes_[i].first_col)])] =
        static_cast<int>(i);
  first_node_[static_cast<std::size_t>(ns)] = static_cast<int>(nodes_.size());

  position_.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    position_[factor.perm ? static_cast<std::size_t>(factor.perm[i]) : i] = static_cast<int>(i);
  plan_subtrees();
}

std::size_t SupernodalSolve::bytes() const noexcept {
  return nodes_.capacity() * sizeof(NodeInfo) + parts_.capacity() * sizeof(Part) +
         (below_.capacity() + first_node_.capacity() + top_.capacity() + top_columns_.capacity() +
          top_index_.capacity() + position_.capacity()) *
             sizeof(int);
}

bool SupernodalSolve::pack(double* x) const {
  const int ns = static_cast<int>(factor_.nsuper);
  std::vector<int> at(
      static_cast<std::size_t>(max_rows_));  // a node's rows → their positions in its supernode
  bool zeros = true;
  for (int K = 0; K < ns; ++K) {
    const int k1 = factor_.super[K], rows_k = factor_.pi[K + 1] - factor_.pi[K];
    const int* rk = factor_.s + factor_.pi[K];
    const double* xk = x + factor_.px[K];
    for (int m = first_node_[static_cast<std::size_t>(K)]; m < first_node_[static_cast<std::size_t>(K) + 1];
         ++m) {
      const NodeInfo& nd = nodes_[static_cast<std::size_t>(m)];
      const int c0 = nd.first_col - k1;
      for (int q = 0; q < nd.cols; ++q) at[static_cast<std::size_t>(q)] = c0 + q;
      for (int q = nd.cols, p = c0 + nd.cols; q < nd.rows; ++q, ++p) {
        while (rk[p] != below_[static_cast<std::size_t>(nd.below + q - nd.cols)]) ++p;  // found (constructor)
        at[static_cast<std::size_t>(q)] = p;
      }
      // Column after column, each entry moved down or left in place: an entry is written at or
      // before where it was read, and every entry before that has been read.
      double* out = x + nd.offset;
      for (int j = 0; j < nd.cols; ++j) {
        const double* in = xk + static_cast<std::ptrdiff_t>(c0 + j) * rows_k;
        double* diagonal = out;
        int next = c0 + j;  // the column's first entry (the diagonal) in the supernode
        for (int q = j; q < nd.rows; ++q) {
          const int p = at[static_cast<std::size_t>(q)];
          for (; next < p; ++next) zeros &= in[next] == 0.0;
          *out++ = in[p];
          next = p + 1;
        }
        for (; next < rows_k; ++next) zeros &= in[next] == 0.0;
        *diagonal = 1.0 / *diagonal;  // the substitutions multiply (a positive pivot: CHOLMOD checked)
      }
    }
  }
  return zeros;
}

void SupernodalSolve::plan_subtrees() {
  const int nn = static_cast<int>(nodes_.size());
  const auto n = static_cast<std::size_t>(factor_.n);
  std::vector<int> node_of(n), parent(static_cast<std::size_t>(nn), -1), first(static_cast<std::size_t>(nn));
  std::vector<std::int64_t> work(static_cast<std::size_t>(nn));
  for (int k = 0; k < nn; ++k) {
    const NodeInfo& nd = nodes_[static_cast<std::size_t>(k)];
    for (int c = nd.first_col; c < nd.first_col + nd.cols; ++c) node_of[static_cast<std::size_t>(c)] = k;
    work[static_cast<std::size_t>(k)] = trapezoid(nd.cols, nd.rows);
    first[static_cast<std::size_t>(k)] = k;
  }
  bool postordered = true;
  std::vector<int> size(static_cast<std::size_t>(nn), 1);
  for (int k = 0; k < nn; ++k) {
    const NodeInfo& nd = nodes_[static_cast<std::size_t>(k)];
    if (nd.rows == nd.cols) continue;
    const int p = node_of[static_cast<std::size_t>(below_[static_cast<std::size_t>(nd.below)])];
    parent[static_cast<std::size_t>(k)] = p;
    if (p <= k) postordered = false;
  }
  for (int k = 0; k < nn && postordered; ++k) {
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
    heaviest_first_.clear();
    top_.resize(static_cast<std::size_t>(nn));
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
  std::vector<std::vector<int>> children(static_cast<std::size_t>(nn));
  using Item = std::pair<std::int64_t, int>;
  std::priority_queue<Item> heap;
  for (int k = 0; k < nn; ++k) {
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

  std::vector<char> in_part(static_cast<std::size_t>(nn), 0);
  for (int r : roots) {
    const int f = first[static_cast<std::size_t>(r)];
    const NodeInfo& root = nodes_[static_cast<std::size_t>(r)];
    parts_.push_back({f, r, root.first_col + root.cols, work[static_cast<std::size_t>(r)]});
    std::fill(in_part.begin() + f, in_part.begin() + r + 1, 1);
  }
  top_index_.assign(n, -1);
  for (int k = 0; k < nn; ++k) {
    if (in_part[static_cast<std::size_t>(k)]) continue;
    top_.push_back(k);
    const NodeInfo& nd = nodes_[static_cast<std::size_t>(k)];
    for (int c = nd.first_col; c < nd.first_col + nd.cols; ++c) {
      top_index_[static_cast<std::size_t>(c)] = static_cast<int>(top_columns_.size());
      top_columns_.push_back(c);
    }
  }
  heaviest_first_.resize(parts_.size());
  std::iota(heaviest_first_.begin(), heaviest_first_.end(), 0);
  std::stable_sort(heaviest_first_.begin(), heaviest_first_.end(), [&](int a, int b) {
    return parts_[static_cast<std::size_t>(a)].work > parts_[static_cast<std::size_t>(b)].work;
  });
  // Every row of a subtree beyond its columns must be a top column (ancestors only); a
  // structure that breaks this is solved serially.
  for (const Part& q : parts_)
    for (int k = q.first; k <= q.last; ++k) {
      const NodeInfo& nd = nodes_[static_cast<std::size_t>(k)];
      for (int i = 0; i < nd.rows - nd.cols; ++i) {
        const int row = below_[static_cast<std::size_t>(nd.below + i)];
        if (row >= q.column_end && top_index_[static_cast<std::size_t>(row)] < 0) {
          serial();
          return;
        }
      }
    }
}

std::unique_ptr<SupernodalSolve::Workspace> SupernodalSolve::borrow() const {
  {
    const std::lock_guard lock(pool_mutex_);
    if (!pool_.empty()) {
      std::unique_ptr<Workspace> w = std::move(pool_.back());
      pool_.pop_back();
      return w;
    }
  }
  return std::make_unique<Workspace>();
}

void SupernodalSolve::give_back(std::unique_ptr<Workspace> w) const {
  if (!w) return;
  const std::lock_guard lock(pool_mutex_);
  pool_.push_back(std::move(w));
}

template <int W>
void SupernodalSolve::solve_chunk(const double* x, double* y, double* buffers, int threads,
                                  Workspace& workspace) const {
  auto node = [this, x](int k) {
    const NodeInfo& i = nodes_[static_cast<std::size_t>(k)];
    return Node{
        i.first_col, i.cols, i.rows, x + i.offset, below_.data() + i.below, trapezoid(i.cols, i.rows)};
  };
  // Thread t of the team uses the t-th slice (a whole number of cache lines); the calling thread
  // the first.
  const std::size_t u_size = (static_cast<std::size_t>(max_rows_) * W + 7) / 8 * 8;
  double* const u_all = grow(workspace.u, u_size * static_cast<std::size_t>(std::max(threads, 1)));
  const index_t n = factor_.n;
  // The nodes above the subtrees (all of them, without subtrees), serially on the calling thread.
  auto solve_top = [&] {
    sweep<Direction::forward, W>(top_, node, y, u_all, n);
    sweep<Direction::backward, W>(std::views::reverse(top_), node, y, u_all);
  };
  if (parts_.empty()) return solve_top();
  const std::size_t ntop = top_columns_.size() * W;
  const int nparts = static_cast<int>(parts_.size());
  std::fill(buffers, buffers + ntop * static_cast<std::size_t>(nparts), 0.0);
  // Subtrees to threads: the heaviest first, each to the least loaded thread (the result does
  // not depend on it).
  std::vector<int>& owner = workspace.owner;
  std::vector<std::int64_t>& load = workspace.load;
  owner.assign(static_cast<std::size_t>(nparts), 0);
  if (threads > 1) {
    load.assign(static_cast<std::size_t>(threads), 0);
    for (int p : heaviest_first_) {
      const auto t = std::min_element(load.begin(), load.end()) - load.begin();
      owner[static_cast<std::size_t>(p)] = static_cast<int>(t);
      load[static_cast<std::size_t>(t)] += parts_[static_cast<std::size_t>(p)].work;
    }
  }
  const int* owners = owner.data();
  // Thread t of a team of `team` runs the subtrees dealt to t, t + team, ...: OpenMP may give a
  // smaller team than asked (OMP_DYNAMIC, OMP_THREAD_LIMIT, nested regions).
  auto subtrees = [&](int t, int team, Direction direction) {
    double* u = u_all + u_size * static_cast<std::size_t>(t);
    for (int p = 0; p < nparts; ++p) {
      if (owners[p] % team != t) continue;
      const Part& q = parts_[static_cast<std::size_t>(p)];
      const auto ks = std::views::iota(q.first, q.last + 1);
      if (direction == Direction::forward)
        sweep<Direction::forward, W>(ks, node, y, u, q.column_end, top_index_.data(),
                                     buffers + ntop * static_cast<std::size_t>(p));
      else
        sweep<Direction::backward, W>(std::views::reverse(ks), node, y, u);
    }
  };
  auto all_subtrees = [&](Direction direction) {
    if (threads == 1) return subtrees(0, 1, direction);
#pragma omp parallel num_threads(threads)
    subtrees(omp_get_thread_num(), omp_get_num_threads(), direction);
  };
  all_subtrees(Direction::forward);
  // The subtrees' updates of the top rows, in subtree order; then the top, serially.
  for (std::size_t c = 0; c < top_columns_.size(); ++c) {
    double* dst = y + static_cast<std::size_t>(top_columns_[c]) * W;
    for (int p = 0; p < nparts; ++p) {
      const double* src = buffers + ntop * static_cast<std::size_t>(p) + c * W;
      for (int r = 0; r < W; ++r) dst[r] += src[r];
    }
  }
  solve_top();
  all_subtrees(Direction::backward);
}

void SupernodalSolve::solve(const double* x, const double* B, double* X, index_t nrhs) const {
  const auto n = static_cast<std::size_t>(factor_.n);
  if (n == 0 || nrhs <= 0) return;
  std::unique_ptr<Workspace> workspace = borrow();
  struct GiveBack {
    const SupernodalSolve* plan;
    std::unique_ptr<Workspace>* w;
    ~GiveBack() { plan->give_back(std::move(*w)); }
  } give_back_on_exit{this, &workspace};
  // Threads for the subtrees (fem/threads.hpp: none inside a parallel region, none on cores
  // other processes are running on); a factor below parallel_entries has no subtrees.
  const int threads = parts_.empty()
                          ? 1
                          : std::min(threads_for(static_cast<std::size_t>(entries_), parallel_entries / 2),
                                     static_cast<int>(parts_.size()));
  for (index_t c0 = 0; c0 < nrhs;) {
    // Chunks of up to 16 columns: one sweep over the factor per chunk, each entry of L applied
    // to a row of the chunk (contiguous: y is row-major within a chunk).
    // Widths 1, 4, 8, 16; a partial chunk is padded with zero columns (at most a third).
    const index_t left = nrhs - c0;
    const int w = left >= 12 ? 16 : left >= 6 ? 8 : left >= 2 ? 4 : 1;
    const int used = static_cast<int>(std::min<index_t>(left, w));
    double* y = grow(workspace->y, n * static_cast<std::size_t>(w) + 8);
    y += (64 - reinterpret_cast<std::uintptr_t>(y) % 64) % 64 / sizeof(double);  // rows on cache lines
    double* buffers =
        grow(workspace->buffers, top_columns_.size() * parts_.size() * static_cast<std::size_t>(w));
    // In and out through the permutation. One column: gathered (random reads from b). A chunk:
    // in the order of b's rows, each row of the chunk written whole (the columns are read as
    // `used` sequential streams, where gathering would miss the cache once per entry).
    const int* perm = factor_.perm;
    const double* b0 = B + static_cast<std::size_t>(c0) * n;
    if (w == 1) {
      for (std::size_t i = 0; i < n; ++i) y[i] = b0[perm ? perm[i] : i];
    } else {
      std::size_t j = 0;
#ifdef __AVX__
      if (w == 16) {
        // Four rows of b at a time: a 4 × 4 block of four columns loaded and transposed, each
        // row of y written whole, past the cache (it is read again only by the sweep, later).
        for (; j + 4 <= n; j += 4) {
          double* rows[4];
          for (int q = 0; q < 4; ++q) rows[q] = y + static_cast<std::size_t>(position_[j + q]) * 16;
          for (int r = 0; r < 16; r += 4) {
            __m256d a[4];
            for (int k = 0; k < 4; ++k)
              a[k] = r + k < used ? _mm256_loadu_pd(b0 + static_cast<std::size_t>(r + k) * n + j)
                                  : _mm256_setzero_pd();
            const __m256d t0 = _mm256_unpacklo_pd(a[0], a[1]), t1 = _mm256_unpackhi_pd(a[0], a[1]);
            const __m256d t2 = _mm256_unpacklo_pd(a[2], a[3]), t3 = _mm256_unpackhi_pd(a[2], a[3]);
            _mm256_stream_pd(rows[0] + r, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_stream_pd(rows[1] + r, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_stream_pd(rows[2] + r, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_stream_pd(rows[3] + r, _mm256_permute2f128_pd(t1, t3, 0x31));
          }
        }
        _mm_sfence();
      }
#endif
      for (; j < n; ++j) {
        if (j + 16 < n) {
          const char* ahead =
              reinterpret_cast<const char*>(y + static_cast<std::size_t>(position_[j + 16]) * w);
          for (int b = 0; b < w * 8; b += 64) __builtin_prefetch(ahead + b, 1, 3);
        }
        double* row = y + static_cast<std::size_t>(position_[j]) * w;
        for (int r = 0; r < used; ++r) row[r] = b0[static_cast<std::size_t>(r) * n + j];
        for (int r = used; r < w; ++r) row[r] = 0.0;
      }
    }
    switch (w) {
      case 16:
        solve_chunk<16>(x, y, buffers, threads, *workspace);
        break;
      case 8:
        solve_chunk<8>(x, y, buffers, threads, *workspace);
        break;
      case 4:
        solve_chunk<4>(x, y, buffers, threads, *workspace);
        break;
      default:
        solve_chunk<1>(x, y, buffers, threads, *workspace);
        break;
    }
    double* x0 = X + static_cast<std::size_t>(c0) * n;
    if (w == 1) {
      for (std::size_t i = 0; i < n; ++i) x0[perm ? perm[i] : i] = y[i];
    } else {
      std::size_t j = 0;
#ifdef __AVX__
      if (w == 16) {  // four rows of y at a time, transposed into four columns of x
        for (; j + 4 <= n; j += 4) {
          if (j + 20 <= n)
            for (int q = 0; q < 4; ++q) {
              const double* ahead = y + static_cast<std::size_t>(position_[j + 16 + q]) * 16;
              __builtin_prefetch(ahead, 0, 3);
              __builtin_prefetch(ahead + 8, 0, 3);
            }
          const double* rows[4];
          for (int q = 0; q < 4; ++q) rows[q] = y + static_cast<std::size_t>(position_[j + q]) * 16;
          for (int r = 0; r < used; r += 4) {
            const __m256d a0 = _mm256_load_pd(rows[0] + r), a1 = _mm256_load_pd(rows[1] + r);
            const __m256d a2 = _mm256_load_pd(rows[2] + r), a3 = _mm256_load_pd(rows[3] + r);
            const __m256d t0 = _mm256_unpacklo_pd(a0, a1), t1 = _mm256_unpackhi_pd(a0, a1);
            const __m256d t2 = _mm256_unpacklo_pd(a2, a3), t3 = _mm256_unpackhi_pd(a2, a3);
            const __m256d c[4] = {_mm256_permute2f128_pd(t0, t2, 0x20), _mm256_permute2f128_pd(t1, t3, 0x20),
                                  _mm256_permute2f128_pd(t0, t2, 0x31), _mm256_permute2f128_pd(t1, t3, 0x31)};
            for (int k = 0; k < 4 && r + k < used; ++k)
              _mm256_storeu_pd(x0 + static_cast<std::size_t>(r + k) * n + j, c[k]);
          }
        }
      }
#endif
      for (; j < n; ++j) {
        if (j + 16 < n) {
          const char* ahead =
              reinterpret_cast<const char*>(y + static_cast<std::size_t>(position_[j + 16]) * w);
          for (int b = 0; b < w * 8; b += 64) __builtin_prefetch(ahead + b, 0, 3);
        }
        const double* row = y + static_cast<std::size_t>(position_[j]) * w;
        for (int r = 0; r < used; ++r) x0[static_cast<std::size_t>(r) * n + j] = row[r];
      }
    }
    c0 += used;
  }
}

}  // namespace fem::solve::detail
