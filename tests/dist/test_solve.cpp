// Distributed solves give the serial solution: Poisson P1 and P2, elasticity, with MUMPS (LU and
// Cholesky), CG + GAMG and CG + BoomerAMG; GAMG's iterations do not grow with the mesh.
#include <gtest/gtest.h>

#include "problems.hpp"
#include "support.hpp"

namespace fem::test {
namespace {

const MPI_Comm comm = MPI_COMM_WORLD;

// max |u_dist − u_serial| / max |u_serial| by original node, on every rank.
template <class Problem>
double solve_and_compare(const std::string& spec, int degree, int components,
                         const dist::SolverOptions& options, Problem problem,
                         dist::DistSolveReport* report = nullptr) {
  Store store;
  const auto whole = whole_mesh(comm, spec);
  dist::distribute(comm, whole, "mesh/m", store);
  const assembly::FunctionSpace V("mesh/m", degree, components, store);
  const assembly::Assembler a(V);
  const auto map = dist::index_map(V);
  System s = problem(a, map.get());
  store.put("A", CsrMatrix(s.pattern, s.values));
  const auto solver = dist::solver(store, "A", map, options);
  std::vector<double> u(V.num_dofs());
  const auto r = solver->solve(s.b, dist::Sums::partial, u);
  if (report) *report = r;
  const auto got = gather_by_key(V, *map, u);
  double difference = 0;
  if (dist::rank(comm) == 0) {
    Store serial;
    serial.put("mesh/w", whole);
    const assembly::FunctionSpace W("mesh/w", degree, components, serial);
    const assembly::Assembler aw(W);
    difference = relative_difference(got, by_key(W, serial_solve(problem(aw, nullptr))));
  }
  return dist::max(comm, difference);
}

auto poisson_hot(std::vector<int> hot) {
  return [hot](const assembly::Assembler& a, const dist::IndexMap* map) { return poisson(a, map, hot); };
}
auto poisson_plain = [](const assembly::Assembler& a, const dist::IndexMap* map) { return poisson(a, map); };
auto elastic = [](const assembly::Assembler& a, const dist::IndexMap* map) { return elasticity(a, map); };

TEST(Solve, PoissonWithMumpsIsTheSerialSolution) {
  const dist::SolverOptions lu{.method = dist::Method::mumps};
  const dist::SolverOptions cholesky{.method = dist::Method::mumps, .spd = true};
  // plate_hole: the hole (tag 5) at 1, the rest of the boundary at 0.
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 1, lu, poisson_hot({5})), 1e-10);
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 1, cholesky, poisson_hot({5})), 1e-10);
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 2, 1, cholesky, poisson_hot({5})), 1e-10);
  EXPECT_LE(solve_and_compare("annulus_p2_v41.msh", 2, 1, lu, poisson_hot({1})), 1e-10);
  EXPECT_LE(solve_and_compare("gen:cube-tet4:6", 1, 1, cholesky, poisson_plain), 1e-10);
  EXPECT_LE(solve_and_compare("gen:square-quad4:9", 2, 1, lu, poisson_plain), 1e-10);
}

TEST(Solve, ElasticityIsTheSerialSolution) {
  const dist::SolverOptions cholesky{.method = dist::Method::mumps, .spd = true};
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 2, cholesky, elastic), 1e-10);
  EXPECT_LE(solve_and_compare("gen:cube-hex8:4", 1, 3, cholesky, elastic), 1e-10);
  // CG + GAMG with the rigid-body modes as near null space.
  const dist::SolverOptions gamg{.method = dist::Method::gamg, .spd = true, .rtol = 1e-12};
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 2, gamg, elastic), 1e-8);
}

TEST(Solve, AlgebraicMultigridMatchesTheDirectSolution) {
  for (auto method : {dist::Method::gamg, dist::Method::hypre}) {
    const dist::SolverOptions o{.method = method, .spd = true, .rtol = 1e-12};
    dist::DistSolveReport report;
    EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 1, o, poisson_hot({5}), &report), 1e-8)
        << dist::to_string(method);
    EXPECT_GT(report.iterations, 0);
    EXPECT_LE(report.relative_residual, 1e-10);
  }
}

TEST(Solve, GamgIterationsDoNotGrowWithTheMesh) {
  // CG + GAMG to rtol 1e-8 on the unit square, n = 64 and n = 512 (263k DOFs).
  int iterations[2] = {0, 0};
  int k = 0;
  for (int n : {64, 512}) {
    Store store;
    dist::distribute(comm, whole_mesh(comm, fmt::format("gen:square-tri3:{}", n)), "mesh/sq", store);
    const assembly::FunctionSpace V("mesh/sq", 1, 1, store);
    const assembly::Assembler a(V);
    const auto map = dist::index_map(V);
    System s = poisson(a, map.get());
    store.put("A", CsrMatrix(s.pattern, s.values));
    const auto solver =
        dist::solver(store, "A", map, {.method = dist::Method::gamg, .spd = true, .rtol = 1e-8});
    std::vector<double> u(V.num_dofs());
    iterations[k++] = solver->solve(s.b, dist::Sums::partial, u).iterations;
  }
  EXPECT_GT(iterations[0], 0);
  EXPECT_LE(iterations[1], 1.5 * iterations[0]) << iterations[0] << " -> " << iterations[1];
}

TEST(Solve, SingularSystemIsRefusedOnEveryRank) {
  // Pure Neumann: no Dirichlet condition, the constants are free. MUMPS either reports the
  // singularity or returns a solution whose residual check fails: never a silent answer.
  Store store;
  dist::distribute(comm, whole_mesh(comm, "gen:square-tri3:8"), "mesh/s", store);
  const assembly::FunctionSpace V("mesh/s", 1, 1, store);
  const assembly::Assembler a(V);
  const auto map = dist::index_map(V);
  store.put("A", a.matrix(assembly::Diffusion{}));
  std::vector<double> b(V.num_dofs(), 0.0), u(V.num_dofs());
  a.vector_into(assembly::Source{[](const double*) { return 1.0; }}, b);
  bool refused = false;
  try {
    const auto solver = dist::solver(store, "A", map, {.method = dist::Method::mumps});
    solver->solve(b, dist::Sums::partial, u);
  } catch (const Error&) {
    refused = true;
  }
  EXPECT_TRUE(dist::all(comm, refused));
}

}  // namespace
}  // namespace fem::test
