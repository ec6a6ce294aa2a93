// The nonlinear forms' residual and Jacobian, in one engine: a chunk of cells at a time, u and
// ∇u (and x where the form reads it) at all of the chunk's points (about 48: 8 six-point
// triangles), one call of the form's integrand for all of them (Bratu's e^u runs as one vector
// loop), then each cell's element vector and matrix. On P1 (constant gradients) the Jacobian's
// quadrature sums are taken per term (R_ij = Σ w ∂s/∂u φ_i φ_j, D = Σ w ∂a/∂∇u, ...) instead of
// per entry and point. The same arithmetic whichever outputs are asked for, so the fused pass
// (residual_and_jacobian_into, what Newton calls where it needs both) gives the separate passes'
// values bit for bit.
#include <algorithm>
#include <vector>

#include "fem/assembly/assembler.hpp"

namespace fem::assembly {
namespace {

constexpr int kChunkPoints = 48;  // points per call of the form: 8 six-point triangles

// The form's values at the points of one chunk of cells, per thread. Each array grows to what
// the largest (points, dim) seen needs: a 27-point hexahedron after 48-point triangles needs
// fewer points but more room per point.
struct BlockPoints {
  std::vector<double> x, u, g, a, da_du, da_dg, s, ds_du, ds_dg;
  void reserve(std::size_t points, int dim) {
    const auto d = static_cast<std::size_t>(dim);
    auto grow = [](std::vector<double>& v, std::size_t n) {
      if (v.size() < n) v.resize(n);
    };
    for (auto* v : {&u, &s, &ds_du}) grow(*v, points);
    for (auto* v : {&x, &g, &a, &da_du, &ds_dg}) grow(*v, points * d);
    grow(da_dg, points * d * d);
  }
};

BlockPoints& block_points(std::size_t points, int dim) {
  thread_local BlockPoints p;
  p.reserve(points, dim);
  return p;
}

// One cell's slice of a BlockPoints: the values at its points, indexed from 0.
struct Pointwise {
  const double *g, *a, *da_du, *da_dg, *s, *ds_du, *ds_dg;
};

Pointwise slice(const BlockPoints& p, std::size_t first_point, int dim) {
  const std::size_t v = first_point * dim;
  return {&p.g[v],    &p.a[v], &p.da_du[v], &p.da_dg[v * dim], &p.s[first_point], &p.ds_du[first_point],
          &p.ds_dg[v]};
}

// be[i] += Σ_q w (s φ_i + a·∇φ_i).
// NQ: the number of points when known at compile time (0: cv.num_points).
template <int NQ, class CV>
void residual_kernel(const CV& cv, const Pointwise& p, double* be) {
  constexpr int n = CV::n, dim = CV::dim;
  const int nq = NQ > 0 ? NQ : cv.num_points;
  if constexpr (CV::constant_gradients) {
    double sa[dim] = {};
    for (int q = 0; q < nq; ++q) {
      const double w = cv.weight[q], ws = w * p.s[static_cast<std::size_t>(q)];
      for (int d = 0; d < dim; ++d) sa[d] += w * p.a[static_cast<std::size_t>(q) * dim + d];
      for (int i = 0; i < n; ++i) be[i] += ws * cv.basis(q, i);
    }
    for (int i = 0; i < n; ++i) {
      const double* gi = cv.basis_grad(0, i);
      double t = 0;
      for (int d = 0; d < dim; ++d) t += sa[d] * gi[d];
      be[i] += t;
    }
  } else {
    for (int q = 0; q < nq; ++q) {
      const double* a = &p.a[static_cast<std::size_t>(q) * dim];
      const double s = p.s[static_cast<std::size_t>(q)];
      for (int i = 0; i < n; ++i) {
        const double* gi = cv.basis_grad(q, i);
        double t = s * cv.basis(q, i);
        for (int d = 0; d < dim; ++d) t += a[d] * gi[d];
        be[i] += cv.weight[q] * t;
      }
    }
  }
}

// A[i n + j] += Σ_q w ((∂s/∂u φ_j + ∂s/∂∇u·∇φ_j) φ_i + (∂a/∂u φ_j + ∂a/∂∇u ∇φ_j)·∇φ_i).
template <int NQ, class CV>
void jacobian_kernel(const CV& cv, const Pointwise& p, double* A) {
  constexpr int n = CV::n, dim = CV::dim;
  const int nq = NQ > 0 ? NQ : cv.num_points;
  if constexpr (CV::constant_gradients) {
    // With ∇φ constant the sums over q factor: R_ij = Σ w ∂s/∂u φ_i φ_j, P_id = Σ w φ_i ∂s/∂∇u_d,
    // Q_jd = Σ w φ_j ∂a_d/∂u, D_de = Σ w ∂a_d/∂∇u_e; then
    // A_ij = R_ij + P_i·∇φ_j + Q_j·∇φ_i + ∇φ_i·D ∇φ_j.
    double R[n][n] = {}, P[n][dim] = {}, Q[n][dim] = {}, D[dim][dim] = {};
    for (int q = 0; q < nq; ++q) {
      const auto qs = static_cast<std::size_t>(q);
      const double w = cv.weight[q], wr = w * p.ds_du[qs];
      for (int i = 0; i < n; ++i) {
        const double pi = cv.basis(q, i), wpi = wr * pi;
        for (int j = 0; j < n; ++j) R[i][j] += wpi * cv.basis(q, j);
        for (int d = 0; d < dim; ++d) {
          P[i][d] += w * pi * p.ds_dg[qs * dim + d];
          Q[i][d] += w * pi * p.da_du[qs * dim + d];
        }
      }
      for (int d = 0; d < dim; ++d)
        for (int e = 0; e < dim; ++e) D[d][e] += w * p.da_dg[(qs * dim + d) * dim + e];
    }
    for (int j = 0; j < n; ++j) {
      const double* gj = cv.basis_grad(0, j);
      double Dg[dim];
      for (int d = 0; d < dim; ++d) {
        Dg[d] = 0;
        for (int e = 0; e < dim; ++e) Dg[d] += D[d][e] * gj[e];
      }
      for (int i = 0; i < n; ++i) {
        const double* gi = cv.basis_grad(0, i);
        double t = R[i][j];
        for (int d = 0; d < dim; ++d) t += P[i][d] * gj[d] + Q[j][d] * gi[d] + gi[d] * Dg[d];
        A[i * n + j] += t;
      }
    }
  } else {
    for (int q = 0; q < nq; ++q) {
      const auto qs = static_cast<std::size_t>(q);
      const double w = cv.weight[q];
      const double* da_du = &p.da_du[qs * dim];
      const double* da_dg = &p.da_dg[qs * dim * dim];
      const double* ds_dg = &p.ds_dg[qs * dim];
      for (int j = 0; j < n; ++j) {
        const double pj = cv.basis(q, j);
        const double* gj = cv.basis_grad(q, j);
        double flux_j[dim];
        double react_j = p.ds_du[qs] * pj;
        for (int d = 0; d < dim; ++d) {
          flux_j[d] = da_du[d] * pj;
          for (int e = 0; e < dim; ++e) flux_j[d] += da_dg[d * dim + e] * gj[e];
          react_j += ds_dg[d] * gj[d];
        }
        for (int i = 0; i < n; ++i) {
          const double* gi = cv.basis_grad(q, i);
          double t = react_j * cv.basis(q, i);
          for (int d = 0; d < dim; ++d) t += flux_j[d] * gi[d];
          A[i * n + j] += w * t;
        }
      }
    }
  }
}

int quadrature_degree(const NonlinearForm& form, const FunctionSpace& V) {
  return form.quadrature_degree.value_or(2 * V.degree() + 2);
}

// The residual of a form into F and/or its Jacobian into values (either may be empty),
// a chunk of cells at a time: u and ∇u (and x) at every point of the chunk, one call of the
// form for all of them, then each cell's element vector and matrix. F is added to; values are
// overwritten. The same arithmetic whichever outputs are asked for, so the fused pass gives the
// separate passes' values bit for bit.
void assemble_batched(const Assembler& assembler, const NonlinearForm& form, std::span<const double> u,
                      std::span<double> F, std::span<double> values) {
  const FunctionSpace& V = assembler.space();
  const AssemblyPlan& plan = assembler.plan();
  const bool vector = !F.empty(), matrix = !values.empty();
  FEM_EXPECTS(form.integrand != nullptr, "a nonlinear form needs an integrand");
  FEM_EXPECTS(V.components() == 1, "nonlinear forms need a scalar space, not {}", V.name());
  FEM_EXPECTS(u.size() == static_cast<std::size_t>(V.num_dofs()),
              "coefficient has {} values, the space {} DOFs", u.size(), V.num_dofs());
  FEM_EXPECTS(!vector || F.size() == static_cast<std::size_t>(V.num_dofs()),
              "residual of {} entries, the space has {} DOFs", F.size(), V.num_dofs());
  if (matrix) {
    FEM_EXPECTS(values.size() == plan.pattern().nnz(),
                "Jacobian values: {} given, the pattern has {} nonzeros", values.size(),
                plan.pattern().nnz());
    detail::parallel_zero(values);
  }
  const index_t* cell_nodes = V.dofmap().cell_nodes.data();
  const index_t* slots = plan.connectivity.element_slots.data();
  double* out = F.data();
  double* val = values.data();
  detail::visit_space<Blocks::scalar>(V, [&]<class E, class G, int BS>() {
    constexpr int n = E::n, dim = E::dim;
    const detail::Tabulation<E, G> tab(quadrature(V.element(), quadrature_degree(form, V)));
    detail::visit_rule_size<G>(tab.nq, [&]<int NQ>() {
      for_each_cell_block(plan, [&](index_t block_first, index_t block_last) {
        // Two evaluators: the first gathers u and the points for the form, the second only
        // recomputes the geometry for the element kernels.
        detail::CellEvaluator<E, G, 1, NQ> ev(tab, V.mesh(), V.dofmap(), u, form.uses_points);
        detail::CellEvaluator<E, G, 1, NQ> geometry(tab, V.mesh(), V.dofmap(), {}, false);
        const int nq = NQ > 0 ? NQ : tab.nq;
        // Chunks of cells whose point values stay in the L1 cache.
        const index_t chunk = std::max(1, kChunkPoints / nq);
        BlockPoints& p = block_points(static_cast<std::size_t>(chunk) * nq, dim);
        for (index_t first = block_first; first < block_last; first += chunk) {
          const index_t last = std::min(block_last, first + chunk);
          const auto points = static_cast<std::size_t>(last - first) * nq;
          for (index_t c = first; c < last; ++c) {
            const auto& cv = ev.reinit(c);
            const std::size_t k = static_cast<std::size_t>(c - first) * nq;
            double* g = &p.g[k * dim];
            for (int q = 0; q < nq; ++q) {
              p.u[k + q] = cv.u_value(q);
              if (!cv.constant_gradients || q == 0)
                cv.u_grad(q, g + q * dim);
              else
                for (int d = 0; d < dim; ++d) g[q * dim + d] = g[d];
              if (form.uses_points)
                for (int d = 0; d < dim; ++d) p.x[(k + q) * dim + d] = cv.point(q)[d];
            }
          }
          form.integrand(static_cast<int>(points), dim, form.uses_points ? p.x.data() : nullptr, p.u.data(),
                         p.g.data(), p.a.data(), matrix ? p.da_du.data() : nullptr,
                         matrix ? p.da_dg.data() : nullptr, p.s.data(), matrix ? p.ds_du.data() : nullptr,
                         matrix ? p.ds_dg.data() : nullptr);
          for (index_t c = first; c < last; ++c) {
            const auto& cv = geometry.reinit(c);
            const Pointwise pc = slice(p, static_cast<std::size_t>(c - first) * nq, dim);
            if (vector) {
              double be[n] = {};
              residual_kernel<NQ>(cv, pc, be);
              const index_t* nodes = cell_nodes + static_cast<std::size_t>(c) * n;
              for (int i = 0; i < n; ++i) out[nodes[i]] += be[i];
            }
            if (matrix) {
              double A[n * n] = {};
              jacobian_kernel<NQ>(cv, pc, A);
              const index_t* s = slots + static_cast<std::size_t>(c) * n * n;
              for (int k = 0; k < n * n; ++k) val[s[k]] += A[k];
            }
          }
        }
      });
    });
  });
}

}  // namespace

void Assembler::residual_into(const NonlinearForm& form, std::span<const double> u,
                              std::span<double> b) const {
  assemble_batched(*this, form, u, b, {});
}

void Assembler::jacobian_into(const NonlinearForm& form, std::span<const double> u,
                              std::span<double> values) const {
  assemble_batched(*this, form, u, {}, values);
}

void Assembler::residual_and_jacobian_into(const NonlinearForm& form, std::span<const double> u,
                                           std::span<double> b, std::span<double> values) const {
  FEM_EXPECTS(!b.empty() && !values.empty(),
              "residual_and_jacobian_into: a residual and Jacobian values to fill");
  assemble_batched(*this, form, u, b, values);
}

CsrMatrix Assembler::jacobian(const NonlinearForm& form, std::span<const double> u) const {
  std::vector<double> values = prefaulted_vector<double>(pattern()->nnz());
  jacobian_into(form, u, values);
  return CsrMatrix(pattern(), std::move(values));
}

std::vector<double> Assembler::residual(const NonlinearForm& form, std::span<const double> u) const {
  std::vector<double> b(space_.num_dofs(), 0.0);
  residual_into(form, u, b);
  return b;
}

}  // namespace fem::assembly
