// The Assembler's work on a device executor (a CUDA device, or the debug device that runs the
// same code path on the CPU): the mesh geometry and the plan's element→slot map are uploaded
// once and cached in the store as device-resident entries; every assembly then runs one thread
// per cell (the element math of assemble.hpp and detail/kernels.hpp, shared as __host__
// __device__ code) and scatters the element matrix into the CSR values on the device. The cells
// are coloured so that no two cells of a colour share a node, and each colour is one launch with
// plain adds: every slot receives its contributions in colour order, so the result is the same
// bits on every run, and A(i, j) and A(j, i) are bitwise equal (Assembler::Scatter::atomic, one
// launch with atomic adds, is kept for comparison).
//
//   fem::assembly::Assembler a(V, fem::gpu::Executor::cuda());     // the connectivity built there
//   auto values = a.values_buffer();                              // nnz doubles on the device
//   a.matrix_into_device(fem::assembly::Diffusion{k}, values);    // stays on the device
//   a.matrix_into(fem::assembly::Mass{}, host_values);            // or copied back for the CPU solver
//
// On the device: P1 on triangles and tetrahedra, Q1 on quadrilaterals and hexahedra, scalar or
// one component per dimension; diffusion, mass and elasticity with constant or per-tag
// coefficients (anything else asked of a device executor is InvalidArgument, never a silent
// host run). Vectors, nonlinear forms and functionals run on the host (Assembler's comment).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fem/assembly/assembler.hpp"
#include "fem/gpu/executor.hpp"

namespace fem::assembly {

/// A mesh's geometry in an executor's memory. Cached as `<mesh key>#device/<executor>`,
/// derived from the mesh's version, Residency::device (host on the host executor); the buffers
/// are freed with the entry.
struct DeviceMesh {
  gpu::DeviceBuffer<double> coords;  ///< num_nodes × dim
  /// The cells in colour order (cells of a colour share no node; colours greedy in cell order,
  /// cells by index within a colour), node-major: node g of position p at [g · num_cells + p]
  /// (the mesh's own node numbers), so that a warp's consecutive positions read consecutive words.
  gpu::DeviceBuffer<index_t> cells;
  gpu::DeviceBuffer<index_t> cell_ids;  ///< the mesh's cell at each position
  gpu::DeviceBuffer<int> tags;          ///< by position
  std::vector<index_t> order;           ///< host side: cell_ids
  std::vector<index_t> colour_offsets;  ///< host side: colour k is positions [offsets[k], offsets[k + 1])
  std::vector<int> distinct_tags;       ///< host side: the cell tags present, sorted
  index_t num_cells = 0, num_nodes = 0;
  int nodes_per_cell = 0, dim = 0;
  Residency where = Residency::device;  ///< host for the host executor (no separate memory)

  int num_colours() const noexcept {
    return colour_offsets.empty() ? 0 : static_cast<int>(colour_offsets.size()) - 1;
  }
  std::size_t bytes() const noexcept {
    return sizeof(*this) + coords.bytes() + cells.bytes() + cell_ids.bytes() + tags.bytes() +
           (order.size() + colour_offsets.size()) * sizeof(index_t) + distinct_tags.size() * sizeof(int);
  }
  Residency residency() const noexcept { return where; }
};

/// A space's element→slot map in an executor's memory. Cached as
/// `<mesh key>#device-plan/<space>/<executor>`, derived from the mesh's version.
struct DevicePlan {
  /// The element→slot map in the mesh's colour order, entry-major: entry k of position p at
  /// [k · num_cells + p] (num_cells × dofs_per_cell² in all).
  gpu::DeviceBuffer<index_t> element_slots;
  int dofs_per_cell = 0;
  std::size_t nnz = 0;
  Residency where = Residency::device;

  std::size_t bytes() const noexcept { return sizeof(*this) + element_slots.bytes(); }
  Residency residency() const noexcept { return where; }
};

/// The key qualifier of an executor in store keys: host, debug-device, cuda-<device name>-<context>.
std::string executor_key(const gpu::Executor& exec);

/// V's mesh on `exec`: from the store when V's mesh is in one, else uploaded (not cached).
/// Counts assembly.device_mesh_uploads.
std::shared_ptr<const DeviceMesh> device_mesh(const FunctionSpace& V, const gpu::Executor& exec);
/// V's plan on `exec`, in `mesh`'s colour order (likewise; counts assembly.device_plan_uploads).
std::shared_ptr<const DevicePlan> device_plan(const FunctionSpace& V, const AssemblyPlan& plan,
                                              const DeviceMesh& mesh, const gpu::Executor& exec);

namespace detail {

/// The device half of an Assembler on a device executor: the uploads (made on first use), the
/// tabulations, the launch, and the buffers the values come back through.
class DeviceEngine {
 public:
  DeviceEngine(const FunctionSpace& V, std::shared_ptr<const AssemblyPlan> plan, gpu::Executor exec,
               Assembler::Scatter scatter);

  void matrix_into_device(const Diffusion& form, int quadrature_degree,
                          gpu::DeviceBuffer<double>& values) const;
  void matrix_into_device(const Mass& form, int quadrature_degree, gpu::DeviceBuffer<double>& values) const;
  void matrix_into_device(const Elasticity& form, int quadrature_degree,
                          gpu::DeviceBuffer<double>& values) const;
  /// Copies device values into `values` through a page-locked staging buffer kept here (a copy
  /// into pageable memory is staged by the driver and costs more than the assembly).
  void download(const gpu::DeviceBuffer<double>& device, std::span<double> values) const;
  /// A scratch buffer of the pattern's size for assemblies copied back (one at a time).
  gpu::DeviceBuffer<double>& scratch() const;
  std::mutex& scratch_mutex() const noexcept { return scratch_mutex_; }

  const DeviceMesh& mesh() const;
  const DevicePlan& plan() const;

 private:
  struct Run;
  void run(const Run& r, gpu::DeviceBuffer<double>& values) const;
  const double* tabulation(int quadrature_degree, int* nq) const;
  void upload_once() const;

  FunctionSpace space_;
  std::shared_ptr<const AssemblyPlan> host_plan_;
  gpu::Executor exec_;
  Assembler::Scatter scatter_;
  mutable std::once_flag uploaded_;
  mutable std::shared_ptr<const DeviceMesh> mesh_;
  mutable std::shared_ptr<const DevicePlan> plan_;
  mutable std::mutex mutex_;  // tabs_
  mutable std::map<int, std::pair<int, std::shared_ptr<gpu::DeviceBuffer<double>>>> tabs_;
  mutable std::mutex run_mutex_;  // bad_cell_
  mutable gpu::DeviceBuffer<int> bad_cell_;
  mutable gpu::PinnedBuffer<int> bad_cell_host_;  // the flag read back after every assembly
  mutable std::mutex scratch_mutex_;
  mutable gpu::DeviceBuffer<double> scratch_;
  mutable gpu::PinnedBuffer<double> staging_;
};

}  // namespace detail

}  // namespace fem::assembly

FEM_TYPE_NAME(fem::assembly::DeviceMesh, "fem::assembly::DeviceMesh");
FEM_TYPE_NAME(fem::assembly::DevicePlan, "fem::assembly::DevicePlan");
