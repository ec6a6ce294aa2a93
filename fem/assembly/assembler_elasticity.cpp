// The Assembler's linear elasticity.
#include "fem/assembly/detail/assembler_forms.hpp"

namespace fem::assembly {

using detail::affine;
using detail::assemble_on_device;
using detail::CoefficientRef;
using detail::Constant;

void Assembler::matrix_into(const Elasticity& form, std::span<double> values) const {
  FEM_EXPECTS(space_.components() == space_.mesh().tdim(),
              "elasticity needs one component per dimension: space {} on a {}D mesh", space_.name(),
              space_.mesh().tdim());
  if (device_)
    return assemble_on_device(*device_, form, quadrature_degree(2 * (space_.degree() - 1)), pattern()->nnz(),
                              values);
  const Coefficient young = form.young.resolved(space_.mesh(), "Young's modulus");
  const Coefficient poisson = form.poisson.resolved(space_.mesh(), "Poisson's ratio");
  const bool varies = young.varies_in_cell() || poisson.varies_in_cell();
  const int degree = quadrature_degree(2 * (space_.degree() - 1) + (varies ? 2 : 0));
  const bool plane_stress = form.plane == Elasticity::Plane::stress;  // the kernel ignores it in 3D
  if (young.kind() == Coefficient::Kind::constant && poisson.kind() == Coefficient::Kind::constant)
    assemble_matrix<Blocks::vector>(space_, *plan_,
                                    kernels::Elasticity<Constant, Constant>{
                                        {young(0, 0, nullptr)}, {poisson(0, 0, nullptr)}, plane_stress},
                                    degree, values, {}, false);
  else
    assemble_matrix<Blocks::vector>(
        space_, *plan_,
        kernels::Elasticity<CoefficientRef, CoefficientRef>{{&young}, {&poisson}, plane_stress}, degree,
        values, {}, varies);
}

}  // namespace fem::assembly
