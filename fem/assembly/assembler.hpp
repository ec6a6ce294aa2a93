// The assembly front end: one Assembler per space holds the cached plan (pattern, slots,
// colouring) and turns forms into matrices and vectors, into caller-provided views or new
// objects ready to publish in the store. It runs where its executor says: on the host (OpenMP),
// or on a device executor (CUDA, or the debug device), where the connectivity is built and the
// bilinear forms the device kernels cover are assembled (device.hpp), copied back into the
// caller's values or left on the device (matrix_into_device); vectors, nonlinear forms and
// functionals run on the host whatever the executor.
//
//   fem::store().put("mesh/square", fem::mesh::unit_square(fem::CellType::tri3, 64));
//   fem::assembly::FunctionSpace V("mesh/square", 1);
//   fem::assembly::Assembler assembler(V);                  // connectivity built once, cached
//   fem::store().put("A", assembler.matrix(fem::assembly::Diffusion{}));
//   assembler.matrix_into(fem::assembly::Diffusion{k}, values);   // re-assembly: scatter only
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "fem/assembly/assemble.hpp"
#include "fem/assembly/forms.hpp"
#include "fem/assembly/plan.hpp"
#include "fem/csr.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/memory.hpp"

namespace fem::assembly {

struct DeviceMesh;
struct DevicePlan;
namespace detail {
class DeviceEngine;
}

class Assembler {
 public:
  /// How a device executor's element matrices reach the CSR values: one launch per colour with
  /// plain adds (the same bits every run, bitwise symmetric for symmetric forms), or one launch
  /// over all cells with atomic adds (the last bits depend on the order the device runs them in).
  enum class Scatter { coloured, atomic };

  /// Gets V's plan from the store (or builds and caches it on `exec`). On a device executor the
  /// mesh and the element→slot map are uploaded (and cached) at the first device assembly.
  explicit Assembler(FunctionSpace V, const gpu::Executor& exec = gpu::Executor::host(),
                     Scatter scatter = Scatter::coloured);

  const gpu::Executor& executor() const noexcept { return exec_; }
  const FunctionSpace& space() const noexcept { return space_; }
  const AssemblyPlan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const AssemblyPlan>& plan_ptr() const noexcept { return plan_; }
  const std::shared_ptr<const CsrPattern>& pattern() const noexcept { return plan_->connectivity.pattern; }

  // --- matrices: into the CSR values of pattern() (zeroed first), or as a new matrix --------

  void matrix_into(const Diffusion& form, std::span<double> values) const;
  void matrix_into(const Mass& form, std::span<double> values) const;
  void matrix_into(const Elasticity& form, std::span<double> values) const;

  // --- on a device executor: the values in its memory (device.hpp) -------------------------

  /// A buffer for the CSR values of pattern() in the executor's memory.
  gpu::DeviceBuffer<double> values_buffer() const;
  /// Assemble into CSR values on the device (zeroed first): no connectivity work, no host round
  /// trip but the 4-byte inverted-cell flag read at the end (an inverted or degenerate cell is
  /// InvalidArgument naming it, as on the host).
  void matrix_into_device(const Diffusion& form, gpu::DeviceBuffer<double>& values) const;
  void matrix_into_device(const Mass& form, gpu::DeviceBuffer<double>& values) const;
  void matrix_into_device(const Elasticity& form, gpu::DeviceBuffer<double>& values) const;
  /// The device copies of the mesh (cells in colour order) and of the element→slot map.
  const DeviceMesh& device_mesh() const;
  const DevicePlan& device_plan() const;

  // --- on the host, whatever the executor ---------------------------------------------------

  /// The Jacobian of a nonlinear form at u.
  void jacobian_into(const NonlinearForm& form, std::span<const double> u, std::span<double> values) const;
  /// A user's element kernel (see assemble.hpp), with a quadrature exact to `quadrature_degree`.
  template <class Kernel>
  void matrix_into(const Kernel& kernel, int quadrature_degree, std::span<double> values,
                   std::span<const double> u = {}) const {
    assemble_matrix(space_, *plan_, kernel, quadrature_degree, values, u);
  }

  template <class Form>
  CsrMatrix matrix(const Form& form) const {
    std::vector<double> values = prefaulted_vector<double>(pattern()->nnz());
    matrix_into(form, values);
    return CsrMatrix(pattern(), std::move(values));
  }
  CsrMatrix jacobian(const NonlinearForm& form, std::span<const double> u) const;

  // --- derivatives with respect to per-cell coefficients --------------------------------

  /// d/dk_c of Σ_s w_s A_s, A the matrix of the form with a per-cell coefficient k (diffusion's
  /// k, mass's rho: the matrix is linear in it), for every cell c: the chain rule from the
  /// gradient `w` of a function of the matrix values (one per nonzero of pattern()) to the
  /// cells' coefficients. Equals −gᵀA_c x for w = −g xᵀ on the pattern (the gradient of a
  /// solve). The form's own coefficient is not used.
  std::vector<double> cell_gradient(const Diffusion& form, std::span<const double> w) const;
  std::vector<double> cell_gradient(const Mass& form, std::span<const double> w) const;

  // --- vectors: added to b (space().num_dofs() entries), or as a new vector -----------------

  void vector_into(const Source& form, std::span<double> b) const;
  void vector_into(const VectorSource& form, std::span<double> b) const;
  void vector_into(const Neumann& form, std::span<double> b) const;
  /// The residual of a nonlinear form at u, added to b.
  void residual_into(const NonlinearForm& form, std::span<const double> u, std::span<double> b) const;
  /// Both in one pass over the cells: the residual added to b, the Jacobian into values.
  void residual_and_jacobian_into(const NonlinearForm& form, std::span<const double> u, std::span<double> b,
                                  std::span<double> values) const;
  template <class Kernel>
  void vector_into(const Kernel& kernel, int quadrature_degree, std::span<double> b,
                   std::span<const double> u = {}) const {
    assemble_vector(space_, *plan_, kernel, quadrature_degree, b, u);
  }

  template <class Form>
  std::vector<double> vector(const Form& form) const {
    std::vector<double> b(space_.num_dofs(), 0.0);
    vector_into(form, b);
    return b;
  }
  std::vector<double> residual(const NonlinearForm& form, std::span<const double> u) const;

  /// The quadrature degree the library uses for a form of polynomial degree `integrand_degree`
  /// on this space's cells (two more on non-affine cells, whose Jacobian varies).
  int quadrature_degree(int integrand_degree) const;

 private:
  const detail::DeviceEngine* device() const noexcept { return device_.get(); }
  const detail::DeviceEngine& require_device(const char* what) const;
  FunctionSpace space_;
  std::shared_ptr<const AssemblyPlan> plan_;
  gpu::Executor exec_;
  std::shared_ptr<const detail::DeviceEngine> device_;  // on a device executor
};

}  // namespace fem::assembly
