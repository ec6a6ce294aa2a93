// Mesh partitioning for distributed runs: METIS on the dual graph of the cells, an owner part
// for every node, and what a partition costs in communication.
//
//   const auto p = fem::mesh::partition(mesh, 8);
//   const auto s = fem::mesh::partition_stats(mesh, p);
//   fmt::print("{} ghost nodes, edge cut {}\n", s.total_ghost_nodes, s.edge_cut);
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fem/mesh.hpp"

namespace fem::mesh {

/// The cells of every node (all nodes of each cell, vertices or not), as CSR: what a partition
/// needs to find the parts around a node, and a distribution the cell a facet bounds.
struct NodeCells {
  std::vector<std::size_t> offsets;  ///< num_nodes + 1
  std::vector<index_t> cells;

  explicit NodeCells(const Mesh& mesh);
  std::span<const index_t> of(index_t n) const {
    const auto i = static_cast<std::size_t>(n);
    return std::span<const index_t>(cells).subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
};

/// A partition of a mesh's cells into `parts`, and an owner part for every mesh node.
struct Partition {
  int parts = 1;
  std::vector<int> cell_part;   ///< part of each cell (0..parts-1)
  std::vector<int> node_owner;  ///< owner part of each mesh node: always a part one of whose cells holds the
                                ///< node; -1 for nodes no cell references
};

/// METIS_PartGraphKway on the dual graph of the cells (cells sharing ncommon corner vertices: 1 for line
/// cells, 2 for tri/quad, 3 for tet, 4 for hex; what METIS_PartMeshDual does, with the graph built once),
/// with deterministic options (METIS_OPTION_SEED = 0, contiguous parts where METIS can: when the dual graph
/// is connected). Node owners: a node the cells of one part touch belongs to it; an interface node (every
/// node, vertex or mid-edge) goes to the touching part that owns the fewest nodes so far, in node order, ties
/// to the lowest part, so owned nodes balance like the cells.
///
/// parts == 1, and parts == num_cells (one cell per part), are handled without METIS. parts < 1, or
/// parts > 1 on a mesh with fewer cells than parts: InvalidArgument naming both numbers. A mesh whose
/// corner-vertex array exceeds METIS's 32-bit indices: InvalidArgument. Throws fem::NotCompiled when the
/// build has no METIS (and METIS is needed).
Partition partition(const Mesh& mesh, int parts);

/// What a partition costs in communication, per part and in total.
struct PartitionStats {
  int parts = 1;
  std::vector<index_t> cells;        ///< cells per part
  std::vector<index_t> owned_nodes;  ///< nodes owned per part
  std::vector<index_t> ghost_nodes;  ///< nodes a part's cells touch but another part owns
  std::vector<int> neighbours;       ///< parts each part shares nodes with
  double cell_imbalance = 1;         ///< max cells / mean cells
  double node_imbalance = 1;         ///< max owned nodes / mean
  index_t interface_nodes = 0;       ///< nodes touched by more than one part
  index_t total_ghost_nodes = 0;     ///< Σ ghost_nodes
  std::int64_t edge_cut = 0;  ///< cell pairs sharing a facet (ncommon vertices) that lie in different parts
};

/// The statistics of `partition` on `mesh`; needs no METIS. Cell pairs of the edge cut are those sharing at
/// least ncommon corner vertices (as in METIS_MeshToDual, the graph METIS partitions). The partition must
/// fit the mesh: sizes, parts in range, every owner a part touching its node and -1 exactly for
/// unreferenced nodes; otherwise InvalidArgument naming the first offence. O(nodes per cell × cells).
PartitionStats partition_stats(const Mesh& mesh, const Partition& partition);

}  // namespace fem::mesh
