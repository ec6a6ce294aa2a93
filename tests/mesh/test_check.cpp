// Mesh checks: clean generated meshes (first and second order), injected inverted, degenerate
// and tangled cells (second-order cells folded by their edge nodes, also where every node and
// corner looks fine), duplicate and unreferenced nodes, tagged interior and untagged boundary
// facets; reorient(), which flips inverted cells and leaves tangled ones alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "fem/mesh/check.hpp"
#include "fem/mesh/read.hpp"
#include "fem/reference_cell.hpp"
#include "test_check_util.hpp"

namespace {

using fem::CellType;
using fem::index_t;
namespace fm = fem::mesh;

double min_det(const fem::Mesh& m) {
  double lo = INFINITY;
  for (index_t c = 0; c < m.num_cells(); ++c)
    for (double d : fm::corner_determinants(m, c)) lo = std::min(lo, d);
  return lo;
}

// Every node of every cell where the first-order map of the cell's corners puts it (straight cells).
void expect_consistent_nodes(const fem::Mesh& m) {
  const CellType first = fem::first_order(m.cell_type());
  const auto ref = fem::reference_nodes(m.cell_type());
  for (index_t c = 0; c < m.num_cells(); ++c)
    for (int k = 0; k < m.nodes_per_cell(); ++k) {
      const auto x = fem::test::map_point(m, c, first, ref[k]);
      for (int d = 0; d < m.gdim(); ++d)
        ASSERT_NEAR(m.node(m.cell(c)[k])[d], x[d], 1e-12) << "cell " << c << " node " << k;
    }
}

TEST(Check, GeneratedMeshesOfEveryTypeAreClean) {
  for (CellType t : fem::test::all_types()) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh m = fem::test::small_mesh(t);
    const auto r = fm::check(m);
    EXPECT_TRUE(r.ok()) << r.summary();
    EXPECT_TRUE(r.untagged_boundary_facets.empty()) << r.summary();
    EXPECT_EQ(r.boundary_facets, static_cast<std::size_t>(m.num_facets()));
    EXPECT_GT(min_det(m), 0.0);
  }
}

TEST(Check, BoundaryFacetCountsOfStructuredMeshes) {
  const index_t n = 5;
  EXPECT_EQ(fm::check(fm::unit_square(CellType::tri3, n)).boundary_facets, 4u * n);
  EXPECT_EQ(fm::check(fm::unit_square(CellType::quad4, n)).boundary_facets, 4u * n);
  EXPECT_EQ(fm::check(fm::unit_cube(CellType::hex8, n)).boundary_facets, 6u * n * n);
  EXPECT_EQ(fm::check(fm::unit_cube(CellType::tet4, n)).boundary_facets, 12u * n * n);
}

TEST(Check, DeterminantsAreTheCellMeasureScale) {
  // Affine cells: det J is constant; sum over cells of det × reference measure = total measure.
  const fem::Mesh tet = fm::box(CellType::tet4, 3, 2, 4, {0, 0, 0}, {2, 1, 3});
  double vol = 0;
  for (index_t c = 0; c < tet.num_cells(); ++c) vol += fm::corner_determinants(tet, c)[0] / 6.0;
  EXPECT_NEAR(vol, 6.0, 1e-12);
  const fem::Mesh hex = fem::test::small_mesh(CellType::hex27);
  double hv = 0;
  for (index_t c = 0; c < hex.num_cells(); ++c) hv += fm::corner_determinants(hex, c).back() * 8.0;
  EXPECT_NEAR(hv, 1.0 * 3.0 * 1.5, 1e-12);
}

// Swap two vertices of cell c so that it is mirrored.
fem::Mesh swap_vertices(const fem::Mesh& m, index_t c) {
  fem::Mesh::Data d = m.data();
  auto* v = d.cells.data() + static_cast<std::size_t>(c) * m.nodes_per_cell();
  switch (m.cell_type()) {
    case CellType::line2:
      std::swap(v[0], v[1]);
      break;
    case CellType::tri3:
    case CellType::tet4:
      std::swap(v[1], v[2]);
      break;
    case CellType::quad4:
      std::swap(v[1], v[3]);
      break;
    case CellType::hex8:
      for (int k = 0; k < 4; ++k) std::swap(v[k], v[k + 4]);
      break;
    default:
      ADD_FAILURE();
  }
  return fem::Mesh(std::move(d));
}

TEST(Check, OneSwappedCellIsExactlyTheInvertedOneAndReorientFixesIt) {
  for (CellType t : {CellType::line2, CellType::tri3, CellType::quad4, CellType::tet4, CellType::hex8}) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh good = fem::test::small_mesh(t);
    const index_t bad = good.num_cells() / 2;
    const fem::Mesh m = swap_vertices(good, bad);
    const auto r = fm::check(m);
    EXPECT_EQ(r.inverted, std::vector<index_t>{bad});
    EXPECT_TRUE(r.degenerate.empty());
    EXPECT_FALSE(r.ok());
    const fem::Mesh fixed = fm::reorient(m);
    EXPECT_TRUE(fm::check(fixed).ok()) << fm::check(fixed).summary();
    EXPECT_GT(min_det(fixed), 0.0);
    // the same cell: same set of nodes, and the other cells untouched
    for (index_t c = 0; c < m.num_cells(); ++c) {
      auto a = fixed.cell(c), b = m.cell(c);
      if (c != bad) {
        EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
        continue;
      }
      std::vector<index_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
      std::sort(sa.begin(), sa.end());
      std::sort(sb.begin(), sb.end());
      EXPECT_EQ(sa, sb);
    }
  }
}

TEST(Check, MirroredSecondOrderMeshesAreAllInvertedAndReorientKeepsEdgeNodesConsistent) {
  for (CellType t : fem::test::all_types()) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh good = fem::test::small_mesh(t);
    fem::Mesh::Data d = good.data();
    for (std::size_t i = 0; i < d.coords.size(); i += d.gdim) d.coords[i] = -d.coords[i];  // x → -x
    const fem::Mesh mirrored(std::move(d));
    const auto r = fm::check(mirrored);
    EXPECT_EQ(r.inverted.size(), static_cast<std::size_t>(mirrored.num_cells()));
    EXPECT_TRUE(r.degenerate.empty());
    const fem::Mesh fixed = fm::reorient(mirrored);
    EXPECT_TRUE(fm::check(fixed).ok()) << fm::check(fixed).summary();
    EXPECT_GT(min_det(fixed), 0.0);
    expect_consistent_nodes(fixed);
  }
}

TEST(Check, MirrorOrderIsAnInvolutivePermutationForEveryType) {
  for (CellType t : fem::test::all_types()) {
    const auto o = fm::mirror_order(t);
    ASSERT_EQ(static_cast<int>(o.size()), cell_info(t).num_nodes);
    std::vector<int> s(o.begin(), o.end());
    std::sort(s.begin(), s.end());
    for (std::size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i], static_cast<int>(i)) << cell_info(t).name;
    for (std::size_t i = 0; i < o.size(); ++i) EXPECT_EQ(o[o[i]], static_cast<int>(i)) << cell_info(t).name;
  }
}

TEST(Check, CollapsedCellIsDegenerateAndBowTieQuadIsTangled) {
  const fem::Mesh good = fm::unit_square(CellType::tri3, 3);
  fem::Mesh::Data d = good.data();
  d.cells[3 * 4 + 2] = d.cells[3 * 4 + 1];  // cell 4 has a repeated vertex: zero area
  auto r = fm::check(fem::Mesh(d));
  EXPECT_EQ(r.degenerate, std::vector<index_t>{4});
  EXPECT_TRUE(r.inverted.empty());
  EXPECT_TRUE(r.tangled.empty());

  fem::Mesh::Data q = fm::unit_square(CellType::quad4, 2).data();
  std::swap(q.cells[0 * 4 + 2], q.cells[0 * 4 + 3]);  // bow-tie quad: determinant changes sign
  r = fm::check(fem::Mesh(q));
  EXPECT_EQ(r.tangled, std::vector<index_t>{0});
  EXPECT_TRUE(r.degenerate.empty());
  EXPECT_TRUE(r.inverted.empty());
  EXPECT_FALSE(r.ok());
}

// Many cells with det J ≈ 0 everywhere (every node of a cell on one line or plane, tilted so
// that det J is rounding noise of either sign, not an exact zero) and hexahedra with one edge
// collapsed to a point (det J = 0 along that edge, of one sign elsewhere; also mirrored): all
// degenerate, none tangled or inverted, and reorient() leaves them alone. The Bernstein bounds of
// such cells never leave ±tol, which once cost up to 4096 subdivisions per cell (11 ms a cell).
TEST(Check, ManyFlatAndCollapsedCellsAreAllDegenerateNoneTangled) {
  for (CellType t : fem::test::all_types()) {
    SCOPED_TRACE(cell_info(t).name);
    fem::Mesh::Data d = fem::test::small_mesh(t, 4).data();
    const int g = d.gdim;
    for (std::size_t i = 0; i < d.coords.size(); i += g) {
      double* x = &d.coords[i];
      if (g == 1) x[0] = 0.5;
      if (g == 2) x[1] = 0.3 * x[0] + 0.1;
      if (g == 3) x[2] = 0.3 * x[0] + 0.7 * x[1] - 0.2;
    }
    const fem::Mesh m(std::move(d));
    const auto r = fm::check(m);
    EXPECT_EQ(r.degenerate.size(), static_cast<std::size_t>(m.num_cells())) << r.summary();
    EXPECT_TRUE(r.tangled.empty()) << r.summary();
    EXPECT_TRUE(r.inverted.empty()) << r.summary();
    const fem::Mesh same = fm::reorient(m);
    EXPECT_TRUE(std::ranges::equal(same.cells(), m.cells()));
  }
  // Unit cubes with the edge of nodes 1 and 5 collapsed into node 1, half of them mirrored.
  fem::Mesh::Data d;
  d.gdim = 3;
  d.cell_type = CellType::hex8;
  d.source = "collapsed hexahedra";
  const int cells = 200;
  const auto order = fm::mirror_order(CellType::hex8);
  for (int c = 0; c < cells; ++c) {
    const auto ref = fem::reference_nodes(CellType::hex8);
    const index_t first = static_cast<index_t>(d.coords.size() / 3);
    for (int k = 0; k < 8; ++k) {
      const auto& x = ref[k == 5 ? 1 : k];
      d.coords.insert(d.coords.end(), {x[0] + 3.0 * c, x[1], x[2]});
    }
    for (int k = 0; k < 8; ++k) d.cells.push_back(first + (c % 2 ? order[k] : k));
  }
  const fem::Mesh m(std::move(d));
  const auto r = fm::check(m);
  EXPECT_EQ(r.degenerate.size(), static_cast<std::size_t>(cells)) << r.summary();
  EXPECT_TRUE(r.tangled.empty()) << r.summary();
  EXPECT_TRUE(r.inverted.empty()) << r.summary();
}

// A copy of m in which cell c alone has its node `local` moved to x (a new node: the cells
// sharing the old node keep it).
fem::Mesh move_cell_node(const fem::Mesh& m, index_t c, int local, const std::array<double, 3>& x) {
  fem::Mesh::Data d = m.data();
  const index_t fresh = m.num_nodes();
  for (int k = 0; k < m.gdim(); ++k) d.coords.push_back(x[k]);
  d.cells[static_cast<std::size_t>(c) * m.nodes_per_cell() + local] = fresh;
  return fem::Mesh(std::move(d));
}

std::array<double, 3> node_of(const fem::Mesh& m, index_t c, int local) {
  std::array<double, 3> x{0, 0, 0};
  for (int k = 0; k < m.gdim(); ++k) x[k] = m.node(m.cell(c)[local])[k];
  return x;
}

TEST(Check, SecondOrderCellFoldedByAnEdgeNodePushedAcrossItIsTangled) {
  // The node of the cell's first edge pushed through the cell to beyond the opposite side
  // (mirrored through the centroid of the vertices, twice as far): the vertices are those of a
  // good cell, the map folds it. Not inverted (reorienting cannot fix it), not degenerate.
  for (CellType t : {CellType::tri6, CellType::quad9, CellType::tet10, CellType::hex27}) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh good = fem::test::small_mesh(t);
    const index_t bad = good.num_cells() / 2;
    const int nv = good.cell_info().num_vertices;
    std::array<double, 3> centre{0, 0, 0}, x;
    for (int v = 0; v < nv; ++v)
      for (int k = 0; k < 3; ++k) centre[k] += node_of(good, bad, v)[k] / nv;
    const auto mid = node_of(good, bad, nv);  // the node of local edge 0
    for (int k = 0; k < 3; ++k) x[k] = centre[k] + 2 * (centre[k] - mid[k]);
    const fem::Mesh m = move_cell_node(good, bad, nv, x);
    const auto r = fm::check(m);
    EXPECT_EQ(r.tangled, std::vector<index_t>{bad}) << r.summary();
    EXPECT_TRUE(r.inverted.empty()) << r.summary();
    EXPECT_TRUE(r.degenerate.empty()) << r.summary();
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.summary().find("tangled cells"), std::string::npos);
  }
}

// One tri6 on the reference triangle with its three edge nodes at e3, e4, e5.
fem::Mesh one_tri6(std::array<double, 2> e3, std::array<double, 2> e4, std::array<double, 2> e5) {
  fem::Mesh::Data d;
  d.gdim = 2;
  d.cell_type = CellType::tri6;
  d.coords = {0, 0, 1, 0, 0, 1, e3[0], e3[1], e4[0], e4[1], e5[0], e5[1]};
  d.cells = {0, 1, 2, 3, 4, 5};
  d.source = "one_tri6";
  return fem::Mesh(std::move(d));
}

TEST(Check, Tri6FoldedBetweenItsNodesIsTangled) {
  // det J is positive at the six nodes and the centroid (and so at every corner), but negative
  // near vertex 0 between it and its edges' nodes, which were pulled back past the vertex: the
  // Bernstein bound and its subdivision find the fold that samples at the nodes miss.
  const fem::Mesh m = one_tri6({-0.1, -0.3}, {0.5, 0.5}, {-0.3, -0.1});
  for (double d : fm::corner_determinants(m, 0)) EXPECT_GT(d, 0.1);
  const auto r = fm::check(m);
  EXPECT_EQ(r.tangled, std::vector<index_t>{0}) << r.summary();
  EXPECT_TRUE(r.inverted.empty());
  EXPECT_TRUE(r.degenerate.empty());
}

TEST(Check, StronglyCurvedValidTri6IsNotFlagged) {
  // det J ≥ 0.89 everywhere, but one of its Bernstein coefficients is -0.98: the cell has to be
  // subdivided to be certified, and must not be reported.
  const fem::Mesh m = one_tri6({0.53, 0.32}, {1.03, 0.56}, {-0.19, 0.71});
  const auto r = fm::check(m);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_TRUE(r.tangled.empty());
}

TEST(Check, CurvedSampleMeshIsValid) {
  // meshes/annulus_p2: Gmsh's second-order annulus, every boundary edge curved.
  const auto r = fm::check(fm::read(FEM_MESHES_DIR "/annulus_p2_v41.msh"));
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_TRUE(r.tangled.empty()) << r.summary();
}

TEST(Check, ReorientFlipsInvertedCellsAndLeavesTangledOnesAlone) {
  for (CellType t : {CellType::tri6, CellType::tet10, CellType::quad4}) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh good = fem::test::small_mesh(t);
    const index_t inverted = 1, tangled = good.num_cells() / 2;
    fem::Mesh::Data d = good.data();
    const int n = good.nodes_per_cell();
    // cell `inverted`: its nodes in mirrored order
    const auto order = fm::mirror_order(t);
    for (int k = 0; k < n; ++k) d.cells[inverted * n + k] = good.cell(inverted)[order[k]];
    // cell `tangled`: folded (an edge node through the cell; a bow tie for the quadrilateral)
    if (t == CellType::quad4) {
      std::swap(d.cells[tangled * n + 2], d.cells[tangled * n + 3]);
    } else {
      const int nv = good.cell_info().num_vertices;
      std::array<double, 3> centre{0, 0, 0};
      for (int v = 0; v < nv; ++v)
        for (int k = 0; k < 3; ++k) centre[k] += node_of(good, tangled, v)[k] / nv;
      const auto mid = node_of(good, tangled, nv);
      for (int k = 0; k < d.gdim; ++k) d.coords.push_back(centre[k] + 2 * (centre[k] - mid[k]));
      d.cells[tangled * n + nv] = good.num_nodes();
    }
    const fem::Mesh m(std::move(d));
    const auto before = fm::check(m);
    EXPECT_EQ(before.inverted, std::vector<index_t>{inverted}) << before.summary();
    EXPECT_EQ(before.tangled, std::vector<index_t>{tangled}) << before.summary();
    const fem::Mesh fixed = fm::reorient(m);
    const auto after = fm::check(fixed);
    EXPECT_TRUE(after.inverted.empty()) << after.summary();
    EXPECT_EQ(after.tangled, std::vector<index_t>{tangled}) << after.summary();
    // the tangled cell keeps its node order; the inverted one got the good cell's order back
    EXPECT_TRUE(std::ranges::equal(fixed.cell(tangled), m.cell(tangled)));
    EXPECT_TRUE(std::ranges::equal(fixed.cell(inverted), good.cell(inverted)));
  }
}

TEST(Check, InjectedDuplicateAndUnreferencedNodesAreFound) {
  for (CellType t : {CellType::tri3, CellType::tet4, CellType::hex27}) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh good = fem::test::small_mesh(t);
    fem::Mesh::Data d = good.data();
    const int g = d.gdim;
    const index_t n = good.num_nodes();
    const index_t victim = good.cell(1)[0];
    // a copy of node `victim`, a hair away, taking its place in cell 1 only
    for (int k = 0; k < g; ++k) d.coords.push_back(good.node(victim)[k] * (1 + 1e-14));
    d.cells[static_cast<std::size_t>(good.nodes_per_cell())] = n;
    // a node far away that no cell uses
    for (int k = 0; k < g; ++k) d.coords.push_back(10.0 + k);
    const auto r = fm::check(fem::Mesh(d));
    ASSERT_EQ(r.duplicate_nodes.size(), 1u);
    EXPECT_EQ(r.duplicate_nodes[0], std::make_pair(n, victim));
    EXPECT_EQ(r.unreferenced_nodes, std::vector<index_t>{n + 1});
    EXPECT_FALSE(r.ok());

    // beyond the tolerance: no longer a duplicate
    for (int k = 0; k < g; ++k) d.coords[static_cast<std::size_t>(n) * g + k] = good.node(victim)[k] + 1e-6;
    EXPECT_TRUE(fm::check(fem::Mesh(d)).duplicate_nodes.empty());
  }
}

TEST(Check, ExactDuplicatesWithZeroTolerance) {
  fem::Mesh::Data d = fm::unit_square(CellType::quad4, 4).data();
  const index_t n = static_cast<index_t>(d.coords.size() / 2);
  d.coords.push_back(d.coords[2 * 7]);
  d.coords.push_back(d.coords[2 * 7 + 1]);
  d.coords.push_back(d.coords[2 * 7]);
  d.coords.push_back(d.coords[2 * 7 + 1]);
  fm::CheckOptions o;
  o.duplicate_tolerance = 0;
  const auto r = fm::check(fem::Mesh(d), o);
  ASSERT_EQ(r.duplicate_nodes.size(), 2u);
  EXPECT_EQ(r.duplicate_nodes[0], std::make_pair(n, index_t{7}));
  EXPECT_EQ(r.duplicate_nodes[1], std::make_pair(n + 1, index_t{7}));
}

TEST(Check, TaggedInteriorAndUntaggedBoundaryFacets) {
  for (CellType t : {CellType::tri3, CellType::tri6, CellType::tet4, CellType::hex8}) {
    SCOPED_TRACE(cell_info(t).name);
    const fem::Mesh good = fem::test::small_mesh(t);
    fem::Mesh::Data d = good.data();
    const int npf = good.nodes_per_facet();
    // drop the last tagged facet: that boundary facet is now untagged
    std::vector<index_t> dropped(d.facets.end() - npf, d.facets.end());
    d.facets.resize(d.facets.size() - npf);
    d.facet_tags.pop_back();
    // tag an interior facet: a facet of the cell in the middle that is shared with another cell
    const auto lf = fem::local_facets(t);
    const index_t mid = good.num_cells() / 2;
    std::vector<index_t> interior;
    for (int f = 0; f < lf.count && interior.empty(); ++f) {
      std::vector<index_t> v;
      for (int k : lf[f]) v.push_back(good.cell(mid)[k]);
      std::vector<index_t> sv = v;
      std::sort(sv.begin(), sv.end());
      int owners = 0;
      for (index_t c = 0; c < good.num_cells(); ++c) {
        std::vector<index_t> cv(good.cell(c).begin(), good.cell(c).begin() + good.cell_info().num_vertices);
        std::sort(cv.begin(), cv.end());
        owners += std::includes(cv.begin(), cv.end(), sv.begin(), sv.end());
      }
      if (owners == 2) interior = v;
    }
    ASSERT_FALSE(interior.empty());
    // second-order facet nodes are not looked at by the check: pad with the first vertex
    interior.resize(npf, interior[0]);
    d.facets.insert(d.facets.end(), interior.begin(), interior.end());
    d.facet_tags.push_back(42);
    const index_t interior_index = static_cast<index_t>(d.facet_tags.size() - 1);
    const auto r = fm::check(fem::Mesh(std::move(d)));
    EXPECT_EQ(r.tagged_interior_facets, std::vector<index_t>{interior_index});
    ASSERT_EQ(r.untagged_boundary_facets.size(), 1u);
    const auto [cell, local] = r.untagged_boundary_facets[0];
    std::vector<index_t> got;
    for (int k : lf[local]) got.push_back(good.cell(cell)[k]);
    std::vector<index_t> want(dropped.begin(), dropped.begin() + good.facet_info().num_vertices);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
    EXPECT_FALSE(r.ok());
  }
}

TEST(Check, FacetsOfNoCellAreStray) {
  fem::Mesh::Data d = fm::unit_square(CellType::tri3, 2).data();
  d.facets.insert(d.facets.end(), {0, 8});  // the diagonal corner to corner: no edge of the mesh
  d.facet_tags.push_back(9);
  const auto r = fm::check(fem::Mesh(std::move(d)));
  EXPECT_EQ(r.stray_facets, std::vector<index_t>{8});
  EXPECT_TRUE(r.tagged_interior_facets.empty());
  EXPECT_FALSE(r.ok());
}

TEST(Check, UntaggedBoundaryIsAWarningNotAnError) {
  fem::Mesh::Data d = fm::unit_square(CellType::quad4, 3).data();
  d.facets.clear();
  d.facet_tags.clear();
  const auto r = fm::check(fem::Mesh(std::move(d)));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.untagged_boundary_facets.size(), 12u);
}

TEST(Check, SummaryHasOneLinePerKindOfFinding) {
  const auto r = fm::check(swap_vertices(fm::unit_square(CellType::tri3, 2), 3));
  const std::string s = r.summary();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 9);
}

}  // namespace
