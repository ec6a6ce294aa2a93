// Newton problems from the assembly kernel: a nonlinear form on a space with Dirichlet
// conditions becomes residual and Jacobian callbacks. The Jacobian reuses the space's cached
// pattern object every time, so the solve kernel reuses its symbolic analysis.
#pragma once

#include <memory>
#include <string>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
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

}  // namespace fem::newton
