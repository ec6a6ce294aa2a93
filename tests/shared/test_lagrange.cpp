// Lagrange elements: nodal (phi_i(x_j) = delta_ij at the Gmsh nodes), a partition of unity,
// gradients equal to finite differences, and edge nodes in the order of fem::local_edges().
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "fem/lagrange.hpp"
#include "fem/reference_cell.hpp"

namespace {

using fem::CellType;

std::vector<std::array<double, 3>> nodes(CellType t) {
  const auto x = fem::reference_nodes(t);
  return {x.begin(), x.end()};
}

const CellType kTypes[] = {CellType::line2, CellType::line3, CellType::tri3,  CellType::tri6, CellType::quad4,
                           CellType::quad9, CellType::tet4,  CellType::tet10, CellType::hex8};

TEST(Lagrange, NodalAndPartitionOfUnity) {
  for (auto t : kTypes) {
    SCOPED_TRACE(fem::cell_info(t).name);
    const auto x = nodes(t);
    const int n = static_cast<int>(x.size()), dim = fem::cell_info(t).dim;
    ASSERT_EQ(n, fem::cell_info(t).num_nodes);
    std::vector<double> phi(n), grad(n * dim);
    for (int j = 0; j < n; ++j) {
      ASSERT_TRUE(fem::lagrange_eval(t, x[j].data(), phi.data(), grad.data()));
      for (int i = 0; i < n; ++i)
        EXPECT_NEAR(phi[i], i == j ? 1.0 : 0.0, 1e-14) << "phi_" << i << " at node " << j;
    }
    const double xi[3] = {0.13, 0.21, 0.07};
    fem::lagrange_eval(t, xi, phi.data(), grad.data());
    double sum = 0;
    std::vector<double> gsum(dim, 0.0);
    for (int i = 0; i < n; ++i) {
      sum += phi[i];
      for (int d = 0; d < dim; ++d) gsum[d] += grad[i * dim + d];
    }
    EXPECT_NEAR(sum, 1.0, 1e-14);
    for (int d = 0; d < dim; ++d) EXPECT_NEAR(gsum[d], 0.0, 1e-13);
  }
}

TEST(Lagrange, GradientsMatchFiniteDifferences) {
  for (auto t : kTypes) {
    SCOPED_TRACE(fem::cell_info(t).name);
    const int n = fem::cell_info(t).num_nodes, dim = fem::cell_info(t).dim;
    std::vector<double> phi(n), grad(n * dim), pp(n), pm(n), g(n * dim);
    const double xi[3] = {0.11, 0.23, 0.31};
    fem::lagrange_eval(t, xi, phi.data(), grad.data());
    const double h = 1e-6;
    for (int d = 0; d < dim; ++d) {
      double xp[3] = {xi[0], xi[1], xi[2]}, xm[3] = {xi[0], xi[1], xi[2]};
      xp[d] += h;
      xm[d] -= h;
      fem::lagrange_eval(t, xp, pp.data(), g.data());
      fem::lagrange_eval(t, xm, pm.data(), g.data());
      for (int i = 0; i < n; ++i) EXPECT_NEAR(grad[i * dim + d], (pp[i] - pm[i]) / (2 * h), 1e-8);
    }
  }
}

TEST(Lagrange, ReferenceNodesOfSecondOrderCells) {
  // Spot checks against Gmsh's documented node positions.
  EXPECT_EQ(fem::reference_nodes(CellType::tet10)[8], (std::array<double, 3>{0, 0.5, 0.5}));  // edge (3, 2)
  EXPECT_EQ(fem::reference_nodes(CellType::quad9)[6], (std::array<double, 3>{0, 1, 0}));      // edge (2, 3)
  EXPECT_EQ(fem::reference_nodes(CellType::hex27)[9], (std::array<double, 3>{-1, 0, -1}));    // edge (0, 3)
  EXPECT_EQ(fem::reference_nodes(CellType::hex27)[20], (std::array<double, 3>{0, 0, -1}));    // face 0-3-2-1
  EXPECT_EQ(fem::reference_nodes(CellType::hex27)[26], (std::array<double, 3>{0, 0, 0}));
  EXPECT_EQ(fem::reference_nodes(CellType::line3)[2], (std::array<double, 3>{0, 0, 0}));
  for (int t = 0; t <= static_cast<int>(CellType::hex27); ++t)
    EXPECT_EQ(fem::reference_nodes(static_cast<CellType>(t)).size(),
              static_cast<std::size_t>(fem::cell_info(static_cast<CellType>(t)).num_nodes));
}

TEST(Lagrange, EdgeNodesFollowLocalEdges) {
  // The edge node k of a second-order simplex sits at the midpoint of local edge k.
  for (auto [second, first] :
       {std::pair{CellType::tri6, CellType::tri3}, std::pair{CellType::tet10, CellType::tet4}}) {
    const auto x = nodes(second);
    const auto edges = fem::local_edges(first);
    const int nv = fem::cell_info(first).num_nodes;
    for (std::size_t k = 0; k < edges.size(); ++k)
      for (int d = 0; d < 3; ++d)
        EXPECT_DOUBLE_EQ(x[nv + k][d], 0.5 * (x[edges[k][0]][d] + x[edges[k][1]][d]))
            << fem::cell_info(second).name;
  }
}

}  // namespace
