// Point evaluation of finite-element fields, as DOLFINx's Function.eval or deal.II's
// VectorTools::point_value: which cell contains a physical point (a grid of bins over the cells'
// bounding boxes), where the point lies on that cell's reference cell (the inverse of the cell's
// map), and the basis weights that give a field's value there.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fem/assembly/space.hpp"
#include "fem/mesh.hpp"

namespace fem::assembly {

/// Where a point lies in a mesh: its cell (-1: none) and its coordinates on that cell's
/// reference cell (fem/lagrange.hpp: the unit simplex, or [-1, 1]^d), unused ones 0.
struct CellPoint {
  index_t cell = -1;
  std::array<double, 3> reference{};
};

/// Finds the cells of a mesh that contain physical points. Built once per mesh: a uniform grid
/// of bins over the mesh's bounding box, each listing (in cell order) the cells whose bounding
/// box meets it; second-order cells are bounded by their Bernstein control points, so a curved
/// cell never pokes out of its box. Immutable; cached as `<mesh key>#locator` (locator_of).
class CellLocator {
 public:
  /// How far outside a cell a point may lie and still count as in it, in units of the cell's
  /// reference size (so relative to the cell's size): roundoff of a point typed on a boundary.
  static constexpr double default_tolerance = 1e-8;

  /// Any cell type with a Lagrange geometry map (not hex27), cells of the mesh's dimension
  /// (gdim == tdim): anything else is an InvalidArgument.
  explicit CellLocator(std::shared_ptr<const Mesh> mesh);

  const Mesh& mesh() const noexcept { return *mesh_; }

  /// The lowest-numbered cell containing x (gdim coordinates), and x's reference coordinates in
  /// it; cell -1 when x lies in no cell. A point on a shared facet, edge or vertex lies in every
  /// cell around it and gets the lowest-numbered one. Reference coordinates come from the
  /// affine map directly (line2, tri3, tet4), otherwise from Newton on the cell's map (bilinear
  /// and trilinear cells, second-order geometry), to 1e-12 of the reference cell.
  CellPoint locate(std::span<const double> x, double tolerance = default_tolerance) const;

  /// x's reference coordinates on cell c (into xi[tdim]) and how far outside the reference cell
  /// they lie, in its units (0 inside; infinity when the map cannot be inverted near x).
  double reference_coordinates(index_t c, std::span<const double> x, double* xi) const;

  std::size_t bytes() const noexcept;

 private:
  std::shared_ptr<const Mesh> mesh_;
  int dim_ = 0;
  bool affine_ = false;
  std::array<double, 3> lo_{}, bin_size_{};
  std::array<index_t, 3> bins_{1, 1, 1};
  std::vector<std::int64_t> bin_offsets_;  ///< CSR over the bins (x fastest)
  std::vector<index_t> bin_cells_;         ///< cells per bin, ascending
};

/// The space's locator: cached in the space's store as `<mesh key>#locator` (derived from the
/// mesh; counted as `assembly.locator_builds`), or built here for a mesh not in a store.
std::shared_ptr<const CellLocator> locator_of(const FunctionSpace& V);

/// A field of a space evaluated at fixed physical points: the containing cells, reference
/// coordinates and basis weights are found once, then `evaluate(u)` is a weighted sum of each
/// point's cell DOFs, for any number of fields of the space.
///
///   PointEvaluator probe(V, std::vector<double>{0.5, 0.25, 1.0, 0.0});  // two points in 2D
///   std::vector<double> values = probe.evaluate(u);  // 2 × V.components()
class PointEvaluator {
 public:
  struct Options {
    /// How far outside the mesh a point may lie (CellLocator::default_tolerance).
    double tolerance = CellLocator::default_tolerance;
    /// A point in no cell is an InvalidArgument naming it (true), or kept with found() false
    /// (a part of a distributed mesh holds only some of the points).
    bool require_all = true;
  };

  /// `points`: one point after another, gdim coordinates each.
  PointEvaluator(const FunctionSpace& V, std::span<const double> points, Options options);
  PointEvaluator(const FunctionSpace& V, std::span<const double> points)
      : PointEvaluator(V, points, Options{}) {}

  index_t size() const noexcept { return static_cast<index_t>(cells_.size()); }
  int components() const noexcept { return components_; }
  /// Whether point p lies in a cell of the mesh.
  bool found(index_t p) const { return cell(p) >= 0; }
  /// Its cell, or -1.
  index_t cell(index_t p) const;
  /// Its coordinates on the reference cell of its cell (3 numbers, unused ones 0).
  const std::array<double, 3>& reference(index_t p) const;

  /// u (the space's DOF layout: node i's component k at i * components + k) at point p, into
  /// out[components()]. The point must have been found.
  void value(std::span<const double> u, index_t p, std::span<double> out) const;
  /// u at every point, size() × components() values, point by point. Every point must have
  /// been found.
  std::vector<double> evaluate(std::span<const double> u) const;

 private:
  index_t num_dofs_ = 0;
  int components_ = 1, nodes_per_cell_ = 0, gdim_ = 0;
  std::vector<index_t> cells_;
  std::vector<std::array<double, 3>> reference_;
  std::vector<double> points_;   ///< for messages
  std::vector<index_t> nodes_;   ///< size() × nodes_per_cell_: the space's nodes of each point's cell
  std::vector<double> weights_;  ///< size() × nodes_per_cell_: the basis at each point
};

}  // namespace fem::assembly

FEM_TYPE_NAME(fem::assembly::CellLocator, "fem::assembly::CellLocator");
