// The connectivity builders instantiated with the CUDA launch policy.
#include "connectivity_impl.hpp"
#include "launch_cuda.cuh"

namespace fem::gpu::detail {

Connectivity build_connectivity_cuda(const Executor& exec, std::span<const index_t> cell_nodes, int npc,
                                     index_t num_nodes, int bs) {
  return build_connectivity_impl<CudaLaunch>(exec, cell_nodes, npc, num_nodes, bs);
}

EdgeNumbering number_edges_cuda(const Executor& exec, const Mesh& mesh, const EdgeTable& et) {
  return number_edges_impl<CudaLaunch>(exec, mesh, et);
}

BoundaryFacets boundary_facets_cuda(const Executor& exec, const Mesh& mesh, const FacetTable& ft,
                                    bool wide_keys) {
  return wide_keys ? boundary_facets_impl<CudaLaunch, Key128>(exec, mesh, ft)
                   : boundary_facets_impl<CudaLaunch, std::uint64_t>(exec, mesh, ft);
}

}  // namespace fem::gpu::detail
