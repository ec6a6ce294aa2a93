// One conformance suite that every backend passes: SPD, symmetric indefinite and unsymmetric
// matrices, through compute() and analyze/factorize/solve, refactorizing new values on the same
// pattern, transpose and block solves; plus the fill check of every backend/ordering pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <functional>

#include "matrices.hpp"

namespace fem::solve {
namespace {

using test::relative_residual;

struct Case {
  const char* name;
  std::function<CsrMatrix()> make;
  bool symmetric;
  bool definite;
};

std::vector<Case> cases() {
  return {
      {"laplace2d", [] { return test::laplacian_2d(24); }, true, true},
      {"laplace3d", [] { return test::laplacian_3d(10); }, true, true},
      {"elasticity2d", [] { return test::elasticity_2d(16); }, true, true},
      // Shift between eigenvalues of the 2D Laplacian (which lie in (0, 8)): indefinite.
      {"indefinite2d", [] { return test::laplacian_2d(20, -3.3); }, true, false},
      {"convection2d", [] { return test::laplacian_2d(24, 0.0, 0.4); }, false, false},
  };
}

bool supports(Backend b, const Case& c) {
  if (b == Backend::cholmod) return c.symmetric && c.definite;
  if (b == Backend::ldlt) return c.symmetric;
  return true;
}

class Conformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (!available(GetParam())) GTEST_SKIP() << to_string(GetParam()) << " not compiled";
  }
};

TEST_P(Conformance, ComputeSolvesEveryMatrixClass) {
  for (const Case& c : cases()) {
    if (!supports(GetParam(), c)) continue;
    SCOPED_TRACE(c.name);
    const CsrMatrix a = c.make();
    auto f = make_factorization(GetParam());
    ASSERT_TRUE(f->compute(a)) << f->status().reason;
    EXPECT_GT(f->factor_nonzeros(), 0u);
    EXPECT_GT(f->bytes(), 0u);
    const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
    std::vector<double> x(b.size());
    ASSERT_TRUE(f->solve(b, x));
    EXPECT_LT(relative_residual(a, x, b), 1e-10);
    ASSERT_TRUE(f->solve_transpose(b, x));
    EXPECT_LT(relative_residual(a, x, b, /*transpose=*/true), 1e-10);
  }
}

TEST_P(Conformance, PhasesAndRefactorizationOnTheSamePattern) {
  for (const Case& c : cases()) {
    if (!supports(GetParam(), c)) continue;
    SCOPED_TRACE(c.name);
    const CsrMatrix a = c.make();
    auto f = make_factorization(GetParam());
    ASSERT_TRUE(f->analyze(a.pattern_ptr()));
    ASSERT_TRUE(f->factorize(a)) << f->status().reason;
    const auto b = test::random_vector(static_cast<std::size_t>(a.rows()), 7);
    std::vector<double> x(b.size());
    ASSERT_TRUE(f->solve(b, x));
    EXPECT_LT(relative_residual(a, x, b), 1e-10);
    // New values, same pattern: no new symbolic analysis.
    const CsrMatrix a2 = test::new_values(a, 2.5);
    ASSERT_TRUE(f->factorize(a2)) << f->status().reason;
    EXPECT_EQ(f->counts().symbolic_analyses, 1);
    EXPECT_EQ(f->counts().factorizations, 2);
    EXPECT_EQ(f->counts().refactorizations, 2);
    ASSERT_TRUE(f->solve(b, x));
    EXPECT_LT(relative_residual(a2, x, b), 1e-10);
  }
}

TEST_P(Conformance, BlockSolveEqualsColumnByColumn) {
  const CsrMatrix a = test::elasticity_2d(12);
  auto f = make_factorization(GetParam());
  ASSERT_TRUE(f->compute(a)) << f->status().reason;
  const auto n = static_cast<std::size_t>(a.rows());
  const index_t nrhs = 5;
  const auto B = test::random_vector(n * nrhs, 3);
  std::vector<double> X(B.size()), x(n);
  for (bool transpose : {false, true}) {
    ASSERT_TRUE(transpose ? f->solve_transpose(B, X, nrhs) : f->solve(B, X, nrhs));
    for (index_t k = 0; k < nrhs; ++k) {
      std::span<const double> b(B.data() + k * n, n);
      ASSERT_TRUE(transpose ? f->solve_transpose(b, x) : f->solve(b, x));
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(X[k * n + i], x[i], 1e-12 * (1 + std::abs(x[i])));
    }
  }
}

TEST_P(Conformance, AgreesWithTheReferenceLu) {
  // Eigen's SparseLU with natural ordering is the oracle.
  const CsrMatrix a = test::laplacian_2d(12);
  auto ref = make_factorization(Backend::lu, {.ordering = Ordering::natural});
  ASSERT_TRUE(ref->compute(a));
  auto f = make_factorization(GetParam());
  ASSERT_TRUE(f->compute(a));
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()), 11);
  std::vector<double> x(b.size()), y(b.size());
  ASSERT_TRUE(ref->solve(b, y));
  ASSERT_TRUE(f->solve(b, x));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-10 * (1 + std::abs(y[i])));
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Values(Backend::automatic, Backend::cholmod, Backend::umfpack,
                                           Backend::klu, Backend::ldlt, Backend::lu),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// --- fill check ----------------------------------------------------------------------------

TEST(Fill, EveryBackendOrderingPairWithinTwiceTheBest) {
  // COLAMD orders AᵀA, a poorer model of fill for a symmetric pattern: on the 3D Laplacian it
  // gives about 2.3× the fill of AMD/METIS, intrinsically (measured), so it gets 3× there. The
  // trap this test is for (an inverted permutation) costs 10× or more.
  const CsrMatrix matrices[] = {test::laplacian_2d(60), test::laplacian_3d(16),
                                test::laplacian_2d(60, 0.0, 0.4)};
  for (const CsrMatrix& a : matrices) {
    for (Backend backend : {Backend::cholmod, Backend::umfpack, Backend::klu, Backend::ldlt, Backend::lu}) {
      if (!available(backend)) continue;
      std::vector<std::pair<Ordering, std::size_t>> fill;
      if ((backend == Backend::cholmod || backend == Backend::ldlt) && !is_symmetric(a)) continue;
      for (Ordering ordering : {Ordering::amd, Ordering::colamd, Ordering::metis}) {
        if (!available(ordering)) continue;
        if (backend == Backend::ldlt && ordering == Ordering::colamd) continue;
        auto f = make_factorization(backend, {.ordering = ordering});
        ASSERT_TRUE(f->compute(a)) << to_string(backend) << "/" << to_string(ordering);
        fill.emplace_back(ordering, f->factor_nonzeros());
      }
      std::size_t best = fill.front().second;
      for (auto [o, nz] : fill) best = std::min(best, nz);
      for (auto [o, nz] : fill)
        EXPECT_LE(nz, (o == Ordering::colamd ? 3 : 2) * best)
            << to_string(backend) << " with " << to_string(o) << ": " << nz
            << " factor nonzeros, best ordering " << best << " (n = " << a.rows() << ")";
    }
  }
}

TEST(Ordering, AutomaticChoiceFollowsSizeAndDimension) {
  // 3D problems of ten thousand unknowns get nested dissection, 2D ones of that size AMD.
  const CsrMatrix cube = test::laplacian_3d(22), square = test::laplacian_2d(110);
  const Ordering nd = available(Ordering::metis) ? Ordering::metis : Ordering::amd;
  EXPECT_EQ(detail::resolve_ordering(Backend::cholmod, Ordering::automatic, cube.pattern()), nd);
  EXPECT_EQ(detail::resolve_ordering(Backend::cholmod, Ordering::automatic, square.pattern()), Ordering::amd);
  EXPECT_EQ(detail::resolve_ordering(Backend::klu, Ordering::colamd, square.pattern()), Ordering::colamd);
  EXPECT_EQ(detail::resolve_ordering(Backend::umfpack, Ordering::automatic, test::laplacian_2d(10).pattern()),
            Ordering::amd);
}

}  // namespace
}  // namespace fem::solve
