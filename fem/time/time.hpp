// fem::time: time integration on the factorization cache. First-order systems M u̇ + K u = f(t)
// (the θ-method — backward Euler, Crank–Nicolson with Rannacher start steps — and BDF2) and
// second-order ones M ü + C u̇ + K u = f(t), C = αM + βK (Newmark, generalized-α). Each
// scheme's matrix is a store entry named by its coefficients, cM·M + cK·K with cK from the step
// (`<name>/A/<cM>/<cK>`), so a fixed-dt linear run factorizes once and an adaptive one, whose
// steps lie on a ladder dt₀·2ᵏ, once per distinct dt. docs/time.md.
//
//   fem::time::FirstOrder p{"heat", "M", "K"};
//   p.load = [&](double t, std::span<double> f) { ... };          // adds f(t)
//   p.dirichlet = {dofs, [&](double t, std::span<double> g) { ... }};
//   fem::time::FirstOrderStepper s(store, p, {.scheme = Scheme::crank_nicolson, .dt = 0.01}, u0);
//   while (s.t() < 1) s.step();
#pragma once

#include <fem/csr.hpp>
#include <fem/newton/newton.hpp>
#include <fem/null_space.hpp>
#include <fem/solve/linear_solver.hpp>
#include <fem/store.hpp>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fem::time {

/// Constrained unknowns (their local numbers, sorted) and their values at t (null: zero).
struct Dirichlet {
  std::vector<index_t> dofs;
  std::function<void(double t, std::span<double> values)> values;
};

/// Adds f(t) (an assembled vector: partial sums at shared unknowns on a distributed mesh) into f.
using Load = std::function<void(double t, std::span<double> f)>;

/// A part of the stiffness that depends on u (a conductivity k(u), radiation, a reaction):
/// N(t, u) in M u̇ + K u + N(t, u) = f(t). Each step is then solved by Newton's method
/// (FirstOrderOptions::newton, lagging included) on the scheme's Jacobian M + c(K + ∂N/∂u),
/// published as `<name>/newton/J`: a new version per refresh, refactorized on the one symbolic
/// analysis of K's pattern.
struct Nonlinear {
  /// Adds N(t, u) into N (an assembled vector: partial sums at shared unknowns).
  std::function<void(double t, std::span<const double> u, std::span<double> N)> residual;
  /// ∂N/∂u at (t, u) into values (zeroed before the call), on K's pattern (the process's part).
  std::function<void(double t, std::span<const double> u, std::span<double> values)> jacobian;
  /// The null space of every step's Jacobian, when it has one (a flow's free pressure constant:
  /// MixedSpace::pressure_null_space()): declared on it, and the residual made compatible.
  std::shared_ptr<const NullSpace> null_space;
  explicit operator bool() const noexcept { return residual && jacobian; }
};

/// M u̇ + K u (+ N(t, u)) = f(t) on CsrMatrix entries of one pattern.
struct FirstOrder {
  std::string name;  ///< prefix of the store entries the stepper makes
  std::string M, K;
  Load load;  ///< null: no load
  /// K(t) when K depends on t: its values on K's pattern at t (zeroed before the call),
  /// published under K before each step that needs them (a new version: the scheme's matrix is
  /// refactorized on the same symbolic analysis). null: K is constant.
  std::function<void(double t, std::span<double> values)> stiffness;
  Nonlinear nonlinear;  ///< empty: the problem is linear
  Dirichlet dirichlet;
  /// The linear solver (serial or distributed); null: a serial one of the options' `linear`.
  std::shared_ptr<solve::LinearSolver> solver;
};

enum class Scheme { backward_euler, crank_nicolson, theta, bdf2, newmark, generalized_alpha };
std::string_view to_string(Scheme s) noexcept;

struct FirstOrderOptions {
  Scheme scheme = Scheme::backward_euler;
  double theta = 1.0;       ///< Scheme::theta (0.5 ≤ θ ≤ 1)
  int rannacher_steps = 0;  ///< Crank–Nicolson: the first steps as two backward-Euler half steps each
  double dt = 0;            ///< the (first) step
  /// Adaptive steps when > 0: each step's error e (estimated by step doubling) within
  /// |e_i| ≤ absolute_tolerance + tolerance·max|u| at every unknown; dt stays on the ladder
  /// dt·2ᵏ within [dt_min, dt_max] (dt_min 0: dt/1024).
  double tolerance = 0;
  double absolute_tolerance = -1;  ///< < 0: tolerance·max|u0| when u0 ≠ 0, else tolerance
  double dt_min = 0, dt_max = std::numeric_limits<double>::infinity();
  solve::Options linear = {};
  /// Nonlinear problems: each step's Newton solve. With a lag (newton::Lagging), a step starts
  /// from the factorization of the previous step's last Jacobian, so that a slowly varying
  /// problem refactorizes only when the lagged iterations stop converging fast. A step whose
  /// Newton solve fails is retried at half the step (rejected), down to dt_min.
  newton::Options newton = {};
};

/// What a stepper did.
struct Report {
  std::string scheme;
  index_t accepted = 0, rejected = 0;
  double dt_min = std::numeric_limits<double>::infinity(), dt_max = 0;
  index_t solves = 0;
  std::vector<double> distinct_dts;  ///< the steps taken (accepted or not, half steps too), each once
  index_t systems = 0;               ///< distinct matrices made (each factorized once while cached)
  double factorize_seconds = 0;      ///< in the solver's factorize() (new matrices, or a switch of step)
  double solve_seconds = 0;          ///< in its solves
  // Nonlinear problems:
  index_t newton_iterations = 0;  ///< over all steps, rejected ones included
  index_t jacobians = 0;          ///< Jacobians factorized (refreshes)
  index_t newton_failures = 0;    ///< steps retried at half the step because Newton failed
};

class FirstOrderStepper {
 public:
  /// u0: the state at t0, as given (initial data that disagree with the Dirichlet values at t0
  /// are the caller's: the first step imposes g(t1)).
  FirstOrderStepper(Store& store, FirstOrder problem, FirstOrderOptions options, std::vector<double> u0,
                    double t0 = 0);
  ~FirstOrderStepper();
  /// One accepted step (adaptive: retried at half the step until its error passes), of at most
  /// `max_dt` (the last step of a run: landing on its end). Returns the step taken.
  double step(double max_dt = std::numeric_limits<double>::infinity());
  /// Steps until t_end; `each(stepper)` after every accepted step.
  void advance_to(double t_end, const std::function<void(const FirstOrderStepper&)>& each = {});
  /// K(t) from now on (FirstOrder::stiffness); null: K as it is in the store.
  void set_stiffness(std::function<void(double t, std::span<double> values)> stiffness);
  /// N(t, u) from now on (FirstOrder::nonlinear; empty: linear again) with these Newton options.
  void set_nonlinear(Nonlinear nonlinear, const newton::Options& options);
  double t() const noexcept { return t_; }
  /// The step the next step() tries.
  double dt() const noexcept { return dt_; }
  std::span<const double> u() const noexcept { return u_; }
  const Report& report() const noexcept { return report_; }
  const solve::LinearSolver& solver() const noexcept { return *solver_; }

 private:
  struct Impl;
  // One step of `scheme` from (u_, u_prev_) over h into `out`; the linear solve included (for a
  // nonlinear problem, Newton's: false when it did not converge).
  bool advance(double h, bool first_order, std::vector<double>& out, const std::vector<double>& from,
               const std::vector<double>* before, double t_from, double h_before);
  bool newton_solve(double c, double t1, const CsrMatrix& M, const CsrMatrix& K,
                    const std::vector<double>& from, std::vector<double>& out);
  Store& store_;
  FirstOrder p_;
  FirstOrderOptions o_;
  std::shared_ptr<solve::LinearSolver> solver_;
  std::unique_ptr<Impl> impl_;
  std::vector<double> u_, u_prev_;
  double t_ = 0, dt_ = 0, dt_prev_ = 0, atol_ = 0;
  index_t steps_ = 0;
  Report report_;
};

/// M ü + C u̇ + K u = f(t), C = rayleigh_mass·M + rayleigh_stiffness·K.
struct SecondOrder {
  std::string name;
  std::string M, K;
  double rayleigh_mass = 0, rayleigh_stiffness = 0;
  Load load;
  /// Fixed unknowns (u = 0 there: clamped supports).
  std::vector<index_t> fixed;
  std::shared_ptr<solve::LinearSolver> solver;
};

struct SecondOrderOptions {
  Scheme scheme = Scheme::newmark;
  double beta = 0.25, gamma = 0.5;  ///< Newmark (average acceleration)
  double rho_inf = 1.0;             ///< generalized-α: the high-frequency spectral radius, 0 .. 1
  double dt = 0;                    ///< the (first) step
  /// Adaptive steps when > 0: each step's local error, estimated as (β − 1/6) h² (a_{n+1} − a_n)
  /// (Zienkiewicz & Xie 1991: no extra solve), within |e_i| ≤ absolute_tolerance + tolerance·max|u|;
  /// dt on the ladder dt·2ᵏ within [dt_min, dt_max] (dt_min 0: dt/1024), as for first order.
  double tolerance = 0;
  double absolute_tolerance = -1;  ///< < 0: tolerance·max|u0| when u0 ≠ 0, else tolerance
  double dt_min = 0, dt_max = std::numeric_limits<double>::infinity();
  solve::Options linear = {};
};

class SecondOrderStepper {
 public:
  /// u0, v0 at t0; the initial acceleration is the consistent one, M a0 = f(t0) − C v0 − K u0.
  SecondOrderStepper(Store& store, SecondOrder problem, SecondOrderOptions options, std::vector<double> u0,
                     std::vector<double> v0, double t0 = 0);
  /// One accepted step (adaptive: retried at half the step until its error passes) of at most
  /// `max_dt`. Returns the step taken.
  double step(double max_dt = std::numeric_limits<double>::infinity());
  /// Steps until t_end; `each(stepper)` after every accepted step.
  void advance_to(double t_end, const std::function<void(const SecondOrderStepper&)>& each = {});
  double t() const noexcept { return t_; }
  /// The step the next step() tries.
  double dt() const noexcept { return dt_; }
  std::span<const double> u() const noexcept { return u_; }
  std::span<const double> v() const noexcept { return v_; }
  std::span<const double> a() const noexcept { return a_; }
  /// ½ vᵀMv and ½ uᵀKu (summed over processes).
  double kinetic_energy() const;
  double strain_energy() const;
  const Report& report() const noexcept { return report_; }

 private:
  std::shared_ptr<const CsrMatrix> matrix(const std::string& key) const;
  // The step's matrix for h, made when new: (1−αm) M + (1−αf) γ h C + (1−αf) β h² K.
  std::string system_for(double h);
  // A step of h from the state: the next u, v, a (the state unchanged).
  void advance(double h, std::vector<double>& u1, std::vector<double>& v1, std::vector<double>& a1);
  double quadratic(const std::string& key, std::span<const double> x) const;
  Store& store_;
  SecondOrder p_;
  SecondOrderOptions o_;
  std::shared_ptr<solve::LinearSolver> solver_;
  std::vector<double> u_, v_, a_;
  double t_ = 0, dt_ = 0, atol_ = 0, alpha_m_ = 0, alpha_f_ = 0, beta_ = 0.25, gamma_ = 0.5;
  std::map<std::string, std::pair<Version, Version>> made_;  // step matrix → the M, K versions it is of
  Report report_;
};

}  // namespace fem::time
