// libfem_newton: Newton's method with line search and Jacobian lagging over the shared store.
// The Jacobian is published under the problem's key and factorized by the problem's
// solve::LinearSolver (the serial factorization cache by default; fem::dist::make_solver for a
// distributed mesh), so the symbolic analysis is done once per pattern, a refreshed Jacobian
// costs one numeric factorization, and a lagged one costs nothing but the solve. Every norm goes
// through the solver's layout: the same code runs on one process or many.
//
//   auto p = fem::newton::assembled_problem(assembler, fem::assembly::bratu(6.0), bc, "bratu");
//   std::vector<double> u(assembler->space().num_dofs(), 0.0);
//   fem::newton::Result r = fem::newton::solve(p, u);  // r.reason says why it stopped
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fem/csr.hpp"
#include "fem/solve/linear_solver.hpp"
#include "fem/solve/solve.hpp"
#include "fem/store.hpp"

namespace fem::newton {

/// Why Newton stopped (PETSc's converged reasons). Converged reasons come first.
enum class Reason {
  converged_atol,            ///< ‖F‖ ≤ atol
  converged_rtol,            ///< ‖F‖ ≤ rtol·‖F₀‖
  converged_step,            ///< ‖δu‖ ≤ stol·‖u‖
  diverged_max_iterations,   ///< max_iterations reached
  diverged_line_search,      ///< no step length reduced ‖F‖, even with a fresh Jacobian
  diverged_nan,              ///< a residual or step was NaN or infinite
  diverged_residual_growth,  ///< ‖F‖ > divergence_tolerance·‖F₀‖
  diverged_linear_solve,     ///< the Jacobian could not be factorized or solved with (Result::message)
};
std::string_view to_string(Reason r) noexcept;
inline bool converged(Reason r) noexcept { return r <= Reason::converged_step; }

enum class LineSearch {
  none,         ///< full steps
  backtracking  ///< halve the step until ‖F(u + λδu)‖ ≤ (1 − αλ)‖F(u)‖ (Armijo)
};

/// Jacobian lagging (KINSOL/PETSc style): reuse the factorized Jacobian for up to `max_reuse`
/// iterations, and refresh earlier when an iteration with a reused Jacobian reduced ‖F‖ by less
/// than `min_reduction` (ratio ‖F_new‖/‖F_old‖ above it). max_reuse = 1 is full Newton.
///
/// A step with a reused factorization J₀ is the chord step −J₀⁻¹F, which converges only
/// linearly. With `anderson` = m > 0 it is Anderson-accelerated (type II, depth m; Walker & Ni
/// 2011, KINSOL's fixed-point acceleration) over the chord steps taken since the last refresh:
/// the step is corrected by the combination of the last m step and iterate differences that
/// best cancels the current chord step. For a linear problem, while the depth covers all the
/// steps so far, that is GMRES preconditioned by J₀, so the few slow modes of the stale
/// Jacobian are removed after a few steps and one factorization carries the whole solve, at the
/// cost of 2m + 2 stored vectors. Full Newton never reuses a factorization and is unaffected.
struct Lagging {
  int max_reuse = 1;
  double min_reduction = 0.5;
  int anderson = 0;  ///< depth m of the acceleration of reused steps (0: plain chord steps)
  /// A fixed lag L: refresh exactly every L iterations (factorizations = ⌈iterations / L⌉).
  static Lagging fixed(int lag, int anderson = 0) {
    return {lag, std::numeric_limits<double>::infinity(), anderson};
  }
  /// One factorization reused, with Anderson-accelerated steps, for as long as every iteration
  /// reduces ‖F‖ by at least the factor 1/min_reduction, then a fresh one. Bratu λ = 6 at 263k
  /// DOFs: 7 iterations on one factorization (plain chord steps, anderson = 0: 20; full Newton:
  /// 4 iterations and 4 factorizations; docs/benchmarks.md, "Newton", has the timings).
  static Lagging adaptive(double min_reduction = 0.3, int anderson = 5) {
    return {1 << 30, min_reduction, anderson};
  }
};

/// One line of the per-iteration monitor.
struct Iteration {
  int iteration = 0;                ///< 0 is the initial guess
  double residual_norm = 0;         ///< ‖F(u)‖ after this iteration
  double step_norm = 0;             ///< ‖λδu‖
  double step_length = 0;           ///< λ, the line-search factor
  bool jacobian_refreshed = false;  ///< this iteration factorized a new Jacobian
  double seconds = 0;               ///< wall time of this iteration
};
using Monitor = std::function<void(const Iteration&)>;

/// Monitors that print one line per iteration, as text or as JSON lines.
Monitor text_monitor(std::FILE* out = stdout);
Monitor json_monitor(std::FILE* out);

struct Options {
  double atol = 1e-10;  ///< absolute residual tolerance
  double rtol = 1e-10;  ///< residual tolerance relative to ‖F₀‖
  double stol = 0;      ///< step tolerance relative to ‖u‖ (0: off)
  int max_iterations = 50;
  double divergence_tolerance = 1e8;  ///< diverged when ‖F‖ > this·max(‖F₀‖, atol)
  LineSearch line_search = LineSearch::none;
  double armijo = 1e-4;                 ///< α of the sufficient-decrease test
  double min_step_length = 1.0 / 1024;  ///< the line search gives up below this λ
  Lagging lagging;                      ///< full Newton by default
  /// Start from the factorization the problem's solver holds: the last Jacobian this problem
  /// factorized (a previous solve's, e.g. the last time step's), so that the first iteration is a
  /// lagged one too. The caller vouches that the solver holds one.
  bool reuse_factorization = false;
  /// The serial solver Newton makes when the problem brings none. Its residuals are not
  /// checked by default: Newton's own residual judges every step (a singular or inaccurate
  /// solve shows as a step that does not reduce it, and line search or a refresh follows).
  solve::Options linear = {.max_relative_residual = std::numeric_limits<double>::infinity()};
  Monitor monitor;  ///< called after every iteration (and for the guess)
};

/// A nonlinear problem F(u) = 0: residual and Jacobian callbacks, and the store keys its data
/// lives under: the Jacobian is published as `<name>/J` (and factorized as `<name>/J#factor/...`
/// by the solve kernel), the final residual and solution as `<name>/F` and `<name>/u`.
struct Problem {
  std::string name;
  /// F(u) into F (overwritten).
  std::function<void(std::span<const double> u, std::span<double> F)> residual;
  /// J(u). Same pattern object every time, so the symbolic analysis is reused.
  std::function<CsrMatrix(std::span<const double> u)> jacobian;
  /// Optional: F(u) into F and J(u) in one pass (assembled problems: one loop over the cells
  /// instead of two). Newton calls it for points whose Jacobian it will need for sure (the
  /// initial guess; without line search, the next iterate when the next iteration refreshes),
  /// at the price of one unused Jacobian for the iterate that converges.
  std::function<CsrMatrix(std::span<const double> u, std::span<double> F)> residual_and_jacobian;
  Store* store = &fem::store();
  /// The solver of J δ = F: factorize() after each refreshed Jacobian is published (a new
  /// version of `<name>/J`), solve() with the last one for as many iterations as the lag allows.
  /// Its layout() gives every norm and inner product (a distributed problem: global reductions,
  /// so that every process takes the same decisions) and the vectors are consistent. Null:
  /// Newton makes a serial one from Options::linear for the solve.
  std::shared_ptr<solve::LinearSolver> solver;
};

/// Where a solve's wall time went (seconds). factorization includes the symbolic analysis when
/// the pattern had none cached (see Result::symbolic_analyses); other is the rest (norms, their
/// reductions included, updates, store bookkeeping, the monitor).
struct Timings {
  double residual = 0;       ///< residual evaluations (assembly of F), line search included
  double jacobian = 0;       ///< Jacobian assembly (with the residual, when fused; see Problem)
  double factorization = 0;  ///< LinearSolver::factorize (numeric factorizations, preconditioner setups)
  double solve = 0;          ///< LinearSolver::solve
  double other = 0;
};

struct Result {
  Reason reason = Reason::diverged_max_iterations;
  bool converged = false;
  int iterations = 0;
  int jacobian_refreshes = 0;  ///< successful factorizations
  int linear_solves = 0;       ///< solves of J δ = F, failed ones too
  /// Of the Jacobian's pattern: what the store's counter solve.symbolic_analyses moved by.
  int symbolic_analyses = 0;
  double initial_residual_norm = 0;
  double residual_norm = 0;
  /// Why it stopped, in words, where there is more to say than `reason`: the factorization's or
  /// the solve's reason for diverged_linear_solve. Empty otherwise.
  std::string message;
  std::vector<Iteration> history;
  double seconds = 0;
  Timings timings;
};

/// Solve F(u) = 0 from the guess in u; u holds the last iterate when it stops. On a diverged
/// stop u is the last finite iterate: never NaN.
Result solve(const Problem& problem, std::span<double> u, const Options& options = {});

/// Natural-parameter continuation: solve problem_at(p) for p from `start` towards `end`,
/// warm-starting each solve from the previous solution and halving the step after a failure.
/// Its decisions come from the Newton results alone, so problems with a distributed solver make
/// it run on a distributed problem too.
struct ContinuationOptions {
  double start = 0, end = 1, step = 0.1;
  double min_step = 1e-4;  ///< stop (at the last converged parameter) when the step gets smaller
  int max_steps = 1000;
  /// Grow the step by this factor after a solve that converged in few iterations (≤ 4).
  double growth = 1.0;
};
struct ContinuationResult {
  std::vector<double> parameters;  ///< the converged parameters, in order
  std::vector<Result> results;     ///< their Newton results
  double last_parameter = 0;       ///< the last converged parameter
  bool reached_end = false;
  int failures = 0;  ///< Newton solves that failed and were retried with a smaller step
};
ContinuationResult continuation(const std::function<Problem(double parameter)>& problem_at,
                                std::span<double> u, const ContinuationOptions& continuation_options,
                                const Options& options = {});

}  // namespace fem::newton
