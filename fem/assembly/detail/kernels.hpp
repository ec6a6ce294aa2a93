// Element kernels of the library's forms, written once over CellValues and a coefficient
// callable coef(cell, tag, x) -> double, so the host loop and device code share the math.
#pragma once

#include "fem/hd.hpp"

// Full unrolling of the small element loops: GCC's pragma for the host compiler, nvcc's own in
// device code (nvcc knows neither the GCC one nor, in its host pass, its own).
#if defined(__CUDA_ARCH__)
#define FEM_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define FEM_UNROLL
#else
#define FEM_UNROLL _Pragma("GCC unroll 16")
#endif

namespace fem::assembly::kernels {

/// ∫ k ∇u·∇v (scalar).
template <class K>
struct Diffusion {
  K k;
  template <class CV>
  FEM_HD void operator()(const CV& cv, double* A) const {
    constexpr int n = CV::n, dim = CV::dim;
    if constexpr (CV::constant_gradients) {
      // ∇φ_i·∇φ_j is the same at every point: weight the coefficient first.
      double kw = 0;
      for (int q = 0; q < cv.num_points; ++q) kw += k(cv.cell, cv.tag, cv.point(q)) * cv.weight[q];
      FEM_UNROLL
      for (int i = 0; i < n; ++i) {
        const double* gi = cv.basis_grad(0, i);
        FEM_UNROLL
        for (int j = 0; j <= i; ++j) {
          const double* gj = cv.basis_grad(0, j);
          double s = 0;
          for (int d = 0; d < dim; ++d) s += gi[d] * gj[d];
          A[i * n + j] += kw * s;
          if (j < i) A[j * n + i] += kw * s;
        }
      }
    } else {
      for (int q = 0; q < cv.num_points; ++q) {
        const double kw = k(cv.cell, cv.tag, cv.point(q)) * cv.weight[q];
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) {
            const double *gi = cv.basis_grad(q, i), *gj = cv.basis_grad(q, j);
            double s = 0;
            for (int d = 0; d < dim; ++d) s += gi[d] * gj[d];
            A[i * n + j] += kw * s;
          }
      }
    }
  }
};

/// ∫ rho u·v, every component.
template <class K>
struct Mass {
  K rho;
  template <class CV>
  FEM_HD void operator()(const CV& cv, double* A) const {
    constexpr int n = CV::n, bs = CV::bs, nd = CV::ndofs;
    for (int q = 0; q < cv.num_points; ++q) {
      const double rw = rho(cv.cell, cv.tag, cv.point(q)) * cv.weight[q];
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          // φi φj first: the (i, j) and (j, i) entries get bitwise equal values.
          const double m = rw * (cv.basis(q, i) * cv.basis(q, j));
          for (int c = 0; c < bs; ++c) A[(i * bs + c) * nd + j * bs + c] += m;
        }
    }
  }
};

/// Lamé's λ and μ from Young's modulus E and Poisson's ratio ν. Plane stress (2D, σzz = 0)
/// replaces λ by λ* = 2λμ/(λ + 2μ) = Eν/(1 − ν²); plane strain (εzz = 0) and 3D keep λ.
struct Lame {
  double lambda, mu;
};
FEM_HD_INLINE Lame lame(double E, double nu, bool plane_stress) {
  return {plane_stress ? E * nu / (1 - nu * nu) : E * nu / ((1 + nu) * (1 - 2 * nu)), E / (2 * (1 + nu))};
}

/// Linear elasticity from Young's modulus and Poisson's ratio: plane strain in 2D, or plane
/// stress when `plane_stress` (which 3D cells ignore).
template <class KE, class KNu>
struct Elasticity {
  KE young;
  KNu poisson;
  bool plane_stress = false;
  /// The dim × dim block of node i's rows and node j's columns, summed over the points in the
  /// order operator() sums them (so the same bits): the device scatters it block by block
  /// instead of holding the whole element matrix.
  template <class CV>
  FEM_HD void block(const CV& cv, int i, int j, double (&B)[CV::dim][CV::dim]) const {
    constexpr int dim = CV::dim;
    for (int a = 0; a < dim; ++a)
      for (int b = 0; b < dim; ++b) B[a][b] = 0;
    for (int q = 0; q < cv.num_points; ++q) {
      const double E = young(cv.cell, cv.tag, cv.point(q)), nu = poisson(cv.cell, cv.tag, cv.point(q));
      const auto [lambda, mu] = lame(E, nu, dim == 2 && plane_stress);
      const double w = cv.weight[q];
      const double *gi = cv.basis_grad(q, i), *gj = cv.basis_grad(q, j);
      double dot = 0;
      for (int d = 0; d < dim; ++d) dot += gi[d] * gj[d];
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b)
          B[a][b] += w * (lambda * (gi[a] * gj[b]) + mu * (gi[b] * gj[a] + (a == b ? dot : 0.0)));
    }
  }

  template <class CV>
  FEM_HD void operator()(const CV& cv, double* A) const {
    constexpr int n = CV::n, dim = CV::dim, nd = CV::ndofs;
    static_assert(CV::bs == CV::dim, "elasticity needs one component per dimension");
    for (int q = 0; q < cv.num_points; ++q) {
      const double E = young(cv.cell, cv.tag, cv.point(q)), nu = poisson(cv.cell, cv.tag, cv.point(q));
      const auto [lambda, mu] = lame(E, nu, dim == 2 && plane_stress);
      const double w = cv.weight[q];
      for (int i = 0; i < n; ++i) {
        const double* gi = cv.basis_grad(q, i);
        for (int j = 0; j < n; ++j) {
          const double* gj = cv.basis_grad(q, j);
          double dot = 0;
          for (int d = 0; d < dim; ++d) dot += gi[d] * gj[d];
          // Products of two gradient entries first: (i a, j b) and (j b, i a) then get bitwise equal
          // values, and the solver's symmetry test picks Cholesky (λ gi[a] gj[b] would round
          // differently from λ gj[b] gi[a]).
          for (int a = 0; a < dim; ++a)
            for (int b = 0; b < dim; ++b)
              A[(i * dim + a) * nd + j * dim + b] +=
                  w * (lambda * (gi[a] * gj[b]) + mu * (gi[b] * gj[a] + (a == b ? dot : 0.0)));
        }
      }
    }
  }
};

/// ∫ f·v with f(x, value[bs]).
template <class F>
struct Source {
  F f;
  template <class CV>
  FEM_HD void operator()(const CV& cv, double* b) const {
    constexpr int n = CV::n, bs = CV::bs;
    double fx[bs];
    for (int q = 0; q < cv.num_points; ++q) {
      f(cv.point(q), fx);
      for (int i = 0; i < n; ++i)
        for (int c = 0; c < bs; ++c) b[i * bs + c] += cv.weight[q] * fx[c] * cv.basis(q, i);
    }
  }
};

}  // namespace fem::assembly::kernels
