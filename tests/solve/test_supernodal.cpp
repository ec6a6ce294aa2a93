// Our supernodal substitutions (detail::SupernodalSolve) against CHOLMOD's own cholmod_solve2
// on the same factor, over shapes that stress them: a 1 × 1 matrix, a diagonal one (a
// supernode per column), a dense one (a single supernode), narrow random supernodes, wide 3D
// ones, nodes of every width 1..12 with and without rows below, blocks of every chunk width,
// and factors large enough for the parallel subtrees, whose result must not depend on the
// thread count or on concurrent solves. The packed layout is checked to be smaller than
// CHOLMOD's and to hold every nonzero, and refactorizations (failed ones too) to solve with
// their own values.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <functional>
#include <latch>
#include <numeric>
#include <random>
#include <thread>

#include "../support/parallel_paths.hpp"
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

// A symmetric matrix on the given off-diagonal pairs (i, j), i != j, with values in ±[0.1, 1]
// and a diagonal of 1 + the row's absolute sum: strictly diagonally dominant, so SPD, and no
// row sums to zero (no constant null space is detected and pinned).
CsrMatrix dominant(index_t n, const std::vector<std::pair<index_t, index_t>>& pairs, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> magnitude(0.1, 1.0);
  std::vector<std::map<index_t, double>> rows(static_cast<std::size_t>(n));
  for (auto [i, j] : pairs) {
    const double v = (g() % 2 ? 1.0 : -1.0) * magnitude(g);
    rows[static_cast<std::size_t>(i)][j] = v;
    rows[static_cast<std::size_t>(j)][i] = v;
  }
  for (index_t i = 0; i < n; ++i) {
    double sum = 1.0;
    for (auto [j, v] : rows[static_cast<std::size_t>(i)]) sum += std::abs(v);
    rows[static_cast<std::size_t>(i)][i] = sum;
  }
  return test::from_entries(n, rows);
}

// Dense diagonal blocks of the given sizes, one after the other; with separator > 0, a dense
// block of that many columns last, coupled to the first column of every other block (which
// fills the blocks' columns below with the separator's rows: trapezoids, not triangles).
CsrMatrix dense_blocks(const std::vector<index_t>& sizes, index_t separator) {
  std::vector<std::pair<index_t, index_t>> pairs;
  index_t first = 0;
  std::vector<index_t> firsts;
  for (index_t s : sizes) {
    for (index_t i = first; i < first + s; ++i)
      for (index_t j = first; j < i; ++j) pairs.emplace_back(i, j);
    firsts.push_back(first);
    first += s;
  }
  const index_t n = first + separator;
  for (index_t i = first; i < n; ++i) {
    for (index_t j = first; j < i; ++j) pairs.emplace_back(i, j);
    for (index_t f : firsts) pairs.emplace_back(i, f);
  }
  return dominant(n, pairs, 17);
}

// Entries within `bandwidth` of the diagonal (1: tridiagonal).
CsrMatrix banded(index_t n, index_t bandwidth) {
  std::vector<std::pair<index_t, index_t>> pairs;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = std::max<index_t>(0, i - bandwidth); j < i; ++j) pairs.emplace_back(i, j);
  return dominant(n, pairs, 19);
}

// A diagonal matrix with a dense last row and column.
CsrMatrix arrow(index_t n) {
  std::vector<std::pair<index_t, index_t>> pairs;
  for (index_t j = 0; j + 1 < n; ++j) pairs.emplace_back(n - 1, j);
  return dominant(n, pairs, 23);
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
    for (index_t nrhs : {1, 2, 3, 5, 13, 16, 21, 37}) {
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
  const fem::testing::ParallelPaths parallel;  // the threads asked for, however busy the machine
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

// The factor is really repacked: CHOLMOD's relaxed supernodes store whole dense blocks (their
// upper triangles and the zeros of merged columns); the solve's nodes are finer and keep lower
// trapezoids only, still every nonzero of L.
TEST_F(Supernodal, PackedFactorIsSmallerThanCholmodsButHoldsEveryNonzero) {
  const CsrMatrix a = test::laplacian_2d(60);
  const auto f = factorize(a, {.backend = Backend::cholmod});
  const auto info = detail::supernodal_info(*f);
  ASSERT_TRUE(info.ours);
  EXPECT_LT(info.entries, info.stored);
  EXPECT_GT(info.nodes, info.supernodes);
  EXPECT_GE(info.entries, static_cast<std::int64_t>(f->factor_nonzeros()));
  EXPECT_GT(info.row_indices, 0);
}

// Independent dense blocks of 1 to 12 columns in the natural order: nothing to relax or chain,
// so the nodes are exactly the blocks (every small kernel width 1..8, and 9..12 through the
// four-column steps and each remainder) and the packed factor is exactly L's lower triangle.
TEST_F(Supernodal, DenseBlocksOfOneToTwelveColumnsAreOneNodeEach) {
  std::vector<index_t> sizes(12);
  std::iota(sizes.begin(), sizes.end(), 1);
  const CsrMatrix a = dense_blocks(sizes, 0);
  const auto f = factorize(a, {.backend = Backend::cholmod, .ordering = Ordering::natural});
  const auto info = detail::supernodal_info(*f);
  ASSERT_TRUE(info.ours);
  EXPECT_EQ(info.supernodes, 12);
  EXPECT_EQ(info.nodes, 12);
  EXPECT_EQ(info.row_indices, 0);
  std::int64_t triangles = 0, squares = 0;
  for (index_t s : sizes) {
    triangles += s * (s + 1) / 2;
    squares += s * s;
  }
  EXPECT_EQ(info.entries, triangles);
  EXPECT_EQ(info.stored, squares);
  EXPECT_EQ(static_cast<std::int64_t>(f->factor_nonzeros()), triangles);
}

// Shapes whose nodes take every width, with and without rows below the diagonal block: dense
// blocks of 1..12 columns (alone, in a shuffled order, and as trapezoids over a separator),
// chains of single columns that CHOLMOD relaxes into wide supernodes with explicit zeros
// (tridiagonal, banded), and an arrow. Each equals CHOLMOD's solve of its own factor, in both
// orderings, for one right-hand side (the small kernels) and for chunks of 4 and 16.
TEST_F(Supernodal, EveryNodeWidthEqualsCholmodsOwnSolve) {
  std::vector<index_t> sizes(12);
  std::iota(sizes.begin(), sizes.end(), 1);
  const std::vector<index_t> shuffled{7, 1, 12, 3, 9, 5, 2, 11, 8, 4, 10, 6};
  const std::vector<Shape> cases{
      {"blocks_1_to_12", [&] { return dense_blocks(sizes, 0); }},
      {"blocks_shuffled", [&] { return dense_blocks(shuffled, 0); }},
      {"blocks_over_separator", [&] { return dense_blocks(sizes, 3); }},
      {"blocks_shuffled_over_separator", [&] { return dense_blocks(shuffled, 9); }},
      {"tridiagonal", [] { return banded(400, 1); }},
      {"banded_3", [] { return banded(300, 3); }},
      {"banded_7", [] { return banded(300, 7); }},
      {"banded_12", [] { return banded(200, 12); }},
      {"arrow", [] { return arrow(300); }},
  };
  for (const Shape& shape : cases) {
    const CsrMatrix a = shape.make();
    const auto n = static_cast<std::size_t>(a.rows());
    for (Ordering ordering : {Ordering::natural, Ordering::automatic}) {
      SCOPED_TRACE(std::string(shape.name) + ", " + std::string(to_string(ordering)));
      const auto f = factorize(a, {.backend = Backend::cholmod, .ordering = ordering});
      const auto info = detail::supernodal_info(*f);
      ASSERT_TRUE(info.ours);
      EXPECT_GE(info.entries, static_cast<std::int64_t>(f->factor_nonzeros()));
      EXPECT_LE(info.entries, info.stored);
      const detail::CholmodReference reference(*f, a);
      for (index_t nrhs : {1, 4, 16}) {
        SCOPED_TRACE(nrhs);
        const auto B = test::random_vector(n * static_cast<std::size_t>(nrhs), 29);
        std::vector<double> X(B.size()), R(B.size());
        ASSERT_TRUE(f->solve(B, X, nrhs));
        ASSERT_TRUE(reference.solve(B, R, nrhs));
        for (index_t k = 0; k < nrhs; ++k) {
          const auto at = static_cast<std::size_t>(k) * n;
          const auto x = std::span<const double>(X).subspan(at, n);
          EXPECT_LE(relative_difference(x, std::span<const double>(R).subspan(at, n)), 1e-12);
          EXPECT_LT(test::relative_residual(a, x, std::span<const double>(B).subspan(at, n)), 1e-12);
        }
      }
    }
  }
}

// A refactorization that fails over a packed factor (at the first pivot, or after a third of
// the columns were factorized over it) leaves no factor to solve with, and the next successful
// one solves with its own values only: nothing of the earlier packed factor survives.
TEST_F(Supernodal, FailedRefactorizationLeavesNothingBehind) {
  const CsrMatrix a = test::laplacian_2d(30);
  auto f = make_factorization(Backend::cholmod, {.ordering = Ordering::natural});
  ASSERT_TRUE(f->compute(a));
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()), 31);
  std::vector<double> x(b.size()), r(b.size());

  // Negated: the first pivot fails. Shifted by -0.05 (three eigenvalues of the 30 × 30
  // Laplacian are below 0.05, the smallest 0.0205): in the natural order the leading rows of
  // the grid stay positive definite, and the failure comes after a third of the columns
  // (at column 439 of 900).
  std::vector<double> negated(a.values().begin(), a.values().end());
  for (double& v : negated) v = -v;
  struct Failure {
    CsrMatrix matrix;
    index_t first_column, last_column;  // where the non-positive pivot must be
    double recovery_scale;              // the SPD values factorized after it
  };
  const Failure failures[] = {{CsrMatrix(a.pattern_ptr(), std::move(negated)), 0, 0, 2.5},
                              {test::laplacian_2d(30, -0.05), a.rows() / 3, a.rows() - 1, 4.0}};
  for (const Failure& bad : failures) {
    SCOPED_TRACE(bad.first_column);
    ASSERT_TRUE(detail::supernodal_info(*f).ours);  // the failure overwrites a packed factor
    const Result failed = f->factorize(bad.matrix);
    EXPECT_EQ(failed.status, Status::not_positive_definite) << failed.reason;
    EXPECT_GE(failed.column, bad.first_column);
    EXPECT_LE(failed.column, bad.last_column);
    EXPECT_FALSE(detail::supernodal_info(*f).ours);
    EXPECT_EQ(f->solve(b, x).status, Status::not_positive_definite);

    const CsrMatrix recovered = test::new_values(a, bad.recovery_scale);
    ASSERT_TRUE(f->factorize(recovered));
    ASSERT_TRUE(detail::supernodal_info(*f).ours);
    ASSERT_TRUE(f->solve(b, x));
    ASSERT_TRUE(detail::CholmodReference(*f, recovered).solve(b, r, 1));
    EXPECT_LE(relative_difference(x, r), 1e-12);
    EXPECT_LT(test::relative_residual(recovered, x, b), 1e-12);
  }
}

// A + k I for k = 1..5 on one factorization: every refactorization overwrites the packed factor
// of the previous one, and each solve is that of its own matrix.
TEST_F(Supernodal, EveryRefactorizationSolvesWithItsOwnValues) {
  const CsrMatrix a = test::elasticity_2d(16);
  const auto n = static_cast<std::size_t>(a.rows());
  auto f = make_factorization(Backend::cholmod);
  ASSERT_TRUE(f->compute(a));
  const auto B = test::random_vector(4 * n, 37);
  for (int k = 1; k <= 5; ++k) {
    SCOPED_TRACE(k);
    std::vector<double> values(a.values().begin(), a.values().end());
    for (index_t i = 0; i < a.rows(); ++i)
      values[static_cast<std::size_t>(a.pattern().find(i, i))] += static_cast<double>(k);
    const CsrMatrix ak(a.pattern_ptr(), std::move(values));
    ASSERT_TRUE(f->factorize(ak));
    EXPECT_EQ(f->counts().refactorizations, k);
    ASSERT_TRUE(detail::supernodal_info(*f).ours);  // else CHOLMOD would be compared with itself
    const detail::CholmodReference reference(*f, ak);
    for (index_t nrhs : {1, 4}) {
      SCOPED_TRACE(nrhs);
      const auto Bk = std::span<const double>(B).subspan(0, n * static_cast<std::size_t>(nrhs));
      std::vector<double> X(Bk.size()), R(Bk.size());
      ASSERT_TRUE(f->solve(Bk, X, nrhs));
      ASSERT_TRUE(reference.solve(Bk, R, nrhs));
      EXPECT_LE(relative_difference(X, R), 1e-12);
      for (index_t c = 0; c < nrhs; ++c)
        EXPECT_LT(test::relative_residual(
                      ak, std::span<const double>(X).subspan(static_cast<std::size_t>(c) * n, n),
                      Bk.subspan(static_cast<std::size_t>(c) * n, n)),
                  1e-12);
    }
  }
}

// Four threads solving blocks of 5 (a chunk of 4 and a single column) at once on one factor
// large enough for the parallel subtrees, each its own right-hand sides, several times: each
// gets the bits of its serial solve. The data differ and the threads start together, so a
// workspace or subtree buffer shared between solves would show.
// OpenMP may give a smaller team than asked (OMP_DYNAMIC, OMP_THREAD_LIMIT, no active levels
// left): every subtree must still be solved, by whichever threads there are. Once, subtrees
// dealt to missing threads were skipped and the solve reported success with a wrong answer.
TEST_F(Supernodal, ASmallerTeamThanAskedSolvesEverySubtree) {
  const fem::testing::ParallelPaths parallel;
  const CsrMatrix a = test::laplacian_2d(260);
  const auto f = factorize(a, {.backend = Backend::cholmod});
  ASSERT_GE(detail::supernodal_info(*f).subtrees, 2);
  const auto b = test::random_vector(static_cast<std::size_t>(a.rows()), 17);
  std::vector<double> x(b.size()), r(b.size());
  ASSERT_TRUE(detail::CholmodReference(*f, a).solve(b, r, 1));
  const int saved_threads = omp_get_max_threads(), saved_levels = omp_get_max_active_levels();
  omp_set_num_threads(4);
  omp_set_max_active_levels(0);  // every parallel region gets a team of one
  const auto report = f->solve(b, x);
  omp_set_max_active_levels(saved_levels);
  omp_set_num_threads(saved_threads);
  ASSERT_TRUE(report);
  EXPECT_LE(relative_difference(x, r), 1e-12);
}

TEST_F(Supernodal, ConcurrentBlockSolvesGiveTheSerialBits) {
  const fem::testing::ParallelPaths parallel;
  const CsrMatrix a = test::laplacian_2d(260);
  const auto f = factorize(a, {.backend = Backend::cholmod});
  const auto info = detail::supernodal_info(*f);
  ASSERT_TRUE(info.ours);
  ASSERT_GE(info.subtrees, 2);
  const auto n = static_cast<std::size_t>(a.rows());
  constexpr index_t nrhs = 5;
  constexpr int threads = 4, repeats = 3;
  std::vector<std::vector<double>> B, serial;
  for (int t = 0; t < threads; ++t) {
    B.push_back(test::random_vector(n * nrhs, 41 + static_cast<unsigned>(t)));
    serial.emplace_back(B.back().size());
    ASSERT_TRUE(f->solve(B.back(), serial.back(), nrhs));
  }
  std::vector<std::vector<std::vector<double>>> out(
      threads, std::vector<std::vector<double>>(repeats, std::vector<double>(n * nrhs)));
  std::latch start(threads);
  {
    std::vector<std::jthread> team;
    for (int t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        start.arrive_and_wait();
        for (auto& X : out[static_cast<std::size_t>(t)])
          EXPECT_TRUE(f->solve(B[static_cast<std::size_t>(t)], X, nrhs));
      });
  }
  for (int t = 0; t < threads; ++t)
    for (int k = 0; k < repeats; ++k)
      EXPECT_EQ(out[static_cast<std::size_t>(t)][static_cast<std::size_t>(k)],
                serial[static_cast<std::size_t>(t)])
          << "thread " << t << ", solve " << k;
}

}  // namespace
}  // namespace fem::solve
