// Out-of-line helpers of the assembly templates.
#include "fem/assembly/assemble.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fem/threads.hpp"

namespace fem::assembly::detail {

namespace {

// det J of `cell` at the reference point xi (geometry map: the mesh's cell type, gdim == tdim).
double determinant_at(const Mesh& mesh, index_t cell, const double* xi, std::vector<double>& psi,
                      std::vector<double>& dpsi) {
  const int dim = mesh.tdim(), n = mesh.nodes_per_cell();
  if (!lagrange_eval(mesh.cell_type(), xi, psi.data(), dpsi.data()))
    return std::numeric_limits<double>::quiet_NaN();
  double J[9] = {}, K[9];
  const auto nodes = mesh.cell(cell);
  for (int g = 0; g < n; ++g) {
    const auto X = mesh.node(nodes[g]);
    for (int d = 0; d < dim; ++d)
      for (int k = 0; k < dim; ++k) J[d * dim + k] += X[d] * dpsi[g * dim + k];
  }
  return dim == 1 ? invert<1>(J, K) : dim == 2 ? invert<2>(J, K) : invert<3>(J, K);
}

}  // namespace

// Called with the determinant the cell loop found (≤ 0, or NaN) at one of its quadrature
// points; the loop itself stays as it is. To say what can help, the cell's determinant is
// sampled again here, at every node of the cell and at the points of a rule exact to degree
// 2·order + 2 (tri6: 6 nodes + 12 points): negative at all of them (and at the loop's point) is
// a consistently reversed cell, which reorienting fixes; values of both signs beyond the size
// tolerance are a fold (a tangled cell: a curved cell whose edge node is on the wrong side,
// or a bow-tie quadrilateral); anything else has det J ≈ 0 somewhere: degenerate. Sampling is
// enough to name the class of a cell already known to be bad; fem::mesh::check bounds det J
// over the whole cell (Bernstein coefficients) for the ones no sample sees.
void throw_inverted_cell(const Mesh& mesh, index_t cell, double det) {
  const int dim = mesh.tdim(), nv = mesh.cell_info().num_vertices;
  const auto nodes = mesh.cell(cell);
  double h2 = 0;  // squared diameter of the vertices
  for (int a = 0; a < nv; ++a)
    for (int b = a + 1; b < nv; ++b) {
      double s = 0;
      for (int d = 0; d < mesh.gdim(); ++d) {
        const double t = mesh.node(nodes[a])[d] - mesh.node(nodes[b])[d];
        s += t * t;
      }
      h2 = std::max(h2, s);
    }
  const double size = std::sqrt(h2), tol = 1e-10 * std::pow(size, dim);
  double lo = det, hi = det;
  if (mesh.gdim() == dim && dim >= 1 && dim <= 3) {
    std::vector<double> psi(mesh.nodes_per_cell()), dpsi(static_cast<std::size_t>(mesh.nodes_per_cell()) * 3);
    auto sample = [&](const double* xi) {
      const double d = determinant_at(mesh, cell, xi, psi, dpsi);
      if (std::isnan(d)) return;
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    };
    for (const auto& xi : reference_nodes(mesh.cell_type())) sample(xi.data());
    const Quadrature& q = quadrature(mesh.cell_type(), 2 * mesh.cell_info().order + 2);
    for (int k = 0; k < q.size(); ++k) sample(&q.points[static_cast<std::size_t>(k) * dim]);
  }
  std::string what;
  if (size > 0 && hi < -tol) {
    what = fmt::format(
        "is inverted (Jacobian determinant {:.3g}, negative all over the cell: its nodes are in "
        "mirrored order): reorient the mesh (fem::mesh::reorient, or fem convert --reorient) "
        "before assembling",
        det);
  } else if (size > 0 && lo < -tol && hi > tol) {
    what = fmt::format(
        "is tangled (its Jacobian determinant changes sign inside the cell, from {:.3g} to {:.3g}: "
        "the cell folds over itself, e.g. a curved cell with an edge node on the wrong side, or a "
        "bow-tie quadrilateral): reorienting cannot fix it; move its nodes or re-mesh "
        "(fem::mesh::check lists tangled cells)",
        lo, hi);
  } else {
    what = fmt::format(
        "is degenerate (Jacobian determinant {:.3g}, about zero for a cell of size {:.3g}: "
        "collapsed, e.g. coinciding or collinear vertices): reorienting cannot fix it; remove or "
        "re-mesh the cell (fem::mesh::check lists degenerate cells)",
        det, size);
  }
  throw InvalidArgument(fmt::format("cell {} of mesh '{}' {}", cell, mesh.source(), what));
}

void parallel_zero(std::span<double> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  double* v = values.data();
  // Memory-bound: threads only for arrays of megabytes (2^18 values, about 0.1 ms each).
  const int threads = threads_for(values.size(), std::size_t{1} << 18);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) v[i] = 0.0;
}

}  // namespace fem::assembly::detail
