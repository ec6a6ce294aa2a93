// Topology of the reference cells: which local vertices form each edge and each facet, in
// Gmsh's order (the order of the edge and face nodes of second-order cells). Shared by the
// connectivity builders (edge and facet numbering) and the elements.
#pragma once

#include <array>
#include <span>

#include "fem/mesh.hpp"

namespace fem {

/// Local vertex pairs of the edges of a cell type, in Gmsh edge-node order (e.g. tet10's node
/// 4 + k sits on edge k). Empty for points.
std::span<const std::array<int, 2>> local_edges(CellType type);

/// The facets of a cell type, each as its local vertex indices (first-order corners only),
/// ordered so that the facet's normal by the right-hand rule points out of the cell.
struct LocalFacets {
  int count = 0;
  int vertices_per_facet = 0;
  const int* data = nullptr;
  std::span<const int> operator[](int f) const {
    return {data + f * vertices_per_facet, static_cast<std::size_t>(vertices_per_facet)};
  }
};
LocalFacets local_facets(CellType type);

}  // namespace fem
