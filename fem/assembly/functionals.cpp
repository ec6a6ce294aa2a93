// Interpolation, integrals and error norms through the assembly loops.
#include "fem/assembly/functionals.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "fem/assembly/detail/kernels.hpp"
#include "fem/norm.hpp"

namespace fem::assembly {

std::vector<double> interpolate(const FunctionSpace& V, const VectorFunction& f) {
  FEM_EXPECTS(f != nullptr, "interpolate needs a function");
  const DofMap& d = V.dofmap();
  const int bs = V.components(), gdim = V.mesh().gdim();
  std::vector<double> u(V.num_dofs());
  for (index_t i = 0; i < d.num_nodes; ++i)
    f(&d.coordinates[static_cast<std::size_t>(i) * gdim], &u[static_cast<std::size_t>(i) * bs]);
  return u;
}

std::vector<double> interpolate(const FunctionSpace& V, const Function& f) {
  FEM_EXPECTS(V.components() == 1, "a scalar function interpolated on the vector space {}", V.name());
  FEM_EXPECTS(f != nullptr, "interpolate needs a function");
  return interpolate(V, [&](const double* x, double* v) { v[0] = f(x); });
}

double integrate(const Assembler& A, std::span<const double> u, int component) {
  const FunctionSpace& V = A.space();
  FEM_EXPECTS(component >= 0 && component < V.components(), "component {} of a space with {} components",
              component, V.components());
  return integrate_cells(
      V, A.plan(),
      [&](const auto& cv) {
        double s = 0;
        for (int q = 0; q < cv.num_points; ++q) s += cv.weight[q] * cv.u_value(q, component);
        return s;
      },
      A.quadrature_degree(V.degree()), u);
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
  // Each kernel squares its errors times r (1: the plain sums) and records each cell's largest
  // error: where that is far from 1 (a displacement of 1e300), the sum is redone scaled
  // (fem/norm.hpp), so that finite errors never give an infinite or zero norm.
  std::vector<double> largest(static_cast<std::size_t>(V.mesh().num_cells()));
  auto l2 = [&](double r) {
    return [&, r](const auto& cv) {
      double s = 0, m = 0, ue[3];
      for (int q = 0; q < cv.num_points; ++q) {
        exact(cv.point(q), ue);
        for (int k = 0; k < cv.bs; ++k) {
          const double e = ue[k] - cv.u_value(q, k);
          const double y = e * r;
          m = std::max(m, std::abs(e));
          s += cv.weight[q] * y * y;
        }
      }
      largest[static_cast<std::size_t>(cv.cell)] = m;
      return s;
    };
  };
  auto h1 = [&](double r) {
    return [&, r](const auto& cv) {
      double s = 0, m = 0, ge[9], gh[3];
      for (int q = 0; q < cv.num_points; ++q) {
        gradient(cv.point(q), ge);
        for (int k = 0; k < cv.bs; ++k) {
          cv.u_grad(q, gh, k);
          for (int d = 0; d < cv.dim; ++d) {
            const double e = ge[k * cv.dim + d] - gh[d];
            const double y = e * r;
            m = std::max(m, std::abs(e));
            s += cv.weight[q] * y * y;
          }
        }
      }
      largest[static_cast<std::size_t>(cv.cell)] = m;
      return s;
    };
  };
  auto norm = [&](const auto& kernel) {
    const double plain = integrate_cells(V, A.plan(), kernel(1.0), degree, u);
    double m = 0;
    for (const double v : largest) m = std::max(m, v);
    const double scale = square_scale(m);
    if (scale == 1.0) return std::sqrt(plain);
    return scale * std::sqrt(integrate_cells(V, A.plan(), kernel(1.0 / scale), degree, u));
  };
  return {norm(l2), norm(h1)};  // in this order: they share `largest`
}

std::vector<double> cell_stress(const Assembler& A, std::span<const double> u, const Elasticity& form) {
  const FunctionSpace& V = A.space();
  const Mesh& mesh = V.mesh();
  FEM_EXPECTS(V.components() == mesh.tdim(),
              "stresses need one component per dimension: space {} on a {}D mesh", V.name(), mesh.tdim());
  const Coefficient young = form.young.resolved(mesh, "Young's modulus");
  const Coefficient poisson = form.poisson.resolved(mesh, "Poisson's ratio");
  std::vector<double> stress(static_cast<std::size_t>(mesh.num_cells()) * 6, 0.0);
  const bool varies = young.varies_in_cell() || poisson.varies_in_cell();
  const bool plane_stress = mesh.tdim() == 2 && form.plane == Elasticity::Plane::stress;
  // Each cell writes only its own six entries, so the threads of the cell loop never share one.
  integrate_cells<Blocks::vector>(
      V, A.plan(),
      [&](const auto& cv) {
        constexpr int dim = std::remove_cvref_t<decltype(cv)>::dim;
        double sum[3][3] = {}, volume = 0;
        for (int q = 0; q < cv.num_points; ++q) {
          const double* x = cv.point(q);
          const double E = young(cv.cell, cv.tag, x), nu = poisson(cv.cell, cv.tag, x);
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
      },
      A.quadrature_degree(2 * (V.degree() - 1) + (varies ? 2 : 0)), u);
  return stress;
}

std::vector<double> von_mises(std::span<const double> stress) {
  FEM_EXPECTS(stress.size() % 6 == 0, "von_mises: {} values are not 6 per cell", stress.size());
  std::vector<double> out(stress.size() / 6);
  for (std::size_t c = 0; c < out.size(); ++c) {
    // Scaled by the largest component (fem/norm.hpp): finite stresses give a finite value.
    const double* t = stress.data() + c * 6;
    double largest = 0;
    for (int k = 0; k < 6; ++k) largest = std::max(largest, std::abs(t[k]));
    const double scale = square_scale(largest), r = 1.0 / scale;
    double s[6];
    for (int k = 0; k < 6; ++k) s[k] = t[k] * r;
    const double d01 = s[0] - s[1], d12 = s[1] - s[2], d20 = s[2] - s[0];
    out[c] = scale * std::sqrt(0.5 * (d01 * d01 + d12 * d12 + d20 * d20) +
                               3 * (s[3] * s[3] + s[4] * s[4] + s[5] * s[5]));
  }
  return out;
}

namespace {

// The rigid-body modes of a space without their vectors: the value of mode j at a node x and
// component, so that the modes restricted to a few DOFs cost nothing on a big mesh.
struct Modes {
  int bs = 1, gdim = 1, count = 1;
  double centre[3] = {0, 0, 0};
  double radius = 1;  // the largest distance of a DOF node from the centre
  std::vector<std::string> names;

  bool is_rotation(int j) const noexcept { return bs > 1 && j >= bs; }
  double value(int j, const double* x, int component) const noexcept {
    if (bs == 1) return 1.0;
    if (j < bs) return component == j ? 1.0 : 0.0;
    // Rotation about axis a, about the centre: ω × (x - c) with ω = e_a, and the next two axes
    // p, q of a: (e_a × x)_p = -x_q, (e_a × x)_q = x_p.
    const int a = gdim == 2 ? 2 : j - bs, p = (a + 1) % 3, q = (a + 2) % 3;
    if (component == p) return q < gdim ? -(x[q] - centre[q]) : 0.0;
    if (component == q) return p < gdim ? x[p] - centre[p] : 0.0;
    return 0.0;
  }
};

Modes modes_of(const FunctionSpace& V) {
  const DofMap& d = V.dofmap();
  Modes m;
  m.bs = V.components();
  m.gdim = V.mesh().gdim();
  if (m.bs == 1) {
    m.names = {"constant"};
    return m;
  }
  FEM_EXPECTS(m.bs == m.gdim, "rigid-body modes of the space {}: {} components in {}D", V.name(), m.bs,
              m.gdim);
  const auto n = static_cast<std::size_t>(d.num_nodes);
  const int gdim = m.gdim;
  // Rotations about the centroid, which keeps them well conditioned against the translations.
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < gdim; ++k) m.centre[k] += d.coordinates[i * gdim + k] / static_cast<double>(n);
  double r2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0;
    for (int k = 0; k < gdim; ++k) s += std::pow(d.coordinates[i * gdim + k] - m.centre[k], 2);
    r2 = std::max(r2, s);
  }
  m.radius = r2 > 0 ? std::sqrt(r2) : 1.0;
  const char* const axis = "xyz";
  for (int k = 0; k < m.bs; ++k) m.names.push_back(fmt::format("translation {}", axis[k]));
  if (gdim == 2)
    m.names.emplace_back("rotation z");
  else
    for (int a = 0; a < 3; ++a) m.names.push_back(fmt::format("rotation {}", axis[a]));
  m.count = static_cast<int>(m.names.size());
  return m;
}

}  // namespace

RigidBodyModes rigid_body_modes(const FunctionSpace& V) {
  const DofMap& d = V.dofmap();
  const Modes m = modes_of(V);
  const auto n = static_cast<std::size_t>(d.num_nodes);
  RigidBodyModes out;
  out.names = m.names;
  for (int j = 0; j < m.count; ++j) {
    std::vector<double> v(n * m.bs);
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < m.bs; ++c) v[i * m.bs + c] = m.value(j, &d.coordinates[i * m.gdim], c);
    out.vectors.push_back(std::move(v));
  }
  return out;
}

std::shared_ptr<const NullSpace> null_space(const Assembler& assembler, const CsrMatrix& matrix,
                                            const DirichletValues& constrained) {
  const FunctionSpace& V = assembler.space();
  FEM_EXPECTS(matrix.rows() == V.num_dofs() && matrix.cols() == V.num_dofs(),
              "null_space: a {} x {} matrix on the space {} of {} DOFs", matrix.rows(), matrix.cols(),
              V.name(), V.num_dofs());
  const DofMap& d = V.dofmap();
  const Modes m = modes_of(V);
  const Eigen::Index k = m.count;
  // Which combinations of the modes the constraints leave free: the null space of the modes
  // restricted to the constrained DOFs (rotations scaled by the mesh's radius, so every column
  // has entries of order 1). Exact, whatever the coefficients: no contrast can blur it.
  const auto nd = static_cast<Eigen::Index>(constrained.dofs.size());
  Eigen::MatrixXd free;
  if (nd == 0) {
    free = Eigen::MatrixXd::Identity(k, k);
  } else {
    Eigen::MatrixXd ZD(nd, k);
    for (Eigen::Index r = 0; r < nd; ++r) {
      const index_t dof = constrained.dofs[static_cast<std::size_t>(r)];
      const double* x = &d.coordinates[static_cast<std::size_t>(dof / m.bs) * m.gdim];
      for (Eigen::Index j = 0; j < k; ++j)
        ZD(r, j) = m.value(static_cast<int>(j), x, dof % m.bs) /
                   (m.is_rotation(static_cast<int>(j)) ? m.radius : 1.0);
    }
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(ZD, Eigen::ComputeFullV);
    const auto& sigma = svd.singularValues();
    std::vector<Eigen::Index> columns;
    for (Eigen::Index j = 0; j < k; ++j)
      if (j >= sigma.size() || sigma(j) <= 1e-10 * sigma(0)) columns.push_back(j);
    free.resize(k, static_cast<Eigen::Index>(columns.size()));
    for (std::size_t c = 0; c < columns.size(); ++c)
      free.col(static_cast<Eigen::Index>(c)) = svd.matrixV().col(columns[c]);
    for (Eigen::Index j = 0; j < k; ++j)
      if (m.is_rotation(static_cast<int>(j))) free.row(j) /= m.radius;
  }
  if (free.cols() == 0) return nullptr;
  // Free is not yet null: the operator must not resist them either (a mass or reaction term
  // does). Checked numerically on the free combinations only.
  const RigidBodyModes modes = rigid_body_modes(V);
  std::vector<std::vector<double>> within(static_cast<std::size_t>(free.cols()),
                                          std::vector<double>(static_cast<std::size_t>(k)));
  for (Eigen::Index c = 0; c < free.cols(); ++c)
    for (Eigen::Index j = 0; j < k; ++j) within[c][j] = free(j, c);
  const auto found = find_null_space(matrix, modes.vectors, modes.names, 1e-12, within);
  if (!found) return nullptr;
  const CsrMatrix mass = assembler.matrix(Mass{});
  std::vector<std::vector<double>> vectors, functionals;
  for (int j = 0; j < found->dimension(); ++j) {
    const auto z = found->vector(j);
    vectors.emplace_back(z.begin(), z.end());
    functionals.emplace_back(z.size());
    mass.multiply(z, functionals.back());
  }
  return std::make_shared<const NullSpace>(matrix.rows(), std::move(vectors), found->names(),
                                           std::move(functionals));
}

}  // namespace fem::assembly
