// The LinearSolver contract on the serial implementation: one factorization per matrix version
// and the counters every implementation keeps, the residual checked on the first solve after a
// factorization (and on every one when asked), recycling of the previous factorization, errors.
#include <gtest/gtest.h>

#include <fem/solve/linear_solver.hpp>

#include "matrices.hpp"

namespace fem::solve::test {
namespace {

TEST(LinearSolver, OneFactorizationPerVersionAndTheCounterContract) {
  Store store;
  const CsrMatrix A = laplacian_2d(20);
  store.put("A", A);
  const auto solver = make_solver();
  solver->factorize(store, "A");
  const auto b = random_vector(static_cast<std::size_t>(A.rows()));
  std::vector<double> x(b.size());
  for (int k = 0; k < 10; ++k) ASSERT_TRUE(solver->solve(b, x).ok());
  EXPECT_LE(relative_residual(A, x, b), 1e-12);
  EXPECT_EQ(store.counter("solve.symbolic_analyses"), 1);
  EXPECT_EQ(store.counter("solve.factorizations"), 1);
  EXPECT_EQ(store.counter("solve.solves"), 10);
  EXPECT_EQ(store.counter("solve.cache_misses"), 1);  // the factorization made for the solver
  EXPECT_EQ(store.counter("solve.cache_hits"), 9);    // every solve but the first found it made
  const SolverReport& r = solver->report();
  EXPECT_EQ(r.backend, available(Backend::cholmod) ? Backend::cholmod : Backend::ldlt);
  EXPECT_FALSE(r.method.empty());
  EXPECT_GT(r.factor_nonzeros, A.pattern().nnz() / 2);
  EXPECT_EQ(r.factorizations, 1);
  EXPECT_EQ(r.solves, 10);
  EXPECT_GE(r.relative_residual, 0.0);
  EXPECT_LE(r.relative_residual, 1e-12);
  EXPECT_EQ(&solver->layout(), &Layout::serial());

  // A new version on the same pattern: numeric work only, into the previous factorization's
  // memory (the put dropped the store's entry; the solver held the last reference).
  store.put("A", new_values(A, 2.0));
  solver->factorize(store, "A");
  ASSERT_TRUE(solver->solve(b, x).ok());
  EXPECT_LE(relative_residual(new_values(A, 2.0), x, b), 1e-12);
  EXPECT_EQ(store.counter("solve.factorizations"), 2);
  EXPECT_EQ(store.counter("solve.symbolic_analyses"), 1);
  EXPECT_EQ(store.counter("solve.recycled"), 1);
  EXPECT_EQ(solver->report().factorizations, 2);

  // Another solver of the same version finds the factorization made: no work, a hit.
  const auto second = make_solver();
  second->factorize(store, "A");
  ASSERT_TRUE(second->solve(b, x).ok());
  EXPECT_EQ(store.counter("solve.factorizations"), 2);
  EXPECT_EQ(second->report().factorizations, 0);
  EXPECT_EQ(store.counter("solve.cache_hits"), 10);
}

TEST(LinearSolver, TheResidualIsCheckedOnTheFirstSolveAfterEachFactorization) {
  Store store;
  store.put("A", laplacian_2d(12));
  const auto b = random_vector(144);
  std::vector<double> x(b.size());
  const auto first = make_solver();
  first->factorize(store, "A");
  EXPECT_GE(first->solve(b, x).residual, 0.0);  // checked
  EXPECT_LT(first->solve(b, x).residual, 0.0);  // not measured again
  first->factorize(store, "A");                 // the same version (a stepper's lookup): checked once
  EXPECT_LT(first->solve(b, x).residual, 0.0);
  store.put("A", laplacian_2d(12, 1.0));  // a new version: checked again
  first->factorize(store, "A");
  EXPECT_GE(first->solve(b, x).residual, 0.0);
  EXPECT_LT(first->solve(b, x).residual, 0.0);
  const auto every = make_solver({.residual_check = ResidualCheck::every_solve});
  every->factorize(store, "A");
  for (int k = 0; k < 3; ++k) EXPECT_GE(every->solve(b, x).residual, 0.0) << k;
}

TEST(LinearSolver, TransposeAndBlockSolvesEqualTheFactorizationObjects) {
  Store store;
  const CsrMatrix A = laplacian_2d(10, 0.0, 0.3);  // unsymmetric: LU
  store.put("C", A);
  const auto solver = make_solver();
  solver->factorize(store, "C");
  const auto f = factorize(A);
  const std::size_t n = 100;
  const auto B = random_vector(3 * n, 5);
  std::vector<double> X(B.size()), Y(B.size()), x(n), y(n);
  ASSERT_TRUE(solver->solve(B, X, 3).ok());
  ASSERT_TRUE(f->solve(B, Y, 3).ok());
  for (std::size_t i = 0; i < X.size(); ++i) EXPECT_NEAR(X[i], Y[i], 1e-12) << i;
  ASSERT_TRUE(solver->solve_transpose(std::span(B).first(n), x).ok());
  ASSERT_TRUE(f->solve_transpose(std::span(B).first(n), y).ok());
  for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], y[i], 1e-12) << i;
  EXPECT_EQ(store.counter("solve.rhs"), 4);
}

TEST(LinearSolver, ErrorsNameTheKeyAndLeaveNoStaleFactorization) {
  Store store;
  store.put("A", laplacian_2d(6));
  const auto solver = make_solver();
  solver->factorize(store, "A");
  std::vector<double> b(36, 1.0), x(36);
  ASSERT_TRUE(solver->solve(b, x).ok());
  // A singular matrix under the key: the factorization fails, naming it; the solver then has no
  // factorization and refuses to solve with the old one.
  store.put("A", from_entries(2, {{{0, 1.0}, {1, 1.0}}, {{0, 1.0}, {1, 1.0}}}));
  try {
    solver->factorize(store, "A");
    FAIL() << "a singular matrix was factorized";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(solver->solve(b, x), InvalidArgument);
  EXPECT_THROW(make_solver({.backend = Backend::mumps}), InvalidArgument);  // fem::dist's
  // Sizes that do not fit are a programming error, not a report.
  store.put("A", laplacian_2d(6));
  solver->factorize(store, "A");
  std::vector<double> short_b(5);
  EXPECT_THROW(solver->solve(short_b, x), DimensionMismatch);
}

}  // namespace
}  // namespace fem::solve::test
