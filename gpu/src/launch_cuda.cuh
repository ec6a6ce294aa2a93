// The CUDA launch policy: the builders' parallel loops as grid-stride kernels on the context's
// stream, scans from CUB.
#pragma once

#include <cub/device/device_scan.cuh>

#include "cuda_try.cuh"
#include "fem/gpu/detail/table_ops.hpp"
#include "fem/gpu/executor.hpp"

namespace fem::gpu::detail {

template <class F>
__global__ void for_each_kernel(std::size_t n, F f) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    f(i);
}

struct CudaLaunch {
  using Atomics = DeviceAtomics;
  static constexpr bool has_row_positions = false;  // a thread scans its rows column by column
  /// A thread insertion-sorts its row (the builder's loop).
  FEM_HD static bool sort_short_row(index_t*, index_t, index_t, index_t) { return false; }

  template <class F>
  static void for_each(const Executor& exec, std::size_t n, F f) {
    if (n == 0) return;
    const DeviceScope on(exec.context().device());
    const std::size_t blocks = (n + 255) / 256;
    const unsigned grid = static_cast<unsigned>(blocks < (1u << 20) ? blocks : (1u << 20));
    for_each_kernel<<<grid, 256, 0, static_cast<cudaStream_t>(exec.context().stream())>>>(n, f);
    FEM_CUDA_TRY(cudaGetLastError());
  }

  template <class T>
  static std::uint64_t exclusive_scan(const Executor& exec, T* data, std::size_t n) {
    const DeviceScope on(exec.context().device());
    auto stream = static_cast<cudaStream_t>(exec.context().stream());
    T last = 0;
    if (n) exec.context().copy_to_host(&last, data + n - 1, sizeof(T));
    std::size_t temp_bytes = 0;
    FEM_CUDA_TRY(
        cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, data, data, static_cast<std::int64_t>(n), stream));
    DeviceBuffer<unsigned char> temp(exec, temp_bytes);
    FEM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, data, data,
                                               static_cast<std::int64_t>(n), stream));
    T last_scanned = 0;
    if (n) exec.context().copy_to_host(&last_scanned, data + n - 1, sizeof(T));
    exec.context().synchronize();
    return static_cast<std::uint64_t>(last_scanned) + static_cast<std::uint64_t>(last);
  }
};

}  // namespace fem::gpu::detail
