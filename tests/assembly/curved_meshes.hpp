// Curved second-order test meshes with exact boundaries: a structured polar grid of tri6 cells
// on an annulus and a cylindrical-shell sector of tet10 cells. Every node (vertex, edge or
// face/cell centre) is the image of its parameter point under the polar/cylindrical map, so
// the mid nodes of boundary edges lie exactly on the circles and the cells are the quadratic
// interpolants of a smooth map (what a curved mesh generator gives). Refining n by 2 halves h.
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <numbers>
#include <vector>

#include "fem/mesh.hpp"

namespace fem::testing {

inline constexpr int kInner = 1, kOuter = 2;  // facet tags of the curved meshes

/// The annulus r0 ≤ r ≤ r1 with nr cells across and nt around (two tri6 per polar quad), the
/// inner circle tagged kInner ("inner"), the outer kOuter ("outer"), line3 facets.
inline Mesh annulus_tri6(int nr, int nt, double r0 = 0.5, double r1 = 1.0) {
  Mesh::Data d;
  d.gdim = 2;
  d.cell_type = CellType::tri6;
  d.source = "annulus_tri6";
  // Nodes on the doubled parameter grid (I, J), I = 0..2nr radially, J = 0..2nt-1 around.
  const int NI = 2 * nr + 1, NJ = 2 * nt;
  for (int I = 0; I < NI; ++I)
    for (int J = 0; J < NJ; ++J) {
      const double r = r0 + (r1 - r0) * I / (2.0 * nr), t = 2 * std::numbers::pi * J / NJ;
      d.coords.push_back(r * std::cos(t));
      d.coords.push_back(r * std::sin(t));
    }
  auto node = [&](int I, int J) { return static_cast<index_t>(I * NJ + ((J % NJ) + NJ) % NJ); };
  auto tri = [&](std::array<int, 2> a, std::array<int, 2> b, std::array<int, 2> c) {
    auto mid = [&](std::array<int, 2> p, std::array<int, 2> q) {
      return node((p[0] + q[0]) / 2, (p[1] + q[1]) / 2);
    };
    for (index_t v : {node(a[0], a[1]), node(b[0], b[1]), node(c[0], c[1]), mid(a, b), mid(b, c), mid(c, a)})
      d.cells.push_back(v);
  };
  for (int i = 0; i < nr; ++i)
    for (int j = 0; j < nt; ++j) {
      const int I = 2 * i, J = 2 * j;  // counter-clockwise in (r, θ), and the map keeps orientation
      tri({I, J}, {I + 2, J}, {I + 2, J + 2});
      tri({I, J}, {I + 2, J + 2}, {I, J + 2});
    }
  for (int j = 0; j < nt; ++j) {
    for (index_t v : {node(0, 2 * j), node(0, 2 * j + 2), node(0, 2 * j + 1)}) d.facets.push_back(v);
    d.facet_tags.push_back(kInner);
    for (index_t v : {node(2 * nr, 2 * j), node(2 * nr, 2 * j + 2), node(2 * nr, 2 * j + 1)})
      d.facets.push_back(v);
    d.facet_tags.push_back(kOuter);
  }
  d.names = {{1, kInner, "inner"}, {1, kOuter, "outer"}};
  return Mesh(std::move(d));
}

/// The cylindrical-shell sector r0 ≤ r ≤ r1, 0 ≤ θ ≤ angle, 0 ≤ z ≤ height, n cells per
/// parameter direction, each parameter cube split into the six tet10 of Kuhn's triangulation.
/// Tagged facets: the curved outer face r = r1 (kOuter) and the curved inner face r = r0
/// (kInner), as tri6 facets; the flat sides are left untagged.
inline Mesh cylinder_shell_tet10(int n, double r0 = 0.5, double r1 = 1.0, double angle = std::numbers::pi / 2,
                                 double height = 1.0) {
  Mesh::Data d;
  d.gdim = 3;
  d.cell_type = CellType::tet10;
  d.source = "cylinder_shell_tet10";
  const int N = 2 * n + 1;
  auto node = [&](std::array<int, 3> p) { return static_cast<index_t>((p[0] * N + p[1]) * N + p[2]); };
  for (int I = 0; I < N; ++I)
    for (int J = 0; J < N; ++J)
      for (int K = 0; K < N; ++K) {
        const double r = r0 + (r1 - r0) * I / (N - 1.0), t = angle * J / (N - 1.0),
                     z = height * K / (N - 1.0);
        d.coords.insert(d.coords.end(), {r * std::cos(t), r * std::sin(t), z});
      }
  auto mid = [&](std::array<int, 3> p, std::array<int, 3> q) {
    return node({(p[0] + q[0]) / 2, (p[1] + q[1]) / 2, (p[2] + q[2]) / 2});
  };
  constexpr int edges[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};  // tet10 edge nodes 4..9
  constexpr int faces[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
  constexpr int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k)
        for (const auto& p : perms) {
          std::array<std::array<int, 3>, 4> v;
          v[0] = {2 * i, 2 * j, 2 * k};
          for (int s = 1; s < 4; ++s) {
            v[s] = v[s - 1];
            v[s][p[s - 1]] += 2;
          }
          // Positive orientation in parameter space (the cylindrical map keeps it).
          const auto e = [&](int a, int c) { return v[a][c] - v[0][c]; };
          const double det = e(1, 0) * (e(2, 1) * e(3, 2) - e(2, 2) * e(3, 1)) -
                             e(1, 1) * (e(2, 0) * e(3, 2) - e(2, 2) * e(3, 0)) +
                             e(1, 2) * (e(2, 0) * e(3, 1) - e(2, 1) * e(3, 0));
          if (det < 0) std::swap(v[1], v[2]);
          for (int a = 0; a < 4; ++a) d.cells.push_back(node(v[a]));
          for (const auto& ed : edges) d.cells.push_back(mid(v[ed[0]], v[ed[1]]));
          for (const auto& f : faces) {
            const auto &a = v[f[0]], &b = v[f[1]], &c = v[f[2]];
            for (int side : {0, 2 * n}) {
              if (a[0] != side || b[0] != side || c[0] != side) continue;
              for (index_t x : {node(a), node(b), node(c), mid(a, b), mid(b, c), mid(c, a)})
                d.facets.push_back(x);
              d.facet_tags.push_back(side == 0 ? kInner : kOuter);
            }
          }
        }
  d.names = {{2, kInner, "inner"}, {2, kOuter, "outer"}};
  return Mesh(std::move(d));
}

}  // namespace fem::testing
