// Mixed spaces and incompressible flow: the Taylor–Hood space (P2–P1 on triangles and
// tetrahedra, Q2–Q1 on quadrilaterals) with one DOF map and one connectivity for the whole block
// matrix, built once per mesh version through the hash-table builder and cached in the store;
// the Stokes and Navier–Stokes forms on it, assembled by one kernel that gives the residual and
// the Jacobian (Newton or Picard) of the steady equations. docs/flow.md.
//
//   fem::assembly::MixedSpace W("mesh");                        // Taylor–Hood, cached plan
//   fem::assembly::Flow flow{.viscosity = 0.01, .convection = true};
//   std::vector<double> F(W.num_dofs()), J(W.pattern()->nnz());
//   fem::assembly::flow_into(W, flow, w, J, F);                 // F(w) and ∂F/∂w at w
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/forms.hpp"
#include "fem/assembly/plan.hpp"
#include "fem/assembly/space.hpp"
#include "fem/null_space.hpp"

namespace fem::assembly {

/// Taylor–Hood: the velocity in the degree-2 Lagrange space with one component per coordinate,
/// the pressure in the degree-1 space on the same vertices. One DOF numbering, field-blocked:
/// the velocity's DOFs first, numbered as velocity() numbers them (node·dim + component), so that
/// Dirichlet data, output and functionals of the velocity use velocity() directly; then one
/// pressure DOF per vertex node, pressure_offset() + the vertex's node number in velocity()'s map
/// (the same numbering as pressure()'s). The block matrix's pattern and element-to-slot map come
/// from the hash-table builder over the mixed cell DOFs, cached as `<mesh>#plan/TaylorHood`.
class MixedSpace {
 public:
  /// On the first-order mesh published under `mesh_key` (tri3, quad4, tet4; its geometry is
  /// taken from the cell vertices).
  explicit MixedSpace(std::string mesh_key, Store& store = fem::store());

  const FunctionSpace& velocity() const noexcept { return velocity_; }
  const FunctionSpace& pressure() const noexcept { return pressure_; }
  const Mesh& mesh() const noexcept { return velocity_.mesh(); }
  int dim() const noexcept { return velocity_.components(); }
  index_t num_dofs() const noexcept { return velocity_.num_dofs() + pressure_.num_dofs(); }
  index_t pressure_offset() const noexcept { return velocity_.num_dofs(); }
  index_t num_pressure_dofs() const noexcept { return pressure_.num_dofs(); }
  int dofs_per_cell() const noexcept { return dofs_per_cell_; }
  /// num_cells × dofs_per_cell: a cell's velocity DOFs (node by node, components interleaved),
  /// then its pressure DOFs (vertex by vertex).
  std::span<const index_t> cell_dofs() const noexcept { return *cell_dofs_; }
  const AssemblyPlan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const CsrPattern>& pattern() const noexcept { return plan_->connectivity.pattern; }
  /// The constant pressures: the null space of a flow with the velocity given on the whole
  /// boundary, normalized to ∫p = 0 (the functional is the pressure mass's row sums).
  std::shared_ptr<const NullSpace> pressure_null_space() const;
  /// The pressure's values at pressure().dofmap() nodes (the vertices) from a mixed vector.
  std::span<const double> pressure_part(std::span<const double> w) const {
    return w.subspan(static_cast<std::size_t>(pressure_offset()),
                     static_cast<std::size_t>(num_pressure_dofs()));
  }
  std::span<const double> velocity_part(std::span<const double> w) const {
    return w.first(static_cast<std::size_t>(pressure_offset()));
  }

 private:
  FunctionSpace velocity_, pressure_;
  int dofs_per_cell_ = 0;
  std::shared_ptr<const std::vector<index_t>> cell_dofs_;
  std::shared_ptr<const AssemblyPlan> plan_;
};

/// How the Jacobian linearizes the convection: Newton's full derivative, or Picard's
/// (w·∇)δu alone (a wider basin of convergence, linear convergence).
enum class Linearization { newton, picard };

/// Steady incompressible flow: ρ(u·∇)u − div(μ∇u) + ∇p = f, −div u = 0 (`symmetric_gradient`:
/// −div(2μ ε(u)), whose natural outflow condition is a zero physical traction). The weak
/// residual at w = (u, p) is
///   F_v = ∫ μ∇u:∇v (or 2μ ε(u):ε(v)) + ρ(u·∇)u·v − p div v − f·v,   F_q = −∫ q div u,
/// a symmetric saddle point without convection. `viscosity` is the dynamic μ (the kinematic ν
/// when ρ = 1). A zero viscosity is allowed for residuals (the explicit terms of a projection
/// scheme), not for a Jacobian that is to be solved with.
struct Flow {
  double viscosity = 1.0;
  double density = 1.0;             ///< ρ in front of the convection (0 or convection false: Stokes)
  bool convection = false;          ///< Navier–Stokes
  bool symmetric_gradient = false;  ///< 2ν ε(u):ε(v) (tractions are physical at an outflow)
  Linearization linearization = Linearization::newton;
  VectorFunction body_force;  ///< f (dim components); null: none
  /// Assembled loads on the velocity's DOFs, subtracted from F_v (∫ g·v of tractions:
  /// assemble_neumann on W.velocity()); null: none.
  std::shared_ptr<const std::vector<double>> load;
  /// 1/κ of a nearly incompressible material: the continuity residual becomes
  /// F_q = −∫ q div u − ∫ (1/κ) p q (u–p elasticity: κ = λ, p = −λ div u). 0: incompressible.
  double compressibility = 0;
  /// Values of μ and 1/κ per point (materials per cell tag, in x): replaces viscosity and
  /// compressibility where set. (cell, its tag, x) → mu, compressibility.
  std::function<void(index_t cell, int tag, const double* x, double* mu, double* compressibility)> material;

  /// Stokes flow of viscosity μ; Navier–Stokes of viscosity μ and density ρ.
  static Flow stokes(double viscosity) {
    Flow f;
    f.viscosity = viscosity;
    return f;
  }
  static Flow navier_stokes(double viscosity, double density = 1.0) {
    Flow f = stokes(viscosity);
    f.density = density;
    f.convection = true;
    return f;
  }
  /// Mixed (u–p) linear elasticity: ∫2μ ε(u):ε(v) − ∫p div v, −∫q div u − ∫p q/λ; the stress is
  /// σ = 2μ ε(u) − p I. It does not lock as λ/μ → ∞ (ν → ½), where displacement-only P1 does.
  static Flow up_elasticity(double mu, double lambda) {
    Flow f = stokes(mu);
    f.symmetric_gradient = true;
    f.compressibility = 1 / lambda;
    return f;
  }
};

/// The stress of a u–p displacement and pressure w, σ = 2μ ε(u) − p I averaged over each cell: 6
/// values per cell in VTK's order xx, yy, zz, xy, yz, xz (2D: σzz = −p, plane strain; yz = xz = 0).
/// μ from flow.material where set, else flow.viscosity.
std::vector<double> up_cell_stress(const MixedSpace& W, const Flow& flow, std::span<const double> w);

/// The residual F(w) added into F and the Jacobian ∂F/∂w at w written into `values` (zeroed
/// first; the pattern of W.pattern()); either may be empty. For Stokes the Jacobian is the
/// matrix and −F(0) the load.
void flow_into(const MixedSpace& W, const Flow& flow, std::span<const double> w, std::span<double> values,
               std::span<double> F);

/// What a user's block kernel sees on one cell (mixed_into): the quadrature points with their
/// weights (w·|det J|) and coordinates, the velocity basis's values and physical gradients, the
/// pressure basis's values, and the cell's values of the state w. Local DOF order: the velocity's
/// (node a, component k) at a·dim + k, then the pressure's at velocity_dofs() + m.
struct MixedCell {
  index_t cell = -1;
  int dim = 0, points = 0, velocity_nodes = 0, pressure_nodes = 0;
  const double* weight = nullptr;    ///< [q]
  const double* x = nullptr;         ///< [q·3 + d]
  const double* phi = nullptr;       ///< velocity basis [q·velocity_nodes + a]
  const double* grad_phi = nullptr;  ///< its physical gradients [(q·velocity_nodes + a)·dim + d]
  const double* psi = nullptr;       ///< pressure basis [q·pressure_nodes + m]
  const double* w = nullptr;         ///< the cell's values of the state (local DOF order)
  int velocity_dofs() const noexcept { return velocity_nodes * dim; }
  int dofs() const noexcept { return velocity_dofs() + pressure_nodes; }
};
/// A user's block kernel: adds the element matrix A (dofs × dofs, row-major; null when only the
/// residual is wanted) and the element residual R (dofs; null when only the matrix is wanted).
using MixedKernel = std::function<void(const MixedCell& cell, double* A, double* R)>;
/// Assembles a user's block forms on W through the same plan and element-to-slot map as
/// flow_into: the matrix into values (zeroed first; may be empty) and the residual added into F
/// (may be empty), at the state w, with a quadrature exact to `quadrature_degree` on affine cells.
/// The kernel is called from several threads at once (colours of cells that share no DOF).
void mixed_into(const MixedSpace& W, const MixedKernel& kernel, int quadrature_degree,
                std::span<const double> w, std::span<double> values, std::span<double> F);

/// F += ∫ρ (u·∇)u·v on the velocity rows (u: the velocity part of a mixed vector, or the mixed
/// vector; F the same): the explicit convection of a projection step, without flow_into's other
/// terms (the same values as its convection, at less than half its cost).
void convection_into(const MixedSpace& W, double density, std::span<const double> u, std::span<double> F);

/// The velocity mass matrix ∫ρ u·v (zero pressure block), on W.pattern(), into values (zeroed first).
void velocity_mass_into(const MixedSpace& W, double density, std::span<double> values);

/// The Schur complement's spectral equivalent for a block preconditioner of flow_into's matrix:
/// −∫ (1/μ' + 1/κ) p q with μ' = μ (2μ with symmetric_gradient) and μ, 1/κ per point as flow_into
/// takes them, on W.pattern()'s pressure block (the rest zero), into values (zeroed first). The
/// sign is the Schur complement's: flow_into's continuity row is −(q, div u).
void schur_mass_into(const MixedSpace& W, const Flow& flow, std::span<double> values);

/// The pressure convection–diffusion (PCD) preconditioner's operators (Kay, Loghin, Wathen;
/// Elman, Silvester, Wathen §9.2) on W.pattern()'s pressure block (the rest zero), into values
/// zeroed first: `laplacian` A_p = ∫∇p·∇q and `convection` F_p = ∫ μ'∇p·∇q + ρ(u·∇p) q, u the
/// velocity of w (μ' as schur_mass_into; no convection: F_p = μ'A_p). `open`: the flow has an
/// outflow (the pressure has no free constant); then both get Dirichlet rows at the inflow, the
/// boundary vertices where `velocity` (the Dirichlet data) is not zero (Elman and Tuminaro 2009):
/// row and column zeroed, A_p's diagonal kept, F_p's μ' times it. With the mass M_p,
/// S⁻¹ ≈ −M_p⁻¹ F_p A_p⁻¹ approximates the inverse Schur complement of flow_into's Oseen matrix.
void pcd_into(const MixedSpace& W, const Flow& flow, std::span<const double> w,
              const DirichletValues& velocity, bool open, std::span<double> laplacian,
              std::span<double> convection);

}  // namespace fem::assembly
