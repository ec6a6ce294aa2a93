// The assembly front end: one Assembler per space holds the cached plan (pattern, slots,
// colouring) and turns forms into matrices and vectors, into caller-provided views or new
// objects ready to publish in the store.
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
#include "fem/memory.hpp"

namespace fem::assembly {

class Assembler {
 public:
  /// Gets V's plan from the store (or builds and caches it; on `exec` when given a device).
  explicit Assembler(FunctionSpace V, const gpu::Executor& exec = gpu::Executor::host());

  const FunctionSpace& space() const noexcept { return space_; }
  const AssemblyPlan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const AssemblyPlan>& plan_ptr() const noexcept { return plan_; }
  const std::shared_ptr<const CsrPattern>& pattern() const noexcept { return plan_->connectivity.pattern; }

  // --- matrices: into the CSR values of pattern() (zeroed first), or as a new matrix --------

  void matrix_into(const Diffusion& form, std::span<double> values) const;
  void matrix_into(const Mass& form, std::span<double> values) const;
  void matrix_into(const Elasticity& form, std::span<double> values) const;
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
  /// The residual of a nonlinear form at u.
  void residual_into(const NonlinearForm& form, std::span<const double> u, std::span<double> b) const;
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
  FunctionSpace space_;
  std::shared_ptr<const AssemblyPlan> plan_;
};

}  // namespace fem::assembly
