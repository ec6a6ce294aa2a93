// Internal: the backend factories and helpers shared by the backend sources and the cache.
#pragma once

#include <fem/solve/solve.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace fem::solve::detail {

std::unique_ptr<Factorization> make_cholmod(const Options& options);
std::unique_ptr<Factorization> make_umfpack(const Options& options);
std::unique_ptr<Factorization> make_klu(const Options& options);
std::unique_ptr<Factorization> make_ldlt(const Options& options);
std::unique_ptr<Factorization> make_lu(const Options& options);
std::unique_ptr<Factorization> make_automatic(const Options& options);

/// The ordering `requested` resolves to for `backend` on `pattern` (never automatic).
Ordering resolve_ordering(Backend backend, Ordering requested, const CsrPattern& pattern);

/// METIS nested dissection of the graph of A + Aᵀ (CSR/CSC pattern, n × n), as new → old:
/// perm[k] = the original index placed k-th. Throws NotCompiled without METIS.
std::vector<int> metis_order(int n, const int* offsets, const int* indices);

/// First NaN/Inf entry as a failed Result, or success.
Result check_finite(const CsrMatrix& matrix);

/// A compatibility defect this small is rounding (of Σ z_i b_i against Σ |z_i b_i|), accepted
/// whatever the tolerance.
inline constexpr double rounding_defect = 1e-10;

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

}  // namespace fem::solve::detail
