// Cells the assembly refuses, and what its error says can help: "reorient the mesh" only for a
// cell inverted all over (mirrored node order); "tangled" for a cell whose Jacobian changes sign
// inside it (a second-order cell folded by an edge node pushed across it, a bow-tie
// quadrilateral); "degenerate" for a collapsed one. Each message names the cell and the mesh
// source, on the host and on the device path.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "fem/assembly/assembly.hpp"
#include "fem/assembly/device.hpp"
#include "fem/mesh/check.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;
using fem::index_t;

// The message of the InvalidArgument that assembling the diffusion (or, with components > 1,
// elasticity) matrix on `mesh` throws; empty if none is thrown.
std::string assembly_error(fem::Mesh mesh, int degree, int components = 1) {
  const FunctionSpace V(std::make_shared<const fem::Mesh>(std::move(mesh)), degree, components);
  const Assembler a(V);
  std::vector<double> values(a.pattern()->nnz());
  try {
    if (components == 1)
      a.matrix_into(Diffusion{}, values);
    else
      a.matrix_into(Elasticity{}, values);
  } catch (const fem::InvalidArgument& e) {
    return e.what();
  }
  return {};
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Cell c of a second-order mesh with the node of its first edge moved through the cell to
// beyond the opposite side (a new node, so the neighbours keep theirs): the vertices are those
// of a good cell, the map folds it.
fem::Mesh fold_by_edge_node(const fem::Mesh& good, index_t c, const std::string& source) {
  fem::Mesh::Data d = good.data();
  const int nv = good.cell_info().num_vertices, n = good.nodes_per_cell(), gdim = good.gdim();
  std::array<double, 3> centre{0, 0, 0};
  for (int v = 0; v < nv; ++v)
    for (int k = 0; k < gdim; ++k) centre[k] += good.node(good.cell(c)[v])[k] / nv;
  const auto mid = good.node(good.cell(c)[nv]);
  for (int k = 0; k < gdim; ++k) d.coords.push_back(centre[k] + 2 * (centre[k] - mid[k]));
  d.cells[static_cast<std::size_t>(c) * n + nv] = good.num_nodes();
  d.source = source;
  return fem::Mesh(std::move(d));
}

// A straight second-order mesh (edge nodes at the edge midpoints) of the first-order one.
fem::Mesh second_order(const fem::Mesh& m) {
  // P2 DOF coordinates are where a tri6/tet10 mesh's nodes sit: reuse the DOF map's numbering.
  const auto first = std::make_shared<const fem::Mesh>(m);
  const DofMap d = build_dofmap(first, 2);
  fem::Mesh::Data out;
  out.gdim = m.gdim();
  out.cell_type = m.tdim() == 2 ? CellType::tri6 : CellType::tet10;
  out.coords.assign(d.coordinates.begin(), d.coordinates.end());
  out.cells.assign(d.cell_nodes.begin(), d.cell_nodes.end());
  out.source = m.source();
  return fem::Mesh(std::move(out));
}

TEST(InvalidCellErrors, Tri6FoldedByItsEdgeNodeIsTangledNotInverted) {
  const fem::Mesh good = second_order(fem::mesh::unit_square(CellType::tri3, 4));
  const fem::Mesh bad = fold_by_edge_node(good, 13, "folded.msh");
  ASSERT_EQ(fem::mesh::check(bad).tangled, std::vector<index_t>{13});
  for (int degree : {1, 2}) {  // P1 or P2 on the tri6 geometry
    const std::string msg = assembly_error(bad, degree);
    SCOPED_TRACE(msg);
    EXPECT_TRUE(has(msg, "cell 13 of mesh 'folded.msh' is tangled"));
    EXPECT_TRUE(has(msg, "changes sign"));
    EXPECT_FALSE(has(msg, "reorient the mesh"));
    EXPECT_TRUE(has(msg, "reorienting cannot fix it"));
  }
  EXPECT_TRUE(has(assembly_error(bad, 2, 2), "is tangled"));  // elasticity too
}

TEST(InvalidCellErrors, Tri6FoldedBetweenItsNodesIsTangled) {
  // det J > 0 at the six nodes and the centroid, < 0 near vertex 0 (its edges' nodes pulled back
  // past it): the assembly's quadrature points see the fold, the message classifies it.
  fem::Mesh::Data d;
  d.gdim = 2;
  d.cell_type = CellType::tri6;
  d.coords = {0, 0, 1, 0, 0, 1, -0.1, -0.3, 0.5, 0.5, -0.3, -0.1};
  d.cells = {0, 1, 2, 3, 4, 5};
  d.source = "hidden_fold.msh";
  const fem::Mesh m(std::move(d));
  for (int degree : {1, 2}) {
    const std::string msg = assembly_error(m, degree);
    EXPECT_TRUE(has(msg, "cell 0 of mesh 'hidden_fold.msh' is tangled")) << msg;
  }
}

TEST(InvalidCellErrors, Tet10FoldedByItsEdgeNodeIsTangled) {
  const fem::Mesh good = second_order(fem::mesh::unit_cube(CellType::tet4, 2));
  const fem::Mesh bad = fold_by_edge_node(good, 7, "folded3d.msh");
  ASSERT_EQ(fem::mesh::check(bad).tangled, std::vector<index_t>{7});
  const std::string msg = assembly_error(bad, 2);
  EXPECT_TRUE(has(msg, "cell 7 of mesh 'folded3d.msh' is tangled")) << msg;
  EXPECT_FALSE(has(msg, "reorient the mesh")) << msg;
}

TEST(InvalidCellErrors, MirroredCurvedCellIsInvertedAndReorientingFixesIt) {
  fem::Mesh::Data d = second_order(fem::mesh::unit_square(CellType::tri3, 4)).data();
  const auto order = fem::mesh::mirror_order(CellType::tri6);
  std::array<index_t, 6> cell;
  for (int k = 0; k < 6; ++k) cell[k] = d.cells[6 * 9 + order[k]];
  std::copy(cell.begin(), cell.end(), d.cells.begin() + 6 * 9);
  d.source = "mirrored.msh";
  const fem::Mesh bad(std::move(d));
  const std::string msg = assembly_error(bad, 2);
  EXPECT_TRUE(has(msg, "cell 9 of mesh 'mirrored.msh' is inverted")) << msg;
  EXPECT_TRUE(has(msg, "reorient the mesh")) << msg;
  EXPECT_EQ(assembly_error(fem::mesh::reorient(bad), 2), "");
}

TEST(InvalidCellErrors, CollapsedCellIsDegenerate) {
  fem::Mesh::Data d = fem::mesh::unit_square(CellType::tri3, 3).data();
  d.cells[3 * 4 + 2] = d.cells[3 * 4 + 1];  // a repeated vertex: zero area
  d.source = "collapsed.msh";
  const std::string msg = assembly_error(fem::Mesh(std::move(d)), 1);
  EXPECT_TRUE(has(msg, "cell 4 of mesh 'collapsed.msh' is degenerate")) << msg;
  EXPECT_FALSE(has(msg, "reorient the mesh")) << msg;
}

fem::Mesh bow_tie() {
  fem::Mesh::Data d = fem::mesh::unit_square(CellType::quad4, 3).data();
  std::swap(d.cells[4 * 5 + 2], d.cells[4 * 5 + 3]);  // cell 5: a bow tie, det J changes sign
  d.source = "bowtie.msh";
  return fem::Mesh(std::move(d));
}

TEST(InvalidCellErrors, BowTieQuadrilateralIsTangledOnHostAndDevice) {
  const std::string msg = assembly_error(bow_tie(), 1);
  EXPECT_TRUE(has(msg, "cell 5 of mesh 'bowtie.msh' is tangled")) << msg;
  EXPECT_FALSE(has(msg, "reorient the mesh")) << msg;
  // The device path (run on the host's debug device) reports the same class.
  const Assembler device(FunctionSpace(std::make_shared<const fem::Mesh>(bow_tie()), 1),
                         fem::gpu::Executor::debug_device());
  std::vector<double> values(device.pattern()->nnz());
  try {
    device.matrix_into(Diffusion{}, values);
    FAIL() << "no error for a bow-tie cell on the device path";
  } catch (const fem::InvalidArgument& e) {
    EXPECT_TRUE(has(e.what(), "cell 5 of mesh 'bowtie.msh' is tangled")) << e.what();
  }
}

}  // namespace
