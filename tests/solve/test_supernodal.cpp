// Our supernodal substitutions (detail::SupernodalSolve) against CHOLMOD's own cholmod_solve2
// on the same factor, over shapes that stress them: a 1 × 1 matrix, a diagonal one (a
// supernode per column), a dense one (a single supernode), narrow random supernodes, wide 3D
// ones, blocks of every chunk width, and factors large enough for the parallel subtrees, whose
// result must not depend on the thread count or on concurrent solves.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <functional>
#include <random>
#include <thread>

#include "matrices.hpp"

namespace fem::solve {
namespace {

struct Shape {
  const char* name;
  std::function<CsrMatrix()> make;
};

CsrMatrix diagonal(index_t n) {
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    rows[static_cast<std::size_t>(i)][i] = 1.0 + 0.01 * static_cast<double>(i % 97);
  return test::from_entries(n, rows);
}

// M Mᵀ + n I with M random: dense, SPD, one supernode.
CsrMatrix dense(index_t n) {
  const auto m = test::random_vector(static_cast<std::size_t>(n * n), 7);
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = i == j ? static_cast<double>(n) : 0.0;
      for (index_t k = 0; k < n; ++k)
        s += m[static_cast<std::size_t>(i * n + k)] * m[static_cast<std::size_t>(j * n + k)];
      rows[static_cast<std::size_t>(i)][j] = s;
    }
  return test::from_entries(n, rows);
}

// A random sparse graph Laplacian plus the identity: irregular, mostly narrow supernodes.
CsrMatrix random_sparse(index_t n, int edges_per_row, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<index_t> pick(0, n - 1);
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    rows[static_cast<std::size_t>(i)][i] += 1.0;
    for (int e = 0; e < edges_per_row; ++e) {
      const index_t j = pick(g);
      if (j == i) continue;
      rows[static_cast<std::size_t>(i)][i] += 1.0;
      rows[static_cast<std::size_t>(j)][j] += 1.0;
      rows[static_cast<std::size_t>(i)][j] -= 1.0;
      rows[static_cast<std::size_t>(j)][i] -= 1.0;
    }
  }
  return test::from_entries(n, rows);
}

std::vector<Shape> shapes() {
  return {
      {"1x1", [] { return diagonal(1); }},
      {"diagonal", [] { return diagonal(500); }},
      {"dense", [] { return dense(90); }},
      {"random_narrow", [] { return random_sparse(3000, 2, 3); }},
      {"laplace2d", [] { return test::laplacian_2d(40); }},
      {"laplace3d_wide", [] { return test::laplacian_3d(18); }},
      {"elasticity2d", [] { return test::elasticity_2d(30); }},
  };
}

// ‖x − y‖∞ / ‖y‖∞.
double relative_difference(std::span<const double> x, std::span<const double> y) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, std::abs(x[i] - y[i]));
    m = std::max(m, std::abs(y[i]));
  }
  return m > 0 ? d / m : d;
}

class Supernodal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!available(Backend::cholmod)) GTEST_SKIP() << "cholmod not compiled";
  }
};

TEST_F(Supernodal, EqualsCholmodsOwnSolveOnEveryShapeAndBlockWidth) {
  for (const Shape& shape : shapes()) {
    SCOPED_TRACE(shape.name);
    const CsrMatrix a = shape.make();
    const auto f = factorize(a, {.backend = Backend::cholmod});
    ASSERT_TRUE(detail::supernodal_info(*f).ours);
    const detail::CholmodReference reference(*f, a);
    const auto n = static_cast<std::size_t>(a.rows());
    for (index_t nrhs : {1, 2, 3, 5, 16, 21, 37}) {
      SCOPED_TRACE(nrhs);
      const auto B = test::random_vector(n * static_cast<std::size_t>(nrhs), 11);
      std::vector<double> X(B.size()), R(B.size());
      ASSERT_TRUE(f->solve(B, X, nrhs));
      ASSERT_TRUE(reference.solve(B, R, nrhs));
      for (index_t k = 0; k < nrhs; ++k) {
        const auto col = std::span<const double>(X).subspan(static_cast<std::size_t>(k) * n, n);
        EXPECT_LE(
            relative_difference(col, std::span<const double>(R).subspan(static_cast<std::size_t>(k) * n, n)),
            1e-12);
        EXPECT_LT(test::relative_residual(
                      a, col, std::span<const double>(B).subspan(static_cast<std::size_t>(k) * n, n)),
                  1e-10);
      }
      // A block is its columns solved one by one (each chunk width runs the same arithmetic).
      std::vector<double> x(n);
      const index_t last = nrhs - 1;
      ASSERT_TRUE(f->solve(std::span<const double>(B).subspan(static_cast<std::size_t>(last) * n, n), x));
      EXPECT_LE(
          relative_difference(x, std::span<const double>(X).subspan(static_cast<std::size_t>(last) * n, n)),
          1e-14);
    }
  }
}

TEST_F(Supernodal, TransposeSolveIsThePlainSolve) {
  const CsrMatrix a = test::elasticity_2d(20);
  const auto f = factorize(a, {.backend = Backend::cholmod});
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()), 5);
  std::vector<double> x(b.size()), y(b.size());
  ASSERT_TRUE(f->solve(b, x));
  ASSERT_TRUE(f->solve_transpose(b, y));
  EXPECT_EQ(x, y);
}

// Large enough for independent subtrees: the same bits on 1, 2 and 4 threads, and from four
// threads solving at once.
TEST_F(Supernodal, ParallelSubtreesGiveTheSameBitsOnAnyThreadCount) {
  const CsrMatrix a = test::laplacian_2d(260);
  const auto f = factorize(a, {.backend = Backend::cholmod});
  const auto info = detail::supernodal_info(*f);
  ASSERT_TRUE(info.ours);
  ASSERT_GE(info.subtrees, 2) << "the factor (" << info.entries << " entries) should be solved in parallel";
  const auto n = static_cast<std::size_t>(a.rows());
  const int saved = omp_get_max_threads();
  std::vector<std::vector<double>> X;
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    for (index_t nrhs : {1, 4}) {
      const auto B = test::random_vector(n * static_cast<std::size_t>(nrhs), 13);
      std::vector<double> x(B.size()), r(B.size());
      ASSERT_TRUE(f->solve(B, x, nrhs));
      if (threads == 1) {
        ASSERT_TRUE(detail::CholmodReference(*f, a).solve(B, r, nrhs));
        EXPECT_LE(relative_difference(x, r), 1e-12);
        X.push_back(x);
      } else {
        EXPECT_EQ(x, X[nrhs == 1 ? 0 : 1]) << threads << " threads, " << nrhs << " right-hand sides";
      }
    }
  }
  omp_set_num_threads(saved);
  const auto b = test::random_vector(n, 13);
  std::vector<std::vector<double>> out(4, std::vector<double>(n));
  {
    std::vector<std::jthread> team;
    for (auto& x : out) team.emplace_back([&] { EXPECT_TRUE(f->solve(b, x)); });
  }
  for (const auto& x : out) EXPECT_EQ(x, X[0]);
}

// Refactorized values are solved with the new factor (the structure's plan is shared).
TEST_F(Supernodal, RefactorizationSolvesWithTheNewValues) {
  const CsrMatrix a = test::laplacian_3d(12);
  auto f = make_factorization(Backend::cholmod);
  ASSERT_TRUE(f->compute(a));
  const CsrMatrix a2 = test::new_values(a, 3.0);
  ASSERT_TRUE(f->factorize(a2));
  EXPECT_EQ(f->counts().refactorizations, 1);
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()), 2);
  std::vector<double> x(b.size()), r(b.size());
  ASSERT_TRUE(f->solve(b, x));
  ASSERT_TRUE(detail::CholmodReference(*f, a2).solve(b, r, 1));
  EXPECT_LE(relative_difference(x, r), 1e-12);
  EXPECT_LT(test::relative_residual(a2, x, b), 1e-12);
}

}  // namespace
}  // namespace fem::solve
