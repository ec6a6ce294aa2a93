// The host's boundary facets (windows of the smallest vertex, a mark for facets seen again)
// against a plain reference: every facet occurrence counted in a std::map, the ones seen once in
// occurrence order, on ordered, renumbered and second-order meshes and any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "fem/gpu/connectivity.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/reference_cell.hpp"

namespace {

using fem::CellType;
using fem::index_t;
using namespace fem::gpu;

BoundaryFacets reference(const fem::Mesh& m) {
  const fem::LocalFacets lf = fem::local_facets(m.cell_type());
  std::map<std::vector<index_t>, int> count;
  auto key = [&](index_t c, int f) {
    std::vector<index_t> v;
    for (int k = 0; k < lf.vertices_per_facet; ++k) v.push_back(m.cell(c)[lf[f][k]]);
    std::sort(v.begin(), v.end());
    return v;
  };
  for (index_t c = 0; c < m.num_cells(); ++c)
    for (int f = 0; f < lf.count; ++f) ++count[key(c, f)];
  BoundaryFacets out;
  out.vertices_per_facet = lf.vertices_per_facet;
  out.num_facets = static_cast<index_t>(count.size());
  for (index_t c = 0; c < m.num_cells(); ++c)
    for (int f = 0; f < lf.count; ++f)
      if (count[key(c, f)] == 1) {
        for (int k = 0; k < lf.vertices_per_facet; ++k) out.vertices.push_back(m.cell(c)[lf[f][k]]);
        out.cell.push_back(c);
        out.local_facet.push_back(static_cast<std::int8_t>(f));
      }
  return out;
}

// The same mesh with its nodes numbered at random (no locality for the windows).
fem::Mesh renumbered(const fem::Mesh& m) {
  std::vector<index_t> perm(m.num_nodes());
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(7));
  fem::Mesh::Data d;
  d.gdim = m.gdim();
  d.cell_type = m.cell_type();
  d.coords.resize(m.coords().size());
  for (index_t i = 0; i < m.num_nodes(); ++i)
    for (int k = 0; k < m.gdim(); ++k) d.coords[perm[i] * m.gdim() + k] = m.coords()[i * m.gdim() + k];
  for (index_t node : m.cells()) d.cells.push_back(perm[node]);
  return fem::Mesh(std::move(d));
}

// A second-order mesh with every vertex numbered before every edge node (the vertices then own a
// fraction of the node range).
fem::Mesh second_order(const fem::Mesh& m, CellType type) {
  const auto edges = number_edges(Executor::host(), m);
  const int g = m.gdim(), nv = m.nodes_per_cell();
  const auto ne = static_cast<index_t>(edges.cell_edges.size() / m.num_cells());
  fem::Mesh::Data d;
  d.gdim = g;
  d.cell_type = type;
  d.coords.assign(m.coords().begin(), m.coords().end());
  for (index_t e = 0; e < edges.num_edges; ++e)
    for (int k = 0; k < g; ++k)
      d.coords.push_back(0.5 * (m.coords()[edges.edge_vertices[2 * e] * g + k] +
                                m.coords()[edges.edge_vertices[2 * e + 1] * g + k]));
  for (index_t c = 0; c < m.num_cells(); ++c) {
    for (int k = 0; k < nv; ++k) d.cells.push_back(m.cell(c)[k]);
    for (index_t k = 0; k < ne; ++k) d.cells.push_back(m.num_nodes() + edges.cell_edges[c * ne + k]);
  }
  return fem::Mesh(std::move(d));
}

TEST(BoundaryFacets, TheFacetsSeenOnceInOccurrenceOrderOnEveryMeshAndThreadCount) {
  const fem::Mesh square = fem::mesh::unit_square(CellType::tri3, 60),
                  cube = fem::mesh::unit_cube(CellType::tet4, 12);
  std::vector<std::pair<const char*, fem::Mesh>> meshes;
  meshes.emplace_back("tri3", square);
  meshes.emplace_back("quad4", fem::mesh::unit_square(CellType::quad4, 50));
  meshes.emplace_back("tet4", cube);
  meshes.emplace_back("hex8", fem::mesh::unit_cube(CellType::hex8, 10));
  meshes.emplace_back("line2", fem::mesh::generate("gen:interval-line2:100"));
  meshes.emplace_back("tri3 renumbered", renumbered(square));
  meshes.emplace_back("tet4 renumbered", renumbered(cube));
  meshes.emplace_back("tri6, vertices first", second_order(square, CellType::tri6));
  meshes.emplace_back("tet10, vertices first", second_order(cube, CellType::tet10));
  const int saved = omp_get_max_threads();
  for (const auto& [name, m] : meshes) {
    const BoundaryFacets ref = reference(m);
    ASSERT_GT(ref.size(), 0) << name;
    for (int threads : {1, 2, 4}) {
      omp_set_num_threads(threads);
      const BoundaryFacets bf = find_boundary_facets(Executor::host(), m);
      EXPECT_EQ(bf.num_facets, ref.num_facets) << name << ", " << threads << " threads";
      EXPECT_EQ(bf.vertices_per_facet, ref.vertices_per_facet) << name;
      EXPECT_EQ(bf.cell, ref.cell) << name << ", " << threads << " threads";
      EXPECT_EQ(bf.local_facet, ref.local_facet) << name << ", " << threads << " threads";
      EXPECT_EQ(bf.vertices, ref.vertices) << name << ", " << threads << " threads";
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
