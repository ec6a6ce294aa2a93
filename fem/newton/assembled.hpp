// Newton problems from the assembly kernel: a nonlinear form on a space with Dirichlet
// conditions becomes residual and Jacobian callbacks. The Jacobian reuses the space's cached
// pattern object every time, so the solve kernel reuses its symbolic analysis.
#pragma once

#include <memory>
#include <string>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/assembly/mixed.hpp"
#include "fem/newton/newton.hpp"

namespace fem::newton {

/// F(u) = the form's residual with the constrained rows zeroed; J(u) = its Jacobian with the
/// constrained rows and columns replaced by the identity (symmetric problems stay symmetric).
/// u must already hold the Dirichlet values (assembly::set_dirichlet(bc, u)); Newton steps then
/// never change them. `solver` becomes the problem's (Problem::solver); on a distributed mesh
/// (fem::dist::make_solver) its layout sums every process's part of F into the global residual,
/// and `bc` must be the conditions of every process (assembly::dirichlet_values with the layout).
Problem assembled_problem(std::shared_ptr<const assembly::Assembler> assembler, assembly::NonlinearForm form,
                          assembly::DirichletValues bc, std::string name, Store& store = fem::store(),
                          std::shared_ptr<solve::LinearSolver> solver = nullptr);

/// Steady incompressible flow on a Taylor–Hood space (assembly::flow_into): F(w) with the
/// constrained velocity rows zeroed, J(w) with them and their columns replaced by the identity.
/// w must hold the velocity's Dirichlet values (`bc`: DOFs of W.velocity(), the same numbers in
/// W). With `pressure_null_space` (the velocity given on the whole boundary: p is free up to a
/// constant) the Jacobian carries W.pressure_null_space() and the residual is made compatible
/// with it: the part of the continuity residual that a discrete inflow/outflow imbalance of the
/// boundary data leaves (O(h^{k+1}) for interpolated data) is removed along ∫q, so that Newton
/// converges, and the solution has ∫p = 0. For Stokes (no convection) one iteration solves it.
/// On a distributed mesh (`solver` from fem::dist::make_solver(W, ...)) as assembled_problem:
/// the residual summed over processes through the solver's layout, `bc` every process's
/// conditions (assembly::dirichlet_values with the velocity's layout), the null space's
/// functional made consistent and its corrections global (the solver pins and normalizes).
Problem flow_problem(std::shared_ptr<const assembly::MixedSpace> W, assembly::Flow flow,
                     assembly::DirichletValues bc, bool pressure_null_space, std::string name,
                     Store& store = fem::store(), std::shared_ptr<solve::LinearSolver> solver = nullptr);

}  // namespace fem::newton
