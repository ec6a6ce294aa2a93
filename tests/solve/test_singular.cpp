// Singular systems and the residual check: a matrix with a null space (declared, or the
// constants of a pure Neumann problem detected) is solved for compatible data with the one
// normalized solution, the same on every backend; incompatible data are refused with their
// defect; and a backend that "succeeds" on a singular or numerically singular matrix never
// hands back its result (every store solve checks ‖b − Ax‖/‖b‖).
#include <gtest/gtest.h>

#include <cmath>
#include <fem/solve/solve.hpp>
#include <limits>
#include <numeric>

#include "matrices.hpp"

namespace fem::solve {
namespace {

using test::backends;

// The graph Laplacian of an m × m grid with `components` decoupled copies interleaved (the
// 5-point stencil with natural boundary conditions): symmetric, rows summing to zero, null space
// the constants of each component.
CsrMatrix neumann_laplacian(index_t m, int components = 1) {
  const index_t n = m * m * components;
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t y = 0; y < m; ++y)
    for (index_t x = 0; x < m; ++x)
      for (int c = 0; c < components; ++c) {
        const index_t v = y * m + x, i = v * components + c;
        auto& r = rows[static_cast<std::size_t>(i)];
        auto couple = [&](index_t w) {
          r[w * components + c] -= 1.0;
          r[i] += 1.0;
        };
        if (x > 0) couple(v - 1);
        if (x + 1 < m) couple(v + 1);
        if (y > 0) couple(v - m);
        if (y + 1 < m) couple(v + m);
      }
  return test::from_entries(n, rows);
}

// Random data with every component's sum removed: compatible with the constants.
std::vector<double> compatible_data(std::size_t n, int components = 1, unsigned seed = 3) {
  auto b = test::random_vector(n, seed);
  for (int c = 0; c < components; ++c) {
    double mean = 0;
    for (std::size_t i = c; i < n; i += components) mean += b[i];
    mean /= static_cast<double>(n / components);
    for (std::size_t i = c; i < n; i += components) b[i] -= mean;
  }
  return b;
}

double sum(std::span<const double> v) { return std::accumulate(v.begin(), v.end(), 0.0); }

double max_abs(std::span<const double> v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

TEST(SingularSystems, PureNeumannConstantsAreDetectedAndSolvedWithZeroSumOnEveryBackend) {
  const CsrMatrix a = neumann_laplacian(12);
  const auto b = compatible_data(static_cast<std::size_t>(a.rows()));
  std::vector<double> first;
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    s.put("A", a);
    std::vector<double> x(b.size());
    const SolveReport r = solve(s, "A", b, x, {.backend = backend});
    ASSERT_TRUE(r) << r.reason;
    EXPECT_LT(r.residual, 1e-12);
    EXPECT_GE(r.compatibility_defect, 0.0);
    EXPECT_NEAR(sum(x), 0.0, 1e-12 * max_abs(x) * static_cast<double>(x.size()));
    EXPECT_LT(test::relative_residual(a, x, b), 1e-12);
    const auto f = factorization(s, "A", {.backend = backend});
    ASSERT_NE(f->null_space(), nullptr);
    EXPECT_EQ(f->null_space()->description(), "constant");
    EXPECT_EQ(f->pinned().size(), 1u);
    // The solution is unique once normalized: the same on every backend.
    if (first.empty()) first = x;
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], first[i], 1e-10 * max_abs(first)) << i;
    // Object API, transpose and block solves give it too.
    auto g = make_factorization(backend);
    ASSERT_TRUE(g->compute(a));
    std::vector<double> y(b.size());
    ASSERT_TRUE(g->solve_transpose(b, y));
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], first[i], 1e-10 * max_abs(first)) << i;
    std::vector<double> B(b);
    const auto b2 = compatible_data(b.size(), 1, 7);
    B.insert(B.end(), b2.begin(), b2.end());
    const auto X = solve_block(s, "A", B, 2, {.backend = backend});
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(X[i], first[i], 1e-10 * max_abs(first)) << i;
    EXPECT_NEAR(sum(std::span(X).subspan(b.size())), 0.0, 1e-12 * max_abs(X) * static_cast<double>(b.size()));
  }
}

TEST(SingularSystems, IncompatibleDataAreRefusedNamingTheDefect) {
  const CsrMatrix a = neumann_laplacian(10);
  auto b = compatible_data(static_cast<std::size_t>(a.rows()));
  b[17] += 1.0;  // a net source: no solution exists
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    s.put("A", a);
    std::vector<double> x(b.size());
    const SolveReport r = solve(s, "A", b, x, {.backend = backend});
    EXPECT_EQ(r.status, Status::incompatible) << r.reason;
    EXPECT_NE(r.reason.find("constant"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("defect"), std::string::npos) << r.reason;
    EXPECT_GT(r.compatibility_defect, 1e-3);
    EXPECT_THROW(solve(s, "A", b, {.backend = backend}), NumericalError);
    EXPECT_THROW(solve_transpose(s, "A", b, {.backend = backend}), NumericalError);
    auto f = make_factorization(backend);
    ASSERT_TRUE(f->compute(a));
    EXPECT_EQ(f->solve(b, x).status, Status::incompatible);
  }
}

TEST(SingularSystems, DataWithinTheToleranceLoseTheirComponentAlongTheNullSpace) {
  const CsrMatrix a = neumann_laplacian(10);
  const auto n = static_cast<std::size_t>(a.rows());
  const auto b0 = compatible_data(n);
  auto b = b0;
  for (double& v : b) v += 1e-9;  // a quadrature-sized defect: tolerated
  Store s;
  s.put("A", a);
  std::vector<double> x(n), x0(n);
  const SolveReport r = solve(s, "A", b, x);
  ASSERT_TRUE(r) << r.reason;
  EXPECT_GT(r.compatibility_defect, 0.0);
  EXPECT_LT(r.compatibility_defect, 1e-6);
  // A uniform shift of the data is exactly what make_compatible removes: the same solution.
  ASSERT_TRUE(solve(s, "A", b0, x0));
  for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], x0[i], 1e-12 * max_abs(x0));
  // A tolerance of 0 refuses it.
  EXPECT_EQ(solve(s, "A", b, x, {.compatibility_tolerance = 0.0}).status, Status::incompatible);
}

TEST(SingularSystems, DeclaredNullSpaceIsNormalizedByItsFunctionalsAndChecked) {
  // Two decoupled Laplacians: the constants of each component, which no row sum reveals.
  const int bs = 2;
  const CsrMatrix a0 = neumann_laplacian(9, bs);
  const auto n = static_cast<std::size_t>(a0.rows());
  std::vector<double> ex(n, 0.0), ey(n, 0.0), w(n, 0.0);
  for (std::size_t i = 0; i < n; i += bs) ex[i] = ey[i + 1] = 1.0;
  const auto found = find_null_space(a0, {ex, ey, test::random_vector(n)}, {"x", "y", "noise"});
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->dimension(), 2);
  EXPECT_EQ(found->description(), "x, y");
  // Functionals that weight the first node 10×: the normalization follows them, not the sum.
  std::vector<double> wx = ex, wy = ey;
  wx[0] = 10.0;
  wy[1] = 10.0;
  const auto ns = std::make_shared<const NullSpace>(a0.rows(), std::vector{ex, ey},
                                                    std::vector<std::string>{"x", "y"}, std::vector{wx, wy});
  const CsrMatrix a(a0.pattern_ptr(), std::vector<double>(a0.values().begin(), a0.values().end()), ns);
  const auto b = compatible_data(n, bs);
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    s.put("A", a);
    const auto x = solve(s, "A", b, {.backend = backend});
    double fx = 0, fy = 0;
    for (std::size_t i = 0; i < n; ++i) fx += wx[i] * x[i], fy += wy[i] * x[i];
    EXPECT_NEAR(fx, 0.0, 1e-11 * max_abs(x) * static_cast<double>(n));
    EXPECT_NEAR(fy, 0.0, 1e-11 * max_abs(x) * static_cast<double>(n));
    EXPECT_LT(test::relative_residual(a, x, b), 1e-12);
    EXPECT_EQ(factorization(s, "A", {.backend = backend})->pinned().size(), 2u);
  }
  // A declared vector that A does not annihilate is refused, named.
  std::vector<double> ramp(n);
  for (std::size_t i = 0; i < n; ++i) ramp[i] = static_cast<double>(i);
  const CsrMatrix wrong(a0.pattern_ptr(), std::vector<double>(a0.values().begin(), a0.values().end()),
                        std::make_shared<const NullSpace>(a0.rows(), std::vector<std::vector<double>>{ramp},
                                                          std::vector<std::string>{"ramp"}));
  auto f = make_factorization(Backend::lu);
  const Result r = f->compute(wrong);
  EXPECT_EQ(r.status, Status::invalid_input);
  EXPECT_NE(r.reason.find("ramp"), std::string::npos) << r.reason;
  // A null space of the wrong size does not even make a matrix.
  EXPECT_THROW(CsrMatrix(a0.pattern_ptr(), std::vector<double>(a0.values().begin(), a0.values().end()),
                         std::make_shared<const NullSpace>(3, std::vector<std::vector<double>>{{1, 1, 1}},
                                                           std::vector<std::string>{"c"})),
               InvalidArgument);
}

// Iterative refinement of a singular system corrects with the residual's compatible part: its
// rounding-sized component along the null space is no incompatibility.
TEST(SingularSystems, RefinementKeepsTheNullSpace) {
  const CsrMatrix a = neumann_laplacian(12);
  const auto b = compatible_data(static_cast<std::size_t>(a.rows()));
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    s.put("A", a);
    std::vector<double> x(b.size());
    const SolveReport r = solve(s, "A", b, x, {.backend = backend, .refinement_steps = 2});
    ASSERT_TRUE(r) << r.reason;
    EXPECT_LT(r.residual, 1e-13);
    EXPECT_NEAR(sum(x), 0.0, 1e-12 * max_abs(x) * static_cast<double>(x.size()));
  }
}

// A regular matrix that is badly scaled is not singular: a huge time step on an insulated body
// (M + dt K with dt = 1e8, rows summing to 1e-11 of their size) is solved as it is.
TEST(SingularSystems, BadlyScaledRegularMatricesHaveNoNullSpace) {
  const CsrMatrix k = neumann_laplacian(10);
  std::vector<double> v(k.values().begin(), k.values().end());
  for (index_t i = 0; i < k.rows(); ++i) {
    for (index_t p = k.pattern().row_offsets()[i]; p < k.pattern().row_offsets()[i + 1]; ++p)
      v[static_cast<std::size_t>(p)] *= 1e8;
    v[static_cast<std::size_t>(k.pattern().find(i, i))] += 0.01;  // the mass
  }
  const CsrMatrix heat(k.pattern_ptr(), std::move(v));
  EXPECT_EQ(
      find_null_space(heat, {std::vector<double>(static_cast<std::size_t>(heat.rows()), 1.0)}, {"constant"}),
      nullptr);
  const auto b = test::random_vector(static_cast<std::size_t>(heat.rows()));  // incompatible: fine here
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    s.put("A", heat);
    const auto x = solve(s, "A", b, {.backend = backend});
    EXPECT_EQ(factorization(s, "A", {.backend = backend})->null_space(), nullptr);
  }
}

TEST(SingularSystems, DependentVectorsAreNoNullSpace) {
  const std::vector<double> v{1, 2, 3}, w{2, 4, 6};
  EXPECT_THROW(NullSpace(3, {v, w}, {"v", "w"}), InvalidArgument);
  EXPECT_THROW(NullSpace(3, {v}, {"v"}, {{1, 1, -1}}), InvalidArgument);  // wᵀv = 0: cannot normalize v
  EXPECT_NO_THROW(NullSpace(3, {v}, {"v"}, {{1, 0, 0}}));
}

// A singular matrix that a backend may factorize (rounding leaves a tiny pivot) with data that
// have no solution, and a numerically singular indefinite matrix: no backend may return a result.
TEST(ResidualCheck, ABackendThatFactorizesASingularMatrixNeverHandsBackItsResult) {
  const CsrMatrix neumann = neumann_laplacian(10);
  // The 2D Dirichlet Laplacian shifted by its smallest eigenvalue: indefinite, numerically singular.
  const index_t m = 10;
  const double pi = std::acos(-1.0), h = pi / (m + 1);
  const double lambda = 4 - 4 * std::cos(h);
  const CsrMatrix shifted = test::laplacian_2d(m, -lambda);
  for (const CsrMatrix* a : {&neumann, &shifted}) {
    const auto b = test::random_vector(static_cast<std::size_t>(a->rows()), 11);
    for (Backend backend : backends()) {
      SCOPED_TRACE(std::string(to_string(backend)) + (a == &neumann ? " neumann" : " shifted"));
      Store s;
      s.put("A", *a);
      const Options o{.backend = backend, .detect_null_space = false};
      std::vector<double> x(b.size());
      SolveReport r;
      try {
        r = solve(s, "A", b, x, o);
      } catch (const NumericalError& e) {  // the factorization failed: fine
        continue;
      }
      EXPECT_FALSE(r) << "returned a result with relative residual " << r.residual;
      if (!r) {
        EXPECT_TRUE(r.status == Status::inaccurate || r.status == Status::singular) << r.reason;
        EXPECT_NE(r.reason.find(std::string(to_string(factorization(s, "A", o)->backend()))),
                  std::string::npos)
            << r.reason;
      }
      EXPECT_THROW(solve(s, "A", b, o), NumericalError);
      EXPECT_THROW(solve_transpose(s, "A", b, o), NumericalError);
      std::vector<double> B(b);
      B.insert(B.end(), b.begin(), b.end());
      EXPECT_THROW(solve_block(s, "A", B, 2, o), NumericalError);
    }
  }
}

// -div(k grad u) = 1 on a grid with k = 1 on the right half and k = contrast on the left, u = 0 on
// the left edge: regular, and the more ill-conditioned the smaller the contrast. Its relative
// residual exceeds 1e-6 from a contrast of about 1e-7 (rounding of a solution of 1/contrast), but
// the solve is backward stable and keeps its answer, with the residual reported.
CsrMatrix contrast_laplacian(index_t m, double contrast) {
  const index_t n = m * m;
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  auto k = [&](index_t x) { return x < m / 2 ? contrast : 1.0; };
  for (index_t y = 0; y < m; ++y)
    for (index_t x = 0; x < m; ++x) {
      const index_t i = y * m + x;
      auto& r = rows[static_cast<std::size_t>(i)];
      if (x == 0) {  // Dirichlet row, kept symmetric: its couplings are dropped
        r[i] = k(0);
        continue;
      }
      auto couple = [&](index_t j, double kij) {
        r[i] += kij;
        if (j % m != 0) r[j] -= kij;  // not a Dirichlet column
      };
      const double kx = k(x);
      couple(i - 1, 2 / (1 / kx + 1 / k(x - 1)));
      if (x + 1 < m) couple(i + 1, 2 / (1 / kx + 1 / k(x + 1)));
      if (y > 0) couple(i - m, kx);
      if (y + 1 < m) couple(i + m, kx);
    }
  return test::from_entries(n, rows);
}

TEST(ResidualCheck, IllConditionedButRegularSystemsKeepTheirAnswer) {
  for (double contrast : {1e-6, 1e-9, 1e-12}) {
    const CsrMatrix a = contrast_laplacian(24, contrast);
    std::vector<double> b(static_cast<std::size_t>(a.rows()), 1.0);
    for (index_t i = 0; i < a.rows(); i += 24) b[static_cast<std::size_t>(i)] = 0.0;  // u = 0 on the left
    for (Backend backend : backends()) {
      SCOPED_TRACE(std::string(to_string(backend)) + " contrast " + std::to_string(contrast));
      Store s;
      s.put("A", a);
      std::vector<double> x(b.size());
      const SolveReport r = solve(s, "A", b, x, {.backend = backend});
      ASSERT_TRUE(r) << r.reason;
      EXPECT_LT(r.backward_error, 1e-13);
      EXPECT_EQ(factorization(s, "A", {.backend = backend})->null_space(), nullptr);
      // The answer grows like 1/contrast in the soft half, as it must.
      EXPECT_GT(max_abs(x), 0.1 / contrast);
    }
  }
}

TEST(ResidualCheck, EveryStoreSolveReportsItsRelativeResidual) {
  const CsrMatrix a = test::laplacian_3d(8);
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    s.put("A", a);
    std::vector<double> x(b.size());
    const SolveReport r = solve(s, "A", b, x, {.backend = backend});
    ASSERT_TRUE(r) << r.reason;
    EXPECT_GE(r.residual, 0.0);
    EXPECT_LT(r.residual, 1e-12);
    EXPECT_NEAR(r.residual, test::relative_residual(a, x, b), 1e-13);
    EXPECT_GE(r.backward_error, 0.0);
    EXPECT_LT(r.backward_error, 1e-14);
    EXPECT_GT(r.amplification, 0.0);
    EXPECT_EQ(r.compatibility_defect, -1.0);  // no null space
    // Switched off, nothing is computed.
    const SolveReport off = solve(
        s, "A", b, x, {.backend = backend, .max_relative_residual = std::numeric_limits<double>::infinity()});
    ASSERT_TRUE(off);
    EXPECT_EQ(off.residual, -1.0);
  }
}

}  // namespace
}  // namespace fem::solve
