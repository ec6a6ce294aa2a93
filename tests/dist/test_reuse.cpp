// Reuse across matrix versions, proved by counters on every rank: one COO preallocation and one
// MUMPS analysis per pattern, one numeric factorization per version (none when the values do not
// change), GAMG's interpolation built once; collective entries survive a tiny byte budget on one
// rank; an error on one rank is an error on all.
#include <gtest/gtest.h>

#include "problems.hpp"
#include "support.hpp"

namespace fem::test {
namespace {

const MPI_Comm comm = MPI_COMM_WORLD;

struct Events {
  std::int64_t symbolic = 0, numeric = 0, prolongators = 0;
  static Events now() {
    return {dist::petsc_event_count("MatCholFctrSym") + dist::petsc_event_count("MatLUFactorSym"),
            dist::petsc_event_count("MatCholFctrNum") + dist::petsc_event_count("MatLUFactorNum"),
            dist::petsc_event_count(" PCGAMGProl")};  // PETSc 3.18 indents the name
  }
  Events operator-(const Events& o) const {
    return {symbolic - o.symbolic, numeric - o.numeric, prolongators - o.prolongators};
  }
};

// Backward Euler for u' − div(k(t) ∇u) = 1, u = 0 on the boundary: (M + dt K(t)) uⁿ⁺¹ = M uⁿ + dt f.
// `varying`: k changes every step (a new matrix version per step), else one matrix for all steps.
struct Heat {
  int steps = 10;
  bool varying = false;
  solve::Options options{.backend = solve::Backend::mumps, .spd = true};
};

std::vector<double> run_heat(Store& store, const Heat& h, const assembly::Assembler& a,
                             std::shared_ptr<const dist::IndexMap> map) {
  const auto& V = a.space();
  const double dt = 0.01;
  std::vector<double> mass(a.pattern()->nnz()), stiffness(a.pattern()->nnz());
  a.matrix_into(assembly::Mass{}, mass);
  std::vector<double> u(V.num_dofs(), 0.0), f(V.num_dofs(), 0.0);
  a.vector_into(assembly::Source{[](const double*) { return 1.0; }}, f);
  const auto bc = assembly::dirichlet_values(
      V, std::vector{assembly::Dirichlet{assembly::FacetSet::all(), nullptr, -1}}, *map);
  std::shared_ptr<const dist::Solver> solver;
  for (int n = 0; n < h.steps; ++n) {
    // M uⁿ (consistent u; partial product of the local M) + dt f, partial.
    std::vector<double> b(V.num_dofs());
    CsrMatrix(a.pattern(), mass).multiply(u, b);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] += dt * f[i];
    std::vector<double> values(a.pattern()->nnz());
    if (n == 0 || h.varying) {
      const double k = 1 + (h.varying ? 0.1 * n : 0.0);
      a.matrix_into(assembly::Diffusion{k}, stiffness);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = mass[i] + dt * stiffness[i];
      std::vector<double> rhs = b;
      assembly::apply_dirichlet(bc, *a.pattern(), values, rhs);
      store.put("heat/A", CsrMatrix(a.pattern(), values));
      solver = dist::solver(store, "heat/A", map, h.options, std::move(solver));
      b = std::move(rhs);
    } else {
      // The matrix is unchanged: only the right-hand side's lifting (g = 0 here: zero rows).
      for (std::size_t k = 0; k < bc.dofs.size(); ++k) b[bc.dofs[k]] = 0;
    }
    solver->solve(b, dist::Sums::partial, u);
  }
  return u;
}

TEST(Reuse, HeatFactorizesOncePerVersionAndAnalyzesOnce) {
  for (bool varying : {false, true}) {
    Store store;
    dist::distribute(comm, whole_mesh(comm, "plate_hole_v41.msh"), "mesh/p", store);
    const assembly::FunctionSpace V("mesh/p", 1, 1, store);
    const assembly::Assembler a(V);
    const auto map = dist::index_map(V);
    const Events before = Events::now();
    Heat h;
    h.varying = varying;
    const auto u = run_heat(store, h, a, map);
    const Events used = Events::now() - before;
    EXPECT_EQ(used.symbolic, 1) << "varying " << varying;
    EXPECT_EQ(used.numeric, varying ? h.steps : 1) << "varying " << varying;
    EXPECT_EQ(store.counter("dist.coo_preallocations"), 1);
    EXPECT_EQ(store.counter("dist.coo_fills"), varying ? h.steps : 1);
    EXPECT_EQ(store.counter("dist.solver_setups"), 1);
    EXPECT_EQ(store.counter("assembly.pattern_builds"), 1);  // the connectivity of the part, once
    // The solution is heated from 0 towards the steady state: positive inside.
    double top = 0;
    for (double x : u) top = std::max(top, x);
    EXPECT_GT(dist::max(comm, top), 0.0);
  }
}

TEST(Reuse, GamgBuildsItsInterpolationOnceOverTheTimeSteps) {
  // PCGAMGProl runs once per level when the hierarchy is built: one time step and ten time
  // steps with new values each must run it equally often.
  std::int64_t prolongators[2] = {0, 0};
  for (int steps : {1, 10}) {
    Store store;
    dist::distribute(comm, whole_mesh(comm, "gen:square-tri3:48"), "mesh/g", store);
    const assembly::FunctionSpace V("mesh/g", 1, 1, store);
    const assembly::Assembler a(V);
    const auto map = dist::index_map(V);
    const Events before = Events::now();
    Heat h;
    h.varying = true;
    h.steps = steps;
    h.options = {.backend = solve::Backend::gamg, .spd = true, .rtol = 1e-10};
    run_heat(store, h, a, map);
    prolongators[steps > 1] = (Events::now() - before).prolongators;
    EXPECT_EQ(store.counter("dist.preconditioner_setups"), steps);  // coarse operators, smoothers per version
    EXPECT_EQ(store.counter("dist.solver_setups"), 1);
  }
  EXPECT_GT(prolongators[0], 0);
  EXPECT_EQ(prolongators[1], prolongators[0]);
}

TEST(Reuse, LaggedPreconditionerIsRefreshedWhenIterationsGrow) {
  Store store;
  dist::distribute(comm, whole_mesh(comm, "gen:square-tri3:32"), "mesh/l", store);
  const assembly::FunctionSpace V("mesh/l", 1, 1, store);
  const assembly::Assembler a(V);
  const auto map = dist::index_map(V);
  Heat h;
  h.varying = true;
  h.steps = 12;
  h.options = {.backend = solve::Backend::hypre, .spd = true, .rtol = 1e-10, .lag = true};
  const auto u = run_heat(store, h, a, map);
  // Same answer as a fresh preconditioner per step (the Krylov method corrects the lag).
  Store fresh;
  dist::distribute(comm, whole_mesh(comm, "gen:square-tri3:32"), "mesh/l", fresh);
  const assembly::FunctionSpace W("mesh/l", 1, 1, fresh);
  const assembly::Assembler b(W);
  Heat g = h;
  g.options.lag = false;
  const auto v = run_heat(fresh, g, b, dist::index_map(W));
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < u.size(); ++i)
    diff = std::max(diff, std::abs(u[i] - v[i])), scale = std::max(scale, std::abs(v[i]));
  EXPECT_LE(dist::max(comm, diff) / dist::max(comm, scale), 1e-7);
  EXPECT_GE(store.counter("dist.preconditioner_reuses"), 1);
  EXPECT_LT(store.counter("dist.preconditioner_setups"), h.steps);
}

TEST(Reuse, CollectiveEntriesSurviveATinyBudgetOnOneRank) {
  // Rank 1 (or the last rank) evicts everything it may; it must not free a factor alone (that
  // hangs MUMPS), and every rank must keep agreeing on hits and misses.
  Store store;
  if (dist::rank(comm) == dist::size(comm) - 1) store.set_byte_budget(1);
  dist::distribute(comm, whole_mesh(comm, "gen:square-tri3:24"), "mesh/e", store);
  const assembly::FunctionSpace V("mesh/e", 1, 1, store);
  const assembly::Assembler a(V);
  const auto map = dist::index_map(V);
  std::shared_ptr<const dist::Solver> solver;
  std::vector<double> u(V.num_dofs());
  for (int version = 0; version < 20; ++version) {
    System s = poisson(a, map.get());
    for (double& v : s.values) v *= 1 + 0.01 * version;
    store.put("E", CsrMatrix(s.pattern, s.values));
    if (dist::rank(comm) == 1)
      store.put(fmt::format("extra/{}", version), CsrMatrix(s.pattern, s.values), PutOptions{}.cache());
    // Every other version, drop our hold: the store's entry is then the only one.
    solver = dist::solver(store, "E", map, {.backend = solve::Backend::mumps, .spd = true},
                          version % 2 ? std::move(solver) : nullptr);
    solver->solve(s.b, dist::Sums::partial, u);
    EXPECT_TRUE(store.contains("E#factor/mumps/cholesky"));
  }
  EXPECT_EQ(dist::max(comm, store.counter("dist.solver_setups")),
            dist::sum(comm, store.counter("dist.solver_setups")) / dist::size(comm));
}

TEST(Collective, AnErrorOnOneRankIsAnErrorOnAll) {
  const int me = dist::rank(comm);
  std::string what;
  int failing = -1;
  try {
    dist::collective(comm, [&] {
      if (me == 1) throw ParseError("bad.msh", ParseError::Position::line, 7, "not a number");
    });
  } catch (const dist::RemoteError& e) {
    what = e.what(), failing = e.rank();
  } catch (const ParseError& e) {
    what = e.what(), failing = me;
  }
  EXPECT_EQ(failing, 1);
  EXPECT_NE(what.find("bad.msh"), std::string::npos) << what;
  EXPECT_NE(what.find("not a number"), std::string::npos) << what;
  // A numerical failure on one rank is a numerical failure on all (the drivers' exit code 3).
  bool numerical = false;
  try {
    dist::collective(comm, [&] {
      if (me == 1) throw NumericalError("singular");
    });
  } catch (const NumericalError& e) {
    numerical = std::string(e.what()) == "singular";
  }
  EXPECT_TRUE(dist::all(comm, numerical));
  // A bad mesh on rank 0 stops distribute() on every rank.
  bool refused = false;
  try {
    Store store;
    auto mesh =
        me == 0 ? std::make_shared<const Mesh>(mesh::generate("gen:square-tri3:1")) : nullptr;  // 2 cells
    dist::distribute(comm, mesh, "mesh/tiny", store);
    refused = dist::size(comm) <= 2;  // two cells cover two ranks
  } catch (const Error&) {
    refused = true;
  }
  EXPECT_TRUE(refused);
}

}  // namespace
}  // namespace fem::test
