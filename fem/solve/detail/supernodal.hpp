// Internal: the forward and backward substitutions with a supernodal Cholesky factor, ours
// rather than CHOLMOD's cholmod_solve2 (one BLAS call per supernode and copies through its
// workspace: about 6 GB/s of factor read, where a solve is a stream over the factor), on the
// factor repacked in place for the solve (docs/solve.md, "The substitutions").
#pragma once

#include <cstddef>
#include <cstdint>
#include <fem/csr.hpp>
#include <memory>
#include <mutex>
#include <vector>

namespace fem::solve::detail {

/// The solves with a supernodal factor L, P A Pᵀ = L Lᵀ.
///
/// CHOLMOD factorizes in relaxed supernodes: dense blocks that hold explicit zeros where columns
/// of different structure were merged (fewer, larger BLAS calls), and the upper triangle of
/// every diagonal block. A solve reads each stored entry twice and does two flops with it, so
/// the zeros cost as much as the nonzeros. pack() therefore rewrites a numeric factor, in place,
/// into the solve's layout: the nodes are the supernodes of the same factor without relaxation
/// (the fundamental supernodes of a second symbolic analysis with the same permutation; nested
/// in CHOLMOD's), chained up to a few columns, and each node keeps only its lower trapezoid,
/// column after column. On P1 Poisson with 1.05M DOFs that is 63M entries where CHOLMOD stores
/// 102.5M. The layout depends on the structure only: made once per symbolic analysis, shared by
/// every numeric factorization of it.
///
/// A solve streams the packed factor once forward and once backward; nothing is allocated after
/// the first solves (workspaces lent from a pool kept with the plan), and concurrent solves are
/// safe. Parallel
/// solves run over independent subtrees of the nodes' elimination tree. The split depends on
/// the structure only, never on the thread count, and each subtree's updates to the rows above
/// it go to its own buffer, summed in subtree order: the result is bitwise the same with any
/// number of threads.
class SupernodalSolve {
 public:
  /// A supernodal structure in CHOLMOD's layout (32-bit indices): supernode k holds the columns
  /// super[k] .. super[k+1]-1, their row indices s[pi[k] .. pi[k+1]) (its own columns first,
  /// then the rows below) and their values column-major from x[px[k]], with leading dimension
  /// pi[k+1] - pi[k]; perm[i] is the row of A placed i-th (nullptr: none).
  struct Structure {
    index_t n = 0, nsuper = 0;
    const int *super = nullptr, *pi = nullptr, *px = nullptr, *s = nullptr, *perm = nullptr;
  };

  /// `factor`: the structure of the numeric factors (borrowed: it must outlive this object).
  /// `fine`: the same factor's supernodes without relaxation, with the same permutation (read
  /// here only); nullptr, or one that is not nested in `factor`'s supernodes: the nodes are
  /// `factor`'s own supernodes (only their upper triangles are dropped).
  SupernodalSolve(const Structure& factor, const Structure* fine);

  /// Rewrites x, a numeric factor in `factor`'s layout, in place into the solve's layout (the
  /// first entries() values). False, with x unusable, if an entry the layout drops is not zero:
  /// the relaxed supernodes' extra entries are exact zeros whenever the factor is finite.
  bool pack(double* x) const;

  /// X = A⁻¹ B with a packed factor; B and X are column-major n × nrhs (X may be B). Runs on the
  /// threads fem::threads_for allows (one inside a parallel region).
  void solve(const double* packed, const double* B, double* X, index_t nrhs) const;

  /// Entries of the packed factor: what a forward or a backward substitution reads.
  std::int64_t entries() const noexcept { return entries_; }
  /// Nodes of the solve's layout.
  std::int64_t nodes() const noexcept { return static_cast<std::int64_t>(nodes_.size()); }
  /// Row indices the solve reads (below the nodes' diagonal blocks).
  std::int64_t row_indices() const noexcept { return static_cast<std::int64_t>(below_.size()); }
  /// Independent subtrees the solve runs in parallel (0: one serial sweep; small factors).
  int subtrees() const noexcept { return static_cast<int>(parts_.size()); }
  /// Memory of the layout and the plan (the packed values are the factor's own).
  std::size_t bytes() const noexcept;

 private:
  struct NodeInfo {
    int first_col, cols, rows;  // columns first_col .. first_col + cols - 1; rows (own included)
    int below;                  // its rows below the diagonal block: below_[below ...]
    std::int64_t offset;        // its first entry in the packed factor
  };
  struct Part {
    int first, last;     // nodes first..last (a subtree, postordered)
    index_t column_end;  // its columns end here; rows at or beyond belong to the top
    std::int64_t work;   // entries
  };
  // Everything a solve writes besides X (the chunk, n × 16 doubles at most; the subtrees'
  // buffers; each thread's update rows), lent from a pool kept with the plan: concurrent solves
  // each get their own, and they are freed with the plan. A thread-local one would outlive the
  // factorization (134 MB per thread at 1M DOFs), on OpenMP threads that never exit.
  struct Workspace {
    std::vector<double> y, buffers;
    std::vector<double> u;  // threads × (max_rows_ × W, rounded to cache lines)
    std::vector<int> owner;
    std::vector<std::int64_t> load;
  };
  template <int W>
  void solve_chunk(const double* x, double* y, double* buffers, int threads, Workspace& workspace) const;
  std::unique_ptr<Workspace> borrow() const;
  void give_back(std::unique_ptr<Workspace> w) const;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> pool_;
  void plan_subtrees();

  Structure factor_;
  std::int64_t entries_ = 0;
  int max_rows_ = 0;                 // the most rows of a node
  std::vector<NodeInfo> nodes_;      // in column order
  std::vector<int> below_;           // the nodes' row indices below their diagonal blocks
  std::vector<int> first_node_;      // factor supernode k → its first node (nsuper + 1)
  std::vector<Part> parts_;          // independent subtrees, in postorder
  std::vector<int> heaviest_first_;  // parts_ by decreasing work
  std::vector<int> top_;             // the nodes above them (all, when parts_ is empty)
  std::vector<int> top_columns_;     // the columns of the top nodes, increasing
  std::vector<int> top_index_;       // column → its index in top_columns_ (only those are read)
  std::vector<int> position_;        // row of A → its position in P A Pᵀ (the inverse of perm)
};

}  // namespace fem::solve::detail
