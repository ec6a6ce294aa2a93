// Run-time dispatch to the compile-time Lagrange elements.
#include "fem/lagrange.hpp"

#include <vector>

#include "fem/reference_cell.hpp"

namespace fem {
namespace {
template <CellType T>
bool eval(const double* xi, double* phi, double* grad) {
  using E = Lagrange<T>;
  E::eval(xi, phi, reinterpret_cast<double(*)[E::dim]>(grad));
  return true;
}
}  // namespace

namespace {

std::vector<std::array<double, 3>> vertices_of(CellType first_order) {
  switch (first_order) {
    case CellType::point:
      return {{0, 0, 0}};
    case CellType::line2:
      return {{-1, 0, 0}, {1, 0, 0}};
    case CellType::tri3:
      return {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    case CellType::quad4:
      return {{-1, -1, 0}, {1, -1, 0}, {1, 1, 0}, {-1, 1, 0}};
    case CellType::tet4:
      return {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    case CellType::hex8:
      return {{-1, -1, -1}, {1, -1, -1}, {1, 1, -1}, {-1, 1, -1},
              {-1, -1, 1},  {1, -1, 1},  {1, 1, 1},  {-1, 1, 1}};
    default:
      return {};
  }
}

std::vector<std::array<double, 3>> make_nodes(CellType t) {
  const CellType base = first_order(t);
  auto x = vertices_of(base);
  if (t == base) return x;
  const auto mean = [&](std::span<const int> local) {
    std::array<double, 3> c{0, 0, 0};
    for (int v : local)
      for (int d = 0; d < 3; ++d) c[d] += x[v][d] / local.size();
    return c;
  };
  const std::size_t nv = x.size();
  for (const auto& e : local_edges(base)) x.push_back(mean(std::span<const int>(e.data(), 2)));
  if (t == CellType::line3) x.resize(nv + 1);  // a line's one "edge" is itself
  if (t == CellType::hex27) {
    const LocalFacets f = local_facets(base);
    for (int k = 0; k < f.count; ++k) x.push_back(mean(f[k]));
  }
  if (t == CellType::quad9 || t == CellType::hex27) {
    std::vector<int> all(nv);
    for (std::size_t v = 0; v < nv; ++v) all[v] = static_cast<int>(v);
    x.push_back(mean(all));
  }
  return x;
}

}  // namespace

std::span<const std::array<double, 3>> reference_nodes(CellType type) {
  static const auto table = [] {
    std::array<std::vector<std::array<double, 3>>, 11> t;
    for (int k = 0; k < 11; ++k) t[k] = make_nodes(static_cast<CellType>(k));
    return t;
  }();
  return table[static_cast<std::size_t>(type)];
}

bool lagrange_eval(CellType type, const double* xi, double* phi, double* grad) {
  switch (type) {
    case CellType::line2:
      return eval<CellType::line2>(xi, phi, grad);
    case CellType::line3:
      return eval<CellType::line3>(xi, phi, grad);
    case CellType::tri3:
      return eval<CellType::tri3>(xi, phi, grad);
    case CellType::tri6:
      return eval<CellType::tri6>(xi, phi, grad);
    case CellType::quad4:
      return eval<CellType::quad4>(xi, phi, grad);
    case CellType::quad9:
      return eval<CellType::quad9>(xi, phi, grad);
    case CellType::tet4:
      return eval<CellType::tet4>(xi, phi, grad);
    case CellType::tet10:
      return eval<CellType::tet10>(xi, phi, grad);
    case CellType::hex8:
      return eval<CellType::hex8>(xi, phi, grad);
    default:
      return false;
  }
}

CellType first_order(CellType type) noexcept {
  switch (type) {
    case CellType::line3:
      return CellType::line2;
    case CellType::tri6:
      return CellType::tri3;
    case CellType::quad9:
      return CellType::quad4;
    case CellType::tet10:
      return CellType::tet4;
    case CellType::hex27:
      return CellType::hex8;
    default:
      return type;
  }
}

}  // namespace fem
