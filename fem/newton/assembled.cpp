// assembled_problem(): see assembled.hpp.
#include "fem/newton/assembled.hpp"

namespace fem::newton {

Problem assembled_problem(std::shared_ptr<const assembly::Assembler> assembler, assembly::NonlinearForm form,
                          assembly::DirichletValues bc, std::string name, Store& store) {
  FEM_EXPECTS(assembler != nullptr, "assembled_problem '{}': no assembler", name);
  auto shared_form = std::make_shared<const assembly::NonlinearForm>(std::move(form));
  auto homogeneous = std::make_shared<const assembly::DirichletValues>(bc.homogeneous());
  Problem p;
  p.name = std::move(name);
  p.store = &store;
  p.residual = [assembler, shared_form, homogeneous](std::span<const double> u, std::span<double> F) {
    std::fill(F.begin(), F.end(), 0.0);
    assembler->residual_into(*shared_form, u, F);
    assembly::zero_dirichlet(*homogeneous, F);
  };
  p.jacobian = [assembler, shared_form, homogeneous](std::span<const double> u) {
    std::vector<double> values = prefaulted_vector<double>(assembler->pattern()->nnz());
    assembler->jacobian_into(*shared_form, u, values);
    std::vector<double> scratch(u.size(), 0.0);
    assembly::apply_dirichlet(*homogeneous, *assembler->pattern(), values, scratch);
    return CsrMatrix(assembler->pattern(), std::move(values));
  };
  return p;
}

}  // namespace fem::newton
