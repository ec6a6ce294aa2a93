// The device assembly loop, written once over a launch policy (gpu/src/launch_host.hpp for the
// host twin and the debug device, launch_cuda.cuh for CUDA) and compiled by both compilers:
// device.cpp instantiates it with HostLaunch, device_cuda.cu with CudaLaunch. Light on
// includes on purpose: nvcc sees only the per-cell math and the kernels.
#pragma once

#include <cmath>
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
  /// one launch per colour with plain adds (Assembler::Scatter).
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

/// v[k] for a k known only at run time, without indexing v (which would put it in local memory).
template <int D>
FEM_HD_INLINE double pick(const double* v, int k) {
  if constexpr (D == 1)
    return v[0];
  else if constexpr (D == 2)
    return k == 0 ? v[0] : v[1];
  else
    return k == 0 ? v[0] : k == 1 ? v[1] : v[2];
}

/// One cell, row by row. For each row of the element matrix (node i, component a) the entries
/// of every column are summed over the points in registers and scattered at once; the geometry
/// at a point (J, its inverse and determinant, from the corners read again) is recomputed for
/// every row on non-affine cells, and the gradients for every entry. The whole-matrix way (the
/// host's) would hold a hexahedron's 8 × 8 × 3 gradients and its element matrix, which no
/// thread's registers hold: in local memory, kilobytes per thread. The entries are the host
/// kernels' own formulas (kernels::*::pair, entry), and (i a, j b) multiplies the same factors
/// in the same order as (j b, i a): bitwise symmetric.
template <class E, int BS, int NQ, class Kernel>
struct CellRows {
  static constexpr int n = E::n, dim = E::dim, nd = n * BS;
  static constexpr bool affine = affine_geometry<E>;
  static constexpr bool mass = std::is_same_v<Kernel, kernels::Mass<TagCoefficient>>;
  static constexpr bool elasticity =
      std::is_same_v<Kernel, kernels::Elasticity<TagCoefficient, TagCoefficient>>;
  static constexpr int group = elasticity && n > 4 ? 4 : n;
  DeviceJob job;
  Kernel kernel;

  FEM_HD void operator()(std::size_t local) const {
    const std::size_t p = static_cast<std::size_t>(job.first) + local,
                      stride = static_cast<std::size_t>(job.num_cells);
    const index_t c = job.cell_ids[p];
    const int tag = job.tags[p];
    index_t node[n];
    FEM_UNROLL
    for (int g = 0; g < n; ++g) node[g] = job.cells[g * stride + p];
    const double* w = job.tab;
    const double* phi = w + NQ;
    const double* dphi = phi + NQ * n;
    const double* dpsi = dphi + NQ * n * dim + NQ * n;
    double K[dim * dim], det = 0;
    // J at point q (P1/Q1: the map is the element), from the corners: K = J⁻¹.
    auto geometry = [&](int q) {
#if defined(__CUDA_ARCH__)
      // The corners are read again at every point, not kept in registers across the points:
      // 24 doubles of a hexahedron would take 48 registers for the whole row.
      if constexpr (!affine) asm volatile("" ::: "memory");
#endif
      // Multiply-adds spelled out, as in invert(): every row's copy must round alike.
      double J[dim * dim];
      FEM_UNROLL
      for (int g = 0; g < n; ++g) FEM_UNROLL
      for (int d = 0; d < dim; ++d) {
        const double x = job.coords[static_cast<std::size_t>(node[g]) * dim + d];
        FEM_UNROLL
        for (int k = 0; k < dim; ++k)
          J[d * dim + k] =
              g == 0 ? x * dpsi[(q * n) * dim + k] : fma(x, dpsi[(q * n + g) * dim + k], J[d * dim + k]);
      }
      det = invert<dim>(J, K);
      return det > 0;
    };
    // The physical gradient of basis function i at point q: g[d] = Σ_k K[k][d] ∂φi/∂ξk.
    auto gradient = [&](int q, int i, double* g) {
      FEM_UNROLL
      for (int d = 0; d < dim; ++d) {
        double s = K[d] * dphi[(q * n + i) * dim];
        FEM_UNROLL
        for (int k = 1; k < dim; ++k) s = fma(K[k * dim + d], dphi[(q * n + i) * dim + k], s);
        g[d] = s;
      }
    };
    if (affine && !geometry(0)) {
      atomic_min(job.bad_cell, c);
      return;
    }
    // Rows node by node (a loop, not unrolled: that is the point), the node's components
    // unrolled, so that every index into R and the gradients is known at compile time (a
    // computed one would put them in local memory).
    for (int i = 0; i < n; ++i) {
      // Elasticity's components stay a loop too (three 24-entry rows at once took 218 registers
      // on hexahedra); its entries then take the component's gradient entries as scalars.
#if defined(__CUDA_ARCH__)
#pragma unroll(elasticity ? 1 : BS)
#endif
      for (int a = 0; a < BS; ++a) {
        // The row's columns in groups of `group` nodes (one group but for hexahedral
        // elasticity, whose 24 columns at once took 216 registers): R holds one group.
        for (int j0 = 0; j0 < n; j0 += group) {
          double R[group * BS] = {};
          for (int q = 0; q < NQ; ++q) {
            // A bad point is found in the first row, before anything is scattered.
            if (!affine && !geometry(q)) {
              atomic_min(job.bad_cell, c);
              return;
            }
            const double wq = w[q] * det;
            if constexpr (mass) {
              const double rw = kernel.rho(c, tag, nullptr) * wq;
              const double phi_i = phi[q * n + i];
              FEM_UNROLL
              for (int j = 0; j < group; ++j) R[j * BS + a] += rw * Kernel::pair(phi_i, phi[q * n + j0 + j]);
            } else {
              double gi[dim], gj[dim];
              gradient(q, i, gi);
              if constexpr (elasticity) {
                const auto [lambda, mu] =
                    kernels::lame(kernel.young(c, tag, nullptr), kernel.poisson(c, tag, nullptr),
                                  dim == 2 && kernel.plane_stress);
                const double gia = pick<dim>(gi, a);
                FEM_UNROLL
                for (int j = 0; j < group; ++j) {
                  gradient(q, j0 + j, gj);
                  const double dot = kernels::Diffusion<TagCoefficient>::pair<dim>(gi, gj),
                               gja = pick<dim>(gj, a);
                  FEM_UNROLL
                  for (int b = 0; b < dim; ++b)
                    R[j * dim + b] +=
                        Kernel::entry(wq, lambda, mu, gia, gi[b], gja, gj[b], a == b ? dot : 0.0);
                }
              } else {
                const double kw = kernel.k(c, tag, nullptr) * wq;
                FEM_UNROLL
                for (int j = 0; j < group; ++j) {
                  gradient(q, j0 + j, gj);
                  R[j] += kw * Kernel::template pair<dim>(gi, gj);
                }
              }
            }
          }
          const std::size_t row =
              static_cast<std::size_t>(i * BS + a) * nd + static_cast<std::size_t>(j0 * BS);
          FEM_UNROLL
          for (int col = 0; col < group * BS; ++col) {
            if constexpr (mass && BS > 1)
              if (col % BS != a) continue;  // a vector mass matrix couples equal components only
            double* v = job.values + job.slots[(row + col) * stride + p];
            if (job.atomic)
              atomic_add(v, R[col]);
            else
              *v += R[col];  // no other cell of the colour shares a node
          }
        }
      }
    }
  }
};

template <class Launch, class E, int BS, int NQ, class Kernel>
void launch_cells(const gpu::Executor& exec, const DeviceJob& job, const Kernel& kernel) {
  if (job.atomic) {
    Launch::for_each(exec, static_cast<std::size_t>(job.num_cells), CellRows<E, BS, NQ, Kernel>{job, kernel});
    return;
  }
  // One launch per colour, in colour order: each slot gets its contributions in the same order
  // on every run and device, and A(i, j) and A(j, i) in the same order from bitwise equal
  // element entries.
  for (int k = 0; k < job.num_colours; ++k) {
    DeviceJob part = job;
    part.first = job.colour_offsets[k];
    Launch::for_each(exec, static_cast<std::size_t>(job.colour_offsets[k + 1] - job.colour_offsets[k]),
                     CellRows<E, BS, NQ, Kernel>{part, kernel});
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
