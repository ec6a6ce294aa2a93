// The per-cell math shared by the host loops (assemble.hpp) and the device assembly
// (device_impl.hpp): what a kernel sees on a cell (CellValues), and the geometry of one cell
// (Jacobian, its inverse, weights and physical gradients) as __host__ __device__ functions over
// fixed-size buffers, so the two paths run the same arithmetic and cannot drift apart.
#pragma once

#include <cmath>

#include "fem/hd.hpp"
#include "fem/lagrange.hpp"

namespace fem::assembly {

/// What an element kernel sees on one cell: the basis at the quadrature points, in physical
/// coordinates, and the cell values of the coefficient u when one was given. ConstGrad: the
/// physical gradients are the same at every point (P1 on affine cells) and stored once.
template <class E, int BS, bool ConstGrad = false>
struct CellValues {
  using element = E;
  static constexpr int n = E::n;      ///< nodes (scalar basis functions) per cell
  static constexpr int dim = E::dim;  ///< spatial dimension
  static constexpr int bs = BS;       ///< components per node
  static constexpr int ndofs = E::n * BS;
  static constexpr bool constant_gradients = ConstGrad;

  index_t cell = 0;
  int tag = 0;  ///< the cell's physical tag
  int num_points = 0;
  const double* weight = nullptr;  ///< [q]: quadrature weight × |det J|
  const double* phi = nullptr;     ///< [q * n + i]
  const double* grad = nullptr;  ///< [(q * n + i) * dim + d] (q = 0 only when ConstGrad): physical gradients
  const double* x = nullptr;     ///< [q * dim + d]: physical quadrature points (when the kernel needs them)
  const double* u = nullptr;     ///< [ndofs]: the coefficient on this cell, or nullptr

  FEM_HD double basis(int q, int i) const { return phi[q * n + i]; }
  FEM_HD const double* basis_grad(int q, int i) const { return grad + ((ConstGrad ? 0 : q) * n + i) * dim; }
  FEM_HD const double* point(int q) const { return x + q * dim; }
  /// u(x_q), component k.
  FEM_HD double u_value(int q, int k = 0) const {
    double s = 0;
    for (int i = 0; i < n; ++i) s += phi[q * n + i] * u[i * BS + k];
    return s;
  }
  /// ∇u(x_q), component k, into g[dim].
  FEM_HD void u_grad(int q, double* g, int k = 0) const {
    for (int d = 0; d < dim; ++d) g[d] = 0;
    for (int i = 0; i < n; ++i) {
      const double* gi = basis_grad(q, i);
      for (int d = 0; d < dim; ++d) g[d] += gi[d] * u[i * BS + k];
    }
  }
};

namespace detail {

/// det and inverse of a dim × dim matrix (row-major).
template <int D>
FEM_HD_INLINE double invert(const double* J, double* K) {
  if constexpr (D == 1) {
    K[0] = 1.0 / J[0];
    return J[0];
  } else if constexpr (D == 2) {
    const double det = fma(J[0], J[3], -(J[1] * J[2]));
    const double r = 1.0 / det;
    K[0] = J[3] * r, K[1] = -J[1] * r, K[2] = -J[2] * r, K[3] = J[0] * r;
    return det;
  } else {
    // a·b − c·d as fma(a, b, −c·d), spelled out: every inlined copy of this rounds alike (the
    // device recomputes a cell's geometry for every row and its rows must agree bit for bit).
    auto cross = [](double a, double b, double c, double d) { return fma(a, b, -(c * d)); };
    const double c00 = cross(J[4], J[8], J[5], J[7]), c01 = cross(J[5], J[6], J[3], J[8]),
                 c02 = cross(J[3], J[7], J[4], J[6]);
    const double det = fma(J[2], c02, fma(J[1], c01, J[0] * c00));
    const double r = 1.0 / det;
    K[0] = c00 * r, K[1] = cross(J[2], J[7], J[1], J[8]) * r, K[2] = cross(J[1], J[5], J[2], J[4]) * r;
    K[3] = c01 * r, K[4] = cross(J[0], J[8], J[2], J[6]) * r, K[5] = cross(J[2], J[3], J[0], J[5]) * r;
    K[6] = c02 * r, K[7] = cross(J[1], J[6], J[0], J[7]) * r, K[8] = cross(J[0], J[4], J[1], J[3]) * r;
    return det;
  }
}

template <class G>
inline constexpr bool affine_geometry = G::degree == 1 &&
                                        (G::cell == CellType::line2 || G::cell == CellType::tri3 ||
                                         G::cell == CellType::tet4);

template <class E, class G>
inline constexpr bool constant_gradients = affine_geometry<G>&& E::degree == 1;

/// The geometry of one cell with corner coordinates X: weight[q] = w[q]·det J and the physical
/// gradients (grad[i * dim + d] once when constant_gradients<E, G>, else per point), from the
/// reference gradients of E (dphi, per point) and of G (dpsi, per point). NQ: the number of points
/// when known at compile time (0: nq). Returns false, with `det` the offending determinant, when
/// det J ≤ 0 at a point (an inverted, degenerate or tangled cell): the caller reports it (the host
/// throws, the device raises a flag and the host throws after the launch), nothing is thrown
/// here. On non-affine cells det J is tested at every quadrature point; throw_inverted_cell
/// (assemble.cpp) samples the cell again to say which of the three it is.
template <class E, class G, int NQ>
FEM_HD_INLINE bool cell_geometry(const double (&X)[G::n][E::dim], int nq_run, const double* w,
                                 const double* dphi_, const double* dpsi_, double* weight, double* grad,
                                 double& det) {
  constexpr int n = E::n, ng = G::n, dim = E::dim;
  constexpr bool affine = affine_geometry<G>, const_grad = constant_gradients<E, G>;
  const int nq = NQ > 0 ? NQ : nq_run;
  double J[dim * dim], K[dim * dim];
  det = 0;
  // Affine maps and P1 elements have constant reference gradients: evaluated here, inline,
  // they are compile-time constants and the Jacobian folds to a few subtractions.
  [[maybe_unused]] double psi0[ng], dpsi0[ng * dim], phi0[n], dphi0[n * dim];
  if constexpr (affine) {
    constexpr double origin[3] = {0, 0, 0};
    G::eval(origin, psi0, reinterpret_cast<double(*)[dim]>(dpsi0));
    if constexpr (const_grad) E::eval(origin, phi0, reinterpret_cast<double(*)[dim]>(dphi0));
  }
  auto jacobian = [&](int q) {
    const double* dpsi = affine ? dpsi0 : dpsi_ + q * ng * dim;
    for (int a = 0; a < dim * dim; ++a) J[a] = 0;
    for (int g = 0; g < ng; ++g)
      for (int d = 0; d < dim; ++d)
        for (int k = 0; k < dim; ++k) J[d * dim + k] += X[g][d] * dpsi[g * dim + k];
    det = invert<dim>(J, K);
    return det > 0;
  };
  auto transform = [&](int q, double* out) {  // physical gradients at point q
    const double* dphi = const_grad ? dphi0 : dphi_ + q * n * dim;
    for (int i = 0; i < n; ++i)
      for (int d = 0; d < dim; ++d) {
        double s = 0;
        for (int k = 0; k < dim; ++k) s += K[k * dim + d] * dphi[i * dim + k];
        out[i * dim + d] = s;
      }
  };
  constexpr bool unit_simplex = G::cell == CellType::tri3 || G::cell == CellType::tet4;
  if constexpr (unit_simplex) {
    // The P1 map of the unit simplex: J's columns are the edges from vertex 0. Spelled out,
    // because the compiler may not fold the zeros of the reference gradients (IEEE -0, NaN).
    for (int d = 0; d < dim; ++d)
      for (int k = 0; k < dim; ++k) J[d * dim + k] = X[k + 1][d] - X[0][d];
    det = invert<dim>(J, K);
    if (!(det > 0)) return false;
    if constexpr (const_grad && (E::cell == CellType::tri3 || E::cell == CellType::tet4)) {
      // ∇φ_{k+1} = row k of J⁻¹, ∇φ_0 = -Σ_k ∇φ_{k+1}.
      for (int d = 0; d < dim; ++d) {
        double sum = 0;
        for (int k = 0; k < dim; ++k) sum += (grad[(k + 1) * dim + d] = K[k * dim + d]);
        grad[d] = -sum;
      }
    } else if constexpr (const_grad) {
      transform(0, grad);
    }
    for (int q = 0; q < nq; ++q) {
      weight[q] = w[q] * det;
      if constexpr (!const_grad) transform(q, grad + q * n * dim);
    }
  } else if constexpr (affine) {
    if (!jacobian(0)) return false;
    if constexpr (const_grad) transform(0, grad);
    for (int q = 0; q < nq; ++q) {
      weight[q] = w[q] * det;
      if constexpr (!const_grad) transform(q, grad + q * n * dim);
    }
  } else {
    for (int q = 0; q < nq; ++q) {
      if (!jacobian(q)) return false;
      weight[q] = w[q] * det;
      transform(q, grad + q * n * dim);
    }
  }
  return true;
}

/// The physical quadrature points x[q * dim + d] of a cell with corners X (psi: G's basis at the points).
template <class G, int Dim, int NQ>
FEM_HD_INLINE void cell_points(const double (&X)[G::n][Dim], int nq_run, const double* psi, double* x) {
  constexpr int ng = G::n;
  const int nq = NQ > 0 ? NQ : nq_run;
  for (int q = 0; q < nq; ++q)
    for (int d = 0; d < Dim; ++d) {
      double s = 0;
      for (int g = 0; g < ng; ++g) s += psi[q * ng + g] * X[g][d];
      x[q * Dim + d] = s;
    }
}

}  // namespace detail
}  // namespace fem::assembly
