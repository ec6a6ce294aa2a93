// Mesh checks: inverted, degenerate and tangled cells, duplicate and unreferenced nodes, tagged
// facets that are not on the boundary and boundary facets without a tag; and reorientation of
// inverted cells.
//
//   const auto report = fem::mesh::check(mesh);
//   if (!report.ok()) fmt::print("{}", report.summary());
//   if (!report.inverted.empty()) mesh = fem::mesh::reorient(mesh);
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "fem/mesh.hpp"

namespace fem::mesh {

struct CheckOptions {
  /// Two nodes are duplicates when every coordinate differs by at most this times the
  /// diagonal of the mesh's bounding box (0: only identical coordinates).
  double duplicate_tolerance = 1e-10;
  /// A Jacobian determinant counts as zero when |det J| ≤ this × (cell diameter)^dim, the
  /// diameter of the cell's vertices.
  double degenerate_tolerance = 1e-10;
};

/// A boundary facet as the cell it belongs to and its local index (fem::local_facets order).
struct CellFacet {
  index_t cell = 0;
  int local = 0;
};

/// What check() found. Every list is sorted by index.
struct CheckReport {
  /// The Jacobian determinant is judged over the whole cell, not only at its corners: for cells
  /// of full dimension (tdim == gdim) det J is a polynomial, bounded over the cell by its
  /// Bernstein coefficients (with subdivision where the bound is not sharp enough; see check.cpp),
  /// so a second-order cell folded by its edge nodes is found even where every corner is fine.
  /// The three lists are disjoint.
  ///
  /// Cells whose determinant is negative everywhere: mirrored cells (their nodes in reversed
  /// order), fixed by reorient().
  std::vector<index_t> inverted;
  /// Cells whose determinant is zero somewhere (|det J| ≤ degenerate_tolerance × diameter^dim)
  /// without changing sign: collapsed cells, which reordering cannot fix. For cells of lower
  /// dimension than the coordinates (surfaces in 3D), whose measure has no sign, every small one.
  std::vector<index_t> degenerate;
  /// Cells whose determinant changes sign inside the cell: the map folds the cell over itself
  /// (a bow-tie quadrilateral, a curved cell with an edge node on the wrong side). Reordering
  /// cannot fix them either; reorient() leaves them as they are.
  std::vector<index_t> tangled;
  /// (node, the lowest-numbered node it coincides with), for every node that duplicates an
  /// earlier one.
  std::vector<std::pair<index_t, index_t>> duplicate_nodes;
  /// Nodes no cell references.
  std::vector<index_t> unreferenced_nodes;
  /// Tagged facets (indices into Mesh::facets()) that are a facet of two cells.
  std::vector<index_t> tagged_interior_facets;
  /// Tagged facets that are a facet of no cell at all.
  std::vector<index_t> stray_facets;
  /// Boundary facets (facets of exactly one cell) that carry no tag. A warning: untagged
  /// boundary is legitimate (natural boundary conditions), so ok() does not count it.
  std::vector<CellFacet> untagged_boundary_facets;
  /// Number of boundary facets in total.
  std::size_t boundary_facets = 0;

  /// No errors: nothing inverted, degenerate or tangled, no duplicate or unreferenced nodes,
  /// every tagged facet on the boundary.
  bool ok() const noexcept {
    return inverted.empty() && degenerate.empty() && tangled.empty() && duplicate_nodes.empty() &&
           unreferenced_nodes.empty() && tagged_interior_facets.empty() && stray_facets.empty();
  }
  /// Human-readable, several lines: one per kind of finding with counts and the first indices.
  std::string summary() const;
};

/// Check a mesh. O(n log n): duplicates and facet matching work by sorting; the determinant
/// bounds cost a few dozen Jacobians per second-order cell (216 per hex27).
CheckReport check(const Mesh& mesh, const CheckOptions& options = {});

/// Jacobian determinants of cell c at its corners (reference vertices) followed by the cell's
/// centre; for cells of lower dimension than the coordinates, the (unsigned) measure
/// sqrt(det(JᵀJ)). Point cells have none.
std::vector<double> corner_determinants(const Mesh& mesh, index_t c);

/// The node permutation that mirrors a cell of `type` (new node k = old node order[k]):
/// vertices reordered to flip the orientation, edge, face and centre nodes moved with them.
std::span<const int> mirror_order(CellType type);

/// A copy of the mesh with the node order of every inverted cell mirrored (mirror_order), so
/// all cells are positively oriented. Degenerate and tangled cells are left as they are (no
/// node order makes them valid): check() still reports them.
Mesh reorient(const Mesh& mesh, const CheckOptions& options = {});

}  // namespace fem::mesh
