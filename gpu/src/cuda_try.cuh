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
