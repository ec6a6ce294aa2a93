// Generated meshes: counts, positive orientation, total measure and tagged sides.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "../support/scoped_env.hpp"
#include "fem/error.hpp"
#include "fem/memory.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using fem::CellType;

// Signed measure of a simplex or (for quads/hexes) of the cell's Jacobian at its first corner.
double signed_measure(const fem::Mesh& m, fem::index_t c) {
  const auto v = m.cell(c);
  auto p = [&](int i, int d) { return m.node(v[i])[d]; };
  switch (m.cell_type()) {
    case CellType::line2:
      return p(1, 0) - p(0, 0);
    case CellType::tri3:
      return 0.5 * ((p(1, 0) - p(0, 0)) * (p(2, 1) - p(0, 1)) - (p(2, 0) - p(0, 0)) * (p(1, 1) - p(0, 1)));
    case CellType::quad4:  // parallelogram cells: area = |(v1-v0) x (v3-v0)|
      return (p(1, 0) - p(0, 0)) * (p(3, 1) - p(0, 1)) - (p(3, 0) - p(0, 0)) * (p(1, 1) - p(0, 1));
    case CellType::tet4:
    case CellType::hex8: {
      const int a = 1, b = m.cell_type() == CellType::tet4 ? 2 : 3,
                cc = m.cell_type() == CellType::tet4 ? 3 : 4;
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
    default:
      return 0;
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
      case fem::mesh::left:
        axis = 0;
        break;
      case fem::mesh::right:
        axis = 0, upper = true;
        break;
      case fem::mesh::bottom:
        axis = m.gdim() == 3 ? 2 : 1;
        break;
      case fem::mesh::top:
        axis = m.gdim() == 3 ? 2 : 1, upper = true;
        break;
      case fem::mesh::front:
        axis = 1;
        break;
      case fem::mesh::back:
        axis = 1, upper = true;
        break;
      default:
        FAIL() << "unexpected tag " << tag;
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

using fem::testing::ScopedMemoryLimit;

// The message of the InvalidArgument `f` throws ("" and a failure when it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const fem::InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(Generate, SizesAreCountedIn64Bits) {
  const auto s = fem::mesh::generated_size(CellType::tet4, 2000, 2000, 2000);
  EXPECT_EQ(s.nodes, 2001LL * 2001 * 2001);
  EXPECT_EQ(s.cells, 6LL * 2000 * 2000 * 2000);
  EXPECT_EQ(s.facets, 2LL * 6 * 2000 * 2000);
  EXPECT_GT(s.bytes, 1e12);  // about 1 TB
  // And they agree with what the generators make.
  for (auto type : {CellType::tet4, CellType::hex8}) {
    const auto m = fem::mesh::box(type, 3, 4, 5);
    const auto z = fem::mesh::generated_size(type, 3, 4, 5);
    EXPECT_EQ(z.nodes, m.num_nodes());
    EXPECT_EQ(z.cells, m.num_cells());
    EXPECT_EQ(z.facets, m.num_facets());
    EXPECT_NEAR(z.bytes,
                static_cast<double>(m.coords().size() * 8 + (m.cells().size() + m.cell_tags().size()) * 4 +
                                    (m.facets().size() + m.facet_tags().size()) * 4),
                1.0);
  }
  for (auto type : {CellType::tri3, CellType::quad4}) {
    const auto m = fem::mesh::rectangle(type, 6, 7);
    EXPECT_EQ(fem::mesh::generated_size(type, 6, 7).nodes, m.num_nodes());
    EXPECT_EQ(fem::mesh::generated_size(type, 6, 7).cells, m.num_cells());
    EXPECT_EQ(fem::mesh::generated_size(type, 6, 7).facets, m.num_facets());
  }
  EXPECT_EQ(fem::mesh::generated_size(CellType::line2, 9).nodes, fem::mesh::interval(9).num_nodes());
}

TEST(Generate, CountsBeyond32BitIndicesAreRefusedBeforeAllocating) {
  const auto start = std::chrono::steady_clock::now();
  // gen:cube-tet4:2000: 8e9 nodes, 4.8e10 cells, about 1 TB; refused at once, naming it all.
  std::string why = refusal([] { fem::mesh::unit_cube(CellType::tet4, 2000); });
  EXPECT_TRUE(has(why, "box(tet4, 2000 x 2000 x 2000)")) << why;
  EXPECT_TRUE(has(why, "8012006001 nodes")) << why;
  EXPECT_TRUE(has(why, "48000000000 cells")) << why;
  EXPECT_TRUE(has(why, "32-bit indices")) << why;
  EXPECT_TRUE(has(why, "TiB")) << why;
  // Counts whose own arithmetic overflowed 32 bits before (nx + 1, nx * ny).
  why = refusal([] { fem::mesh::unit_cube(CellType::hex8, 2147483647); });
  EXPECT_TRUE(has(why, "box(hex8, 2147483647 x 2147483647 x 2147483647)")) << why;
  why = refusal([] { fem::mesh::unit_square(CellType::tri3, 100000); });
  EXPECT_TRUE(has(why, "rectangle(tri3, 100000 x 100000)")) << why;
  EXPECT_TRUE(has(why, "10000200001 nodes")) << why;
  why = refusal([] { fem::mesh::interval(2147483647); });
  EXPECT_TRUE(has(why, "interval(2147483647)")) << why;
  EXPECT_TRUE(has(why, "2147483648 nodes")) << why;
  // Through a gen: spec, with counts beyond 32 bits in the spec itself.
  why = refusal([] { fem::mesh::generate("gen:cube-tet4:2000"); });
  EXPECT_TRUE(has(why, "48000000000 cells")) << why;
  why = refusal([] { fem::mesh::generate("gen:square-quad4:3000000000"); });
  EXPECT_TRUE(has(why, "3000000000 cells per side")) << why;
  EXPECT_TRUE(has(why, "32-bit")) << why;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(Generate, MeshLargerThanTheMemoryAvailableIsRefused) {
  const ScopedMemoryLimit small("1M");
  // 50³ cubes: 750 000 tetrahedra, 15 MB of arrays.
  const std::string why = refusal([] { fem::mesh::unit_cube(CellType::tet4, 50); });
  EXPECT_TRUE(has(why, "box(tet4, 50 x 50 x 50)")) << why;
  EXPECT_TRUE(has(why, "750000 cells")) << why;
  EXPECT_TRUE(has(why, "MiB for the mesh's arrays")) << why;
  EXPECT_TRUE(has(why, "but 1.00 MiB of memory are available (FEM_MEMORY_LIMIT)")) << why;
  // Small ones still fit.
  EXPECT_EQ(fem::mesh::unit_cube(CellType::tet4, 4).num_cells(), 384);
}

TEST(Generate, GeneratedSpecs) {
  const auto m = fem::mesh::generate("gen:cube-hex8:3");
  EXPECT_EQ(m.num_cells(), 27);
  EXPECT_EQ(m.source(), "gen:cube-hex8:3");
  EXPECT_EQ(fem::mesh::generate("gen:square-tri3:2").num_cells(), 8);
  EXPECT_EQ(fem::mesh::generate("gen:interval:5").num_nodes(), 6);
  EXPECT_TRUE(fem::mesh::is_generated("gen:cube-tet4:2"));
  EXPECT_FALSE(fem::mesh::is_generated("cube.msh"));
  for (const char* bad : {"gen:cube-tet4", "gen:cube-tet4:", "gen:cube-tet4:0", "gen:cube-tet4:-3",
                          "gen:cube-tet4:2x", "gen:sphere-tet4:3"})
    EXPECT_THROW(fem::mesh::generate(bad), fem::InvalidArgument) << bad;
  const std::string why = refusal([] { fem::mesh::generate("gen:sphere-tet4:3"); });
  EXPECT_TRUE(has(why, "unknown shape 'sphere-tet4'")) << why;
}

}  // namespace
