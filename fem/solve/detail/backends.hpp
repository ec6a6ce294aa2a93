// Internal: the backend factories and helpers shared by the backend sources and the cache.
#pragma once

#include <fem/solve/solve.hpp>

#include <memory>
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

/// Account for live factor bytes (adds `delta`).
void add_live_factor_bytes(std::int64_t delta) noexcept;

}  // namespace fem::solve::detail
