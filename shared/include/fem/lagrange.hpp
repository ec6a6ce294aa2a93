// Lagrange shape functions on the reference cells, with nodes in Gmsh's order, as compile-time
// element types usable on the host and in CUDA kernels (the same element math on both paths).
// Reference cells are Gmsh's: simplices are the unit simplex (vertex 0 at the origin, vertex i
// at e_i); lines, quadrilaterals and hexahedra are [-1, 1]^d.
//
//   double phi[Lagrange<CellType::tri6>::n], grad[Lagrange<CellType::tri6>::n][2];
//   Lagrange<CellType::tri6>::eval(xi, phi, grad);
#pragma once

#include <array>
#include <span>

#include "fem/hd.hpp"
#include "fem/mesh.hpp"

namespace fem {

/// The Lagrange element whose nodes are those of cell type T: P1/P2 on simplices, Q1/Q2 on
/// quadrilaterals, Q1 on hexahedra, P1/P2 on lines.
template <CellType T>
struct Lagrange;

namespace detail {
// 1D Lagrange polynomials on [-1, 1] with nodes -1, 1 (linear) and -1, 1, 0 (quadratic).
FEM_HD_INLINE void line1(double t, double* l, double* dl) {
  l[0] = 0.5 * (1 - t);
  l[1] = 0.5 * (1 + t);
  dl[0] = -0.5;
  dl[1] = 0.5;
}
FEM_HD_INLINE void line2(double t, double* l, double* dl) {
  l[0] = 0.5 * t * (t - 1);
  l[1] = 0.5 * t * (t + 1);
  l[2] = 1 - t * t;
  dl[0] = t - 0.5;
  dl[1] = t + 0.5;
  dl[2] = -2 * t;
}
}  // namespace detail

template <>
struct Lagrange<CellType::line2> {
  static constexpr CellType cell = CellType::line2;
  static constexpr int dim = 1, n = 2, degree = 1;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    double d[2];
    detail::line1(x[0], phi, d);
    grad[0][0] = d[0];
    grad[1][0] = d[1];
  }
};

template <>
struct Lagrange<CellType::line3> {
  static constexpr CellType cell = CellType::line3;
  static constexpr int dim = 1, n = 3, degree = 2;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    double d[3];
    detail::line2(x[0], phi, d);
    for (int i = 0; i < 3; ++i) grad[i][0] = d[i];
  }
};

template <>
struct Lagrange<CellType::tri3> {
  static constexpr CellType cell = CellType::tri3;
  static constexpr int dim = 2, n = 3, degree = 1;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    phi[0] = 1 - x[0] - x[1];
    phi[1] = x[0];
    phi[2] = x[1];
    grad[0][0] = -1, grad[0][1] = -1;
    grad[1][0] = 1, grad[1][1] = 0;
    grad[2][0] = 0, grad[2][1] = 1;
  }
};

template <>
struct Lagrange<CellType::tri6> {
  static constexpr CellType cell = CellType::tri6;
  static constexpr int dim = 2, n = 6, degree = 2;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    const double l[3] = {1 - x[0] - x[1], x[0], x[1]};
    const double dl[3][2] = {{-1, -1}, {1, 0}, {0, 1}};
    constexpr int e[3][2] = {{0, 1}, {1, 2}, {2, 0}};  // edge nodes 3, 4, 5
    for (int i = 0; i < 3; ++i) {
      phi[i] = l[i] * (2 * l[i] - 1);
      for (int d = 0; d < 2; ++d) grad[i][d] = (4 * l[i] - 1) * dl[i][d];
    }
    for (int k = 0; k < 3; ++k) {
      const int a = e[k][0], b = e[k][1];
      phi[3 + k] = 4 * l[a] * l[b];
      for (int d = 0; d < 2; ++d) grad[3 + k][d] = 4 * (dl[a][d] * l[b] + l[a] * dl[b][d]);
    }
  }
};

template <>
struct Lagrange<CellType::quad4> {
  static constexpr CellType cell = CellType::quad4;
  static constexpr int dim = 2, n = 4, degree = 1;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    double a[2], da[2], b[2], db[2];
    detail::line1(x[0], a, da);
    detail::line1(x[1], b, db);
    constexpr int ix[4] = {0, 1, 1, 0}, iy[4] = {0, 0, 1, 1};
    for (int k = 0; k < 4; ++k) {
      phi[k] = a[ix[k]] * b[iy[k]];
      grad[k][0] = da[ix[k]] * b[iy[k]];
      grad[k][1] = a[ix[k]] * db[iy[k]];
    }
  }
};

template <>
struct Lagrange<CellType::quad9> {
  static constexpr CellType cell = CellType::quad9;
  static constexpr int dim = 2, n = 9, degree = 2;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    double a[3], da[3], b[3], db[3];
    detail::line2(x[0], a, da);
    detail::line2(x[1], b, db);
    // 1D node index (0: -1, 1: +1, 2: 0) of each Gmsh node in x and in y.
    constexpr int ix[9] = {0, 1, 1, 0, 2, 1, 2, 0, 2}, iy[9] = {0, 0, 1, 1, 0, 2, 1, 2, 2};
    for (int k = 0; k < 9; ++k) {
      phi[k] = a[ix[k]] * b[iy[k]];
      grad[k][0] = da[ix[k]] * b[iy[k]];
      grad[k][1] = a[ix[k]] * db[iy[k]];
    }
  }
};

template <>
struct Lagrange<CellType::tet4> {
  static constexpr CellType cell = CellType::tet4;
  static constexpr int dim = 3, n = 4, degree = 1;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    phi[0] = 1 - x[0] - x[1] - x[2];
    phi[1] = x[0];
    phi[2] = x[1];
    phi[3] = x[2];
    for (int d = 0; d < 3; ++d) {
      grad[0][d] = -1;
      for (int k = 1; k < 4; ++k) grad[k][d] = (k - 1 == d) ? 1 : 0;
    }
  }
};

template <>
struct Lagrange<CellType::tet10> {
  static constexpr CellType cell = CellType::tet10;
  static constexpr int dim = 3, n = 10, degree = 2;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    const double l[4] = {1 - x[0] - x[1] - x[2], x[0], x[1], x[2]};
    const double dl[4][3] = {{-1, -1, -1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    constexpr int e[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};  // nodes 4..9
    for (int i = 0; i < 4; ++i) {
      phi[i] = l[i] * (2 * l[i] - 1);
      for (int d = 0; d < 3; ++d) grad[i][d] = (4 * l[i] - 1) * dl[i][d];
    }
    for (int k = 0; k < 6; ++k) {
      const int a = e[k][0], b = e[k][1];
      phi[4 + k] = 4 * l[a] * l[b];
      for (int d = 0; d < 3; ++d) grad[4 + k][d] = 4 * (dl[a][d] * l[b] + l[a] * dl[b][d]);
    }
  }
};

template <>
struct Lagrange<CellType::hex8> {
  static constexpr CellType cell = CellType::hex8;
  static constexpr int dim = 3, n = 8, degree = 1;
  FEM_HD_INLINE static void eval(const double* x, double* phi, double (*grad)[dim]) {
    double a[2], da[2], b[2], db[2], c[2], dc[2];
    detail::line1(x[0], a, da);
    detail::line1(x[1], b, db);
    detail::line1(x[2], c, dc);
    constexpr int ix[8] = {0, 1, 1, 0, 0, 1, 1, 0}, iy[8] = {0, 0, 1, 1, 0, 0, 1, 1},
                  iz[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    for (int k = 0; k < 8; ++k) {
      phi[k] = a[ix[k]] * b[iy[k]] * c[iz[k]];
      grad[k][0] = da[ix[k]] * b[iy[k]] * c[iz[k]];
      grad[k][1] = a[ix[k]] * db[iy[k]] * c[iz[k]];
      grad[k][2] = a[ix[k]] * b[iy[k]] * dc[iz[k]];
    }
  }
};

/// Reference coordinates of the nodes of `type` in Gmsh order (3 numbers, unused ones 0):
/// the vertices, then the midpoints of fem::local_edges(), then the centres of
/// fem::local_facets() (hex27) and of the cell (quad9, hex27).
std::span<const std::array<double, 3>> reference_nodes(CellType type);

/// The first-order type of the same shape (tri6 → tri3, hex27 → hex8; a first-order type itself).
CellType first_order(CellType type) noexcept;

/// Run-time form: values phi[n] and reference gradients grad[n * dim] of the Lagrange element
/// of `type` at xi. Returns false for types without compile-time elements (point, hex27).
bool lagrange_eval(CellType type, const double* xi, double* phi, double* grad);

}  // namespace fem
