// Test matrices from finite-difference stencils: 2D/3D Laplacians (SPD), a 2D elasticity-like
// vector operator (SPD, coupled), a shifted Laplacian (symmetric indefinite) and
// convection–diffusion (unsymmetric).
#pragma once

#include <cmath>
#include <fem/csr.hpp>
#include <fem/solve/solve.hpp>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace fem::solve::test {

/// Every backend this build has.
inline std::vector<Backend> backends() {
  std::vector<Backend> v{Backend::automatic, Backend::ldlt, Backend::lu};
  for (Backend b : {Backend::cholmod, Backend::umfpack, Backend::klu})
    if (available(b)) v.push_back(b);
  return v;
}

/// Builds a CSR matrix from (row, col, value) triplets, summing duplicates.
inline CsrMatrix from_entries(index_t n, const std::vector<std::map<index_t, double>>& rows) {
  std::vector<index_t> offsets{0}, cols;
  std::vector<double> values;
  for (index_t i = 0; i < n; ++i) {
    for (auto [j, v] : rows[static_cast<std::size_t>(i)]) {
      cols.push_back(j);
      values.push_back(v);
    }
    offsets.push_back(static_cast<index_t>(cols.size()));
  }
  return CsrMatrix(std::make_shared<const CsrPattern>(n, n, std::move(offsets), std::move(cols)),
                   std::move(values));
}

/// 5-point Laplacian on an m × m grid plus `shift` on the diagonal; `convection` adds an
/// upwind-free central first-order term (unsymmetric) in x.
inline CsrMatrix laplacian_2d(index_t m, double shift = 0.0, double convection = 0.0) {
  const index_t n = m * m;
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t y = 0; y < m; ++y)
    for (index_t x = 0; x < m; ++x) {
      const index_t i = y * m + x;
      auto& r = rows[static_cast<std::size_t>(i)];
      r[i] += 4.0 + shift;
      if (x > 0) r[i - 1] += -1.0 - convection;
      if (x + 1 < m) r[i + 1] += -1.0 + convection;
      if (y > 0) r[i - m] += -1.0;
      if (y + 1 < m) r[i + m] += -1.0;
    }
  return from_entries(n, rows);
}

inline CsrMatrix laplacian_3d(index_t m) {
  const index_t n = m * m * m;
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t z = 0; z < m; ++z)
    for (index_t y = 0; y < m; ++y)
      for (index_t x = 0; x < m; ++x) {
        const index_t i = (z * m + y) * m + x;
        auto& r = rows[static_cast<std::size_t>(i)];
        r[i] += 6.0;
        if (x > 0) r[i - 1] -= 1.0;
        if (x + 1 < m) r[i + 1] -= 1.0;
        if (y > 0) r[i - m] -= 1.0;
        if (y + 1 < m) r[i + m] -= 1.0;
        if (z > 0) r[i - m * m] -= 1.0;
        if (z + 1 < m) r[i + m * m] -= 1.0;
      }
  return from_entries(n, rows);
}

/// Two displacement components per node: Laplacians plus a symmetric coupling through the
/// mixed differences (like λ∇(∇·u)), SPD by diagonal dominance of the blocks.
inline CsrMatrix elasticity_2d(index_t m) {
  const index_t nodes = m * m, n = 2 * nodes;
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t y = 0; y < m; ++y)
    for (index_t x = 0; x < m; ++x) {
      const index_t v = y * m + x;
      for (index_t c = 0; c < 2; ++c) {
        const index_t i = 2 * v + c;
        auto& r = rows[static_cast<std::size_t>(i)];
        r[i] += 5.0;
        if (x > 0) r[2 * (v - 1) + c] -= 1.0;
        if (x + 1 < m) r[2 * (v + 1) + c] -= 1.0;
        if (y > 0) r[2 * (v - m) + c] -= 1.0;
        if (y + 1 < m) r[2 * (v + m) + c] -= 1.0;
        r[2 * v + (1 - c)] += 0.5;  // symmetric coupling of the components
      }
    }
  return from_entries(n, rows);
}

/// The same pattern with new values (scaled and diagonally perturbed, keeps the matrix class).
inline CsrMatrix new_values(const CsrMatrix& a, double scale) {
  std::vector<double> v(a.values().begin(), a.values().end());
  for (index_t i = 0; i < a.rows(); ++i) {
    const auto p = a.pattern().find(i, i);
    for (index_t q = a.pattern().row_offsets()[i]; q < a.pattern().row_offsets()[i + 1]; ++q)
      v[static_cast<std::size_t>(q)] *= scale;
    if (p >= 0) v[static_cast<std::size_t>(p)] += 0.01 * scale;
  }
  return CsrMatrix(a.pattern_ptr(), std::move(v));
}

inline std::vector<double> random_vector(std::size_t n, unsigned seed = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

inline double relative_residual(const CsrMatrix& a, std::span<const double> x, std::span<const double> b,
                                bool transpose = false) {
  std::vector<double> r(b.size());
  if (transpose)
    a.multiply_transpose(x, r);
  else
    a.multiply(x, r);
  double s = 0, t = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    s += (b[i] - r[i]) * (b[i] - r[i]);
    t += b[i] * b[i];
  }
  return std::sqrt(s / t);
}

}  // namespace fem::solve::test
