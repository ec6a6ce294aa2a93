// Internal: the forward and backward substitutions with a supernodal Cholesky factor, ours
// rather than CHOLMOD's cholmod_solve2 (one BLAS call per supernode and copies through its
// workspace: about 5 GB/s of factor read, where a solve is a stream over the factor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fem/csr.hpp>
#include <vector>

namespace fem::solve::detail {

/// The solves with a supernodal factor L, P A Pᵀ = L Lᵀ, in CHOLMOD's layout (32-bit indices):
/// supernode k holds the columns super[k] .. super[k+1]-1, their row indices s[pi[k] .. pi[k+1])
/// (its own columns first, then the rows below) and their values column-major from x[px[k]],
/// with leading dimension pi[k+1] - pi[k]; perm[i] is the row of A placed i-th (nullptr: none).
///
/// Made once per symbolic analysis, from its arrays (borrowed: they must outlive this object),
/// and used with the values of every numeric factorization of that structure. A solve streams
/// the factor once forward and once backward; nothing is allocated after a thread's first solve
/// (per-thread workspaces), and concurrent solves are safe.
///
/// Parallel solves run over independent subtrees of the supernodal elimination tree. The split
/// depends on the structure only, never on the thread count, and each subtree's updates to the
/// rows above it go to its own buffer, summed in subtree order: the result is bitwise the same
/// with any number of threads.
class SupernodalSolve {
 public:
  struct Structure {
    index_t n = 0, nsuper = 0;
    const int *super = nullptr, *pi = nullptr, *px = nullptr, *s = nullptr, *perm = nullptr;
  };
  explicit SupernodalSolve(const Structure& structure);

  /// X = A⁻¹ B with the factor values `x`; B and X are column-major n × nrhs (X may be B).
  /// Runs on up to omp_get_max_threads() threads (one inside a parallel region).
  void solve(const double* x, const double* B, double* X, index_t nrhs) const;

  /// Stored entries of the factor, explicit zeros of relaxed supernodes included: what a
  /// forward or a backward substitution reads.
  std::int64_t entries() const noexcept { return entries_; }
  /// Independent subtrees the solve runs in parallel (0: one serial sweep; small factors).
  int subtrees() const noexcept { return static_cast<int>(parts_.size()); }

 private:
  struct Part {
    int first, last;     // supernodes first..last (a subtree, postordered)
    index_t column_end;  // its columns end here; rows at or beyond belong to the top
    std::int64_t work;   // stored entries
  };
  template <int W>
  void solve_chunk(const double* x, double* y, double* buffers, int threads) const;

  Structure st_;
  std::int64_t entries_ = 0;
  int max_rows_ = 0;              // the most rows of a supernode
  std::vector<Part> parts_;       // independent subtrees, in postorder
  std::vector<int> top_;          // the supernodes above them (all, when parts_ is empty)
  std::vector<int> top_columns_;  // the columns of the top supernodes, increasing
  std::vector<int> top_index_;    // column → its index in top_columns_ (only those are read)
  std::vector<int> position_;     // row of A → its position in P A Pᵀ (the inverse of perm)
};

}  // namespace fem::solve::detail
