// fem::time (time.hpp): the schemes' matrices as store entries named by their coefficients, the
// Dirichlet lift of each, the steps, step doubling and the ladder controller.
#include "fem/time/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "fem/error.hpp"
#include "fem/newton/newton.hpp"

namespace fem::time {

std::string_view to_string(Scheme s) noexcept {
  switch (s) {
    case Scheme::backward_euler:
      return "backward-euler";
    case Scheme::crank_nicolson:
      return "crank-nicolson";
    case Scheme::theta:
      return "theta";
    case Scheme::bdf2:
      return "bdf2";
    case Scheme::newmark:
      return "newmark";
    case Scheme::generalized_alpha:
      return "generalized-alpha";
  }
  return "?";
}

namespace {

// What the constrained unknowns add to a right-hand side, from the unconstrained matrix: for
// free rows b_i −= Σ_j A_ij g_j, for constrained rows b_k = A_kk g_k (the matrix keeps A_kk there,
// its other entries in the row and column zeroed).
struct Lift {
  std::vector<index_t> row, which;  // A_ij with j the `which`-th constrained unknown, i free
  std::vector<double> value;
  std::vector<double> diagonal;  // A_kk per constrained unknown
  void apply(std::span<const index_t> dofs, std::span<const double> g, std::span<double> b) const {
    for (std::size_t e = 0; e < row.size(); ++e) b[row[e]] -= value[e] * g[which[e]];
    for (std::size_t k = 0; k < dofs.size(); ++k) b[dofs[k]] = diagonal[k] * g[k];
  }
};

// cM·M + cK·K with the rows and columns of `dofs` zeroed but their diagonal, and its lift.
std::pair<CsrMatrix, Lift> system(const CsrMatrix& M, const CsrMatrix& K, double cM, double cK,
                                  std::span<const index_t> dofs) {
  FEM_EXPECTS(M.pattern_ptr() == K.pattern_ptr() || M.pattern().same_structure(K.pattern()),
              "time: M and K must share one pattern (assemble them on one space)");
  std::vector<double> v(K.nnz());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = cM * M.values()[i] + cK * K.values()[i];
  std::vector<index_t> which(static_cast<std::size_t>(K.rows()), -1);
  for (std::size_t k = 0; k < dofs.size(); ++k)
    which[static_cast<std::size_t>(dofs[k])] = static_cast<index_t>(k);
  Lift lift;
  lift.diagonal.assign(dofs.size(), 0.0);
  const auto& p = K.pattern();
  for (index_t r = 0; r < K.rows(); ++r)
    for (index_t e = p.row_offsets()[r]; e < p.row_offsets()[r + 1]; ++e) {
      const index_t c = p.col_indices()[e];
      const index_t wr = which[static_cast<std::size_t>(r)], wc = which[static_cast<std::size_t>(c)];
      double& a = v[static_cast<std::size_t>(e)];
      if (wr >= 0) {
        if (c == r)
          lift.diagonal[static_cast<std::size_t>(wr)] = a;
        else
          a = 0.0;
      } else if (wc >= 0) {
        lift.row.push_back(r);
        lift.which.push_back(wc);
        lift.value.push_back(a);
        a = 0.0;
      }
    }
  return {CsrMatrix(K.pattern_ptr(), std::move(v)), std::move(lift)};
}

std::string system_key(const std::string& name, double cM, double cK) {
  return fmt::format("{}/A/{:a}/{:a}", name, cM, cK);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double max_abs(std::span<const double> x, const Layout& layout) {
  double m = 0;
  for (double v : x) m = std::max(m, std::abs(v));
  return layout.processes().max(m);
}

}  // namespace

// The systems made so far (key → lift, and the M, K versions they were made from).
struct FirstOrderStepper::Impl {
  struct Entry {
    Lift lift;
    Version m = 0, k = 0;
  };
  std::map<std::string, Entry> systems;
  std::vector<double> g, b, f0, f1, work;
  double k_time = std::numeric_limits<double>::quiet_NaN();  ///< when p.stiffness: K's time in the store
  double f_time = std::numeric_limits<double>::quiet_NaN();  ///< the time f0 holds f at
  bool newton_factorized = false;  ///< the solver holds a factorization of `<name>/newton/J`
};

FirstOrderStepper::FirstOrderStepper(Store& store, FirstOrder problem, FirstOrderOptions options,
                                     std::vector<double> u0, double t0)
    : store_(store),
      p_(std::move(problem)),
      o_(options),
      impl_(std::make_unique<Impl>()),
      u_(std::move(u0)),
      t_(t0),
      dt_(options.dt) {
  FEM_EXPECTS(!p_.name.empty(), "time: the problem needs a name (the prefix of its store entries)");
  FEM_EXPECTS(std::isfinite(o_.dt) && o_.dt > 0, "time: dt is {}; a positive step", o_.dt);
  if (o_.scheme == Scheme::theta)
    FEM_EXPECTS(o_.theta >= 0.5 && o_.theta <= 1.0,
                "time: θ = {} is outside [0.5, 1] (unconditionally stable)", o_.theta);
  FEM_EXPECTS(o_.scheme != Scheme::newmark && o_.scheme != Scheme::generalized_alpha,
              "time: {} is a second-order scheme (SecondOrderStepper)", to_string(o_.scheme));
  FEM_EXPECTS(o_.tolerance >= 0, "time: tolerance {} is negative", o_.tolerance);
  if (o_.dt_min <= 0) o_.dt_min = o_.dt / 1024;
  FEM_EXPECTS(o_.dt_min <= o_.dt && o_.dt <= o_.dt_max, "time: dt {} is outside [dt_min {}, dt_max {}]",
              o_.dt, o_.dt_min, o_.dt_max);
  FEM_EXPECTS(o_.rannacher_steps >= 0, "time: rannacher_steps {} is negative", o_.rannacher_steps);
  solver_ = p_.solver ? p_.solver : std::shared_ptr<solve::LinearSolver>(solve::make_solver(o_.linear));
  const auto M = store_.get<CsrMatrix>(p_.M);
  FEM_EXPECTS(static_cast<std::size_t>(M->rows()) == u_.size(), "time: u0 has {} entries, M '{}' {} rows",
              u_.size(), p_.M, M->rows());
  FEM_EXPECTS(std::is_sorted(p_.dirichlet.dofs.begin(), p_.dirichlet.dofs.end()),
              "time: the constrained unknowns must be sorted");
  FEM_EXPECTS(p_.dirichlet.dofs.empty() || (p_.dirichlet.dofs.front() >= 0 &&
                                            static_cast<std::size_t>(p_.dirichlet.dofs.back()) < u_.size()),
              "time: a constrained unknown is outside 0 .. {}", u_.size() - 1);
  impl_->g.assign(p_.dirichlet.dofs.size(), 0.0);  // u0 as given, even where it disagrees with g(t0)
  report_.scheme = std::string(to_string(o_.scheme));
  const double size0 = max_abs(u_, solver_->layout());
  atol_ = o_.absolute_tolerance >= 0 ? o_.absolute_tolerance : o_.tolerance * (size0 > 0 ? size0 : 1.0);
}

FirstOrderStepper::~FirstOrderStepper() = default;

bool FirstOrderStepper::advance(double h, bool first_order, std::vector<double>& out,
                                const std::vector<double>& from, const std::vector<double>* before,
                                double t_from, double h_before) {
  Impl& s = *impl_;
  const std::size_t n = from.size();
  const double t1 = t_from + h;
  // The scheme: M u1 + c (K u1 + N(t1, u1)) = rhs, with rhs from the known states.
  double theta = o_.scheme == Scheme::crank_nicolson ? 0.5 : o_.scheme == Scheme::theta ? o_.theta : 1.0;
  const bool bdf2 = o_.scheme == Scheme::bdf2 && !first_order && before;
  if (first_order) theta = 1.0;
  // A K in t: K(t_from) for the explicit part, K(t1) published for the matrix.
  std::shared_ptr<const CsrMatrix> k_from;
  if (p_.stiffness) {
    const auto at = [&](double t) {
      const auto K = store_.get<CsrMatrix>(p_.K);
      std::vector<double> v(K->nnz(), 0.0);
      p_.stiffness(t, v);
      return std::make_shared<const CsrMatrix>(K->pattern_ptr(), std::move(v));
    };
    if (theta < 1 && !bdf2) k_from = s.k_time == t_from ? store_.get<CsrMatrix>(p_.K) : at(t_from);
    if (s.k_time != t1) {
      store_.put(p_.K, at(t1));
      s.k_time = t1;
    }
  }
  const auto M = store_.get_versioned<CsrMatrix>(p_.M);
  const auto K = store_.get_versioned<CsrMatrix>(p_.K);
  double c = theta * h, a = 1, omega = 0;
  if (bdf2) {
    omega = h / h_before;
    a = (1 + omega) / (1 + 2 * omega);
    c = a * h;
  }
  if (std::find(report_.distinct_dts.begin(), report_.distinct_dts.end(), h) == report_.distinct_dts.end())
    report_.distinct_dts.push_back(h);
  // The right-hand side.
  s.b.assign(n, 0.0);
  s.work.assign(n, 0.0);
  s.f1.assign(n, 0.0);
  if (p_.load) p_.load(t1, s.f1);
  if (bdf2) {
    M.value->multiply(from, s.work);
    for (std::size_t i = 0; i < n; ++i) s.b[i] = (1 + omega) * s.work[i];
    M.value->multiply(*before, s.work);
    for (std::size_t i = 0; i < n; ++i)
      s.b[i] = a * (s.b[i] - omega * omega / (1 + omega) * s.work[i] + h * s.f1[i]);
  } else {
    M.value->multiply(from, s.b);
    if (theta < 1.0) {
      (k_from ? *k_from : *K.value).multiply(from, s.work);
      if (p_.nonlinear) p_.nonlinear.residual(t_from, from, s.work);
      // f(t_n): the previous step's f(t_{n+1}) when it ended at t_n (the load is a function of t).
      if (s.f_time != t_from) {
        s.f0.assign(n, 0.0);
        if (p_.load) p_.load(t_from, s.f0);
      }
      for (std::size_t i = 0; i < n; ++i)
        s.b[i] += -(1 - theta) * h * s.work[i] + h * (theta * s.f1[i] + (1 - theta) * s.f0[i]);
    } else {
      for (std::size_t i = 0; i < n; ++i) s.b[i] += h * s.f1[i];
    }
  }
  s.f0.swap(s.f1);  // f(t1), the next step's f(t_n)
  s.f_time = t1;
  if (p_.dirichlet.values) p_.dirichlet.values(t1, s.g);
  if (p_.nonlinear) return newton_solve(c, t1, *M.value, *K.value, from, out);

  const std::string key = system_key(p_.name, 1.0, c);
  auto it = s.systems.find(key);
  if (it == s.systems.end() || it->second.m != M.version || it->second.k != K.version ||
      !store_.contains(key)) {
    auto [A, lift] = system(*M.value, *K.value, 1.0, c, p_.dirichlet.dofs);
    store_.put(key, std::move(A));
    if (s.systems.find(key) == s.systems.end()) ++report_.systems;
    s.systems[key] = {std::move(lift), M.version, K.version};
    it = s.systems.find(key);
  }
  auto clock = std::chrono::steady_clock::now();
  solver_->factorize(store_, key);
  report_.factorize_seconds += seconds_since(clock);
  it->second.lift.apply(p_.dirichlet.dofs, s.g, s.b);
  out.assign(n, 0.0);
  clock = std::chrono::steady_clock::now();
  solve::require(solver_->solve(s.b, out));
  report_.solve_seconds += seconds_since(clock);
  ++report_.solves;
  return true;
}

// G(u) = M u + c (K u + N(t1, u)) − b = 0 by Newton from `from`, with u = g(t1) at the
// constrained unknowns (their rows of G zeroed, of the Jacobian the identity's pattern: only the
// diagonal kept).
bool FirstOrderStepper::newton_solve(double c, double t1, const CsrMatrix& M, const CsrMatrix& K,
                                     const std::vector<double>& from, std::vector<double>& out) {
  Impl& s = *impl_;
  const std::size_t n = from.size();
  const auto& dofs = p_.dirichlet.dofs;
  const Layout& layout = solver_->layout();
  out = from;
  for (std::size_t k = 0; k < dofs.size(); ++k) out[static_cast<std::size_t>(dofs[k])] = s.g[k];
  newton::Problem problem;
  problem.name = p_.name + "/newton";
  problem.store = &store_;
  problem.solver = solver_;
  problem.residual = [&](std::span<const double> u, std::span<double> G) {
    std::vector<double> w(n, 0.0);
    layout.processes().collective([&] {
      M.multiply(u, G);
      K.multiply(u, w);
      p_.nonlinear.residual(t1, u, w);
    });
    for (std::size_t i = 0; i < n; ++i) G[i] += c * w[i] - s.b[i];
    layout.accumulate(G);
    for (index_t d : dofs) G[static_cast<std::size_t>(d)] = 0.0;
    if (p_.nonlinear.null_space) p_.nonlinear.null_space->make_compatible(G);
  };
  problem.jacobian = [&](std::span<const double> u) {
    std::vector<double> v(K.nnz(), 0.0);
    layout.processes().collective([&] { p_.nonlinear.jacobian(t1, u, v); });
    for (std::size_t e = 0; e < v.size(); ++e) v[e] += K.values()[e];
    CsrMatrix J = system(M, CsrMatrix(K.pattern_ptr(), std::move(v)), 1.0, c, dofs).first;
    if (!p_.nonlinear.null_space) return J;
    return CsrMatrix(J.pattern_ptr(), std::vector<double>(J.values().begin(), J.values().end()),
                     p_.nonlinear.null_space);
  };
  newton::Options options = o_.newton;
  // A lagged Newton starts from the last step's Jacobian (the solver still holds its factorization).
  options.reuse_factorization = options.lagging.max_reuse > 1 && s.newton_factorized;
  newton::Result r = newton::solve(problem, out, options);
  if (!r.converged && options.reuse_factorization) {  // the old Jacobian was too far off
    out = from;
    for (std::size_t k = 0; k < dofs.size(); ++k) out[static_cast<std::size_t>(dofs[k])] = s.g[k];
    report_.newton_iterations += r.iterations;
    report_.solves += r.linear_solves;
    options.reuse_factorization = false;
    r = newton::solve(problem, out, options);
  }
  s.newton_factorized = s.newton_factorized || r.jacobian_refreshes > 0;
  report_.newton_iterations += r.iterations;
  report_.jacobians += r.jacobian_refreshes;
  report_.factorize_seconds += r.timings.factorization;
  report_.solve_seconds += r.timings.solve;
  report_.solves += r.linear_solves;
  if (r.jacobian_refreshes > 0) report_.systems = report_.jacobians;
  return r.converged;
}

double FirstOrderStepper::step(double max_dt) {
  FEM_EXPECTS(max_dt > 0, "time: step(max_dt = {}): a positive bound on the step", max_dt);
  const bool cn = o_.scheme == Scheme::crank_nicolson;
  const bool second = cn || o_.scheme == Scheme::bdf2 || (o_.scheme == Scheme::theta && o_.theta == 0.5);
  std::vector<double> next, half, mid;
  for (;;) {
    // The last step of a run lands on its end; a remainder within rounding of dt is dt (its matrix).
    double h = max_dt < dt_ * (1 - 1e-9) ? max_dt : dt_;
    const bool start = steps_ == 0;
    // Rannacher: the first steps of CN as two backward-Euler half steps (M + h/2 K: CN's matrix).
    const bool rannacher = cn && steps_ < o_.rannacher_steps;
    const auto one = [&](double hh, const std::vector<double>& from, const std::vector<double>* before,
                         double t_from, double h_before, std::vector<double>& out) {
      if (rannacher)
        return advance(hh / 2, true, mid, from, nullptr, t_from, 0) &&
               advance(hh / 2, true, out, mid, nullptr, t_from + hh / 2, 0);
      // BDF2 starts with one backward-Euler step.
      return advance(hh, start && o_.scheme == Scheme::bdf2 && !before, out, from, before, t_from, h_before);
    };
    // A nonlinear step whose Newton solve failed: retried at half the step.
    const auto halve = [&](const char* why) {
      ++report_.rejected;
      FEM_EXPECTS(dt_ / 2 >= o_.dt_min * (1 - 1e-12),
                  "time: {} at t = {:.6g} with the smallest step {:.6g} (dt_min)", why, t_, dt_);
      dt_ /= 2;
    };
    const std::vector<double>* before = steps_ > 0 && o_.scheme == Scheme::bdf2 ? &u_prev_ : nullptr;
    if (o_.tolerance <= 0) {
      if (!one(h, u_, before, t_, dt_prev_, next)) {
        ++report_.newton_failures;
        halve("Newton's method did not converge");
        continue;
      }
    } else {
      // Step doubling: one step of h against two of h/2 (all on the ladder).
      std::vector<double> big;
      if (!one(h, u_, before, t_, dt_prev_, big) || !one(h / 2, u_, before, t_, dt_prev_, half) ||
          !one(h / 2, half, o_.scheme == Scheme::bdf2 ? &u_ : nullptr, t_ + h / 2, h / 2, next)) {
        ++report_.newton_failures;
        halve("Newton's method did not converge");
        continue;
      }
      const int order = second && !(rannacher || (o_.scheme == Scheme::bdf2 && start)) ? 2 : 1;
      double e = 0;
      for (std::size_t i = 0; i < next.size(); ++i) e = std::max(e, std::abs(big[i] - next[i]));
      const Layout& layout = solver_->layout();
      // Relative to the solution's size, with an absolute floor (a solution starting from 0).
      const double allowed = atol_ + o_.tolerance * max_abs(next, layout);
      const double error = layout.processes().max(e) / (std::pow(2.0, order) - 1) / allowed * o_.tolerance;
      if (error > o_.tolerance) {
        halve(fmt::format("the step error {:.3g} exceeds the tolerance {:.3g}", error, o_.tolerance).c_str());
        continue;
      }
      if (error < o_.tolerance / std::pow(2.0, order + 1) && dt_ * 2 <= o_.dt_max) dt_ *= 2;  // next step
    }
    u_prev_ = std::move(u_);
    u_ = std::move(next);
    t_ += h;
    dt_prev_ = h;
    ++steps_;
    ++report_.accepted;
    report_.dt_min = std::min(report_.dt_min, h);
    report_.dt_max = std::max(report_.dt_max, h);
    return h;
  }
}

void FirstOrderStepper::set_stiffness(std::function<void(double t, std::span<double> values)> stiffness) {
  p_.stiffness = std::move(stiffness);
  impl_->k_time = std::numeric_limits<double>::quiet_NaN();  // K(t) from the next step on
}

void FirstOrderStepper::set_nonlinear(Nonlinear nonlinear, const newton::Options& options) {
  p_.nonlinear = std::move(nonlinear);
  o_.newton = options;
  impl_->newton_factorized = false;  // the solver holds no Jacobian of this N yet
}

void FirstOrderStepper::advance_to(double t_end, const std::function<void(const FirstOrderStepper&)>& each) {
  while (t_ < t_end - 1e-12 * std::max(1.0, std::abs(t_end))) {
    step(t_end - t_);
    if (each) each(*this);
  }
}

// --- second order ----------------------------------------------------------------------------

SecondOrderStepper::SecondOrderStepper(Store& store, SecondOrder problem, SecondOrderOptions options,
                                       std::vector<double> u0, std::vector<double> v0, double t0)
    : store_(store),
      p_(std::move(problem)),
      o_(options),
      u_(std::move(u0)),
      v_(std::move(v0)),
      t_(t0),
      dt_(options.dt) {
  FEM_EXPECTS(!p_.name.empty(), "time: the problem needs a name (the prefix of its store entries)");
  FEM_EXPECTS(std::isfinite(o_.dt) && o_.dt > 0, "time: dt is {}; a positive step", o_.dt);
  FEM_EXPECTS(o_.tolerance >= 0, "time: tolerance {} is negative", o_.tolerance);
  if (o_.dt_min <= 0) o_.dt_min = o_.dt / 1024;
  FEM_EXPECTS(o_.dt_min <= o_.dt && o_.dt <= o_.dt_max, "time: dt {} is outside [dt_min {}, dt_max {}]",
              o_.dt, o_.dt_min, o_.dt_max);
  FEM_EXPECTS(u_.size() == v_.size(), "time: u0 has {} entries, v0 {}", u_.size(), v_.size());
  if (o_.scheme == Scheme::generalized_alpha) {
    FEM_EXPECTS(o_.rho_inf >= 0 && o_.rho_inf <= 1, "time: ρ∞ = {} is outside [0, 1]", o_.rho_inf);
    alpha_m_ = (2 * o_.rho_inf - 1) / (o_.rho_inf + 1);
    alpha_f_ = o_.rho_inf / (o_.rho_inf + 1);
    gamma_ = 0.5 - alpha_m_ + alpha_f_;
    beta_ = 0.25 * (1 - alpha_m_ + alpha_f_) * (1 - alpha_m_ + alpha_f_);
  } else {
    FEM_EXPECTS(o_.scheme == Scheme::newmark, "time: {} is a first-order scheme (FirstOrderStepper)",
                to_string(o_.scheme));
    FEM_EXPECTS(o_.gamma >= 0.5 && o_.beta >= 0.25 * (o_.gamma + 0.5) * (o_.gamma + 0.5) - 1e-15,
                "time: Newmark β = {}, γ = {} is not unconditionally stable (γ ≥ ½, β ≥ (γ + ½)²/4)", o_.beta,
                o_.gamma);
    beta_ = o_.beta;
    gamma_ = o_.gamma;
  }
  solver_ = p_.solver ? p_.solver : std::shared_ptr<solve::LinearSolver>(solve::make_solver(o_.linear));
  report_.scheme = std::string(to_string(o_.scheme));
  const auto M = matrix(p_.M), K = matrix(p_.K);
  FEM_EXPECTS(static_cast<std::size_t>(M->rows()) == u_.size(), "time: u0 has {} entries, M '{}' {} rows",
              u_.size(), p_.M, M->rows());
  for (index_t d : p_.fixed) {
    FEM_EXPECTS(d >= 0 && static_cast<std::size_t>(d) < u_.size(),
                "time: fixed unknown {} is outside 0 .. {}", d, u_.size() - 1);
    u_[d] = v_[d] = 0.0;
  }
  // The consistent initial acceleration: M a0 = f(t0) − C v0 − K u0 (zero at the fixed unknowns).
  const std::size_t n = u_.size();
  std::vector<double> b(n, 0.0), w(n);
  if (p_.load) p_.load(t_, b);
  K->multiply(u_, w);
  for (std::size_t i = 0; i < n; ++i) b[i] -= w[i];
  if (p_.rayleigh_mass != 0 || p_.rayleigh_stiffness != 0) {
    M->multiply(v_, w);
    for (std::size_t i = 0; i < n; ++i) b[i] -= p_.rayleigh_mass * w[i];
    K->multiply(v_, w);
    for (std::size_t i = 0; i < n; ++i) b[i] -= p_.rayleigh_stiffness * w[i];
  }
  for (index_t d : p_.fixed) b[d] = 0.0;
  const std::string mkey = system_key(p_.name, 1.0, 0.0);
  store_.put(mkey, system(*M, *K, 1.0, 0.0, p_.fixed).first);
  solver_->factorize(store_, mkey);
  a_.assign(n, 0.0);
  solve::require(solver_->solve(b, a_));
  ++report_.solves;
  report_.systems = 1;  // M (the initial acceleration); the steps' come with their sizes
  const double size0 = max_abs(u_, solver_->layout());
  atol_ = o_.absolute_tolerance >= 0 ? o_.absolute_tolerance : o_.tolerance * (size0 > 0 ? size0 : 1.0);
  system_for(o_.dt);
}

std::string SecondOrderStepper::system_for(double h) {
  const double cM = (1 - alpha_m_) + (1 - alpha_f_) * gamma_ * h * p_.rayleigh_mass;
  const double cK = (1 - alpha_f_) * gamma_ * h * p_.rayleigh_stiffness + (1 - alpha_f_) * beta_ * h * h;
  std::string key = system_key(p_.name, cM, cK);
  if (std::find(report_.distinct_dts.begin(), report_.distinct_dts.end(), h) == report_.distinct_dts.end()) {
    report_.distinct_dts.push_back(h);
    ++report_.systems;
  }
  // Made anew when M or K changed since (a new version under the same key).
  const auto M = store_.get_versioned<CsrMatrix>(p_.M), K = store_.get_versioned<CsrMatrix>(p_.K);
  auto& made = made_[key];
  if (!store_.contains(key) || made != std::pair{M.version, K.version}) {
    store_.put(key, system(*M.value, *K.value, cM, cK, p_.fixed).first);
    made = {M.version, K.version};
  }
  return key;
}

std::shared_ptr<const CsrMatrix> SecondOrderStepper::matrix(const std::string& key) const {
  return store_.get<CsrMatrix>(key);
}

double SecondOrderStepper::step(double max_dt) {
  FEM_EXPECTS(max_dt > 0, "time: step(max_dt = {}): a positive bound on the step", max_dt);
  for (;;) {
    const double h = max_dt < dt_ * (1 - 1e-9) ? max_dt : dt_;
    std::vector<double> u1, v1, a1;
    advance(h, u1, v1, a1);
    if (o_.tolerance > 0) {
      // Zienkiewicz–Xie: the local error of u is (β − 1/6) h² (a_{n+1} − a_n) to leading order.
      double e = 0;
      for (std::size_t i = 0; i < u1.size(); ++i) e = std::max(e, std::abs(a1[i] - a_[i]));
      const Layout& layout = solver_->layout();
      const double allowed = atol_ + o_.tolerance * max_abs(u1, layout);
      const double error =
          std::abs(beta_ - 1.0 / 6.0) * h * h * layout.processes().max(e) / allowed * o_.tolerance;
      if (error > o_.tolerance) {
        ++report_.rejected;
        FEM_EXPECTS(dt_ / 2 >= o_.dt_min * (1 - 1e-12),
                    "time: the step error {:.3g} exceeds the tolerance {:.3g} at t = {:.6g} with the "
                    "smallest step {:.6g} "
                    "(dt_min)",
                    error, o_.tolerance, t_, dt_);
        dt_ /= 2;
        continue;
      }
      if (error < o_.tolerance / 8 && dt_ * 2 <= o_.dt_max) dt_ *= 2;  // order 2: the error ∝ h³
    }
    u_ = std::move(u1);
    v_ = std::move(v1);
    a_ = std::move(a1);
    t_ += h;
    ++report_.accepted;
    report_.dt_min = std::min(report_.dt_min, h);
    report_.dt_max = std::max(report_.dt_max, h);
    return h;
  }
}

void SecondOrderStepper::advance_to(double t_end,
                                    const std::function<void(const SecondOrderStepper&)>& each) {
  while (t_ < t_end - 1e-12 * std::max(1.0, std::abs(t_end))) {
    step(t_end - t_);
    if (each) each(*this);
  }
}

void SecondOrderStepper::advance(double h, std::vector<double>& u1, std::vector<double>& v1,
                                 std::vector<double>& a1) {
  const std::string key = system_for(h);
  const auto M = matrix(p_.M), K = matrix(p_.K);
  const std::size_t n = u_.size();
  const double am = alpha_m_, af = alpha_f_, b = beta_, g = gamma_;
  std::vector<double> rhs(n, 0.0), x(n), w(n);
  a1.assign(n, 0.0);
  if (p_.load) p_.load(t_ + (1 - af) * h, rhs);
  // − αm M a_n
  M->multiply(a_, w);
  for (std::size_t i = 0; i < n; ++i) rhs[i] -= am * w[i];
  // − C [(1−αf)(v_n + h(1−γ)a_n) + αf v_n]
  if (p_.rayleigh_mass != 0 || p_.rayleigh_stiffness != 0) {
    for (std::size_t i = 0; i < n; ++i) x[i] = (1 - af) * (v_[i] + h * (1 - g) * a_[i]) + af * v_[i];
    M->multiply(x, w);
    for (std::size_t i = 0; i < n; ++i) rhs[i] -= p_.rayleigh_mass * w[i];
    K->multiply(x, w);
    for (std::size_t i = 0; i < n; ++i) rhs[i] -= p_.rayleigh_stiffness * w[i];
  }
  // − K [(1−αf)(u_n + h v_n + h²(½−β)a_n) + αf u_n]
  for (std::size_t i = 0; i < n; ++i)
    x[i] = (1 - af) * (u_[i] + h * v_[i] + h * h * (0.5 - b) * a_[i]) + af * u_[i];
  K->multiply(x, w);
  for (std::size_t i = 0; i < n; ++i) rhs[i] -= w[i];
  for (index_t d : p_.fixed) rhs[d] = 0.0;
  auto clock = std::chrono::steady_clock::now();
  solver_->factorize(store_, key);
  report_.factorize_seconds += seconds_since(clock);
  clock = std::chrono::steady_clock::now();
  solve::require(solver_->solve(rhs, a1));
  report_.solve_seconds += seconds_since(clock);
  ++report_.solves;
  u1.resize(n);
  v1.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    u1[i] = u_[i] + h * v_[i] + h * h * ((0.5 - b) * a_[i] + b * a1[i]);
    v1[i] = v_[i] + h * ((1 - g) * a_[i] + g * a1[i]);
  }
}

double SecondOrderStepper::quadratic(const std::string& key, std::span<const double> x) const {
  const auto A = matrix(key);
  std::vector<double> w(x.size());
  A->multiply(x, w);
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * w[i];
  return solver_->layout().processes().sum(s);  // local partial matrices: every cell once
}

double SecondOrderStepper::kinetic_energy() const { return 0.5 * quadratic(p_.M, v_); }
double SecondOrderStepper::strain_energy() const { return 0.5 * quadratic(p_.K, u_); }

}  // namespace fem::time
