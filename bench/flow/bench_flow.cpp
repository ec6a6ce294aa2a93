// The time per step of the incremental pressure-correction scheme (libfem_flow) on the DFG flow
// past a cylinder (meshes/dfg_cylinder_v41.msh, benchmark 2D-2: U_max = 1.5, ν = 10⁻³), one core:
// its three matrices factorized once for the run, against the same scheme refactorizing them
// every step (each republished as a new version: the numeric factorizations a semi-implicit
// convection or a solver without a factorization cache pays), in the same run. Time: per step;
// counters: the factorizations per step, DOFs, peak memory.
//   taskset -c 1 ./build/bench/flow/bench_flow --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <memory>

#include "common/peak_memory.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/flow/flow.hpp"
#include "fem/mesh/read.hpp"
#include "fem/store.hpp"

namespace {

using fem::index_t;
namespace fa = fem::assembly;

// Arg: 1 refactorizes every step (the baseline), 0 factorizes once.
void BM_ProjectionStep(benchmark::State& state) {
  omp_set_num_threads(1);
  auto& s = fem::store();
  s.clear();
  const bool refactorize = state.range(0) != 0;
  s.put("dfg", fem::mesh::read(FEM_MESHES_DIR "/dfg_cylinder_v41.msh"));
  fem::bench::reset_peak_memory();
  auto W = std::make_shared<const fa::MixedSpace>("dfg");
  const auto mesh = s.get<fem::Mesh>("dfg");
  const auto tag = [&](const char* name) { return mesh->resolve_tag(name, 1); };
  const fa::Function zero = [](const double*) { return 0.0; };
  const fa::Function inflow = [](const double* x) { return 4 * 1.5 * x[1] * (0.41 - x[1]) / (0.41 * 0.41); };
  std::vector<fa::Dirichlet> conditions = {
      {fa::FacetSet{{tag("walls"), tag("cylinder")}}, zero, 0},
      {fa::FacetSet{{tag("walls"), tag("cylinder"), tag("inlet")}}, zero, 1},
      {fa::FacetSet{{tag("inlet")}}, inflow, 0}};
  const auto bc = fa::dirichlet_values(W->velocity(), conditions);
  fem::flow::Projection p;
  p.W = W;
  p.viscosity = 1e-3;
  p.velocity.dofs = bc.dofs;
  p.velocity.values = [&](double, std::span<double> g) {
    std::copy(bc.values.begin(), bc.values.end(), g.begin());
  };
  p.pressure_dofs = fa::condition_values(W->pressure(), {fa::FacetSet{{tag("outlet")}}, nullptr}).dofs;
  std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
  fa::set_dirichlet(bc, w);
  fem::flow::ProjectionStepper stepper(s, p, 5e-4, w);
  for (int i = 0; i < 5; ++i) stepper.step();
  const auto factorizations = s.counter("solve.factorizations");
  const std::vector<std::string> keys = {"ipcs/tentative/0", "ipcs/correction/0", "ipcs/pressure"};
  for (auto _ : state) {
    if (refactorize)
      for (const auto& key : keys) s.put(key, fem::CsrMatrix(*s.get<fem::CsrMatrix>(key)));  // a new version
    stepper.step();
  }
  state.counters["dofs"] = static_cast<double>(W->num_dofs());
  state.counters["factorizations/step"] =
      static_cast<double>(s.counter("solve.factorizations") - factorizations) /
      static_cast<double>(state.iterations());
  fem::bench::report_peak_memory(state);
}
BENCHMARK(BM_ProjectionStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Which DOF numbering the factorization prefers: the DFG mesh's Navier–Stokes Jacobian (at a
// uniform state) with the mixed space's field-blocked numbering (arg 0), or interleaved node by
// node (u, v and, at vertices, p: arg 1), factorized by UMFPACK with AMD or METIS (arg 2: 0, 1).
// Counters: factor nonzeros.
void BM_NavierStokesFactorization(benchmark::State& state) {
  omp_set_num_threads(1);
  auto& s = fem::store();
  s.clear();
  s.put("dfg", fem::mesh::read(FEM_MESHES_DIR "/dfg_cylinder_v41.msh"));
  const fa::MixedSpace W("dfg");
  std::vector<double> w(static_cast<std::size_t>(W.num_dofs()), 0.1),
      values(static_cast<std::size_t>(W.pattern()->nnz()));
  fa::flow_into(W, fa::Flow::navier_stokes(1e-3), w, values, {});
  fem::CsrMatrix A(W.pattern(), values);
  if (state.range(0) == 1) {
    const int dim = W.dim();
    const index_t n = W.num_dofs(), nv = W.pressure_offset(), vertices = W.num_pressure_dofs();
    std::vector<index_t> to(static_cast<std::size_t>(n));
    index_t next = 0;
    for (index_t node = 0; node < nv / dim; ++node) {
      for (int k = 0; k < dim; ++k) to[static_cast<std::size_t>(node * dim + k)] = next++;
      if (node < vertices) to[static_cast<std::size_t>(nv + node)] = next++;
    }
    std::vector<std::vector<std::pair<index_t, double>>> rows(static_cast<std::size_t>(n));
    const auto& p = A.pattern();
    for (index_t r = 0; r < n; ++r)
      for (index_t e = p.row_offsets()[r]; e < p.row_offsets()[r + 1]; ++e)
        rows[static_cast<std::size_t>(to[static_cast<std::size_t>(r)])].push_back(
            {to[static_cast<std::size_t>(p.col_indices()[e])], A.values()[static_cast<std::size_t>(e)]});
    std::vector<index_t> offsets(1, 0), columns;
    std::vector<double> v;
    for (auto& row : rows) {
      std::sort(row.begin(), row.end());
      for (const auto& [c, x] : row) columns.push_back(c), v.push_back(x);
      offsets.push_back(static_cast<index_t>(columns.size()));
    }
    A = fem::CsrMatrix(std::make_shared<const fem::CsrPattern>(n, n, std::move(offsets), std::move(columns)),
                       std::move(v));
  }
  s.put("J", A);
  fem::solve::Options o;
  o.backend = fem::solve::Backend::umfpack;
  o.ordering = state.range(1) == 0 ? fem::solve::Ordering::amd : fem::solve::Ordering::metis;
  std::int64_t nnz = 0;
  for (auto _ : state) {
    auto solver = fem::solve::make_solver(o);
    solver->factorize(s, "J");
    nnz = solver->report().factor_nonzeros;
    s.put("J", fem::CsrMatrix(*s.get<fem::CsrMatrix>("J")));  // a new version: factorized again
  }
  state.counters["factor_nnz"] = static_cast<double>(nnz);
  state.counters["dofs"] = static_cast<double>(W.num_dofs());
}
BENCHMARK(BM_NavierStokesFactorization)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"interleaved", "metis"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
