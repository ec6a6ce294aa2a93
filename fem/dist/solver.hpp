// Distributed solves of a matrix in the store: MUMPS (LU, or Cholesky for SPD matrices),
// Krylov methods preconditioned by GAMG or hypre's BoomerAMG, and FGMRES preconditioned by a
// Schur-complement field split for a mixed space's saddle points (fieldsplit), each a derived store entry of
// the matrix's version that a new version refactorizes (or re-preconditions) in place:
//
//   auto s = fem::dist::solver(store, "A", map, {.backend = fem::solve::Backend::mumps});
//   s->solve(b, fem::Sums::partial, x);                              // collective
//   store.put("A", new_values);                                      // a new version
//   s = fem::dist::solver(store, "A", map, options, std::move(s));   // numeric refactorization only
//
// MUMPS keeps its analysis inside its factor object, so "symbolic once per pattern" is
// recycling that object: the first factorization analyzes, every later version refactorizes
// numerically into it. GAMG keeps its interpolation across new values; with `lag`, any
// preconditioner (a MUMPS factor included) is kept across versions inside a Krylov method until
// the iteration count grows by `lag_growth`. A lagged factor is never applied alone (PETSc's
// preonly would return a wrong answer silently). The options are solve::Options (backend mumps,
// gamg or hypre; spd, rtol, atol, max_iterations, lag, lag_growth, prefix, max_relative_residual),
// and fem::dist::make_solver (runtime.hpp) wraps a Solver as a solve::LinearSolver.
//
// A Solver is the one store value that changes after it is published: a solve updates the lag's
// bookkeeping and reuses PETSc work vectors (mutable members). That is sound because every
// function of a Solver is collective and runs on the main thread of each process (PETSc's rule),
// never concurrently; what a reader of the entry can see (its operator, its options) never
// changes but through Store::reclaim by its last holder.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "fem/dist/handles.hpp"
#include "fem/dist/index_map.hpp"
#include "fem/dist/matrix.hpp"
#include "fem/solve/solve.hpp"
#include "fem/store.hpp"

namespace fem::dist {

/// The method of a distributed backend (solve::Options::backend mumps, gamg, hypre, fieldsplit):
/// "cholesky", "ldlt" or "lu" for MUMPS, "cg" or "gmres" for the Krylov methods, from Options::spd
/// and Options::symmetric; "fgmres" for fieldsplit.
std::string_view method(const solve::Options& options) noexcept;

class Solver {
 public:
  /// For backend fieldsplit, the matrices of Options::schur_preconditioner, schur_laplacian and
  /// schur_convection (their pressure blocks precondition the Schur complement); null where not
  /// given (no Schur matrix: PETSc's selfp; no Laplacian and convection: the mass alone).
  struct SchurMatrices {
    std::shared_ptr<const PetscMatrix> mass, laplacian, convection;
    friend bool operator==(const SchurMatrices&, const SchurMatrices&) = default;
  };
  Solver(std::shared_ptr<const PetscMatrix> A, const solve::Options& options, std::string key,
         SchurMatrices schur = {});
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  /// Collective: x (local, consistent) = A⁻¹b, b local in `form`. Throws NumericalError when
  /// PETSc reports a failure (a singular matrix, a diverged iteration), or when `check` and the
  /// true relative residual exceeds options().max_relative_residual (for Krylov methods
  /// max(that, 1.5 rtol)); the report carries it (-1 unchecked) and the iterations.
  solve::SolveReport solve(std::span<const double> b, Sums form, std::span<double> x,
                           bool check = true) const;
  /// Collective: Aᵀx = b (direct solves, and CG on symmetric matrices).
  solve::SolveReport solve_transpose(std::span<const double> b, Sums form, std::span<double> x,
                                     bool check = true) const;
  /// Collective: `nrhs` right-hand sides at once, B and X column-major (local DOFs × nrhs), from
  /// the one factorization or preconditioner; the report's residual is the worst column's, its
  /// iterations the sum.
  solve::SolveReport solve(std::span<const double> B, Sums form, std::span<double> X, index_t nrhs,
                           bool transpose = false, bool check = true) const;

  const PetscMatrix& matrix() const noexcept { return *A_; }
  const solve::Options& options() const noexcept { return options_; }
  KSP ksp() const noexcept { return ksp_; }
  /// Iterations of the first solve after the preconditioner was last built (the lag's baseline).
  int baseline_iterations() const noexcept { return baseline_; }
  /// Whether this version runs on the preconditioner of an older one (Options::lag).
  bool preconditioner_reused() const noexcept { return reused_; }
  std::size_t bytes() const noexcept;

 private:
  friend std::shared_ptr<const Solver> solver(Store&, const std::string&, std::shared_ptr<const IndexMap>,
                                              const solve::Options&, std::shared_ptr<const Solver>, bool*);
  // A new version of the matrix (the same Mat, refilled): refactorize, or keep the preconditioner.
  void update(std::shared_ptr<const PetscMatrix> A, Store& store);
  solve::SolveReport run(std::span<const double> b, Sums form, std::span<double> x, bool transpose,
                         bool check) const;
  // A Krylov method around the preconditioner (AMG, or a lagged factor); else MUMPS alone.
  bool krylov() const noexcept { return options_.backend != solve::Backend::mumps || options_.lag; }
  // fieldsplit: the velocity and pressure index sets, the Schur complement's preconditioner;
  // with PCD, its shell (after the set-up) and the shell's application.
  void set_field_split(PC pc);
  void set_pcd();
  static PetscErrorCode apply_pcd(PC pc, Vec x, Vec y);
  std::shared_ptr<const PetscMatrix> A_;
  SchurMatrices schur_;
  IS fields_[2] = {nullptr, nullptr};
  Mat schur_block_ = nullptr, pcd_laplacian_ = nullptr, pcd_convection_ = nullptr;
  KSP pcd_ksp_ = nullptr;  // A_p⁻¹: one GAMG V-cycle
  Vec pcd_x_ = nullptr, pcd_y_ = nullptr, pcd_diagonal_ = nullptr;
  solve::Options options_;
  std::string key_;
  Store* store_ = nullptr;  // where its setups are counted (a rebuild inside a lagged solve too)
  KSP ksp_ = nullptr;
  mutable Vec b_ = nullptr, x_ = nullptr, r_ = nullptr;  // work vectors of the solves
  mutable int baseline_ = -1;                            // -1: not measured since the last refresh
  mutable bool refresh_next_ = false;  // the lag's iterations grew: rebuild at the next version
  mutable bool reused_ = false;        // this version runs on an older preconditioner
};

/// The store key of `options`' solver for the matrix under `key`: <key>#factor/mumps[/cholesky|/ldlt]
/// or <key>#ksp/<gamg|hypre>[/lagged].
std::string solver_key(const std::string& key, const solve::Options& options);

/// Collective: the solver of the matrix under `key` at its current version (its PETSc matrix
/// is `<key>#petsc`), cached under solver_key() (a cached solver with other options is
/// replaced). `retired`, the solver of an older version given back by its last holder, is
/// updated in place: same factor object (MUMPS: numeric refactorization only), same
/// preconditioner (GAMG: interpolation kept; lag: reused, rebuilt once a solve needs
/// lag_growth × the baseline iterations or fails with it). Its PETSc matrix is refilled in
/// place only if nobody else holds it: ask for `<key>#petsc` of the new version through this
/// call, not before it (else the new version gets a new Mat, hence a new KSP and analysis).
/// `computed` (optional) says whether this call set a solver up (false: the cached one served),
/// the same on every process.
std::shared_ptr<const Solver> solver(Store& store, const std::string& key,
                                     std::shared_ptr<const IndexMap> map, const solve::Options& options,
                                     std::shared_ptr<const Solver> retired = nullptr,
                                     bool* computed = nullptr);

/// A matrix that declares a null space (CsrMatrix::null_space(): one vector, with consistent
/// vectors and functionals) made regular for a distributed factorization, as the serial
/// factorizations make theirs: its null vector checked (‖S⁻¹Az‖ and ‖S⁻¹Aᵀz‖ ≤ 1e-8 ‖Sz‖, S² =
/// |diag A|), then the unknown where it is largest (with a stored diagonal; among equals the
/// lowest rank's first owned one) pinned: its row and column zeroed but for the diagonal (1 on
/// its owner, 0 in the other processes' partial sums).
struct Pinned {
  std::string key;     ///< the pinned matrix: `<key>#pinned`
  index_t local = -1;  ///< the pinned unknown's local index here; -1 where this process has none
};
/// Collective: the pinned matrix of the CsrMatrix under `key` at its current version, cached
/// as `<key>#pinned` (derived from it, not evictable: its PETSc matrix and solver are collective).
/// Errors (a null space of several vectors, a vector that is no null vector) on every process.
Pinned pin_null_space(Store& store, const std::string& key, const IndexMap& map);
/// Collective: the CsrMatrix under `key` with the unknown of `at` pinned as pin_null_space pins
/// it (row and column zeroed, 1 on the owner's diagonal), cached as `<key>#pinned`; its key.
/// A preconditioner's matrix (Options::schur_preconditioner) pinned alike stays consistent with
/// the pinned operator.
std::string pin(Store& store, const std::string& key, const IndexMap& map, const Pinned& at);

}  // namespace fem::dist

FEM_TYPE_NAME(fem::dist::Solver, "fem::dist::Solver");
