// Connectivity builders on an Executor (host twin, debug device or CUDA; same results on all):
// the CSR sparsity pattern with the element-to-slot map, edge numbering for P2, and boundary
// facet detection. All are built through the hash table; the assembly kernel caches them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fem/csr.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/gpu/hash_table.hpp"
#include "fem/mesh.hpp"

namespace fem::gpu {

/// The pattern of a finite-element matrix and where each element-matrix entry lands in it.
struct Connectivity {
  std::shared_ptr<const CsrPattern> pattern;
  /// Row-major per cell: element_slots[(c * n + i) * n + j] is the position in the CSR values
  /// of the entry (dof i of cell c, dof j of cell c), n = dofs_per_cell.
  std::vector<index_t> element_slots;
  int dofs_per_cell = 0;
  std::size_t bytes() const noexcept {
    return sizeof(*this) + element_slots.capacity() * sizeof(index_t) + (pattern ? pattern->bytes() : 0);
  }
};

/// Build the pattern and the element-to-slot map of the DOF map `cell_nodes` (num_cells ×
/// nodes_per_cell indices in [0, num_nodes)). With block_size b every node carries b DOFs,
/// numbered node·b + k, and a cell's local DOF i·b + k belongs to its node i (the layout of
/// vector-valued spaces). Every row has its diagonal; columns are sorted.
///
/// Built with the hash table: every unordered pair of distinct nodes of a cell is inserted into
/// a table of node-pair keys whose home slots are row-local (a pair probes from a window owned
/// by its larger node, else its smaller one, so the pairs of neighbouring cells share cache
/// lines; a pathological numbering falls back to hashed slots). The unique keys fill the CSR rows, each
/// row is sorted, and each element entry is then looked up once in its sorted row. No array is
/// kept per pair occurrence. The result does not depend on the thread count or the executor.
Connectivity build_connectivity(const Executor& exec, std::span<const index_t> cell_nodes, int nodes_per_cell,
                                index_t num_nodes, int block_size = 1);

/// The edges of a mesh, numbered in order of first appearance (cell by cell, in the order of
/// fem::local_edges()), so the numbering is the same on every executor and thread count.
struct EdgeNumbering {
  index_t num_edges = 0;
  std::vector<index_t> cell_edges;     ///< num_cells × edges per cell
  std::vector<index_t> edge_vertices;  ///< num_edges × 2 (the vertices as the first cell saw them)
  /// pack_sorted_pair(a, b) of an edge's vertices -> its id, for lookups (e.g. of facet edges).
  std::shared_ptr<const HashTable64x32> table;
  std::size_t bytes() const noexcept {
    return sizeof(*this) + (cell_edges.capacity() + edge_vertices.capacity()) * sizeof(index_t) +
           (table ? table->bytes() : 0);
  }
};
EdgeNumbering number_edges(const Executor& exec, const Mesh& mesh);

/// The facets that belong to exactly one cell, in order of first appearance, with the cell and
/// its local facet (fem::local_facets()); their vertices are ordered as that cell's facet, so
/// the normal points out of the domain.
struct BoundaryFacets {
  std::vector<index_t> vertices;  ///< size() × vertices per facet
  std::vector<index_t> cell;
  std::vector<std::int8_t> local_facet;
  int vertices_per_facet = 0;
  index_t num_facets = 0;  ///< all facets of the mesh, interior ones included
  index_t size() const noexcept { return static_cast<index_t>(cell.size()); }
};
BoundaryFacets find_boundary_facets(const Executor& exec, const Mesh& mesh);

}  // namespace fem::gpu
