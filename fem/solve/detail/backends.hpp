// Internal: the backend factories and helpers shared by the backend sources and the cache.
#pragma once

#include <cstdint>
#include <fem/solve/solve.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fem::solve::detail {

std::unique_ptr<Factorization> make_cholmod(const Options& options);
/// The inertia of A from a supernodal LDLᵀ (no pivoting) on `cholmod`'s analysis of A's pattern
/// (a CHOLMOD Symbolic); throws NumericalError when the analysis holds no factor (too large).
Inertia supernodal_ldlt_inertia(const Symbolic& cholmod, const CsrMatrix& A);
std::unique_ptr<Factorization> make_umfpack(const Options& options);
std::unique_ptr<Factorization> make_klu(const Options& options);
std::unique_ptr<Factorization> make_ldlt(const Options& options);
std::unique_ptr<Factorization> make_lu(const Options& options);
std::unique_ptr<Factorization> make_automatic(const Options& options);

/// The triangular solves of a CHOLMOD factorization (for tests and benchmarks).
struct SupernodalInfo {
  bool ours = false;             ///< solved by detail::SupernodalSolve on the packed factor
  int subtrees = 0;              ///< independent subtrees solved in parallel (0: one serial sweep)
  std::int64_t entries = 0;      ///< entries a substitution reads (the packed factor's, when ours)
  std::int64_t stored = 0;       ///< entries CHOLMOD allocates (relaxed supernodes, whole blocks)
  std::int64_t supernodes = 0;   ///< CHOLMOD's (relaxed) supernodes
  std::int64_t nodes = 0;        ///< the solve layout's nodes
  std::int64_t row_indices = 0;  ///< the solve reads, below the nodes' diagonal blocks
};
/// Of `f`, a factorized CHOLMOD factorization; all zero for any other.
SupernodalInfo supernodal_info(const Factorization& f);

/// CHOLMOD's own numeric factorization of A in the symbolic analysis of `f` (an analyzed CHOLMOD
/// factorization), left in CHOLMOD's layout, and cholmod_solve2 with it: the same factor our
/// packed one holds, solved by CHOLMOD, the reference our substitutions are checked against.
class CholmodReference {
 public:
  CholmodReference(const Factorization& f, const CsrMatrix& A);
  ~CholmodReference();
  CholmodReference(const CholmodReference&) = delete;
  CholmodReference& operator=(const CholmodReference&) = delete;
  /// B, X column-major n × nrhs.
  SolveReport solve(std::span<const double> B, std::span<double> X, index_t nrhs) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The automatic backend's policy, the one place it is written: Cholesky (CHOLMOD, else Eigen's
/// LDLT) first for a symmetric matrix, then LU (UMFPACK, else Eigen's LU); a candidate that
/// fails with a status that another one may not meet (not_positive_definite, singular) falls
/// back to the next.
std::vector<Backend> automatic_backends(const CsrMatrix& matrix);
bool may_fall_back(Status status) noexcept;

/// A matrix of the store with its factorization at the matrix's current version (`computed`:
/// made by this call). Counts the factorization counters but no cache hit or miss.
struct CachedFactorization {
  std::shared_ptr<const CsrMatrix> matrix;
  std::shared_ptr<const Factorization> factorization;
  bool computed = false;
};
CachedFactorization cached_factorization(Store& store, const std::string& key, const Options& options,
                                         std::shared_ptr<const Factorization> retired = nullptr);

/// X = A⁻¹B (or A⁻ᵀB) with `f`, a factorization of `matrix` (needed only for a residual): data made
/// compatible with a null space at this call's tolerance; with `check`, the residual measured (and refined
/// where `options` ask) and an answer the residual refuses reported (Options::max_relative_residual).
SolveReport checked_solve(const Factorization& f, const CsrMatrix* matrix, std::span<const double> B,
                          std::span<double> X, index_t nrhs, bool transpose, const Options& options,
                          bool check);

/// The ordering `requested` resolves to for `backend` on `pattern` (never automatic).
Ordering resolve_ordering(Backend backend, Ordering requested, const CsrPattern& pattern);

/// METIS nested dissection of the graph of A + Aᵀ (CSR/CSC pattern, n × n), as new → old:
/// perm[k] = the original index placed k-th. Throws NotCompiled without METIS.
std::vector<int> metis_order(int n, const int* offsets, const int* indices);

/// First NaN/Inf entry as a failed Result, or success.
Result check_finite(const CsrMatrix& matrix);
/// The first NaN/Inf entry of right-hand sides (n × nrhs, column-major) as non_finite_input
/// naming the entry (and the column when nrhs > 1), or success: bad data, not a singular matrix.
SolveReport check_finite(std::span<const double> data, index_t n, index_t nrhs, Backend backend);

/// Checks the right-hand sides of a singular system (n × nrhs, column-major, in place) against
/// its null space and removes their component along it: `incompatible` (naming the backend and
/// the defect) when a column's defect exceeds `tolerance` (rounding never does), else success
/// with the worst defect in compatibility_defect.
SolveReport make_data_compatible(const NullSpace& null_space, std::span<double> data, index_t nrhs,
                                 double tolerance, Backend backend);

/// The constant null space of a symmetric matrix whose every row sums to zero (relative to the
/// row's size), else nullptr. O(nnz); most matrices leave at their first rows.
std::shared_ptr<const NullSpace> constant_null_space(const CsrMatrix& matrix);

/// `out` = `matrix` with one unknown per null vector pinned (its row and column zeroed but for
/// the diagonal), those unknowns in `pinned`. A declared null space is checked first (symmetric
/// matrix, A z ≈ 0): a failed Result otherwise.
Result pin_null_space(const CsrMatrix& matrix, const NullSpace& null_space, std::vector<index_t>& pinned,
                      std::optional<CsrMatrix>& out, bool declared);

/// Account for live factor bytes (adds `delta`).
void add_live_factor_bytes(std::int64_t delta) noexcept;

// --- too large is said early: predictions of the symbolic analysis against the memory -------

/// Nonzeros (diagonal included) of the Cholesky factor of P (A + Aᵀ) Pᵀ, for the n × n pattern
/// (offsets, indices: CSR or CSC alike; the diagonal and duplicates do not matter) and `order`
/// new → old (order[k] = the index placed k-th; nullptr: natural). From the elimination tree
/// and the column counts (Gilbert, Ng and Peyton's skeleton algorithm, as CSparse's cs_counts):
/// O(nnz α(n)) time, 2 nnz + 6n integers of memory, no factor. Exact for a symmetric
/// factorization with that ordering; for LU without pivoting L + U has 2 × this − n.
std::int64_t cholesky_nonzeros(index_t n, const index_t* offsets, const index_t* indices,
                               const index_t* order);

/// What a symbolic analysis predicts of the numeric factorization.
struct Prediction {
  double nonzeros = -1;        ///< of the factors (L, or L + U); < 0: unknown
  double factor_bytes = -1;    ///< the numeric factorization's memory; < 0: no prediction
  double workspace_bytes = 0;  ///< the backend's work arrays while factorizing, where known
  std::string basis;           ///< where it comes from, e.g. "predicted by CHOLMOD's symbolic analysis"
};

/// The prediction times this must fit in fem::memory_available(): 20% above the factor and the
/// workspace the backends state, for what no estimate covers (allocator overhead and
/// fragmentation, BLAS buffers, the solve's vectors, a pinned copy of the matrix).
inline constexpr double memory_safety_factor = 1.2;

/// Status::too_large, with the prediction against the memory available and what to do, when
/// (factor + workspace) × memory_safety_factor exceeds fem::memory_available(); success
/// otherwise and without a prediction. Called before the numeric factorization allocates.
Result check_fits(Backend backend, Ordering ordering, const Prediction& prediction);
/// What a backend's out-of-memory status says: the predicted factor against what was available.
Result out_of_memory(Backend backend, const Prediction& prediction);

/// The reason of a factorization refused for its size (`what`: why, e.g. "more than ... can
/// index"), ending with what to do instead.
std::string too_large_reason(Backend backend, Ordering ordering, const Prediction& prediction,
                             std::string_view what);

/// 3.1e9, 2.4e6; below a million the integer.
std::string format_count(double count);

}  // namespace fem::solve::detail
