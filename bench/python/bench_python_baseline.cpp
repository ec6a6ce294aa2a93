// The C++ baseline of the Python module's per-call overhead (bench/python/bench_python.py runs
// it in the same run): P1 Poisson on gen:square-tri3:31 (1024 unknowns, Dirichlet all = 0),
// one cached solve through the store per iteration, and one solve with the factorization
// object, exactly what fem.solve("A", b) and fem.factorization("A").solve(b) do from Python.
#include <benchmark/benchmark.h>

#include <vector>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/solve/solve.hpp"

namespace {

std::vector<double> setup(fem::Store& store) {
  store.put("mesh", fem::mesh::generate("gen:square-tri3:31"));
  const fem::assembly::FunctionSpace V("mesh", 1, 1, store);
  const fem::assembly::Assembler a(V);
  std::vector<double> values(a.pattern()->nnz());
  a.matrix_into(fem::assembly::Diffusion{}, values);
  std::vector<double> b = a.vector(fem::assembly::Source{[](const double*) { return 1.0; }});
  const auto bc = fem::assembly::dirichlet_values(
      V, std::vector{fem::assembly::Dirichlet{fem::assembly::FacetSet::all(), nullptr}});
  fem::assembly::apply_dirichlet(bc, *a.pattern(), values, b);
  store.put("A", fem::CsrMatrix(a.pattern(), std::move(values)));
  return b;
}

void BM_StoreSolve(benchmark::State& state) {
  fem::Store store;
  const std::vector<double> b = setup(store);
  std::vector<double> x = fem::solve::solve(store, "A", b);
  for (auto _ : state) {
    x = fem::solve::solve(store, "A", b);  // a new vector per call, as from Python
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["solves_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_FactorizationSolve(benchmark::State& state) {
  fem::Store store;
  const std::vector<double> b = setup(store);
  const auto f = fem::solve::factorization(store, "A");
  for (auto _ : state) {
    std::vector<double> x(b.size());
    const auto report = f->solve(b, x);
    benchmark::DoNotOptimize(x.data());
    if (!report.ok()) state.SkipWithError("solve failed");
  }
  state.counters["solves_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_StoreSolve)->Name("square_1k/store_solve")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FactorizationSolve)->Name("square_1k/factorization_solve")->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
