// Structured mesh generators. Nodes are numbered lexicographically (x fastest), cells in the
// same order, which gives the kernels good memory locality.
#include "fem/mesh/generate.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

#include "fem/error.hpp"
#include "fem/memory.hpp"

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

constexpr double max_index = std::numeric_limits<index_t>::max();
// At most 2^31/8 cells: the connectivity's per-cell arrays (up to 8 nodes per cell) stay
// within 32-bit indices.
constexpr double max_cells = std::numeric_limits<index_t>::max() / 8;

// A count as text: the integer, or 1.2e+20 beyond what a double counts exactly.
std::string count_text(double count) {
  return count < 1e15 ? fmt::format("{:.0f}", count) : fmt::format("{:.3g}", count);
}

struct Counts {
  double nodes, cells, facets;
};

// Counts (in doubles: exact below 2^53, and any larger product is refused anyway) and bytes.
Counts counts(CellType type, double nx, double ny, double nz) {
  switch (type) {
    case CellType::line2:
      return {nx + 1, nx, 2};
    case CellType::tri3:
    case CellType::quad4:
      return {(nx + 1) * (ny + 1), nx * ny * (type == CellType::tri3 ? 2 : 1), 2 * (nx + ny)};
    default: {
      const double sides = nx * ny + ny * nz + nz * nx;
      const bool tet = type == CellType::tet4;
      return {(nx + 1) * (ny + 1) * (nz + 1), nx * ny * nz * (tet ? 6 : 1), 2 * sides * (tet ? 2 : 1)};
    }
  }
}

double array_bytes(CellType type, const Counts& c) {
  const CellTypeInfo& info = cell_info(type);
  const int gdim = info.dim, facet_nodes = cell_info(info.facet).num_nodes;
  return c.nodes * gdim * sizeof(double) + c.cells * (info.num_nodes + 1) * sizeof(index_t) +
         c.facets * (facet_nodes + 1) * sizeof(index_t);
}

// Refuses, before anything is allocated, a mesh whose counts exceed 32-bit indices or whose
// arrays exceed the memory available. `what` names the generator and its arguments.
void check_size(const std::string& what, CellType type, double nx, double ny, double nz) {
  const Counts c = counts(type, nx, ny, nz);
  const double bytes = array_bytes(type, c);
  if (c.nodes > max_index || c.cells > max_cells || c.facets > max_index)
    throw InvalidArgument(
        fmt::format("{}: {} nodes, {} cells and {} boundary facets are more than 32-bit indices "
                    "(fem::index_t) can number (at most {:.0f} nodes, {:.0f} cells, {:.0f} facets); its "
                    "arrays alone would need {}: generate a coarser mesh",
                    what, count_text(c.nodes), count_text(c.cells), count_text(c.facets), max_index,
                    max_cells, max_index, format_bytes(bytes)));
  const MemoryAvailable memory = memory_available();
  if (bytes > static_cast<double>(memory.bytes))
    throw InvalidArgument(fmt::format(
        "{}: {} nodes and {} cells need {} for the mesh's arrays alone, but {} of memory are available ({}): "
        "generate a coarser mesh",
        what, count_text(c.nodes), count_text(c.cells), format_bytes(bytes),
        format_bytes(static_cast<double>(memory.bytes)), memory.source));
}

// The generator's call, with the spec it was named by (a source starting with "gen:").
std::string named(const std::string& source, std::string call) {
  return source.rfind("gen:", 0) == 0 ? fmt::format("mesh '{}': {}", source, call) : call;
}

Mesh make_interval(index_t n, double a, double b, std::string source);
Mesh make_rectangle(CellType type, index_t nx, index_t ny, std::array<double, 2> lo, std::array<double, 2> hi,
                    std::string source);
Mesh make_box(CellType type, index_t nx, index_t ny, index_t nz, std::array<double, 3> lo,
              std::array<double, 3> hi, std::string source);

}  // namespace

GeneratedSize generated_size(CellType type, std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  const Counts c = counts(type, static_cast<double>(nx), static_cast<double>(ny), static_cast<double>(nz));
  const auto saturate = [](double v) {
    return v < 9.2e18 ? static_cast<std::int64_t>(v) : std::numeric_limits<std::int64_t>::max();
  };
  return {saturate(c.nodes), saturate(c.cells), saturate(c.facets), array_bytes(type, c)};
}

Mesh interval(index_t n, double a, double b) { return make_interval(n, a, b, "generated interval"); }
Mesh rectangle(CellType type, index_t nx, index_t ny, std::array<double, 2> lo, std::array<double, 2> hi) {
  return make_rectangle(type, nx, ny, lo, hi, {});
}
Mesh box(CellType type, index_t nx, index_t ny, index_t nz, std::array<double, 3> lo,
         std::array<double, 3> hi) {
  return make_box(type, nx, ny, nz, lo, hi, {});
}

namespace {

Mesh make_interval(index_t n, double a, double b, std::string source) {
  FEM_EXPECTS(n >= 1, "interval needs at least one cell, got {}", n);
  FEM_EXPECTS(a < b, "interval [{}, {}] is empty", a, b);
  check_size(named(source, fmt::format("interval({})", n)), CellType::line2, n, 1, 1);
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
  d.source = std::move(source);
  return Mesh(std::move(d));
}

Mesh make_rectangle(CellType type, index_t nx, index_t ny, std::array<double, 2> lo, std::array<double, 2> hi,
                    std::string source) {
  FEM_EXPECTS(type == CellType::tri3 || type == CellType::quad4,
              "rectangle() makes tri3 or quad4 cells, not {}", cell_info(type).name);
  FEM_EXPECTS(nx >= 1 && ny >= 1, "rectangle needs at least one cell per direction, got {}x{}", nx, ny);
  FEM_EXPECTS(lo[0] < hi[0] && lo[1] < hi[1],
              "rectangle with lower corner ({}, {}) and upper corner ({}, {}) is empty", lo[0], lo[1], hi[0],
              hi[1]);
  const bool tri = type == CellType::tri3;
  check_size(named(source, fmt::format("rectangle({}, {} x {})", cell_info(type).name, nx, ny)), type, nx, ny,
             1);
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
  d.source = source.empty() ? (tri ? "generated rectangle (tri3)" : "generated rectangle (quad4)")
                            : std::move(source);
  return Mesh(std::move(d));
}

Mesh make_box(CellType type, index_t nx, index_t ny, index_t nz, std::array<double, 3> lo,
              std::array<double, 3> hi, std::string source) {
  FEM_EXPECTS(type == CellType::tet4 || type == CellType::hex8, "box() makes tet4 or hex8 cells, not {}",
              cell_info(type).name);
  FEM_EXPECTS(nx >= 1 && ny >= 1 && nz >= 1, "box needs at least one cell per direction, got {}x{}x{}", nx,
              ny, nz);
  FEM_EXPECTS(lo[0] < hi[0] && lo[1] < hi[1] && lo[2] < hi[2], "box is empty");
  const bool tet = type == CellType::tet4;
  check_size(named(source, fmt::format("box({}, {} x {} x {})", cell_info(type).name, nx, ny, nz)), type, nx,
             ny, nz);
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
            const bool even =
                (t[1] == 1 && t[2] == 3) || (t[1] == 2 && t[2] == 6) || (t[1] == 4 && t[2] == 5);
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
  d.source = source.empty() ? (tet ? "generated box (tet4)" : "generated box (hex8)") : std::move(source);
  return Mesh(std::move(d));
}

}  // namespace

Mesh generate(std::string_view spec) {
  static constexpr std::string_view forms =
      "gen:interval-line2:N, gen:square-tri3:N, gen:square-quad4:N, gen:cube-tet4:N or gen:cube-hex8:N";
  FEM_EXPECTS(is_generated(spec), "mesh '{}': a generated mesh is named {}", spec, forms);
  const auto colon = spec.find(':', 4);
  FEM_EXPECTS(colon != std::string_view::npos, "mesh '{}': expected {}", spec, forms);
  const std::string_view shape = spec.substr(4, colon - 4), count = spec.substr(colon + 1);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
  const bool number =
      ec != std::errc::invalid_argument && end == count.data() + count.size() && count[0] != '-';
  FEM_EXPECTS(number && (ec == std::errc::result_out_of_range || n >= 1),
              "mesh '{}': '{}' is not a positive number of cells per side", spec, count);
  FEM_EXPECTS(ec != std::errc::result_out_of_range && n <= std::numeric_limits<index_t>::max(),
              "mesh '{}': {} cells per side are more than 32-bit indices (fem::index_t) can number", spec,
              count);
  const auto m = static_cast<index_t>(n);
  std::string source(spec);
  if (shape == "interval-line2" || shape == "interval") return make_interval(m, 0.0, 1.0, std::move(source));
  if (shape == "square-tri3") return make_rectangle(CellType::tri3, m, m, {0, 0}, {1, 1}, std::move(source));
  if (shape == "square-quad4")
    return make_rectangle(CellType::quad4, m, m, {0, 0}, {1, 1}, std::move(source));
  if (shape == "cube-tet4") return make_box(CellType::tet4, m, m, m, {0, 0, 0}, {1, 1, 1}, std::move(source));
  if (shape == "cube-hex8") return make_box(CellType::hex8, m, m, m, {0, 0, 0}, {1, 1, 1}, std::move(source));
  throw InvalidArgument(fmt::format("mesh '{}': unknown shape '{}'; expected {}", spec, shape, forms));
}

}  // namespace fem::mesh
