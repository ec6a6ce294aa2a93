// fem::time: observed temporal orders (backward Euler 1, Crank–Nicolson 2, BDF2 2) on a
// manufactured solution with time-dependent Dirichlet data that P1 represents exactly in space;
// one factorization per fixed-dt run and per distinct dt of an adaptive one; Newmark's energy over
// 1000 undamped steps and its period elongation (ωΔt)²/12; generalized-α's spectral radius at
// infinite frequency ρ∞, from the amplification matrix of the implementation itself.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <numbers>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"
#include "fem/time/time.hpp"

namespace {

using fem::index_t;
using namespace fem::assembly;
namespace ft = fem::time;

class Time : public ::testing::Test {
 protected:
  void SetUp() override {
    fem::store().clear();
    fem::store().reset_stats();
  }
};

// u = (1 + x + 2y) e^{−t}: linear in space, so the semi-discrete P1 solution is its interpolant
// and every error is the scheme's. f = u_t − Δu = −u.
struct Manufactured {
  std::shared_ptr<const Assembler> a;
  std::vector<index_t> dofs;
  std::vector<double> xy;  // coordinates of the constrained dofs
  static double exact(const double* x, double t) { return (1 + x[0] + 2 * x[1]) * std::exp(-t); }
};

Manufactured setup(const std::string& name) {
  auto& s = fem::store();
  s.put(name + "/mesh", fem::mesh::unit_square(fem::CellType::tri3, 8));
  const FunctionSpace V(name + "/mesh", 1);
  auto a = std::make_shared<const Assembler>(V);
  s.put(name + "/M", a->matrix(Mass{}));
  s.put(name + "/K", a->matrix(Diffusion{}));
  Manufactured m{a, dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), nullptr}}).dofs, {}};
  const auto& coords = V.dofmap().coordinates;
  for (index_t d : m.dofs) m.xy.insert(m.xy.end(), {coords[2 * d], coords[2 * d + 1]});
  return m;
}

ft::FirstOrder problem(const Manufactured& m, const std::string& name) {
  ft::FirstOrder p;
  p.name = name;
  p.M = name + "/M";
  p.K = name + "/K";
  p.load = [a = m.a](double t, std::span<double> f) {
    a->vector_into(Source{[t](const double* x) { return -Manufactured::exact(x, t); }}, f);
  };
  p.dirichlet.dofs = m.dofs;
  p.dirichlet.values = [xy = m.xy](double t, std::span<double> g) {
    for (std::size_t k = 0; k < g.size(); ++k) g[k] = Manufactured::exact(&xy[2 * k], t);
  };
  return p;
}

double error_at(const Manufactured& m, std::span<const double> u, double t) {
  const auto& coords = m.a->space().dofmap().coordinates;
  double e = 0;
  for (std::size_t i = 0; i < u.size(); ++i)
    e = std::max(e, std::abs(u[i] - Manufactured::exact(&coords[2 * i], t)));
  return e;
}

std::vector<double> initial(const Manufactured& m) {
  const auto& coords = m.a->space().dofmap().coordinates;
  std::vector<double> u(coords.size() / 2);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = Manufactured::exact(&coords[2 * i], 0.0);
  return u;
}

TEST_F(Time, ObservedOrdersOfBackwardEulerCrankNicolsonAndBdf2) {
  const Manufactured m = setup("order");
  struct Case {
    ft::Scheme scheme;
    double order;
  };
  for (const Case c : {Case{ft::Scheme::backward_euler, 1}, Case{ft::Scheme::crank_nicolson, 2},
                       Case{ft::Scheme::bdf2, 2}}) {
    std::vector<double> err;
    for (double dt : {0.1, 0.05, 0.025}) {
      ft::FirstOrderOptions o;
      o.scheme = c.scheme;
      o.dt = dt;
      ft::FirstOrderStepper s(fem::store(), problem(m, "order"), o, initial(m));
      s.advance_to(1.0);
      EXPECT_NEAR(s.t(), 1.0, 1e-12);
      err.push_back(error_at(m, s.u(), 1.0));
    }
    for (std::size_t i = 1; i < err.size(); ++i)
      EXPECT_NEAR(std::log2(err[i - 1] / err[i]), c.order, 0.15) << ft::to_string(c.scheme) << " " << err[i];
  }
}

// K(t) = (1 + t) K₁: Crank–Nicolson with K at t_n in its explicit half and K at t_{n+1} in its
// matrix keeps order 2 (against a run with a 16 times smaller step on the same mesh); every step
// refactorizes on one symbolic analysis.
TEST_F(Time, ACoefficientInTimeKeepsTheOrderAndRefactorizesEachStep) {
  auto& s = fem::store();
  s.put("kt/mesh", fem::mesh::unit_square(fem::CellType::tri3, 8));
  const FunctionSpace V("kt/mesh", 1);
  const auto a = std::make_shared<const Assembler>(V);
  s.put("kt/M", a->matrix(Mass{}));
  s.put("kt/K1", a->matrix(Diffusion{}));
  const auto K1 = s.get<fem::CsrMatrix>("kt/K1");
  const auto& c = V.dofmap().coordinates;
  std::vector<double> u0(c.size() / 2);
  for (std::size_t i = 0; i < u0.size(); ++i)
    u0[i] = std::sin(std::numbers::pi * c[2 * i]) * std::sin(std::numbers::pi * c[2 * i + 1]);
  const auto run = [&](double dt) {
    s.put("kt/K", *K1);
    ft::FirstOrder p;
    p.name = "kt";
    p.M = "kt/M";
    p.K = "kt/K";
    p.stiffness = [&](double t, std::span<double> v) {
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = (1 + t) * K1->values()[i];
    };
    p.dirichlet.dofs = dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), nullptr}}).dofs;
    ft::FirstOrderOptions o;
    o.scheme = ft::Scheme::crank_nicolson;
    o.dt = dt;
    ft::FirstOrderStepper st(s, p, o, u0);
    st.advance_to(0.5);
    return std::vector<double>(st.u().begin(), st.u().end());
  };
  const auto reference = run(0.0125 / 64);
  std::vector<double> err;
  for (double dt : {0.0125, 0.00625, 0.003125}) {
    const auto before = s.counter("solve.factorizations");
    const auto u = run(dt);
    EXPECT_EQ(s.counter("solve.factorizations") - before, static_cast<std::int64_t>(std::lround(0.5 / dt)));
    double e = 0;
    for (std::size_t i = 0; i < u.size(); ++i) e = std::max(e, std::abs(u[i] - reference[i]));
    err.push_back(e);
  }
  for (std::size_t i = 1; i < err.size(); ++i)
    EXPECT_NEAR(std::log2(err[i - 1] / err[i]), 2.0, 0.15) << err[i];
}

// A conductivity in u, k(u) = 1 + u², on the same u = (1 + x + 2y) e^{−t}: f = u_t − div(k∇u) =
// −u − k'(u)|∇u|² = −u (1 + 10 e^{−2t}). P1 and the quadrature represent every term exactly, so
// the errors are the schemes' again, each step solved by Newton on M + c ∂N/∂u.
ft::FirstOrder nonlinear_problem(const Manufactured& m, const std::string& name) {
  ft::FirstOrder p = problem(m, name);
  auto& s = fem::store();
  const auto M = s.get<fem::CsrMatrix>(name + "/M");
  s.put(name + "/K0", fem::CsrMatrix(M->pattern_ptr(), std::vector<double>(M->nnz(), 0.0)));
  p.K = name + "/K0";  // all of the conduction is N(u)
  p.load = [a = m.a](double t, std::span<double> f) {
    a->vector_into(Source{[t](const double* x) {
                     const double u = Manufactured::exact(x, t);
                     return -u * (1 + 10 * std::exp(-2 * t));
                   }},
                   f);
  };
  auto form = std::make_shared<const NonlinearForm>(
      quasilinear([](double u) { return 1 + u * u; }, [](double u) { return 2 * u; }, nullptr));
  p.nonlinear.residual = [a = m.a, form](double, std::span<const double> u, std::span<double> N) {
    a->residual_into(*form, u, N);
  };
  p.nonlinear.jacobian = [a = m.a, form](double, std::span<const double> u, std::span<double> v) {
    a->jacobian_into(*form, u, v);
  };
  return p;
}

TEST_F(Time, NonlinearStepsKeepTheOrdersThroughNewton) {
  const Manufactured m = setup("nl");
  struct Case {
    ft::Scheme scheme;
    double order;
  };
  for (const Case c : {Case{ft::Scheme::backward_euler, 1}, Case{ft::Scheme::crank_nicolson, 2},
                       Case{ft::Scheme::bdf2, 2}}) {
    std::vector<double> err;
    for (double dt : {0.1, 0.05, 0.025}) {
      ft::FirstOrderOptions o;
      o.scheme = c.scheme;
      o.dt = dt;
      const auto analyses = fem::store().counter("solve.symbolic_analyses");
      ft::FirstOrderStepper s(fem::store(), nonlinear_problem(m, "nl"), o, initial(m));
      s.advance_to(1.0);
      err.push_back(error_at(m, s.u(), 1.0));
      // Full Newton: a Jacobian per iteration, a few iterations per step (quadratic convergence).
      EXPECT_EQ(s.report().jacobians, s.report().newton_iterations);
      EXPECT_LE(s.report().newton_iterations, 5 * s.report().accepted);
      EXPECT_GE(s.report().newton_iterations, 2 * s.report().accepted);
      EXPECT_EQ(s.report().newton_failures, 0);
      // Every Jacobian is a new version of one entry: refactorized on one symbolic analysis.
      EXPECT_LE(fem::store().counter("solve.symbolic_analyses") - analyses, 1);
    }
    for (std::size_t i = 1; i < err.size(); ++i)
      EXPECT_NEAR(std::log2(err[i - 1] / err[i]), c.order, 0.15) << ft::to_string(c.scheme) << " " << err[i];
  }
}

// With a lag, a step starts from the last step's factorization: far fewer Jacobians than steps,
// the same solution to Newton's tolerance.
TEST_F(Time, LaggedNewtonKeepsOneJacobianAcrossSteps) {
  const Manufactured m = setup("lag");
  const auto run = [&](fem::newton::Lagging lagging) {
    ft::FirstOrderOptions o;
    o.scheme = ft::Scheme::crank_nicolson;
    o.dt = 0.02;
    o.newton.lagging = lagging;
    ft::FirstOrderStepper s(fem::store(), nonlinear_problem(m, "lag"), o, initial(m));
    s.advance_to(1.0);
    return std::pair{std::vector<double>(s.u().begin(), s.u().end()), s.report()};
  };
  const auto [full, full_report] = run({});
  const auto [lagged, lagged_report] = run(fem::newton::Lagging::adaptive());
  EXPECT_EQ(lagged_report.accepted, 50);
  EXPECT_LT(lagged_report.jacobians * 5, full_report.jacobians) << lagged_report.jacobians;
  double d = 0;
  for (std::size_t i = 0; i < full.size(); ++i) d = std::max(d, std::abs(full[i] - lagged[i]));
  EXPECT_LT(d, 1e-8);
}

// A step whose Newton solve fails is retried at half the step, and the run stops in words at dt_min.
TEST_F(Time, ANewtonFailureHalvesTheStepDownToDtMin) {
  const Manufactured m = setup("fail");
  ft::FirstOrderOptions o;
  o.dt = 0.1;
  o.dt_min = 0.1 / 8;
  o.newton.max_iterations = 1;  // never enough for 1e-10
  ft::FirstOrderStepper s(fem::store(), nonlinear_problem(m, "fail"), o, initial(m));
  try {
    s.step();
    FAIL() << "a step that cannot converge was accepted";
  } catch (const fem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Newton's method did not converge"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dt_min"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.report().newton_failures, 4);  // 0.1, 0.05, 0.025, 0.0125
  EXPECT_EQ(s.report().accepted, 0);
  EXPECT_EQ(s.t(), 0.0);
}

TEST_F(Time, AFixedStepRunFactorizesOnce) {
  const Manufactured m = setup("once");
  auto& s = fem::store();
  for (auto [scheme, rannacher, factorizations] :
       {std::tuple{ft::Scheme::backward_euler, 0, 1}, std::tuple{ft::Scheme::crank_nicolson, 2, 1},
        std::tuple{ft::Scheme::bdf2, 0, 2}}) {
    s.clear();
    const Manufactured mm = setup("once");
    const auto before = s.counter("solve.factorizations");
    ft::FirstOrderOptions o;
    o.scheme = scheme;
    o.dt = 0.02;
    o.rannacher_steps = rannacher;
    ft::FirstOrderStepper st(s, problem(mm, "once"), o, initial(mm));
    st.advance_to(1.0);
    EXPECT_EQ(st.report().accepted, 50);
    // CN's Rannacher half steps use CN's own matrix; BDF2's backward-Euler start one more.
    EXPECT_EQ(s.counter("solve.factorizations") - before, factorizations) << ft::to_string(scheme);
  }
}

TEST_F(Time, AdaptiveStepsStayOnTheLadderAndFactorizeOncePerDistinctStep) {
  const Manufactured m = setup("adapt");
  auto& s = fem::store();
  const auto before = s.counter("solve.factorizations");
  ft::FirstOrderOptions o;
  o.scheme = ft::Scheme::crank_nicolson;
  o.dt = 0.4;  // too large for the tolerance: rejected, halved
  o.tolerance = 1e-4;
  o.dt_min = 1e-4;
  ft::FirstOrderStepper st(s, problem(m, "adapt"), o, initial(m));
  st.advance_to(2.0);
  const auto& r = st.report();
  EXPECT_GT(r.rejected, 0);
  for (double dt : r.distinct_dts) {
    const double k = std::log2(dt / 0.4);
    EXPECT_NEAR(k, std::round(k), 1e-9) << dt << " is off the ladder 0.4·2^k";
  }
  EXPECT_EQ(s.counter("solve.factorizations") - before, static_cast<std::int64_t>(r.distinct_dts.size()));
  EXPECT_EQ(r.systems, static_cast<index_t>(r.distinct_dts.size()));
  EXPECT_LT(error_at(m, st.u(), st.t()), 50 * o.tolerance);
  // BDF2's leading coefficient changes right after a change of step (ω = 2 or ½): one matrix
  // per distinct (dt, ω), each factorized once.
  const auto bdf_before = s.counter("solve.factorizations");
  o.scheme = ft::Scheme::bdf2;
  auto pb = problem(m, "adapt");
  pb.name = "adapt-bdf2";  // its own matrices
  ft::FirstOrderStepper b(s, pb, o, initial(m));
  b.advance_to(2.0);
  EXPECT_EQ(s.counter("solve.factorizations") - bdf_before, static_cast<std::int64_t>(b.report().systems));
  EXPECT_LT(error_at(m, b.u(), b.t()), 50 * o.tolerance);
}

// M ü + K u = 0 on the square (the wave equation), u0 = sin(πx) sin(πy): average acceleration
// conserves ½vᵀMv + ½uᵀKu.
TEST_F(Time, NewmarkConservesEnergyOverAThousandSteps) {
  auto& s = fem::store();
  s.put("wave/mesh", fem::mesh::unit_square(fem::CellType::tri3, 12));
  const FunctionSpace V("wave/mesh", 1);
  const Assembler a(V);
  s.put("wave/M", a.matrix(Mass{}));
  s.put("wave/K", a.matrix(Diffusion{}));
  const auto fixed = dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), nullptr}}).dofs;
  const auto& c = V.dofmap().coordinates;
  std::vector<double> u0(c.size() / 2), v0(u0.size(), 0.0);
  for (std::size_t i = 0; i < u0.size(); ++i)
    u0[i] = std::sin(std::numbers::pi * c[2 * i]) * std::sin(std::numbers::pi * c[2 * i + 1]);
  ft::SecondOrder p;
  p.name = "wave";
  p.M = "wave/M";
  p.K = "wave/K";
  p.fixed = fixed;
  ft::SecondOrderOptions o;
  o.dt = 0.05;
  ft::SecondOrderStepper st(s, p, o, u0, v0);
  const double e0 = st.kinetic_energy() + st.strain_energy();
  const auto before = s.counter("solve.factorizations");
  for (int i = 0; i < 1000; ++i) st.step();
  EXPECT_NEAR(st.kinetic_energy() + st.strain_energy(), e0, 1e-10 * e0);
  EXPECT_EQ(s.counter("solve.factorizations") - before, 1);  // the step's matrix, once
}

// Adaptive Newmark on an oscillator (ω = 2π) kicked by a short pulse at t = 1: the steps shrink
// for the pulse and grow again after it, all on the ladder, one factorization per distinct step,
// and the error against a fine fixed-step run falls with the tolerance.
TEST_F(Time, AdaptiveNewmarkFollowsAPulseOnTheLadder) {
  auto& s = fem::store();
  const double omega = 2 * std::numbers::pi;
  const auto p1 =
      std::make_shared<const fem::CsrPattern>(1, 1, std::vector<index_t>{0, 1}, std::vector<index_t>{0});
  s.put("kick/M", fem::CsrMatrix(p1, {1.0}));
  s.put("kick/K", fem::CsrMatrix(p1, {omega * omega}));
  ft::SecondOrder p;
  p.name = "kick";
  p.M = "kick/M";
  p.K = "kick/K";
  p.load = [&](double t, std::span<double> f) { f[0] += 400 * std::exp(-std::pow((t - 1) / 0.02, 2)); };
  const auto run = [&](double dt, double tolerance) {
    ft::SecondOrderOptions o;
    o.dt = dt;
    o.tolerance = tolerance;
    o.absolute_tolerance = tolerance;
    o.dt_min = 1e-6;
    const auto before = s.counter("solve.factorizations");
    ft::SecondOrderStepper st(s, p, o, {1.0}, {0.0});
    std::vector<double> steps;
    st.advance_to(2.0, [&](const ft::SecondOrderStepper& x) { steps.push_back(x.t()); });
    EXPECT_NEAR(st.t(), 2.0, 1e-12);
    if (tolerance > 0) {
      const auto& r = st.report();
      EXPECT_GT(r.rejected, 0);
      const double ratio = r.dt_max / r.dt_min;
      EXPECT_GE(ratio, 8.0) << "the pulse's steps are smaller";
      for (double h : r.distinct_dts) {
        const double k = std::log2(dt / h);
        EXPECT_NEAR(k, std::round(k), 1e-9) << h;
      }
      // Within the run's store: one factorization per distinct step and the initial M.
      EXPECT_EQ(s.counter("solve.factorizations") - before,
                static_cast<std::int64_t>(r.distinct_dts.size()) + 1);
    }
    return st.u()[0];
  };
  const double reference = run(1e-4, 0);
  const double coarse = std::abs(run(0.05, 1e-3) - reference), fine = std::abs(run(0.05, 1e-5) - reference);
  // The local error ∝ h³ is held at the tolerance, so the global error goes as tolerance^(2/3):
  // 100^(2/3) ≈ 21 between the two.
  EXPECT_LT(coarse, 0.1) << fine;
  EXPECT_NEAR(std::log(coarse / fine) / std::log(100.0), 2.0 / 3.0, 0.1) << coarse << " " << fine;
}

// The amplification matrix of one step of a single oscillator (M = 1, K = ω²) from the
// implementation: three runs from (u, v, a) = e1, e2, e3 (a0 set through the load at t0).
Eigen::Matrix3d amplification(const ft::SecondOrderOptions& o, double omega) {
  auto& s = fem::store();
  const auto p1 =
      std::make_shared<const fem::CsrPattern>(1, 1, std::vector<index_t>{0, 1}, std::vector<index_t>{0});
  s.put("osc/M", fem::CsrMatrix(p1, {1.0}));
  s.put("osc/K", fem::CsrMatrix(p1, {omega * omega}));
  Eigen::Matrix3d A;
  for (int j = 0; j < 3; ++j) {
    const double u0 = j == 0, v0 = j == 1, a0 = j == 2;
    ft::SecondOrder p;
    p.name = "osc";
    p.M = "osc/M";
    p.K = "osc/K";
    p.load = [&](double t, std::span<double> f) {
      if (t == 0.0) f[0] += a0 + omega * omega * u0;  // M a0 + K u0: sets a0
    };
    ft::SecondOrderStepper st(s, p, o, {u0}, {v0});
    EXPECT_NEAR(st.a()[0], a0, 1e-12 * std::max(1.0, omega * omega));
    st.step();
    A.col(j) << st.u()[0], st.v()[0], st.a()[0];
  }
  return A;
}

TEST_F(Time, NewmarksPeriodElongationIsOmegaDtSquaredOverTwelve) {
  ft::SecondOrderOptions o;
  o.dt = 0.1;
  for (double omega_dt : {0.1, 0.2, 0.4}) {
    const double omega = omega_dt / o.dt;
    const Eigen::Vector3cd lambda = amplification(o, omega).eigenvalues();
    double phase = 0;  // of the principal pair (the third eigenvalue is 0)
    for (int i = 0; i < 3; ++i)
      if (std::abs(lambda(i)) > 0.5) phase = std::max(phase, std::abs(std::arg(lambda(i))));
    const double elongation = omega_dt / phase - 1;  // T̄/T − 1
    EXPECT_NEAR(elongation, omega_dt * omega_dt / 12, 0.05 * omega_dt * omega_dt / 12) << omega_dt;
    for (int i = 0; i < 3; ++i)
      if (std::abs(lambda(i)) > 0.5) {
        EXPECT_NEAR(std::abs(lambda(i)), 1.0, 1e-12);  // no growth, no damping
      }
  }
}

TEST_F(Time, GeneralizedAlphasSpectralRadiusAtInfinityIsRhoInf) {
  for (double rho : {0.0, 0.5, 0.8, 1.0}) {
    ft::SecondOrderOptions o;
    o.scheme = ft::Scheme::generalized_alpha;
    o.rho_inf = rho;
    o.dt = 1.0;
    const Eigen::Vector3cd lambda = amplification(o, 1e6).eigenvalues();  // ωΔt = 10⁶
    double radius = 0;
    for (int i = 0; i < 3; ++i) radius = std::max(radius, std::abs(lambda(i)));
    EXPECT_NEAR(radius, rho, 1e-3) << "ρ∞ = " << rho;
  }
}

TEST_F(Time, BadOptionsAreRefusedInWords) {
  const Manufactured m = setup("bad");
  ft::FirstOrderOptions o;
  o.dt = 0;
  EXPECT_THROW(ft::FirstOrderStepper(fem::store(), problem(m, "bad"), o, initial(m)), fem::InvalidArgument);
  o.dt = 0.1;
  o.scheme = ft::Scheme::theta;
  o.theta = 0.3;
  EXPECT_THROW(ft::FirstOrderStepper(fem::store(), problem(m, "bad"), o, initial(m)), fem::InvalidArgument);
  ft::SecondOrderOptions so;
  so.dt = 0.1;
  so.beta = 0.1;
  ft::SecondOrder sp;
  sp.name = "bad2";
  sp.M = "bad/M";
  sp.K = "bad/K";
  const auto n = initial(m).size();
  EXPECT_THROW(ft::SecondOrderStepper(fem::store(), sp, so, std::vector<double>(n), std::vector<double>(n)),
               fem::InvalidArgument);
}

}  // namespace
