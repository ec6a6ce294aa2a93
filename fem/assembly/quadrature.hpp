// Quadrature rules on the reference cells of fem/lagrange.hpp, exact to a requested degree.
#pragma once

#include <vector>

#include "fem/mesh.hpp"

namespace fem::assembly {

struct Quadrature {
  CellType cell = CellType::point;  ///< the first-order reference cell (line2, tri3, quad4, tet4, hex8)
  int degree = 0;                   ///< polynomials up to this degree are integrated exactly
  int dim = 0;
  std::vector<double> points;   ///< size() × dim reference coordinates
  std::vector<double> weights;  ///< they sum to the reference cell's measure
  int size() const noexcept { return static_cast<int>(weights.size()); }
};

/// A rule exact to `degree` on the reference cell of `type` (any order of the type: tri6 uses
/// the triangle). Optimal small rules for the low degrees of simplices, collapsed Gauss rules
/// beyond; tensor Gauss rules on quadrilaterals and hexahedra. Cached: the reference is stable.
const Quadrature& quadrature(CellType type, int degree);

/// Gauss-Legendre points and weights on [-1, 1] with n points (exact to degree 2n - 1).
void gauss_legendre(int n, std::vector<double>& points, std::vector<double>& weights);

}  // namespace fem::assembly
