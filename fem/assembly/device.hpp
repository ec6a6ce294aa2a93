// Assembly on an executor's memory (a CUDA device, or the debug device that runs the same code
// path on the CPU): the mesh geometry and the plan's element→slot map are uploaded once and
// cached in the store as device-resident entries; every assembly then runs one thread per cell
// (the element math of assemble.hpp and detail/kernels.hpp, shared as __host__ __device__ code)
// and scatters the element matrix into the CSR values on the device. The cells are coloured so
// that no two cells of a colour share a node, and each colour is one launch with plain adds:
// every slot receives its contributions in colour order, so the result is the same bits on
// every run, and A(i, j) and A(j, i) are bitwise equal (Scatter::atomic, one launch with atomic
// adds, is kept for comparison).
//
//   fem::assembly::DeviceAssembler da(V, fem::gpu::Executor::cuda());
//   auto values = da.values_buffer();                        // nnz doubles on the device
//   da.matrix_into_device(fem::assembly::Diffusion{k}, values);  // stays on the device
//   da.matrix_into(fem::assembly::Mass{}, host_values);      // or copied back for the CPU solver
//
// Supported: P1 on triangles and tetrahedra, Q1 on quadrilaterals and hexahedra, scalar or one
// component per dimension; diffusion, mass and elasticity with constant or per-tag
// coefficients. Anything else is InvalidArgument (use the host Assembler).
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

/// A space's DOF map cell nodes and its plan's element→slot map in an executor's memory. Cached
/// as `<mesh key>#device-plan/<space>/<executor>`, derived from the mesh's version.
struct DevicePlan {
  gpu::DeviceBuffer<index_t> dof_cells;  ///< num_cells × nodes_per_cell (the space's node numbers)
  /// The element→slot map in the mesh's colour order, entry-major: entry k of position p at
  /// [k · num_cells + p] (num_cells × dofs_per_cell² in all).
  gpu::DeviceBuffer<index_t> element_slots;
  int dofs_per_cell = 0;
  std::size_t nnz = 0;
  Residency where = Residency::device;

  std::size_t bytes() const noexcept { return sizeof(*this) + dof_cells.bytes() + element_slots.bytes(); }
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

class DeviceAssembler {
 public:
  /// How the element matrices reach the CSR values: one launch per colour with plain adds (the
  /// same bits every run, bitwise symmetric for symmetric forms), or one launch over all cells
  /// with atomic adds (the last bits depend on the order the device happens to run them in).
  enum class Scatter { coloured, atomic };

  /// The host Assembler of V (its plan built on `exec` or found in the store) and the device
  /// copies of the mesh and plan (uploaded or found in the store).
  DeviceAssembler(FunctionSpace V, gpu::Executor exec, Scatter scatter = Scatter::coloured);
  Scatter scatter() const noexcept { return scatter_; }

  const Assembler& host() const noexcept { return host_; }
  const FunctionSpace& space() const noexcept { return host_.space(); }
  const gpu::Executor& executor() const noexcept { return exec_; }
  const std::shared_ptr<const CsrPattern>& pattern() const noexcept { return host_.pattern(); }

  /// A buffer for the CSR values of pattern() in the executor's memory.
  gpu::DeviceBuffer<double> values_buffer() const {
    return gpu::DeviceBuffer<double>(exec_, pattern()->nnz());
  }

  /// Assemble into CSR values on the device (zeroed first): no connectivity work, no host
  /// round trip but the 4-byte inverted-cell flag read at the end (an inverted or degenerate
  /// cell is InvalidArgument naming it, as on the host).
  void matrix_into_device(const Diffusion& form, gpu::DeviceBuffer<double>& values) const;
  void matrix_into_device(const Mass& form, gpu::DeviceBuffer<double>& values) const;
  void matrix_into_device(const Elasticity& form, gpu::DeviceBuffer<double>& values) const;

  /// Assemble on the device, then copy the values into `values` (pattern()->nnz() entries).
  /// The values come back through a page-locked staging buffer kept with the assembler (a
  /// copy into pageable memory is staged by the driver and costs more than the assembly).
  template <class Form>
  void matrix_into(const Form& form, std::span<double> values) const {
    FEM_EXPECTS(values.size() == pattern()->nnz(), "matrix values: {} given, the pattern has {} nonzeros",
                values.size(), pattern()->nnz());
    std::lock_guard lock(scratch_mutex_);
    if (scratch_.size() != values.size()) scratch_ = values_buffer();
    matrix_into_device(form, scratch_);
    if (!exec_.separate_memory()) {
      scratch_.download(values);
      exec_.context().synchronize();
      return;
    }
    if (staging_.size() != values.size()) staging_ = gpu::PinnedBuffer<double>(exec_, values.size());
    scratch_.download(staging_.span());
    exec_.context().synchronize();
    std::copy(staging_.data(), staging_.data() + values.size(), values.begin());
  }
  template <class Form>
  CsrMatrix matrix(const Form& form) const {
    std::vector<double> values(pattern()->nnz());
    matrix_into(form, values);
    return CsrMatrix(pattern(), std::move(values));
  }

  const DeviceMesh& mesh() const noexcept { return *mesh_; }
  const DevicePlan& plan() const noexcept { return *plan_; }

 private:
  struct Run;
  void run(const Run& r, gpu::DeviceBuffer<double>& values) const;
  const double* tabulation(int quadrature_degree, int* nq) const;

  gpu::Executor exec_;
  Scatter scatter_;
  Assembler host_;
  std::shared_ptr<const DeviceMesh> mesh_;
  std::shared_ptr<const DevicePlan> plan_;
  mutable std::mutex mutex_;  // tabs_
  mutable std::map<int, std::pair<int, std::shared_ptr<gpu::DeviceBuffer<double>>>> tabs_;
  mutable std::mutex run_mutex_;  // bad_cell_
  mutable gpu::DeviceBuffer<int> bad_cell_;
  mutable std::mutex scratch_mutex_;
  mutable gpu::DeviceBuffer<double> scratch_;
  mutable gpu::PinnedBuffer<double> staging_;
  mutable gpu::PinnedBuffer<int> bad_cell_host_;  // the flag read back after every assembly
};

}  // namespace fem::assembly

FEM_TYPE_NAME(fem::assembly::DeviceMesh, "fem::assembly::DeviceMesh");
FEM_TYPE_NAME(fem::assembly::DevicePlan, "fem::assembly::DevicePlan");
