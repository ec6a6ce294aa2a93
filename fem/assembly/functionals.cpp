// Interpolation, integrals and error norms through the assembly loops.
#include "fem/assembly/functionals.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "fem/assembly/detail/kernels.hpp"

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

std::vector<double> cell_stress(const Assembler& A, std::span<const double> u, const Elasticity& form) {
  const FunctionSpace& V = A.space();
  const Mesh& mesh = V.mesh();
  FEM_EXPECTS(V.components() == mesh.tdim(), "stresses need one component per dimension: space {} on a {}D mesh",
              V.name(), mesh.tdim());
  form.young.check(mesh.cell_tags(), "Young's modulus");
  form.poisson.check(mesh.cell_tags(), "Poisson's ratio");
  std::vector<double> stress(static_cast<std::size_t>(mesh.num_cells()) * 6, 0.0);
  const bool varies = form.young.varies_in_cell() || form.poisson.varies_in_cell();
  const bool plane_stress = mesh.tdim() == 2 && form.plane == Elasticity::Plane::stress;
  // Each cell writes only its own six entries, so the threads of the cell loop never share one.
  integrate_cells<Blocks::vector>(V, A.plan(), [&](const auto& cv) {
    constexpr int dim = std::remove_cvref_t<decltype(cv)>::dim;
    double sum[3][3] = {}, volume = 0;
    for (int q = 0; q < cv.num_points; ++q) {
      const double* x = cv.point(q);
      const double E = form.young(cv.cell, cv.tag, x), nu = form.poisson(cv.cell, cv.tag, x);
      const auto [lambda, mu] = kernels::lame(E, nu, plane_stress);
      double g[dim][dim];  // g[k][d] = ∂u_k/∂x_d
      for (int k = 0; k < dim; ++k) cv.u_grad(q, g[k], k);
      double trace = 0;
      for (int k = 0; k < dim; ++k) trace += g[k][k];
      // In 2D the in-plane ε gives σzz = λ tr(ε) in plane strain (εzz = 0) and 0 in plane stress.
      const double lambda_zz = plane_stress ? 0.0 : lambda;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          const double eps = a < dim && b < dim ? 0.5 * (g[a][b] + g[b][a]) : 0.0;
          sum[a][b] +=
              cv.weight[q] * ((a == b ? (a < dim ? lambda : lambda_zz) * trace : 0.0) + 2 * mu * eps);
        }
      volume += cv.weight[q];
    }
    double* s = stress.data() + static_cast<std::size_t>(cv.cell) * 6;
    const double r = 1.0 / volume;
    s[0] = sum[0][0] * r, s[1] = sum[1][1] * r, s[2] = sum[2][2] * r;
    s[3] = sum[0][1] * r, s[4] = sum[1][2] * r, s[5] = sum[0][2] * r;
    return 0.0;
  }, A.quadrature_degree(2 * (V.degree() - 1) + (varies ? 2 : 0)), u);
  return stress;
}

std::vector<double> von_mises(std::span<const double> stress) {
  FEM_EXPECTS(stress.size() % 6 == 0, "von_mises: {} values are not 6 per cell", stress.size());
  std::vector<double> out(stress.size() / 6);
  for (std::size_t c = 0; c < out.size(); ++c) {
    const double* s = stress.data() + c * 6;
    const double d01 = s[0] - s[1], d12 = s[1] - s[2], d20 = s[2] - s[0];
    out[c] = std::sqrt(0.5 * (d01 * d01 + d12 * d12 + d20 * d20) + 3 * (s[3] * s[3] + s[4] * s[4] + s[5] * s[5]));
  }
  return out;
}

RigidBodyModes rigid_body_modes(const FunctionSpace& V) {
  const DofMap& d = V.dofmap();
  const int bs = V.components(), gdim = V.mesh().gdim();
  const auto n = static_cast<std::size_t>(d.num_nodes);
  RigidBodyModes modes;
  if (bs == 1) {
    modes.vectors.emplace_back(n, 1.0);
    modes.names.emplace_back("constant");
    return modes;
  }
  FEM_EXPECTS(bs == gdim, "rigid-body modes of the space {}: {} components in {}D", V.name(), bs, gdim);
  const char* const axis = "xyz";
  for (int k = 0; k < bs; ++k) {
    std::vector<double> t(n * bs, 0.0);
    for (std::size_t i = 0; i < n; ++i) t[i * bs + k] = 1.0;
    modes.vectors.push_back(std::move(t));
    modes.names.push_back(fmt::format("translation {}", axis[k]));
  }
  // Rotations about the centroid, which keeps them well conditioned against the translations.
  double c[3] = {0, 0, 0};
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < gdim; ++k) c[k] += d.coordinates[i * gdim + k] / static_cast<double>(n);
  // Rotation about axis a: the velocity ω × (x - c) with ω = e_a.
  auto rotation = [&](int a) {
    std::vector<double> r(n * bs, 0.0);
    const int p = (a + 1) % 3, q = (a + 2) % 3;  // the next two axes: (e_a × x)_p = -x_q, (e_a × x)_q = x_p
    for (std::size_t i = 0; i < n; ++i) {
      const double* x = &d.coordinates[i * gdim];
      const double xp = p < gdim ? x[p] - c[p] : 0.0, xq = q < gdim ? x[q] - c[q] : 0.0;
      if (p < bs) r[i * bs + p] = -xq;
      if (q < bs) r[i * bs + q] = xp;
    }
    modes.vectors.push_back(std::move(r));
    modes.names.push_back(fmt::format("rotation {}", axis[a]));
  };
  if (gdim == 2) {
    rotation(2);
  } else {
    for (int a = 0; a < 3; ++a) rotation(a);
  }
  return modes;
}

std::shared_ptr<const NullSpace> null_space(const Assembler& assembler, const CsrMatrix& matrix) {
  const FunctionSpace& V = assembler.space();
  FEM_EXPECTS(matrix.rows() == V.num_dofs() && matrix.cols() == V.num_dofs(),
              "null_space: a {} x {} matrix on the space {} of {} DOFs", matrix.rows(), matrix.cols(), V.name(),
              V.num_dofs());
  const RigidBodyModes modes = rigid_body_modes(V);
  const auto found = find_null_space(matrix, modes.vectors, modes.names);
  if (!found) return nullptr;
  const CsrMatrix mass = assembler.matrix(Mass{});
  std::vector<std::vector<double>> vectors, functionals;
  for (int k = 0; k < found->dimension(); ++k) {
    const auto z = found->vector(k);
    vectors.emplace_back(z.begin(), z.end());
    functionals.emplace_back(z.size());
    mass.multiply(z, functionals.back());
  }
  return std::make_shared<const NullSpace>(matrix.rows(), std::move(vectors), found->names(),
                                           std::move(functionals));
}

}  // namespace fem::assembly
