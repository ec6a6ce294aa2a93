// The factorization cache: store-keyed factorizations (derived from the matrix version,
// evictable) and symbolic analyses keyed by the pattern's fingerprint, confirmed with
// same_structure, reused across new values of the same pattern.
#include <fmt/format.h>

#include <cmath>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/linear_solver.hpp>
#include <fem/solve/solve.hpp>
#include <limits>

namespace fem::solve {
namespace {

std::string symbolic_key(Backend backend, Ordering ordering, const CsrPattern& pattern) {
  return fmt::format("#symbolic/{}/{}/{:016x}", to_string(backend), to_string(ordering),
                     pattern.fingerprint());
}

// A factorization of `matrix` with one backend, its analysis taken from (or put in) the store.
// The analysis of `matrix`'s pattern for `backend`: the store's (counted in
// solve.symbolic_analyses when it had to be made), or a private one when a cached analysis of
// the same fingerprint has another structure.
std::shared_ptr<const Symbolic> cached_symbolic(Store& store, const CsrMatrix& matrix, Backend backend,
                                                const Options& options) {
  const CsrPattern& pattern = matrix.pattern();
  const Ordering ordering = detail::resolve_ordering(backend, options.ordering, pattern);
  const std::string skey = symbolic_key(backend, ordering, pattern);
  Options o = options;
  o.ordering = ordering;
  bool analyzed = false;
  auto symbolic = store.get_or_compute<Symbolic>(skey, {}, [&] {
    analyzed = true;
    auto g = make_factorization(backend, o);
    g->analyze(matrix.pattern_ptr());
    return g->symbolic();
  });
  if (analyzed) {
    store.count("solve.symbolic_analyses");
  } else if (symbolic->pattern_ptr() == matrix.pattern_ptr() || symbolic->pattern().same_structure(pattern)) {
    store.count("solve.refactorizations");
  } else {
    // Equal fingerprints, different structures: never share; analyze privately.
    store.count("solve.symbolic_collisions");
    store.count("solve.symbolic_analyses");
    auto g = make_factorization(backend, o);
    g->analyze(matrix.pattern_ptr());
    symbolic = g->symbolic();
  }
  return symbolic;
}

std::unique_ptr<Factorization> make_with_cached_symbolic(Store& store, const CsrMatrix& matrix,
                                                         Backend backend, const Options& options,
                                                         Result& result) {
  auto f = make_factorization(backend, options);
  f->use_symbolic(cached_symbolic(store, matrix, backend, options));
  result = f->factorize(matrix);
  if (result.status != Status::too_large) store.count("solve.factorizations");  // too_large: no numeric work
  return f;
}

// `retired`, refactorized in place with `matrix`, when that is safe and fits; else nullptr.
// `retired` is released either way.
std::shared_ptr<const Factorization> recycle(Store& store, std::shared_ptr<const Factorization>& retired,
                                             const CsrMatrix& matrix, Backend backend) {
  auto f = Store::reclaim(std::move(retired));
  if (!f || f->backend() != backend || !f->factorized() || !f->symbolic()) return nullptr;
  const Symbolic& symbolic = *f->symbolic();
  if (symbolic.pattern_ptr() != matrix.pattern_ptr() && !symbolic.pattern().same_structure(matrix.pattern()))
    return nullptr;
  const Result r = f->factorize(matrix);
  if (r.status == Status::too_large) return nullptr;  // refused before any numeric work
  store.count("solve.factorizations");
  store.count("solve.refactorizations");
  store.count("solve.recycled");
  if (!r.ok()) return nullptr;  // the normal path tries again (and falls back when automatic)
  return f;
}

std::shared_ptr<const Factorization> compute_cached(Store& store, const std::string& key,
                                                    const CsrMatrix& matrix, const Options& options,
                                                    std::shared_ptr<const Factorization> retired) {
  if (matrix.rows() != matrix.cols())
    throw DimensionMismatch(fmt::format("solve: the matrix under '{}' is {} x {}, not square", key,
                                        matrix.rows(), matrix.cols()));
  const std::vector<Backend> candidates = options.backend == Backend::automatic
                                              ? detail::automatic_backends(matrix)
                                              : std::vector<Backend>{options.backend};
  if (auto f = recycle(store, retired, matrix, candidates.front())) return f;
  std::vector<std::string> log;
  Result result;
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    auto f = make_with_cached_symbolic(store, matrix, candidates[c], options, result);
    if (result.ok()) {
      for (auto& line : log) f->add_log(std::move(line));
      return std::shared_ptr<const Factorization>(std::move(f));
    }
    if (c + 1 == candidates.size() || !detail::may_fall_back(result.status)) break;
    // In the factorization's log() and the solve.fallbacks counter: the caller decides what
    // to tell whom (the drivers print the log; Newton near a fold falls back every iteration).
    log.push_back(fmt::format("automatic: {} failed on '{}' ({}); fell back to {}", to_string(candidates[c]),
                              key, result.reason, to_string(candidates[c + 1])));
    store.count("solve.fallbacks");
  }
  throw NumericalError(
      fmt::format("solve: cannot factorize '{}' ({}): {}", key, to_string(result.status), result.reason));
}

}  // namespace

detail::CachedFactorization detail::cached_factorization(Store& store, const std::string& key,
                                                         const Options& options,
                                                         std::shared_ptr<const Factorization> retired) {
  FEM_EXPECTS(!distributed(options.backend), "'{}': {} is a distributed backend (fem::dist::make_solver)",
              key, to_string(options.backend));
  auto [matrix, version] = store.get_versioned<CsrMatrix>(key);
  bool computed = false;
  auto f = store.get_or_compute<Factorization>(factor_key(key, options), {{key, version}}, [&] {
    computed = true;
    return compute_cached(store, key, *matrix, options, std::move(retired));
  });
  return {std::move(matrix), std::move(f), computed};
}

SolveReport detail::checked_solve(const Factorization& f, const CsrMatrix* matrix, std::span<const double> B,
                                  std::span<double> X, index_t nrhs, bool transpose, const Options& options,
                                  bool check) {
  // With a null space the data are judged with this call's tolerance (the factorization may
  // have been made with another call's options) and corrected here; the residual is then that
  // of the data the solution answers.
  const auto n = static_cast<std::size_t>(f.size());
  std::vector<double> corrected;
  std::span<const double> data = B;
  double defect = -1;
  if (const auto& ns = f.null_space(); ns && B.size() == n * static_cast<std::size_t>(nrhs)) {
    // NaN data are named as such, not judged as incompatible with the null space.
    if (SolveReport finite = detail::check_finite(B, f.size(), nrhs, f.backend()); !finite) return finite;
    corrected.assign(B.begin(), B.end());
    SolveReport compatible =
        detail::make_data_compatible(*ns, corrected, nrhs, options.compatibility_tolerance, f.backend());
    if (!compatible) return compatible;
    defect = compatible.compatibility_defect;
    data = corrected;
  }
  SolveReport r = transpose ? f.solve_transpose(data, X, nrhs) : f.solve(data, X, nrhs);
  if (defect >= 0) r.compatibility_defect = defect;
  if (!r) return r;
  const double tolerance = options.max_relative_residual;
  const bool refuse = check && std::isfinite(tolerance);
  if (!refuse && options.refinement_steps == 0 && !options.compute_residual) return r;
  FEM_EXPECTS(matrix != nullptr, "checked_solve: the residual needs the matrix");
  // Accepted: a small residual, or (ill-conditioned) one that rounding explains; never an
  // amplification that proves the matrix singular to working precision.
  constexpr double max_backward_error = 1e-11;
  const double max_amplification = 1e-4 / std::numeric_limits<double>::epsilon();
  auto acceptable = [&](const SolveReport& s) {
    return s.amplification <= max_amplification &&
           (s.residual <= tolerance || s.backward_error <= max_backward_error);
  };
  SolveReport worst;  // the first refused column, else the largest residual
  for (index_t k = 0; k < nrhs; ++k) {
    const auto b = data.subspan(k * n, n);
    const auto x = X.subspan(k * n, n);
    SolveReport s = refine(f, *matrix, b, x, options.refinement_steps, transpose);
    if (s && refuse && !acceptable(s) && options.refinement_steps == 0)
      s = refine(f, *matrix, b, x, 3, transpose);  // an ill-conditioned matrix may still get there
    if (!s) return s;
    if (k == 0 || (acceptable(worst) && (!acceptable(s) || s.residual > worst.residual))) worst = s;
  }
  r.residual = worst.residual;
  r.backward_error = worst.backward_error;
  r.amplification = worst.amplification;
  r.refinement_steps = worst.refinement_steps;
  if (!refuse || acceptable(worst)) return r;
  const std::string steps = worst.refinement_steps > 0
                                ? fmt::format(" after {} refinement step{}", worst.refinement_steps,
                                              worst.refinement_steps == 1 ? "" : "s")
                                : "";
  if (!(worst.amplification <= max_amplification)) {
    r.status = Status::singular;
    r.reason = fmt::format(
        "{}: the matrix is singular to working precision: the scaled solution is {:.3g} times the scaled "
        "data "
        "(‖Sx‖/‖S⁻¹b‖, S² = |diag A|), a condition number beyond what double precision resolves (relative "
        "residual "
        "{:.3g}){}",
        to_string(f.backend()), worst.amplification, worst.residual, steps);
  } else {
    r.status = Status::inaccurate;
    r.reason = fmt::format(
        "{}: relative residual ‖b - Ax‖/‖b‖ = {:.3g} exceeds {:.3g} and the scaled backward error {:.3g} is "
        "more "
        "than rounding{}: the matrix is singular, or too ill-conditioned for this solver",
        to_string(f.backend()), worst.residual, tolerance, worst.backward_error, steps);
  }
  return r;
}

namespace {

std::string failure(const std::string& key, const SolveReport& r) {
  return fmt::format("solve '{}' failed ({}): {}", key, to_string(r.status), r.reason);
}

detail::CachedFactorization cached(Store& store, const std::string& key, const Options& options,
                                   std::shared_ptr<const Factorization> retired = nullptr) {
  auto c = detail::cached_factorization(store, key, options, std::move(retired));
  store.count(c.computed ? "solve.cache_misses" : "solve.cache_hits");
  return c;
}

SolveReport solve_into(Store& store, const std::string& key, std::span<const double> B, std::span<double> X,
                       index_t nrhs, bool transpose, const Options& options) {
  const auto c = cached(store, key, options);
  store.count("solve.solves");
  store.count("solve.rhs", nrhs);
  SolveReport r =
      detail::checked_solve(*c.factorization, c.matrix.get(), B, X, nrhs, transpose, options, true);
  if (!r) r.reason = failure(key, r);
  return r;
}

std::vector<double> solve_or_throw(Store& store, const std::string& key, std::span<const double> B,
                                   index_t nrhs, bool transpose, const Options& options) {
  std::vector<double> X(B.size());
  SolveReport r = solve_into(store, key, B, X, nrhs, transpose, options);
  require(r);
  return X;
}

}  // namespace

std::string factor_key(std::string_view key, const Options& options) {
  // Without null-space detection a row-sum-zero matrix is factorized as it is: another entry.
  const char* detection = options.detect_null_space ? "" : "/no-null-space-detection";
  if (options.ordering == Ordering::automatic)
    return fmt::format("{}#factor/{}{}", key, to_string(options.backend), detection);
  return fmt::format("{}#factor/{}/{}{}", key, to_string(options.backend), to_string(options.ordering),
                     detection);
}

std::shared_ptr<const Factorization> factorization(Store& store, const std::string& key,
                                                   const Options& options) {
  return cached(store, key, options).factorization;
}
std::shared_ptr<const Factorization> factorization(const std::string& key, const Options& options) {
  return factorization(fem::store(), key, options);
}
std::shared_ptr<const Factorization> factorization(Store& store, const std::string& key,
                                                   std::shared_ptr<const Factorization> retired,
                                                   const Options& options) {
  return cached(store, key, options, std::move(retired)).factorization;
}

SolveReport solve(Store& store, const std::string& key, std::span<const double> b, std::span<double> x,
                  const Options& options) {
  return solve_into(store, key, b, x, 1, false, options);
}
std::vector<double> solve(Store& store, const std::string& key, std::span<const double> b,
                          const Options& options) {
  return solve_or_throw(store, key, b, 1, false, options);
}
std::vector<double> solve(const std::string& key, std::span<const double> b, const Options& options) {
  return solve(fem::store(), key, b, options);
}
std::vector<double> solve_transpose(Store& store, const std::string& key, std::span<const double> b,
                                    const Options& options) {
  return solve_or_throw(store, key, b, 1, true, options);
}
std::vector<double> solve_transpose(const std::string& key, std::span<const double> b,
                                    const Options& options) {
  return solve_transpose(fem::store(), key, b, options);
}
std::vector<double> solve_block(Store& store, const std::string& key, std::span<const double> B, index_t nrhs,
                                const Options& options) {
  return solve_or_throw(store, key, B, nrhs, false, options);
}
std::vector<double> solve_block(const std::string& key, std::span<const double> B, index_t nrhs,
                                const Options& options) {
  return solve_block(fem::store(), key, B, nrhs, options);
}
std::vector<double> solve_transpose_block(Store& store, const std::string& key, std::span<const double> B,
                                          index_t nrhs, const Options& options) {
  return solve_or_throw(store, key, B, nrhs, true, options);
}

Inertia inertia(Store& store, const std::string& key, const Options& options) {
  const auto m = store.get_versioned<CsrMatrix>(key);
  FEM_EXPECTS(m.value->rows() == m.value->cols(), "inertia: '{}' is {} x {}, not square", key,
              m.value->rows(), m.value->cols());
  const auto in = store.get_or_compute<Inertia>(
      fmt::format("{}#inertia/{}", key, to_string(options.ordering)), {{key, m.version}}, [&]() -> Inertia {
        FEM_EXPECTS(is_symmetric(*m.value), "inertia: '{}' is not symmetric", key);
        store.count("solve.factorizations");
#ifdef FEM_SOLVE_HAVE_SUITESPARSE
        // CHOLMOD's analysis, the one its Cholesky factorizations of the pattern share.
        return detail::supernodal_ldlt_inertia(*cached_symbolic(store, *m.value, Backend::cholmod, options),
                                               *m.value);
#else
        Options o = options;
        o.detect_null_space = false;
        auto f = make_factorization(Backend::ldlt, o);
        f->use_symbolic(cached_symbolic(store, *m.value, Backend::ldlt, o));
        const Result r = f->factorize(*m.value);
        if (!r) throw NumericalError(fmt::format("inertia of '{}': {}", key, r.reason));
        return *f->inertia();
#endif
      });
  return *in;
}

}  // namespace fem::solve
