// Bad input: singular matrices (naming the zero pivot where the backend reports it), NaN/Inf,
// non-square matrices, wrong right-hand-side sizes, an indefinite matrix given to Cholesky, a
// factorization too large for the memory available (refused before the numeric work).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "../support/scoped_env.hpp"
#include "matrices.hpp"

namespace fem::solve {
namespace {

using test::backends;

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
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
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

// NaN or Inf in b is bad data, named as such: not a "singular matrix", not "incompatible" with
// a null space; the factorization stays usable.
TEST(Errors, NonFiniteRightHandSidesAreNamedNotCalledSingular) {
  const CsrMatrix a = test::laplacian_2d(6);
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}) {
    auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
    b[5] = bad;
    std::vector<double> x(b.size());
    for (Backend backend : backends()) {
      SCOPED_TRACE(std::string(to_string(backend)));
      auto f = make_factorization(backend);
      ASSERT_TRUE(f->compute(a));
      const SolveReport r = f->solve(b, x);
      EXPECT_EQ(r.status, Status::non_finite_input) << r.reason;
      EXPECT_NE(r.reason.find("right-hand side has entry 5 = "), std::string::npos) << r.reason;
      EXPECT_EQ(r.reason.find("singular"), std::string::npos) << r.reason;
      Store s;
      s.put("A", a);
      try {
        solve(s, "A", b, {.backend = backend});
        ADD_FAILURE() << "no error";
      } catch (const NumericalError& e) {
        EXPECT_NE(std::string(e.what()).find("non_finite_input"), std::string::npos) << e.what();
      }
      b[5] = 1.0;
      EXPECT_TRUE(f->solve(b, x));
      b[5] = bad;
    }
  }
  // A pure Neumann matrix (constant null space): the NaN is named before the compatibility check.
  std::vector<std::map<index_t, double>> rows(6);  // a path graph's Laplacian: rows sum to zero
  for (index_t i = 0; i + 1 < 6; ++i) {
    rows[static_cast<std::size_t>(i)][i] += 1, rows[static_cast<std::size_t>(i)][i + 1] -= 1;
    rows[static_cast<std::size_t>(i + 1)][i + 1] += 1, rows[static_cast<std::size_t>(i + 1)][i] -= 1;
  }
  const CsrMatrix neumann = test::from_entries(6, rows);
  Store s;
  s.put("N", neumann);
  std::vector<double> b(static_cast<std::size_t>(neumann.rows()), 0.0);
  b[3] = std::numeric_limits<double>::quiet_NaN();
  try {
    solve(s, "N", b);
    ADD_FAILURE() << "no error";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("entry 3 = nan"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("incompatible"), std::string::npos) << e.what();
  }
}

TEST(Errors, AnEmptyMatrixIsRefusedInWords) {
  auto p = std::make_shared<const CsrPattern>(0, 0, std::vector<index_t>{0}, std::vector<index_t>{});
  const CsrMatrix empty(p, {});
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    auto f = make_factorization(backend);
    try {
      f->compute(empty);
      ADD_FAILURE() << "no error";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("0 x 0"), std::string::npos) << e.what();
    }
    Store s;
    s.put("E", empty);
    EXPECT_THROW(solve(s, "E", std::vector<double>{}, {.backend = backend}), InvalidArgument);
  }
}

TEST(Errors, NonSquareAndSizeMismatch) {
  auto p =
      std::make_shared<const CsrPattern>(2, 3, std::vector<index_t>{0, 2, 3}, std::vector<index_t>{0, 2, 1});
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

using fem::testing::ScopedMemoryLimit;

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(Errors, TooLargeIsRefusedBeforeTheNumericFactorization) {
  const CsrMatrix a = test::laplacian_3d(20);  // 8000 unknowns: a factor of some 10 MB
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
  std::vector<double> x(b.size());
  for (Backend backend : backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    const std::int64_t live = live_factor_bytes();
    auto f = make_factorization(backend);
    Store s;
    s.put("A", a);
    std::string reason;
    {
      const ScopedMemoryLimit small("1M");
      const Result r = f->compute(a);
      reason = r.reason;
      EXPECT_EQ(r.status, Status::too_large) << r.reason;
      // The prediction against the memory available, and what to do.
      EXPECT_TRUE(contains(r.reason, "nonzeros")) << r.reason;
      EXPECT_TRUE(contains(r.reason, "predicted") || contains(r.reason, "estimated")) << r.reason;
      EXPECT_TRUE(contains(r.reason, "MiB, ")) << r.reason;  // the predicted bytes
      EXPECT_TRUE(contains(r.reason, "but 1.00 MiB of memory are available (FEM_MEMORY_LIMIT)")) << r.reason;
      EXPECT_TRUE(contains(r.reason, "too large for a direct solver on this machine")) << r.reason;
      // The solvers that can take it, by name (there are iterative and distributed ones).
      EXPECT_TRUE(contains(r.reason, "--solver gamg")) << r.reason;
      EXPECT_TRUE(contains(r.reason, "--solver hypre")) << r.reason;
      EXPECT_TRUE(contains(r.reason, "mpirun -np N fem")) << r.reason;
      EXPECT_TRUE(contains(r.reason, "backend gamg, hypre or mumps")) << r.reason;
      EXPECT_FALSE(contains(r.reason, "no iterative")) << r.reason;
      // Refused before any numeric work: analyzed once, nothing factorized, nothing allocated.
      EXPECT_EQ(f->counts().symbolic_analyses, 1);
      EXPECT_EQ(f->counts().factorizations, 0);
      EXPECT_FALSE(f->factorized());
      EXPECT_EQ(f->bytes(), 0u);
      EXPECT_EQ(live_factor_bytes(), live);
      const SolveReport solved = f->solve(b, x);
      EXPECT_EQ(solved.status, Status::too_large) << solved.reason;
      // The store path: a NumericalError with the same reason, no factor entry, no fallback to
      // another backend (it would only fail again, later).
      try {
        solve(s, "A", b, {.backend = backend});
        ADD_FAILURE() << "no error";
      } catch (const NumericalError& e) {
        EXPECT_TRUE(contains(e.what(), "(too_large)")) << e.what();
        EXPECT_TRUE(contains(e.what(), "but 1.00 MiB of memory are available")) << e.what();
      }
      EXPECT_FALSE(s.contains(factor_key("A", {.backend = backend})));
      EXPECT_EQ(s.counter("solve.fallbacks"), 0);
      EXPECT_EQ(s.counter("solve.factorizations"), 0);
      EXPECT_EQ(live_factor_bytes(), live);
    }
    {
      // The limit lifted (the machine's own memory): the same object and the same store
      // factorize, with the analyses made before.
      const ScopedMemoryLimit measured(nullptr);
      ASSERT_TRUE(f->factorize(a)) << f->status().reason;
      EXPECT_EQ(f->counts().factorizations, 1);
      EXPECT_TRUE(f->solve(b, x));
      EXPECT_LT(test::relative_residual(a, x, b), 1e-10);
      const auto y = solve(s, "A", b, {.backend = backend});
      EXPECT_LT(test::relative_residual(a, y, b), 1e-10);
      EXPECT_TRUE(s.contains(factor_key("A", {.backend = backend})));
      EXPECT_EQ(s.counter("solve.factorizations"), 1);
      if (backend != Backend::automatic) {
        EXPECT_EQ(f->counts().symbolic_analyses, 1);
        EXPECT_EQ(s.counter("solve.symbolic_analyses"), 1);
      }
    }
  }
}

TEST(Errors, TooLargeNamesTheBackendsPredictionOfTheFactor) {
  // The figures in the reason are the factor the backend then makes: its nonzeros within 15%
  // and its bytes within 25% (measured: within 10% and 15%).
  const CsrMatrix a = test::laplacian_3d(16);
  for (Backend backend : backends()) {
    if (backend == Backend::automatic) continue;
    SCOPED_TRACE(std::string(to_string(backend)));
    auto f = make_factorization(backend);
    std::string reason;
    {
      const ScopedMemoryLimit small("100K");
      const Result r = f->compute(a);
      ASSERT_EQ(r.status, Status::too_large) << r.reason;
      reason = r.reason;
    }
    const ScopedMemoryLimit measured(nullptr);
    ASSERT_TRUE(f->factorize(a));
    const auto at = reason.find("would hold ");
    ASSERT_NE(at, std::string::npos) << reason;
    const double predicted = std::stod(reason.substr(at + 11));
    const auto actual = static_cast<double>(f->factor_nonzeros());
    EXPECT_GE(predicted, 0.85 * actual) << reason << " vs " << actual;
    EXPECT_LE(predicted, 1.15 * actual) << reason << " vs " << actual;
    // "(12.3 MiB, predicted ..."
    const auto open = reason.find('(', at);
    ASSERT_NE(open, std::string::npos) << reason;
    const double mib = std::stod(reason.substr(open + 1));
    ASSERT_NE(reason.find(" MiB, ", open), std::string::npos) << reason;
    const double bytes = static_cast<double>(f->bytes()) / (1 << 20);
    EXPECT_GE(mib, 0.8 * bytes) << reason << " vs " << bytes << " MiB";
    EXPECT_LE(mib, 1.25 * bytes) << reason << " vs " << bytes << " MiB";
  }
}

TEST(Errors, MalformedMemoryLimitIsAnError) {
  const CsrMatrix a = test::laplacian_2d(6);
  const ScopedMemoryLimit bad("12 parsecs");
  auto f = make_factorization(Backend::lu);
  try {
    f->compute(a);
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "FEM_MEMORY_LIMIT")) << e.what();
    EXPECT_TRUE(contains(e.what(), "12 parsecs")) << e.what();
  }
}

// nnz(L) of P (A + Aᵀ) Pᵀ by brute force: eliminate node by node, joining neighbourhoods.
std::int64_t brute_force_cholesky_nonzeros(const CsrPattern& p, const std::vector<index_t>& order) {
  const auto n = static_cast<std::size_t>(p.rows());
  std::vector<index_t> pinv(n);
  for (std::size_t k = 0; k < n; ++k) pinv[static_cast<std::size_t>(order[k])] = static_cast<index_t>(k);
  std::vector<std::set<index_t>> later(n);  // later[k]: neighbours of k numbered after it
  for (index_t i = 0; i < p.rows(); ++i)
    for (index_t j : p.row(i)) {
      const index_t a = pinv[static_cast<std::size_t>(i)], b = pinv[static_cast<std::size_t>(j)];
      if (a != b) later[static_cast<std::size_t>(std::min(a, b))].insert(std::max(a, b));
    }
  std::int64_t total = 0;
  for (std::size_t k = 0; k < n; ++k) {
    total += 1 + static_cast<std::int64_t>(later[k].size());
    if (later[k].empty()) continue;
    const index_t first = *later[k].begin();
    for (index_t j : later[k])
      if (j != first) later[static_cast<std::size_t>(first)].insert(j);
  }
  return total;
}

TEST(Errors, FillPredictionFromTheEliminationTree) {
  // Exact against a brute-force symbolic elimination, for natural and shuffled orders, on a
  // symmetric pattern and on an unsymmetric one (which is symmetrized).
  std::mt19937 rng(7);
  std::vector<std::map<index_t, double>> rows(60);
  for (index_t i = 0; i < 60; ++i) {
    rows[static_cast<std::size_t>(i)][i] = 1.0;
    for (int e = 0; e < 2; ++e) rows[static_cast<std::size_t>(i)][static_cast<index_t>(rng() % 60)] = 1.0;
  }
  const CsrMatrix unsymmetric = test::from_entries(60, rows);
  for (const CsrMatrix& m : {test::laplacian_2d(9), test::laplacian_3d(5), unsymmetric}) {
    const CsrPattern& p = m.pattern();
    std::vector<index_t> order(static_cast<std::size_t>(p.rows()));
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<index_t>(k);
    for (int shuffle = 0; shuffle < 3; ++shuffle) {
      if (shuffle > 0) std::shuffle(order.begin(), order.end(), rng);
      EXPECT_EQ(
          detail::cholesky_nonzeros(p.rows(), p.row_offsets().data(), p.col_indices().data(), order.data()),
          brute_force_cholesky_nonzeros(p, order));
    }
    EXPECT_EQ(detail::cholesky_nonzeros(p.rows(), p.row_offsets().data(), p.col_indices().data(), nullptr),
              brute_force_cholesky_nonzeros(p, [&] {
                std::vector<index_t> identity(order.size());
                for (std::size_t k = 0; k < identity.size(); ++k) identity[k] = static_cast<index_t>(k);
                return identity;
              }()));
  }
  // And Eigen's LDLT makes exactly the factor predicted for its ordering.
  const CsrMatrix a = test::laplacian_3d(12);
  for (Ordering ordering : {Ordering::amd, Ordering::natural, Ordering::metis}) {
    if (!available(ordering)) continue;
    auto f = make_factorization(Backend::ldlt, {.ordering = ordering});
    std::string reason;
    {
      const ScopedMemoryLimit small("1K");
      reason = f->compute(a).reason;
    }
    const ScopedMemoryLimit measured(nullptr);
    ASSERT_TRUE(f->factorize(a));
    EXPECT_TRUE(contains(
        reason,
        fmt::format("hold {} nonzeros", detail::format_count(static_cast<double>(f->factor_nonzeros())))))
        << reason << " vs " << f->factor_nonzeros();
  }
}

}  // namespace
}  // namespace fem::solve
