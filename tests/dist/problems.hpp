// The linear problems the distributed tests solve, assembled the same way on the whole mesh
// (serial reference) and on a rank's part (the Dirichlet conditions synchronized across ranks).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fem/assembly/assembly.hpp"
#include "fem/dist/dist.hpp"
#include "fem/solve/solve.hpp"

namespace fem::test {

struct System {
  std::shared_ptr<const CsrPattern> pattern;
  std::vector<double> values, b;
  assembly::DirichletValues bc;
};

/// Applies the Dirichlet conditions to values and b; on a part (map given) agreed across ranks.
inline void constrain(System& s, const assembly::FunctionSpace& V,
                      const std::vector<assembly::Dirichlet>& bcs, const dist::IndexMap* map) {
  s.bc = map ? assembly::dirichlet_values(V, bcs, *map) : assembly::dirichlet_values(V, bcs);
  assembly::apply_dirichlet(s.bc, *s.pattern, s.values, s.b);
}

/// -div(k ∇u) = f, k = 1 + x² (a varying coefficient), u = 0 on the whole boundary and 1 on the
/// facets of `hot` (if not empty).
inline System poisson(const assembly::Assembler& a, const dist::IndexMap* map, std::vector<int> hot = {}) {
  System s;
  s.pattern = a.pattern();
  s.values.assign(s.pattern->nnz(), 0.0);
  const assembly::Coefficient k =
      assembly::Coefficient::function([](const double* x) { return 1 + x[0] * x[0]; });
  a.matrix_into(assembly::Diffusion{k}, s.values);
  s.b.assign(a.space().num_dofs(), 0.0);
  a.vector_into(assembly::Source{[](const double* x) { return 1 + std::sin(3 * x[0]) * x[1]; }}, s.b);
  std::vector<assembly::Dirichlet> bcs{{assembly::FacetSet::all(), nullptr, -1}};
  if (!hot.empty()) bcs.push_back({assembly::FacetSet::tagged(hot), [](const double*) { return 1.0; }, -1});
  constrain(s, a.space(), bcs, map);
  return s;
}

/// Linear elasticity (E = 1, ν = 0.3) under gravity, clamped on the facets of `clamped`
/// (the whole boundary when empty).
inline System elasticity(const assembly::Assembler& a, const dist::IndexMap* map,
                         std::vector<int> clamped = {}) {
  System s;
  s.pattern = a.pattern();
  s.values.assign(s.pattern->nnz(), 0.0);
  a.matrix_into(assembly::Elasticity{}, s.values);
  s.b.assign(a.space().num_dofs(), 0.0);
  const int dim = a.space().mesh().gdim();
  a.vector_into(assembly::VectorSource{[dim](const double* x, double* f) {
                  for (int d = 0; d < dim; ++d) f[d] = d == dim - 1 ? -1.0 : 0.1 * x[0];
                }},
                s.b);
  const auto where = clamped.empty() ? assembly::FacetSet::all() : assembly::FacetSet::tagged(clamped);
  constrain(s, a.space(), {{where, nullptr, -1}}, map);
  return s;
}

/// The serial solution of a system (CHOLMOD/UMFPACK through fem::solve).
inline std::vector<double> serial_solve(const System& s) {
  const CsrMatrix A(s.pattern, s.values);
  auto f = solve::factorize(A);
  std::vector<double> x(s.b.size());
  EXPECT_TRUE(f->solve(s.b, x).ok());
  return x;
}

}  // namespace fem::test
