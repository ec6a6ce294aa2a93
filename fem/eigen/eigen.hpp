// fem::eigen: the generalized symmetric eigenproblem K x = λ M x (natural frequencies and mode
// shapes) by shift-invert Lanczos on the factorization cache. The operator (K − σM)⁻¹M solves
// with a factorization that is a derived store entry of K, M and σ: a second call with the same
// matrices and shift factorizes nothing, and a new shift reuses the symbolic analysis of the
// pattern. Sturm counts (the inertia of an LDLᵀ of K − τM) prove that no mode was missed and
// find the missing copies of multiple eigenvalues. docs/eigen.md.
//
//   fem::eigen::Options o;
//   o.count = 10;
//   o.constrained = clamped_dofs;               // eliminated: no spurious eigenvalue
//   auto modes = fem::eigen::solve(store, "K", "M", o);
//   modes.eigenvalues[0], modes.vector(0)       // ascending; M-orthonormal
#pragma once

#include <fem/csr.hpp>
#include <fem/solve/solve.hpp>
#include <fem/store.hpp>
#include <span>
#include <string>
#include <vector>

namespace fem::eigen {

/// Which eigenvalues: the `count` smallest (K positive semi-definite: a stiffness), the `count`
/// nearest `shift`, or every one in [lower, upper] (at most `count`; the Sturm count says how
/// many there are).
enum class Which { smallest, nearest, interval };

struct Options {
  Which which = Which::smallest;
  index_t count = 6;
  double shift = 0.0;               ///< Which::nearest
  double lower = 0.0, upper = 0.0;  ///< Which::interval
  /// Unknowns eliminated from the problem (homogeneous Dirichlet conditions): the eigenvectors
  /// are zero there, and no eigenvalue of theirs exists (no "1" from an identity row).
  std::vector<index_t> constrained;
  /// M replaced by its row sums (a diagonal, lumped mass).
  bool lumped = false;
  /// Lanczos stops when every wanted Ritz value has converged to this relative tolerance.
  double tolerance = 1e-10;
  index_t max_iterations = 1000;
  /// Lanczos basis size (0: max(2 count + 1, count + 20), at most the size of the problem).
  index_t subspace = 0;
  /// Check with Sturm counts that no eigenvalue in the window of the results was missed (an
  /// LDLᵀ of K − τM at each end not known already), and find missed ones by deflation.
  bool verify = true;
  /// The first Lanczos run's start vector (full numbering; e.g. a mode of a nearby problem), or
  /// empty: random.
  std::vector<double> start;
  /// Problems up to this size are solved densely (every eigenvalue, exactly multiple).
  index_t dense_below = 200;
  /// The factorization of the shifted operator. automatic: CHOLMOD while K − σM is positive
  /// definite (σ below the spectrum), UMFPACK (LU) otherwise.
  solve::Options linear = {};
};

struct Result {
  index_t size = 0;                 ///< unknowns of K (the full numbering, constrained included)
  std::vector<double> eigenvalues;  ///< ascending
  /// size × modes, column-major, M-orthonormal; zero at the constrained unknowns.
  std::vector<double> vectors;
  /// The relative residual of each pair, ‖Kx − λMx‖₂ / ((‖K‖∞ + |λ|‖M‖∞)‖x‖₂) on the free
  /// unknowns: the backward error (SLEPc's EPS_ERROR_BACKWARD), meaningful for λ = 0 too.
  std::vector<double> residuals;
  double shift = 0.0;  ///< the shift of the operator
  double residual_max = 0.0;
  double orthogonality_max = 0.0;  ///< max |XᵀMX − I|
  /// nearest: the eigenvalues below the shift; interval: those in [lower, upper]; -1 when not
  /// asked for (smallest).
  index_t sturm_count = -1;
  /// Eigenvalues that the Sturm counts show exist in the window of the results but were not
  /// found (after deflated restarts), or, for an interval, beyond `count`.
  index_t missing = 0;
  bool converged = true;
  index_t restarts = 0;               ///< deflated Lanczos runs after the first
  index_t operator_applications = 0;  ///< solves with the shifted factorization
  index_t sturm_factorizations = 0;   ///< LDLᵀ factorizations made for Sturm counts
  std::string method;                 ///< e.g. "shift-invert Lanczos (Spectra), cholmod"
  /// The operator's factorization: its backend (the one chosen by automatic), ordering and
  /// factor nonzeros.
  solve::Backend backend = solve::Backend::automatic;
  solve::Ordering ordering = solve::Ordering::automatic;
  std::size_t factor_nonzeros = 0;
  double factorize_seconds = 0.0;  ///< in factorizations (the operator's, Sturm counts')
  double solve_seconds = 0.0;      ///< the rest: Lanczos, its solves, residuals
  std::vector<std::string> log;    ///< decisions and warnings, one line each

  index_t modes() const noexcept { return static_cast<index_t>(eigenvalues.size()); }
  std::span<const double> vector(index_t mode) const {
    return std::span<const double>(vectors).subspan(
        static_cast<std::size_t>(mode) * static_cast<std::size_t>(size), static_cast<std::size_t>(size));
  }
};

/// Eigenpairs of K x = λ M x, K and M symmetric CsrMatrix entries of `store` of one size, M
/// positive definite on the free unknowns. Throws InvalidArgument on bad options or matrices,
/// NumericalError when an operator cannot be factorized.
Result solve(Store& store, const std::string& K, const std::string& M, const Options& options = {});
Result solve(const std::string& K, const std::string& M, const Options& options = {});

/// The number of eigenvalues below `sigma` (Sylvester's inertia of K − σM on the free unknowns
/// of `options`, from a cached LDLᵀ).
index_t count_below(Store& store, const std::string& K, const std::string& M, double sigma,
                    const Options& options = {});

}  // namespace fem::eigen
