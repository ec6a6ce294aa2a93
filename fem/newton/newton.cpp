// Newton's method over the store: the Jacobian is published under "<name>/J" and factorized by
// the problem's LinearSolver (the serial cache by default); lagging solves with the
// factorization of an older version. Every norm and inner product goes through the solver's
// layout, so a distributed problem takes its decisions globally.
#include "fem/newton/newton.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "fem/array.hpp"
#include "fem/norm.hpp"

namespace fem::newton {

std::string_view to_string(Reason r) noexcept {
  switch (r) {
    case Reason::converged_atol:
      return "converged_atol";
    case Reason::converged_rtol:
      return "converged_rtol";
    case Reason::converged_step:
      return "converged_step";
    case Reason::diverged_max_iterations:
      return "diverged_max_iterations";
    case Reason::diverged_line_search:
      return "diverged_line_search";
    case Reason::diverged_nan:
      return "diverged_nan";
    case Reason::diverged_residual_growth:
      return "diverged_residual_growth";
    case Reason::diverged_linear_solve:
      return "diverged_linear_solve";
  }
  return "unknown";
}

Monitor text_monitor(std::FILE* out) {
  return [out](const Iteration& it) {
    std::fprintf(out, "newton %3d  |F| %.6e  |du| %.3e  lambda %.4g  %s  %.3f s\n", it.iteration,
                 it.residual_norm, it.step_norm, it.step_length,
                 it.iteration == 0 ? "-        " : (it.jacobian_refreshed ? "refreshed" : "reused   "),
                 it.seconds);
  };
}

Monitor json_monitor(std::FILE* out) {
  return [out](const Iteration& it) {
    std::fprintf(
        out,
        "{\"iteration\": %d, \"residual_norm\": %.17g, \"step_norm\": %.17g, \"step_length\": %.17g, "
        "\"jacobian_refreshed\": %s, \"seconds\": %.9g}\n",
        it.iteration, it.residual_norm, it.step_norm, it.step_length,
        it.jacobian_refreshed ? "true" : "false", it.seconds);
  };
}

namespace {

using clock = std::chrono::steady_clock;

bool finite(double x) { return std::isfinite(x); }

// The problem's inner product (its solver's layout: on a distributed problem a global
// reduction, so every process sees the same value) and its norm.
class Inner {
 public:
  explicit Inner(const Layout& layout) : layout_(layout) {}
  double dot(std::span<const double> a, std::span<const double> b) const { return layout_.dot(a, b); }
  /// Scaled (fem/norm.hpp): a residual of 1e200 is a norm of 1e200, not an overflow to inf.
  double norm(std::span<const double> v) const {
    double largest = 0;
    for (const double x : v) largest = std::max(largest, std::abs(x));
    const double scale = square_scale(layout_.processes().max(largest));
    if (scale == 1.0) return std::sqrt(layout_.dot(v, v));
    std::vector<double> scaled(v.begin(), v.end());
    for (double& x : scaled) x /= scale;
    return scale * std::sqrt(layout_.dot(scaled, scaled));
  }

 private:
  const Layout& layout_;
};

// Anderson acceleration (type II) of the steps δ_k = J₀⁻¹F(u_k) taken with one factorization
// J₀ (Newton updates u ← u − δ): with D_i = δ_{i+1} − δ_i and U_i = u_{i+1} − u_i over the last
// m steps, γ = argmin ‖δ_k − D γ‖ and the step becomes δ_k − (D − U) γ. The least-squares
// problem goes through its m × m Gram matrix, kept up to date one column per step, and a
// Cholesky factorization that skips the columns that are numerically dependent on newer ones.
class Anderson {
 public:
  Anderson(int depth, const Inner& inner)
      : depth_(depth), inner_(inner), gram_(static_cast<std::size_t>(depth) * depth) {}

  void reset() {
    count_ = 0;
    have_last_ = false;
  }

  // Record (u, δ) and replace δ by the accelerated step.
  void accelerate(std::span<const double> u, std::span<double> delta) {
    if (depth_ == 0) return;
    const std::size_t n = u.size();
    if (have_last_) {
      const int slot = (first_ + count_) % depth_;
      if (count_ == depth_)
        first_ = (first_ + 1) % depth_;  // the oldest column is overwritten
      else
        ++count_;
      if (D_.size() < static_cast<std::size_t>(depth_)) D_.resize(depth_), W_.resize(depth_);
      auto& d = D_[slot];
      auto& w = W_[slot];
      d.resize(n), w.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = delta[i] - last_delta_[i];
        w[i] = d[i] - (u[i] - last_u_[i]);
      }
      for (int k = 0; k < count_; ++k) {
        const int other = (first_ + k) % depth_;
        gram_[slot * depth_ + other] = gram_[other * depth_ + slot] = inner_.dot(d, D_[other]);
      }
    }
    last_u_.assign(u.begin(), u.end());
    last_delta_.assign(delta.begin(), delta.end());
    have_last_ = true;
    if (count_ == 0) return;

    // Columns newest first, each kept only when it is not (numerically) a combination of the
    // ones kept before it: a degenerate newest difference cannot switch the acceleration off.
    int kept[kMaxDepth], m = 0;
    double L[kMaxDepth][kMaxDepth], rhs[kMaxDepth], gamma[kMaxDepth];
    auto G = [&](int i, int j) { return gram_[kept[i] * depth_ + kept[j]]; };
    for (int age = count_ - 1; age >= 0; --age) {
      kept[m] = (first_ + age) % depth_;
      double diag = G(m, m);
      for (int j = 0; j < m; ++j) {
        double v = G(m, j);
        for (int k = 0; k < j; ++k) v -= L[m][k] * L[j][k];
        L[m][j] = v / L[j][j];
        diag -= L[m][j] * L[m][j];
      }
      if (!(diag > 1e-12 * G(m, m))) continue;
      L[m][m] = std::sqrt(diag);
      rhs[m] = inner_.dot(D_[kept[m]], delta);
      ++m;
    }
    // γ = G⁻¹ rhs over the kept columns, then δ −= Σ γ_k W_k.
    for (int i = 0; i < m; ++i) {
      double v = rhs[i];
      for (int k = 0; k < i; ++k) v -= L[i][k] * gamma[k];
      gamma[i] = v / L[i][i];
    }
    for (int i = m - 1; i >= 0; --i) {
      double v = gamma[i];
      for (int k = i + 1; k < m; ++k) v -= L[k][i] * gamma[k];
      gamma[i] = v / L[i][i];
    }
    for (int k = 0; k < m; ++k) {
      const auto& w = W_[kept[k]];
      for (std::size_t i = 0; i < n; ++i) delta[i] -= gamma[k] * w[i];
    }
  }

  static constexpr int kMaxDepth = 16;

 private:
  int depth_;
  const Inner& inner_;
  std::vector<double> gram_;
  std::vector<std::vector<double>> D_, W_;
  std::vector<double> last_u_, last_delta_;
  int first_ = 0, count_ = 0;
  bool have_last_ = false;
};

}  // namespace

Result solve(const Problem& problem, std::span<double> u, const Options& options) {
  FEM_EXPECTS(problem.residual && problem.jacobian, "Newton problem '{}' needs a residual and a Jacobian",
              problem.name);
  FEM_EXPECTS(!problem.name.empty(), "a Newton problem needs a name (its store keys derive from it)");
  FEM_EXPECTS(options.lagging.max_reuse >= 1, "Jacobian lag must be at least 1, not {}",
              options.lagging.max_reuse);
  FEM_EXPECTS(options.lagging.anderson >= 0 && options.lagging.anderson <= Anderson::kMaxDepth,
              "Anderson depth must be in [0, {}], not {}", Anderson::kMaxDepth, options.lagging.anderson);
  const std::shared_ptr<solve::LinearSolver> solver =
      problem.solver ? problem.solver : solve::make_solver(options.linear);
  const Inner inner(solver->layout());
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
    timings.other = std::max(
        0.0, result.seconds - timings.residual - timings.jacobian - timings.factorization - timings.solve);
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
  if (problem.residual_and_jacobian && !options.reuse_factorization)
    residual_and_jacobian(u, F);
  else
    residual(u, F);
  double fnorm = inner.norm(F);
  result.initial_residual_norm = result.residual_norm = fnorm;
  record({0, fnorm, 0, 0, false, std::chrono::duration<double>(clock::now() - start).count()});
  if (!finite(fnorm)) return finish(Reason::diverged_nan);
  const double f0 = fnorm;
  const double divergence_limit = options.divergence_tolerance * std::max(f0, options.atol);

  // The solver may hold the factorization of an older J than the latest: lagging.
  bool factorized = options.reuse_factorization;
  // Factorize the Jacobian just published: an empty string, or why not. When the solver holds
  // the last reference to the previous factorization (the put dropped the store's), the solve
  // kernel refactorizes into its memory instead of a new one.
  auto factorize = [&]() -> std::string {
    try {
      solver->factorize(store, jacobian_key);
      return {};
    } catch (const NumericalError& e) {
      return fmt::format("the factorization of '{}' failed: {}", jacobian_key, e.what());
    }
  };
  // δ = J⁻¹F with the last factorization.
  auto linear_solve = [&]() -> solve::SolveReport {
    ++result.linear_solves;
    return solver->solve(F, delta, Sums::consistent);
  };
  Anderson anderson(options.lagging.anderson, inner);  // over the steps of the last factorization
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
      std::string failure = timed(timings.factorization, factorize);
      if (!failure.empty()) {
        result.message = std::move(failure);
        return false;
      }
      factorized = true;
      uses_since_refresh = 0;
      anderson.reset();
      ++result.jacobian_refreshes;
      return true;
    };
    bool refreshed = false;
    const bool stale = factorized && (uses_since_refresh >= options.lagging.max_reuse ||
                                      last_ratio > options.lagging.min_reduction);
    if (!factorized || stale) {
      if (!refresh()) return finish(Reason::diverged_linear_solve);
      refreshed = true;
    }

    // Newton step and line search; a failure with a reused Jacobian retries with a fresh one.
    double lambda = 1, fnew = 0;
    for (;;) {
      const solve::SolveReport report = timed(timings.solve, linear_solve);
      if (!report.ok()) {
        if (refreshed) {
          result.message = report.reason;
          return finish(Reason::diverged_linear_solve);
        }
        if (!refresh()) return finish(Reason::diverged_linear_solve);
        refreshed = true;
        continue;
      }
      anderson.accelerate(u, delta);
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
        fnew = inner.norm(F_trial);
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
    const double step = lambda * inner.norm(delta);
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
    if (options.stol > 0 && step <= options.stol * inner.norm(u)) return finish(Reason::converged_step);
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
      if (!have_converged) break;                      // the start itself failed
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
