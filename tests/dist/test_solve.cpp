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
double solve_and_compare(const std::string& spec, int degree, int components, const solve::Options& options,
                         Problem problem, solve::SolveReport* report = nullptr) {
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
  const solve::Options lu{.backend = solve::Backend::mumps};
  const solve::Options cholesky{.backend = solve::Backend::mumps, .spd = true};
  // plate_hole: the hole (tag 5) at 1, the rest of the boundary at 0.
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 1, lu, poisson_hot({5})), 1e-10);
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 1, cholesky, poisson_hot({5})), 1e-10);
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 2, 1, cholesky, poisson_hot({5})), 1e-10);
  EXPECT_LE(solve_and_compare("annulus_p2_v41.msh", 2, 1, lu, poisson_hot({1})), 1e-10);
  EXPECT_LE(solve_and_compare("gen:cube-tet4:6", 1, 1, cholesky, poisson_plain), 1e-10);
  EXPECT_LE(solve_and_compare("gen:square-quad4:9", 2, 1, lu, poisson_plain), 1e-10);
}

TEST(Solve, ElasticityIsTheSerialSolution) {
  const solve::Options cholesky{.backend = solve::Backend::mumps, .spd = true};
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 2, cholesky, elastic), 1e-10);
  EXPECT_LE(solve_and_compare("gen:cube-hex8:4", 1, 3, cholesky, elastic), 1e-10);
  // CG + GAMG with the rigid-body modes as near null space.
  const solve::Options gamg{.backend = solve::Backend::gamg, .spd = true, .rtol = 1e-12};
  EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 2, gamg, elastic), 1e-8);
}

TEST(Solve, AlgebraicMultigridMatchesTheDirectSolution) {
  for (auto method : {solve::Backend::gamg, solve::Backend::hypre}) {
    const solve::Options o{.backend = method, .spd = true, .rtol = 1e-12};
    solve::SolveReport report;
    EXPECT_LE(solve_and_compare("plate_hole_v41.msh", 1, 1, o, poisson_hot({5}), &report), 1e-8)
        << solve::to_string(method);
    EXPECT_GT(report.iterations, 0);
    EXPECT_LE(report.residual, 1e-10);
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
        dist::solver(store, "A", map, {.backend = solve::Backend::gamg, .spd = true, .rtol = 1e-8});
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
    const auto solver = dist::solver(store, "A", map, {.backend = solve::Backend::mumps});
    solver->solve(b, dist::Sums::partial, u);
  } catch (const Error&) {
    refused = true;
  }
  EXPECT_TRUE(dist::all(comm, refused));
}

}  // namespace
}  // namespace fem::test

namespace fem::test {
namespace {

TEST(Solve, OverlappingDirichletConditionsFollowTheSerialRule) {
  // Boundary facets tagged 1, 2, 1, 2, ... in turn: every boundary node joins a facet of each
  // tag, so wherever a partition interface reaches the boundary, two ranks hold different
  // conditions at one node. The rule is the serial one: a tag wins over `all` whatever the
  // order, two tags must agree where they meet, and a disagreement is refused on every rank.
  std::shared_ptr<const Mesh> whole;
  if (dist::rank(comm) == 0) {
    Mesh::Data d = mesh::generate("gen:square-tri3:20").data();
    for (std::size_t f = 0; f < d.facet_tags.size(); ++f) {  // alternate along each side
      const double* a = &d.coords[2 * static_cast<std::size_t>(d.facets[2 * f])];
      const double* b = &d.coords[2 * static_cast<std::size_t>(d.facets[2 * f + 1])];
      d.facet_tags[f] = 1 + static_cast<int>(std::lround(10 * (a[0] + b[0] + a[1] + b[1]))) % 2;
    }
    d.names.clear();
    whole = std::make_shared<const Mesh>(std::move(d));
  }
  Store store;
  dist::distribute(comm, whole, "mesh/t", store);
  const std::vector<assembly::Dirichlet> conditions{
      {assembly::FacetSet::tagged({1}), [](const double* x) { return 1 + x[0]; }, -1},
      {assembly::FacetSet::all(), [](const double*) { return 7.0; }, -1},
      {assembly::FacetSet::tagged({2}), [](const double* x) { return 1 + x[0]; }, -1}};
  for (int degree : {1, 2}) {
    const assembly::FunctionSpace V("mesh/t", degree, 1, store);
    const auto map = dist::index_map(V);
    std::vector<double> u(V.num_dofs(), -1.0);
    assembly::set_dirichlet(assembly::dirichlet_values(V, conditions, *map), u);
    const auto got = gather_by_key(V, *map, u);
    double difference = 0;
    if (dist::rank(comm) == 0) {
      Store serial;
      serial.put("mesh/w", whole);
      const assembly::FunctionSpace W("mesh/w", degree, 1, serial);
      std::vector<double> w(W.num_dofs(), -1.0);
      assembly::set_dirichlet(assembly::dirichlet_values(W, conditions), w);
      difference = relative_difference(got, by_key(W, w));
      const auto bc = assembly::dirichlet_values(W, conditions);
      for (std::size_t k = 0; k < bc.dofs.size(); ++k)  // `all` lost everywhere: every node is tagged
        EXPECT_EQ(bc.values[k], 1 + W.dofmap().coordinates[2 * static_cast<std::size_t>(bc.dofs[k])]);
    }
    EXPECT_EQ(dist::max(comm, difference), 0.0) << "degree " << degree;
  }
  const assembly::FunctionSpace V("mesh/t", 1, 1, store);
  const auto map = dist::index_map(V);
  // Two tags that disagree where they meet: refused on every rank, naming both.
  bool conflict = false;
  try {
    const std::vector<assembly::Dirichlet> disagree{
        {assembly::FacetSet::tagged({1}), [](const double*) { return 0.0; }, -1},
        {assembly::FacetSet::tagged({2}), [](const double* x) { return 1 + x[0]; }, -1}};
    assembly::dirichlet_values(V, disagree, *map);
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    conflict = m.find("tag 1") != std::string::npos && m.find("tag 2") != std::string::npos;
  }
  EXPECT_TRUE(dist::all(comm, conflict));
  // A tag of no facet of the whole mesh: an error on every rank, not a no-op where parts lack it.
  bool refused = false;
  try {
    assembly::dirichlet_values(
        V, std::vector{assembly::Dirichlet{assembly::FacetSet::tagged({9}), nullptr, -1}}, *map);
  } catch (const InvalidArgument& e) {
    refused = std::string(e.what()).find("tag 9") != std::string::npos;
  }
  EXPECT_TRUE(dist::all(comm, refused));
}

TEST(Solve, TransposeSolvesFromTheSameFactor) {
  // A nonsymmetric matrix (diffusion + convection): Aᵀx = b from the MUMPS factor of A equals the
  // serial transpose solve.
  Store store;
  const auto whole = whole_mesh(comm, "gen:square-tri3:16");
  dist::distribute(comm, whole, "mesh/c", store);
  auto system = [](const assembly::Assembler& a, const dist::IndexMap* map) {
    System s = poisson(a, map);
    std::vector<double> convection(s.pattern->nnz(), 0.0);
    auto kernel = [](const auto& cv, double* A) {  // ∫ (b·∇u) v, b = (1, 2)
      for (int q = 0; q < cv.num_points; ++q)
        for (int i = 0; i < cv.n; ++i)
          for (int j = 0; j < cv.n; ++j)
            A[i * cv.n + j] +=
                (cv.basis_grad(q, j)[0] + 2 * cv.basis_grad(q, j)[1]) * cv.basis(q, i) * cv.weight[q];
    };
    a.matrix_into(kernel, 2, convection);
    // Only the free rows: the constrained ones stay as apply_dirichlet left them.
    std::vector<char> constrained(a.space().num_dofs(), 0);
    for (index_t d : s.bc.dofs) constrained[d] = 1;
    const auto offsets = s.pattern->row_offsets();
    const auto cols = s.pattern->col_indices();
    for (index_t r = 0; r < s.pattern->rows(); ++r)
      for (index_t k = offsets[r]; k < offsets[r + 1]; ++k)
        if (!constrained[r] && !constrained[cols[k]]) s.values[k] += convection[k];
    return s;
  };
  const assembly::FunctionSpace V("mesh/c", 1, 1, store);
  const assembly::Assembler a(V);
  const auto map = dist::index_map(V);
  System s = system(a, map.get());
  store.put("C", CsrMatrix(s.pattern, s.values));
  const auto solver = dist::solver(store, "C", map, {.backend = solve::Backend::mumps});
  std::vector<double> x(V.num_dofs()), y(V.num_dofs());
  solver->solve(s.b, dist::Sums::partial, x);
  solver->solve_transpose(s.b, dist::Sums::partial, y);
  // Two right-hand sides at once (b and 2b): the single solve's answer, and twice it.
  std::vector<double> B(s.b), X(2 * s.b.size());
  for (double v : s.b) B.push_back(2 * v);
  solver->solve(B, dist::Sums::partial, X, 2);
  double block = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    block = std::max({block, std::abs(X[i] - x[i]), std::abs(X[x.size() + i] - 2 * x[i])});
  EXPECT_LE(dist::max(comm, block), 1e-12 * (1 + dist::max(comm, *std::max_element(x.begin(), x.end()))));
  const auto gx = gather_by_key(V, *map, x), gy = gather_by_key(V, *map, y);
  double dx = 0, dy = 0, asymmetry = 0;
  if (dist::rank(comm) == 0) {
    Store serial;
    serial.put("mesh/w", whole);
    const assembly::FunctionSpace W("mesh/w", 1, 1, serial);
    const assembly::Assembler aw(W);
    const System t = system(aw, nullptr);
    const CsrMatrix A(t.pattern, t.values);
    auto f = solve::factorize(A, {.backend = solve::Backend::umfpack});
    std::vector<double> sx(t.b.size()), sy(t.b.size());
    f->solve(t.b, sx);
    f->solve_transpose(t.b, sy);
    dx = relative_difference(gx, by_key(W, sx));
    dy = relative_difference(gy, by_key(W, sy));
    asymmetry = relative_difference(by_key(W, sx), by_key(W, sy));
  }
  EXPECT_LE(dist::max(comm, dx), 1e-10);
  EXPECT_LE(dist::max(comm, dy), 1e-10);
  EXPECT_GT(dist::max(comm, asymmetry), 1e-3);  // the transpose solve solved something else
}

}  // namespace
}  // namespace fem::test
