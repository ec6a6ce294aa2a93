// MixedSpace and the flow forms (mixed.hpp). The element work tabulates the velocity's and the
// pressure's Lagrange bases once per quadrature rule, maps them with the cell's vertex geometry,
// and scatters through the mixed plan's element-to-slot map, colour by colour.
#include "fem/assembly/mixed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/quadrature.hpp"
#include "fem/error.hpp"
#include "fem/lagrange.hpp"

namespace fem::assembly {
namespace {

std::string checked_mesh(const std::string& key, Store& store) {
  const auto mesh = store.get<Mesh>(key);
  const CellType t = mesh->cell_type();
  FEM_EXPECTS(t == CellType::tri3 || t == CellType::quad4 || t == CellType::tet4,
              "Taylor–Hood on mesh '{}': its cells are {}; the mixed space needs first-order triangles, "
              "quadrilaterals or tetrahedra",
              mesh->source(), cell_info(t).name);
  FEM_EXPECTS(mesh->gdim() == mesh->tdim(), "Taylor–Hood on mesh '{}': a {}D mesh in {}D coordinates",
              mesh->source(), mesh->tdim(), mesh->gdim());
  return key;
}

// The bases at a rule's points: values and reference gradients of one element.
struct Table {
  int n = 0, dim = 0, nq = 0;
  std::vector<double> phi, grad;  // [q][a], [q][a][d]
  Table(CellType type, const Quadrature& rule) : dim(rule.dim), nq(rule.size()) {
    n = cell_info(type).num_nodes;
    phi.resize(static_cast<std::size_t>(nq * n));
    grad.resize(static_cast<std::size_t>(nq * n * dim));
    for (int q = 0; q < nq; ++q) {
      double xi[3] = {0, 0, 0};
      for (int d = 0; d < dim; ++d) xi[d] = rule.points[static_cast<std::size_t>(q * dim + d)];
      FEM_EXPECTS(lagrange_eval(type, xi, &phi[static_cast<std::size_t>(q * n)],
                                &grad[static_cast<std::size_t>(q * n * dim)]),
                  "no Lagrange element for {}", cell_info(type).name);
    }
  }
};

// J⁻¹ of a dim × dim matrix; returns det J.
double inverse(int dim, const double* J, double* K) {
  if (dim == 2) {
    const double det = J[0] * J[3] - J[1] * J[2];
    K[0] = J[3] / det, K[1] = -J[1] / det, K[2] = -J[2] / det, K[3] = J[0] / det;
    return det;
  }
  const double det = J[0] * (J[4] * J[8] - J[5] * J[7]) - J[1] * (J[3] * J[8] - J[5] * J[6]) +
                     J[2] * (J[3] * J[7] - J[4] * J[6]);
  K[0] = (J[4] * J[8] - J[5] * J[7]) / det;
  K[1] = (J[2] * J[7] - J[1] * J[8]) / det;
  K[2] = (J[1] * J[5] - J[2] * J[4]) / det;
  K[3] = (J[5] * J[6] - J[3] * J[8]) / det;
  K[4] = (J[0] * J[8] - J[2] * J[6]) / det;
  K[5] = (J[2] * J[3] - J[0] * J[5]) / det;
  K[6] = (J[3] * J[7] - J[4] * J[6]) / det;
  K[7] = (J[1] * J[6] - J[0] * J[7]) / det;
  K[8] = (J[0] * J[4] - J[1] * J[3]) / det;
  return det;
}

// One cell's geometry and bases at a quadrature point: weight (w·|det J|), the point x, the
// velocity basis's physical gradients g[a·dim + i], the pressure basis's gp[m·dim + i] (only
// where asked for: pcd_into).
struct Point {
  double weight = 0;
  std::array<double, 3> x{};
  std::vector<double> g, gp;
};

// Loops over W's cells colour by colour, giving each cell's quadrature points to `cell`.
template <class Body>
void for_each_cell(const MixedSpace& W, int degree, Body&& body, bool pressure_gradients = false) {
  const Mesh& mesh = W.mesh();
  const int dim = W.dim();
  const Quadrature& rule = quadrature(mesh.cell_type(), degree);
  const Table U(W.velocity().element(), rule), P(W.pressure().element(), rule);
  const auto& pmap = W.pressure().dofmap();
  const int np = P.n;
  const bool affine = mesh.cell_type() != CellType::quad4;
  for_each_cell_block(W.plan(), [&](index_t first, index_t last) {
    std::vector<Point> points(static_cast<std::size_t>(rule.size()));
    for (auto& p : points) {
      p.g.resize(static_cast<std::size_t>(U.n * dim));
      if (pressure_gradients) p.gp.resize(static_cast<std::size_t>(np * dim));
    }
    double X[8][3];
    for (index_t c = first; c < last; ++c) {
      for (int k = 0; k < np; ++k) {
        const index_t node = pmap.cell_nodes[static_cast<std::size_t>(c * np + k)];
        for (int i = 0; i < dim; ++i) X[k][i] = pmap.coordinates[static_cast<std::size_t>(node * dim + i)];
      }
      double J[9] = {}, K[9], det = 0;
      for (int q = 0; q < rule.size(); ++q) {
        Point& p = points[static_cast<std::size_t>(q)];
        const double* dpsi = &P.grad[static_cast<std::size_t>(q * np * dim)];
        const double* psi = &P.phi[static_cast<std::size_t>(q * np)];
        p.x = {0, 0, 0};
        for (int k = 0; k < np; ++k)
          for (int i = 0; i < dim; ++i) p.x[static_cast<std::size_t>(i)] += psi[k] * X[k][i];
        // Simplices are affine: J once per cell; quadrilaterals at every point.
        if (q == 0 || !affine) {
          std::fill(J, J + 9, 0.0);
          for (int k = 0; k < np; ++k)
            for (int i = 0; i < dim; ++i)
              for (int j = 0; j < dim; ++j) J[i * dim + j] += X[k][i] * dpsi[k * dim + j];
          det = inverse(dim, J, K);
        }
        if (!(det > 0))
          throw InvalidArgument(fmt::format(
              "Taylor–Hood assembly: cell {} of mesh '{}' is inverted or degenerate (det J = {:.3g} at a "
              "quadrature point)",
              c, W.velocity().mesh_key(), det));
        p.weight = rule.weights[static_cast<std::size_t>(q)] * det;
        const double* dphi = &U.grad[static_cast<std::size_t>(q * U.n * dim)];
        for (int a = 0; a < U.n; ++a)
          for (int i = 0; i < dim; ++i) {
            double s = 0;
            for (int j = 0; j < dim; ++j) s += dphi[a * dim + j] * K[j * dim + i];
            p.g[static_cast<std::size_t>(a * dim + i)] = s;
          }
        if (pressure_gradients)
          for (int m = 0; m < np; ++m)
            for (int i = 0; i < dim; ++i) {
              double s = 0;
              for (int j = 0; j < dim; ++j) s += dpsi[m * dim + j] * K[j * dim + i];
              p.gp[static_cast<std::size_t>(m * dim + i)] = s;
            }
      }
      body(c, points, U, P);
    }
  });
}

int flow_degree(const MixedSpace& W) {
  return W.mesh().cell_type() == CellType::quad4 ? 7 : 5;  // (u·∇)u·v: 2 + 1 + 2 on affine cells
}

}  // namespace

MixedSpace::MixedSpace(std::string mesh_key, Store& store)
    : velocity_(checked_mesh(mesh_key, store), 2, store.get<Mesh>(mesh_key)->gdim(), store),
      pressure_(mesh_key, 1, 1, store) {
  const auto& u = velocity_.dofmap();
  const auto& p = pressure_.dofmap();
  const int dim = velocity_.components();
  const index_t cells = velocity_.mesh().num_cells();
  dofs_per_cell_ = u.nodes_per_cell * dim + p.nodes_per_cell;
  // The cell DOFs: each cell's velocity DOFs, then its pressure DOFs.
  auto dofs = std::make_shared<std::vector<index_t>>(static_cast<std::size_t>(cells * dofs_per_cell_));
  for (index_t c = 0; c < cells; ++c) {
    index_t* out = &(*dofs)[static_cast<std::size_t>(c * dofs_per_cell_)];
    for (int a = 0; a < u.nodes_per_cell; ++a)
      for (int k = 0; k < dim; ++k)
        *out++ = u.cell_nodes[static_cast<std::size_t>(c * u.nodes_per_cell + a)] * dim + k;
    for (int a = 0; a < p.nodes_per_cell; ++a)
      *out++ = pressure_offset() + p.cell_nodes[static_cast<std::size_t>(c * p.nodes_per_cell + a)];
  }
  // The plan, coloured by the velocity's nodes (the pressure's are among them: the vertices).
  plan_ = store.get_or_compute<AssemblyPlan>(fmt::format("{}#plan/TaylorHood", mesh_key),
                                             {{mesh_key, velocity_.mesh_version()}}, [&] {
                                               store.count("assembly.pattern_builds");
                                               return build_plan(u, *dofs, dofs_per_cell_, num_dofs());
                                             });
  cell_dofs_ = std::move(dofs);
}

std::shared_ptr<const NullSpace> MixedSpace::pressure_null_space() const {
  const auto n = static_cast<std::size_t>(num_dofs());
  std::vector<double> z(n, 0.0), w(n, 0.0);
  const auto off = static_cast<std::size_t>(pressure_offset());
  std::fill(z.begin() + static_cast<std::ptrdiff_t>(off), z.end(), 1.0);
  const auto& pmap = pressure_.dofmap();
  for_each_cell(*this, 2, [&](index_t c, const std::vector<Point>& points, const Table&, const Table& P) {
    for (int q = 0; q < P.nq; ++q)
      for (int k = 0; k < P.n; ++k)
        w[off + static_cast<std::size_t>(pmap.cell_nodes[static_cast<std::size_t>(c * P.n + k)])] +=
            points[static_cast<std::size_t>(q)].weight * P.phi[static_cast<std::size_t>(q * P.n + k)];
  });
  return std::make_shared<const NullSpace>(num_dofs(), std::vector<std::vector<double>>{std::move(z)},
                                           std::vector<std::string>{"constant pressure"},
                                           std::vector<std::vector<double>>{std::move(w)});
}

void flow_into(const MixedSpace& W, const Flow& flow, std::span<const double> w, std::span<double> values,
               std::span<double> F) {
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  FEM_EXPECTS(w.size() == static_cast<std::size_t>(W.num_dofs()), "flow_into: w has {} entries, the space {}",
              w.size(), W.num_dofs());
  FEM_EXPECTS(values.empty() || values.size() == static_cast<std::size_t>(W.pattern()->nnz()),
              "flow_into: {} matrix values for a pattern of {}", values.size(), W.pattern()->nnz());
  FEM_EXPECTS(F.empty() || F.size() == w.size(), "flow_into: F has {} entries, the space {}", F.size(),
              W.num_dofs());
  FEM_EXPECTS(std::isfinite(flow.viscosity) && flow.viscosity >= 0 && (flow.viscosity > 0 || values.empty()),
              "flow: the viscosity {} must be positive", flow.viscosity);
  FEM_EXPECTS(std::isfinite(flow.density), "flow: the density {} is not finite", flow.density);
  std::fill(values.begin(), values.end(), 0.0);
  const int dim = W.dim();
  const bool convection = flow.convection && flow.density != 0;
  const double rho = flow.density;
  const auto& slots = W.plan().connectivity.element_slots;
  const auto dofs = W.cell_dofs();
  const auto tags = W.mesh().cell_tags();
  for_each_cell(
      W, flow_degree(W), [&](index_t c, const std::vector<Point>& points, const Table& U, const Table& P) {
        thread_local std::vector<double> A, R, x;
        A.assign(values.empty() ? 0 : n * n, 0.0);
        R.assign(n, 0.0);
        x.resize(n);
        const index_t* cd = &dofs[static_cast<std::size_t>(c) * n];
        for (std::size_t i = 0; i < n; ++i) x[i] = w[static_cast<std::size_t>(cd[i])];
        const int nu_ = U.n, pofs = U.n * dim;
        for (int q = 0; q < U.nq; ++q) {
          const Point& pt = points[static_cast<std::size_t>(q)];
          const double* phi = &U.phi[static_cast<std::size_t>(q * U.n)];
          const double* psi = &P.phi[static_cast<std::size_t>(q * P.n)];
          const double* g = pt.g.data();
          // u, ∇u (G[k][j] = ∂u_k/∂x_j), p and f at the point.
          double u[3] = {}, G[3][3] = {}, p = 0, f[3] = {};
          for (int a = 0; a < nu_; ++a)
            for (int k = 0; k < dim; ++k) {
              const double xa = x[static_cast<std::size_t>(a * dim + k)];
              u[k] += xa * phi[a];
              for (int j = 0; j < dim; ++j) G[k][j] += xa * g[a * dim + j];
            }
          for (int m = 0; m < P.n; ++m) p += x[static_cast<std::size_t>(pofs + m)] * psi[m];
          if (flow.body_force) flow.body_force(pt.x.data(), f);
          double div = 0;
          for (int k = 0; k < dim; ++k) div += G[k][k];
          const double wq = pt.weight;
          double nu = flow.viscosity, kappa_inv = flow.compressibility;
          if (flow.material)
            flow.material(c, tags.empty() ? 0 : tags[static_cast<std::size_t>(c)], pt.x.data(), &nu,
                          &kappa_inv);
          // Residual.
          for (int a = 0; a < nu_; ++a)
            for (int k = 0; k < dim; ++k) {
              double r = 0;
              if (nu != 0)
                for (int j = 0; j < dim; ++j) {
                  const double flux = flow.symmetric_gradient ? G[k][j] + G[j][k] : G[k][j];
                  r += nu * flux * g[a * dim + j];
                }
              r -= p * g[a * dim + k];
              if (convection) {
                double adv = 0;
                for (int j = 0; j < dim; ++j) adv += u[j] * G[k][j];
                r += rho * adv * phi[a];
              }
              r -= f[k] * phi[a];
              R[static_cast<std::size_t>(a * dim + k)] += wq * r;
            }
          for (int m = 0; m < P.n; ++m)
            R[static_cast<std::size_t>(pofs + m)] -= wq * psi[m] * (div + kappa_inv * p);
          if (A.empty()) continue;
          // Jacobian.
          if (kappa_inv != 0)
            for (int m = 0; m < P.n; ++m)
              for (int l = 0; l < P.n; ++l)
                A[static_cast<std::size_t>(pofs + m) * n + static_cast<std::size_t>(pofs + l)] -=
                    wq * kappa_inv * psi[m] * psi[l];
          for (int a = 0; a < nu_; ++a) {
            const double* ga = g + a * dim;
            for (int b = 0; b < nu_; ++b) {
              const double* gb = g + b * dim;
              double dot = 0, adv = 0;
              for (int j = 0; j < dim; ++j) dot += ga[j] * gb[j];
              if (convection)
                for (int j = 0; j < dim; ++j) adv += u[j] * gb[j];
              for (int k = 0; k < dim; ++k) {
                const std::size_t row = static_cast<std::size_t>(a * dim + k) * n;
                A[row + static_cast<std::size_t>(b * dim + k)] +=
                    wq * (nu * dot + (convection ? rho * adv * phi[a] : 0));
                for (int l = 0; l < dim; ++l) {
                  double v = flow.symmetric_gradient ? nu * gb[k] * ga[l] : 0;
                  if (convection && flow.linearization == Linearization::newton)
                    v += rho * phi[a] * phi[b] * G[k][l];
                  A[row + static_cast<std::size_t>(b * dim + l)] += wq * v;
                }
              }
            }
            for (int m = 0; m < P.n; ++m)
              for (int k = 0; k < dim; ++k) {
                const double v = -wq * psi[m] * ga[k];
                A[static_cast<std::size_t>(a * dim + k) * n + static_cast<std::size_t>(pofs + m)] += v;
                A[static_cast<std::size_t>(pofs + m) * n + static_cast<std::size_t>(a * dim + k)] += v;
              }
          }
        }
        if (!F.empty())
          for (std::size_t i = 0; i < n; ++i) F[static_cast<std::size_t>(cd[i])] += R[i];

        if (!values.empty()) {
          const index_t* s = &slots[static_cast<std::size_t>(c) * n * n];
          for (std::size_t e = 0; e < n * n; ++e) values[static_cast<std::size_t>(s[e])] += A[e];
        }
      });
  if (!F.empty() && flow.load) {
    FEM_EXPECTS(flow.load->size() == static_cast<std::size_t>(W.pressure_offset()),
                "flow: the load has {} entries, the velocity {}", flow.load->size(), W.pressure_offset());
    for (std::size_t i = 0; i < flow.load->size(); ++i) F[i] -= (*flow.load)[i];
  }
}

std::vector<double> up_cell_stress(const MixedSpace& W, const Flow& flow, std::span<const double> w) {
  FEM_EXPECTS(w.size() == static_cast<std::size_t>(W.num_dofs()),
              "up_cell_stress: w has {} entries, the space {}", w.size(), W.num_dofs());
  const int dim = W.dim();
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  std::vector<double> stress(static_cast<std::size_t>(W.mesh().num_cells()) * 6, 0.0);
  const auto dofs = W.cell_dofs();
  const auto tags = W.mesh().cell_tags();
  for_each_cell(W, 2, [&](index_t c, const std::vector<Point>& points, const Table& U, const Table& P) {
    const index_t* cd = &dofs[static_cast<std::size_t>(c) * n];
    double sum[6] = {}, area = 0;
    for (int q = 0; q < U.nq; ++q) {
      const Point& pt = points[static_cast<std::size_t>(q)];
      double G[3][3] = {}, p = 0;
      for (int a = 0; a < U.n; ++a)
        for (int k = 0; k < dim; ++k) {
          const double xa = w[static_cast<std::size_t>(cd[a * dim + k])];
          for (int j = 0; j < dim; ++j) G[k][j] += xa * pt.g[static_cast<std::size_t>(a * dim + j)];
        }
      for (int m = 0; m < P.n; ++m)
        p += w[static_cast<std::size_t>(cd[U.n * dim + m])] * P.phi[static_cast<std::size_t>(q * P.n + m)];
      double mu = flow.viscosity, unused = 0;
      if (flow.material)
        flow.material(c, tags.empty() ? 0 : tags[static_cast<std::size_t>(c)], pt.x.data(), &mu, &unused);
      const auto s = [&](int i, int j) { return mu * (G[i][j] + G[j][i]) - (i == j ? p : 0.0); };
      const double v[6] = {s(0, 0),
                           s(1, 1),
                           dim == 3 ? s(2, 2) : -p,
                           s(0, 1),
                           dim == 3 ? s(1, 2) : 0.0,
                           dim == 3 ? s(0, 2) : 0.0};
      for (int k = 0; k < 6; ++k) sum[k] += pt.weight * v[k];
      area += pt.weight;
    }
    for (int k = 0; k < 6; ++k)
      stress[static_cast<std::size_t>(c) * 6 + static_cast<std::size_t>(k)] = sum[k] / area;
  });
  return stress;
}

void mixed_into(const MixedSpace& W, const MixedKernel& kernel, int quadrature_degree,
                std::span<const double> w, std::span<double> values, std::span<double> F) {
  FEM_EXPECTS(kernel != nullptr, "mixed_into: no kernel");
  FEM_EXPECTS(w.size() == static_cast<std::size_t>(W.num_dofs()),
              "mixed_into: w has {} entries, the space {}", w.size(), W.num_dofs());
  FEM_EXPECTS(values.empty() || values.size() == static_cast<std::size_t>(W.pattern()->nnz()),
              "mixed_into: {} matrix values for a pattern of {}", values.size(), W.pattern()->nnz());
  FEM_EXPECTS(F.empty() || F.size() == w.size(), "mixed_into: F has {} entries, the space {}", F.size(),
              W.num_dofs());
  std::fill(values.begin(), values.end(), 0.0);
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  const int dim = W.dim();
  const auto& slots = W.plan().connectivity.element_slots;
  const auto dofs = W.cell_dofs();
  for_each_cell(
      W, quadrature_degree, [&](index_t c, const std::vector<Point>& points, const Table& U, const Table& P) {
        thread_local std::vector<double> A, R, x, weight, xs, grad;
        A.assign(values.empty() ? 0 : n * n, 0.0);
        R.assign(n, 0.0);
        x.resize(n);
        const index_t* cd = &dofs[static_cast<std::size_t>(c) * n];
        for (std::size_t i = 0; i < n; ++i) x[i] = w[static_cast<std::size_t>(cd[i])];
        const auto nq = static_cast<std::size_t>(U.nq), nu = static_cast<std::size_t>(U.n);
        weight.resize(nq);
        xs.resize(nq * 3);
        grad.resize(nq * nu * static_cast<std::size_t>(dim));
        for (std::size_t q = 0; q < nq; ++q) {
          weight[q] = points[q].weight;
          std::copy(points[q].x.begin(), points[q].x.end(), xs.begin() + static_cast<std::ptrdiff_t>(q * 3));
          std::copy(points[q].g.begin(), points[q].g.end(),
                    grad.begin() + static_cast<std::ptrdiff_t>(q * nu * static_cast<std::size_t>(dim)));
        }
        MixedCell cell{c,         dim,          U.nq,        U.n,          P.n,     weight.data(),
                       xs.data(), U.phi.data(), grad.data(), P.phi.data(), x.data()};
        kernel(cell, A.empty() ? nullptr : A.data(), F.empty() ? nullptr : R.data());
        if (!F.empty())
          for (std::size_t i = 0; i < n; ++i) F[static_cast<std::size_t>(cd[i])] += R[i];
        if (!values.empty()) {
          const index_t* s = &slots[static_cast<std::size_t>(c) * n * n];
          for (std::size_t e = 0; e < n * n; ++e) values[static_cast<std::size_t>(s[e])] += A[e];
        }
      });
}

void velocity_mass_into(const MixedSpace& W, double density, std::span<double> values) {
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  FEM_EXPECTS(values.size() == static_cast<std::size_t>(W.pattern()->nnz()),
              "velocity_mass_into: {} matrix values for a pattern of {}", values.size(), W.pattern()->nnz());
  std::fill(values.begin(), values.end(), 0.0);
  const int dim = W.dim();
  const auto& slots = W.plan().connectivity.element_slots;
  for_each_cell(W, 4, [&](index_t c, const std::vector<Point>& points, const Table& U, const Table&) {
    const index_t* s = &slots[static_cast<std::size_t>(c) * n * n];
    for (int q = 0; q < U.nq; ++q) {
      const double* phi = &U.phi[static_cast<std::size_t>(q * U.n)];
      const double wq = density * points[static_cast<std::size_t>(q)].weight;
      for (int a = 0; a < U.n; ++a)
        for (int b = 0; b < U.n; ++b)
          for (int k = 0; k < dim; ++k)
            values[static_cast<std::size_t>(
                s[static_cast<std::size_t>(a * dim + k) * n + static_cast<std::size_t>(b * dim + k)])] +=
                wq * phi[a] * phi[b];
    }
  });
}

void convection_into(const MixedSpace& W, double density, std::span<const double> u, std::span<double> F) {
  const int dim = W.dim();
  const auto nv = static_cast<std::size_t>(W.pressure_offset());
  FEM_EXPECTS(u.size() >= nv && F.size() >= nv && F.size() <= static_cast<std::size_t>(W.num_dofs()),
              "convection_into: u has {} and F {} entries, the velocity {}", u.size(), F.size(), nv);
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  FEM_EXPECTS(n <= 81, "convection_into: {} DOFs per cell, more than its cell buffers hold", n);
  const auto dofs = W.cell_dofs();
  for_each_cell(W, flow_degree(W),
                [&](index_t c, const std::vector<Point>& points, const Table& U, const Table&) {
                  const index_t* cd = &dofs[static_cast<std::size_t>(c) * n];
                  const int nu = U.n;
                  double x[27 * 3], R[27 * 3] = {};
                  for (int i = 0; i < nu * dim; ++i) x[i] = u[static_cast<std::size_t>(cd[i])];
                  for (int q = 0; q < U.nq; ++q) {
                    const Point& pt = points[static_cast<std::size_t>(q)];
                    const double* phi = &U.phi[static_cast<std::size_t>(q * nu)];
                    const double* g = pt.g.data();
                    double v[3] = {}, G[3][3] = {};
                    for (int a = 0; a < nu; ++a)
                      for (int k = 0; k < dim; ++k) {
                        const double xa = x[a * dim + k];
                        v[k] += xa * phi[a];
                        for (int j = 0; j < dim; ++j) G[k][j] += xa * g[a * dim + j];
                      }
                    double adv[3];
                    for (int k = 0; k < dim; ++k) {
                      adv[k] = 0;
                      for (int j = 0; j < dim; ++j) adv[k] += v[j] * G[k][j];
                      adv[k] *= density * pt.weight;
                    }
                    for (int a = 0; a < nu; ++a)
                      for (int k = 0; k < dim; ++k) R[a * dim + k] += adv[k] * phi[a];
                  }
                  for (int i = 0; i < nu * dim; ++i) F[static_cast<std::size_t>(cd[i])] += R[i];
                });
}

void schur_mass_into(const MixedSpace& W, const Flow& flow, std::span<double> values) {
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  FEM_EXPECTS(values.size() == static_cast<std::size_t>(W.pattern()->nnz()),
              "schur_mass_into: {} matrix values for a pattern of {}", values.size(), W.pattern()->nnz());
  std::fill(values.begin(), values.end(), 0.0);
  const auto& slots = W.plan().connectivity.element_slots;
  const auto tags = W.mesh().cell_tags();
  for_each_cell(W, 2, [&](index_t c, const std::vector<Point>& points, const Table&, const Table& P) {
    const std::size_t pofs = n - static_cast<std::size_t>(P.n);
    const index_t* s = &slots[static_cast<std::size_t>(c) * n * n];
    for (int q = 0; q < P.nq; ++q) {
      const Point& pt = points[static_cast<std::size_t>(q)];
      double mu = flow.viscosity, kappa_inv = flow.compressibility;
      if (flow.material)
        flow.material(c, tags.empty() ? 0 : tags[static_cast<std::size_t>(c)], pt.x.data(), &mu, &kappa_inv);
      FEM_EXPECTS(std::isfinite(mu) && mu > 0,
                  "schur_mass_into: the viscosity {} in cell {} must be positive", mu, c);
      const double wq = -pt.weight * (1 / (flow.symmetric_gradient ? 2 * mu : mu) + kappa_inv);
      const double* psi = &P.phi[static_cast<std::size_t>(q * P.n)];
      for (int a = 0; a < P.n; ++a)
        for (int b = 0; b < P.n; ++b)
          values[static_cast<std::size_t>(
              s[(pofs + static_cast<std::size_t>(a)) * n + pofs + static_cast<std::size_t>(b)])] +=
              wq * psi[a] * psi[b];
    }
  });
}

void pcd_into(const MixedSpace& W, const Flow& flow, std::span<const double> w,
              const DirichletValues& velocity, bool open, std::span<double> laplacian,
              std::span<double> convection) {
  const auto n = static_cast<std::size_t>(W.dofs_per_cell());
  const auto nnz = static_cast<std::size_t>(W.pattern()->nnz());
  FEM_EXPECTS(laplacian.size() == nnz && convection.size() == nnz,
              "pcd_into: {} and {} matrix values for a pattern of {}", laplacian.size(), convection.size(),
              nnz);
  FEM_EXPECTS(w.size() == static_cast<std::size_t>(W.num_dofs()), "pcd_into: w has {} entries, the space {}",
              w.size(), W.num_dofs());
  std::fill(laplacian.begin(), laplacian.end(), 0.0);
  std::fill(convection.begin(), convection.end(), 0.0);
  const int dim = W.dim();
  const bool convective = flow.convection && flow.density != 0;
  const auto& slots = W.plan().connectivity.element_slots;
  const auto dofs = W.cell_dofs();
  const auto tags = W.mesh().cell_tags();
  for_each_cell(
      W, flow_degree(W),
      [&](index_t c, const std::vector<Point>& points, const Table& U, const Table& P) {
        const std::size_t pofs = n - static_cast<std::size_t>(P.n);
        const index_t* s = &slots[static_cast<std::size_t>(c) * n * n];
        const index_t* cd = &dofs[static_cast<std::size_t>(c) * n];
        for (int q = 0; q < U.nq; ++q) {
          const Point& pt = points[static_cast<std::size_t>(q)];
          double mu = flow.viscosity, kappa_inv = 0;
          if (flow.material)
            flow.material(c, tags.empty() ? 0 : tags[static_cast<std::size_t>(c)], pt.x.data(), &mu,
                          &kappa_inv);
          const double nu = flow.symmetric_gradient ? 2 * mu : mu;
          double u[3] = {};
          if (convective)
            for (int a = 0; a < U.n; ++a)
              for (int k = 0; k < dim; ++k)
                u[k] += w[static_cast<std::size_t>(cd[a * dim + k])] *
                        U.phi[static_cast<std::size_t>(q * U.n + a)];
          const double* psi = &P.phi[static_cast<std::size_t>(q * P.n)];
          for (int a = 0; a < P.n; ++a)
            for (int b = 0; b < P.n; ++b) {
              double grad = 0, adv = 0;
              for (int i = 0; i < dim; ++i) {
                grad += pt.gp[static_cast<std::size_t>(a * dim + i)] *
                        pt.gp[static_cast<std::size_t>(b * dim + i)];
                adv += u[i] * pt.gp[static_cast<std::size_t>(b * dim + i)];
              }
              const auto e = static_cast<std::size_t>(
                  s[(pofs + static_cast<std::size_t>(a)) * n + pofs + static_cast<std::size_t>(b)]);
              laplacian[e] += pt.weight * grad;
              convection[e] += pt.weight * (nu * grad + (convective ? flow.density * adv * psi[a] : 0.0));
            }
        }
      },
      /*pressure_gradients=*/true);
  // With an outflow, Dirichlet rows at the inflow (Elman and Tuminaro 2009; FENaPack's BRM1):
  // the boundary vertices whose velocity is given and not zero. Row and column zeroed, the
  // Laplacian's diagonal kept, the convection's μ' times it. Enclosed flows keep Neumann rows.
  std::vector<char> inflow(static_cast<std::size_t>(W.num_pressure_dofs()), 0);
  if (open)
    for (std::size_t i = 0; i < velocity.dofs.size(); ++i)
      if (const index_t node = velocity.dofs[i] / dim;
          node < W.num_pressure_dofs() && velocity.values[i] != 0)
        inflow[static_cast<std::size_t>(node)] = 1;
  const CsrPattern& pattern = *W.pattern();
  const auto off = pattern.row_offsets();
  const auto col = pattern.col_indices();
  const index_t first = W.pressure_offset();
  const auto is_inflow = [&](index_t dof) {
    return dof >= first && inflow[static_cast<std::size_t>(dof - first)] != 0;
  };
  const double nu = flow.symmetric_gradient ? 2 * flow.viscosity : flow.viscosity;
  for (index_t r = first; r < pattern.rows(); ++r)
    for (index_t e = off[r]; e < off[r + 1]; ++e)
      if (is_inflow(r) || is_inflow(col[e])) {
        const auto k = static_cast<std::size_t>(e);
        if (col[e] != r) laplacian[k] = 0;
        convection[k] = col[e] == r ? nu * laplacian[k] : 0.0;
      }
}

}  // namespace fem::assembly
