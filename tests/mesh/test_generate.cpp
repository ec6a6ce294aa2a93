// Generated meshes: counts, positive orientation, total measure and tagged sides.
#include <gtest/gtest.h>

#include <cmath>

#include "fem/error.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using fem::CellType;

// Signed measure of a simplex or (for quads/hexes) of the cell's Jacobian at its first corner.
double signed_measure(const fem::Mesh& m, fem::index_t c) {
  const auto v = m.cell(c);
  auto p = [&](int i, int d) { return m.node(v[i])[d]; };
  switch (m.cell_type()) {
    case CellType::line2: return p(1, 0) - p(0, 0);
    case CellType::tri3:
      return 0.5 * ((p(1, 0) - p(0, 0)) * (p(2, 1) - p(0, 1)) - (p(2, 0) - p(0, 0)) * (p(1, 1) - p(0, 1)));
    case CellType::quad4:  // parallelogram cells: area = |(v1-v0) x (v3-v0)|
      return (p(1, 0) - p(0, 0)) * (p(3, 1) - p(0, 1)) - (p(3, 0) - p(0, 0)) * (p(1, 1) - p(0, 1));
    case CellType::tet4:
    case CellType::hex8: {
      const int a = 1, b = m.cell_type() == CellType::tet4 ? 2 : 3, cc = m.cell_type() == CellType::tet4 ? 3 : 4;
      double e[3][3];
      for (int d = 0; d < 3; ++d) {
        e[0][d] = p(a, d) - p(0, d);
        e[1][d] = p(b, d) - p(0, d);
        e[2][d] = p(cc, d) - p(0, d);
      }
      const double det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
                         e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
                         e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
      return m.cell_type() == CellType::tet4 ? det / 6.0 : det;
    }
    default: return 0;
  }
}

double total_measure(const fem::Mesh& m) {
  double s = 0;
  for (fem::index_t c = 0; c < m.num_cells(); ++c) {
    const double v = signed_measure(m, c);
    EXPECT_GT(v, 0.0) << "cell " << c << " is not positively oriented";
    s += v;
  }
  return s;
}

// Every tagged facet lies on the side its tag names.
void expect_facets_on_sides(const fem::Mesh& m, std::array<double, 3> lo, std::array<double, 3> hi) {
  for (fem::index_t f = 0; f < m.num_facets(); ++f) {
    const int tag = m.facet_tags()[f];
    int axis = 0;
    bool upper = false;
    switch (tag) {
      case fem::mesh::left: axis = 0; break;
      case fem::mesh::right: axis = 0, upper = true; break;
      case fem::mesh::bottom: axis = m.gdim() == 3 ? 2 : 1; break;
      case fem::mesh::top: axis = m.gdim() == 3 ? 2 : 1, upper = true; break;
      case fem::mesh::front: axis = 1; break;
      case fem::mesh::back: axis = 1, upper = true; break;
      default: FAIL() << "unexpected tag " << tag;
    }
    for (auto v : m.facet(f)) EXPECT_DOUBLE_EQ(m.node(v)[axis], upper ? hi[axis] : lo[axis]) << "facet " << f;
  }
}

TEST(Generate, Interval) {
  auto m = fem::mesh::interval(10, -1.0, 3.0);
  EXPECT_EQ(m.num_cells(), 10);
  EXPECT_EQ(m.num_nodes(), 11);
  EXPECT_NEAR(total_measure(m), 4.0, 1e-14);
  EXPECT_EQ(m.num_facets(), 2);
  EXPECT_EQ(m.tag_of("right"), fem::mesh::right);
}

TEST(Generate, RectangleTrianglesAndQuads) {
  for (auto type : {CellType::tri3, CellType::quad4}) {
    auto m = fem::mesh::rectangle(type, 4, 3, {0.0, -1.0}, {2.0, 1.0});
    EXPECT_EQ(m.num_cells(), type == CellType::tri3 ? 24 : 12);
    EXPECT_EQ(m.num_nodes(), 20);
    EXPECT_NEAR(total_measure(m), 4.0, 1e-13);
    EXPECT_EQ(m.num_facets(), 2 * (4 + 3));
    expect_facets_on_sides(m, {0.0, -1.0, 0}, {2.0, 1.0, 0});
  }
}

TEST(Generate, BoxTetsAndHexes) {
  for (auto type : {CellType::tet4, CellType::hex8}) {
    const int n = 3;
    auto m = fem::mesh::unit_cube(type, n);
    const bool tet = type == CellType::tet4;
    EXPECT_EQ(m.num_cells(), (tet ? 6 : 1) * n * n * n);
    EXPECT_EQ(m.num_nodes(), (n + 1) * (n + 1) * (n + 1));
    EXPECT_NEAR(total_measure(m), 1.0, 1e-13);
    EXPECT_EQ(m.num_facets(), (tet ? 2 : 1) * 6 * n * n);
    expect_facets_on_sides(m, {0, 0, 0}, {1, 1, 1});
  }
}

TEST(Generate, BadArguments) {
  EXPECT_THROW(fem::mesh::unit_square(CellType::tet4, 2), fem::InvalidArgument);
  EXPECT_THROW(fem::mesh::unit_square(CellType::tri3, 0), fem::InvalidArgument);
  EXPECT_THROW(fem::mesh::box(CellType::hex8, 1, 1, 1, {0, 0, 0}, {1, 0, 1}), fem::InvalidArgument);
  EXPECT_THROW(fem::mesh::interval(4, 1.0, 1.0), fem::InvalidArgument);
}

}  // namespace
