// The messages of failed CUDA calls (compiled by the host compiler, so .cu files need no fmt).
#include <fmt/format.h>

#include "fem/error.hpp"

namespace fem::gpu::detail {
void throw_cuda_error(const char* call, const char* name, const char* text, const char* file, int line) {
  throw CudaError(fmt::format("CUDA call {} failed: {} ({}) at {}:{}", call, name, text, file, line), file,
                  line);
}
void throw_no_such_device(int device, int count) {
  throw InvalidArgument(fmt::format("CUDA device {} requested, but {} device(s) are present", device, count));
}
}  // namespace fem::gpu::detail
