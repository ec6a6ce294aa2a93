// Mesh partitions: every cell in a part, every node owned by a part that touches it, balanced
// and deterministic METIS parts, second-order nodes, and statistics checked against counts made
// here independently (and against splits whose cut is known exactly).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "fem/error.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/partition.hpp"
#include "fem/mesh/read.hpp"
#include "test_check_util.hpp"

namespace {

using fem::CellType;
using fem::index_t;
using fem::Mesh;
namespace fm = fem::mesh;

bool have_metis() {
  try {
    fm::partition(fm::unit_square(CellType::tri3, 2), 2);
    return true;
  } catch (const fem::NotCompiled&) {
    return false;
  }
}

#define REQUIRE_METIS() \
  if (!have_metis()) GTEST_SKIP() << "this build has no METIS"

/// The parts touching each node (sorted), by scanning the cells.
std::vector<std::vector<int>> touching_parts(const Mesh& m, const std::vector<int>& cell_part) {
  std::vector<std::set<int>> t(static_cast<std::size_t>(m.num_nodes()));
  for (index_t c = 0; c < m.num_cells(); ++c)
    for (const index_t n : m.cell(c))
      t[static_cast<std::size_t>(n)].insert(cell_part[static_cast<std::size_t>(c)]);
  std::vector<std::vector<int>> out;
  for (const auto& s : t) out.emplace_back(s.begin(), s.end());
  return out;
}

/// Every cell in 0..parts-1, every referenced node owned by a part touching it, -1 otherwise.
void expect_valid(const Mesh& m, const fm::Partition& p, int parts) {
  EXPECT_EQ(p.parts, parts);
  ASSERT_EQ(p.cell_part.size(), static_cast<std::size_t>(m.num_cells()));
  ASSERT_EQ(p.node_owner.size(), static_cast<std::size_t>(m.num_nodes()));
  for (const int q : p.cell_part) {
    ASSERT_GE(q, 0);
    ASSERT_LT(q, parts);
  }
  const auto touching = touching_parts(m, p.cell_part);
  for (std::size_t n = 0; n < touching.size(); ++n) {
    const auto& t = touching[n];
    if (t.empty())
      EXPECT_EQ(p.node_owner[n], -1) << "node " << n << " is in no cell";
    else
      EXPECT_TRUE(std::binary_search(t.begin(), t.end(), p.node_owner[n]))
          << "node " << n << " is owned by part " << p.node_owner[n] << ", which does not touch it";
  }
}

/// The lowest part touching every node (-1 for none): a valid owner for hand-made partitions.
std::vector<int> lowest_owners(const Mesh& m, const std::vector<int>& cell_part) {
  std::vector<int> owner;
  for (const auto& t : touching_parts(m, cell_part)) owner.push_back(t.empty() ? -1 : t.front());
  return owner;
}

/// Cells split by the plane x = 0.5 through their centroid: part 0 left, part 1 right.
fm::Partition split_at_half(const Mesh& m) {
  fm::Partition p;
  p.parts = 2;
  const int nv = m.cell_info().num_vertices;
  for (index_t c = 0; c < m.num_cells(); ++c) {
    double x = 0;
    for (int k = 0; k < nv; ++k) x += m.node(m.cell(c)[static_cast<std::size_t>(k)])[0];
    p.cell_part.push_back(x / nv < 0.5 ? 0 : 1);
  }
  p.node_owner = lowest_owners(m, p.cell_part);
  return p;
}

/// Two copies of `m` side by side (the second shifted by 2 in x): a mesh whose dual graph is not connected.
Mesh two_copies(const Mesh& m) {
  Mesh::Data d = m.data();
  const auto nn = m.num_nodes();
  for (index_t i = 0; i < nn; ++i)
    for (int k = 0; k < m.gdim(); ++k) d.coords.push_back(m.node(i)[k] + (k == 0 ? 2.0 : 0.0));
  for (const index_t n : m.cells()) d.cells.push_back(n + nn);
  d.cell_tags.insert(d.cell_tags.end(), m.cell_tags().begin(), m.cell_tags().end());
  for (const index_t n : m.facets()) d.facets.push_back(n + nn);
  d.facet_tags.insert(d.facet_tags.end(), m.facet_tags().begin(), m.facet_tags().end());
  return Mesh(std::move(d));
}

/// Statistics recounted from their definitions and compared with partition_stats.
void expect_stats_add_up(const Mesh& m, const fm::Partition& p) {
  const auto s = fm::partition_stats(m, p);
  const int P = p.parts;
  ASSERT_EQ(s.parts, P);
  ASSERT_EQ(s.cells.size(), static_cast<std::size_t>(P));
  ASSERT_EQ(s.owned_nodes.size(), static_cast<std::size_t>(P));
  ASSERT_EQ(s.ghost_nodes.size(), static_cast<std::size_t>(P));
  ASSERT_EQ(s.neighbours.size(), static_cast<std::size_t>(P));

  EXPECT_EQ(std::accumulate(s.cells.begin(), s.cells.end(), std::int64_t{0}), m.num_cells());
  const auto touching = touching_parts(m, p.cell_part);
  std::vector<index_t> owned(P, 0), ghosts(P, 0);
  std::vector<std::set<int>> nbrs(P);
  index_t referenced = 0, interface = 0, ghost_total = 0;
  for (std::size_t n = 0; n < touching.size(); ++n) {
    const auto& t = touching[n];
    if (t.empty()) continue;
    ++referenced;
    ++owned[p.node_owner[n]];
    for (const int q : t)
      if (q != p.node_owner[n]) ++ghosts[q];
    ghost_total += static_cast<index_t>(t.size()) - 1;  // every toucher but the owner holds a ghost
    if (t.size() > 1) ++interface;
    for (const int a : t)
      for (const int b : t)
        if (a != b) nbrs[a].insert(b);
  }
  EXPECT_EQ(std::accumulate(s.owned_nodes.begin(), s.owned_nodes.end(), std::int64_t{0}), referenced);
  for (int q = 0; q < P; ++q) {
    EXPECT_EQ(s.owned_nodes[q], owned[q]) << "part " << q;
    EXPECT_EQ(s.ghost_nodes[q], ghosts[q]) << "part " << q;
    EXPECT_EQ(s.neighbours[q], static_cast<int>(nbrs[q].size())) << "part " << q;
  }
  EXPECT_EQ(s.interface_nodes, interface);
  EXPECT_EQ(s.total_ghost_nodes, ghost_total);
  EXPECT_EQ(std::accumulate(s.ghost_nodes.begin(), s.ghost_nodes.end(), std::int64_t{0}),
            s.total_ghost_nodes);
  // An interface node has at least one ghost copy and at most P - 1.
  EXPECT_GE(s.total_ghost_nodes, s.interface_nodes);
  EXPECT_LE(static_cast<std::int64_t>(s.total_ghost_nodes), std::int64_t{P - 1} * s.interface_nodes);

  const double mean_cells = static_cast<double>(m.num_cells()) / P;
  EXPECT_DOUBLE_EQ(s.cell_imbalance, *std::max_element(s.cells.begin(), s.cells.end()) / mean_cells);
  EXPECT_DOUBLE_EQ(s.node_imbalance,
                   *std::max_element(s.owned_nodes.begin(), s.owned_nodes.end()) / (double(referenced) / P));
  EXPECT_GE(s.cell_imbalance, 1.0);
  EXPECT_GE(s.node_imbalance, 1.0);
  if (P == 1) {
    EXPECT_EQ(s.edge_cut, 0);
    EXPECT_EQ(s.interface_nodes, 0);
    EXPECT_EQ(s.total_ghost_nodes, 0);
  }
  // Cut pairs exist exactly when some node is shared (for meshes whose parts share facets).
  EXPECT_EQ(s.edge_cut == 0, s.interface_nodes == 0) << "edge cut " << s.edge_cut;
}

TEST(Partition, GeneratedMeshesBalancedWithinFivePercent) {
  REQUIRE_METIS();
  const Mesh meshes[] = {fm::unit_square(CellType::tri3, 40), fm::unit_square(CellType::quad4, 60),
                         fm::unit_cube(CellType::tet4, 8), fm::unit_cube(CellType::hex8, 15)};
  for (const Mesh& m : meshes) {
    ASSERT_GE(m.num_cells(), 3000);
    for (const int parts : {2, 3, 4, 7}) {
      SCOPED_TRACE(std::string(m.cell_info().name) + ", " + std::to_string(parts) + " parts");
      const auto p = fm::partition(m, parts);
      expect_valid(m, p, parts);
      std::vector<index_t> count(parts, 0);
      for (const int q : p.cell_part) ++count[q];
      const double mean = static_cast<double>(m.num_cells()) / parts;
      for (int q = 0; q < parts; ++q) {
        EXPECT_GE(count[q], 0.95 * mean) << "part " << q;
        EXPECT_LE(count[q], 1.05 * mean) << "part " << q;
      }
    }
  }
}

TEST(Partition, Deterministic) {
  REQUIRE_METIS();
  for (const Mesh& m : {fm::unit_square(CellType::tri3, 30), fm::unit_cube(CellType::tet4, 6)}) {
    const auto a = fm::partition(m, 5), b = fm::partition(m, 5);
    EXPECT_EQ(a.cell_part, b.cell_part);
    EXPECT_EQ(a.node_owner, b.node_owner);
  }
}

TEST(Partition, OnePartNeedsNoMetis) {
  for (const Mesh& m : {fm::unit_square(CellType::quad4, 7), fm::unit_cube(CellType::tet4, 3)}) {
    const auto p = fm::partition(m, 1);
    expect_valid(m, p, 1);
    EXPECT_TRUE(std::all_of(p.cell_part.begin(), p.cell_part.end(), [](int q) { return q == 0; }));
    EXPECT_TRUE(std::all_of(p.node_owner.begin(), p.node_owner.end(), [](int q) { return q == 0; }));
    expect_stats_add_up(m, p);
    const auto s = fm::partition_stats(m, p);
    EXPECT_EQ(s.cells[0], m.num_cells());
    EXPECT_EQ(s.owned_nodes[0], m.num_nodes());
    EXPECT_EQ(s.neighbours[0], 0);
    EXPECT_DOUBLE_EQ(s.cell_imbalance, 1.0);
    EXPECT_DOUBLE_EQ(s.node_imbalance, 1.0);
  }
}

TEST(Partition, OneCellPerPartNeedsNoMetis) {
  const Mesh m = fm::unit_square(CellType::tri3, 2);  // 8 cells
  const auto p = fm::partition(m, m.num_cells());
  expect_valid(m, p, m.num_cells());
  std::set<int> distinct(p.cell_part.begin(), p.cell_part.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(m.num_cells()));
  expect_stats_add_up(m, p);
}

TEST(Partition, LineCellsMakeContiguousSegments) {
  REQUIRE_METIS();
  const Mesh m = fm::interval(200);
  for (const int parts : {2, 3, 5}) {
    const auto p = fm::partition(m, parts);
    expect_valid(m, p, parts);
    // P connected pieces of a path: exactly P - 1 cut pairs, each sharing one node.
    const auto s = fm::partition_stats(m, p);
    EXPECT_EQ(s.edge_cut, parts - 1);
    EXPECT_EQ(s.interface_nodes, parts - 1);
    EXPECT_EQ(s.total_ghost_nodes, parts - 1);
    expect_stats_add_up(m, p);
  }
}

TEST(Partition, DisconnectedMeshIsPartitionedQuietly) {
  REQUIRE_METIS();
  const Mesh m = two_copies(fm::unit_square(CellType::tri3, 20));
  for (const int parts : {2, 4, 5}) {
    ::testing::internal::CaptureStderr();
    const auto p = fm::partition(m, parts);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    expect_valid(m, p, parts);
    expect_stats_add_up(m, p);
  }
}

TEST(Partition, SecondOrderNodesOwnedByAPartTouchingThemAndBalanced) {
  REQUIRE_METIS();
  std::vector<Mesh> meshes;
  meshes.push_back(fm::read(std::filesystem::path(FEM_MESHES_DIR) / "annulus_p2_v41.msh"));
  meshes.push_back(fem::test::elevate(fm::unit_cube(CellType::tet4, 5), CellType::tet10));
  meshes.push_back(fem::test::elevate(fm::unit_square(CellType::quad4, 12), CellType::quad9));
  for (const Mesh& m : meshes) {
    SCOPED_TRACE(m.source() + " " + std::string(m.cell_info().name));
    ASSERT_EQ(m.cell_info().order, 2);
    std::vector<char> vertex(static_cast<std::size_t>(m.num_nodes()), 0);
    const int nv = m.cell_info().num_vertices;
    for (index_t c = 0; c < m.num_cells(); ++c)
      for (int k = 0; k < nv; ++k) vertex[m.cell(c)[static_cast<std::size_t>(k)]] = 1;
    for (const int parts : {2, 4}) {
      const auto p = fm::partition(m, parts);
      expect_valid(m, p, parts);
      const auto touching = touching_parts(m, p.cell_part);
      std::size_t shared_edge_nodes = 0;
      for (std::size_t n = 0; n < touching.size(); ++n) {
        if (vertex[n] || touching[n].empty()) continue;
        EXPECT_NE(std::find(touching[n].begin(), touching[n].end(), p.node_owner[n]), touching[n].end())
            << "node " << n;
        shared_edge_nodes += touching[n].size() > 1;
      }
      EXPECT_GT(shared_edge_nodes, 0u) << "no edge node on an interface: the check above tested little";
      expect_stats_add_up(m, p);
      // Interface nodes go to the touching part that owns the fewest: owned nodes balance like cells.
      EXPECT_LE(fm::partition_stats(m, p).node_imbalance, 1.1);
    }
  }
}

TEST(Partition, UnreferencedNodesHaveNoOwner) {
  REQUIRE_METIS();
  Mesh::Data d = fm::unit_square(CellType::tri3, 10).data();
  d.coords.insert(d.coords.end(), {5.0, 5.0});
  const Mesh m(std::move(d));
  const auto p = fm::partition(m, 3);
  expect_valid(m, p, 3);
  EXPECT_EQ(p.node_owner.back(), -1);
  expect_stats_add_up(m, p);
  const auto s = fm::partition_stats(m, p);
  EXPECT_EQ(std::accumulate(s.owned_nodes.begin(), s.owned_nodes.end(), std::int64_t{0}), m.num_nodes() - 1);
}

TEST(PartitionStats, StatsAddUpForMetisParts) {
  REQUIRE_METIS();
  for (const Mesh& m : {fm::unit_square(CellType::tri3, 24), fm::unit_cube(CellType::tet4, 6),
                        fm::unit_cube(CellType::hex8, 7)}) {
    SCOPED_TRACE(std::string(m.cell_info().name));
    for (const int parts : {2, 3, 8}) {
      const auto p = fm::partition(m, parts);
      expect_stats_add_up(m, p);
      EXPECT_GT(fm::partition_stats(m, p).edge_cut, 0);
    }
  }
}

TEST(PartitionStats, KnownSplitsAtHalf) {
  // Split by the plane x = 1/2 of a mesh with n cells per side (n even): the cut pairs are the
  // facets on that plane: n segments in 2D (tri3 and quad4 alike), n² squares in 3D, each made of
  // two triangles in the Kuhn split of cubes into tets. The nodes on it are the interface.
  const index_t n = 6;
  struct Case {
    Mesh mesh;
    std::int64_t cut;
    index_t interface;
  };
  const Case cases[] = {{fm::unit_square(CellType::tri3, n), n, n + 1},
                        {fm::unit_square(CellType::quad4, n), n, n + 1},
                        {fm::unit_cube(CellType::hex8, n), n * n, (n + 1) * (n + 1)},
                        {fm::unit_cube(CellType::tet4, n), 2 * n * n, (n + 1) * (n + 1)}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.mesh.cell_info().name));
    const auto p = split_at_half(c.mesh);
    const auto s = fm::partition_stats(c.mesh, p);
    EXPECT_EQ(s.edge_cut, c.cut);
    EXPECT_EQ(s.interface_nodes, c.interface);
    EXPECT_EQ(s.ghost_nodes[0], 0);  // part 0 owns the interface (the lowest part touching it)
    EXPECT_EQ(s.ghost_nodes[1], c.interface);
    EXPECT_EQ(s.neighbours[0], 1);
    EXPECT_EQ(s.neighbours[1], 1);
    EXPECT_DOUBLE_EQ(s.cell_imbalance, 1.0);
    expect_stats_add_up(c.mesh, p);
  }
}

TEST(Partition, BadPartCountsAreInvalidArguments) {
  const Mesh m = fm::unit_square(CellType::tri3, 2);  // 8 cells
  EXPECT_THROW(fm::partition(m, 0), fem::InvalidArgument);
  EXPECT_THROW(fm::partition(m, -3), fem::InvalidArgument);
  try {
    fm::partition(m, 9);
    ADD_FAILURE() << "9 parts of 8 cells were accepted";
  } catch (const fem::InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find('9'), std::string::npos) << what;
    EXPECT_NE(what.find('8'), std::string::npos) << what;
  }
}

TEST(PartitionStats, PartitionsThatDoNotFitAreInvalidArguments) {
  const Mesh m = fm::unit_square(CellType::quad4, 4);
  const auto good = split_at_half(m);
  EXPECT_NO_THROW(fm::partition_stats(m, good));
  auto bad = good;
  bad.cell_part.pop_back();
  EXPECT_THROW(fm::partition_stats(m, bad), fem::InvalidArgument);
  bad = good;
  bad.node_owner.pop_back();
  EXPECT_THROW(fm::partition_stats(m, bad), fem::InvalidArgument);
  bad = good;
  bad.cell_part[0] = 2;
  EXPECT_THROW(fm::partition_stats(m, bad), fem::InvalidArgument);
  bad = good;
  bad.node_owner[0] = 1;  // node 0 (corner x = 0) only touches part 0
  EXPECT_THROW(fm::partition_stats(m, bad), fem::InvalidArgument);
  bad = good;
  bad.node_owner[0] = -1;
  EXPECT_THROW(fm::partition_stats(m, bad), fem::InvalidArgument);
}

}  // namespace
