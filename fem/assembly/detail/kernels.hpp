// Element kernels of the library's forms, written once over CellValues and a coefficient
// callable coef(cell, tag, x) -> double, so the host loop and device code share the math.
#pragma once

#include <cmath>

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
  /// ∇φi·∇φj: an entry is its (weighted) coefficient times this, on the host and the device.
  /// The multiply-adds are spelled out (fma), so that every inlined copy rounds alike: the
  /// device computes ∇φi·∇φj in one row and ∇φj·∇φi in another, and they must agree bit for bit.
  template <int Dim>
  FEM_HD static double pair(const double* gi, const double* gj) {
    double s = gi[0] * gj[0];
    for (int d = 1; d < Dim; ++d) s = fma(gi[d], gj[d], s);
    return s;
  }
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
          const double s = pair<dim>(gi, cv.basis_grad(0, j));
          A[i * n + j] += kw * s;
          if (j < i) A[j * n + i] += kw * s;
        }
      }
    } else {
      for (int q = 0; q < cv.num_points; ++q) {
        const double kw = k(cv.cell, cv.tag, cv.point(q)) * cv.weight[q];
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) {
            A[i * n + j] += kw * pair<dim>(cv.basis_grad(q, i), cv.basis_grad(q, j));
          }
      }
    }
  }
};

/// ∫ rho u·v, every component.
template <class K>
struct Mass {
  K rho;
  /// φi φj first: the (i, j) and (j, i) entries get bitwise equal values (rw · pair).
  FEM_HD static double pair(double phi_i, double phi_j) { return phi_i * phi_j; }
  template <class CV>
  FEM_HD void operator()(const CV& cv, double* A) const {
    constexpr int n = CV::n, bs = CV::bs, nd = CV::ndofs;
    for (int q = 0; q < cv.num_points; ++q) {
      const double rw = rho(cv.cell, cv.tag, cv.point(q)) * cv.weight[q];
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const double m = rw * pair(cv.basis(q, i), cv.basis(q, j));
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
  /// Entry (i a, j b) at one point, from the gradients gi, gj and dot = ∇φi·∇φj. Products of two
  /// gradient entries first: (i a, j b) and (j b, i a) then get bitwise equal values, and the
  /// solver's symmetry test picks Cholesky (λ gi[a] gj[b] would round differently from
  /// λ gj[b] gi[a]).
  FEM_HD static double entry(double w, double lambda, double mu, const double* gi, const double* gj,
                             double dot, int a, int b) {
    return entry(w, lambda, mu, gi[a], gi[b], gj[a], gj[b], a == b ? dot : 0.0);
  }
  /// The same from the four gradient entries and δab·dot (the device passes scalars). The
  /// multiply-adds are spelled out: left to the compiler, λ p + μ r may become fma(λ, p, μ r) in
  /// one inlined copy and fma(μ, r, λ p) in another, and (i a, j b) would lose its bitwise
  /// equality with (j b, i a).
  FEM_HD static double entry(double w, double lambda, double mu, double gia, double gib, double gja,
                             double gjb, double delta_dot) {
    return w * fma(lambda, gia * gjb, mu * fma(gib, gja, delta_dot));
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
          for (int a = 0; a < dim; ++a)
            for (int b = 0; b < dim; ++b)
              A[(i * dim + a) * nd + j * dim + b] += entry(w, lambda, mu, gi, gj, dot, a, b);
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
