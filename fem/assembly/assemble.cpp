// Out-of-line helpers of the assembly templates.
#include "fem/assembly/assemble.hpp"

#include <cstring>

namespace fem::assembly::detail {

void throw_inverted_cell(const Mesh& mesh, index_t cell, double det) {
  throw InvalidArgument(fmt::format("cell {} of mesh '{}' is {} (Jacobian determinant {:.3g}): "
                                    "reorient the mesh (fem::mesh::check) before assembling",
                                    cell, mesh.source(), det < 0 ? "inverted" : "degenerate", det));
}

void parallel_zero(std::span<double> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  double* v = values.data();
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) v[i] = 0.0;
  }
}

}  // namespace fem::assembly::detail
