// Newton's method over the store: the Jacobian is published under "<name>/J" and factorized
// through the solve kernel's cache; lagging keeps the factorization object of an older version.
#include "fem/newton/newton.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "fem/array.hpp"

namespace fem::newton {

std::string_view to_string(Reason r) noexcept {
  switch (r) {
    case Reason::converged_atol: return "converged_atol";
    case Reason::converged_rtol: return "converged_rtol";
    case Reason::converged_step: return "converged_step";
    case Reason::diverged_max_iterations: return "diverged_max_iterations";
    case Reason::diverged_line_search: return "diverged_line_search";
    case Reason::diverged_nan: return "diverged_nan";
    case Reason::diverged_residual_growth: return "diverged_residual_growth";
    case Reason::diverged_linear_solve: return "diverged_linear_solve";
  }
  return "unknown";
}

Monitor text_monitor(std::FILE* out) {
  return [out](const Iteration& it) {
    std::fprintf(out, "newton %3d  |F| %.6e  |du| %.3e  lambda %.4g  %s  %.3f s\n", it.iteration, it.residual_norm,
                 it.step_norm, it.step_length, it.iteration == 0 ? "-        " : (it.jacobian_refreshed ? "refreshed" : "reused   "),
                 it.seconds);
  };
}

Monitor json_monitor(std::FILE* out) {
  return [out](const Iteration& it) {
    std::fprintf(out,
                 "{\"iteration\": %d, \"residual_norm\": %.17g, \"step_norm\": %.17g, \"step_length\": %.17g, "
                 "\"jacobian_refreshed\": %s, \"seconds\": %.9g}\n",
                 it.iteration, it.residual_norm, it.step_norm, it.step_length, it.jacobian_refreshed ? "true" : "false",
                 it.seconds);
  };
}

namespace {

using clock = std::chrono::steady_clock;

double norm(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

bool finite(double x) { return std::isfinite(x); }

}  // namespace

Result solve(const Problem& problem, std::span<double> u, const Options& options) {
  FEM_EXPECTS(problem.residual && problem.jacobian, "Newton problem '{}' needs a residual and a Jacobian",
              problem.name);
  FEM_EXPECTS(!problem.name.empty(), "a Newton problem needs a name (its store keys derive from it)");
  FEM_EXPECTS(options.lagging.max_reuse >= 1, "Jacobian lag must be at least 1, not {}", options.lagging.max_reuse);
  Store& store = *problem.store;
  const std::string jacobian_key = problem.name + "/J";
  const auto start = clock::now();
  const std::size_t n = u.size();

  Result result;
  const std::int64_t analyses_before = store.counter("solve.symbolic_analyses");
  Timings& timings = result.timings;
  // Wall time of one phase, added to its total.
  auto timed = [](double& total, auto&& phase) {
    const auto t = clock::now();
    struct Add {
      double& total;
      clock::time_point t;
      ~Add() { total += std::chrono::duration<double>(clock::now() - t).count(); }
    } add{total, t};
    return phase();
  };
  auto residual = [&](std::span<const double> x, std::span<double> out) {
    timed(timings.residual, [&] { problem.residual(x, out); });
  };
  std::vector<double> F(n), delta(n), trial(n), F_trial(n);
  auto finish = [&](Reason reason) {
    result.reason = reason;
    result.converged = converged(reason);
    result.seconds = std::chrono::duration<double>(clock::now() - start).count();
    result.symbolic_analyses = static_cast<int>(store.counter("solve.symbolic_analyses") - analyses_before);
    timings.other = std::max(0.0, result.seconds - timings.residual - timings.jacobian - timings.factorization -
                                      timings.solve);
    store.put(problem.name + "/u", Array<double>(std::vector<double>(u.begin(), u.end())));
    store.put(problem.name + "/F", Array<double>(std::move(F)));
    return result;
  };
  auto record = [&](Iteration it) {
    result.history.push_back(it);
    if (options.monitor) options.monitor(it);
  };

  // A Jacobian assembled together with the residual at the current u (Problem::
  // residual_and_jacobian), for the next refresh.
  std::optional<CsrMatrix> pending;
  auto residual_and_jacobian = [&](std::span<const double> x, std::span<double> out) {
    timed(timings.jacobian, [&] { pending.emplace(problem.residual_and_jacobian(x, out)); });
  };
  // The first iteration always factorizes J(u₀).
  if (problem.residual_and_jacobian)
    residual_and_jacobian(u, F);
  else
    residual(u, F);
  double fnorm = norm(F);
  result.initial_residual_norm = result.residual_norm = fnorm;
  record({0, fnorm, 0, 0, false, std::chrono::duration<double>(clock::now() - start).count()});
  if (!finite(fnorm)) return finish(Reason::diverged_nan);
  const double f0 = fnorm;
  const double divergence_limit = options.divergence_tolerance * std::max(f0, options.atol);

  std::shared_ptr<const solve::Factorization> factors;  // may be older than the latest J: lagging
  int uses_since_refresh = 0;
  double last_ratio = 0;
  for (int k = 1;; ++k) {
    if (fnorm <= options.atol) return finish(Reason::converged_atol);
    if (fnorm <= options.rtol * f0) return finish(Reason::converged_rtol);
    if (k > options.max_iterations) return finish(Reason::diverged_max_iterations);
    const auto t0 = clock::now();

    auto refresh = [&]() -> bool {
      timed(timings.jacobian, [&] {
        store.put(jacobian_key, pending ? std::move(*pending) : problem.jacobian(u));
        pending.reset();
      });
      try {
        // The put dropped the store's entry of the old factorization: when `factors` is its
        // last holder, the solve kernel refactorizes into its memory instead of a new one.
        timed(timings.factorization,
              [&] { factors = solve::factorization(store, jacobian_key, std::move(factors), options.linear); });
      } catch (const NumericalError&) {
        return false;
      }
      uses_since_refresh = 0;
      ++result.jacobian_refreshes;
      return true;
    };
    bool refreshed = false;
    const bool stale = factors && (uses_since_refresh >= options.lagging.max_reuse ||
                                   last_ratio > options.lagging.min_reduction);
    if (!factors || stale) {
      if (!refresh()) return finish(Reason::diverged_linear_solve);
      refreshed = true;
    }

    // Newton step and line search; a failure with a reused Jacobian retries with a fresh one.
    double lambda = 1, fnew = 0;
    for (;;) {
      if (!timed(timings.solve, [&] { return factors->solve(F, delta).ok(); })) {
        if (refreshed) return finish(Reason::diverged_linear_solve);
        if (!refresh()) return finish(Reason::diverged_linear_solve);
        refreshed = true;
        continue;
      }
      bool accepted = false;
      lambda = 1;
      for (;;) {
        for (std::size_t i = 0; i < n; ++i) trial[i] = u[i] - lambda * delta[i];
        // Without line search the trial is the next iterate; when the next iteration will
        // refresh the Jacobian anyway, assemble it now, with the residual.
        if (problem.residual_and_jacobian && options.line_search == LineSearch::none &&
            uses_since_refresh + 1 >= options.lagging.max_reuse)
          residual_and_jacobian(trial, F_trial);
        else
          residual(trial, F_trial);
        fnew = norm(F_trial);
        if (options.line_search == LineSearch::none) {
          accepted = true;
          break;
        }
        if (finite(fnew) && fnew <= (1 - options.armijo * lambda) * fnorm) {
          accepted = true;
          break;
        }
        lambda /= 2;
        if (lambda < options.min_step_length) break;
      }
      if (accepted) break;
      if (refreshed) return finish(Reason::diverged_line_search);
      if (!refresh()) return finish(Reason::diverged_linear_solve);
      refreshed = true;
    }
    const double step = lambda * norm(delta);
    ++uses_since_refresh;
    result.iterations = k;
    record({k, fnew, step, lambda, refreshed, std::chrono::duration<double>(clock::now() - t0).count()});
    // Never hand back a non-finite iterate: u keeps the last finite one.
    if (!finite(fnew) || !finite(step)) return finish(Reason::diverged_nan);
    std::copy(trial.begin(), trial.end(), u.begin());
    F.swap(F_trial);
    last_ratio = fnorm > 0 ? fnew / fnorm : 0;
    fnorm = result.residual_norm = fnew;
    if (fnorm > divergence_limit) return finish(Reason::diverged_residual_growth);
    if (options.stol > 0 && step <= options.stol * norm(u)) return finish(Reason::converged_step);
  }
}

ContinuationResult continuation(const std::function<Problem(double)>& problem_at, std::span<double> u,
                                const ContinuationOptions& c, const Options& options) {
  FEM_EXPECTS(c.step != 0 && c.min_step > 0, "continuation needs a non-zero step and a positive min_step");
  ContinuationResult out;
  std::vector<double> last(u.begin(), u.end());
  const double direction = c.end >= c.start ? 1.0 : -1.0;
  double p = c.start, step = std::abs(c.step);
  bool have_converged = false;
  for (int s = 0; s < c.max_steps; ++s) {
    Result r = solve(problem_at(p), u, options);
    if (r.converged) {
      have_converged = true;
      out.parameters.push_back(p);
      out.results.push_back(std::move(r));
      out.last_parameter = p;
      std::copy(u.begin(), u.end(), last.begin());
      if (direction * (c.end - p) <= 0) {
        out.reached_end = true;
        break;
      }
      if (out.results.back().iterations <= 4) step *= c.growth;
    } else {
      ++out.failures;
      std::copy(last.begin(), last.end(), u.begin());  // warm start from the last solution
      if (!have_converged) break;                       // the start itself failed
      p = out.last_parameter;
      step /= 2;
      if (step < c.min_step) break;
    }
    p = have_converged ? out.last_parameter + direction * step : p;
    if (direction * (p - c.end) > 0) p = c.end;
  }
  return out;
}

}  // namespace fem::newton
