// Singular matrices with a null space: detecting the constants of a pure Neumann problem, and
// pinning one unknown per null vector so that the same pattern factorizes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fem/norm.hpp>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <limits>

namespace fem::solve {

SolveReport detail::make_data_compatible(const NullSpace& null_space, std::span<double> data, index_t nrhs,
                                         double tolerance, Backend backend) {
  const auto n = static_cast<std::size_t>(null_space.size());
  SolveReport r;
  r.compatibility_defect = 0;
  for (index_t k = 0; k < nrhs; ++k) {
    const std::span<double> column = data.subspan(static_cast<std::size_t>(k) * n, n);
    const double defect = null_space.defect(column);
    r.compatibility_defect = std::max(r.compatibility_defect, defect);
    if (!(defect <= std::max(tolerance, null_space.rounding_defect()))) {
      r.status = Status::incompatible;
      r.compatibility_defect = defect;
      // In the problem's words, the one message of every front end: the constants of a scalar
      // problem (zᵀb = Σ b_i = ∫f + ∫g: the basis functions sum to 1) or rigid motions.
      const std::string which = nrhs > 1 ? fmt::format(" (right-hand side {})", k) : "";
      if (null_space.description() == "constant") {
        double sum = 0;
        for (std::size_t i = 0; i < n; ++i) sum += null_space.vector(0)[i] * column[i];
        r.reason = fmt::format(
            "without a Dirichlet condition the constants are free, and the problem has a solution only if "
            "the "
            "data balance (∫f + ∫g = 0), but ∫f + ∫g = {:.6g}{} (relative defect {:.3g} > tolerance {:.3g}): "
            "impose a Dirichlet condition on some boundary, or give a source and fluxes whose integrals "
            "cancel",
            sum, which, defect, tolerance);
      } else {
        r.reason = fmt::format(
            "the constraints leave rigid motions free ({}) and the loads are not in equilibrium against "
            "them{} "
            "(relative defect {:.3g} > tolerance {:.3g}): stop them with Dirichlet conditions, or balance "
            "the loads",
            null_space.description(), which, defect, tolerance);
      }
      (void)backend;
      return r;
    }
    null_space.make_compatible(column);
  }
  return r;
}

std::shared_ptr<const NullSpace> detail::constant_null_space(const CsrMatrix& matrix) {
  const auto off = matrix.pattern().row_offsets();
  const auto values = matrix.values();
  const index_t n = matrix.rows();
  if (n < 2) return nullptr;
  bool nonzero = false;
  for (index_t r = 0; r < n; ++r) {
    double sum = 0, size = 0;
    for (index_t p = off[r]; p < off[r + 1]; ++p) {
      const double v = values[static_cast<std::size_t>(p)];
      sum += v;
      size += std::abs(v);
    }
    // Zero up to the rounding of the assembled entries (each a sum of element contributions):
    // a regular matrix such as M + dt K with dt = 1e9 (a relative row sum of 1e-11) is no
    // Neumann matrix. Most matrices leave at their first rows.
    const double rounding =
        64 * std::numeric_limits<double>::epsilon() * static_cast<double>(off[r + 1] - off[r]);
    if (std::abs(sum) > rounding * size) return nullptr;
    nonzero = nonzero || size > 0;
  }
  if (!nonzero || !is_symmetric(matrix)) return nullptr;
  return std::make_shared<const NullSpace>(n, std::vector<std::vector<double>>{std::vector<double>(n, 1.0)},
                                           std::vector<std::string>{"constant"});
}

Result detail::pin_null_space(const CsrMatrix& matrix, const NullSpace& null_space,
                              std::vector<index_t>& pinned, std::optional<CsrMatrix>& out, bool declared) {
  const CsrPattern& pattern = matrix.pattern();
  const auto n = static_cast<std::size_t>(matrix.rows());
  const int k = null_space.dimension();
  pinned.clear();
  if (null_space.size() != matrix.rows())
    throw DimensionMismatch(fmt::format("a null space of size {} for a {} x {} matrix", null_space.size(),
                                        matrix.rows(), matrix.cols()));
  if (declared) {
    // A declared null vector must be one, judged on the Jacobi-scaled matrix (units and coefficient
    // contrasts do not matter): ‖S⁻¹Az‖ ≤ 1e-8 ‖Sz‖. An unsymmetric matrix (Navier–Stokes'
    // Jacobian) qualifies when its null vectors are also left null vectors, ‖S⁻¹Aᵀz‖ ≤ 1e-8 ‖Sz‖:
    // pinning then keeps the solution of compatible data (zᵀb = 0), as for a symmetric one.
    const bool symmetric = is_symmetric(matrix);
    const std::vector<double> scale = jacobi_scale(matrix);
    std::vector<double> y(n), sz(n);
    const auto& off = pattern.row_offsets();
    const auto& col = pattern.col_indices();
    for (int j = 0; j < k; ++j) {
      const auto z = null_space.vector(j);
      for (const bool transposed : {false, true}) {
        if (transposed && symmetric) break;
        if (!transposed) {
          matrix.multiply(z, y);
        } else {
          std::fill(y.begin(), y.end(), 0.0);
          for (std::size_t r = 0; r < n; ++r)
            for (index_t e = off[r]; e < off[r + 1]; ++e)
              y[static_cast<std::size_t>(col[e])] += matrix.values()[static_cast<std::size_t>(e)] * z[r];
        }
        for (std::size_t i = 0; i < n; ++i) {
          y[i] /= scale[i];
          sz[i] = z[i] * scale[i];
        }
        const double ratio = norm2(y) / norm2(sz);
        if (!(ratio <= 1e-8))
          return {Status::invalid_input,
                  transposed
                      ? fmt::format("the declared null vector '{}' of an unsymmetric matrix is not a left "
                                    "null vector too: ‖S⁻¹Aᵀz‖ / ‖Sz‖ = {:.3g} (S² = |diag A|)",
                                    null_space.name(j), ratio)
                      : fmt::format("the declared null vector '{}' is not in the null space of the matrix: "
                                    "‖S⁻¹Az‖ / ‖Sz‖ = {:.3g} (S² = |diag A|)",
                                    null_space.name(j), ratio),
                  -1, -1};
      }
    }
  }
  // One unknown per null vector, by Gaussian elimination with partial pivoting over the rows of
  // Z: the pinned rows of Z form a well-conditioned nonsingular k × k block, so no null vector
  // survives pinning those unknowns to zero. Only unknowns with a stored diagonal qualify.
  std::vector<double> Z(n * static_cast<std::size_t>(k));
  for (int j = 0; j < k; ++j) std::copy_n(null_space.vector(j).begin(), n, Z.begin() + j * n);
  std::vector<std::int64_t> diagonal(n);
  for (std::size_t i = 0; i < n; ++i)
    diagonal[i] = pattern.find(static_cast<index_t>(i), static_cast<index_t>(i));
  std::vector<char> taken(n, 0);
  for (int j = 0; j < k; ++j) {
    const double* zj = Z.data() + j * n;
    std::size_t best = n;
    double best_value = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!taken[i] && diagonal[i] >= 0 && std::abs(zj[i]) > best_value) {
        best_value = std::abs(zj[i]);
        best = i;
      }
    if (best == n || best_value <= 1e-12 * norm2({zj, n}))
      return {
          Status::invalid_input,
          fmt::format("the null vector '{}' vanishes on every unknown with a stored diagonal: it cannot be "
                      "pinned",
                      null_space.name(j)),
          -1, -1};
    taken[best] = 1;
    pinned.push_back(static_cast<index_t>(best));
    for (int c = j + 1; c < k; ++c) {
      double* zc = Z.data() + c * n;
      const double f = zc[best] / zj[best];
      for (std::size_t i = 0; i < n; ++i) zc[i] -= f * zj[i];
    }
  }
  // The pinned rows and columns are zeroed but for their diagonal (kept, or 1 where it is 0).
  std::vector<double> values(matrix.values().begin(), matrix.values().end());
  const auto off = pattern.row_offsets();
  const auto col = pattern.col_indices();
  for (index_t p : pinned) {
    for (index_t q = off[p]; q < off[p + 1]; ++q) {
      const index_t c = col[q];
      if (c == p) {
        if (values[static_cast<std::size_t>(q)] == 0.0) values[static_cast<std::size_t>(q)] = 1.0;
        continue;
      }
      values[static_cast<std::size_t>(q)] = 0.0;
      const std::int64_t t = pattern.find(c, p);
      if (t >= 0) values[static_cast<std::size_t>(t)] = 0.0;
    }
  }
  out.emplace(matrix.pattern_ptr(), std::move(values));
  return {};
}

}  // namespace fem::solve
