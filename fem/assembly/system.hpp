// The problem layer: what every front end (the fem drivers, the C ABI, Python) does between the
// forms it assembles and the solver it calls, written once: Dirichlet values agreed across
// processes, the rule that gives a system its null space, errors against an exact solution, and
// the values a result file shows. Every function takes the layout of the space's vectors:
// Layout::serial() on one process, fem::dist::layout(V) on a distributed mesh.
//
//   const auto bc = fem::assembly::dirichlet_values(V, conditions, layout);
//   fem::assembly::apply_dirichlet(bc, *assembler.pattern(), values, b);
//   store.put("A", fem::assembly::system_matrix(assembler, std::move(values), bc, layout));
//   solver->factorize(store, "A");                          // fem::solve::LinearSolver
//   fem::solve::require(solver->solve(b, u));               // incompatible data: one message
//   const auto ns = store.get<CsrMatrix>("A")->null_space();
//   auto e = fem::assembly::solution_errors(assembler, u, exact, ns.get(), layout);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/assembly/functionals.hpp"
#include "fem/layout.hpp"
#include "fem/null_space.hpp"

namespace fem::assembly {

/// The Dirichlet values of `conditions` on V, the same on every process that has a DOF (a
/// process may hold a DOF of a boundary facet another process holds). The one rule where
/// conditions overlap (docs/semantics.md), whatever their order and on any number of processes:
/// at each DOF, the conditions on tags win over those on `all` (the whole boundary); the
/// winners must agree, to 1e-10 of the largest value given, or it is an InvalidArgument naming
/// both conditions, the node and the two values, on every process. A facet tag that no facet of
/// the whole mesh carries is an InvalidArgument naming it and the tags present, on every process.
DirichletValues dirichlet_values(const FunctionSpace& V, std::span<const Dirichlet> conditions,
                                 const Layout& layout);

/// Conditions belong to their space: `bc` made on another space than V (dirichlet_values records
/// the space in DirichletValues::space: the mesh object, the degree, the components) is an
/// InvalidArgument naming both; values made by hand (no space recorded) must index V's DOFs.
/// `what` names the call in the message. system_matrix, constrained_matrix and Newton's
/// assembled_problem check it, so every front end does.
void require_space(const DirichletValues& bc, const FunctionSpace& V, std::string_view what);
/// A matrix of V: on V's pattern (the object the assembler of V fills, or one of the same
/// structure), else an InvalidArgument naming V and, where the store knows it, the space whose
/// pattern the matrix is on. A count of DOFs is no identity: P2 on one mesh and P1 on another
/// may have as many. constrained_matrix checks it.
void require_pattern_of(const CsrPattern& pattern, const FunctionSpace& V, std::string_view what);

/// The null-space rule, once for every front end: the matrix of a form (`values` on the
/// assembler's pattern, with the Dirichlet conditions `bc` already imposed by apply_dirichlet)
/// carries the null space of the rigid-body modes that `bc` leaves free and that the matrix
/// does not resist (null_space(): the constants of a scalar problem without a Dirichlet
/// condition, the rigid motions of an elastic body that nothing holds). Such a system has a
/// solution only for data compatible with those modes: the solve checks it (one message, the
/// same from every front end) and returns the solution orthogonal to them. On a distributed
/// layout a problem needs a Dirichlet condition (the distributed solvers solve nonsingular
/// systems): an InvalidArgument otherwise, on every process.
CsrMatrix system_matrix(const Assembler& assembler, std::vector<double> values, const DirichletValues& bc,
                        const Layout& layout = Layout::serial());

/// The rule again for a matrix A of V that had its Dirichlet conditions `bc` imposed since:
/// `values` (A's after apply_dirichlet) carry the null space those conditions leave free when A
/// carried one (system_matrix), none otherwise (a matrix without one cannot gain one). What the
/// C ABI's fem_apply_dirichlet and Python's DirichletBC.apply publish. A of another pattern than
/// V's is an InvalidArgument.
CsrMatrix constrained_matrix(const CsrMatrix& A, const FunctionSpace& V, std::vector<double> values,
                             const DirichletValues& bc);

/// The L2 and H1-seminorm errors of a solution u of the whole problem (summed over the
/// processes) against `exact`; with a null space, of u shifted along it to the exact solution's
/// own normalization (its mean, its rigid motion), which the data cannot determine.
Errors solution_errors(const Assembler& assembler, std::span<const double> u, const VectorFunction& exact,
                       const NullSpace* null_space, const Layout& layout = Layout::serial());

/// The values of u at the mesh's nodes, `width` per node (V's components, then zeros: 3 makes a
/// vector ParaView warps by): a node of the space's own, its value; a mesh node the space lacks
/// (P1 on a second-order mesh), the linear interpolant at an edge's midpoint, the mean of the
/// vertices at a face or cell centre. What a result file shows on the mesh itself.
std::vector<double> mesh_node_values(const FunctionSpace& V, std::span<const double> u, int width = 0);

/// The gradient of u averaged over each cell: components × gdim values per cell (∂u_k/∂x_d at
/// [c·components·gdim + k·gdim + d]); for output beside cell_stress.
std::vector<double> cell_average_gradient(const Assembler& assembler, std::span<const double> u);

}  // namespace fem::assembly
