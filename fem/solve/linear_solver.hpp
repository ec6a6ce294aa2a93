// One interface for every way the library solves A x = b with a matrix from the store: the
// serial factorization cache (make_solver) and the MPI + PETSc solvers of fem::dist
// (fem::dist::make_solver: MUMPS, GAMG, hypre). A solver is set up once per version of the
// matrix and then solves into the caller's buffers, as often as needed; every implementation
// counts the same store counters and reports what it is and what it did, so the front ends and
// Newton never know which one they hold.
//
//   auto solver = fem::solve::make_solver({.backend = fem::solve::Backend::cholmod});
//   solver->factorize(store, "A");                     // once per version of "A"
//   fem::solve::SolveReport r = solver->solve(b, x);   // many times: r.ok(), r.reason
//
// Counters (Store::count), the same for every implementation (for a distributed solver, on
// every process: the collective count): solve.symbolic_analyses and solve.factorizations where
// the work happens, solve.solves and solve.rhs per solve, solve.cache_misses when factorize()
// made a new factorization, solve.cache_hits for every solve that found its factorization made
// already (all but the first solve after a new one).
#pragma once

#include <cstdint>
#include <fem/layout.hpp>
#include <fem/solve/solve.hpp>
#include <fem/store.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fem::solve {

/// What a LinearSolver is and what it did.
struct SolverReport {
  Backend backend = Backend::automatic;     ///< what factorizes (automatic resolved) or iterates
  std::string method;                       ///< cholesky, ldlt, lu, cg or gmres
  Ordering ordering = Ordering::automatic;  ///< of a serial factorization
  std::int64_t factor_nonzeros = 0;         ///< of a serial factorization
  int processes = 1;
  int iterations = 0;  ///< of the last solve (Krylov methods; 0 for direct solves)
  std::int64_t total_iterations = 0;
  std::int64_t factorizations = 0;   ///< numeric factorizations (preconditioner setups) made for it
  std::int64_t solves = 0;           ///< solve calls
  double relative_residual = -1;     ///< the worst checked ‖b − Ax‖/‖b‖; -1 before any check
  double backward_error = -1;        ///< the worst checked scaled backward error (serial solves)
  int refinement_steps = 0;          ///< the most iterative refinement steps one solve took
  double compatibility_defect = -1;  ///< with a null space: the worst data defect solved; -1 without
  std::vector<std::string> log;      ///< decisions worth knowing (fallbacks)
};

class LinearSolver {
 public:
  virtual ~LinearSolver();
  LinearSolver(const LinearSolver&) = delete;
  LinearSolver& operator=(const LinearSolver&) = delete;

  /// Collective. The CsrMatrix under `key` in `store`, at its current version, becomes the
  /// operator: its factorization (or preconditioner) from the store when one of this version is
  /// there, else a new one, made in the previous one's memory where nothing else holds that
  /// (the symbolic analysis of the pattern reused: numeric work only). Throws NumericalError
  /// naming the key when the matrix cannot be factorized.
  void factorize(Store& store, const std::string& key);

  /// Collective. x = A⁻¹b (B, X: column-major, local size × nrhs) with the operator of the last
  /// factorize(), into the caller's buffers. `sums` says what b holds at the entries processes
  /// share (layout()). The first solve after each factorize() that changed the operator (not a
  /// factorize() of the same key at the same version), or every solve with
  /// ResidualCheck::every_solve, checks ‖b − Ax‖/‖b‖ against Options::max_relative_residual.
  /// Numerical trouble (singular, inaccurate, incompatible data) is a report that is not ok
  /// whose reason names the key and the backend (require() throws it); sizes that do not fit
  /// are DimensionMismatch.
  SolveReport solve(std::span<const double> b, std::span<double> x, Sums sums = Sums::partial);
  SolveReport solve(std::span<const double> B, std::span<double> X, index_t nrhs, Sums sums = Sums::partial);
  /// Aᵀx = b from the same factorization (direct methods, and CG on symmetric matrices).
  SolveReport solve_transpose(std::span<const double> b, std::span<double> x, Sums sums = Sums::partial);
  SolveReport solve_transpose(std::span<const double> B, std::span<double> X, index_t nrhs,
                              Sums sums = Sums::partial);

  const Options& options() const noexcept { return options_; }
  const SolverReport& report() const noexcept { return report_; }
  /// The key last factorized ("" before the first factorize()).
  const std::string& key() const noexcept { return key_; }
  /// How the solver's vectors sit over processes (one process: Layout::serial()).
  virtual const Layout& layout() const noexcept { return Layout::serial(); }

 protected:
  explicit LinearSolver(Options options) : options_(std::move(options)) {}
  /// Factorize the current version of `key`: true when new numeric work was done, false when a
  /// factorization of this version was found. Fills the report's description (backend, method,
  /// ordering, factor nonzeros) and counts the factorization counters.
  virtual bool do_factorize(Store& store, const std::string& key) = 0;
  /// The solve, with the residual checked (and recorded in the report) when `check`.
  virtual SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs, bool transpose,
                               Sums sums, bool check) = 0;
  SolverReport& report_mut() noexcept { return report_; }

 private:
  SolveReport run(std::span<const double> B, std::span<double> X, index_t nrhs, bool transpose, Sums sums);
  Options options_;
  SolverReport report_;
  Store* store_ = nullptr;
  std::string key_;
  bool fresh_ = false;    // the next solve is the first with a factorization made for it
  bool checked_ = false;  // a solve with the current factorization was checked
  Version version_ = 0;   // of key_ at the last factorize()
};

/// A serial solver through the store's factorization cache (Options::backend a serial backend;
/// a distributed one is an InvalidArgument: fem::dist::make_solver makes those).
std::unique_ptr<LinearSolver> make_solver(const Options& options = {});

/// A report that is not ok as a NumericalError with its reason (which names the key).
void require(const SolveReport& report);

}  // namespace fem::solve
