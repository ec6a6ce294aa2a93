// The Mesh vocabulary type: cell tables and construction checks that name what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fem/error.hpp"
#include "fem/mesh.hpp"

namespace {

fem::Mesh::Data two_triangles() {
  fem::Mesh::Data d;
  d.gdim = 2;
  d.cell_type = fem::CellType::tri3;
  d.coords = {0, 0, 1, 0, 1, 1, 0, 1};
  d.cells = {0, 1, 2, 0, 2, 3};
  d.facets = {0, 1, 1, 2};
  d.facet_tags = {1, 2};
  d.names = {{1, 1, "bottom"}, {1, 2, "right"}, {2, 7, "domain"}};
  d.source = "two.msh";
  return d;
}

TEST(CellInfo, Tables) {
  EXPECT_EQ(fem::cell_info(fem::CellType::tet10).num_nodes, 10);
  EXPECT_EQ(fem::cell_info(fem::CellType::hex27).facet, fem::CellType::quad9);
  EXPECT_EQ(fem::cell_info(fem::CellType::quad4).num_facets, 4);
  EXPECT_EQ(fem::cell_type_from_gmsh(11), fem::CellType::tet10);
  EXPECT_EQ(fem::cell_type_from_gmsh(6), std::nullopt);  // prisms are not supported
  EXPECT_EQ(fem::cell_type_from_name("hex8"), fem::CellType::hex8);
  for (int t = 0; t <= static_cast<int>(fem::CellType::hex27); ++t)
    EXPECT_EQ(static_cast<int>(fem::cell_info(static_cast<fem::CellType>(t)).type), t);
}

TEST(Mesh, Accessors) {
  fem::Mesh m(two_triangles());
  EXPECT_EQ(m.num_nodes(), 4);
  EXPECT_EQ(m.num_cells(), 2);
  EXPECT_EQ(m.num_facets(), 2);
  EXPECT_EQ(m.tdim(), 2);
  EXPECT_EQ(m.cell(1)[2], 3);
  EXPECT_EQ(m.node(2)[1], 1.0);
  EXPECT_EQ(m.cell_tags().size(), 2u);  // filled with 0
  EXPECT_EQ(m.tag_of("right"), 2);
  EXPECT_EQ(m.tag_of("right", 2), std::nullopt);
  EXPECT_EQ(m.name_of(2, 7), "domain");
  auto [lo, hi] = m.bounding_box();
  EXPECT_EQ(hi[0], 1.0);
  EXPECT_EQ(lo[1], 0.0);
  EXPECT_GE(m.bytes(), 8 * sizeof(double) + 6 * sizeof(fem::index_t));
}

void expect_error_mentions(fem::Mesh::Data d, const std::string& what) {
  try {
    fem::Mesh m(std::move(d));
    FAIL() << "expected an error mentioning " << what;
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("two.msh"), std::string::npos) << e.what();
  }
}

TEST(Mesh, BadDataIsNamed) {
  auto d = two_triangles();
  d.cells[4] = 9;
  expect_error_mentions(d, "cell 1 references node 9");
  d = two_triangles();
  d.coords[5] = std::numeric_limits<double>::quiet_NaN();
  expect_error_mentions(d, "node 2");
  d = two_triangles();
  d.coords[0] = std::numeric_limits<double>::infinity();
  expect_error_mentions(d, "node 0");
  d = two_triangles();
  d.cells.pop_back();
  expect_error_mentions(d, "multiple of 3");
  d = two_triangles();
  d.facets[3] = -1;
  expect_error_mentions(d, "boundary facet 1");
  d = two_triangles();
  d.cell_tags = {1};
  expect_error_mentions(d, "1 cell tags for 2 cells");
  d = two_triangles();
  d.gdim = 1;
  d.coords = {0, 1, 2, 3};
  expect_error_mentions(d, "dimension");
}

}  // namespace
