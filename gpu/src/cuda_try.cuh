// FEM_CUDA_TRY: every CUDA runtime call goes through it and a failure becomes fem::CudaError
// naming the call, the error and the source location.
#pragma once

#include <cuda_runtime.h>

namespace fem::gpu::detail {
[[noreturn]] void throw_cuda_error(const char* call, const char* name, const char* text, const char* file, int line);
[[noreturn]] void throw_no_such_device(int device, int count);
}

#define FEM_CUDA_TRY(call)                                                                       \
  do {                                                                                           \
    const cudaError_t fem_cuda_status_ = (call);                                                 \
    if (fem_cuda_status_ != cudaSuccess)                                                         \
      ::fem::gpu::detail::throw_cuda_error(#call, cudaGetErrorName(fem_cuda_status_),            \
                                           cudaGetErrorString(fem_cuda_status_), __FILE__, __LINE__); \
  } while (false)

namespace fem::gpu::detail {
/// Makes `device` the calling thread's current CUDA device for the scope, and restores the
/// previous one (a no-op for device < 0 or when it already is current).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device < 0) return;
    FEM_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ == device) return;
    FEM_CUDA_TRY(cudaSetDevice(device));
    switched_ = true;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};
}  // namespace fem::gpu::detail
