// Connectivity builders on every executor against references built with sort+unique: the CSR
// pattern and element-to-slot map (2D/3D, P1, P2, Q1, vector blocks), edge numbering, and
// boundary facets (counts, identity with the generator's sides, outward orientation).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <set>

#include "../support/parallel_paths.hpp"
#include "executors.hpp"
#include "fem/error.hpp"
#include "fem/gpu/connectivity.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/reference_cell.hpp"

namespace {

using namespace fem::gpu;
using fem::CellType;
using fem::index_t;
using fem::gpu::testing::Target;

struct DofMap {
  std::vector<index_t> cell_nodes;
  int nodes_per_cell;
  index_t num_nodes;
};

DofMap p1(const fem::Mesh& m) {
  return {std::vector<index_t>(m.cells().begin(), m.cells().end()), m.nodes_per_cell(), m.num_nodes()};
}

// P2 on simplices: vertex DOFs, then one DOF per edge numbered after the vertices.
DofMap p2(const fem::Mesh& m) {
  const auto edges = number_edges(Executor::host(), m);
  const int nv = m.cell_info().num_vertices, ne = static_cast<int>(fem::local_edges(m.cell_type()).size());
  DofMap d{{}, nv + ne, m.num_nodes() + edges.num_edges};
  for (index_t c = 0; c < m.num_cells(); ++c) {
    for (int v = 0; v < nv; ++v) d.cell_nodes.push_back(m.cell(c)[v]);
    for (int e = 0; e < ne; ++e) d.cell_nodes.push_back(m.num_nodes() + edges.cell_edges[c * ne + e]);
  }
  return d;
}

void expect_matches_reference(const Connectivity& conn, const DofMap& d, int bs) {
  // Reference: all (row, col) pairs, sort + unique, plus every diagonal.
  std::vector<std::pair<index_t, index_t>> entries;
  const std::size_t nc = d.cell_nodes.size() / d.nodes_per_cell;
  for (std::size_t c = 0; c < nc; ++c)
    for (int a = 0; a < d.nodes_per_cell; ++a)
      for (int b = 0; b < d.nodes_per_cell; ++b)
        for (int i = 0; i < bs; ++i)
          for (int j = 0; j < bs; ++j)
            entries.emplace_back(d.cell_nodes[c * d.nodes_per_cell + a] * bs + i,
                                 d.cell_nodes[c * d.nodes_per_cell + b] * bs + j);
  for (index_t r = 0; r < d.num_nodes * bs; ++r) entries.emplace_back(r, r);
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());

  const fem::CsrPattern& p = *conn.pattern;
  ASSERT_EQ(p.rows(), d.num_nodes * bs);
  ASSERT_EQ(p.nnz(), entries.size());
  std::size_t k = 0;
  for (index_t r = 0; r < p.rows(); ++r)
    for (auto col : p.row(r)) {
      ASSERT_EQ(entries[k].first, r);
      ASSERT_EQ(entries[k].second, col) << "row " << r;
      ++k;
    }
  // Every element entry's slot holds exactly its (row, col).
  const int n = d.nodes_per_cell * bs;
  ASSERT_EQ(conn.dofs_per_cell, n);
  ASSERT_EQ(conn.element_slots.size(), nc * n * n);
  for (std::size_t c = 0; c < nc; ++c)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const index_t row = d.cell_nodes[c * d.nodes_per_cell + i / bs] * bs + i % bs;
        const index_t col = d.cell_nodes[c * d.nodes_per_cell + j / bs] * bs + j % bs;
        ASSERT_EQ(conn.element_slots[(c * n + i) * n + j], p.find(row, col))
            << "cell " << c << " entry " << i << "," << j;
      }
}

// The host twin's parallel paths even on these small meshes (fem/threads.hpp would run them on
// one thread).
class ConnectivityTest : public ::testing::TestWithParam<Target> {
  fem::testing::ParallelPaths parallel_;
};

TEST_P(ConnectivityTest, PatternAndSlotsMatchSortUnique) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  struct Case {
    const char* name;
    fem::Mesh mesh;
    bool quadratic;
    int bs;
  };
  const Case cases[] = {
      {"P1 triangles", fem::mesh::unit_square(CellType::tri3, 7), false, 1},
      {"Q1 quads", fem::mesh::rectangle(CellType::quad4, 6, 4), false, 1},
      {"P1 tets", fem::mesh::unit_cube(CellType::tet4, 3), false, 1},
      {"Q1 hexes", fem::mesh::unit_cube(CellType::hex8, 3), false, 1},
      {"P2 triangles", fem::mesh::unit_square(CellType::tri3, 5), true, 1},
      {"P2 tets", fem::mesh::unit_cube(CellType::tet4, 2), true, 1},
      {"P1 triangles, 2 components", fem::mesh::unit_square(CellType::tri3, 4), false, 2},
      {"P1 tets, 3 components", fem::mesh::unit_cube(CellType::tet4, 2), false, 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const DofMap d = c.quadratic ? p2(c.mesh) : p1(c.mesh);
    const auto conn = build_connectivity(exec, d.cell_nodes, d.nodes_per_cell, d.num_nodes, c.bs);
    expect_matches_reference(conn, d, c.bs);
  }
}

// Inputs that stress the builder's fast paths: a fan whose centre is shared by 3000 triangles
// (one row of 3001 columns: its pairs overflow any row-local window, so the table falls back to
// hashed home slots; long rows take the chunked row scan), a mesh with its nodes numbered at
// random (no locality at all), and cells that repeat a node.
TEST_P(ConnectivityTest, DegenerateInputsMatchSortUnique) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  DofMap fan{{}, 3, 3001};
  for (index_t i = 1; i <= 3000; ++i) fan.cell_nodes.insert(fan.cell_nodes.end(), {0, i, i % 3000 + 1});
  expect_matches_reference(build_connectivity(exec, fan.cell_nodes, 3, fan.num_nodes, 1), fan, 1);

  auto shuffle_nodes = [](DofMap d) {
    std::vector<index_t> perm(d.num_nodes);
    for (index_t i = 0; i < d.num_nodes; ++i) perm[i] = i;
    std::uint64_t state = 12345;
    for (index_t i = d.num_nodes - 1; i > 0; --i) {  // Fisher-Yates with a fixed LCG
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      std::swap(perm[i], perm[(state >> 33) % (i + 1)]);
    }
    for (auto& v : d.cell_nodes) v = perm[v];
    return d;
  };
  const DofMap shuffled = shuffle_nodes(p1(fem::mesh::unit_cube(CellType::tet4, 4)));
  expect_matches_reference(build_connectivity(exec, shuffled.cell_nodes, 4, shuffled.num_nodes, 2), shuffled,
                           2);
  // Big enough (131k triangles) for the random numbering to overflow the first, tight pair
  // table: the build retries at half the load.
  const DofMap big = shuffle_nodes(p1(fem::mesh::unit_square(CellType::tri3, 256)));
  expect_matches_reference(build_connectivity(exec, big.cell_nodes, 3, big.num_nodes, 1), big, 1);

  const DofMap repeated{{0, 1, 1, 1, 2, 3, 3, 3, 3}, 3, 4};
  expect_matches_reference(build_connectivity(exec, repeated.cell_nodes, 3, repeated.num_nodes, 1), repeated,
                           1);
}

// Called from inside a parallel region (nested parallelism off), the host twin's loops get a
// team of one thread while omp_get_max_threads() still says 4: the scans must follow the team
// OpenMP gives, not the one they asked for (they once left blocks unscanned and overflowed).
// fem::threads_for now runs them serially there; the results must still be right.
TEST(ConnectivityHost, InsideAParallelRegionTheTeamIsSmallerThanAsked) {
  const int saved_threads = omp_get_max_threads(), saved_levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  omp_set_num_threads(4);
  const DofMap d = p1(fem::mesh::unit_square(CellType::tri3, 64));  // 8192 cells: the parallel paths
  std::vector<Connectivity> inside(2);
#pragma omp parallel num_threads(2)
  inside[omp_get_thread_num()] = build_connectivity(Executor::host(), d.cell_nodes, 3, d.num_nodes, 1);
  const auto mesh = fem::mesh::unit_square(CellType::tri3, 16);
  BoundaryFacets facets[2];
#pragma omp parallel num_threads(2)
  facets[omp_get_thread_num()] = find_boundary_facets(Executor::host(), mesh);
  omp_set_num_threads(saved_threads);
  omp_set_max_active_levels(saved_levels);
  for (const auto& conn : inside) expect_matches_reference(conn, d, 1);
  for (const auto& f : facets) EXPECT_EQ(f.cell.size(), 4u * 16u);
}

TEST_P(ConnectivityTest, SameResultOnEveryExecutor) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  const DofMap d = p2(fem::mesh::unit_cube(CellType::tet4, 3));
  const auto here = build_connectivity(exec, d.cell_nodes, d.nodes_per_cell, d.num_nodes, 2);
  const auto host = build_connectivity(Executor::host(), d.cell_nodes, d.nodes_per_cell, d.num_nodes, 2);
  EXPECT_TRUE(here.pattern->same_structure(*host.pattern));
  EXPECT_EQ(here.element_slots, host.element_slots);
}

TEST_P(ConnectivityTest, EdgesAreTheUniqueVertexPairs) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  for (auto type : {CellType::tri3, CellType::quad4, CellType::tet4, CellType::hex8}) {
    const auto m =
        fem::cell_info(type).dim == 2 ? fem::mesh::unit_square(type, 6) : fem::mesh::unit_cube(type, 3);
    const auto edges = number_edges(exec, m);
    const auto local = fem::local_edges(type);
    std::set<std::pair<index_t, index_t>> reference;
    for (index_t c = 0; c < m.num_cells(); ++c)
      for (auto [a, b] : local)
        reference.emplace(std::min(m.cell(c)[a], m.cell(c)[b]), std::max(m.cell(c)[a], m.cell(c)[b]));
    EXPECT_EQ(edges.num_edges, static_cast<index_t>(reference.size())) << fem::cell_info(type).name;
    // Each cell's edge ids name its own vertex pairs; ids follow first appearance.
    index_t next = 0;
    for (index_t c = 0; c < m.num_cells(); ++c)
      for (std::size_t e = 0; e < local.size(); ++e) {
        const index_t id = edges.cell_edges[c * local.size() + e];
        ASSERT_LE(id, next);
        if (id == next) ++next;
        const index_t a = m.cell(c)[local[e][0]], b = m.cell(c)[local[e][1]];
        const index_t u = edges.edge_vertices[2 * id], v = edges.edge_vertices[2 * id + 1];
        EXPECT_EQ(std::minmax(a, b), std::minmax(u, v));
      }
  }
  // Structured triangles: 3n² + 2n edges.
  EXPECT_EQ(number_edges(exec, fem::mesh::unit_square(CellType::tri3, 10)).num_edges, 3 * 100 + 2 * 10);
}

std::array<double, 3> centroid(const fem::Mesh& m, std::span<const index_t> nodes) {
  std::array<double, 3> x{0, 0, 0};
  for (auto v : nodes)
    for (int d = 0; d < m.gdim(); ++d) x[d] += m.node(v)[d] / nodes.size();
  return x;
}

TEST_P(ConnectivityTest, BoundaryFacetsOfBoxesAreTheGeneratedSides) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  const int n = 4;
  struct Case {
    CellType type;
    index_t expected;
  };
  for (auto [type, expected] : {Case{CellType::tet4, 6 * 2 * n * n}, Case{CellType::hex8, 6 * n * n},
                                Case{CellType::tri3, 4 * n}, Case{CellType::quad4, 4 * n}}) {
    const auto m =
        fem::cell_info(type).dim == 2 ? fem::mesh::unit_square(type, n) : fem::mesh::unit_cube(type, n);
    const auto bf = find_boundary_facets(exec, m);
    ASSERT_EQ(bf.size(), expected) << fem::cell_info(type).name;
    // The same facets as the generator's tagged sides.
    std::set<std::vector<index_t>> found, generated;
    for (index_t f = 0; f < bf.size(); ++f) {
      std::vector<index_t> v(bf.vertices.begin() + f * bf.vertices_per_facet,
                             bf.vertices.begin() + (f + 1) * bf.vertices_per_facet);
      std::sort(v.begin(), v.end());
      found.insert(v);
    }
    for (index_t f = 0; f < m.num_facets(); ++f) {
      std::vector<index_t> v(m.facet(f).begin(), m.facet(f).end());
      std::sort(v.begin(), v.end());
      generated.insert(v);
    }
    EXPECT_EQ(found, generated);
    // Outward: the facet normal points away from its cell's centroid.
    for (index_t f = 0; f < bf.size(); ++f) {
      const auto v = std::span(bf.vertices).subspan(f * bf.vertices_per_facet, bf.vertices_per_facet);
      const auto cc = centroid(m, m.cell(bf.cell[f]));
      const auto fc = centroid(m, v);
      std::array<double, 3> normal{0, 0, 0};
      auto p = [&](int k, int d) { return m.node(v[k])[d]; };
      if (m.gdim() == 2) {
        normal = {p(1, 1) - p(0, 1), -(p(1, 0) - p(0, 0)), 0};
      } else {
        const std::array<double, 3> e1{p(1, 0) - p(0, 0), p(1, 1) - p(0, 1), p(1, 2) - p(0, 2)};
        const std::array<double, 3> e2{p(2, 0) - p(0, 0), p(2, 1) - p(0, 1), p(2, 2) - p(0, 2)};
        normal = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                  e1[0] * e2[1] - e1[1] * e2[0]};
      }
      double dot = 0;
      for (int d = 0; d < 3; ++d) dot += normal[d] * (fc[d] - cc[d]);
      EXPECT_GT(dot, 0.0) << "facet " << f << " of " << fem::cell_info(type).name;
    }
  }
  // All facets of the tet cube: interior ones counted once.
  const auto m = fem::mesh::unit_cube(CellType::tet4, n);
  EXPECT_EQ(find_boundary_facets(exec, m).num_facets, (4 * m.num_cells() + 6 * 2 * n * n) / 2);
}

INSTANTIATE_TEST_SUITE_P(Executors, ConnectivityTest, fem::gpu::testing::all_targets,
                         fem::gpu::testing::target_name);

TEST(Connectivity, BadDofMapsAreRejected) {
  const std::vector<index_t> cells{0, 1, 2, 1, 2, 5};
  EXPECT_THROW(build_connectivity(Executor::host(), cells, 3, 5), fem::InvalidArgument);  // node 5 of 5
  EXPECT_THROW(build_connectivity(Executor::host(), cells, 4, 6), fem::InvalidArgument);  // not a multiple
  EXPECT_THROW(build_connectivity(Executor::host(), cells, 3, 6, 0), fem::InvalidArgument);
}

}  // namespace
