// The executors every GPU-library test runs on: the host twin, the debug device (device code
// path on the CPU) and, where a GPU is present, CUDA. CUDA cases skip with the reason otherwise.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fem/gpu/executor.hpp"

namespace fem::gpu::testing {

enum class Target { host, debug_device, cuda };

inline std::string target_name(const ::testing::TestParamInfo<Target>& info) {
  switch (info.param) {
    case Target::host:
      return "host";
    case Target::debug_device:
      return "debug_device";
    case Target::cuda:
      return "cuda";
  }
  return "unknown";
}

/// The executor for a target, or GTEST_SKIP (from the calling test) when CUDA is not usable.
#define FEM_TEST_EXECUTOR(target, exec)                                                                   \
  ::fem::gpu::Executor exec = ::fem::gpu::Executor::host();                                               \
  if ((target) == ::fem::gpu::testing::Target::debug_device) exec = ::fem::gpu::Executor::debug_device(); \
  if ((target) == ::fem::gpu::testing::Target::cuda) {                                                    \
    std::string fem_reason_;                                                                              \
    if (!::fem::gpu::cuda_available(&fem_reason_)) GTEST_SKIP() << fem_reason_;                           \
    exec = ::fem::gpu::Executor::cuda();                                                                  \
  }

inline const auto all_targets = ::testing::Values(Target::host, Target::debug_device, Target::cuda);
/// The executors whose work runs in device code: an Assembler on the host executor runs the
/// host's own loops, so the device kernels are tested on these.
inline const auto device_targets = ::testing::Values(Target::debug_device, Target::cuda);

}  // namespace fem::gpu::testing
