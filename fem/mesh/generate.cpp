// Structured mesh generators. Nodes are numbered lexicographically (x fastest), cells in the
// same order, which gives the kernels good memory locality.
#include "fem/mesh/generate.hpp"

#include <algorithm>
#include <limits>

#include "fem/error.hpp"

namespace fem::mesh {
namespace {

std::vector<PhysicalName> side_names(int tdim) {
  const int fdim = tdim - 1;
  std::vector<PhysicalName> names{{fdim, left, "left"}, {fdim, right, "right"}};
  if (tdim >= 2) {
    names.push_back({fdim, bottom, "bottom"});
    names.push_back({fdim, top, "top"});
  }
  if (tdim == 3) {
    names.push_back({fdim, front, "front"});
    names.push_back({fdim, back, "back"});
  }
  names.push_back({tdim, domain_tag, "domain"});
  return names;
}

void check_count(std::int64_t cells, std::int64_t nodes) {
  FEM_EXPECTS(cells <= std::numeric_limits<index_t>::max() / 8 && nodes <= std::numeric_limits<index_t>::max(),
              "generated mesh too large for 32-bit indices: {} cells, {} nodes", cells, nodes);
}

}  // namespace

Mesh interval(index_t n, double a, double b) {
  FEM_EXPECTS(n >= 1, "interval needs at least one cell, got {}", n);
  FEM_EXPECTS(a < b, "interval [{}, {}] is empty", a, b);
  Mesh::Data d;
  d.gdim = 1;
  d.cell_type = CellType::line2;
  d.coords.resize(n + 1);
  for (index_t i = 0; i <= n; ++i) d.coords[i] = a + (b - a) * i / n;
  d.cells.resize(2 * static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    d.cells[2 * i] = i;
    d.cells[2 * i + 1] = i + 1;
  }
  d.cell_tags.assign(n, domain_tag);
  d.facets = {0, n};
  d.facet_tags = {left, right};
  d.names = side_names(1);
  d.source = "generated interval";
  return Mesh(std::move(d));
}

Mesh rectangle(CellType type, index_t nx, index_t ny, std::array<double, 2> lo, std::array<double, 2> hi) {
  FEM_EXPECTS(type == CellType::tri3 || type == CellType::quad4,
              "rectangle() makes tri3 or quad4 cells, not {}", cell_info(type).name);
  FEM_EXPECTS(nx >= 1 && ny >= 1, "rectangle needs at least one cell per direction, got {}x{}", nx, ny);
  FEM_EXPECTS(lo[0] < hi[0] && lo[1] < hi[1], "rectangle with lower corner ({}, {}) and upper corner ({}, {}) is empty",
              lo[0], lo[1], hi[0], hi[1]);
  const bool tri = type == CellType::tri3;
  check_count(std::int64_t{nx} * ny * (tri ? 2 : 1), std::int64_t{nx + 1} * (ny + 1));
  Mesh::Data d;
  d.gdim = 2;
  d.cell_type = type;
  const index_t px = nx + 1;
  auto node = [px](index_t i, index_t j) { return j * px + i; };
  d.coords.resize(2 * static_cast<std::size_t>(px) * (ny + 1));
  for (index_t j = 0; j <= ny; ++j)
    for (index_t i = 0; i <= nx; ++i) {
      const std::size_t k = node(i, j);
      d.coords[2 * k] = lo[0] + (hi[0] - lo[0]) * i / nx;
      d.coords[2 * k + 1] = lo[1] + (hi[1] - lo[1]) * j / ny;
    }
  d.cells.reserve(static_cast<std::size_t>(nx) * ny * (tri ? 6 : 4));
  for (index_t j = 0; j < ny; ++j)
    for (index_t i = 0; i < nx; ++i) {
      const index_t v0 = node(i, j), v1 = node(i + 1, j), v2 = node(i + 1, j + 1), v3 = node(i, j + 1);
      if (tri)
        d.cells.insert(d.cells.end(), {v0, v1, v2, v0, v2, v3});
      else
        d.cells.insert(d.cells.end(), {v0, v1, v2, v3});
    }
  d.cell_tags.assign(d.cells.size() / (tri ? 3 : 4), domain_tag);
  for (index_t j = 0; j < ny; ++j) {
    d.facets.insert(d.facets.end(), {node(0, j + 1), node(0, j)});
    d.facet_tags.push_back(left);
    d.facets.insert(d.facets.end(), {node(nx, j), node(nx, j + 1)});
    d.facet_tags.push_back(right);
  }
  for (index_t i = 0; i < nx; ++i) {
    d.facets.insert(d.facets.end(), {node(i, 0), node(i + 1, 0)});
    d.facet_tags.push_back(bottom);
    d.facets.insert(d.facets.end(), {node(i + 1, ny), node(i, ny)});
    d.facet_tags.push_back(top);
  }
  d.names = side_names(2);
  d.source = tri ? "generated rectangle (tri3)" : "generated rectangle (quad4)";
  return Mesh(std::move(d));
}

Mesh box(CellType type, index_t nx, index_t ny, index_t nz, std::array<double, 3> lo, std::array<double, 3> hi) {
  FEM_EXPECTS(type == CellType::tet4 || type == CellType::hex8, "box() makes tet4 or hex8 cells, not {}",
              cell_info(type).name);
  FEM_EXPECTS(nx >= 1 && ny >= 1 && nz >= 1, "box needs at least one cell per direction, got {}x{}x{}", nx, ny, nz);
  FEM_EXPECTS(lo[0] < hi[0] && lo[1] < hi[1] && lo[2] < hi[2], "box is empty");
  const bool tet = type == CellType::tet4;
  check_count(std::int64_t{nx} * ny * nz * (tet ? 6 : 1), std::int64_t{nx + 1} * (ny + 1) * (nz + 1));
  Mesh::Data d;
  d.gdim = 3;
  d.cell_type = type;
  const index_t px = nx + 1, py = ny + 1;
  auto node = [px, py](index_t i, index_t j, index_t k) { return (k * py + j) * px + i; };
  d.coords.resize(3 * static_cast<std::size_t>(px) * py * (nz + 1));
  for (index_t k = 0; k <= nz; ++k)
    for (index_t j = 0; j <= ny; ++j)
      for (index_t i = 0; i <= nx; ++i) {
        const std::size_t n = node(i, j, k);
        d.coords[3 * n] = lo[0] + (hi[0] - lo[0]) * i / nx;
        d.coords[3 * n + 1] = lo[1] + (hi[1] - lo[1]) * j / ny;
        d.coords[3 * n + 2] = lo[2] + (hi[2] - lo[2]) * k / nz;
      }
  // Kuhn split: the 6 paths from corner 0 to corner 7 that step once in each direction.
  // Corner c of a cube has offsets (c & 1, c >> 1 & 1, c >> 2 & 1).
  static constexpr int kuhn[6][4] = {{0, 1, 3, 7}, {0, 1, 5, 7}, {0, 2, 3, 7},
                                     {0, 2, 6, 7}, {0, 4, 5, 7}, {0, 4, 6, 7}};
  d.cells.reserve(static_cast<std::size_t>(nx) * ny * nz * (tet ? 24 : 8));
  for (index_t k = 0; k < nz; ++k)
    for (index_t j = 0; j < ny; ++j)
      for (index_t i = 0; i < nx; ++i) {
        index_t c[8];
        for (int b = 0; b < 8; ++b) c[b] = node(i + (b & 1), j + (b >> 1 & 1), k + (b >> 2 & 1));
        if (tet) {
          for (const auto& t : kuhn) {
            // Paths through x then y (or y then z, z then x) are positively oriented; the others
            // are mirror images: swap two vertices.
            const bool even = (t[1] == 1 && t[2] == 3) || (t[1] == 2 && t[2] == 6) || (t[1] == 4 && t[2] == 5);
            if (even)
              d.cells.insert(d.cells.end(), {c[t[0]], c[t[1]], c[t[2]], c[t[3]]});
            else
              d.cells.insert(d.cells.end(), {c[t[0]], c[t[2]], c[t[1]], c[t[3]]});
          }
        } else {
          d.cells.insert(d.cells.end(), {c[0], c[1], c[3], c[2], c[4], c[5], c[7], c[6]});
        }
      }
  d.cell_tags.assign(d.cells.size() / (tet ? 4 : 8), domain_tag);

  // Boundary faces: each square face as one quad or two triangles (matching the Kuhn split,
  // which cuts every face along the diagonal through its lowest corner).
  auto face = [&](index_t a, index_t b, index_t c2, index_t dd, int tag) {
    // a-b-c2-dd around the face, a the corner nearest the origin, c2 opposite to it
    if (tet) {
      d.facets.insert(d.facets.end(), {a, b, c2, a, c2, dd});
      d.facet_tags.insert(d.facet_tags.end(), {tag, tag});
    } else {
      d.facets.insert(d.facets.end(), {a, b, c2, dd});
      d.facet_tags.push_back(tag);
    }
  };
  for (index_t k = 0; k < nz; ++k)
    for (index_t j = 0; j < ny; ++j) {
      face(node(0, j, k), node(0, j, k + 1), node(0, j + 1, k + 1), node(0, j + 1, k), left);
      face(node(nx, j, k), node(nx, j + 1, k), node(nx, j + 1, k + 1), node(nx, j, k + 1), right);
    }
  for (index_t k = 0; k < nz; ++k)
    for (index_t i = 0; i < nx; ++i) {
      face(node(i, 0, k), node(i + 1, 0, k), node(i + 1, 0, k + 1), node(i, 0, k + 1), front);
      face(node(i, ny, k), node(i, ny, k + 1), node(i + 1, ny, k + 1), node(i + 1, ny, k), back);
    }
  for (index_t j = 0; j < ny; ++j)
    for (index_t i = 0; i < nx; ++i) {
      face(node(i, j, 0), node(i, j + 1, 0), node(i + 1, j + 1, 0), node(i + 1, j, 0), bottom);
      face(node(i, j, nz), node(i + 1, j, nz), node(i + 1, j + 1, nz), node(i, j + 1, nz), top);
    }
  d.names = side_names(3);
  d.source = tet ? "generated box (tet4)" : "generated box (hex8)";
  return Mesh(std::move(d));
}

}  // namespace fem::mesh
