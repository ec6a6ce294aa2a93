// Distributed solves of a matrix in the store: MUMPS (LU, or Cholesky for SPD matrices) and
// Krylov methods preconditioned by GAMG or hypre's BoomerAMG, each a derived store entry of the
// matrix's version that a new version refactorizes (or re-preconditions) in place:
//
//   auto s = fem::dist::solver(store, "A", map, {.method = fem::dist::Method::mumps});
//   s->solve(b, fem::dist::Sums::partial, x);                        // collective
//   store.put("A", new_values);                                      // a new version
//   s = fem::dist::solver(store, "A", map, options, std::move(s));   // numeric refactorization only
//
// MUMPS keeps its analysis inside its factor object, so "symbolic once per pattern" is
// recycling that object: the first factorization analyzes, every later version refactorizes
// numerically into it. GAMG keeps its interpolation across new values; with `lag`, any
// preconditioner (a MUMPS factor included) is kept across versions inside a Krylov method until
// the iteration count grows by `lag_growth`. A lagged factor is never applied alone (PETSc's
// preonly would return a wrong answer silently).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fem/dist/handles.hpp"
#include "fem/dist/index_map.hpp"
#include "fem/dist/matrix.hpp"
#include "fem/store.hpp"

namespace fem::dist {

enum class Method { mumps, gamg, hypre };
std::string_view to_string(Method m) noexcept;
/// "mumps", "gamg", "hypre", or nullopt.
std::optional<Method> method_from_name(std::string_view name) noexcept;

struct SolverOptions {
  Method method = Method::mumps;
  /// The matrix is symmetric positive definite: MUMPS Cholesky, CG; otherwise LU, GMRES.
  bool spd = false;
  double rtol = 1e-10;  ///< Krylov: stop at ‖b − Ax‖ ≤ rtol ‖b‖ (the true residual)
  double atol = 1e-50;
  int max_iterations = 10000;
  /// Keep the preconditioner (factor) across matrix versions, inside a Krylov method, until a
  /// solve needs more than lag_growth × the iterations of the first solve after the last refresh.
  bool lag = false;
  double lag_growth = 1.5;
  /// Every solve is checked: ‖b − Ax‖/‖b‖ above this (above max(this, 1.5 rtol) for Krylov
  /// methods) is a NumericalError naming key and method. Infinity: no check (one MatMult and
  /// two norms less per solve).
  double max_relative_residual = 1e-6;
  /// PETSc options prefix: e.g. "fem_" lets -fem_ksp_monitor, -fem_pc_gamg_threshold apply.
  std::string prefix = {};
  friend bool operator==(const SolverOptions&, const SolverOptions&) = default;
};

struct DistSolveReport {
  int iterations = 0;            ///< Krylov iterations (0 for a direct solve)
  double relative_residual = 0;  ///< ‖b − Ax‖/‖b‖, true residual
  bool preconditioner_reused = false;
};

class Solver {
 public:
  Solver(std::shared_ptr<const PetscMatrix> A, const SolverOptions& options, std::string key);
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  /// Collective: x (local, consistent) = A⁻¹b, b local in `form`. Throws NumericalError when
  /// PETSc reports a failure (a singular matrix, a diverged iteration) or the residual check fails.
  DistSolveReport solve(std::span<const double> b, Sums form, std::span<double> x) const;
  /// Collective: Aᵀx = b (direct solves, and CG on symmetric matrices).
  DistSolveReport solve_transpose(std::span<const double> b, Sums form, std::span<double> x) const;
  /// Collective: `nrhs` right-hand sides at once, B and X column-major (local DOFs × nrhs), from
  /// the one factorization or preconditioner; the report's residual is the worst column's, its
  /// iterations the sum.
  DistSolveReport solve(std::span<const double> B, Sums form, std::span<double> X, index_t nrhs) const;

  const PetscMatrix& matrix() const noexcept { return *A_; }
  const SolverOptions& options() const noexcept { return options_; }
  KSP ksp() const noexcept { return ksp_; }
  /// Iterations of the first solve after the preconditioner was last built (the lag's baseline).
  int baseline_iterations() const noexcept { return baseline_; }
  std::size_t bytes() const noexcept;

 private:
  friend std::shared_ptr<const Solver> solver(Store&, const std::string&, std::shared_ptr<const IndexMap>,
                                              const SolverOptions&, std::shared_ptr<const Solver>);
  // A new version of the matrix (the same Mat, refilled): refactorize, or keep the preconditioner.
  void update(std::shared_ptr<const PetscMatrix> A, Store& store);
  DistSolveReport run(std::span<const double> b, Sums form, std::span<double> x, bool transpose) const;
  // A Krylov method around the preconditioner (AMG, or a lagged factor); else MUMPS alone.
  bool krylov() const noexcept { return options_.method != Method::mumps || options_.lag; }
  std::shared_ptr<const PetscMatrix> A_;
  SolverOptions options_;
  std::string key_;
  KSP ksp_ = nullptr;
  mutable Vec b_ = nullptr, x_ = nullptr, r_ = nullptr;  // work vectors of the solves
  mutable int baseline_ = -1;                            // -1: not measured since the last refresh
  mutable bool refresh_next_ = false;  // the lag's iterations grew: rebuild at the next version
  mutable bool reused_ = false;        // this version runs on an older preconditioner
};

/// The store key of `options`' solver for the matrix under `key`: <key>#factor/mumps[/cholesky]
/// or <key>#ksp/<gamg|hypre>[/lagged].
std::string solver_key(const std::string& key, const SolverOptions& options);

/// Collective: the solver of the matrix under `key` at its current version (its PETSc matrix
/// is `<key>#petsc`), cached under solver_key() (a cached solver with other options is
/// replaced). `retired`, the solver of an older version given back by its last holder, is
/// updated in place: same factor object (MUMPS: numeric refactorization only), same
/// preconditioner (GAMG: interpolation kept; lag: reused, rebuilt once a solve needs
/// lag_growth × the baseline iterations or fails with it). Its PETSc matrix is refilled in
/// place only if nobody else holds it: ask for `<key>#petsc` of the new version through this
/// call, not before it (else the new version gets a new Mat, hence a new KSP and analysis).
std::shared_ptr<const Solver> solver(Store& store, const std::string& key,
                                     std::shared_ptr<const IndexMap> map, const SolverOptions& options,
                                     std::shared_ptr<const Solver> retired = nullptr);

}  // namespace fem::dist

FEM_TYPE_NAME(fem::dist::Solver, "fem::dist::Solver");
