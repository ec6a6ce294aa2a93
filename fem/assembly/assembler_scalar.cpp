// The Assembler's scalar bilinear forms: diffusion and mass, and their cell gradients.
#include "fem/assembly/detail/assembler_forms.hpp"

namespace fem::assembly {

using detail::affine;
using detail::assemble_on_device;
using detail::CoefficientRef;
using detail::Constant;
using detail::with_coefficient;

void Assembler::matrix_into(const Diffusion& form, std::span<double> values) const {
  FEM_EXPECTS(space_.components() == 1, "diffusion needs a scalar space, not {}", space_.name());
  if (device_)
    return assemble_on_device(*device_, form, quadrature_degree(2 * (space_.degree() - 1)), pattern()->nnz(),
                              values);
  const Coefficient coefficient = form.k.resolved(space_.mesh(), "diffusion coefficient");
  const int degree = quadrature_degree(2 * (space_.degree() - 1) + (coefficient.varies_in_cell() ? 2 : 0));
  with_coefficient(coefficient, [&](auto k) {
    assemble_matrix<Blocks::scalar>(space_, *plan_, kernels::Diffusion<decltype(k)>{k}, degree, values, {},
                                    coefficient.varies_in_cell());
  });
}

std::vector<double> Assembler::cell_gradient(const Diffusion&, std::span<const double> w) const {
  FEM_EXPECTS(space_.components() == 1, "diffusion needs a scalar space, not {}", space_.name());
  std::vector<double> out(static_cast<std::size_t>(space_.mesh().num_cells()));
  contract_cells<Blocks::scalar>(space_, *plan_, kernels::Diffusion<Constant>{Constant{1.0}},
                                 quadrature_degree(2 * (space_.degree() - 1)), w, out);
  return out;
}

std::vector<double> Assembler::cell_gradient(const Mass&, std::span<const double> w) const {
  std::vector<double> out(static_cast<std::size_t>(space_.mesh().num_cells()));
  contract_cells(space_, *plan_, kernels::Mass<Constant>{Constant{1.0}},
                 quadrature_degree(2 * space_.degree()), w, out);
  return out;
}

void Assembler::matrix_into(const Mass& form, std::span<double> values) const {
  if (device_)
    return assemble_on_device(*device_, form, quadrature_degree(2 * space_.degree()), pattern()->nnz(),
                              values);
  const Coefficient density = form.rho.resolved(space_.mesh(), "mass density");
  const int degree = quadrature_degree(2 * space_.degree() + (density.varies_in_cell() ? 2 : 0));
  with_coefficient(density, [&](auto rho) {
    assemble_matrix(space_, *plan_, kernels::Mass<decltype(rho)>{rho}, degree, values, {},
                    density.varies_in_cell());
  });
}

}  // namespace fem::assembly
