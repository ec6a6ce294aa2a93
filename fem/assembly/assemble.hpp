// The assembly loops, as templates so that an element kernel (a library form or the user's own
// callable) is inlined into the cell loop. The library does the rest: geometry, quadrature,
// the cached connectivity, colouring, threads and the scatter through the element-to-slot map.
//
// An element kernel is any callable `kernel(const CellValues<E, BS>& cv, double* out)` that
// adds the element matrix (row-major, cv.ndofs × cv.ndofs) or vector (cv.ndofs) of one cell to
// `out`. Local DOF a * BS + k is component k of the cell's node a. Example (a reaction term):
//
//   auto reaction = [](const auto& cv, double* A) {
//     for (int q = 0; q < cv.num_points; ++q)
//       for (int i = 0; i < cv.n; ++i)
//         for (int j = 0; j < cv.n; ++j) A[i * cv.n + j] += 2.0 * cv.basis(q, i) * cv.basis(q, j) *
//         cv.weight[q];
//   };
//   assembler.matrix_into(reaction, /*quadrature degree=*/2, values);
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "fem/assembly/detail/cell_math.hpp"
#include "fem/assembly/plan.hpp"
#include "fem/assembly/quadrature.hpp"
#include "fem/assembly/space.hpp"
#include "fem/error.hpp"
#include "fem/lagrange.hpp"

namespace fem::assembly {

/// Which numbers of components a kernel supports: any, only scalar spaces, or only spaces with
/// one component per dimension (elasticity).
enum class Blocks { any, scalar, vector };

namespace detail {

/// The element E and the geometry map G tabulated at a rule's points (shared by all cells).
template <class E, class G>
struct Tabulation {
  static_assert(E::dim == G::dim, "element and geometry live on the same reference cell");
  static constexpr int n = E::n, ng = G::n, dim = E::dim;
  int nq = 0;
  std::vector<double> w, phi, dphi, psi, dpsi;

  explicit Tabulation(const Quadrature& q) : nq(q.size()), w(q.weights) {
    phi.resize(nq * n), dphi.resize(nq * n * dim), psi.resize(nq * ng), dpsi.resize(nq * ng * dim);
    for (int k = 0; k < nq; ++k) {
      E::eval(&q.points[k * dim], &phi[k * n], reinterpret_cast<double(*)[dim]>(&dphi[k * n * dim]));
      G::eval(&q.points[k * dim], &psi[k * ng], reinterpret_cast<double(*)[dim]>(&dpsi[k * ng * dim]));
    }
  }
};

[[noreturn]] void throw_inverted_cell(const Mesh& mesh, index_t cell, double det);

/// Per-cell geometry and basis values: one per thread (it owns the buffers CellValues points to).
/// NQ: the number of quadrature points when known at compile time (0: tab.nq at run time).
template <class E, class G, int BS, int NQ = 0>
class CellEvaluator {
  static constexpr int n = E::n, ng = G::n, dim = E::dim;
  static constexpr bool const_grad = constant_gradients<E, G>;
  static constexpr int max_q = NQ > 0 ? NQ : 1;  // fixed buffers when NQ is known

 public:
  using Values = CellValues<E, BS, const_grad>;

  CellEvaluator(const Tabulation<E, G>& tab, const Mesh& mesh, const DofMap& dofmap,
                std::span<const double> u, bool need_points = true)
      : nq_(NQ > 0 ? NQ : tab.nq),
        need_points_(need_points),
        w_(tab.w.data()),
        dphi_(tab.dphi.data()),
        psi_(tab.psi.data()),
        dpsi_(tab.dpsi.data()),
        cells_(mesh.cells().data()),
        coords_(mesh.coords().data()),
        tags_(mesh.cell_tags().data()),
        dofs_(dofmap.cell_nodes.data()),
        mesh_(mesh),
        u_global_(u.empty() ? nullptr : u.data()) {
    if constexpr (NQ == 0) {
      dyn_weight_.resize(nq_);
      dyn_grad_.resize(const_grad ? n * dim : nq_ * n * dim);
      dyn_x_.resize(nq_ * dim);
    }
    cv_.num_points = nq_;
    cv_.phi = tab.phi.data();
    cv_.weight = NQ > 0 ? weight_ : dyn_weight_.data();
    cv_.grad = NQ > 0 ? grad_ : dyn_grad_.data();
    cv_.x = NQ > 0 ? x_ : dyn_x_.data();
    cv_.u = u_global_ ? u_local_ : nullptr;
  }
  CellEvaluator(const CellEvaluator&) = delete;

  // Inlined into the cell loop: as a call it costs more than the P1 element math.
  [[gnu::always_inline]] inline const Values& reinit(index_t c) {
    const int nq = NQ > 0 ? NQ : nq_;
    double* weight = NQ > 0 ? weight_ : dyn_weight_.data();
    double* grad = NQ > 0 ? grad_ : dyn_grad_.data();
    double* x = NQ > 0 ? x_ : dyn_x_.data();
    cv_.cell = c;
    cv_.tag = tags_[c];
    const index_t* nodes = cells_ + static_cast<std::size_t>(c) * ng;
    double X[ng][dim];
    for (int g = 0; g < ng; ++g)
      for (int d = 0; d < dim; ++d)
        X[g][d] = coords_[static_cast<std::size_t>(nodes[g]) * dim + d];  // gdim == dim
    double det = 0;
    if (!cell_geometry<E, G, NQ>(X, nq, w_, dphi_, dpsi_, weight, grad, det)) [[unlikely]]
      throw_inverted_cell(mesh_, c, det);
    if (need_points_) cell_points<G, dim, NQ>(X, nq, psi_, x);
    if (u_global_) {
      const index_t* dofs = dofs_ + static_cast<std::size_t>(c) * n;
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < BS; ++k)
          u_local_[i * BS + k] = u_global_[static_cast<std::size_t>(dofs[i]) * BS + k];
    }
    return cv_;
  }

 private:
  int nq_;
  bool need_points_;
  const double *w_, *dphi_, *psi_, *dpsi_;
  const index_t* cells_;
  const double* coords_;
  const int* tags_;
  const index_t* dofs_;
  const Mesh& mesh_;
  const double* u_global_;
  double weight_[max_q], grad_[(const_grad ? 1 : max_q) * n * dim], x_[max_q * dim];
  std::vector<double> dyn_weight_, dyn_grad_, dyn_x_;
  double u_local_[n * BS] = {};
  Values cv_;
};

/// Call f.template operator()<NQ>() with NQ the compile-time size of `nq` for the small rules of
/// affine simplices (1, 3, 4, 6 points), or 0 (run-time size) for everything else.
template <class G, class F>
void visit_rule_size(int nq, F&& f) {
  if constexpr (affine_geometry<G>) {
    if (nq == 1) return f.template operator()<1>();
    if (nq == 3) return f.template operator()<3>();
    if (nq == 4) return f.template operator()<4>();
    if (nq == 6) return f.template operator()<6>();  // degree 3-4 on triangles (nonlinear P1 forms)
  }
  f.template operator()<0>();
}

/// Zero a big array with all threads.
void parallel_zero(std::span<double> values);

/// Call f.template operator()<E, G, BS>() for V's element E, its mesh's geometry map G and its
/// number of components BS (1, or the space dimension), instantiating only the block sizes B allows.
template <Blocks B = Blocks::any, class F>
void visit_space(const FunctionSpace& V, F&& f) {
  const CellType e = V.element(), g = V.mesh().cell_type();
  const int bs = V.components(), dim = V.mesh().tdim();
  FEM_EXPECTS(V.mesh().gdim() == dim, "assembly needs cells of the mesh's dimension: {} cells in {}D",
              V.mesh().cell_info().name, V.mesh().gdim());
  FEM_EXPECTS(bs == 1 || bs == dim, "spaces have 1 or {} (the dimension) components, not {}", dim, bs);
  FEM_EXPECTS(B != Blocks::scalar || bs == 1, "this form needs a scalar space, not one with {} components",
              bs);
  FEM_EXPECTS(B != Blocks::vector || bs == dim, "this form needs one component per dimension ({}), not {}",
              dim, bs);
  auto with_bs = [&]<class E, class G>() {
    if constexpr (B != Blocks::vector)
      if (bs == 1) return f.template operator()<E, G, 1>();
    if constexpr (B != Blocks::scalar) f.template operator()<E, G, E::dim>();
  };
  using enum CellType;
#define FEM_VISIT(EC, GC)                                      \
  if (e == EC && g == GC) {                                    \
    with_bs.template operator()<Lagrange<EC>, Lagrange<GC>>(); \
    return;                                                    \
  }
  // clang-format off: a list, one line per element and geometry (clang-format 14 has no stable layout for it)
  FEM_VISIT(line2, line2)
  FEM_VISIT(line3, line2)
  FEM_VISIT(tri3, tri3)
  FEM_VISIT(tri6, tri3)
  FEM_VISIT(tri3, tri6)
  FEM_VISIT(tri6, tri6)
  FEM_VISIT(quad4, quad4)
  FEM_VISIT(quad9, quad4)
  FEM_VISIT(tet4, tet4)
  FEM_VISIT(tet10, tet4)
  FEM_VISIT(tet4, tet10)
  FEM_VISIT(tet10, tet10)
  FEM_VISIT(hex8, hex8)
  // clang-format on
#undef FEM_VISIT
  throw InvalidArgument(fmt::format("assembly of {} on {} cells (mesh '{}') is not supported",
                                    cell_info(e).name, cell_info(g).name, V.mesh().source()));
}

}  // namespace detail

/// Assemble the matrix of `kernel` into `values` (the CSR values of plan.pattern(), zeroed
/// first). `u` (optional, V.num_dofs() entries) is the coefficient the kernel reads as cv.u.
/// need_points = false skips computing cv.x for kernels that never read it.
template <Blocks B = Blocks::any, class Kernel>
void assemble_matrix(const FunctionSpace& V, const AssemblyPlan& plan, const Kernel& kernel,
                     int quadrature_degree, std::span<double> values, std::span<const double> u = {},
                     bool need_points = true) {
  FEM_EXPECTS(values.size() == plan.pattern().nnz(), "matrix values: {} given, the pattern has {} nonzeros",
              values.size(), plan.pattern().nnz());
  FEM_EXPECTS(u.empty() || u.size() == static_cast<std::size_t>(V.num_dofs()),
              "coefficient has {} values, the space {} DOFs", u.size(), V.num_dofs());
  detail::parallel_zero(values);
  detail::visit_space<B>(V, [&]<class E, class G, int BS>() {
    constexpr int nd = E::n * BS, nn = nd * nd;
    const detail::Tabulation<E, G> tab(quadrature(V.element(), quadrature_degree));
    const index_t* __restrict slots = plan.connectivity.element_slots.data();
    double* __restrict val = values.data();
    detail::visit_rule_size<G>(tab.nq, [&]<int NQ>() {
      for_each_cell_block(plan, [&](index_t first, index_t last) {
        detail::CellEvaluator<E, G, BS, NQ> ev(tab, V.mesh(), V.dofmap(), u, need_points);
        // Local copies: the stores into the values could alias the captured pointers and force
        // a reload of them at every cell.
        const index_t* __restrict block_slots = slots;
        double* __restrict block_val = val;
        for (index_t c = first; c < last; ++c) {
          const auto& cv = ev.reinit(c);
          double A[nn] = {};
          kernel(cv, A);
          const index_t* s = block_slots + static_cast<std::size_t>(c) * nn;
          for (int k = 0; k < nn; ++k) block_val[s[k]] += A[k];
        }
      });
    });
  });
}

/// For each cell c, out[c] = Σ_k weights[slot(c, k)] · A_c[k], with A_c the element matrix of
/// `kernel`: the derivative of Σ_s weights_s A_s with respect to a factor that scales cell c's
/// element matrix (a per-cell coefficient of a form linear in it), given the gradient `weights`
/// of a function of the matrix values. One value per cell, each written by one thread.
template <Blocks B = Blocks::any, class Kernel>
void contract_cells(const FunctionSpace& V, const AssemblyPlan& plan, const Kernel& kernel,
                    int quadrature_degree, std::span<const double> weights, std::span<double> out) {
  FEM_EXPECTS(weights.size() == plan.pattern().nnz(), "matrix weights: {} given, the pattern has {} nonzeros",
              weights.size(), plan.pattern().nnz());
  FEM_EXPECTS(out.size() == static_cast<std::size_t>(plan.num_cells), "{} values for {} cells", out.size(),
              plan.num_cells);
  detail::visit_space<B>(V, [&]<class E, class G, int BS>() {
    constexpr int nd = E::n * BS, nn = nd * nd;
    const detail::Tabulation<E, G> tab(quadrature(V.element(), quadrature_degree));
    const index_t* slots = plan.connectivity.element_slots.data();
    for_each_cell_block(plan, [&](index_t first, index_t last) {
      detail::CellEvaluator<E, G, BS> ev(tab, V.mesh(), V.dofmap(), {}, false);
      for (index_t c = first; c < last; ++c) {
        double A[nn] = {};
        kernel(ev.reinit(c), A);
        const index_t* s = slots + static_cast<std::size_t>(c) * nn;
        double sum = 0;
        for (int k = 0; k < nn; ++k) sum += weights[static_cast<std::size_t>(s[k])] * A[k];
        out[static_cast<std::size_t>(c)] = sum;
      }
    });
  });
}

/// Add the vector of `kernel` to `b` (V.num_dofs() entries; not zeroed, so several linear forms
/// can be summed).
template <Blocks B = Blocks::any, class Kernel>
void assemble_vector(const FunctionSpace& V, const AssemblyPlan& plan, const Kernel& kernel,
                     int quadrature_degree, std::span<double> b, std::span<const double> u = {},
                     bool need_points = true) {
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(V.num_dofs()),
              "vector of {} entries, the space has {} DOFs", b.size(), V.num_dofs());
  FEM_EXPECTS(u.empty() || u.size() == static_cast<std::size_t>(V.num_dofs()),
              "coefficient has {} values, the space {} DOFs", u.size(), V.num_dofs());
  detail::visit_space<B>(V, [&]<class E, class G, int BS>() {
    constexpr int nd = E::n * BS;
    const detail::Tabulation<E, G> tab(quadrature(V.element(), quadrature_degree));
    const index_t* cell_nodes = V.dofmap().cell_nodes.data();
    double* out = b.data();
    for_each_cell_block(plan, [&](index_t first, index_t last) {
      detail::CellEvaluator<E, G, BS> ev(tab, V.mesh(), V.dofmap(), u, need_points);
      for (index_t c = first; c < last; ++c) {
        const auto& cv = ev.reinit(c);
        double be[nd] = {};
        kernel(cv, be);
        const index_t* nodes = cell_nodes + static_cast<std::size_t>(c) * E::n;
        for (int i = 0; i < E::n; ++i)
          for (int k = 0; k < BS; ++k) out[static_cast<std::size_t>(nodes[i]) * BS + k] += be[i * BS + k];
      }
    });
  });
}

/// Σ over cells of kernel(cv) -> double, summed per block and then in block order: the same
/// result for any thread count.
template <Blocks B = Blocks::any, class Kernel>
double integrate_cells(const FunctionSpace& V, const AssemblyPlan& plan, const Kernel& kernel,
                       int quadrature_degree, std::span<const double> u = {}) {
  FEM_EXPECTS(u.empty() || u.size() == static_cast<std::size_t>(V.num_dofs()),
              "coefficient has {} values, the space {} DOFs", u.size(), V.num_dofs());
  std::vector<double> per_block((plan.num_cells + plan.block_size - 1) / std::max(plan.block_size, 1), 0.0);
  detail::visit_space<B>(V, [&]<class E, class G, int BS>() {
    const detail::Tabulation<E, G> tab(quadrature(V.element(), quadrature_degree));
    for_each_cell_block(plan, [&](index_t first, index_t last) {
      detail::CellEvaluator<E, G, BS> ev(tab, V.mesh(), V.dofmap(), u);
      double s = 0;
      for (index_t c = first; c < last; ++c) s += kernel(ev.reinit(c));
      per_block[first / plan.block_size] = s;
    });
  });
  double total = 0;
  for (double s : per_block) total += s;
  return total;
}

}  // namespace fem::assembly
