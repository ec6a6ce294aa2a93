// fem::eigen: the unit square's Dirichlet Laplacian (π²(m² + n²), the double eigenvalues twice,
// λ₁'s convergence rate for P1 and P2, M-orthonormality); Sturm counts against the modes found
// and the count of those missing; the reuse of symbolic analyses and factorizations across
// shifts and repeated queries; no spurious eigenvalue from Dirichlet unknowns at any scale.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/eigen/eigen.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/reference_cell.hpp"
#include "fem/store.hpp"

namespace {

using fem::index_t;
using namespace fem::assembly;
constexpr double pi2 = std::numbers::pi * std::numbers::pi;

// The exact eigenvalues π²(m² + n²)/L² of the square of side L, ascending, with multiplicity.
std::vector<double> exact(int count, double L = 1.0) {
  std::vector<double> v;
  for (int m = 1; m <= 12; ++m)
    for (int n = 1; n <= 12; ++n) v.push_back(pi2 * (m * m + n * n) / (L * L));
  std::sort(v.begin(), v.end());
  v.resize(static_cast<std::size_t>(count));
  return v;
}

// K and M of the Laplacian on a square of side L published under <name>/K, <name>/M; the
// boundary's DOFs returned.
std::vector<index_t> laplacian(const std::string& name, int cells, int degree, double L = 1.0,
                               fem::CellType type = fem::CellType::tri3) {
  fem::Mesh mesh = fem::mesh::unit_square(type, cells);
  if (L != 1.0) {
    auto d = mesh.data();
    for (auto& x : d.coords) x *= L;
    mesh = fem::Mesh(std::move(d));
  }
  fem::store().put(name + "/mesh", std::move(mesh));
  const FunctionSpace V(name + "/mesh", degree);
  const Assembler a(V);
  fem::store().put(name + "/K", a.matrix(Diffusion{}));
  fem::store().put(name + "/M", a.matrix(Mass{}));
  return dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), nullptr}}).dofs;
}

class Eigen : public ::testing::Test {
 protected:
  void SetUp() override {
    fem::store().clear();
    fem::store().reset_stats();
  }
};

TEST_F(Eigen, DirichletLaplacianOfTheSquareWithItsDoubleEigenvalues) {
  // Q1 on squares: the mesh is symmetric under x <-> y, so the discrete eigenvalues are double
  // exactly where the continuous ones are.
  fem::eigen::Options o;
  o.constrained = laplacian("sq", 40, 1, 1.0, fem::CellType::quad4);
  o.count = 10;
  const auto r = fem::eigen::solve("sq/K", "sq/M", o);
  ASSERT_EQ(r.modes(), 10) << r.method;
  EXPECT_TRUE(r.converged);
  EXPECT_NE(r.method.find("Lanczos"), std::string::npos);
  const auto want = exact(10);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(r.eigenvalues[i], want[i], 0.01 * want[i]) << i;
  // π²·5, π²·10, π²·13, π²·17: each twice ((m, n) and (n, m)), as two M-orthonormal vectors.
  for (int i : {1, 4, 6, 8})
    EXPECT_NEAR(r.eigenvalues[i], r.eigenvalues[i + 1], 1e-9 * r.eigenvalues[i]) << i;
  EXPECT_LT(r.orthogonality_max, 1e-10);
  EXPECT_LT(r.residual_max, 1e-8);
  // Zero at every constrained unknown.
  for (index_t d : o.constrained) EXPECT_EQ(r.vector(1)[static_cast<std::size_t>(d)], 0.0);
}

// diag(A, A): every eigenvalue exactly double, with eigenvectors that a single Krylov sequence
// cannot separate (it sees one combination per eigenvalue): the Sturm counts find the copies
// Lanczos missed, and the deflated restarts compute them.
fem::CsrMatrix twice(const fem::CsrMatrix& A) {
  const index_t n = A.rows();
  std::vector<index_t> offsets{0}, cols;
  std::vector<double> values;
  for (int copy = 0; copy < 2; ++copy)
    for (index_t r = 0; r < n; ++r) {
      for (index_t k = A.pattern().row_offsets()[r]; k < A.pattern().row_offsets()[r + 1]; ++k) {
        cols.push_back(A.pattern().col_indices()[k] + copy * n);
        values.push_back(A.values()[static_cast<std::size_t>(k)]);
      }
      offsets.push_back(static_cast<index_t>(cols.size()));
    }
  return fem::CsrMatrix(std::make_shared<const fem::CsrPattern>(2 * n, 2 * n, offsets, cols), values);
}

TEST_F(Eigen, ExactlyMultipleEigenvaluesComeBackAsManyTimesAsTheirMultiplicity) {
  const auto fixed = laplacian("one", 20, 1);
  fem::eigen::Options o;
  const index_t n = fem::store().get<fem::CsrMatrix>("one/K")->rows();
  for (int copy = 0; copy < 2; ++copy)
    for (index_t d : fixed) o.constrained.push_back(d + copy * n);
  fem::store().put("twin/K", twice(*fem::store().get<fem::CsrMatrix>("one/K")));
  fem::store().put("twin/M", twice(*fem::store().get<fem::CsrMatrix>("one/M")));
  o.count = 6;
  // A start vector equal on both copies, factorized in the natural order (the two blocks
  // eliminated by the same operations): the Krylov space stays in the symmetric half.
  o.start.resize(static_cast<std::size_t>(2 * n));
  for (index_t i = 0; i < n; ++i) o.start[i] = o.start[i + n] = std::sin(0.37 * i) + 1.1;
  o.linear.ordering = fem::solve::Ordering::natural;
  o.linear.backend = fem::solve::Backend::ldlt;
  const auto r = fem::eigen::solve("twin/K", "twin/M", o);
  EXPECT_GE(r.restarts, 1) << "the symmetric start finds one copy of each";
  ASSERT_EQ(r.modes(), 6) << (r.log.empty() ? "" : r.log.front());
  EXPECT_EQ(r.missing, 0);
  for (int i : {0, 2, 4}) EXPECT_NEAR(r.eigenvalues[i], r.eigenvalues[i + 1], 1e-9 * r.eigenvalues[i]) << i;
  EXPECT_LT(r.eigenvalues[1], r.eigenvalues[2]);
  EXPECT_LT(r.orthogonality_max, 1e-10);
  EXPECT_LT(r.residual_max, 1e-8);
}

TEST_F(Eigen, LambdaOneConvergesAtTheTheoreticalRate) {
  // λ_h − λ = O(h^{2p}) for Lagrange P_p on a smooth eigenfunction.
  for (int degree : {1, 2}) {
    std::vector<double> err;
    for (int cells : {8, 16, 32}) {
      fem::eigen::Options o;
      const std::string name = "rate/" + std::to_string(degree) + "/" + std::to_string(cells);
      o.constrained = laplacian(name, cells, degree);
      o.count = 1;
      const auto r = fem::eigen::solve(name + "/K", name + "/M", o);
      ASSERT_EQ(r.modes(), 1);
      err.push_back(r.eigenvalues[0] - 2 * pi2);
      EXPECT_GT(err.back(), 0) << "conforming: from above";
    }
    for (std::size_t i = 1; i < err.size(); ++i)
      EXPECT_NEAR(std::log2(err[i - 1] / err[i]), 2.0 * degree, 0.2) << "P" << degree;
  }
}

TEST_F(Eigen, SturmCountsEqualTheModesFoundInAnIntervalAndSayHowManyAreMissing) {
  const auto fixed = laplacian("st", 24, 1);
  fem::eigen::Options o;
  o.constrained = fixed;
  o.which = fem::eigen::Which::interval;
  o.lower = 40;   // between π²·2 and π²·5
  o.upper = 140;  // past π²·13: 5, 5, 8, 10, 10, 13, 13 (·π²)
  o.count = 20;
  const auto r = fem::eigen::solve("st/K", "st/M", o);
  EXPECT_EQ(r.sturm_count, 7);
  EXPECT_EQ(r.modes(), 7);
  EXPECT_EQ(r.missing, 0);
  for (double l : r.eigenvalues) EXPECT_TRUE(l >= 40 && l <= 140) << l;
  EXPECT_EQ(fem::eigen::count_below(fem::store(), "st/K", "st/M", 140, o) -
                fem::eigen::count_below(fem::store(), "st/K", "st/M", 40, o),
            7);
  // An interval without eigenvalues: none, and nothing factorized for an operator.
  fem::eigen::Options empty = o;
  empty.lower = 22;
  empty.upper = 40;  // between π²·2 and π²·5
  const auto none = fem::eigen::solve("st/K", "st/M", empty);
  EXPECT_EQ(none.modes(), 0);
  EXPECT_EQ(none.sturm_count, 0);
  EXPECT_EQ(none.operator_applications, 0);
  // Asked for too few: the count says how many are missing.
  o.count = 4;
  const auto few = fem::eigen::solve("st/K", "st/M", o);
  EXPECT_EQ(few.modes(), 4);
  EXPECT_EQ(few.sturm_count, 7);
  EXPECT_EQ(few.missing, 3);
  EXPECT_FALSE(few.log.empty());
}

TEST_F(Eigen, OneSymbolicAnalysisForEveryShiftAndNoFactorizationForARepeatedQuery) {
  fem::eigen::Options o;
  o.constrained = laplacian("re", 32, 1);
  o.which = fem::eigen::Which::nearest;
  o.count = 4;
  o.verify = false;
  auto& s = fem::store();
  const auto symbolic0 = s.counter("solve.symbolic_analyses");
  const auto factor0 = s.counter("solve.factorizations");
  for (double shift : {60.0, 120.0, 200.0}) {
    o.shift = shift;
    const auto r = fem::eigen::solve("re/K", "re/M", o);
    ASSERT_EQ(r.modes(), 4);
    // The nearest to the shift, and the Sturm count below it.
    EXPECT_GE(r.sturm_count, 1);
  }
  // One analysis per backend (the operator's LU and the Sturm counts' LDLᵀ) for three shifts.
  EXPECT_LE(s.counter("solve.symbolic_analyses") - symbolic0, 2);
  const auto factorizations = s.counter("solve.factorizations") - factor0;
  EXPECT_GE(factorizations, 3);
  o.shift = 120.0;
  const auto again = fem::eigen::solve("re/K", "re/M", o);
  EXPECT_EQ(s.counter("solve.factorizations") - factor0, factorizations)
      << "a repeated query factorizes nothing";
  EXPECT_EQ(again.modes(), 4);
}

TEST_F(Eigen, NoSpuriousEigenvalueFromDirichletUnknownsAtAnyScale) {
  // A square of side L: λ₁ = 2π²/L². An identity row would give the eigenvalue 1 (or the ratio
  // of its diagonals); at L = 4.44 that lies among the wanted ones.
  for (double L : {0.01, 1.0, 4.44, 100.0}) {
    const std::string name = "scale/" + std::to_string(L);
    fem::eigen::Options o;
    o.constrained = laplacian(name, 16, 1, L);
    o.count = 6;
    const auto r = fem::eigen::solve(name + "/K", name + "/M", o);
    const auto want = exact(6, L);
    ASSERT_EQ(r.modes(), 6);
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR(r.eigenvalues[i], want[i], 0.05 * want[i]) << "L = " << L << ", " << i;
    // The range around 1 holds exactly what the Sturm count says, never an extra 1.
    fem::eigen::Options range = o;
    range.which = fem::eigen::Which::interval;
    range.lower = 0.5;
    range.upper = 2.0;
    range.count = 50;
    const auto near_one = fem::eigen::solve(name + "/K", name + "/M", range);
    EXPECT_EQ(near_one.modes(), near_one.sturm_count) << "L = " << L;
    for (double l : near_one.eigenvalues) EXPECT_GT(std::abs(l - 1.0), 1e-6) << "L = " << L;
  }
}

TEST_F(Eigen, APureNeumannProblemReportsItsConstantModeAsZero) {
  laplacian("free", 16, 1);
  fem::eigen::Options o;
  o.count = 3;
  const auto r = fem::eigen::solve("free/K", "free/M", o);
  ASSERT_EQ(r.modes(), 3);
  EXPECT_NEAR(r.eigenvalues[0], 0.0, 1e-8);
  EXPECT_NEAR(r.eigenvalues[1], pi2, 0.02 * pi2);  // cos(πx), cos(πy): twice
  EXPECT_NEAR(r.eigenvalues[2], pi2, 0.02 * pi2);
}

TEST_F(Eigen, SmallProblemsAreSolvedDenselyWithTheSameContract) {
  fem::eigen::Options o;
  o.constrained = laplacian("tiny", 6, 1, 1.0, fem::CellType::quad4);
  o.count = 3;
  const auto r = fem::eigen::solve("tiny/K", "tiny/M", o);
  EXPECT_NE(r.method.find("dense"), std::string::npos);
  ASSERT_EQ(r.modes(), 3);
  EXPECT_LT(r.orthogonality_max, 1e-10);
  EXPECT_NEAR(r.eigenvalues[1], r.eigenvalues[2], 1e-10 * r.eigenvalues[1]);
}

// The supernodal LDLᵀ's inertia (solve::inertia) against the dense eigenvalues: the number
// below each shift, on a scalar P2 problem and on 3D elasticity (large supernodes).
TEST_F(Eigen, SturmCountsMatchTheDenseSpectrum) {
  struct Problem {
    std::string name;
    std::vector<index_t> fixed;
  };
  std::vector<Problem> problems;
  problems.push_back({"p2", laplacian("p2", 8, 2)});
  {
    fem::store().put("e3/mesh", fem::mesh::unit_cube(fem::CellType::tet4, 4));
    const FunctionSpace V("e3/mesh", 1, 3);
    const Assembler a(V);
    fem::store().put("e3/K", a.matrix(Elasticity{100.0, 0.3}));
    fem::store().put("e3/M", a.matrix(Mass{1.0}));
    const int left = fem::store().get<fem::Mesh>("e3/mesh")->resolve_tag("left", 2);
    problems.push_back({"e3", dirichlet_values(V, std::vector<Dirichlet>{{FacetSet{left}, nullptr}}).dofs});
  }
  for (const auto& pr : problems) {
    fem::eigen::Options all;
    all.constrained = pr.fixed;
    all.count = 100000;
    all.dense_below = 100000;
    all.which = fem::eigen::Which::interval;
    all.lower = -1;
    all.upper = 1e12;
    const auto dense = fem::eigen::solve(pr.name + "/K", pr.name + "/M", all);
    ASSERT_GT(dense.modes(), 50) << pr.name;
    for (double q : {0.1, 0.3, 0.5, 0.77, 0.95}) {
      const auto i = static_cast<std::size_t>(q * static_cast<double>(dense.modes()));
      const double tau = 0.5 * (dense.eigenvalues[i - 1] + dense.eigenvalues[i]);  // between two
      if (dense.eigenvalues[i] - dense.eigenvalues[i - 1] < 1e-8 * dense.eigenvalues[i]) continue;
      EXPECT_EQ(fem::eigen::count_below(fem::store(), pr.name + "/K", pr.name + "/M", tau, all),
                static_cast<index_t>(i))
          << pr.name << " at " << tau;
    }
  }
}

TEST_F(Eigen, BadInputIsRefusedInWords) {
  laplacian("bad", 8, 1);
  fem::eigen::Options o;
  o.count = 0;
  EXPECT_THROW(fem::eigen::solve("bad/K", "bad/M", o), fem::InvalidArgument);
  o.count = 2;
  o.constrained = {-1};
  EXPECT_THROW(fem::eigen::solve("bad/K", "bad/M", o), fem::InvalidArgument);
  o.constrained = {};
  o.which = fem::eigen::Which::interval;
  o.lower = 3;
  o.upper = 1;
  EXPECT_THROW(fem::eigen::solve("bad/K", "bad/M", o), fem::InvalidArgument);
  EXPECT_THROW(fem::eigen::solve("bad/K", "nothing", {}), fem::KeyError);
}

}  // namespace
