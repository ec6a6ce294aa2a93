// Built when CUDA is off: the GPU entry points exist (link lines never change) and throw
// NotCompiled with a clear message.
#include "backend.hpp"
#include "connectivity_impl.hpp"
#include "fem/error.hpp"
#include "fem/gpu/executor.hpp"

namespace fem::gpu {

std::shared_ptr<GpuContext> make_cuda_context(int) {
  throw NotCompiled("CUDA", "Executor::cuda() (a GPU executor)");
}

bool cuda_available(std::string* reason) noexcept {
  if (reason)
    *reason = "this build of fem has no CUDA support (configure with -DFEM_ENABLE_CUDA=ON and nvcc)";
  return false;
}

namespace detail {
bool cuda_device_pointer(const void*) noexcept { return false; }

template <class K, class V>
std::unique_ptr<TableBackend<K, V>> make_cuda_backend(const Executor&) {
  throw NotCompiled("CUDA", "a hash table on a CUDA executor");
}
template std::unique_ptr<TableBackend<std::uint64_t, std::uint32_t>> make_cuda_backend(const Executor&);
template std::unique_ptr<TableBackend<std::uint64_t, std::uint64_t>> make_cuda_backend(const Executor&);
template std::unique_ptr<TableBackend<Key128, std::uint32_t>> make_cuda_backend(const Executor&);
template std::unique_ptr<TableBackend<Key128, std::uint64_t>> make_cuda_backend(const Executor&);

Connectivity build_connectivity_cuda(const Executor&, std::span<const index_t>, int, index_t, int) {
  throw NotCompiled("CUDA", "build_connectivity on a CUDA executor");
}
EdgeNumbering number_edges_cuda(const Executor&, const Mesh&, const EdgeTable&) {
  throw NotCompiled("CUDA", "number_edges on a CUDA executor");
}
BoundaryFacets boundary_facets_cuda(const Executor&, const Mesh&, const FacetTable&, bool) {
  throw NotCompiled("CUDA", "find_boundary_facets on a CUDA executor");
}
}  // namespace detail

}  // namespace fem::gpu
