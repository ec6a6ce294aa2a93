// Quadrature rules integrate monomials exactly up to their degree on every reference cell.
#include <gtest/gtest.h>

#include <cmath>

#include "fem/assembly/quadrature.hpp"
#include "fem/error.hpp"

namespace {

using fem::CellType;
using fem::assembly::quadrature;

double factorial(int n) { return n <= 1 ? 1.0 : n * factorial(n - 1); }

// ∫ x^a y^b z^c over the reference cell.
double exact(CellType cell, int a, int b, int c) {
  switch (cell) {
    case CellType::line2:
      return a % 2 ? 0.0 : 2.0 / (a + 1);
    case CellType::quad4:
      return exact(CellType::line2, a, 0, 0) * exact(CellType::line2, b, 0, 0);
    case CellType::hex8:
      return exact(CellType::quad4, a, b, 0) * exact(CellType::line2, c, 0, 0);
    case CellType::tri3:
      return factorial(a) * factorial(b) / factorial(a + b + 2);
    case CellType::tet4:
      return factorial(a) * factorial(b) * factorial(c) / factorial(a + b + c + 3);
    default:
      return 0;
  }
}

TEST(Quadrature, ExactToItsDegree) {
  for (auto cell : {CellType::line2, CellType::tri3, CellType::quad4, CellType::tet4, CellType::hex8}) {
    const int dim = fem::cell_info(cell).dim;
    for (int degree = 0; degree <= 8; ++degree) {
      const auto& q = quadrature(cell, degree);
      for (int a = 0; a <= degree; ++a)
        for (int b = 0; b <= (dim > 1 ? degree - a : 0); ++b)
          for (int c = 0; c <= (dim > 2 ? degree - a - b : 0); ++c) {
            double s = 0;
            for (int k = 0; k < q.size(); ++k) {
              const double* x = &q.points[k * dim];
              s += q.weights[k] * std::pow(x[0], a) * (dim > 1 ? std::pow(x[1], b) : 1.0) *
                   (dim > 2 ? std::pow(x[2], c) : 1.0);
            }
            EXPECT_NEAR(s, exact(cell, a, b, c), 1e-14 * (1 + std::abs(exact(cell, a, b, c))))
                << fem::cell_info(cell).name << " degree " << degree << " monomial " << a << b << c;
          }
    }
  }
}

TEST(Quadrature, PointsInsideTheCell) {
  for (int degree : {1, 2, 5}) {
    const auto& t = quadrature(CellType::tet4, degree);
    for (int k = 0; k < t.size(); ++k) {
      const double* x = &t.points[3 * k];
      EXPECT_GE(std::min({x[0], x[1], x[2]}), 0.0);
      EXPECT_LE(x[0] + x[1] + x[2], 1.0);
      EXPECT_GT(t.weights[k], 0.0);
    }
  }
  EXPECT_EQ(quadrature(CellType::tri6, 2).size(), 3);  // the optimal 3-point rule
  EXPECT_THROW(quadrature(CellType::tri3, 99), fem::InvalidArgument);
}

}  // namespace
