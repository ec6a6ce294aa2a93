// Helpers for the VTU and check tests: second-order meshes made from the generated first-order
// ones (straight-sided: every extra node where the first-order map puts it).
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "fem/lagrange.hpp"
#include "fem/mesh/generate.hpp"

namespace fem::test {

/// Position of reference point xi mapped by the first-order geometry of cell c.
inline std::array<double, 3> map_point(const Mesh& m, index_t c, CellType first,
                                       const std::array<double, 3>& xi) {
  const auto& info = cell_info(first);
  std::vector<double> phi(info.num_nodes), grad(info.num_nodes * info.dim);
  lagrange_eval(first, xi.data(), phi.data(), grad.data());
  std::array<double, 3> x{0, 0, 0};
  for (int k = 0; k < info.num_nodes; ++k)
    for (int d = 0; d < m.gdim(); ++d) x[d] += phi[k] * m.node(m.cell(c)[k])[d];
  return x;
}

/// The first-order mesh m with cells of the second-order type `to`, nodes shared between cells.
inline Mesh elevate(const Mesh& m, CellType to) {
  const CellType from = m.cell_type();
  Mesh::Data d = m.data();
  d.cell_type = to;
  d.cells.clear();
  std::map<std::array<long long, 3>, index_t> at;
  for (index_t i = 0; i < m.num_nodes(); ++i) {
    std::array<long long, 3> key{0, 0, 0};
    for (int k = 0; k < m.gdim(); ++k) key[k] = std::llround(m.node(i)[k] * 1e9);
    at[key] = i;
  }
  const auto ref = reference_nodes(to);
  for (index_t c = 0; c < m.num_cells(); ++c)
    for (std::size_t k = 0; k < ref.size(); ++k) {
      if (static_cast<int>(k) < cell_info(from).num_nodes) {
        d.cells.push_back(m.cell(c)[k]);
        continue;
      }
      const auto x = map_point(m, c, from, ref[k]);
      std::array<long long, 3> key{0, 0, 0};
      for (int j = 0; j < m.gdim(); ++j) key[j] = std::llround(x[j] * 1e9);
      auto [it, fresh] = at.try_emplace(key, static_cast<index_t>(d.coords.size() / m.gdim()));
      if (fresh)
        for (int j = 0; j < m.gdim(); ++j) d.coords.push_back(x[j]);
      d.cells.push_back(it->second);
    }
  // Facets: elevate to the facet's second-order type the same way is not needed by the tests
  // except for their vertices, so facets keep their corners and get their edge nodes by lookup.
  const CellType ft = cell_info(to).facet;
  const int nvf = m.facet_info().num_vertices, npf = cell_info(ft).num_nodes;
  d.facets.clear();
  const auto fref = reference_nodes(ft);
  for (index_t f = 0; f < m.num_facets(); ++f) {
    std::vector<std::array<double, 3>> v(nvf, {0, 0, 0});
    for (int k = 0; k < nvf; ++k)
      for (int j = 0; j < m.gdim(); ++j) v[k][j] = m.node(m.facet(f)[k])[j];
    for (int k = 0; k < npf; ++k) {
      if (k < nvf) {
        d.facets.push_back(m.facet(f)[k]);
        continue;
      }
      // facet node k: first-order map of the facet (line2, tri3 or quad4)
      const CellType f1 = cell_info(m.facet_info().type).type;
      const auto& fi = cell_info(f1);
      std::vector<double> phi(fi.num_nodes), grad(fi.num_nodes * std::max(fi.dim, 1));
      lagrange_eval(f1, fref[k].data(), phi.data(), grad.data());
      std::array<long long, 3> key{0, 0, 0};
      for (int j = 0; j < m.gdim(); ++j) {
        double x = 0;
        for (int q = 0; q < nvf; ++q) x += phi[q] * v[q][j];
        key[j] = std::llround(x * 1e9);
      }
      d.facets.push_back(at.at(key));
    }
  }
  return Mesh(std::move(d));
}

/// A small mesh of every cell type the tests cover.
inline Mesh small_mesh(CellType t, index_t n = 3) {
  switch (fem::first_order(t)) {
    case CellType::line2:
      return t == CellType::line2 ? mesh::interval(n) : elevate(mesh::interval(n), t);
    case CellType::tri3:
    case CellType::quad4: {
      auto m = mesh::rectangle(fem::first_order(t), n, n + 1, {0.0, -1.0}, {2.0, 0.5});
      return t == fem::first_order(t) ? m : elevate(m, t);
    }
    default: {
      auto m = mesh::box(fem::first_order(t), n, n, n + 1, {0.0, 0.0, -1.0}, {1.0, 3.0, 0.5});
      return t == fem::first_order(t) ? m : elevate(m, t);
    }
  }
}

inline const std::vector<CellType>& all_types() {
  static const std::vector<CellType> t{CellType::line2, CellType::line3, CellType::tri3, CellType::tri6,
                                       CellType::quad4, CellType::quad9, CellType::tet4, CellType::tet10,
                                       CellType::hex8,  CellType::hex27};
  return t;
}

}  // namespace fem::test
