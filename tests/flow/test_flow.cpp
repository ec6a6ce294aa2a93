// Taylor–Hood flow: Stokes Poiseuille flow exact to rounding (P2–P1 on triangles and tetrahedra,
// Q2–Q1 on quadrilaterals), the free pressure constant (the same field whichever DOF would be
// pinned), Kovasznay flow at Re = 40 by Newton with velocity L2 rate 3 and pressure rate 2, and
// Newton's Jacobians on one symbolic analysis of the block pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <numeric>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/assembly/functionals.hpp"
#include "fem/assembly/mixed.hpp"
#include "fem/flow/flow.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/newton/assembled.hpp"
#include "fem/store.hpp"

namespace {

using fem::index_t;
using namespace fem::assembly;

class TaylorHood : public ::testing::Test {
 protected:
  void SetUp() override {
    fem::store().clear();
    fem::store().reset_stats();
  }
};

fem::newton::Options options() {
  fem::newton::Options o;
  o.linear.backend = fem::solve::Backend::umfpack;
  o.atol = 1e-11;
  o.rtol = 1e-12;
  return o;
}

// The velocity given on the whole boundary by `u` (dim components).
DirichletValues velocity_bc(const MixedSpace& W, const VectorFunction& u) {
  std::vector<Dirichlet> conditions;
  for (int k = 0; k < W.dim(); ++k)
    conditions.push_back({FacetSet::all(),
                          [u, k](const double* x) {
                            double v[3];
                            u(x, v);
                            return v[k];
                          },
                          k});
  return dirichlet_values(W.velocity(), conditions);
}

double max_difference(std::span<const double> a, std::span<const double> b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// u = (y(1 − y), 0[, 0]), p = −2ν x: −νΔu + ∇p = 0, div u = 0. P2 holds u and P1 holds p, so the
// discrete solution is exact; the pressure has ∫p = 0 (its constant is free).
TEST_F(TaylorHood, PoiseuilleIsExactToRounding) {
  for (auto type : {fem::CellType::tri3, fem::CellType::quad4, fem::CellType::tet4}) {
    auto& s = fem::store();
    s.clear();
    const bool three = type == fem::CellType::tet4;
    s.put("channel", three ? fem::mesh::unit_cube(type, 3) : fem::mesh::unit_square(type, 6));
    auto W = std::make_shared<const MixedSpace>("channel");
    const double nu = 0.3;
    const VectorFunction exact = [](const double* x, double* u) {
      u[0] = x[1] * (1 - x[1]);
      u[1] = u[2] = 0;
    };
    const auto bc = velocity_bc(*W, exact);
    std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
    set_dirichlet(bc, w);
    auto problem = fem::newton::flow_problem(W, fem::assembly::Flow::stokes(nu), bc, true, "stokes");
    const auto r = fem::newton::solve(problem, w, options());
    ASSERT_TRUE(r.converged) << fem::newton::to_string(r.reason);
    EXPECT_EQ(r.iterations, 1);  // linear
    const auto uh = interpolate(W->velocity(), exact);
    EXPECT_LT(max_difference(W->velocity_part(w), uh), 1e-11) << fem::cell_info(type).name;
    // p = −2ν(x − ½): zero mean on the unit square or cube.
    const auto& c = W->pressure().dofmap().coordinates;
    const int dim = W->dim();
    double e = 0;
    const auto p = W->pressure_part(w);
    for (std::size_t i = 0; i < p.size(); ++i) e = std::max(e, std::abs(p[i] + 2 * nu * (c[i * dim] - 0.5)));
    EXPECT_LT(e, 1e-10) << fem::cell_info(type).name;
    // The flux through the outlet x = 1: ∫ y(1 − y) = 1/6 (times 1 in z); the inlet's is −1/6,
    // the whole boundary's 0.
    const auto& mesh = W->mesh();
    const int fdim = mesh.tdim() - 1;
    EXPECT_NEAR(
        boundary_flux(W->velocity(), W->velocity_part(w), FacetSet{{mesh.resolve_tag("right", fdim)}}),
        1.0 / 6, 1e-12);
    EXPECT_NEAR(boundary_flux(W->velocity(), W->velocity_part(w), FacetSet{{mesh.resolve_tag("left", fdim)}}),
                -1.0 / 6, 1e-12);
    EXPECT_NEAR(boundary_flux(W->velocity(), W->velocity_part(w), FacetSet::all()), 0.0, 1e-12);
  }
}

// The constant of p: solved with the declared null space (∫p = 0) it equals the solution with
// any one pressure DOF pinned to 0 and then shifted to ∫p = 0.
TEST_F(TaylorHood, TheFreePressureConstantDoesNotDependOnThePinnedDof) {
  auto& s = fem::store();
  s.put("cavity", fem::mesh::unit_square(fem::CellType::tri3, 8));
  auto W = std::make_shared<const MixedSpace>("cavity");
  // A lid-driven cavity (Stokes) with a body force: a pressure that is not affine.
  const VectorFunction lid = [](const double* x, double* u) {
    u[0] = x[1] > 1 - 1e-12 ? 16 * x[0] * x[0] * (1 - x[0]) * (1 - x[0]) : 0;
    u[1] = 0;
  };
  auto flow = fem::assembly::Flow::stokes(1);
  flow.body_force = [](const double* x, double* f) {
    f[0] = std::sin(3 * x[1]);
    f[1] = x[0] * x[0];
  };
  const auto bc = velocity_bc(*W, lid);
  std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
  set_dirichlet(bc, w);
  auto problem = fem::newton::flow_problem(W, flow, bc, true, "free");
  ASSERT_TRUE(fem::newton::solve(problem, w, options()).converged);
  const auto ns = W->pressure_null_space();
  EXPECT_LT(std::abs(std::inner_product(ns->functional(0).begin(), ns->functional(0).end(), w.begin(), 0.0)),
            1e-12);
  for (index_t pinned : {index_t{0}, W->num_pressure_dofs() / 2, W->num_pressure_dofs() - 1}) {
    // The same problem with the pressure DOF `pinned` fixed to 0 and no null space.
    DirichletValues pin = bc;
    pin.dofs.push_back(W->pressure_offset() + pinned);
    pin.values.push_back(0.0);
    std::vector<double> values(static_cast<std::size_t>(W->pattern()->nnz())), b(w.size(), 0.0), x(w.size());
    std::vector<double> zero(w.size(), 0.0);
    flow_into(*W, flow, zero, values, b);
    for (double& v : b) v = -v;
    apply_dirichlet(pin, *W->pattern(), values, b);
    fem::store().put("pinned", fem::CsrMatrix(W->pattern(), std::move(values)));
    auto solver = fem::solve::make_solver({.backend = fem::solve::Backend::umfpack});
    solver->factorize(fem::store(), "pinned");
    fem::solve::require(solver->solve(b, x));
    ns->normalize(x);
    EXPECT_LT(max_difference(x, w), 1e-10) << "pinned pressure DOF " << pinned;
  }
}

// Kovasznay flow, Re = 40, on [−½, 3/2] × [0, 2]: the exact solution of the steady Navier–Stokes
// equations. Newton from the Stokes solution; L2 errors of P2–P1 fall as h³ (velocity) and h²
// (pressure).
TEST_F(TaylorHood, KovasznayConvergesAtTheTaylorHoodRates) {
  const double re = 40, pi = std::numbers::pi;
  const double lambda = re / 2 - std::sqrt(re * re / 4 + 4 * pi * pi);
  const VectorFunction u_exact = [=](const double* x, double* u) {
    u[0] = 1 - std::exp(lambda * x[0]) * std::cos(2 * pi * x[1]);
    u[1] = lambda / (2 * pi) * std::exp(lambda * x[0]) * std::sin(2 * pi * x[1]);
  };
  // p = ½(1 − e^{2λx}) less its mean over the domain.
  const double mean = 0.5 * (1 - (std::exp(3 * lambda) - std::exp(-lambda)) / (4 * lambda));
  const VectorFunction p_exact = [=](const double* x, double* p) {
    p[0] = 0.5 * (1 - std::exp(2 * lambda * x[0])) - mean;
  };
  std::vector<double> eu, ep;
  for (index_t n : {16, 32, 64}) {
    auto& s = fem::store();
    s.clear();
    s.put("kovasznay", fem::mesh::rectangle(fem::CellType::tri3, n, n, {-0.5, 0.0}, {1.5, 2.0}));
    auto W = std::make_shared<const MixedSpace>("kovasznay");
    const auto bc = velocity_bc(*W, u_exact);
    std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
    set_dirichlet(bc, w);
    const auto analyses = s.counter("solve.symbolic_analyses");
    auto problem = fem::newton::flow_problem(W, fem::assembly::Flow::navier_stokes(1 / re), bc, true, "ns");
    const auto r = fem::newton::solve(problem, w, options());
    ASSERT_TRUE(r.converged) << fem::newton::to_string(r.reason) << " n = " << n << ": " << r.message;
    EXPECT_LE(r.iterations, 8);
    EXPECT_EQ(s.counter("solve.symbolic_analyses") - analyses, 1);  // every Jacobian on one analysis
    EXPECT_EQ(r.jacobian_refreshes, r.iterations);
    const Assembler velocity(W->velocity()), pressure(W->pressure());
    eu.push_back(errors(velocity, W->velocity_part(w), u_exact).l2);
    ep.push_back(errors(pressure, W->pressure_part(w), p_exact).l2);
  }
  for (std::size_t i = 1; i < eu.size(); ++i) {
    EXPECT_NEAR(std::log2(eu[i - 1] / eu[i]), 3.0, 0.2) << eu[i - 1] << " " << eu[i];
    EXPECT_NEAR(std::log2(ep[i - 1] / ep[i]), 2.0, 0.2) << ep[i - 1] << " " << ep[i];
  }
}

// Lamé's thick cylinder (plane strain, radii 1 and 2, internal pressure 1, E = 1, ν = 0.4999) on a
// quarter annulus with the exact displacement u_r = C((1 − 2ν) r + 4/r), C = (1 + ν)/3, on its
// whole boundary (a polygon: the solution is exact on it too, so no geometric error). The u–p
// Taylor–Hood displacement converges at the P2 rate 3 in L2 and its pressure to the exact
// p = −2ν/3 at rate 2; displacement-only P1 locks: at the same mesh its error is over ten times larger.
TEST_F(TaylorHood, UpElasticityConvergesWhereP1Locks) {
  const double E = 1, nu = 0.4999, pi = std::numbers::pi;
  const double mu = E / (2 * (1 + nu)), lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), C = (1 + nu) / 3;
  const VectorFunction exact = [=](const double* x, double* u) {
    const double r = std::hypot(x[0], x[1]), ur = C * ((1 - 2 * nu) * r + 4 / r);
    u[0] = ur * x[0] / r;
    u[1] = ur * x[1] / r;
  };
  std::vector<double> up, p1, pressure;
  for (index_t n : {4, 8, 16}) {
    auto& s = fem::store();
    s.clear();
    const fem::Mesh strip = fem::mesh::rectangle(fem::CellType::tri3, n, 2 * n, {1.0, 0.0}, {2.0, pi / 2});
    fem::Mesh::Data d;
    d.gdim = 2;
    d.cell_type = fem::CellType::tri3;
    d.cells.assign(strip.cells().begin(), strip.cells().end());
    for (index_t i = 0; i < strip.num_nodes(); ++i) {
      const auto x = strip.node(i);
      d.coords.insert(d.coords.end(), {x[0] * std::cos(x[1]), x[0] * std::sin(x[1])});
    }
    d.source = "quarter annulus";
    s.put("annulus", fem::Mesh(std::move(d)));
    // u–p on Taylor–Hood.
    auto W = std::make_shared<const MixedSpace>("annulus");
    const auto bc = velocity_bc(*W, exact);
    std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
    set_dirichlet(bc, w);
    auto problem =
        fem::newton::flow_problem(W, fem::assembly::Flow::up_elasticity(mu, lambda), bc, false, "up");
    ASSERT_TRUE(fem::newton::solve(problem, w, options()).converged);
    up.push_back(errors(Assembler(W->velocity()), W->velocity_part(w), exact).l2);
    double e = 0;
    for (double p : W->pressure_part(w)) e = std::max(e, std::abs(p + 2 * nu / 3));
    pressure.push_back(e);
    // Displacement-only P1 on the same mesh.
    const FunctionSpace V1("annulus", 1, 2);
    const Assembler a1(V1);
    std::vector<double> values(static_cast<std::size_t>(a1.pattern()->nnz())),
        b(static_cast<std::size_t>(V1.num_dofs()), 0.0);
    a1.matrix_into(Elasticity{E, nu}, values);
    std::vector<Dirichlet> conditions;
    for (int k = 0; k < 2; ++k)
      conditions.push_back({FacetSet::all(),
                            [&, k](const double* x) {
                              double u[2];
                              exact(x, u);
                              return u[k];
                            },
                            k});
    apply_dirichlet(dirichlet_values(V1, conditions), *a1.pattern(), values, b);
    s.put("p1", fem::CsrMatrix(a1.pattern(), std::move(values)));
    auto solver = fem::solve::make_solver({});
    solver->factorize(s, "p1");
    std::vector<double> u1(b.size());
    fem::solve::require(solver->solve(b, u1));
    p1.push_back(errors(a1, u1, exact).l2);
  }
  for (std::size_t i = 1; i < up.size(); ++i) EXPECT_NEAR(std::log2(up[i - 1] / up[i]), 3.0, 0.25) << up[i];
  // p = −λ div u: the constant −2ν/3, to the O(h²) of P1 at its nodes.
  for (std::size_t i = 1; i < pressure.size(); ++i)
    EXPECT_NEAR(std::log2(pressure[i - 1] / pressure[i]), 2.0, 0.3) << pressure[i];
  for (std::size_t i = 0; i < up.size(); ++i)
    EXPECT_GT(p1[i], 10 * up[i]) << "P1 " << p1[i] << ", u–p " << up[i];
  // P1's error falls slower than its O(h²): locked.
  EXPECT_LT(std::log2(p1[0] / p1[2]) / 2, 1.9);
}

// A user's block kernel (mixed_into) for the Stokes forms — μ∇u:∇v − p div v − q div u — gives
// flow_into's matrix and residual: the extension point sees the same bases, geometry and slots.
TEST_F(TaylorHood, AUsersBlockKernelGivesTheLibrarysForms) {
  auto& s = fem::store();
  s.put("k", fem::mesh::unit_square(fem::CellType::quad4, 3));
  const MixedSpace W("k");
  const double mu = 0.7;
  std::vector<double> w(static_cast<std::size_t>(W.num_dofs()));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(1.0 + 0.37 * static_cast<double>(i));
  const MixedKernel stokes = [mu](const MixedCell& c, double* A, double* R) {
    const int n = c.dofs(), d = c.dim, nv = c.velocity_dofs();
    for (int q = 0; q < c.points; ++q) {
      const double* g = c.grad_phi + q * c.velocity_nodes * d;
      const double* psi = c.psi + q * c.pressure_nodes;
      double G[2][2] = {}, p = 0;
      for (int a = 0; a < c.velocity_nodes; ++a)
        for (int k = 0; k < d; ++k)
          for (int j = 0; j < d; ++j) G[k][j] += c.w[a * d + k] * g[a * d + j];
      for (int m = 0; m < c.pressure_nodes; ++m) p += c.w[nv + m] * psi[m];
      const double wq = c.weight[q], div = G[0][0] + G[1][1];
      for (int a = 0; a < c.velocity_nodes; ++a)
        for (int k = 0; k < d; ++k) {
          if (R) R[a * d + k] += wq * (mu * (G[k][0] * g[a * d] + G[k][1] * g[a * d + 1]) - p * g[a * d + k]);
          if (!A) continue;
          for (int b = 0; b < c.velocity_nodes; ++b)
            A[(a * d + k) * n + b * d + k] += wq * mu * (g[a * d] * g[b * d] + g[a * d + 1] * g[b * d + 1]);
          for (int m = 0; m < c.pressure_nodes; ++m) {
            A[(a * d + k) * n + nv + m] -= wq * psi[m] * g[a * d + k];
            A[(nv + m) * n + a * d + k] -= wq * psi[m] * g[a * d + k];
          }
        }
      if (R)
        for (int m = 0; m < c.pressure_nodes; ++m) R[nv + m] -= wq * psi[m] * div;
    }
  };
  std::vector<double> mine(static_cast<std::size_t>(W.pattern()->nnz())), theirs(mine.size());
  std::vector<double> Fm(w.size(), 0.0), Ft(w.size(), 0.0);
  mixed_into(W, stokes, 7, w, mine, Fm);
  flow_into(W, fem::assembly::Flow::stokes(mu), w, theirs, Ft);
  EXPECT_LT(max_difference(mine, theirs), 1e-12);
  EXPECT_LT(max_difference(Fm, Ft), 1e-12);
  double size = 0;
  for (double v : theirs) size = std::max(size, std::abs(v));
  EXPECT_GT(size, 0.1);  // not two zero matrices
}

// Picard then Newton on one block pattern: every Jacobian of both on one symbolic analysis; Newton
// converges quadratically after the Picard steps (a lid-driven cavity at Re = 400).
TEST_F(TaylorHood, PicardThenNewtonShareOneSymbolicAnalysis) {
  auto& s = fem::store();
  s.put("cavity", fem::mesh::unit_square(fem::CellType::tri3, 16));
  auto W = std::make_shared<const MixedSpace>("cavity");
  const VectorFunction lid = [](const double* x, double* u) {
    u[0] = x[1] > 1 - 1e-12 ? 1.0 : 0.0;
    u[1] = 0;
  };
  const auto bc = velocity_bc(*W, lid);
  std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
  const auto analyses = s.counter("solve.symbolic_analyses");
  fem::flow::SteadyOptions o;
  o.newton = options();
  o.picard_steps = 4;
  const auto r =
      fem::flow::solve_steady(W, fem::assembly::Flow::navier_stokes(1.0 / 400), bc, true, w, o, "cavity");
  ASSERT_TRUE(r.converged()) << fem::newton::to_string(r.newton.reason);
  EXPECT_EQ(r.picard.iterations, 4);
  EXPECT_LE(r.newton.iterations, 6);
  EXPECT_EQ(s.counter("solve.symbolic_analyses") - analyses, 1);
  // Quadratic: the last reductions square the residual (up to a constant).
  const auto& h = r.newton.history;
  ASSERT_GE(h.size(), 3u);
  const double r0 = h[h.size() - 3].residual_norm, r1 = h[h.size() - 2].residual_norm;
  EXPECT_LT(r1, 10 * r0 * r0 / h.front().residual_norm + 1e-11);
}

// Velocity data on the whole boundary without the pressure's null space (an outflow that `all`
// covered too) is a singular matrix: refused before any solve, in words, the state untouched but
// for its velocity data; the same data with the null space declared solve.
TEST_F(TaylorHood, AWholeBoundaryOfVelocityDataWithoutTheNullSpaceIsRefused) {
  auto& s = fem::store();
  s.put("closed", fem::mesh::unit_square(fem::CellType::tri3, 4));
  auto W = std::make_shared<const MixedSpace>("closed");
  const VectorFunction lid = [](const double* x, double* u) {
    u[0] = x[1] > 1 - 1e-12 ? 1.0 : 0.0;
    u[1] = 0;
  };
  const auto bc = velocity_bc(*W, lid);
  std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
  const auto factorizations = s.counter("solve.factorizations");
  fem::flow::SteadyOptions o;
  o.newton = options();
  try {
    fem::flow::solve_steady(W, fem::assembly::Flow::stokes(1.0), bc, false, w, o, "closed");
    FAIL() << "a singular saddle point was solved";
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("whole boundary"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'closed'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.counter("solve.factorizations"), factorizations);
  EXPECT_TRUE(
      fem::flow::solve_steady(W, fem::assembly::Flow::stokes(1.0), bc, true, w, o, "closed").converged());
}

// Monolithic BDF2 + Newton (flow::monolithic through fem::time) on the Taylor–Green vortex with its
// exact velocity on the boundary: order 2 in time against a run with a 16 times smaller step on
// the same mesh, every Jacobian on one symbolic analysis, lagged across steps.
TEST_F(TaylorHood, MonolithicBdf2IsSecondOrderInTime) {
  auto& s = fem::store();
  s.put("tg", fem::mesh::unit_square(fem::CellType::tri3, 8));
  auto W = std::make_shared<const MixedSpace>("tg");
  const double nu = 0.05, pi = std::numbers::pi;
  const auto u_at = [=](double t) {
    return VectorFunction([=](const double* x, double* u) {
      const double F = std::exp(-2 * pi * pi * nu * t);
      u[0] = -std::cos(pi * x[0]) * std::sin(pi * x[1]) * F;
      u[1] = std::sin(pi * x[0]) * std::cos(pi * x[1]) * F;
    });
  };
  const auto dofs = velocity_bc(*W, u_at(0)).dofs;
  const auto run = [&](double dt) {
    auto p = fem::flow::monolithic(W, fem::assembly::Flow::navier_stokes(nu), true, "tg");
    p.dirichlet.dofs = dofs;
    p.dirichlet.values = [&](double t, std::span<double> g) {
      const auto bc = velocity_bc(*W, u_at(t));
      std::copy(bc.values.begin(), bc.values.end(), g.begin());
    };
    fem::time::FirstOrderOptions o;
    o.scheme = fem::time::Scheme::bdf2;
    o.dt = dt;
    o.linear.backend = fem::solve::Backend::umfpack;
    o.newton = options();
    o.newton.lagging = fem::newton::Lagging::adaptive();
    std::vector<double> w0(static_cast<std::size_t>(W->num_dofs()), 0.0);
    const auto u0 = interpolate(W->velocity(), u_at(0));
    std::copy(u0.begin(), u0.end(), w0.begin());
    const auto analyses = s.counter("solve.symbolic_analyses");
    fem::time::FirstOrderStepper st(s, std::move(p), o, w0);
    st.advance_to(0.5);
    EXPECT_LE(s.counter("solve.symbolic_analyses") - analyses, 1);
    EXPECT_LT(st.report().jacobians, st.report().accepted);
    EXPECT_EQ(st.report().newton_failures, 0);
    return std::vector<double>(st.u().begin(), st.u().begin() + W->pressure_offset());
  };
  const auto reference = run(0.05 / 32);
  std::vector<double> err;
  for (double dt : {0.05, 0.025, 0.0125}) err.push_back(max_difference(run(dt), reference));
  for (std::size_t i = 1; i < err.size(); ++i)
    EXPECT_NEAR(std::log2(err[i - 1] / err[i]), 2.0, 0.25) << err[i];
}

// The projection scheme in a channel: parabolic inflow, no-slip walls, p = 0 at the outflow. From
// rest it settles on Poiseuille flow, which the discrete equations hold exactly; its three
// matrices are factorized once (in the constructor), none in the steps.
TEST_F(TaylorHood, ProjectionSettlesOnPoiseuilleFactorizingOnce) {
  auto& s = fem::store();
  s.put("channel", fem::mesh::rectangle(fem::CellType::tri3, 16, 4, {0.0, 0.0}, {4.0, 1.0}));
  auto W = std::make_shared<const MixedSpace>("channel");
  const VectorFunction poiseuille = [](const double* x, double* u) {
    u[0] = 4 * x[1] * (1 - x[1]);
    u[1] = 0;
  };
  // The walls (y = 0, 1) and the inlet (x = 0): every boundary DOF but the outlet's.
  const auto& c = W->velocity().dofmap().coordinates;
  const auto all = velocity_bc(*W, poiseuille);
  fem::time::Dirichlet velocity;
  std::vector<double> values;
  for (std::size_t i = 0; i < all.dofs.size(); ++i) {
    const auto node = static_cast<std::size_t>(all.dofs[i] / 2);
    const double x = c[2 * node], y = c[2 * node + 1];
    if (x > 4 - 1e-12 && y > 1e-12 && y < 1 - 1e-12) continue;
    velocity.dofs.push_back(all.dofs[i]);
    values.push_back(all.values[i]);
  }
  velocity.values = [values](double, std::span<double> g) {
    std::copy(values.begin(), values.end(), g.begin());
  };
  std::vector<index_t> outlet;
  const auto& pc = W->pressure().dofmap().coordinates;
  for (index_t i = 0; i < W->num_pressure_dofs(); ++i)
    if (pc[static_cast<std::size_t>(2 * i)] > 4 - 1e-12) outlet.push_back(i);
  const double mu = 0.5;
  fem::flow::Projection p;
  p.W = W;
  p.viscosity = mu;
  p.velocity = velocity;
  p.pressure_dofs = outlet;
  fem::flow::ProjectionStepper stepper(s, p, 0.05,
                                       std::vector<double>(static_cast<std::size_t>(W->num_dofs()), 0.0));
  EXPECT_EQ(stepper.matrices(), 3);  // both components share their constrained nodes
  const auto factorizations = s.counter("solve.factorizations");
  for (int i = 0; i < 1600; ++i) stepper.step();  // to t = 80: settled to rounding
  EXPECT_EQ(s.counter("solve.factorizations"), factorizations);
  const auto exact = interpolate(W->velocity(), poiseuille);
  EXPECT_LT(max_difference(W->velocity_part(stepper.w()), exact), 1e-8);
  // p = 2μ·4·(4 − x)·... : −μ u_yy = 8μ = −∂p/∂x, p(4) = 0.
  const auto pw = W->pressure_part(stepper.w());
  double e = 0;
  for (std::size_t i = 0; i < pw.size(); ++i) e = std::max(e, std::abs(pw[i] - 8 * mu * (4 - pc[2 * i])));
  EXPECT_LT(e, 1e-7);
}

}  // namespace
