// Qualifiers for code compiled both by the host compiler and by nvcc (element math, probing).
#pragma once

#if defined(__CUDACC__)
#define FEM_HD __host__ __device__
#define FEM_HD_INLINE __host__ __device__ __forceinline__
#else
#define FEM_HD
#define FEM_HD_INLINE inline __attribute__((always_inline))
#endif
