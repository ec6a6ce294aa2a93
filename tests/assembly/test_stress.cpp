// Cell-wise stresses of displacement fields: exact for affine displacements (P1 and P2, plane
// strain and 3D), and the von Mises stress of uniaxial tension and pure shear.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;

// u_k = Σ_d G[k][d] x_d + k: σ = λ tr(G) I + μ (G + Gᵀ), the same in every cell.
void expect_affine_stress(CellType cell, int degree, double E, double nu) {
  const int dim = fem::cell_info(cell).dim;
  const double G[3][3] = {{0.3, -0.2, 0.5}, {0.7, -0.4, 0.1}, {-0.6, 0.25, 0.2}};
  auto mesh = std::make_shared<const fem::Mesh>(dim == 2 ? fem::mesh::unit_square(cell, 4)
                                                         : fem::mesh::unit_cube(cell, 2));
  const FunctionSpace V(mesh, degree, dim);
  const Assembler a(V);
  const auto u = interpolate(V, [&](const double* x, double* v) {
    for (int k = 0; k < dim; ++k) {
      v[k] = k;
      for (int d = 0; d < dim; ++d) v[k] += G[k][d] * x[d];
    }
  });
  const double lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  double trace = 0;
  for (int k = 0; k < dim; ++k) trace += G[k][k];
  auto expected = [&](int i, int j) {
    if (i >= dim || j >= dim) return i == j ? lambda * trace : 0.0;  // plane strain: σzz = λ tr ε
    return (i == j ? lambda * trace : 0.0) + mu * (G[i][j] + G[j][i]);
  };
  const int pairs[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {1, 2}, {0, 2}};
  const auto s = cell_stress(a, u, Elasticity{E, nu});
  ASSERT_EQ(s.size(), static_cast<std::size_t>(mesh->num_cells()) * 6);
  for (fem::index_t c = 0; c < mesh->num_cells(); ++c)
    for (int k = 0; k < 6; ++k)
      ASSERT_NEAR(s[c * 6 + k], expected(pairs[k][0], pairs[k][1]), 1e-12 * E)
          << "cell " << c << " entry " << k;
  if (dim == 2) {  // σzz = ν(σxx + σyy) in plane strain
    EXPECT_NEAR(s[2], nu * (s[0] + s[1]), 1e-12 * E);
  }
}

TEST(CellStress, AffineDisplacementsAreExact) {
  expect_affine_stress(CellType::tri3, 1, 10.0, 0.3);
  expect_affine_stress(CellType::tri3, 2, 10.0, 0.3);
  expect_affine_stress(CellType::quad4, 1, 3.0, 0.25);
  expect_affine_stress(CellType::tet4, 1, 200.0, 0.3);
  expect_affine_stress(CellType::tet4, 2, 200.0, 0.45);
}

TEST(CellStress, MaterialPerCellTag) {
  auto mesh = std::make_shared<const fem::Mesh>(fem::mesh::unit_square(CellType::tri3, 4));
  const int tag = mesh->cell_tags()[0];
  const FunctionSpace V(mesh, 1, 2);
  const Assembler a(V);
  const auto u = interpolate(V, [](const double* x, double* v) { v[0] = 0.01 * x[0], v[1] = 0; });
  const auto s = cell_stress(a, u, Elasticity{Coefficient::per_tag({{tag, 5.0}}), 0.0});
  EXPECT_NEAR(s[0], 0.05, 1e-14);  // ν = 0: σxx = E εxx
  EXPECT_THROW(cell_stress(a, u, Elasticity{Coefficient::per_tag({{tag + 1, 5.0}}), 0.0}), fem::Error);
}

TEST(VonMises, UniaxialTensionAndPureShear) {
  // 3D uniaxial tension: u = (s/E x, -ν s/E y, -ν s/E z) gives σ = diag(s, 0, 0).
  const double E = 70.0, nu = 0.33, t = -2.5;
  auto mesh = std::make_shared<const fem::Mesh>(fem::mesh::unit_cube(CellType::tet4, 2));
  const FunctionSpace V(mesh, 1, 3);
  const Assembler a(V);
  const auto u = interpolate(V, [&](const double* x, double* v) {
    v[0] = t / E * x[0], v[1] = -nu * t / E * x[1], v[2] = -nu * t / E * x[2];
  });
  const auto s = cell_stress(a, u, Elasticity{E, nu});
  for (double vm : von_mises(s)) ASSERT_NEAR(vm, std::abs(t), 1e-12);
  // Pure shear τ: √3 |τ|.
  const double shear[6] = {0, 0, 0, 0.5, 0, 0};
  EXPECT_NEAR(von_mises(shear)[0], std::sqrt(3.0) * 0.5, 1e-15);
  const double hydrostatic[6] = {4, 4, 4, 0, 0, 0};
  EXPECT_NEAR(von_mises(hydrostatic)[0], 0.0, 1e-15);
  const double bad[5] = {};
  EXPECT_THROW(von_mises(bad), fem::Error);
}

}  // namespace
