// assembled_problem(): see assembled.hpp. The element work is the assembly kernel's
// (Assembler::residual_into, jacobian_into and the fused residual_and_jacobian_into).
#include "fem/newton/assembled.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "fem/assembly/system.hpp"

namespace fem::newton {

Problem assembled_problem(std::shared_ptr<const assembly::Assembler> assembler, assembly::NonlinearForm form,
                          assembly::DirichletValues bc, std::string name, Store& store,
                          std::shared_ptr<solve::LinearSolver> solver) {
  FEM_EXPECTS(assembler != nullptr, "assembled_problem '{}': no assembler", name);
  FEM_EXPECTS(form.integrand != nullptr, "assembled_problem '{}': a nonlinear form needs an integrand", name);
  FEM_EXPECTS(assembler->space().components() == 1,
              "assembled_problem '{}': nonlinear forms need a scalar space", name);
  assembly::require_space(bc, assembler->space(), fmt::format("assembled_problem '{}'", name));
  auto shared_form = std::make_shared<const assembly::NonlinearForm>(std::move(form));
  auto homogeneous = std::make_shared<const assembly::DirichletValues>(bc.homogeneous());
  // Each process assembles its own cells' part of F: summed into every copy of a shared DOF
  // (the solver's layout), so that Newton's vectors hold the global values. The local assembly
  // may fail on one process alone (a form that throws at a point): agreed before the collective
  // sum, so that no process waits in it for one that left.
  const Layout* layout = solver ? &solver->layout() : &Layout::serial();
  Problem p;
  p.name = std::move(name);
  p.store = &store;
  p.solver = std::move(solver);
  p.residual = [assembler, shared_form, homogeneous, layout, keep = p.solver](std::span<const double> u,
                                                                              std::span<double> F) {
    layout->processes().collective([&] {
      std::fill(F.begin(), F.end(), 0.0);
      assembler->residual_into(*shared_form, u, F);
    });
    layout->accumulate(F);
    assembly::zero_dirichlet(*homogeneous, F);
  };
  auto constrained = [assembler, homogeneous](std::vector<double> values) {
    std::vector<double> scratch(assembler->space().num_dofs(), 0.0);
    assembly::apply_dirichlet(*homogeneous, *assembler->pattern(), values, scratch);
    return CsrMatrix(assembler->pattern(), std::move(values));
  };
  p.jacobian = [assembler, shared_form, constrained, layout, keep = p.solver](std::span<const double> u) {
    std::vector<double> values = prefaulted_vector<double>(assembler->pattern()->nnz());
    layout->processes().collective([&] { assembler->jacobian_into(*shared_form, u, values); });
    return constrained(std::move(values));
  };
  p.residual_and_jacobian = [assembler, shared_form, homogeneous, constrained, layout, keep = p.solver](
                                std::span<const double> u, std::span<double> F) {
    std::vector<double> values = prefaulted_vector<double>(assembler->pattern()->nnz());
    layout->processes().collective([&] {
      std::fill(F.begin(), F.end(), 0.0);
      assembler->residual_and_jacobian_into(*shared_form, u, F, values);
    });
    layout->accumulate(F);
    assembly::zero_dirichlet(*homogeneous, F);
    return constrained(std::move(values));
  };
  return p;
}

Problem flow_problem(std::shared_ptr<const assembly::MixedSpace> W, assembly::Flow flow,
                     assembly::DirichletValues bc, bool pressure_null_space, std::string name, Store& store,
                     std::shared_ptr<solve::LinearSolver> solver) {
  FEM_EXPECTS(W != nullptr, "flow_problem '{}': no mixed space", name);
  for (index_t d : bc.dofs)
    FEM_EXPECTS(d >= 0 && d < W->pressure_offset(),
                "flow_problem '{}': constrained DOF {} is not a velocity DOF (0 .. {})", name, d,
                W->pressure_offset() - 1);
  auto shared_flow = std::make_shared<const assembly::Flow>(std::move(flow));
  auto homogeneous = std::make_shared<const assembly::DirichletValues>(bc.homogeneous());
  // As assembled_problem: each process assembles its cells' part of F, summed through the
  // solver's layout (the mixed space's: fem::dist::make_solver(W, ...)) into the global residual.
  const Layout* layout = solver ? &solver->layout() : &Layout::serial();
  std::shared_ptr<const NullSpace> ns;
  if (pressure_null_space) {
    ns = W->pressure_null_space();
    if (layout->distributed()) {  // the functional ∫q (the pressure mass's row sums): consistent
      std::vector<double> functional(ns->functional(0).begin(), ns->functional(0).end());
      layout->accumulate(functional);
      ns = std::make_shared<const NullSpace>(
          W->num_dofs(),
          std::vector<std::vector<double>>{std::vector<double>(ns->vector(0).begin(), ns->vector(0).end())},
          ns->names(), std::vector<std::vector<double>>{std::move(functional)});
    }
  }
  Problem p;
  p.name = std::move(name);
  p.store = &store;
  p.solver = std::move(solver);
  // F with its constrained rows zeroed and, with the free pressure, made compatible over every
  // process (NullSpace's global sums: the serial ones on one process).
  auto finish = [homogeneous, ns, layout](std::span<double> F) {
    layout->accumulate(F);
    assembly::zero_dirichlet(*homogeneous, F);
    if (!ns) return;
    if (layout->distributed())
      ns->make_compatible(F, *layout);
    else
      ns->make_compatible(F);
  };
  p.residual = [W, shared_flow, finish, layout, keep = p.solver](std::span<const double> u,
                                                                 std::span<double> F) {
    layout->processes().collective([&] {
      std::fill(F.begin(), F.end(), 0.0);
      assembly::flow_into(*W, *shared_flow, u, {}, F);
    });
    finish(F);
  };
  auto matrix = [W, homogeneous, ns](std::vector<double> values) {
    std::vector<double> scratch(static_cast<std::size_t>(W->num_dofs()), 0.0);
    assembly::apply_dirichlet(*homogeneous, *W->pattern(), values, scratch);
    return CsrMatrix(W->pattern(), std::move(values), ns);
  };
  // A field split with the pressure convection–diffusion preconditioner (flow::solver_options)
  // asks for A_p and F_p at each Jacobian's state: published under the keys its options name.
  std::function<void(std::span<const double>)> pcd = [](std::span<const double>) {};
  if (p.solver && !p.solver->options().schur_convection.empty()) {
    const solve::Options& o = p.solver->options();
    pcd = [W, shared_flow, &store, laplacian = o.schur_laplacian, convection = o.schur_convection, bc,
           open = !pressure_null_space](std::span<const double> u) {
      const auto nnz = static_cast<std::size_t>(W->pattern()->nnz());
      std::vector<double> A(nnz), F(nnz);
      assembly::pcd_into(*W, *shared_flow, u, bc, open, A, F);
      store.put(laplacian, CsrMatrix(W->pattern(), std::move(A)));
      store.put(convection, CsrMatrix(W->pattern(), std::move(F)));
    };
  }
  p.jacobian = [W, shared_flow, matrix, layout, pcd, keep = p.solver](std::span<const double> u) {
    std::vector<double> values = prefaulted_vector<double>(W->pattern()->nnz());
    layout->processes().collective([&] {
      assembly::flow_into(*W, *shared_flow, u, values, {});
      pcd(u);
    });
    return matrix(std::move(values));
  };
  p.residual_and_jacobian = [W, shared_flow, finish, matrix, layout, pcd, keep = p.solver](
                                std::span<const double> u, std::span<double> F) {
    std::vector<double> values = prefaulted_vector<double>(W->pattern()->nnz());
    layout->processes().collective([&] {
      std::fill(F.begin(), F.end(), 0.0);
      assembly::flow_into(*W, *shared_flow, u, values, F);
      pcd(u);
    });
    finish(F);
    return matrix(std::move(values));
  };
  return p;
}

}  // namespace fem::newton
