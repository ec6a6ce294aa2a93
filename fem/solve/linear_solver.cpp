// The LinearSolver contract (counters, when to check the residual, the report) and its serial
// implementation through the store's factorization cache.
#include <fmt/format.h>

#include <algorithm>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/linear_solver.hpp>

namespace fem::solve {

LinearSolver::~LinearSolver() = default;

void LinearSolver::factorize(Store& store, const std::string& key) {
  // The operator it had: the same store, key and version (a lookup, as a time stepper's every
  // step makes) keeps its residual check done; anything else is checked again.
  const bool same = store_ == &store && key_ == key && store.contains(key) && store.version(key) == version_;
  store_ = nullptr;  // until it succeeds: a solve after a failed factorization is refused
  const bool computed = do_factorize(store, key);
  store_ = &store;
  key_ = key;
  version_ = store.version(key);
  fresh_ = computed;
  if (computed || !same) checked_ = false;
  if (computed) {
    ++report_.factorizations;
    store.count("solve.cache_misses");
  }
}

SolveReport LinearSolver::run(std::span<const double> B, std::span<double> X, index_t nrhs, bool transpose,
                              Sums sums) {
  FEM_EXPECTS(store_ != nullptr,
              "LinearSolver: solve without a factorization (none made yet, or the last failed)");
  const bool check = !checked_ || options_.residual_check == ResidualCheck::every_solve;
  SolveReport r = do_solve(B, X, nrhs, transpose, sums, check);
  store_->count("solve.solves");
  store_->count("solve.rhs", nrhs);
  if (!fresh_) store_->count("solve.cache_hits");
  fresh_ = false;
  ++report_.solves;
  report_.iterations = r.iterations;
  report_.total_iterations += r.iterations;
  if (!r) {
    r.reason = fmt::format("solve '{}' failed ({}): {}", key_, to_string(r.status), r.reason);
    return r;
  }
  if (check) checked_ = true;
  report_.relative_residual = std::max(report_.relative_residual, r.residual);
  report_.backward_error = std::max(report_.backward_error, r.backward_error);
  report_.refinement_steps = std::max(report_.refinement_steps, r.refinement_steps);
  report_.compatibility_defect = std::max(report_.compatibility_defect, r.compatibility_defect);
  return r;
}

SolveReport LinearSolver::solve(std::span<const double> b, std::span<double> x, Sums sums) {
  return run(b, x, 1, false, sums);
}
SolveReport LinearSolver::solve(std::span<const double> B, std::span<double> X, index_t nrhs, Sums sums) {
  return run(B, X, nrhs, false, sums);
}
SolveReport LinearSolver::solve_transpose(std::span<const double> b, std::span<double> x, Sums sums) {
  return run(b, x, 1, true, sums);
}
SolveReport LinearSolver::solve_transpose(std::span<const double> B, std::span<double> X, index_t nrhs,
                                          Sums sums) {
  return run(B, X, nrhs, true, sums);
}

void require(const SolveReport& report) {
  if (!report) throw NumericalError(report.reason);
}

namespace {

std::string_view method_of(const Factorization& f) {
  switch (f.backend()) {
    case Backend::cholmod:
      return "cholesky";
    case Backend::ldlt:
      return "ldlt";
    default:
      return "lu";
  }
}

/// Factorizations from the store's cache; the previous one is handed back to the cache, which
/// refactorizes into it when nothing else holds it (Newton's refreshes, a new time step size).
class SerialSolver final : public LinearSolver {
 public:
  explicit SerialSolver(const Options& options) : LinearSolver(options) {
    FEM_EXPECTS(!distributed(options.backend),
                "{} is a distributed solver: fem::dist::make_solver makes it (MPI + PETSc)",
                to_string(options.backend));
  }

 protected:
  bool do_factorize(Store& store, const std::string& key) override {
    auto c = detail::cached_factorization(store, key, options(), std::move(factor_));
    factor_ = std::move(c.factorization);
    matrix_ = std::move(c.matrix);
    SolverReport& r = report_mut();
    const Factorization& f = *factor_;
    r.backend = f.backend();
    r.method = method_of(f);
    r.ordering = f.ordering();
    r.factor_nonzeros = static_cast<std::int64_t>(f.factor_nonzeros());
    for (const auto& line : f.log())
      if (std::find(r.log.begin(), r.log.end(), line) == r.log.end()) r.log.push_back(line);
    return c.computed;
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs, bool transpose, Sums,
                       bool check) override {
    SolveReport r = detail::checked_solve(*factor_, matrix_.get(), B, X, nrhs, transpose, options(), check);
    // The matrix serves the residual checks only: after the first, it goes (a lagged Newton
    // Jacobian is not kept alive beside its successor).
    if (r && check && options().residual_check == ResidualCheck::first_solve &&
        options().refinement_steps == 0 && !options().compute_residual)
      matrix_.reset();
    return r;
  }

 private:
  std::shared_ptr<const Factorization> factor_;
  std::shared_ptr<const CsrMatrix> matrix_;
};

}  // namespace

std::unique_ptr<LinearSolver> make_solver(const Options& options) {
  return std::make_unique<SerialSolver>(options);
}

}  // namespace fem::solve
