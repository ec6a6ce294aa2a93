// Mesh checks: clean generated meshes (first and second order), injected inverted, degenerate,
// duplicate and unreferenced nodes, tagged interior and untagged boundary facets; reorient().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fem/mesh/check.hpp"
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
  const CellType first = fem::test::first_order_of(m.cell_type());
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

TEST(Check, CollapsedAndTangledCellsAreDegenerate) {
  const fem::Mesh good = fm::unit_square(CellType::tri3, 3);
  fem::Mesh::Data d = good.data();
  d.cells[3 * 4 + 2] = d.cells[3 * 4 + 1];  // cell 4 has a repeated vertex: zero area
  auto r = fm::check(fem::Mesh(d));
  EXPECT_EQ(r.degenerate, std::vector<index_t>{4});
  EXPECT_TRUE(r.inverted.empty());

  fem::Mesh::Data q = fm::unit_square(CellType::quad4, 2).data();
  std::swap(q.cells[0 * 4 + 2], q.cells[0 * 4 + 3]);  // bow-tie quad: determinant changes sign
  r = fm::check(fem::Mesh(q));
  EXPECT_EQ(r.degenerate, std::vector<index_t>{0});
  EXPECT_TRUE(r.inverted.empty());
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
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 8);
}

}  // namespace
