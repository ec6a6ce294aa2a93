// Structured meshes of intervals, rectangles and boxes, any resolution, with tagged sides, for
// tests and benchmarks that need no files.
//
// Too large is said before anything is allocated: the node, cell and facet counts are computed
// in 64 bits, counts beyond the 32-bit indices (fem::index_t) are an InvalidArgument naming the
// generator and the counts, and so is a mesh whose arrays need more than fem::available_memory()
// (naming the bytes).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "fem/mesh.hpp"

namespace fem::mesh {

/// Physical tags of the sides of generated meshes (named in the mesh's PhysicalNames).
/// In 2D bottom/top are y = min/max; in 3D front/back are y = min/max and bottom/top z = min/max.
enum Side : int { left = 1, right = 2, bottom = 3, top = 4, front = 5, back = 6 };
/// Physical tag of the cells of generated meshes ("domain").
inline constexpr int domain_tag = 1;

/// [a, b] split into n line2 cells; facets (points) tagged left and right.
Mesh interval(index_t n, double a = 0.0, double b = 1.0);

/// [lo, hi] split into nx × ny quad4 cells, or 2·nx·ny tri3 cells (each square cut along the
/// diagonal from its lower-left to its upper-right corner). Cells are counter-clockwise.
Mesh rectangle(CellType type, index_t nx, index_t ny, std::array<double, 2> lo = {0.0, 0.0},
               std::array<double, 2> hi = {1.0, 1.0});

/// [lo, hi] split into nx × ny × nz hex8 cells, or 6·nx·ny·nz tet4 cells (the Kuhn split of each
/// cube along its main diagonal: conforming, every tet positively oriented).
Mesh box(CellType type, index_t nx, index_t ny, index_t nz, std::array<double, 3> lo = {0.0, 0.0, 0.0},
         std::array<double, 3> hi = {1.0, 1.0, 1.0});

inline Mesh unit_square(CellType type, index_t n) { return rectangle(type, n, n); }
inline Mesh unit_cube(CellType type, index_t n) { return box(type, n, n, n); }

/// What a generated mesh holds, counted in 64 bits: the sizes of its arrays before they exist.
struct GeneratedSize {
  std::int64_t nodes = 0, cells = 0, facets = 0;
  double bytes = 0;  ///< of its arrays (coordinates, cells, facets, tags)
};
/// The size of interval(n), rectangle(type, nx, ny) or box(type, nx, ny, nz) (ny = nz = 1 and
/// ny: unused where the shape has fewer dimensions): nothing is allocated, nothing checked.
GeneratedSize generated_size(CellType type, std::int64_t nx, std::int64_t ny = 1, std::int64_t nz = 1);

/// The mesh a spec `gen:<shape>:<n>` names, n cells per side: shapes interval-line2 (or
/// interval), square-tri3, square-quad4, cube-tet4, cube-hex8. Its source() is the spec. A
/// malformed spec (listing the accepted forms), n beyond 32 bits, or a mesh too large (above)
/// is an InvalidArgument.
Mesh generate(std::string_view spec);
/// Whether `spec` names a generated mesh (starts with "gen:").
inline bool is_generated(std::string_view spec) { return spec.substr(0, 4) == "gen:"; }

}  // namespace fem::mesh
