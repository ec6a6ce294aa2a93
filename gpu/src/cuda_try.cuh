// FEM_CUDA_TRY: every CUDA runtime call goes through it and a failure becomes fem::CudaError
// naming the call, the error and the source location.
#pragma once

#include <cuda_runtime.h>

namespace fem::gpu::detail {
[[noreturn]] void throw_cuda_error(const char* call, const char* name, const char* text, const char* file,
                                   int line);
[[noreturn]] void throw_no_such_device(int device, int count);
}  // namespace fem::gpu::detail

#define FEM_CUDA_TRY(call)                                                                            \
  do {                                                                                                \
    const cudaError_t fem_cuda_status_ = (call);                                                      \
    if (fem_cuda_status_ != cudaSuccess)                                                              \
      ::fem::gpu::detail::throw_cuda_error(#call, cudaGetErrorName(fem_cuda_status_),                 \
                                           cudaGetErrorString(fem_cuda_status_), __FILE__, __LINE__); \
  } while (false)

namespace fem::gpu::detail {
/// Makes `device` the calling thread's current CUDA device (a no-op for device < 0 or when it
/// already is). The previous device is not restored: restoring it with cudaSetDevice would
/// create a context on device 0 in a thread that never chose a device (CUDA 12 and later
/// initialise the primary context there), and could leave an unrelated sticky error behind.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device < 0) return;
    int current = -1;
    FEM_CUDA_TRY(cudaGetDevice(&current));
    if (current != device) FEM_CUDA_TRY(cudaSetDevice(device));
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
};
}  // namespace fem::gpu::detail
