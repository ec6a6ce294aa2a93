// Point location (bins over cell bounding boxes, Newton on the cell map) and point evaluation.
#include "fem/assembly/point_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fem/error.hpp"
#include "fem/lagrange.hpp"
#include "fem/reference_cell.hpp"

namespace fem::assembly {
namespace {

constexpr int kMaxNodes = 27;
// locate() accepts tolerances up to this; cell boxes are padded for it (a filter: generous is
// harmless, too small would miss points the tolerance accepts).
constexpr double kMaxTolerance = 1e-3;
constexpr double kBoxPadding = 4 * kMaxTolerance;

bool has_geometry_map(CellType t) {
  switch (t) {
    case CellType::line2:
    case CellType::line3:
    case CellType::tri3:
    case CellType::tri6:
    case CellType::quad4:
    case CellType::quad9:
    case CellType::tet4:
    case CellType::tet10:
    case CellType::hex8:
      return true;
    default:
      return false;
  }
}

bool simplex(CellType t) {
  const CellType b = first_order(t);
  return b == CellType::tri3 || b == CellType::tet4;
}

std::string where(const Mesh& m) {
  return m.source().empty() ? std::string("the mesh") : "mesh '" + m.source() + "'";
}

std::string point_text(const double* x, int dim) {
  std::string s = "(";
  for (int d = 0; d < dim; ++d) s += fmt::format("{}{}", d ? ", " : "", x[d]);
  return s + ")";
}

/// The corners of a cell's Bernstein control net: the cell lies in their convex hull, so their
/// bounding box bounds the cell (for second-order geometry the nodes alone do not: an edge
/// bulges beyond its mid node). X: the cell's nodes, gdim coordinates each; out: control points.
int control_points(CellType t, const double* X, int gdim, double* out) {
  const CellTypeInfo& info = cell_info(t);
  const int nv = info.num_vertices, n = info.num_nodes;
  std::copy(X, X + nv * gdim, out);
  if (n == nv) return nv;
  const auto edges = local_edges(t);
  const int ne = t == CellType::line3 ? 1 : static_cast<int>(edges.size());
  // A quadratic edge with ends a, b and mid node m has the control point 2m - (a + b)/2.
  for (int k = 0; k < ne; ++k)
    for (int d = 0; d < gdim; ++d)
      out[(nv + k) * gdim + d] =
          2 * X[(nv + k) * gdim + d] - 0.5 * (X[edges[k][0] * gdim + d] + X[edges[k][1] * gdim + d]);
  if (t != CellType::quad9) return nv + ne;
  // The biquadratic centre: the 1D rule across the x-midline (edges 7, 5 through the centre 8),
  // then across y between the bottom and top edges' control points (4 and 6).
  for (int d = 0; d < gdim; ++d) {
    const double mid = 2 * X[8 * gdim + d] - 0.5 * (X[7 * gdim + d] + X[5 * gdim + d]);
    out[8 * gdim + d] = 2 * mid - 0.5 * (out[4 * gdim + d] + out[6 * gdim + d]);
  }
  return n;
}

/// The padded bounding box of cell c (lo, hi: dim values).
void cell_box(const Mesh& m, index_t c, double* lo, double* hi) {
  const int dim = m.gdim(), ng = m.nodes_per_cell();
  double X[kMaxNodes * 3], P[kMaxNodes * 3];
  const auto nodes = m.cell(c);
  for (int g = 0; g < ng; ++g)
    for (int d = 0; d < dim; ++d) X[g * dim + d] = m.node(nodes[g])[d];
  const int np = control_points(m.cell_type(), X, dim, P);
  double extent = 0;
  for (int d = 0; d < dim; ++d) {
    lo[d] = hi[d] = P[d];
    for (int p = 1; p < np; ++p)
      lo[d] = std::min(lo[d], P[p * dim + d]), hi[d] = std::max(hi[d], P[p * dim + d]);
    extent = std::max(extent, hi[d] - lo[d]);
  }
  for (int d = 0; d < dim; ++d) lo[d] -= kBoxPadding * extent, hi[d] += kBoxPadding * extent;
}

/// det and inverse of a dim × dim matrix.
double invert(int dim, const double* J, double* K) {
  if (dim == 1) {
    K[0] = 1 / J[0];
    return J[0];
  }
  if (dim == 2) {
    const double det = J[0] * J[3] - J[1] * J[2];
    K[0] = J[3] / det, K[1] = -J[1] / det, K[2] = -J[2] / det, K[3] = J[0] / det;
    return det;
  }
  const double c00 = J[4] * J[8] - J[5] * J[7], c01 = J[5] * J[6] - J[3] * J[8],
               c02 = J[3] * J[7] - J[4] * J[6];
  const double det = J[0] * c00 + J[1] * c01 + J[2] * c02;
  K[0] = c00 / det, K[1] = (J[2] * J[7] - J[1] * J[8]) / det, K[2] = (J[1] * J[5] - J[2] * J[4]) / det;
  K[3] = c01 / det, K[4] = (J[0] * J[8] - J[2] * J[6]) / det, K[5] = (J[2] * J[3] - J[0] * J[5]) / det;
  K[6] = c02 / det, K[7] = (J[1] * J[6] - J[0] * J[7]) / det, K[8] = (J[0] * J[4] - J[1] * J[3]) / det;
  return det;
}

}  // namespace

CellLocator::CellLocator(std::shared_ptr<const Mesh> mesh) : mesh_(std::move(mesh)) {
  FEM_EXPECTS(mesh_ != nullptr, "CellLocator needs a mesh");
  const Mesh& m = *mesh_;
  const CellType t = m.cell_type();
  FEM_EXPECTS(has_geometry_map(t), "{}: no point location in {} cells (no geometry map)", where(m),
              m.cell_info().name);
  FEM_EXPECTS(m.gdim() == m.tdim(), "{}: point location needs cells of the mesh's dimension: {} cells in {}D",
              where(m), m.cell_info().name, m.gdim());
  dim_ = m.gdim();
  affine_ = t == CellType::line2 || t == CellType::tri3 || t == CellType::tet4;
  const index_t nc = m.num_cells();
  if (nc == 0) {
    bin_offsets_.assign(2, 0);
    return;
  }

  // The boxes of the cells, and the grid over their union: about one bin per cell, square-ish.
  std::vector<double> boxes(static_cast<std::size_t>(nc) * 2 * dim_);
  std::array<double, 3> hi{};
  for (int d = 0; d < dim_; ++d)
    lo_[d] = std::numeric_limits<double>::infinity(), hi[d] = -std::numeric_limits<double>::infinity();
  for (index_t c = 0; c < nc; ++c) {
    double* b = &boxes[static_cast<std::size_t>(c) * 2 * dim_];
    cell_box(m, c, b, b + dim_);
    for (int d = 0; d < dim_; ++d) lo_[d] = std::min(lo_[d], b[d]), hi[d] = std::max(hi[d], b[dim_ + d]);
  }
  std::array<double, 3> extent{1, 1, 1};
  double volume = 1;
  for (int d = 0; d < dim_; ++d) {
    extent[d] = std::max(hi[d] - lo_[d], std::numeric_limits<double>::min());
    volume *= extent[d];
  }
  const double side = std::pow(volume / static_cast<double>(nc), 1.0 / dim_);
  std::int64_t total = 1;
  for (int d = 0; d < dim_; ++d) {
    bins_[d] = static_cast<index_t>(std::clamp(std::round(extent[d] / side), 1.0, static_cast<double>(nc)));
    total *= bins_[d];
  }
  while (total > 2 * static_cast<std::int64_t>(nc) + 8) {  // a thin domain: fewer bins along its long sides
    const int d = static_cast<int>(std::max_element(bins_.begin(), bins_.begin() + dim_) - bins_.begin());
    total /= bins_[d];
    bins_[d] = (bins_[d] + 1) / 2;
    total *= bins_[d];
  }
  for (int d = 0; d < dim_; ++d) bin_size_[d] = extent[d] / bins_[d];

  auto bin_of = [&](int d, double v) {
    const double k = std::floor((v - lo_[d]) / bin_size_[d]);
    return static_cast<index_t>(std::clamp(k, 0.0, static_cast<double>(bins_[d] - 1)));
  };
  // Each cell into every bin its box meets: counted, then filled in cell order.
  bin_offsets_.assign(static_cast<std::size_t>(total) + 1, 0);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::int64_t> next;
    if (pass == 1) {
      for (std::size_t b = 0; b < static_cast<std::size_t>(total); ++b)
        bin_offsets_[b + 1] += bin_offsets_[b];
      bin_cells_.resize(static_cast<std::size_t>(bin_offsets_.back()));
      next.assign(bin_offsets_.begin(), bin_offsets_.end() - 1);
    }
    for (index_t c = 0; c < nc; ++c) {
      const double* b = &boxes[static_cast<std::size_t>(c) * 2 * dim_];
      std::array<index_t, 3> first{0, 0, 0}, last{0, 0, 0};
      for (int d = 0; d < dim_; ++d) first[d] = bin_of(d, b[d]), last[d] = bin_of(d, b[dim_ + d]);
      for (index_t k = first[2]; k <= last[2]; ++k)
        for (index_t j = first[1]; j <= last[1]; ++j)
          for (index_t i = first[0]; i <= last[0]; ++i) {
            const auto bin =
                static_cast<std::size_t>((static_cast<std::int64_t>(k) * bins_[1] + j) * bins_[0] + i);
            if (pass == 0)
              ++bin_offsets_[bin + 1];
            else
              bin_cells_[static_cast<std::size_t>(next[bin]++)] = c;
          }
    }
  }
}

double CellLocator::reference_coordinates(index_t c, std::span<const double> x, double* xi) const {
  const Mesh& m = *mesh_;
  FEM_EXPECTS(c >= 0 && c < m.num_cells(), "cell {} of a mesh with {} cells", c, m.num_cells());
  FEM_EXPECTS(static_cast<int>(x.size()) == dim_, "a point of {} coordinates in a {}D mesh", x.size(), dim_);
  const CellType t = m.cell_type();
  const int dim = dim_, ng = m.nodes_per_cell();
  const bool simplex_cell = simplex(t);
  // The map in coordinates relative to the cell's first node: Newton then works at the cell's
  // scale, whatever the distance of the mesh from the origin.
  const auto nodes = m.cell(c);
  double X[kMaxNodes][3], target[3];
  for (int g = 0; g < ng; ++g)
    for (int d = 0; d < dim; ++d) X[g][d] = m.node(nodes[g])[d] - m.node(nodes[0])[d];
  for (int d = 0; d < dim; ++d) target[d] = x[d] - m.node(nodes[0])[d];
  double psi[kMaxNodes], dpsi[kMaxNodes * 3], J[9], K[9], r[3];
  // The residual x(ξ) - x and the Jacobian at ξ; |r|² returned.
  auto residual = [&](const double* at) {
    lagrange_eval(t, at, psi, dpsi);
    double norm = 0;
    for (int d = 0; d < dim; ++d) {
      double s = -target[d];
      for (int g = 0; g < ng; ++g) s += psi[g] * X[g][d];
      r[d] = s;
      norm += s * s;
      for (int k = 0; k < dim; ++k) {
        double jk = 0;
        for (int g = 0; g < ng; ++g) jk += X[g][d] * dpsi[g * dim + k];
        J[d * dim + k] = jk;
      }
    }
    return norm;
  };
  // Start at the reference cell's centroid.
  for (int d = 0; d < dim; ++d) xi[d] = simplex_cell ? 1.0 / (dim + 1) : 0.0;
  double norm = residual(xi);
  bool converged = false;
  for (int it = 0; it < 60 && !converged; ++it) {
    const double det = invert(dim, J, K);
    if (!std::isfinite(det) || det == 0) break;
    double step[3], largest = 0;
    for (int d = 0; d < dim; ++d) {
      double s = 0;
      for (int k = 0; k < dim; ++k) s -= K[d * dim + k] * r[k];
      step[d] = s;
      largest = std::max(largest, std::abs(s));
    }
    if (!std::isfinite(largest)) break;
    if (affine_ || largest < 1e-12) {  // an affine map is inverted by one step
      for (int d = 0; d < dim; ++d) xi[d] += step[d];
      converged = true;
      break;
    }
    // The Newton step, halved while it increases the residual (a point far outside a curved or
    // distorted cell can send the full step away).
    double trial[3], scale = 1, trial_norm = 0;
    for (int halvings = 0;; ++halvings) {
      for (int d = 0; d < dim; ++d) trial[d] = xi[d] + scale * step[d];
      trial_norm = residual(trial);
      if (trial_norm < norm || halvings == 10) break;
      scale *= 0.5;
    }
    std::copy(trial, trial + dim, xi);
    norm = trial_norm;
    if (scale * largest < 1e-12) converged = true;
    for (int d = 0; d < dim; ++d)
      if (!(std::abs(xi[d]) < 1e3)) return std::numeric_limits<double>::infinity();  // far away
  }
  if (!converged) return std::numeric_limits<double>::infinity();
  // How far outside: on the unit simplex the largest negative barycentric coordinate; on
  // [-1, 1]^d how far beyond ±1, halved (the reference cell has side 2).
  double outside = 0;
  if (simplex_cell) {
    double sum = 0;
    for (int d = 0; d < dim; ++d) outside = std::max(outside, -xi[d]), sum += xi[d];
    outside = std::max(outside, sum - 1);
  } else {
    for (int d = 0; d < dim; ++d) outside = std::max(outside, 0.5 * (std::abs(xi[d]) - 1));
  }
  return outside;
}

CellPoint CellLocator::locate(std::span<const double> x, double tolerance) const {
  FEM_EXPECTS(static_cast<int>(x.size()) == dim_, "a point of {} coordinates in a {}D mesh", x.size(), dim_);
  FEM_EXPECTS(tolerance >= 0 && tolerance <= kMaxTolerance, "point location tolerance {}: give 0 to {}",
              tolerance, kMaxTolerance);
  CellPoint found;
  if (bin_cells_.empty()) return found;
  std::int64_t bin = 0;
  for (int d = dim_ - 1; d >= 0; --d) {
    const double k = std::floor((x[d] - lo_[d]) / bin_size_[d]);
    if (!(k >= 0 && k <= bins_[d])) return found;  // outside every cell's box (NaN too)
    bin = bin * bins_[d] + std::min(static_cast<index_t>(k), bins_[d] - 1);
  }
  double lo[3], hi[3], xi[3];
  for (std::int64_t k = bin_offsets_[static_cast<std::size_t>(bin)];
       k < bin_offsets_[static_cast<std::size_t>(bin) + 1]; ++k) {
    const index_t c = bin_cells_[static_cast<std::size_t>(k)];
    cell_box(*mesh_, c, lo, hi);
    bool in_box = true;
    for (int d = 0; d < dim_; ++d) in_box = in_box && x[d] >= lo[d] && x[d] <= hi[d];
    if (!in_box) continue;
    if (reference_coordinates(c, x, xi) <= tolerance) {
      found.cell = c;
      for (int d = 0; d < dim_; ++d) found.reference[static_cast<std::size_t>(d)] = xi[d];
      return found;
    }
  }
  return found;
}

std::size_t CellLocator::bytes() const noexcept {
  return sizeof(*this) + bin_offsets_.capacity() * sizeof(std::int64_t) +
         bin_cells_.capacity() * sizeof(index_t);
}

std::shared_ptr<const CellLocator> locator_of(const FunctionSpace& V) {
  Store* store = V.store();
  if (store == nullptr || V.mesh_key().empty()) return std::make_shared<const CellLocator>(V.mesh_ptr());
  return store->get_or_compute<CellLocator>(V.mesh_key() + "#locator", {{V.mesh_key(), V.mesh_version()}},
                                            [&] {
                                              store->count("assembly.locator_builds");
                                              return CellLocator(V.mesh_ptr());
                                            });
}

PointEvaluator::PointEvaluator(const FunctionSpace& V, std::span<const double> points, Options options)
    : num_dofs_(V.num_dofs()),
      components_(V.components()),
      nodes_per_cell_(V.dofmap().nodes_per_cell),
      gdim_(V.mesh().gdim()) {
  const auto locator = locator_of(V);
  FEM_EXPECTS(points.size() % static_cast<std::size_t>(gdim_) == 0,
              "{} point coordinates: not a multiple of the mesh's dimension {}", points.size(), gdim_);
  const auto n = static_cast<index_t>(points.size() / static_cast<std::size_t>(gdim_));
  const auto npc = static_cast<std::size_t>(nodes_per_cell_);
  points_.assign(points.begin(), points.end());
  cells_.resize(static_cast<std::size_t>(n));
  reference_.resize(static_cast<std::size_t>(n));
  nodes_.assign(static_cast<std::size_t>(n) * npc, 0);
  weights_.assign(static_cast<std::size_t>(n) * npc, 0.0);
  double phi[kMaxNodes], grad[kMaxNodes * 3];
  for (index_t p = 0; p < n; ++p) {
    const auto x = points.subspan(static_cast<std::size_t>(p) * gdim_, static_cast<std::size_t>(gdim_));
    const CellPoint at = locator->locate(x, options.tolerance);
    const auto i = static_cast<std::size_t>(p);
    cells_[i] = at.cell;
    reference_[i] = at.reference;
    if (at.cell < 0) {
      if (!options.require_all) continue;
      const auto [lo, hi] = V.mesh().bounding_box();
      std::string span;
      for (int d = 0; d < gdim_; ++d) span += fmt::format("{}[{}, {}]", d ? " × " : "", lo[d], hi[d]);
      throw InvalidArgument(
          fmt::format("point {} lies in no cell of {} (none within {} of a cell's size; the mesh "
                      "spans {})",
                      point_text(x.data(), gdim_), where(V.mesh()), options.tolerance, span));
    }
    lagrange_eval(V.element(), at.reference.data(), phi, grad);
    const auto cell_nodes = V.dofmap().cell_nodes.subspan(static_cast<std::size_t>(at.cell) * npc, npc);
    std::copy(cell_nodes.begin(), cell_nodes.end(), nodes_.begin() + static_cast<std::ptrdiff_t>(i * npc));
    std::copy(phi, phi + npc, weights_.begin() + static_cast<std::ptrdiff_t>(i * npc));
  }
}

index_t PointEvaluator::cell(index_t p) const {
  FEM_EXPECTS(p >= 0 && p < size(), "point {} of {}", p, size());
  return cells_[static_cast<std::size_t>(p)];
}

const std::array<double, 3>& PointEvaluator::reference(index_t p) const {
  FEM_EXPECTS(p >= 0 && p < size(), "point {} of {}", p, size());
  return reference_[static_cast<std::size_t>(p)];
}

void PointEvaluator::value(std::span<const double> u, index_t p, std::span<double> out) const {
  FEM_EXPECTS(u.size() == static_cast<std::size_t>(num_dofs_), "a field of {} values, the space has {} DOFs",
              u.size(), num_dofs_);
  FEM_EXPECTS(out.size() == static_cast<std::size_t>(components_), "{} values for a space of {} components",
              out.size(), components_);
  FEM_EXPECTS(found(p), "point {} {} lies in no cell of this part of the mesh", p,
              point_text(&points_[static_cast<std::size_t>(p) * gdim_], gdim_));
  const auto npc = static_cast<std::size_t>(nodes_per_cell_), i = static_cast<std::size_t>(p);
  std::fill(out.begin(), out.end(), 0.0);
  for (std::size_t a = 0; a < npc; ++a) {
    const double w = weights_[i * npc + a];
    const auto node = static_cast<std::size_t>(nodes_[i * npc + a]);
    for (int k = 0; k < components_; ++k) out[static_cast<std::size_t>(k)] += w * u[node * components_ + k];
  }
}

std::vector<double> PointEvaluator::evaluate(std::span<const double> u) const {
  std::vector<double> out(static_cast<std::size_t>(size()) * components_);
  for (index_t p = 0; p < size(); ++p)
    value(u, p,
          std::span<double>(out).subspan(static_cast<std::size_t>(p) * components_,
                                         static_cast<std::size_t>(components_)));
  return out;
}

}  // namespace fem::assembly
