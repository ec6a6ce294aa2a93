// Bad input: singular matrices (naming the zero pivot where the backend reports it), NaN/Inf,
// non-square matrices, wrong right-hand-side sizes, an indefinite matrix given to Cholesky.
#include <fem/solve/solve.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "matrices.hpp"

namespace fem::solve {
namespace {

std::vector<Backend> backends() {
  std::vector<Backend> v{Backend::automatic, Backend::ldlt, Backend::lu};
  for (Backend b : {Backend::cholmod, Backend::umfpack, Backend::klu})
    if (available(b)) v.push_back(b);
  return v;
}

// The 2D Laplacian with row and column k zeroed (pattern kept): singular at k.
CsrMatrix singular_at(index_t k) {
  const CsrMatrix a = test::laplacian_2d(8);
  std::vector<double> v(a.values().begin(), a.values().end());
  for (index_t i = 0; i < a.rows(); ++i)
    for (index_t p = a.pattern().row_offsets()[i]; p < a.pattern().row_offsets()[i + 1]; ++p)
      if (i == k || a.pattern().col_indices()[p] == k) v[static_cast<std::size_t>(p)] = 0.0;
  return CsrMatrix(a.pattern_ptr(), std::move(v));
}

TEST(Errors, SingularMatrixIsAStatusNamingTheColumn) {
  const index_t k = 27;
  const CsrMatrix a = singular_at(k);
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    auto f = make_factorization(backend);
    Result r = f->compute(a);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.status == Status::singular || r.status == Status::not_positive_definite)
        << to_string(r.status) << ": " << r.reason;
    EXPECT_FALSE(r.reason.empty());
    if (r.column >= 0) {
      EXPECT_EQ(r.column, k) << r.reason;
    }
    if (r.row >= 0) {
      EXPECT_EQ(r.row, k) << r.reason;
    }
    // No silent NaN: solving reports the failure.
    const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
    std::vector<double> x(b.size());
    EXPECT_FALSE(f->solve(b, x));
    Store s;
    s.put("A", a);
    EXPECT_THROW(solve(s, "A", b, {.backend = backend}), NumericalError);
    EXPECT_FALSE(s.contains(factor_key("A", {.backend = backend})));
  }
}

TEST(Errors, NonFiniteEntriesAreNamed) {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    const CsrMatrix a = test::laplacian_2d(6);
    std::vector<double> v(a.values().begin(), a.values().end());
    const auto p = a.pattern().find(7, 8);
    v[static_cast<std::size_t>(p)] = bad;
    const CsrMatrix m(a.pattern_ptr(), std::move(v));
    for (Backend backend : backends()) {
      auto f = make_factorization(backend);
      Result r = f->compute(m);
      EXPECT_EQ(r.status, Status::non_finite_input) << to_string(backend);
      EXPECT_EQ(r.row, 7);
      EXPECT_EQ(r.column, 8);
      Store s;
      s.put("A", m);
      const auto b = test::random_vector(static_cast<std::size_t>(m.rows()));
      EXPECT_THROW(solve(s, "A", b, {.backend = backend}), NumericalError);
    }
  }
}

TEST(Errors, NonSquareAndSizeMismatch) {
  auto p = std::make_shared<const CsrPattern>(2, 3, std::vector<index_t>{0, 2, 3},
                                              std::vector<index_t>{0, 2, 1});
  const CsrMatrix rect(p, {1.0, 2.0, 3.0});
  const CsrMatrix a = test::laplacian_2d(5);
  for (Backend backend : backends()) {
    auto f = make_factorization(backend);
    EXPECT_THROW(f->compute(rect), DimensionMismatch);
    ASSERT_TRUE(f->compute(a));
    std::vector<double> b(24), x(25);
    EXPECT_THROW(f->solve(b, x), DimensionMismatch);
    Store s;
    s.put("R", rect);
    EXPECT_THROW(solve(s, "R", b, {.backend = backend}), DimensionMismatch);
    s.put("A", a);
    EXPECT_THROW(solve(s, "A", b, {.backend = backend}), DimensionMismatch);
  }
}

TEST(Errors, IndefiniteMatrixGivenToCholeskyExplicitly) {
  if (!available(Backend::cholmod)) GTEST_SKIP();
  const CsrMatrix a = test::laplacian_2d(10, -3.3);
  auto f = make_factorization(Backend::cholmod);
  Result r = f->compute(a);
  EXPECT_EQ(r.status, Status::not_positive_definite);
  EXPECT_GE(r.column, 0);
  EXPECT_NE(r.reason.find("positive definite"), std::string::npos);
  Store s;
  s.put("A", a);
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
  EXPECT_THROW(solve(s, "A", b, {.backend = Backend::cholmod}), NumericalError);
  // Automatic: Cholesky's own report sends it to LU, and the fallback is logged and counted.
  auto x = solve(s, "A", b);
  EXPECT_LT(test::relative_residual(a, x, b), 1e-10);
  EXPECT_EQ(s.counter("solve.fallbacks"), 1);
  EXPECT_FALSE(factorization(s, "A")->log().empty());
  EXPECT_EQ(factorization(s, "A")->backend(), Backend::umfpack);
}

TEST(Errors, UnsymmetricMatrixGivenToASymmetricBackend) {
  const CsrMatrix a = test::laplacian_2d(6, 0.0, 0.3);
  for (Backend backend : {Backend::cholmod, Backend::ldlt}) {
    if (!available(backend)) continue;
    auto f = make_factorization(backend);
    EXPECT_EQ(f->compute(a).status, Status::invalid_input);
  }
}

}  // namespace
}  // namespace fem::solve
