// Interpolation, integrals and error norms through the assembly loops.
#include "fem/assembly/functionals.hpp"

#include <algorithm>
#include <cmath>

namespace fem::assembly {

std::vector<double> interpolate(const FunctionSpace& V, const VectorFunction& f) {
  FEM_EXPECTS(f != nullptr, "interpolate needs a function");
  const DofMap& d = V.dofmap();
  const int bs = V.components(), gdim = V.mesh().gdim();
  std::vector<double> u(V.num_dofs());
  for (index_t i = 0; i < d.num_nodes; ++i) f(&d.coordinates[static_cast<std::size_t>(i) * gdim], &u[static_cast<std::size_t>(i) * bs]);
  return u;
}

std::vector<double> interpolate(const FunctionSpace& V, const Function& f) {
  FEM_EXPECTS(V.components() == 1, "a scalar function interpolated on the vector space {}", V.name());
  FEM_EXPECTS(f != nullptr, "interpolate needs a function");
  return interpolate(V, [&](const double* x, double* v) { v[0] = f(x); });
}

double integrate(const Assembler& A, std::span<const double> u, int component) {
  const FunctionSpace& V = A.space();
  FEM_EXPECTS(component >= 0 && component < V.components(), "component {} of a space with {} components", component,
              V.components());
  return integrate_cells(V, A.plan(), [&](const auto& cv) {
    double s = 0;
    for (int q = 0; q < cv.num_points; ++q) s += cv.weight[q] * cv.u_value(q, component);
    return s;
  }, A.quadrature_degree(V.degree()), u);
}

Errors errors(const Assembler& A, std::span<const double> u, const VectorFunction& exact,
              const GradientFunction& exact_gradient, int extra_degree) {
  FEM_EXPECTS(exact != nullptr, "errors need the exact solution");
  const FunctionSpace& V = A.space();
  const int bs = V.components(), dim = V.mesh().tdim();
  // Central differences when no gradient is given; h relative to the point's size.
  const GradientFunction gradient = exact_gradient ? exact_gradient : [&](const double* x, double* g) {
    double xp[3], vp[3], vm[3];
    for (int d = 0; d < dim; ++d) {
      std::copy(x, x + dim, xp);
      const double h = 1e-5 * (1 + std::abs(x[d]));
      xp[d] = x[d] + h;
      exact(xp, vp);
      xp[d] = x[d] - h;
      exact(xp, vm);
      for (int k = 0; k < bs; ++k) g[k * dim + d] = (vp[k] - vm[k]) / (2 * h);
    }
  };
  const int degree = A.quadrature_degree(2 * V.degree() + extra_degree);
  auto l2 = [&](const auto& cv) {
    double s = 0, ue[3];
    for (int q = 0; q < cv.num_points; ++q) {
      exact(cv.point(q), ue);
      for (int k = 0; k < cv.bs; ++k) {
        const double e = ue[k] - cv.u_value(q, k);
        s += cv.weight[q] * e * e;
      }
    }
    return s;
  };
  auto h1 = [&](const auto& cv) {
    double s = 0, ge[9], gh[3];
    for (int q = 0; q < cv.num_points; ++q) {
      gradient(cv.point(q), ge);
      for (int k = 0; k < cv.bs; ++k) {
        cv.u_grad(q, gh, k);
        for (int d = 0; d < cv.dim; ++d) {
          const double e = ge[k * cv.dim + d] - gh[d];
          s += cv.weight[q] * e * e;
        }
      }
    }
    return s;
  };
  return {std::sqrt(integrate_cells(V, A.plan(), l2, degree, u)), std::sqrt(integrate_cells(V, A.plan(), h1, degree, u))};
}

}  // namespace fem::assembly
