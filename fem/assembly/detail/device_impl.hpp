// The device assembly loop, written once over a launch policy (gpu/src/launch_host.hpp for the
// host twin and the debug device, launch_cuda.cuh for CUDA) and compiled by both compilers:
// device.cpp instantiates it with HostLaunch, device_cuda.cu with CudaLaunch. Light on
// includes on purpose: nvcc sees only the per-cell math and the kernels.
#pragma once

#include <cstddef>
#include <type_traits>

#if !defined(__CUDA_ARCH__)
#include <atomic>
#endif

#include "fem/assembly/detail/cell_math.hpp"
#include "fem/assembly/detail/kernels.hpp"
#include "fem/gpu/executor.hpp"

namespace fem::assembly::detail {

/// A coefficient with one value per cell tag (a constant when num_tags == 0): what the
/// Coefficient of a form becomes on the device (no std::function, no pointers to host memory).
struct TagCoefficient {
  static constexpr int max_tags = 32;
  int num_tags = 0;
  int tags[max_tags] = {};
  double values[max_tags] = {};
  double otherwise = 0;
  FEM_HD double operator()(index_t, int tag, const double*) const {
    for (int i = 0; i < num_tags; ++i)
      if (tags[i] == tag) return values[i];
    return otherwise;
  }
};

enum class DeviceForm { diffusion, mass, elasticity };

/// One device assembly: what the cells read (executor memory) and what they write. The cells
/// are in colour order (DeviceMesh): position p of a colour's range is cell cell_ids[p], and the
/// per-cell arrays are stored entry-major, entry k of position p at [k · num_cells + p], so the
/// threads of a warp (consecutive positions) read consecutive words.
struct DeviceJob {
  CellType cell = CellType::point;
  int bs = 1, nq = 0;
  DeviceForm form = DeviceForm::diffusion;
  TagCoefficient c0, c1;      ///< k, rho or E; nu for elasticity
  bool plane_stress = false;  ///< elasticity in 2D: plane stress instead of plane strain
  index_t num_cells = 0;
  const double* coords = nullptr;
  const index_t* cells = nullptr;     ///< node g of position p at [g · num_cells + p]
  const index_t* cell_ids = nullptr;  ///< the mesh's cell at position p
  const int* tags = nullptr;          ///< by position
  const index_t* slots = nullptr;     ///< element entry k of position p at [k · num_cells + p]
  const double* tab = nullptr;  ///< w[nq] | phi[nq·n] | dphi[nq·n·dim] | psi[nq·n] | dpsi[nq·n·dim]
  double* values = nullptr;
  int* bad_cell = nullptr;  ///< 0x7f7f7f7f, or the smallest inverted/degenerate cell
  /// Host memory: the positions of colour k are [colour_offsets[k], colour_offsets[k + 1]).
  const index_t* colour_offsets = nullptr;
  int num_colours = 0;
  /// One launch over every cell with atomic adds (nondeterministic in the last bits) instead of
  /// one launch per colour with plain adds (DeviceAssembler::Scatter).
  bool atomic = false;
  index_t first = 0;  ///< the launch's first position (set per colour)
};

FEM_HD_INLINE void atomic_add(double* p, double v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  std::atomic_ref<double>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

FEM_HD_INLINE void atomic_min(int* p, int v) {
#if defined(__CUDA_ARCH__)
  atomicMin(p, v);
#else
  std::atomic_ref<int> a(*p);
  int cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
#endif
}

/// One cell: the geometry (cell_geometry, as on the host), the element kernel, the scatter.
template <class E, int BS, int NQ, class Kernel>
struct CellAssembly {
  using G = E;  // P1/Q1: the geometry map is the element
  static constexpr int n = E::n, dim = E::dim, nd = n * BS, nn = nd * nd;
  static constexpr bool cg = constant_gradients<E, G>;
  // A vector mass matrix couples equal components only: its other blocks are zero, not scattered.
  static constexpr bool component_blocks = BS > 1 && std::is_same_v<Kernel, kernels::Mass<TagCoefficient>>;
  static constexpr bool is_elasticity =
      std::is_same_v<Kernel, kernels::Elasticity<TagCoefficient, TagCoefficient>>;
  DeviceJob job;
  Kernel kernel;

  FEM_HD void operator()(std::size_t i) const {
    const std::size_t p = static_cast<std::size_t>(job.first) + i,
                      stride = static_cast<std::size_t>(job.num_cells);
    const index_t c = job.cell_ids[p];
    double X[n][dim];
    for (int g = 0; g < n; ++g) {
      const auto node = static_cast<std::size_t>(job.cells[g * stride + p]);
      for (int d = 0; d < dim; ++d) X[g][d] = job.coords[node * dim + d];
    }
    const double* w = job.tab;
    const double* phi = w + NQ;
    const double* dphi = phi + NQ * n;
    const double* dpsi = dphi + NQ * n * dim + NQ * n;
    double weight[NQ], grad[(cg ? 1 : NQ) * n * dim], x[NQ * dim] = {};
    double det = 0;
    if (!cell_geometry<E, G, NQ>(X, NQ, w, dphi, dpsi, weight, grad, det)) {
      atomic_min(job.bad_cell, c);
      return;
    }
    // A vector mass matrix is the scalar one on each component: the scalar n × n matrix is
    // computed once and scattered to the components (an nd × nd one would not fit in registers,
    // and skipping its zero blocks made nvcc index it dynamically, in local memory).
    constexpr int bs = component_blocks ? 1 : BS, m = n * bs;
    CellValues<E, bs, cg> cv;
    cv.cell = c;
    cv.tag = job.tags[p];
    cv.num_points = NQ;
    cv.weight = weight;
    cv.phi = phi;
    cv.grad = grad;
    cv.x = x;  // device coefficients do not depend on x
    if constexpr (is_elasticity) {
      // Block by block: the 9 (3D) entries of one pair of nodes at a time, never the whole
      // (3n)² element matrix in registers.
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          double B[dim][dim];
          kernel.block(cv, i, j, B);
          for (int a = 0; a < dim; ++a)
            for (int b = 0; b < dim; ++b) {
              double* v = job.values + job.slots[((i * dim + a) * nd + j * dim + b) * stride + p];
              if (job.atomic)
                atomic_add(v, B[a][b]);
              else
                *v += B[a][b];
            }
        }
      }
      return;
    }
    double A[m * m] = {};
    kernel(cv, A);
    FEM_UNROLL
    for (int i = 0; i < m; ++i) {
      FEM_UNROLL
      for (int j = 0; j < m; ++j) {
        FEM_UNROLL
        for (int comp = 0; comp < (component_blocks ? BS : 1); ++comp) {
          const int k = component_blocks ? (i * BS + comp) * nd + j * BS + comp : i * m + j;
          double* v = job.values + job.slots[k * stride + p];
          if (job.atomic)
            atomic_add(v, A[i * m + j]);
          else
            *v += A[i * m + j];  // no other cell of the colour shares a node
        }
      }
    }
  }
};

template <class Launch, class E, int BS, int NQ, class Kernel>
void launch_cells(const gpu::Executor& exec, const DeviceJob& job, const Kernel& kernel) {
  if (job.atomic) {
    Launch::for_each(exec, static_cast<std::size_t>(job.num_cells),
                     CellAssembly<E, BS, NQ, Kernel>{job, kernel});
    return;
  }
  // One launch per colour, in colour order: each slot gets its contributions in the same order
  // on every run and device, and A(i, j) and A(j, i) in the same order from bitwise equal
  // element entries.
  for (int k = 0; k < job.num_colours; ++k) {
    DeviceJob part = job;
    part.first = job.colour_offsets[k];
    Launch::for_each(exec, static_cast<std::size_t>(job.colour_offsets[k + 1] - job.colour_offsets[k]),
                     CellAssembly<E, BS, NQ, Kernel>{part, kernel});
  }
}

/// The forms of one rule: stiffness rules (diffusion, elasticity) or mass rules (mass); only
/// these combinations are instantiated (each is a kernel for every architecture).
template <class Launch, class E, int NQ, bool Stiffness>
bool launch_forms(const gpu::Executor& exec, const DeviceJob& job) {
  if (job.nq != NQ) return false;
  constexpr int dim = E::dim;
  if constexpr (Stiffness) {
    if (job.form == DeviceForm::diffusion && job.bs == 1) {
      launch_cells<Launch, E, 1, NQ>(exec, job, kernels::Diffusion<TagCoefficient>{job.c0});
      return true;
    }
    if (job.form == DeviceForm::elasticity && job.bs == dim) {
      launch_cells<Launch, E, dim, NQ>(
          exec, job, kernels::Elasticity<TagCoefficient, TagCoefficient>{job.c0, job.c1, job.plane_stress});
      return true;
    }
  } else if (job.form == DeviceForm::mass) {
    if (job.bs == 1)
      launch_cells<Launch, E, 1, NQ>(exec, job, kernels::Mass<TagCoefficient>{job.c0});
    else if (job.bs == dim)
      launch_cells<Launch, E, dim, NQ>(exec, job, kernels::Mass<TagCoefficient>{job.c0});
    else
      return false;
    return true;
  }
  return false;
}

/// Launch the cells of `job` (values already zeroed, *bad_cell larger than any cell). False when the
/// combination of cell, rule size, form and components has no instantiation.
template <class Launch>
bool launch_device_assembly(const gpu::Executor& exec, const DeviceJob& job) {
  using enum CellType;
  // The rules the library picks for these forms (Assembler::quadrature_degree): stiffness on P1
  // simplices 1 point, on Q1 tensor Gauss 2^d (degree 2 for the non-affine map); mass 3/4 points
  // on simplices, 3^d on Q1.
  switch (job.cell) {
    case tri3:
      return launch_forms<Launch, Lagrange<tri3>, 1, true>(exec, job) ||
             launch_forms<Launch, Lagrange<tri3>, 3, false>(exec, job);
    case tet4:
      return launch_forms<Launch, Lagrange<tet4>, 1, true>(exec, job) ||
             launch_forms<Launch, Lagrange<tet4>, 4, false>(exec, job);
    case quad4:
      return launch_forms<Launch, Lagrange<quad4>, 4, true>(exec, job) ||
             launch_forms<Launch, Lagrange<quad4>, 9, false>(exec, job);
    case hex8:
      return launch_forms<Launch, Lagrange<hex8>, 8, true>(exec, job) ||
             launch_forms<Launch, Lagrange<hex8>, 27, false>(exec, job);
    default:
      return false;
  }
}

/// The CUDA instantiation (device_cuda.cu; throws NotCompiled without CUDA).
bool launch_device_assembly_cuda(const gpu::Executor& exec, const DeviceJob& job);

}  // namespace fem::assembly::detail
