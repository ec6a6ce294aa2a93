// The volumetric locking indicator (locking.hpp: the derivation and the thresholds).
#include "fem/assembly/locking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fem/error.hpp"

namespace fem::assembly {

std::string Locking::warning() const {
  if (!locks) return {};
  return fmt::format(
      "volumetric locking: a nearly incompressible material (lambda/mu = {:.3g}) with a degree-{} "
      "displacement on cells of size h/L = {:.3g} (indicator (lambda/mu)(h/L)^2 = {:.3g} > {:g}): the "
      "displacement is too stiff, and refining helps only slowly; use the mixed u-p formulation "
      "(Taylor-Hood: "
      "--formulation up), or a degree-2 space (P2/Q2: --order 2)",
      lambda_over_mu, degree, h_over_L, indicator, kIndicator);
}

Locking locking(const FunctionSpace& V, const Elasticity& material, const Layout& layout) {
  const Mesh& mesh = V.mesh();
  const int gdim = mesh.gdim(), nv = mesh.cell_info().num_vertices;
  const auto coords = mesh.coords();
  const auto tags = mesh.cell_tags();
  const Coefficient nu = material.poisson.resolved(mesh, "Poisson's ratio");
  const bool plane_stress = material.plane == Elasticity::Plane::stress && mesh.tdim() == 2;
  double ratio = 0, h = 0;
  std::vector<double> high(static_cast<std::size_t>(gdim), -std::numeric_limits<double>::infinity()),
      low = high;  // low holds −min
  std::vector<double> centre(static_cast<std::size_t>(gdim));
  for (index_t c = 0; c < mesh.num_cells(); ++c) {
    const auto cell = mesh.cell(c);
    std::fill(centre.begin(), centre.end(), 0.0);
    for (int i = 0; i < nv; ++i) {
      const double* xi = coords.data() + static_cast<std::size_t>(cell[i]) * gdim;
      for (int d = 0; d < gdim; ++d) centre[d] += xi[d] / nv;
      for (int j = 0; j < i; ++j) {  // the longest edge (diagonal of a quad or hex: its diameter)
        const double* xj = coords.data() + static_cast<std::size_t>(cell[j]) * gdim;
        double s = 0;
        for (int d = 0; d < gdim; ++d) s += (xi[d] - xj[d]) * (xi[d] - xj[d]);
        h = std::max(h, std::sqrt(s));
      }
    }
    const double v = nu(c, tags.empty() ? 0 : tags[c], centre.data());
    // λ/μ = 2ν/(1 − 2ν); in plane stress λ*/μ = 2ν/(1 − ν). ν ≥ ½ is refused by assembly: infinite here.
    const double r = plane_stress ? 2 * v / (1 - v) : (v < 0.5 ? 2 * v / (1 - 2 * v) : HUGE_VAL);
    ratio = std::max(ratio, r);
  }
  for (std::size_t i = 0; i < coords.size(); ++i) {
    const auto d = i % static_cast<std::size_t>(gdim);
    high[d] = std::max(high[d], coords[i]);
    low[d] = std::max(low[d], -coords[i]);
  }
  const Processes& p = layout.processes();
  Locking out;
  out.degree = V.degree();
  out.lambda_over_mu = p.max(ratio);
  h = p.max(h);
  double diagonal = 0;
  for (int d = 0; d < gdim; ++d) {
    const double extent = p.max(high[d]) + p.max(low[d]);
    if (std::isfinite(extent)) diagonal = std::hypot(diagonal, extent);
  }
  out.h_over_L = diagonal > 0 ? h / diagonal : 0;
  out.indicator = out.lambda_over_mu * out.h_over_L * out.h_over_L;
  out.locks =
      out.degree == 1 && out.lambda_over_mu > Locking::kLambdaOverMu && out.indicator > Locking::kIndicator;
  return out;
}

}  // namespace fem::assembly
