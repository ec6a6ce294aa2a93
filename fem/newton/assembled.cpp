// assembled_problem(): see assembled.hpp.
//
// Forms with a batched pointwise callback (NonlinearForm::batch, set by the library's forms) are
// assembled here by Newton's own element kernels through the assembly kernel's public loops:
// one call of the form per cell instead of two per quadrature point, no quadrature points where
// the form does not read them, and on P1 (constant gradients) the Jacobian's quadrature sums
// taken per term (R_ij = Σ w ∂s/∂u φ_i φ_j, D = Σ w ∂a/∂∇u, ...) instead of per entry and point.
// The values are those of Assembler::residual_into/jacobian_into up to round-off (the sums run
// in another order). Other forms go through the Assembler.
#include "fem/newton/assembled.hpp"

#include <algorithm>
#include <vector>

#include "fem/assembly/assemble.hpp"

namespace fem::newton {

namespace {

using assembly::NonlinearForm;

// The batched pointwise values of one cell, per thread (sized for the largest rule seen).
struct Pointwise {
  std::vector<double> u, g, a, da_du, da_dg, s, ds_du, ds_dg;
  void reserve(int points, int dim) {
    const auto q = static_cast<std::size_t>(points), d = static_cast<std::size_t>(dim);
    if (u.size() >= q && g.size() >= q * d) return;
    u.resize(q);
    s.resize(q);
    ds_du.resize(q);
    g.resize(q * d);
    a.resize(q * d);
    da_du.resize(q * d);
    ds_dg.resize(q * d);
    da_dg.resize(q * d * d);
  }
};

Pointwise& pointwise(int points, int dim) {
  thread_local Pointwise p;
  p.reserve(points, dim);
  return p;
}

// u and ∇u at the cell's quadrature points, then the form's values there (and derivatives
// when `derivatives`).
template <class CV>
Pointwise& evaluate(const NonlinearForm& form, const CV& cv, bool derivatives) {
  constexpr int dim = CV::dim;
  const int nq = cv.num_points;
  Pointwise& p = pointwise(nq, dim);
  double* g = p.g.data();
  if constexpr (CV::constant_gradients) {  // ∇u is the same at every point: computed once
    cv.u_grad(0, g);
    for (int q = 1; q < nq; ++q)
      for (int d = 0; d < dim; ++d) g[q * dim + d] = g[d];
  } else {
    for (int q = 0; q < nq; ++q) cv.u_grad(q, g + q * dim);
  }
  for (int q = 0; q < nq; ++q) p.u[static_cast<std::size_t>(q)] = cv.u_value(q);
  form.batch(nq, dim, form.uses_points ? cv.x : nullptr, p.u.data(), g, p.a.data(),
             derivatives ? p.da_du.data() : nullptr, derivatives ? p.da_dg.data() : nullptr, p.s.data(),
             derivatives ? p.ds_du.data() : nullptr, derivatives ? p.ds_dg.data() : nullptr);
  return p;
}

// be[i] += Σ_q w (s φ_i + a·∇φ_i).
template <class CV>
void residual_kernel(const CV& cv, const Pointwise& p, double* be) {
  constexpr int n = CV::n, dim = CV::dim;
  const int nq = cv.num_points;
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
template <class CV>
void jacobian_kernel(const CV& cv, const Pointwise& p, double* A) {
  constexpr int n = CV::n, dim = CV::dim;
  const int nq = cv.num_points;
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

int quadrature_degree(const NonlinearForm& form, const assembly::FunctionSpace& V) {
  return form.quadrature_degree.value_or(2 * V.degree() + 2);  // as Assembler::residual_into
}

void residual_into(const assembly::Assembler& assembler, const NonlinearForm& form, std::span<const double> u,
                   std::span<double> F) {
  if (!form.batch) {
    assembler.residual_into(form, u, F);
    return;
  }
  auto kernel = [&](const auto& cv, double* be) { residual_kernel(cv, evaluate(form, cv, false), be); };
  assembly::assemble_vector<assembly::Blocks::scalar>(assembler.space(), assembler.plan(), kernel,
                                                      quadrature_degree(form, assembler.space()), F, u,
                                                      form.uses_points);
}

void jacobian_into(const assembly::Assembler& assembler, const NonlinearForm& form, std::span<const double> u,
                   std::span<double> values) {
  if (!form.batch) {
    assembler.jacobian_into(form, u, values);
    return;
  }
  auto kernel = [&](const auto& cv, double* A) { jacobian_kernel(cv, evaluate(form, cv, true), A); };
  assembly::assemble_matrix<assembly::Blocks::scalar>(assembler.space(), assembler.plan(), kernel,
                                                      quadrature_degree(form, assembler.space()), values, u,
                                                      form.uses_points);
}

// Both in one pass over the cells: the Jacobian through the matrix loop, the residual added
// to F by the kernel itself (cells of one colour share no node, as in assemble_vector).
void residual_and_jacobian_into(const assembly::Assembler& assembler, const NonlinearForm& form,
                                std::span<const double> u, std::span<double> F, std::span<double> values) {
  const index_t* cell_nodes = assembler.space().dofmap().cell_nodes.data();
  double* out = F.data();
  auto kernel = [&](const auto& cv, double* A) {
    using CV = std::decay_t<decltype(cv)>;
    const Pointwise& p = evaluate(form, cv, true);
    jacobian_kernel(cv, p, A);
    double be[CV::n] = {};
    residual_kernel(cv, p, be);
    const index_t* nodes = cell_nodes + static_cast<std::size_t>(cv.cell) * CV::n;
    for (int i = 0; i < CV::n; ++i) out[nodes[i]] += be[i];
  };
  assembly::assemble_matrix<assembly::Blocks::scalar>(assembler.space(), assembler.plan(), kernel,
                                                      quadrature_degree(form, assembler.space()), values, u,
                                                      form.uses_points);
}

}  // namespace

Problem assembled_problem(std::shared_ptr<const assembly::Assembler> assembler, assembly::NonlinearForm form,
                          assembly::DirichletValues bc, std::string name, Store& store) {
  FEM_EXPECTS(assembler != nullptr, "assembled_problem '{}': no assembler", name);
  FEM_EXPECTS(form.flux && form.reaction, "assembled_problem '{}': a nonlinear form needs a flux and a reaction",
              name);
  FEM_EXPECTS(assembler->space().components() == 1, "assembled_problem '{}': nonlinear forms need a scalar space",
              name);
  auto shared_form = std::make_shared<const assembly::NonlinearForm>(std::move(form));
  auto homogeneous = std::make_shared<const assembly::DirichletValues>(bc.homogeneous());
  Problem p;
  p.name = std::move(name);
  p.store = &store;
  p.residual = [assembler, shared_form, homogeneous](std::span<const double> u, std::span<double> F) {
    std::fill(F.begin(), F.end(), 0.0);
    residual_into(*assembler, *shared_form, u, F);
    assembly::zero_dirichlet(*homogeneous, F);
  };
  p.jacobian = [assembler, shared_form, homogeneous](std::span<const double> u) {
    std::vector<double> values = prefaulted_vector<double>(assembler->pattern()->nnz());
    jacobian_into(*assembler, *shared_form, u, values);
    std::vector<double> scratch(u.size(), 0.0);
    assembly::apply_dirichlet(*homogeneous, *assembler->pattern(), values, scratch);
    return CsrMatrix(assembler->pattern(), std::move(values));
  };
  if (shared_form->batch)
    p.residual_and_jacobian = [assembler, shared_form, homogeneous](std::span<const double> u, std::span<double> F) {
      std::fill(F.begin(), F.end(), 0.0);
      std::vector<double> values = prefaulted_vector<double>(assembler->pattern()->nnz());
      residual_and_jacobian_into(*assembler, *shared_form, u, F, values);
      assembly::zero_dirichlet(*homogeneous, F);
      std::vector<double> scratch(u.size(), 0.0);
      assembly::apply_dirichlet(*homogeneous, *assembler->pattern(), values, scratch);
      return CsrMatrix(assembler->pattern(), std::move(values));
    };
  return p;
}

}  // namespace fem::newton
