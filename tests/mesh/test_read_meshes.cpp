// The sample meshes in meshes/: every file loads, the four Gmsh variants (2.2/4.1 × ASCII/binary)
// of a mesh give identical data, and areas, volumes and boundary lengths match the geometry.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>

#include "fem/error.hpp"
#include "fem/mesh/mesh.hpp"

namespace {

using fem::CellType;
using fem::Mesh;
constexpr double pi = std::numbers::pi;

std::filesystem::path meshes_dir() { return FEM_MESHES_DIR; }

Mesh load(const std::string& file) { return fem::mesh::read(meshes_dir() / file); }

// Measure of a cell or facet given by its nodes (P1 simplices exactly, tri6 with a quadrature rule
// that is exact for its quadratic Jacobian, line3 with Gauss points).
double measure(const Mesh& m, CellType type, std::span<const fem::index_t> v) {
  const int g = m.gdim();
  auto x = [&](int i, int d) { return d < g ? m.node(v[i])[d] : 0.0; };
  switch (type) {
    case CellType::line2: {
      double s = 0;
      for (int d = 0; d < g; ++d) s += (x(1, d) - x(0, d)) * (x(1, d) - x(0, d));
      return std::sqrt(s);
    }
    case CellType::line3: {  // nodes 0, 1 ends, 2 middle
      double len = 0;
      for (double t : {0.5 - 0.5 / std::sqrt(3.0), 0.5 + 0.5 / std::sqrt(3.0)}) {
        double s = 0;
        for (int d = 0; d < g; ++d) {
          const double dx = x(0, d) * (4 * t - 3) + x(1, d) * (4 * t - 1) + x(2, d) * (4 - 8 * t);
          s += dx * dx;
        }
        len += 0.5 * std::sqrt(s);
      }
      return len;
    }
    case CellType::tri3: {
      double c[3];
      const double a[3] = {x(1, 0) - x(0, 0), x(1, 1) - x(0, 1), x(1, 2) - x(0, 2)};
      const double b[3] = {x(2, 0) - x(0, 0), x(2, 1) - x(0, 1), x(2, 2) - x(0, 2)};
      c[0] = a[1] * b[2] - a[2] * b[1];
      c[1] = a[2] * b[0] - a[0] * b[2];
      c[2] = a[0] * b[1] - a[1] * b[0];
      return 0.5 * std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    }
    case CellType::tri6: {  // planar: integral of det J, degree 2, 3-point rule exact
      double area = 0;
      for (auto [r, s] : {std::pair{1.0 / 6, 1.0 / 6}, {2.0 / 3, 1.0 / 6}, {1.0 / 6, 2.0 / 3}}) {
        const double l0 = 1 - r - s;
        const double dr[6] = {-(4 * l0 - 1), 4 * r - 1, 0, 4 * (l0 - r), 4 * s, -4 * s};
        const double ds[6] = {-(4 * l0 - 1), 0, 4 * s - 1, -4 * r, 4 * r, 4 * (l0 - s)};
        double j[2][2] = {{0, 0}, {0, 0}};
        for (int i = 0; i < 6; ++i)
          for (int d = 0; d < 2; ++d) {
            j[d][0] += x(i, d) * dr[i];
            j[d][1] += x(i, d) * ds[i];
          }
        area += (j[0][0] * j[1][1] - j[0][1] * j[1][0]) / 6.0;
      }
      return area;
    }
    case CellType::tet4: {
      double e[3][3];
      for (int k = 0; k < 3; ++k)
        for (int d = 0; d < 3; ++d) e[k][d] = x(k + 1, d) - x(0, d);
      return (e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
              e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
              e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
             6.0;
    }
    default:
      ADD_FAILURE() << "no measure for this cell type";
      return 0;
  }
}

double total_measure(const Mesh& m, std::optional<int> tag = std::nullopt) {
  double s = 0;
  for (fem::index_t c = 0; c < m.num_cells(); ++c)
    if (!tag || m.cell_tags()[c] == *tag) s += measure(m, m.cell_type(), m.cell(c));
  return s;
}

double boundary_measure(const Mesh& m, std::string_view name) {
  const auto tag = m.tag_of(name, m.tdim() - 1);
  EXPECT_TRUE(tag) << name;
  double s = 0;
  for (fem::index_t f = 0; f < m.num_facets(); ++f)
    if (m.facet_tags()[f] == tag) s += std::abs(measure(m, m.facet_info().type, m.facet(f)));
  return s;
}

// Gmsh writes ASCII coordinates with 16 significant digits, binary ones exactly: coordinates
// agree to the last digit or two (exactly between files of the same encoding).
void expect_same(const Mesh& a, const Mesh& b, bool exact_coords = true) {
  EXPECT_EQ(a.gdim(), b.gdim());
  EXPECT_EQ(a.cell_type(), b.cell_type());
  if (exact_coords) {
    EXPECT_TRUE(std::ranges::equal(a.coords(), b.coords()));
  }
  ASSERT_EQ(a.coords().size(), b.coords().size());
  double worst = 0;
  for (std::size_t i = 0; i < a.coords().size(); ++i)
    worst = std::max(worst, std::abs(a.coords()[i] - b.coords()[i]) / std::max(1.0, std::abs(a.coords()[i])));
  EXPECT_LE(worst, 1e-15);
  EXPECT_TRUE(std::ranges::equal(a.cells(), b.cells()));
  EXPECT_TRUE(std::ranges::equal(a.cell_tags(), b.cell_tags()));
  EXPECT_TRUE(std::ranges::equal(a.facets(), b.facets()));
  EXPECT_TRUE(std::ranges::equal(a.facet_tags(), b.facet_tags()));
  ASSERT_EQ(a.names().size(), b.names().size());
  for (std::size_t i = 0; i < a.names().size(); ++i) EXPECT_EQ(a.names()[i].name, b.names()[i].name);
}

const char* kMeshes[] = {"plate_hole", "annulus", "annulus_p2", "lshape", "cylinder"};
const char* kVariants[] = {"_v22.msh", "_v22_bin.msh", "_v41.msh", "_v41_bin.msh"};

TEST(SampleMeshes, EveryFileLoads) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(meshes_dir())) {
    const auto ext = entry.path().extension();
    if (ext != ".msh" && ext != ".mesh") continue;
    SCOPED_TRACE(entry.path().string());
    const Mesh m = fem::mesh::read(entry.path());
    EXPECT_GT(m.num_cells(), 100);
    EXPECT_GT(m.num_facets(), 10);
    EXPECT_GE(m.names().size(), 2u);
    ++n;
  }
  EXPECT_GE(n, 20);
}

TEST(SampleMeshes, FourGmshVariantsGiveIdenticalData) {
  for (const char* name : kMeshes) {
    SCOPED_TRACE(name);
    const Mesh ascii = load(std::string(name) + kVariants[0]);
    const Mesh binary = load(std::string(name) + kVariants[1]);
    expect_same(ascii, load(std::string(name) + kVariants[2]));
    expect_same(binary, load(std::string(name) + kVariants[3]));
    expect_same(ascii, binary, false);
    const Mesh& ref = binary;
    // and the data survives our own writer in every format
    for (bool binary : {false, true})
      for (auto version : {fem::mesh::GmshVersion::msh22, fem::mesh::GmshVersion::msh41})
        expect_same(ref, fem::mesh::read_gmsh(fem::mesh::to_gmsh(ref, binary, version), "copy.msh"));
  }
}

TEST(SampleMeshes, PlateWithHole) {
  const Mesh m = load("plate_hole_v41_bin.msh");
  EXPECT_EQ(m.cell_type(), CellType::tri3);
  EXPECT_EQ(m.gdim(), 2);
  EXPECT_NEAR(total_measure(m), 1 - pi * 0.04, 1e-3);
  for (auto c : m.cell_tags()) EXPECT_EQ(c, m.tag_of("domain", 2));
  EXPECT_NEAR(boundary_measure(m, "hole"), 2 * pi * 0.2, 1e-3);
  for (const char* side : {"left", "right", "top", "bottom"})
    EXPECT_NEAR(boundary_measure(m, side), 1.0, 1e-12);
  // every tagged facet belongs to exactly one named group
  std::map<int, int> per_tag;
  for (auto t : m.facet_tags()) ++per_tag[t];
  EXPECT_EQ(per_tag.size(), 5u);
}

TEST(SampleMeshes, PartitionedFileGivesTheSameMesh) {
  const Mesh whole = load("plate_hole_v41.msh");
  const Mesh parts = load("plate_hole_part2_v41.msh");
  EXPECT_EQ(parts.num_cells(), whole.num_cells());
  EXPECT_NEAR(total_measure(parts), total_measure(whole), 1e-12);
  // partition boundaries are not tagged facets; the physical boundaries are all there
  EXPECT_EQ(parts.num_facets(), whole.num_facets());
  for (const char* side : {"left", "right", "top", "bottom", "hole"})
    EXPECT_NEAR(boundary_measure(parts, side), boundary_measure(whole, side), 1e-12) << side;
  for (auto c : parts.cell_tags()) EXPECT_EQ(c, parts.tag_of("domain", 2));
}

TEST(SampleMeshes, AnnulusFirstAndSecondOrder) {
  const Mesh p1 = load("annulus_v22.msh");
  const Mesh p2 = load("annulus_p2_v41.msh");
  EXPECT_EQ(p1.cell_type(), CellType::tri3);
  EXPECT_EQ(p2.cell_type(), CellType::tri6);
  EXPECT_EQ(p2.facet_info().type, CellType::line3);
  const double area = 0.75 * pi;
  EXPECT_NEAR(total_measure(p1), area, 2e-2);
  // curved second-order cells approximate the circles far better
  EXPECT_NEAR(total_measure(p2), area, 1e-4);
  // two materials, each half of the annulus
  for (const char* mat : {"left_material", "right_material"})
    EXPECT_NEAR(total_measure(p2, p2.tag_of(mat, 2)), area / 2, 1e-4) << mat;
  EXPECT_NEAR(boundary_measure(p2, "outer"), 2 * pi, 1e-4);
  EXPECT_NEAR(boundary_measure(p2, "inner"), pi, 1e-4);
  EXPECT_EQ(p1.num_cells(), p2.num_cells());
}

TEST(SampleMeshes, LShape) {
  const Mesh m = load("lshape_v41.msh");
  EXPECT_NEAR(total_measure(m), 3.0, 1e-12);
  EXPECT_NEAR(boundary_measure(m, "corner"), 2.0, 1e-12);
  EXPECT_NEAR(boundary_measure(m, "outer"), 6.0, 1e-12);
  for (fem::index_t c = 0; c < m.num_cells(); ++c) EXPECT_GT(measure(m, m.cell_type(), m.cell(c)), 0);
}

TEST(SampleMeshes, CylinderWithHole) {
  const Mesh m = load("cylinder_v22_bin.msh");
  EXPECT_EQ(m.cell_type(), CellType::tet4);
  EXPECT_EQ(m.gdim(), 3);
  double volume = 0;
  for (fem::index_t c = 0; c < m.num_cells(); ++c) volume += std::abs(measure(m, m.cell_type(), m.cell(c)));
  EXPECT_NEAR(volume, pi * (0.25 - 0.04), 2e-2);
  EXPECT_NEAR(boundary_measure(m, "top"), boundary_measure(m, "bottom"), 1e-2);
  EXPECT_NEAR(boundary_measure(m, "top"), pi * (0.25 - 0.04), 2e-2);
  EXPECT_NEAR(boundary_measure(m, "outer"), pi, 3e-2);
  EXPECT_NEAR(boundary_measure(m, "hole"), 0.4 * pi, 3e-2);
}

}  // namespace
