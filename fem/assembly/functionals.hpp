// Functionals of discrete fields: nodal interpolation, integrals, the L2 and H1 errors against
// exact solutions (for verification and convergence studies), and cell-wise stresses.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/null_space.hpp"

namespace fem::assembly {

/// The nodal interpolant of f (components values per node) on V.
std::vector<double> interpolate(const FunctionSpace& V, const VectorFunction& f);
/// The same for a scalar function on a scalar space.
std::vector<double> interpolate(const FunctionSpace& V, const Function& f);

/// ∫ u (component `component`).
double integrate(const Assembler& assembler, std::span<const double> u, int component = 0);

/// The gradient of an exact solution: grad[k * dim + d] = ∂u_k/∂x_d.
using GradientFunction = std::function<void(const double* x, double* grad)>;

struct Errors {
  double l2 = 0;  ///< ‖u - u_h‖ in L2
  double h1 = 0;  ///< |u - u_h| in the H1 seminorm
};

/// Errors of the discrete u against `exact` (and its gradient; when none is given it is taken
/// by central differences of `exact`, accurate to about 1e-9 relative), with a quadrature
/// `extra_degree` above what the space itself needs.
Errors errors(const Assembler& assembler, std::span<const double> u, const VectorFunction& exact,
              const GradientFunction& exact_gradient = nullptr, int extra_degree = 3);

/// The Cauchy stress σ = λ tr(ε) I + 2μ ε of the displacement u (a space with one component per
/// dimension) for the material of `form`, averaged over each cell: 6 values per cell in the
/// order xx, yy, zz, xy, yz, xz (VTK's symmetric tensor order). In 2D the yz, xz entries are 0;
/// in plane strain (the default) εzz = 0, so σzz = λ tr(ε) = ν(σxx + σyy); in plane stress
/// (`form.plane`) σzz = 0 and the in-plane stress uses λ* = Eν/(1 − ν²). 3D ignores `plane`.
std::vector<double> cell_stress(const Assembler& assembler, std::span<const double> u,
                                const Elasticity& form);

/// The von Mises stress of each 6-value stress of `stress` (as cell_stress gives them):
/// sqrt(((σxx-σyy)² + (σyy-σzz)² + (σzz-σxx)²)/2 + 3(σxy² + σyz² + σxz²)).
std::vector<double> von_mises(std::span<const double> stress);

/// Motions that a form without constraints cannot resist, as candidates for fem::find_null_space:
/// the constant ("constant") on a scalar space; on a space with one component per dimension the
/// translations ("translation x", ...) and the rotations about the centroid of the DOF nodes
/// ("rotation z" in 2D; "rotation x", "rotation y", "rotation z" in 3D).
struct RigidBodyModes {
  std::vector<std::vector<double>> vectors;
  std::vector<std::string> names;
};
RigidBodyModes rigid_body_modes(const FunctionSpace& V);

/// The null space of `matrix`, assembled on the assembler's space with the Dirichlet conditions
/// `constrained` applied, among the rigid-body modes: nullptr when the conditions stop them all.
/// Which modes the conditions leave free is decided from the modes' values at the constrained
/// DOFs (exact: coefficient contrasts or units cannot blur it); a free mode must also be
/// annihilated by the matrix (checked numerically on the free modes only: a mass or reaction
/// term resists every motion). The functionals are M z (M the space's mass matrix, assembled
/// only when a mode is free), so the solve kernel returns the solution with ∫u·z = 0 for each
/// free mode z (zero mean for a pure Neumann problem), and data it tolerates as compatible are
/// corrected by a uniform source along the free modes.
std::shared_ptr<const NullSpace> null_space(const Assembler& assembler, const CsrMatrix& matrix,
                                            const DirichletValues& constrained);

}  // namespace fem::assembly
