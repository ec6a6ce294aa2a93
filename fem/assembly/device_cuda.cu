// The device assembly loop instantiated with the CUDA launch policy: one thread per cell,
// element matrices scattered with atomicAdd (see docs/ARCHITECTURE.md, "Assembly on a device").
#include "fem/assembly/detail/device_impl.hpp"
#include "launch_cuda.cuh"

namespace fem::assembly::detail {

bool launch_device_assembly_cuda(const gpu::Executor& exec, const DeviceJob& job) {
  return launch_device_assembly<gpu::detail::CudaLaunch>(exec, job);
}

}  // namespace fem::assembly::detail
