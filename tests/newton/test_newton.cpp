// Newton on the assembly and solve kernels: exactness and quadratic convergence on a quasilinear
// problem, the FE rate on a smooth one, 1D and 2D Bratu (second order, the fold, divergence
// beyond it, continuation), the p-Laplacian with line search, Jacobian lagging counted from the
// solve cache, user callbacks, and the stop reasons.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fem/array.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/newton/assembled.hpp"
#include "fem/newton/newton.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;
using std::numbers::pi;
namespace nt = fem::newton;

// Every test starts from an empty process-wide store with zero counters (the kernels' default
// store): what one test analyzed or counted never shows in another's figures.
class Newton : public ::testing::Test {
 protected:
  void SetUp() override {
    fem::store().clear();
    fem::store().reset_stats();
  }
};

struct Case {
  std::shared_ptr<const Assembler> assembler;
  DirichletValues bc;
};

// A mesh published in the store under a fresh key, its P1 space and the Dirichlet values.
Case setup(fem::Mesh mesh, const std::string& key, const Function& boundary_value = nullptr, int degree = 1) {
  fem::store().put(key, std::move(mesh));
  const FunctionSpace V(key, degree);
  auto a = std::make_shared<const Assembler>(V);
  return {a, dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), boundary_value}})};
}

std::vector<double> initial(const Case& s) {
  std::vector<double> u(s.assembler->space().num_dofs(), 0.0);
  set_dirichlet(s.bc, u);
  return u;
}

bool all_finite(std::span<const double> u) {
  for (double x : u)
    if (!std::isfinite(x)) return false;
  return true;
}

NonlinearForm nonlinear_poisson(Function f) {
  return quasilinear([](double u) { return 1 + u * u; }, [](double u) { return 2 * u; }, std::move(f));
}

TEST_F(Newton, QuasilinearReproducesALinearSolutionQuadratically) {
  auto exact = [](const double* x) { return 1 + x[0] + 2 * x[1]; };
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 16), "newton/quasi", exact);
  NonlinearForm form = nonlinear_poisson([](const double* x) { return -10 - 10 * x[0] - 20 * x[1]; });
  form.quadrature_degree = 2;  // k(u)∇u·∇v and f v are quadratics: integrated exactly
  auto u = initial(s);
  nt::Options o;
  o.atol = 1e-13;
  o.rtol = 1e-14;
  const auto r = nt::solve(nt::assembled_problem(s.assembler, form, s.bc, "newton/quasi"), u, o);
  ASSERT_TRUE(r.converged) << nt::to_string(r.reason);
  const auto& coords = s.assembler->space().dofmap().coordinates;
  double worst = 0;
  for (std::size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::abs(u[i] - exact(&coords[2 * i])));
  EXPECT_LT(worst, 1e-11);
  // Quadratic convergence: the observed order log(r₊/r)/log(r/r₋) near 2 while above round-off.
  const auto& h = r.history;
  int checked = 0;
  for (std::size_t k = 1; k + 1 < h.size(); ++k) {
    const double r0 = h[k - 1].residual_norm, r1 = h[k].residual_norm, r2 = h[k + 1].residual_norm;
    if (r2 < 1e-11 || r1 > 1e-1 * r0) continue;
    EXPECT_GT(std::log(r2 / r1) / std::log(r1 / r0), 1.7) << "iteration " << k + 1;
    ++checked;
  }
  EXPECT_GE(checked, 1);
  // Full Newton refreshes the Jacobian every iteration; the symbolic analysis is done once.
  EXPECT_EQ(r.jacobian_refreshes, r.iterations);
}

TEST_F(Newton, QuasilinearSmoothSolutionConvergesAtTheFiniteElementRate) {
  // u = 1 + sin(πx) sin(πy); f = -div((1+u²)∇u) = -(2u|∇u|² + (1+u²)Δu).
  auto exact = [](const double* x) { return 1 + std::sin(pi * x[0]) * std::sin(pi * x[1]); };
  auto f = [&](const double* x) {
    const double u = exact(x), sx = std::sin(pi * x[0]), sy = std::sin(pi * x[1]);
    const double gx = pi * std::cos(pi * x[0]) * sy, gy = pi * sx * std::cos(pi * x[1]);
    const double lap = -2 * pi * pi * sx * sy;
    return -(2 * u * (gx * gx + gy * gy) + (1 + u * u) * lap);
  };
  std::vector<Errors> e;
  for (int n : {8, 16, 32}) {
    const std::string key = "newton/smooth" + std::to_string(n);
    const Case s = setup(fem::mesh::unit_square(CellType::tri3, n), key, exact);
    auto u = initial(s);
    const auto r = nt::solve(nt::assembled_problem(s.assembler, nonlinear_poisson(f), s.bc, key), u);
    ASSERT_TRUE(r.converged) << nt::to_string(r.reason);
    e.push_back(errors(*s.assembler, u, [&](const double* x, double* v) { v[0] = exact(x); }));
  }
  EXPECT_NEAR(std::log2(e[1].l2 / e[2].l2), 2.0, 0.2);
  EXPECT_NEAR(std::log2(e[1].h1 / e[2].h1), 1.0, 0.2);
}

double middle_value(const Case& s, std::span<const double> u) {
  const auto& coords = s.assembler->space().dofmap().coordinates;
  for (std::size_t i = 0; i < u.size(); ++i)
    if (std::abs(coords[i] - 0.5) < 1e-12) return u[i];
  ADD_FAILURE() << "no node at x = 1/2";
  return 0;
}

TEST_F(Newton, Bratu1DConvergesAtSecondOrderToTheExactMidpoint) {
  constexpr double exact_mid = 0.1405392144;  // λ = 1, lower branch
  std::vector<double> err;
  for (int n : {8, 16, 32, 64}) {
    const std::string key = "newton/bratu1d-" + std::to_string(n);
    const Case s = setup(fem::mesh::interval(n), key);
    auto u = initial(s);
    const auto r = nt::solve(nt::assembled_problem(s.assembler, bratu(1.0), s.bc, key), u);
    ASSERT_TRUE(r.converged) << nt::to_string(r.reason);
    err.push_back(std::abs(middle_value(s, u) - exact_mid));
  }
  EXPECT_LT(err.back(), 1e-4);
  EXPECT_NEAR(std::log2(err[2] / err[3]), 2.0, 0.25);
}

TEST_F(Newton, Bratu1DContinuationFindsTheFold) {
  const Case s = setup(fem::mesh::interval(128), "newton/bratu1d-fold");
  auto u = initial(s);
  nt::ContinuationOptions c{.start = 0.5, .end = 4.0, .step = 0.5, .min_step = 1e-3};
  const auto r = nt::continuation(
      [&](double lambda) {
        return nt::assembled_problem(s.assembler, bratu(lambda), s.bc, "newton/bratu1d-fold");
      },
      u, c);
  EXPECT_FALSE(r.reached_end);
  EXPECT_NEAR(r.last_parameter, 3.513830719, 0.01 * 3.513830719);
  EXPECT_TRUE(all_finite(u));
}

TEST_F(Newton, Bratu2DConvergesUpToTheFoldAndDivergesBeyondIt) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 16), "newton/bratu2d");
  for (double lambda : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 6.5}) {
    auto u = initial(s);
    const auto r = nt::solve(nt::assembled_problem(s.assembler, bratu(lambda), s.bc, "newton/bratu2d"), u);
    EXPECT_TRUE(r.converged) << "lambda " << lambda << ": " << nt::to_string(r.reason);
  }
  auto u = initial(s);
  nt::Options o;
  o.max_iterations = 30;
  const auto r = nt::solve(nt::assembled_problem(s.assembler, bratu(7.0), s.bc, "newton/bratu2d"), u, o);
  EXPECT_FALSE(r.converged);
  EXPECT_FALSE(nt::converged(r.reason));
  EXPECT_LE(r.iterations, 30);
  EXPECT_TRUE(all_finite(u));
}

TEST_F(Newton, Bratu2DContinuationGetsWithinOnePercentOfTheFold) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 32), "newton/bratu2d-fold");
  auto u = initial(s);
  nt::ContinuationOptions c{.start = 1.0, .end = 8.0, .step = 1.0, .min_step = 2e-3};
  nt::Options o;
  o.max_iterations = 15;  // warm starts converge in a few; a failure near the fold fails fast
  const auto r = nt::continuation(
      [&](double lambda) {
        return nt::assembled_problem(s.assembler, bratu(lambda), s.bc, "newton/bratu2d-fold");
      },
      u, c, o);
  EXPECT_FALSE(r.reached_end);
  EXPECT_GT(r.failures, 0);
  EXPECT_NEAR(r.last_parameter, 6.80812, 0.01 * 6.80812);
  EXPECT_TRUE(all_finite(u));
}

TEST_F(Newton, PLaplacianConvergesWithLineSearch) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 24), "newton/plap");
  // Start from the Laplace solution (the p-Laplacian Jacobian vanishes at u = 0).
  auto u = initial(s);
  const auto warm =
      nt::solve(nt::assembled_problem(s.assembler, p_laplacian(2.0, [](const double*) { return 1.0; }), s.bc,
                                      "newton/plap"),
                u);
  ASSERT_TRUE(warm.converged);
  nt::Options o;
  o.line_search = nt::LineSearch::backtracking;
  o.rtol = 1e-10;
  const auto r =
      nt::solve(nt::assembled_problem(s.assembler, p_laplacian(4.0, [](const double*) { return 1.0; }), s.bc,
                                      "newton/plap"),
                u, o);
  EXPECT_TRUE(r.converged) << nt::to_string(r.reason) << " after " << r.iterations;
  for (const auto& it : r.history) EXPECT_LE(it.step_length, 1.0);
  // The residual decreases monotonically: that is what the line search guarantees.
  for (std::size_t k = 1; k < r.history.size(); ++k)
    EXPECT_LT(r.history[k].residual_norm, r.history[k - 1].residual_norm) << "iteration " << k;
}

// Bratu λ on s under `lagging` from the initial guess into u; the factorizations and symbolic
// analyses it asked the solve cache for, from the store's counters.
struct LaggedRun {
  nt::Result result;
  std::int64_t factorizations = 0, symbolic_analyses = 0;
};
LaggedRun run_bratu(const Case& s, double lambda, const std::string& key, nt::Lagging lagging,
                    std::vector<double>& u, double rtol = 1e-10, double atol = 1e-10) {
  auto& store = fem::store();
  u = initial(s);
  nt::Options o;
  o.lagging = lagging;
  o.rtol = rtol;
  o.atol = atol;
  o.max_iterations = 200;
  const auto factorizations = store.counter("solve.factorizations");
  const auto symbolic = store.counter("solve.symbolic_analyses");
  LaggedRun run;
  run.result = nt::solve(nt::assembled_problem(s.assembler, bratu(lambda), s.bc, key), u, o);
  run.factorizations = store.counter("solve.factorizations") - factorizations;
  run.symbolic_analyses = store.counter("solve.symbolic_analyses") - symbolic;
  return run;
}

TEST_F(Newton, LaggingGivesTheSameSolutionWithFewerFactorizations) {
  // Bratu at λ = 3: mildly nonlinear, where a lagged Jacobian still contracts well.
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 24), "newton/lag");
  auto run = [&](nt::Lagging lag, std::vector<double>& u, std::int64_t& factorizations) {
    const LaggedRun r = run_bratu(s, 3.0, "newton/lag", lag, u);
    factorizations = r.factorizations;
    EXPECT_LE(r.symbolic_analyses, 1) << "the pattern's analysis is reused";
    return r.result;
  };
  std::vector<double> full, lagged;
  std::int64_t full_f = 0, lag_f = 0;
  const auto rf = run({}, full, full_f);
  ASSERT_TRUE(rf.converged);
  EXPECT_EQ(full_f, rf.iterations);
  for (int L : {2, 3, 5}) {
    const auto rl = run(nt::Lagging::fixed(L), lagged, lag_f);
    ASSERT_TRUE(rl.converged) << "lag " << L;
    EXPECT_EQ(lag_f, (rl.iterations + L - 1) / L) << "lag " << L;
    EXPECT_LT(lag_f, full_f) << "lag " << L;
    EXPECT_EQ(rl.jacobian_refreshes, lag_f);
    double diff = 0;
    for (std::size_t i = 0; i < full.size(); ++i) diff = std::max(diff, std::abs(full[i] - lagged[i]));
    EXPECT_LT(diff, 1e-8) << "lag " << L;
  }
  // The adaptive policy refreshes when the reduction stalls, and still converges.
  const auto ra = run({10, 0.3}, lagged, lag_f);
  EXPECT_TRUE(ra.converged);
  EXPECT_LT(lag_f, full_f);
}

TEST_F(Newton, AndersonAccelerationCarriesTheSolveOnOneFactorization) {
  // Bratu at λ = 6, close to the fold at 6.81: the chord steps of J(u₀) contract by only ~0.35
  // per iteration. Accelerated, one factorization converges in a few more iterations than full
  // Newton, to the same solution.
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 32), "newton/anderson");
  auto run = [&](nt::Lagging lag, std::vector<double>& u, std::int64_t& factorizations) {
    const LaggedRun r = run_bratu(s, 6.0, "newton/anderson", lag, u, 1e-10, 0.0);
    factorizations = r.factorizations;
    return r.result;
  };
  std::vector<double> full, chord, accelerated;
  std::int64_t full_f = 0, chord_f = 0, acc_f = 0;
  const auto rf = run({}, full, full_f);
  const auto rc = run(nt::Lagging::fixed(1000), chord, chord_f);
  const auto ra = run(nt::Lagging::fixed(1000, 5), accelerated, acc_f);
  ASSERT_TRUE(rf.converged && rc.converged && ra.converged);
  EXPECT_EQ(chord_f, 1);
  EXPECT_EQ(acc_f, 1);
  EXPECT_GT(rc.iterations, 3 * rf.iterations) << "the plain chord method converges linearly";
  EXPECT_LE(ra.iterations, 2 * rf.iterations) << "acceleration removes the slow modes";
  EXPECT_LT(2 * ra.iterations, rc.iterations);
  double diff = 0;
  for (std::size_t i = 0; i < full.size(); ++i) diff = std::max(diff, std::abs(full[i] - accelerated[i]));
  EXPECT_LT(diff, 1e-9);
  // The adaptive policy (accelerated by default) keeps its one factorization here.
  const auto rd = run(nt::Lagging::adaptive(), accelerated, acc_f);
  ASSERT_TRUE(rd.converged);
  EXPECT_LT(acc_f, full_f);
  EXPECT_EQ(acc_f, rd.jacobian_refreshes);
}

TEST_F(Newton, AndersonOnALinearProblemIsGmresOnTheStaleJacobian) {
  // F(x) = A x − b with A = B + c dᵀ + e fᵀ, and a user Jacobian callback that returns B (an
  // inexact Jacobian): the chord iteration x ← x − B⁻¹F stalls, but B⁻¹A is the identity plus
  // rank 2, so Anderson with depth ≥ 3 (GMRES on B⁻¹A) solves it in about three steps.
  const int n = 40;
  std::vector<fem::index_t> offsets(n + 1), cols;
  std::vector<double> B, A;
  std::vector<double> c(n), d(n), e(n), f(n), b(n);
  for (int i = 0; i < n; ++i) {
    c[i] = std::sin(1.0 + i), d[i] = 0.8 * std::cos(0.3 * i), e[i] = 0.5 + 0.01 * i,
    f[i] = std::sin(0.7 * i) / n;
    b[i] = 1.0 + 0.1 * i;
  }
  for (int i = 0; i < n; ++i) {
    offsets[i] = static_cast<fem::index_t>(cols.size());
    for (int j = 0; j < n; ++j) {
      cols.push_back(j);
      const double bij = i == j ? 4.0 : (std::abs(i - j) == 1 ? -1.0 : 0.0);
      B.push_back(bij);
      A.push_back(bij + c[i] * d[j] + e[i] * f[j]);
    }
  }
  offsets[n] = static_cast<fem::index_t>(cols.size());
  auto pattern = std::make_shared<const fem::CsrPattern>(n, n, offsets, cols);
  auto problem = [&](const std::string& name) {
    nt::Problem p;
    p.name = name;
    p.residual = [&, pattern](std::span<const double> x, std::span<double> F) {
      for (int i = 0; i < n; ++i) {
        double s = -b[i];
        for (int j = 0; j < n; ++j) s += A[i * n + j] * x[j];
        F[i] = s;
      }
    };
    p.jacobian = [&, pattern](std::span<const double>) { return fem::CsrMatrix(pattern, B); };
    return p;
  };
  nt::Options o;
  o.rtol = 1e-12;
  o.atol = 0;
  o.max_iterations = 8;
  o.lagging = nt::Lagging::fixed(100, 4);
  std::vector<double> x(n, 0.0);
  const auto r = nt::solve(problem("newton/anderson-linear"), x, o);
  EXPECT_TRUE(r.converged) << nt::to_string(r.reason);
  EXPECT_LE(r.iterations, 5);
  EXPECT_EQ(r.jacobian_refreshes, 1);
  o.lagging = nt::Lagging::fixed(100);  // the plain chord steps do not get there in 8
  std::vector<double> y(n, 0.0);
  EXPECT_FALSE(nt::solve(problem("newton/chord-linear"), y, o).converged);
}

// The nonlinear forms' residual and Jacobian one point at a time through the generic kernel
// loop (Assembler::vector_into / matrix_into with a user kernel): the reference the assembly
// engine's chunked, factored passes are held to.
template <class CV>
void pointwise(const NonlinearForm& form, const CV& cv, int q, double* a, double* da_du, double* da_dg,
               double& s, double& ds_du, double* ds_dg) {
  double u = cv.u_value(q), g[3];
  cv.u_grad(q, g);
  form.integrand(1, CV::dim, cv.point(q), &u, g, a, da_du, da_dg, &s, &ds_du, ds_dg);
}

TEST_F(Newton, NonlinearEngineAgreesWithAPointwiseKernel) {
  // The engine (chunks of points, one integrand call per chunk, factored P1 sums) against the
  // per-point kernels, for every library form, on every cell type in turn: a hexahedron's 27
  // points in 3D after the triangles' 48 in 2D reuse the per-thread buffers.
  struct Space {
    const char* name;
    fem::Mesh mesh;
    int degree;
  };
  std::vector<Space> spaces;
  spaces.push_back({"P1-tri", fem::mesh::unit_square(CellType::tri3, 6), 1});
  spaces.push_back({"P2-tri", fem::mesh::unit_square(CellType::tri3, 6), 2});
  spaces.push_back({"Q1-quad", fem::mesh::unit_square(CellType::quad4, 5), 1});
  spaces.push_back({"Q1-hex", fem::mesh::unit_cube(CellType::hex8, 3), 1});
  spaces.push_back({"P1-tet", fem::mesh::unit_cube(CellType::tet4, 3), 1});
  for (auto& [space_name, mesh, degree] : spaces) {
    const std::string key = std::string("newton/kernels/") + space_name;
    const Case s = setup(std::move(mesh), key, nullptr, degree);
    const Assembler& a = *s.assembler;
    const auto n = static_cast<std::size_t>(a.space().num_dofs());
    std::vector<double> u(n);
    for (std::size_t i = 0; i < n; ++i) u[i] = 0.3 * std::sin(static_cast<double>(i));
    const Function f = [](const double* x) { return 1 + x[0] * x[1]; };
    const std::vector<std::pair<const char*, NonlinearForm>> forms{
        {"bratu", bratu(2.0)}, {"quasilinear", nonlinear_poisson(f)}, {"p-Laplacian", p_laplacian(3.0, f)}};
    for (const auto& [name, form] : forms) {
      const int quadrature = 2 * degree + 2;
      auto residual = [&form](const auto& cv, double* be) {
        for (int q = 0; q < cv.num_points; ++q) {
          double av[3], dad[3], dag[9], sv, dsd, dsg[3];
          pointwise(form, cv, q, av, dad, dag, sv, dsd, dsg);
          for (int i = 0; i < cv.n; ++i) {
            double t = sv * cv.basis(q, i);
            for (int d = 0; d < cv.dim; ++d) t += av[d] * cv.basis_grad(q, i)[d];
            be[i] += cv.weight[q] * t;
          }
        }
      };
      auto jacobian = [&form](const auto& cv, double* A) {
        const int dim = cv.dim;
        for (int q = 0; q < cv.num_points; ++q) {
          double av[3], dad[3], dag[9], sv, dsd, dsg[3];
          pointwise(form, cv, q, av, dad, dag, sv, dsd, dsg);
          for (int j = 0; j < cv.n; ++j) {
            const double* gj = cv.basis_grad(q, j);
            double flux[3], react = dsd * cv.basis(q, j);
            for (int d = 0; d < dim; ++d) {
              flux[d] = dad[d] * cv.basis(q, j);
              for (int e = 0; e < dim; ++e) flux[d] += dag[d * dim + e] * gj[e];
              react += dsg[d] * gj[d];
            }
            for (int i = 0; i < cv.n; ++i) {
              double t = react * cv.basis(q, i);
              for (int d = 0; d < dim; ++d) t += flux[d] * cv.basis_grad(q, i)[d];
              A[i * cv.n + j] += cv.weight[q] * t;
            }
          }
        }
      };
      // The Dirichlet rows are zeroed / set to the identity by the problem: compare the rest.
      const nt::Problem p = nt::assembled_problem(s.assembler, form, s.bc, key + "/" + name);
      std::vector<double> F(n), expected(n, 0.0);
      p.residual(u, F);
      a.vector_into(residual, quadrature, expected, u);
      zero_dirichlet(s.bc.homogeneous(), expected);
      double scale = 0, diff = 0;
      for (std::size_t i = 0; i < n; ++i) {
        scale = std::max(scale, std::abs(expected[i]));
        diff = std::max(diff, std::abs(F[i] - expected[i]));
      }
      EXPECT_LE(diff, 1e-13 * scale) << name << " " << space_name << " residual";
      const fem::CsrMatrix J = p.jacobian(u);
      std::vector<double> values(a.pattern()->nnz()), scratch(n, 0.0);
      a.matrix_into(jacobian, quadrature, values, u);
      apply_dirichlet(s.bc.homogeneous(), *a.pattern(), values, scratch);
      scale = diff = 0;
      for (std::size_t k = 0; k < values.size(); ++k) {
        scale = std::max(scale, std::abs(values[k]));
        diff = std::max(diff, std::abs(J.values()[k] - values[k]));
      }
      EXPECT_LE(diff, 1e-13 * scale) << name << " " << space_name << " Jacobian";
      // The fused pass gives the same residual and Jacobian, bit for bit.
      ASSERT_TRUE(p.residual_and_jacobian) << name;
      std::vector<double> F2(n, 1.0);
      const fem::CsrMatrix J2 = p.residual_and_jacobian(u, F2);
      EXPECT_EQ(F2, F) << name << " " << space_name;
      EXPECT_TRUE(std::equal(J.values().begin(), J.values().end(), J2.values().begin()))
          << name << " " << space_name;
      // The form one point at a time (NonlinearForm::pointwise) is the same form.
      const NonlinearForm one = NonlinearForm::pointwise(
          [&form](const double* x, double uq, const double* g, int dim, double* av, double* dad,
                  double* dag) {
            double sv, dsd, dsg[3];
            form.integrand(1, dim, x, &uq, g, av, dad, dag, &sv, &dsd, dsg);
          },
          [&form](const double* x, double uq, const double* g, int dim, double* sv, double* dsd,
                  double* dsg) {
            double av[3], dad[3], dag[9];
            form.integrand(1, dim, x, &uq, g, av, dad, dag, sv, dsd, dsg);
          });
      std::vector<double> F3(n, 0.0);
      a.residual_into(one, u, F3);
      zero_dirichlet(s.bc.homogeneous(), F3);
      diff = scale = 0;
      for (std::size_t i = 0; i < n; ++i)
        diff = std::max(diff, std::abs(F3[i] - F[i])), scale = std::max(scale, std::abs(F[i]));
      EXPECT_LE(diff, 1e-14 * scale) << name << " " << space_name << " pointwise()";
    }
  }
}

TEST_F(Newton, FusedResidualAndJacobianChangeNothingButTheTime) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 24), "newton/fused");
  for (int lag : {1, 2}) {
    nt::Options o;
    o.lagging = nt::Lagging::fixed(lag);
    nt::Problem fused = nt::assembled_problem(s.assembler, bratu(5.0), s.bc, "newton/fused");
    nt::Problem separate = fused;
    separate.residual_and_jacobian = nullptr;
    std::vector<double> u1 = initial(s), u2 = initial(s);
    const auto r1 = nt::solve(fused, u1, o), r2 = nt::solve(separate, u2, o);
    ASSERT_TRUE(r1.converged && r2.converged) << "lag " << lag;
    EXPECT_EQ(r1.iterations, r2.iterations) << "lag " << lag;
    EXPECT_EQ(r1.jacobian_refreshes, r2.jacobian_refreshes) << "lag " << lag;
    EXPECT_EQ(u1, u2) << "lag " << lag;
  }
}

TEST_F(Newton, TimingsAndRecycledFactorizations) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 32), "newton/timings");
  auto& store = fem::store();
  std::vector<double> u = initial(s);
  const auto recycled = store.counter("solve.recycled");
  const auto r = nt::solve(nt::assembled_problem(s.assembler, bratu(3.0), s.bc, "newton/timings"), u);
  ASSERT_TRUE(r.converged);
  // Every refresh after the first factorizes into the previous iteration's factorization.
  EXPECT_EQ(store.counter("solve.recycled") - recycled, r.jacobian_refreshes - 1);
  EXPECT_EQ(r.symbolic_analyses, 1);
  const nt::Timings& t = r.timings;
  for (double x : {t.residual, t.jacobian, t.factorization, t.solve, t.other}) EXPECT_GE(x, 0.0);
  EXPECT_GT(t.jacobian, 0.0);  // full Newton: every residual is assembled with a Jacobian (fused)
  EXPECT_GT(t.factorization, 0.0);
  EXPECT_NEAR(t.residual + t.jacobian + t.factorization + t.solve + t.other, r.seconds,
              1e-6 + 1e-3 * r.seconds);
}

// F(x) = (x₀² + x₁² − 4, x₀ − x₁) from the user's own callbacks: root (√2, √2).
nt::Problem circle_problem(const std::string& name) {
  auto pattern = std::make_shared<const fem::CsrPattern>(2, 2, std::vector<fem::index_t>{0, 2, 4},
                                                         std::vector<fem::index_t>{0, 1, 0, 1});
  nt::Problem p;
  p.name = name;
  p.residual = [](std::span<const double> x, std::span<double> F) {
    F[0] = x[0] * x[0] + x[1] * x[1] - 4;
    F[1] = x[0] - x[1];
  };
  p.jacobian = [pattern](std::span<const double> x) {
    return fem::CsrMatrix(pattern, {2 * x[0], 2 * x[1], 1.0, -1.0});
  };
  return p;
}

TEST_F(Newton, UserCallbacksAndTheStoreKeys) {
  std::vector<double> x{1.0, 0.5};
  std::vector<nt::Iteration> seen;
  nt::Options o;
  o.monitor = [&](const nt::Iteration& it) { seen.push_back(it); };
  const auto r = nt::solve(circle_problem("newton/circle"), x, o);
  ASSERT_TRUE(r.converged);
  EXPECT_NEAR(x[0], std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(x[1], std::sqrt(2.0), 1e-12);
  EXPECT_EQ(seen.size(), r.history.size());
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(r.iterations + 1));
  // Names, not arrays: the Jacobian, the solution and the residual are store entries.
  auto& store = fem::store();
  EXPECT_TRUE(store.contains("newton/circle/J"));
  EXPECT_EQ(store.get<fem::Array<double>>("newton/circle/u")->vector()[0], x[0]);
  EXPECT_TRUE(store.contains("newton/circle/F"));
}

// Residual norms are scaled (fem/norm.hpp): a residual of 1e200 has a norm of 1e200, not inf
// (which would read as a NaN residual and stop Newton at its guess).
TEST_F(Newton, HugeResidualsHaveFiniteNorms) {
  auto pattern = std::make_shared<const fem::CsrPattern>(2, 2, std::vector<fem::index_t>{0, 1, 2},
                                                         std::vector<fem::index_t>{0, 1});
  nt::Problem p;
  p.name = "newton/huge";
  p.residual = [](std::span<const double> x, std::span<double> F) {
    F[0] = 2 * x[0] - 1e200;
    F[1] = x[1] - 3e200;
  };
  p.jacobian = [pattern](std::span<const double>) { return fem::CsrMatrix(pattern, {2.0, 1.0}); };
  std::vector<double> x{0.0, 0.0};
  const auto r = nt::solve(p, x);
  ASSERT_TRUE(r.converged) << static_cast<int>(r.reason);
  EXPECT_NEAR(r.initial_residual_norm / (std::hypot(1.0, 3.0) * 1e200), 1.0, 1e-15);
  EXPECT_NEAR(x[0] / 0.5e200, 1.0, 1e-15);
  EXPECT_NEAR(x[1] / 3e200, 1.0, 1e-15);
}

TEST_F(Newton, StopReasons) {
  {  // a singular Jacobian at the guess: the linear solve fails, u stays finite
    std::vector<double> x{0.0, 0.0};
    const auto r = nt::solve(circle_problem("newton/singular"), x);
    EXPECT_EQ(r.reason, nt::Reason::diverged_linear_solve);
    EXPECT_TRUE(all_finite(x));
  }
  {  // too few iterations
    std::vector<double> x{10.0, 0.5};
    nt::Options o;
    o.max_iterations = 2;
    const auto r = nt::solve(circle_problem("newton/maxit"), x, o);
    EXPECT_EQ(r.reason, nt::Reason::diverged_max_iterations);
    EXPECT_EQ(r.iterations, 2);
  }
  {  // step tolerance
    std::vector<double> x{3.0, 1.0};
    nt::Options o;
    o.atol = o.rtol = 0;
    o.stol = 1e-8;
    EXPECT_EQ(nt::solve(circle_problem("newton/stol"), x, o).reason, nt::Reason::converged_step);
  }
  {  // a NaN residual at the guess
    nt::Problem p = circle_problem("newton/nan");
    std::vector<double> x{std::nan(""), 1.0};
    EXPECT_EQ(nt::solve(p, x).reason, nt::Reason::diverged_nan);
  }
  {  // bad arguments are errors, not reasons
    nt::Problem p = circle_problem("");
    std::vector<double> x{1.0, 1.0};
    EXPECT_THROW(nt::solve(p, x), fem::InvalidArgument);
    nt::Options o;
    o.lagging.max_reuse = 0;
    EXPECT_THROW(nt::solve(circle_problem("newton/badlag"), x, o), fem::InvalidArgument);
    o.lagging = nt::Lagging::fixed(2, -1);
    EXPECT_THROW(nt::solve(circle_problem("newton/badanderson"), x, o), fem::InvalidArgument);
  }
}

// --- what a distributed problem changes: the solver and its layout (Problem::solver) ----------

double euclidean(std::span<const double> a, std::span<const double> b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// The same Newton decisions, bit for bit: reasons, iterations, refreshes, step lengths, and the
// norms of b `scale` times those of a.
void expect_same_run(const nt::Result& a, const nt::Result& b, const std::string& what, double scale = 1) {
  EXPECT_EQ(a.reason, b.reason) << what;
  EXPECT_EQ(a.iterations, b.iterations) << what;
  EXPECT_EQ(a.jacobian_refreshes, b.jacobian_refreshes) << what;
  EXPECT_EQ(a.linear_solves, b.linear_solves) << what;
  ASSERT_EQ(a.history.size(), b.history.size()) << what;
  for (std::size_t k = 0; k < a.history.size(); ++k) {
    EXPECT_EQ(scale * a.history[k].residual_norm, b.history[k].residual_norm) << what << ", iteration " << k;
    EXPECT_EQ(scale * a.history[k].step_norm, b.history[k].step_norm) << what << ", iteration " << k;
    EXPECT_EQ(a.history[k].step_length, b.history[k].step_length) << what << ", iteration " << k;
    EXPECT_EQ(a.history[k].jacobian_refreshed, b.history[k].jacobian_refreshed)
        << what << ", iteration " << k;
  }
}

// A layout of one process whose inner product the test chooses (what a distributed layout's
// is: a global reduction), counting its calls.
struct TestLayout final : fem::Layout {
  double weight = 1;
  mutable int calls = 0, cross = 0;  // cross: products of two different vectors (Anderson's)
  double dot(std::span<const double> a, std::span<const double> b) const override {
    ++calls;
    if (a.data() != b.data()) ++cross;
    return weight * euclidean(a, b);
  }
};

// A LinearSolver that wraps the serial solve kernel (what a distributed one does with PETSc),
// with another layout, counting its calls; its factorization or solve can be made to fail.
class WrappedSolver final : public fem::solve::LinearSolver {
 public:
  explicit WrappedSolver(const fem::Layout& layout = fem::Layout::serial())
      : LinearSolver(nt::Options{}.linear),
        inner_(fem::solve::make_solver(nt::Options{}.linear)),
        layout_(layout) {}
  const fem::Layout& layout() const noexcept override { return layout_; }
  int factorizations = 0, solves = 0;
  std::vector<std::string> keys;
  std::function<void()> before_factorize;                                    // may throw
  std::function<std::optional<fem::solve::SolveReport>()> instead_of_solve;  // a report replaces the solve

 protected:
  bool do_factorize(fem::Store& store, const std::string& key) override {
    ++factorizations;
    keys.push_back(key);
    if (before_factorize) before_factorize();
    inner_->factorize(store, key);
    return true;
  }
  fem::solve::SolveReport do_solve(std::span<const double> B, std::span<double> X, fem::index_t nrhs, bool,
                                   fem::Sums sums, bool) override {
    ++solves;
    if (instead_of_solve)
      if (auto r = instead_of_solve()) return *r;
    return inner_->solve(B, X, nrhs, sums);
  }

 private:
  std::unique_ptr<fem::solve::LinearSolver> inner_;
  const fem::Layout& layout_;
};

TEST_F(Newton, EuclideanDotHookChangesNothingBitForBit) {
  // Bratu: full Newton; chord steps with Anderson (the Gram products) and the step test (‖u‖);
  // from a guess far above the solution, the line search's backtracking, with full Newton and
  // with Anderson-accelerated lagging.
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 16), "newton/dot");
  struct Variant {
    const char* name;
    double lambda;
    double start;  // the guess's interior value
    nt::Lagging lagging;
    nt::LineSearch line_search;
    double stol;
  };
  for (const Variant& v :
       {Variant{"full Newton", 6.0, 0.0, {}, nt::LineSearch::none, 0.0},
        Variant{"chord + Anderson + stol", 6.0, 0.0, nt::Lagging::fixed(100, 4), nt::LineSearch::none, 1e-9},
        Variant{"full Newton + line search", 3.0, 3.0, {}, nt::LineSearch::backtracking, 0.0},
        Variant{"adaptive + line search", 3.0, 3.0, nt::Lagging::adaptive(), nt::LineSearch::backtracking,
                0.0}}) {
    const nt::Problem plain = nt::assembled_problem(s.assembler, bratu(v.lambda), s.bc, "newton/dot");
    EXPECT_FALSE(plain.solver);
    nt::Options o;
    o.lagging = v.lagging;
    o.line_search = v.line_search;
    o.stol = v.stol;
    o.rtol = 1e-12;
    o.atol = 0;
    TestLayout layout;
    nt::Problem hooked = plain;
    hooked.solver = std::make_shared<WrappedSolver>(layout);
    const int& calls = layout.calls;
    const int& cross = layout.cross;
    std::vector<double> u1(s.assembler->space().num_dofs(), v.start);
    set_dirichlet(s.bc, u1);
    std::vector<double> u2 = u1;
    const auto r1 = nt::solve(plain, u1, o);
    const auto r2 = nt::solve(hooked, u2, o);
    ASSERT_TRUE(r1.converged) << v.name << ": " << nt::to_string(r1.reason);
    expect_same_run(r1, r2, v.name);
    EXPECT_EQ(u1, u2) << v.name;
    // At least ‖F₀‖, then ‖F‖ and ‖δu‖ of every iteration.
    EXPECT_GE(calls, 1 + 2 * r2.iterations) << v.name;
    if (v.lagging.anderson > 0) {
      EXPECT_GT(cross, 0) << v.name << ": Anderson's products go through the layout";
    } else {
      EXPECT_EQ(cross, 0) << v.name;
    }
    if (v.stol > 0) {
      EXPECT_EQ(r2.reason, nt::Reason::converged_step) << v.name;
    }
    if (v.line_search == nt::LineSearch::backtracking) {
      double shortest = 1;
      for (const auto& it : r2.history)
        shortest = it.iteration > 0 ? std::min(shortest, it.step_length) : shortest;
      EXPECT_LT(shortest, 1.0) << v.name << ": the line search backtracked";
    }
  }
}

TEST_F(Newton, WeightedDotDoublesTheNormsAndMovesTheAtolStop) {
  // dot = 4·(Euclidean): every norm is exactly 2× (√(4s) = 2√s in binary floating point), and
  // every relative test (rtol, stol, Armijo, the lagging ratio, Anderson's least squares) is
  // unchanged, so the iterates are the same bit for bit and only the absolute test moves: with
  // atol the run stops where a Euclidean run with atol/2 stops.
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 16), "newton/dot4");
  const nt::Problem plain = nt::assembled_problem(s.assembler, bratu(3.0), s.bc, "newton/dot4");
  TestLayout four;
  four.weight = 4;
  nt::Problem weighted = plain;
  weighted.solver = std::make_shared<WrappedSolver>(four);
  auto run = [&](const nt::Problem& p, double atol, std::vector<double>& u) {
    nt::Options o;
    o.atol = atol;
    o.rtol = 0;
    u = initial(s);
    return nt::solve(p, u, o);
  };
  // The Euclidean residual norms r_k of the iterates, down to round-off.
  std::vector<double> u_ref;
  const auto ref = run(plain, 1e-13, u_ref);
  ASSERT_GE(ref.history.size(), 4u);
  // atol between r₂ and r₁: the Euclidean run stops at the first k with r_k ≤ atol, the weighted
  // one at the first k with 2 r_k ≤ atol.
  const double atol = 1.5 * ref.history[2].residual_norm;
  auto first_below = [&](double scale) {
    for (const auto& it : ref.history)
      if (scale * it.residual_norm <= atol) return it.iteration;
    return -1;
  };
  const int stop_euclidean = first_below(1.0), stop_weighted = first_below(2.0);
  ASSERT_EQ(stop_euclidean, 2);
  ASSERT_EQ(stop_weighted, 3) << "quadratic convergence: r₃ ≤ r₂ · 3/4";

  std::vector<double> u_e, u_w, u_half;
  const auto re = run(plain, atol, u_e);
  const auto rw = run(weighted, atol, u_w);
  EXPECT_EQ(re.reason, nt::Reason::converged_atol);
  EXPECT_EQ(rw.reason, nt::Reason::converged_atol);
  EXPECT_EQ(re.iterations, stop_euclidean);
  EXPECT_EQ(rw.iterations, stop_weighted);
  // The weighted run is the Euclidean one with atol/2, with its norms doubled.
  const auto rh = run(plain, atol / 2, u_half);
  expect_same_run(rh, rw, "atol", 2.0);
  EXPECT_EQ(u_w, u_half);
  EXPECT_EQ(rw.initial_residual_norm, 2 * rh.initial_residual_norm);
  EXPECT_EQ(rw.residual_norm, 2 * rh.residual_norm);
  // A relative tolerance (with Anderson-accelerated lagging and line search) takes the same
  // decisions under either product.
  {
    nt::Options o;
    o.atol = 0;
    o.rtol = 1e-9;
    o.lagging = nt::Lagging::adaptive();
    o.line_search = nt::LineSearch::backtracking;
    std::vector<double> u1 = initial(s), u2 = initial(s);
    const auto r1 = nt::solve(plain, u1, o), r2 = nt::solve(weighted, u2, o);
    EXPECT_EQ(r1.reason, nt::Reason::converged_rtol);
    expect_same_run(r1, r2, "rtol", 2.0);
    EXPECT_EQ(u1, u2);
  }
  // So does the step test ‖δu‖ ≤ stol·‖u‖, both norms doubled: with stol between the ratios
  // ‖δu_k‖/‖u_k‖ of iterations 1 and 2, both stop at 2 (had ‖u‖ been taken without the
  // product, the weighted run would not stop at 2).
  auto ratio = [&](int k) {
    nt::Options o;
    o.atol = o.rtol = 0;
    o.max_iterations = k;
    std::vector<double> u = initial(s);
    const auto r = nt::solve(plain, u, o);
    return r.history.at(k).step_norm / std::sqrt(euclidean(u, u));
  };
  const double stol = 1.5 * ratio(2);
  ASSERT_GT(ratio(1), stol);
  nt::Options o;
  o.atol = o.rtol = 0;
  o.stol = stol;
  std::vector<double> u1 = initial(s), u2 = initial(s);
  const auto r1 = nt::solve(plain, u1, o), r2 = nt::solve(weighted, u2, o);
  EXPECT_EQ(r1.reason, nt::Reason::converged_step);
  EXPECT_EQ(r1.iterations, 2);
  expect_same_run(r1, r2, "stol", 2.0);
  EXPECT_EQ(u1, u2);
}

TEST_F(Newton, AnyLinearSolverReproducesTheDefault) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 24), "newton/ls");
  const nt::Problem plain = nt::assembled_problem(s.assembler, bratu(5.0), s.bc, "newton/ls");
  for (const auto& [name, lagging] :
       {std::pair{"full Newton", nt::Lagging{}}, std::pair{"adaptive", nt::Lagging::adaptive()}}) {
    nt::Options o;
    o.lagging = lagging;
    nt::Problem hooked = plain;
    auto state = std::make_shared<WrappedSolver>();
    hooked.solver = state;
    std::vector<double> u1 = initial(s), u2 = initial(s);
    const auto r1 = nt::solve(plain, u1, o);
    const auto r2 = nt::solve(hooked, u2, o);
    ASSERT_TRUE(r1.converged && r2.converged) << name;
    EXPECT_EQ(r1.iterations, r2.iterations) << name;
    EXPECT_EQ(r1.jacobian_refreshes, r2.jacobian_refreshes) << name;
    double diff = 0;
    for (std::size_t i = 0; i < u1.size(); ++i) diff = std::max(diff, std::abs(u1[i] - u2[i]));
    EXPECT_LE(diff, 1e-12) << name;
    // Every refresh and every solve went through the solver, with the problem's Jacobian key.
    EXPECT_EQ(state->factorizations, r2.jacobian_refreshes) << name;
    EXPECT_EQ(state->solves, r2.linear_solves) << name;
    EXPECT_EQ(r2.linear_solves, r2.iterations) << name << ": one solve per iteration without retries";
    EXPECT_EQ(r1.linear_solves, r2.linear_solves) << name;
    for (const auto& key : state->keys) EXPECT_EQ(key, "newton/ls/J");
    if (lagging.max_reuse > 1) {
      EXPECT_LT(state->factorizations, r2.iterations) << name << ": the lagged Jacobian is reused";
    } else {
      EXPECT_EQ(state->factorizations, r2.iterations) << name;
    }
    // The solver's phases are timed.
    EXPECT_GT(r2.timings.factorization, 0.0) << name;
    EXPECT_GT(r2.timings.solve, 0.0) << name;
    EXPECT_LE(r2.symbolic_analyses, 1) << name;
  }
}

TEST_F(Newton, LinearSolverFailuresStopWithTheirReason) {
  const Case s = setup(fem::mesh::unit_square(CellType::tri3, 8), "newton/ls-fail");
  const nt::Problem plain = nt::assembled_problem(s.assembler, bratu(2.0), s.bc, "newton/ls-fail");
  {  // a factorization that fails: Newton stops before any step, naming it
    nt::Problem p = plain;
    auto solver = std::make_shared<WrappedSolver>();
    solver->before_factorize = [] { throw fem::NumericalError("MUMPS: INFOG(1) = -9"); };
    p.solver = solver;
    std::vector<double> u = initial(s);
    const std::vector<double> u0 = u;
    const auto r = nt::solve(p, u);
    EXPECT_EQ(r.reason, nt::Reason::diverged_linear_solve);
    EXPECT_FALSE(r.converged);
    EXPECT_EQ(r.iterations, 0);
    EXPECT_EQ(r.jacobian_refreshes, 0);
    EXPECT_EQ(solver->solves, 0);
    EXPECT_NE(r.message.find("MUMPS: INFOG(1) = -9"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("newton/ls-fail/J"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("factoriz"), std::string::npos) << r.message;
    EXPECT_EQ(u, u0);
  }
  {  // a solve that fails with a fresh Jacobian stops Newton too
    nt::Problem p = plain;
    auto solver = std::make_shared<WrappedSolver>();
    solver->instead_of_solve = [] {
      return std::optional(fem::solve::SolveReport{fem::solve::Status::inaccurate, "KSP diverged"});
    };
    p.solver = solver;
    std::vector<double> u = initial(s);
    const auto r = nt::solve(p, u);
    EXPECT_EQ(r.reason, nt::Reason::diverged_linear_solve);
    EXPECT_EQ(solver->factorizations, 1);
    EXPECT_EQ(r.linear_solves, 1);
    EXPECT_NE(r.message.find("KSP diverged"), std::string::npos) << r.message;
  }
  {  // a solve that fails with a reused Jacobian: refreshed and solved again
    nt::Problem p = plain;
    auto solver = std::make_shared<WrappedSolver>();
    bool failed_once = false;
    solver->instead_of_solve = [&]() -> std::optional<fem::solve::SolveReport> {
      if (solver->factorizations == 1 && solver->solves == 2 && !failed_once) {
        failed_once = true;
        return fem::solve::SolveReport{fem::solve::Status::inaccurate, "stale preconditioner"};
      }
      return std::nullopt;
    };
    p.solver = solver;
    nt::Options o;
    o.lagging = nt::Lagging::fixed(3);
    std::vector<double> u = initial(s);
    const auto r = nt::solve(p, u, o);
    EXPECT_TRUE(r.converged) << nt::to_string(r.reason) << ": " << r.message;
    EXPECT_TRUE(failed_once);
    EXPECT_TRUE(r.message.empty()) << r.message;
    EXPECT_EQ(solver->factorizations, r.jacobian_refreshes);
    EXPECT_EQ(r.linear_solves, r.iterations + 1);  // the failed one, counted
    ASSERT_GE(r.history.size(), 3u);
    EXPECT_TRUE(r.history[2].jacobian_refreshed) << "iteration 2 refreshed after the failed solve";
  }
  {  // the default path on a singular Jacobian: the solve kernel's reason comes through
    std::vector<double> x{0.0, 0.0};
    const auto r = nt::solve(circle_problem("newton/singular-message"), x);
    EXPECT_EQ(r.reason, nt::Reason::diverged_linear_solve);
    EXPECT_NE(r.message.find("newton/singular-message/J"), std::string::npos) << r.message;
    EXPECT_TRUE(all_finite(x));
  }
}

}  // namespace
