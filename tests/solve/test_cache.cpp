// The factorization cache: hits, staleness on a new version, symbolic reuse on new values,
// patterns as keys (never just sizes), eviction that frees memory, transpose and block solves,
// refinement, and concurrent solves on one cached factorization.
#include <gtest/gtest.h>

#include <fem/solve/solve.hpp>
#include <thread>

#include "matrices.hpp"

namespace fem::solve {
namespace {

using test::relative_residual;

TEST(Cache, HitMissAndCounters) {
  for (Backend backend : test::backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    const CsrMatrix a = test::laplacian_2d(20);
    s.put("A", a);
    const Options o{.backend = backend};
    const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
    auto x = solve(s, "A", b, o);
    EXPECT_LT(relative_residual(a, x, b), 1e-10);
    EXPECT_EQ(s.counter("solve.cache_misses"), 1);
    EXPECT_EQ(s.counter("solve.factorizations"), 1);
    EXPECT_EQ(s.counter("solve.symbolic_analyses"), 1);
    auto f1 = factorization(s, "A", o);
    x = solve(s, "A", b, o);
    EXPECT_EQ(s.counter("solve.cache_hits"), 2);
    EXPECT_EQ(s.counter("solve.factorizations"), 1);
    EXPECT_EQ(s.counter("solve.solves"), 2);
    EXPECT_EQ(factorization(s, "A", o), f1);
    EXPECT_TRUE(s.contains(factor_key("A", o)));
  }
}

TEST(Cache, NewVersionNeverGetsOldFactorsAndReusesTheAnalysis) {
  for (Backend backend : test::backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    const CsrMatrix a = test::laplacian_2d(20);
    s.put("A", a);
    const Options o{.backend = backend};
    const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
    auto f1 = factorization(s, "A", o);
    const CsrMatrix a2 = test::new_values(a, 3.0);  // same pattern object
    s.put("A", a2);
    EXPECT_FALSE(s.contains(factor_key("A", o)));  // dropped with the old version
    auto x = solve(s, "A", b, o);
    EXPECT_LT(relative_residual(a2, x, b), 1e-10);
    EXPECT_NE(factorization(s, "A", o), f1);
    EXPECT_EQ(s.counter("solve.factorizations"), 2);
    EXPECT_EQ(s.counter("solve.symbolic_analyses"), 1);  // refactorization: no symbolic work
    EXPECT_EQ(s.counter("solve.refactorizations"), 1);
    // A pattern rebuilt as a separate but equal object is recognised too.
    const CsrPattern& p = a.pattern();
    auto copy = std::make_shared<const CsrPattern>(
        p.rows(), p.cols(), std::vector<index_t>(p.row_offsets().begin(), p.row_offsets().end()),
        std::vector<index_t>(p.col_indices().begin(), p.col_indices().end()));
    s.put("A", CsrMatrix(copy, std::vector<double>(a.values().begin(), a.values().end())));
    x = solve(s, "A", b, o);
    EXPECT_LT(relative_residual(a, x, b), 1e-10);
    EXPECT_EQ(s.counter("solve.symbolic_analyses"), 1);
  }
}

TEST(Cache, EqualNnzDifferentPatternsNeverShareAnAnalysis) {
  // Two 2D Laplacians of equal size and nnz but different numbering (a transposed grid with
  // a different stencil orientation): the fingerprints differ and each gets its own analysis.
  Store s;
  const CsrMatrix a = test::laplacian_2d(16);
  const CsrMatrix c = test::laplacian_2d(16, 0.0, 0.3);  // same pattern, other values
  // A different pattern with the same nnz: a periodic shift of the unknowns' numbering.
  const index_t n = a.rows();
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    for (index_t p = a.pattern().row_offsets()[i]; p < a.pattern().row_offsets()[i + 1]; ++p)
      rows[static_cast<std::size_t>((i + 1) % n)][(a.pattern().col_indices()[p] + 1) % n] =
          a.values()[static_cast<std::size_t>(p)];
  const CsrMatrix shifted = test::from_entries(n, rows);
  ASSERT_EQ(shifted.nnz(), a.nnz());
  ASSERT_FALSE(shifted.pattern().same_structure(a.pattern()));
  (void)c;
  s.put("A", a);
  s.put("B", shifted);
  const auto b = test::random_vector(static_cast<std::size_t>(n));
  EXPECT_LT(relative_residual(a, solve(s, "A", b), b), 1e-10);
  EXPECT_LT(relative_residual(shifted, solve(s, "B", b), b), 1e-10);
  EXPECT_EQ(s.counter("solve.symbolic_analyses"), 2);
}

TEST(Cache, AForgedFingerprintMatchIsCaughtBySameStructure) {
  // Put B's analysis under the key of A's pattern: the cache must notice and re-analyze.
  Store s;
  const CsrMatrix a = test::laplacian_2d(12);
  const CsrMatrix other = test::laplacian_3d(5);
  s.put("A", a);
  s.put("O", other);
  const Options o{.backend = Backend::ldlt};
  const auto bo = test::random_vector(static_cast<std::size_t>(other.rows()));
  solve(s, "O", bo, o);
  auto sym = factorization(s, "O", o)->symbolic();
  const auto key = fmt::format("#symbolic/ldlt/amd/{:016x}", a.pattern().fingerprint());
  s.put<Symbolic>(key, sym, PutOptions().cache());
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
  EXPECT_LT(relative_residual(a, solve(s, "A", b, o), b), 1e-10);
  EXPECT_EQ(s.counter("solve.symbolic_collisions"), 1);
}

TEST(Cache, TransposeAndBlockSolvesUseOneFactorization) {
  for (Backend backend : test::backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    const CsrMatrix a = backend == Backend::cholmod || backend == Backend::ldlt
                            ? test::elasticity_2d(10)
                            : test::laplacian_2d(14, 0.0, 0.45);
    s.put("A", a);
    const Options o{.backend = backend};
    const auto n = static_cast<std::size_t>(a.rows());
    const auto b = test::random_vector(n, 5);
    auto xt = solve_transpose(s, "A", b, o);
    EXPECT_LT(relative_residual(a, xt, b, true), 1e-10);
    const index_t nrhs = 4;
    const auto B = test::random_vector(n * nrhs, 9);
    auto X = solve_block(s, "A", B, nrhs, o);
    for (index_t k = 0; k < nrhs; ++k) {
      std::span<const double> bk(B.data() + k * n, n);
      auto xk = solve(s, "A", bk, o);
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(X[k * n + i], xk[i], 1e-12 * (1 + std::abs(xk[i])));
    }
    auto XT = solve_transpose_block(s, "A", B, nrhs, o);
    EXPECT_LT(relative_residual(a, std::span(XT).first(n), std::span(B).first(n), true), 1e-10);
    EXPECT_EQ(s.counter("solve.factorizations"), 1);
  }
}

TEST(Cache, RefinementReportsTheResidual) {
  Store s;
  const CsrMatrix a = test::laplacian_2d(16, 0.0, 0.2);
  s.put("A", a);
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
  std::vector<double> x(b.size());
  SolveReport r = solve(s, "A", b, x, {.refinement_steps = 2});
  ASSERT_TRUE(r) << r.reason;
  EXPECT_GE(r.residual, 0.0);
  EXPECT_LT(r.residual, 1e-12);
  EXPECT_NEAR(r.residual, relative_residual(a, x, b), 1e-14);
  r = solve(s, "A", b, x, {.compute_residual = true});
  EXPECT_EQ(r.refinement_steps, 0);
  EXPECT_LT(r.residual, 1e-10);
}

TEST(Cache, EvictionUnderABudgetFreesTheFactorMemory) {
  for (Backend backend : test::backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    const CsrMatrix a = test::laplacian_2d(30), c = test::laplacian_2d(31);
    Store s;
    s.put("A", a);
    s.put("C", c);
    const std::int64_t before = live_factor_bytes();
    const Options o{.backend = backend};
    std::size_t fa_bytes = 0;
    {
      auto fa = factorization(s, "A", o);
      fa_bytes = fa->bytes();
      EXPECT_GE(live_factor_bytes() - before, static_cast<std::int64_t>(fa_bytes));
      EXPECT_EQ(s.info(factor_key("A", o)).bytes, fa_bytes);
    }
    // Room for the matrices and about one factorization: C's factor evicts A's.
    s.set_byte_budget(s.stats().bytes + fa_bytes / 2);
    auto fc = factorization(s, "C", o);
    EXPECT_FALSE(s.contains(factor_key("A", o)));
    EXPECT_TRUE(s.contains(factor_key("C", o)));
    EXPECT_GE(s.stats().evictions, 1u);
    // Only C's factor is alive now: A's memory went back (backend's own report).
    EXPECT_EQ(live_factor_bytes() - before, static_cast<std::int64_t>(fc->bytes()));
    s.clear();
    fc.reset();
    EXPECT_EQ(live_factor_bytes(), before);
  }
}

TEST(Cache, ConcurrentSolvesOnOneCachedFactorization) {
  for (Backend backend : test::backends()) {
    SCOPED_TRACE(std::string(to_string(backend)));
    Store s;
    const CsrMatrix a = backend == Backend::cholmod || backend == Backend::ldlt
                            ? test::laplacian_3d(10)
                            : test::laplacian_2d(30, 0.0, 0.3);
    s.put("A", a);
    const Options o{.backend = backend};
    const auto n = static_cast<std::size_t>(a.rows());
    factorization(s, "A", o);
    constexpr int threads = 6, rounds = 15;
    std::vector<double> worst(threads, 0.0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int r = 0; r < rounds; ++r) {
          const auto b = test::random_vector(n, static_cast<unsigned>(100 * t + r));
          auto x = (r % 3 == 2) ? solve_transpose(s, "A", b, o) : solve(s, "A", b, o);
          worst[static_cast<std::size_t>(t)] =
              std::max(worst[static_cast<std::size_t>(t)], relative_residual(a, x, b, r % 3 == 2));
        }
      });
    for (auto& th : pool) th.join();
    for (double w : worst) EXPECT_LT(w, 1e-10);
    EXPECT_EQ(s.counter("solve.factorizations"), 1);
    EXPECT_EQ(s.counter("solve.solves"), threads * rounds);
  }
}

TEST(Cache, ProcessStoreOverloads) {
  const CsrMatrix a = test::laplacian_2d(10);
  fem::store().put("solve_test/A", a);
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()));
  EXPECT_LT(relative_residual(a, solve("solve_test/A", b), b), 1e-10);
  EXPECT_LT(relative_residual(a, solve_transpose("solve_test/A", b), b, true), 1e-10);
  fem::store().erase("solve_test/A");
}

}  // namespace
}  // namespace fem::solve
