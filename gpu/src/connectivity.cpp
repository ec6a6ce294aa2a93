// Entry points of the connectivity builders: argument checks (here, in host code), then the
// shared algorithms with the host launch policy, or their CUDA instantiation.
#include "fem/gpu/connectivity.hpp"

#include <limits>

#include "connectivity_impl.hpp"
#include "fem/error.hpp"
#include "fem/reference_cell.hpp"
#include "launch_host.hpp"

namespace fem::gpu {
namespace detail {

// Defined in connectivity_cuda.cu, or in cuda_stub.cpp without CUDA.
Connectivity build_connectivity_cuda(const Executor&, std::span<const index_t>, int, index_t, int);
EdgeNumbering number_edges_cuda(const Executor&, const Mesh&, const EdgeTable&);
BoundaryFacets boundary_facets_cuda(const Executor&, const Mesh&, const FacetTable&, bool wide_keys);

void check_pattern_size(std::size_t nnz_nodes, int block_size) {
  const double nnz = double(nnz_nodes) * block_size * block_size;
  FEM_EXPECTS(nnz < double(std::numeric_limits<index_t>::max()),
              "the matrix would have {} nonzeros, beyond the 32-bit index range", nnz);
}

}  // namespace detail

Connectivity build_connectivity(const Executor& exec, std::span<const index_t> cell_nodes, int nodes_per_cell,
                                index_t num_nodes, int block_size) {
  FEM_EXPECTS(nodes_per_cell >= 1 && nodes_per_cell <= 64, "nodes per cell must be in 1..64, got {}",
              nodes_per_cell);
  FEM_EXPECTS(block_size >= 1 && block_size <= 8, "block size must be in 1..8, got {}", block_size);
  FEM_EXPECTS(num_nodes >= 1, "a DOF map needs at least one node");
  FEM_EXPECTS(cell_nodes.size() % nodes_per_cell == 0,
              "{} cell node indices are not a multiple of {} per cell", cell_nodes.size(), nodes_per_cell);
  for (std::size_t i = 0; i < cell_nodes.size(); ++i)
    FEM_EXPECTS(cell_nodes[i] >= 0 && cell_nodes[i] < num_nodes, "cell {} refers to node {}, outside 0..{}",
                i / nodes_per_cell, cell_nodes[i], num_nodes - 1);
  if (exec.kind() == Executor::Kind::cuda)
    return detail::build_connectivity_cuda(exec, cell_nodes, nodes_per_cell, num_nodes, block_size);
  return detail::build_connectivity_impl<detail::HostLaunch>(exec, cell_nodes, nodes_per_cell, num_nodes,
                                                             block_size);
}

EdgeNumbering number_edges(const Executor& exec, const Mesh& mesh) {
  const auto edges = local_edges(mesh.cell_type());
  FEM_EXPECTS(!edges.empty(), "{} cells have no edges", mesh.cell_info().name);
  detail::EdgeTable et;
  et.count = static_cast<int>(edges.size());
  for (int e = 0; e < et.count; ++e) {
    et.v[e][0] = edges[e][0];
    et.v[e][1] = edges[e][1];
  }
  if (exec.kind() == Executor::Kind::cuda) return detail::number_edges_cuda(exec, mesh, et);
  return detail::number_edges_impl<detail::HostLaunch>(exec, mesh, et);
}

BoundaryFacets find_boundary_facets(const Executor& exec, const Mesh& mesh) {
  const LocalFacets lf = local_facets(mesh.cell_type());
  FEM_EXPECTS(lf.count > 0, "{} cells have no facets", mesh.cell_info().name);
  detail::FacetTable ft;
  ft.count = lf.count;
  ft.nv = lf.vertices_per_facet;
  for (int f = 0; f < lf.count; ++f)
    for (int k = 0; k < ft.nv; ++k) ft.v[f][k] = lf[f][k];
  // Triples pack into 64 bits only below 2^21 vertices; beyond, faces need 128-bit keys.
  const bool wide = ft.nv >= 3 && mesh.num_nodes() >= packed_triple_limit;
  if (exec.kind() == Executor::Kind::cuda) return detail::boundary_facets_cuda(exec, mesh, ft, wide);
  return wide ? detail::boundary_facets_impl<detail::HostLaunch, Key128>(exec, mesh, ft)
              : detail::boundary_facets_local_impl<detail::HostLaunch>(exec, mesh, ft);
}

}  // namespace fem::gpu
