// libfem_flow: incompressible flow on the Taylor–Hood space (fem/assembly/mixed.hpp): steady
// Stokes and Navier–Stokes (Picard steps, then Newton, every Jacobian on one symbolic analysis of
// the block pattern), the unsteady incremental pressure-correction scheme whose three matrices
// are factorized once for the whole run, and the functionals of a flow (the force on a boundary
// by the volume formulation, the pressure at points). docs/flow.md.
//
//   auto W = std::make_shared<const fem::assembly::MixedSpace>("mesh");
//   fem::flow::solve_steady(W, {.viscosity = 1e-3, .convection = true}, bc, false, w);
//   std::array<double, 3> F = fem::flow::force(*W, flow, w, fem::flow::boundary_nodes(W->velocity(),
//   {cylinder}));
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/mixed.hpp"
#include "fem/newton/newton.hpp"
#include "fem/solve/linear_solver.hpp"
#include "fem/store.hpp"
#include "fem/time/time.hpp"

namespace fem::flow {

using assembly::Flow;
using assembly::MixedSpace;

struct SteadyOptions {
  /// Picard iterations before Newton (Navier–Stokes only): they widen Newton's basin at higher
  /// Reynolds numbers; they stop early when they converge.
  int picard_steps = 3;
  newton::Options newton = {};
};

struct SteadyResult {
  newton::Result picard;  ///< empty (no iterations) for Stokes or picard_steps = 0
  newton::Result newton;
  bool converged() const noexcept { return newton.converged; }
};

/// The steady flow with the velocity values of `bc` (DOFs of W->velocity()) from the guess in w
/// (its constrained velocity DOFs are set here). `pressure_null_space`: the velocity is given on
/// the whole boundary, so p is found with ∫p = 0. Picard and Newton publish their Jacobians as
/// `<name>/J` (one pattern: one symbolic analysis) and factorize them with `solver` (null: a
/// serial one from options.newton.linear; fem::dist::make_solver(*W, ...) on a distributed mesh,
/// with `bc` every process's conditions: docs/flow.md, "Distributed").
SteadyResult solve_steady(std::shared_ptr<const MixedSpace> W, const Flow& flow,
                          const assembly::DirichletValues& bc, bool pressure_null_space, std::span<double> w,
                          const SteadyOptions& options = {}, const std::string& name = "flow",
                          Store& store = fem::store(), std::shared_ptr<solve::LinearSolver> solver = nullptr);

/// The linear-solver options for flow's saddle-point matrices on W: `options` as given, and for
/// the fieldsplit backend (FGMRES with a Schur-complement field split, fem::dist) the Schur
/// complement's preconditioner: for Stokes, u–p elasticity and enclosed flows
/// (`pressure_null_space`) assembly::schur_mass_into(W, flow) under `<name>/schur`; with
/// convection and an outflow the pressure convection–diffusion preconditioner, minus
/// the pressure mass under `<name>/schur` and the keys `<name>/schur/laplacian`, `.../convection`
/// that newton::flow_problem fills at each Jacobian (assembly::pcd_into). A key is republished
/// only when its values change. On a distributed mesh each process publishes its part.
solve::Options solver_options(const MixedSpace& W, const Flow& flow, bool pressure_null_space,
                              solve::Options options, const std::string& name = "flow",
                              Store& store = fem::store());

/// The nodes of V on the facets of `where` (tags, or FacetSet::all(); sorted): where a force is summed. On a
/// distributed mesh (`layout`: V's, fem::dist::layout(V)) a process also has the nodes it shares with a
/// process whose part holds their facets. Collective.
std::vector<index_t> boundary_nodes(const assembly::FunctionSpace& V, assembly::FacetSet where,
                                    const Layout& layout = Layout::serial());

/// The force of the fluid on the boundary whose velocity nodes are `nodes` (W.velocity()'s), by the
/// volume formulation: minus the momentum residual at w summed over those nodes per component,
/// i.e. ∮ σ n over the boundary with σ the discrete stress, consistent with the discrete
/// equations (it converges at the rate of the solution's energy norm squared, faster than the
/// stress integrated on the surface). `inertia`: ρ M (u^{n+1} − u^n)/dt of an unsteady step on
/// the velocity DOFs (empty for a steady flow). dim values (per unit depth in 2D). On a
/// distributed mesh (`layout`: W's, fem::dist::layout(W); w and inertia consistent) the residual
/// is summed over the processes and each node counted by its owner. Collective.
std::array<double, 3> force(const MixedSpace& W, const Flow& flow, std::span<const double> w,
                            std::span<const index_t> nodes, std::span<const double> inertia = {},
                            const Layout& layout = Layout::serial());

/// Unsteady flow as one first-order system for fem::time (monolithic: velocity and pressure
/// together): M ẇ + N(w) = 0 with M the velocity's mass ρ (the pressure block zero: a DAE of index
/// 2 that BDF and backward Euler integrate) and N the steady residual of `flow`. Publishes
/// `<name>/M` and `<name>/K` (zero) on the block pattern and returns the problem with its
/// nonlinear part (and, with `pressure_null_space`, the pressure's constants); the caller adds the
/// velocity's Dirichlet data, the solver, and picks the scheme (BDF2: `fem navier-stokes --scheme
/// bdf2`). Each step is Newton on M + c ∂N/∂w, lagged across steps as fem::time does.
/// `at_time(t)`: called before N is evaluated at t (time-dependent data of `flow`); may be null.
time::FirstOrder monolithic(std::shared_ptr<const MixedSpace> W, const Flow& flow, bool pressure_null_space,
                            const std::string& name, Store& store = fem::store(),
                            std::function<void(double)> at_time = nullptr);

/// The incremental pressure-correction scheme (Goda 1979; the "IPCS" of the FEniCS and DOLFINx
/// tutorials) with explicit convection (Adams–Bashforth 2, forward Euler in the first step) and
/// Crank–Nicolson viscosity. With M = ∫ρ u v and K = ∫μ ∇u·∇v on the scalar P2 space, per step:
///   1. (M/dt + ½K) u*_k = (M/dt − ½K) uⁿ_k − (3/2 Cⁿ − ½ Cⁿ⁻¹)_k + ∫pⁿ ∂_k v + ∫f_k v
///      for each component k, Cⁿ = ∫ρ(uⁿ·∇)uⁿ·v, the velocity's Dirichlet values at t_{n+1};
///   2. K_p φ = −(ρ/dt) ∫ q div u* (K_p the P1 Laplacian), φ = 0 at the outflow (pressure_dofs),
///      p^{n+1} = pⁿ + φ;
///   3. M u^{n+1}_k = M u*_k − dt ∫ ∂_k φ v, the Dirichlet values again.
/// The velocity's components decouple, so one scalar factorization serves all of them (one
/// solve with several right-hand sides), unless components are constrained on different nodes
/// (then one per distinct set). With convection explicit all three matrices are constant: each
/// is factorized once for the whole run (the store's counters show it), and a step is the
/// assembly of its right-hand sides and cached solves.
struct Projection {
  std::string name = "ipcs";  ///< prefix of the store entries
  std::shared_ptr<const MixedSpace> W;
  double viscosity = 1, density = 1;
  bool convection = true;
  /// f at t (dim values); null: none.
  std::function<void(double t, const double* x, double* f)> body_force;
  /// Assembled loads on the velocity DOFs (∫ g·v of tractions), constant in time; null: none.
  std::shared_ptr<const std::vector<double>> load;
  /// Velocity DOFs of W->velocity() with their values at t.
  time::Dirichlet velocity;
  /// Pressure DOFs of W->pressure() where p = 0 (a do-nothing outflow); empty: p is free up to a
  /// constant (solved with Σp_i = 0).
  std::vector<index_t> pressure_dofs;
  solve::Options linear = {};
};

class ProjectionStepper {
 public:
  /// w0: velocity and pressure at t0 (the mixed vector of W).
  ProjectionStepper(Store& store, Projection problem, double dt, std::vector<double> w0, double t0 = 0);
  ~ProjectionStepper();
  void step();
  double t() const noexcept { return t_; }
  double dt() const noexcept { return dt_; }
  /// The mixed vector (u, p) at t().
  std::span<const double> w() const noexcept { return w_; }
  /// ρ M (u^{n+1} − u^n)/dt of the last step on the velocity DOFs: force()'s inertia.
  /// (Computed on the first call after a step.)
  std::span<const double> inertia() const;
  index_t steps() const noexcept { return steps_; }
  /// The distinct matrices factorized (2 per velocity constraint set, and the pressure's).
  index_t matrices() const noexcept;

 private:
  struct Impl;
  Store& store_;
  Projection p_;
  double dt_ = 0, t_ = 0;
  std::vector<double> w_, change_;       // change_: (u^{n+1} − uⁿ)/dt
  mutable std::vector<double> inertia_;  // M change_, when asked for
  mutable bool inertia_ready_ = true;
  index_t steps_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fem::flow
