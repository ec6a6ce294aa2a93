// The cost of a time step beyond its one cached solve (the products with M and K, the
// Dirichlet lift, the factorization lookup), one core: fem::time's steppers on a P1 square
// (2D heat; Crank–Nicolson's step has a product with K as well) with every boundary value fixed,
// against the solve alone in the same run. Counters: overhead = (step − solve) / solve.
//   taskset -c 1 ./build/bench/time/bench_time --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cmath>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"
#include "fem/time/time.hpp"

namespace {

using fem::index_t;
namespace ft = fem::time;

// Args: cells per side (1000: 1.0M DOFs), scheme (0 backward Euler, 1 Crank–Nicolson, 2 BDF2).
void BM_HeatStep(benchmark::State& state) {
  omp_set_num_threads(1);
  auto& s = fem::store();
  s.clear();
  const auto n = static_cast<index_t>(state.range(0));
  s.put("bt/mesh", fem::mesh::unit_square(fem::CellType::tri3, n));
  const fem::assembly::FunctionSpace V("bt/mesh", 1);
  const fem::assembly::Assembler a(V);
  s.put("bt/M", a.matrix(fem::assembly::Mass{}));
  s.put("bt/K", a.matrix(fem::assembly::Diffusion{}));
  ft::FirstOrder p;
  p.name = "bt";
  p.M = "bt/M";
  p.K = "bt/K";
  p.dirichlet.dofs = fem::assembly::dirichlet_values(
                         V, std::vector<fem::assembly::Dirichlet>{{fem::assembly::FacetSet::all(), nullptr}})
                         .dofs;
  ft::FirstOrderOptions o;
  o.scheme = state.range(1) == 0   ? ft::Scheme::backward_euler
             : state.range(1) == 1 ? ft::Scheme::crank_nicolson
                                   : ft::Scheme::bdf2;
  o.dt = 1e-3;
  fem::bench::reset_peak_memory();
  ft::FirstOrderStepper st(s, p, o, std::vector<double>(static_cast<std::size_t>(V.num_dofs()), 1.0));
  st.step();
  st.step();  // factorized (BDF2: both matrices)
  const double solve0 = st.report().solve_seconds;
  const auto solves0 = st.report().solves;
  double elapsed = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    st.step();
    elapsed += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double solve = st.report().solve_seconds - solve0;
  state.counters["dofs"] = static_cast<double>(V.num_dofs());
  state.counters["solve_ms"] = 1e3 * solve / static_cast<double>(st.report().solves - solves0);
  state.counters["overhead"] = (elapsed - solve) / solve;
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  fem::bench::report_peak_memory(state);
}

// The adaptive controller: Crank–Nicolson with step doubling (three solves per attempt, all on
// the ladder's cached factorizations) on the same problem with a source that varies in time, per
// accepted step, against BM_HeatStep's fixed step. Counters: solves and time per accepted step.
void BM_HeatAdaptive(benchmark::State& state) {
  omp_set_num_threads(1);
  auto& s = fem::store();
  s.clear();
  const auto n = static_cast<index_t>(state.range(0));
  s.put("ba/mesh", fem::mesh::unit_square(fem::CellType::tri3, n));
  const fem::assembly::FunctionSpace V("ba/mesh", 1);
  const fem::assembly::Assembler a(V);
  s.put("ba/M", a.matrix(fem::assembly::Mass{}));
  s.put("ba/K", a.matrix(fem::assembly::Diffusion{}));
  ft::FirstOrder p;
  p.name = "ba";
  p.M = "ba/M";
  p.K = "ba/K";
  p.dirichlet.dofs = fem::assembly::dirichlet_values(
                         V, std::vector<fem::assembly::Dirichlet>{{fem::assembly::FacetSet::all(), nullptr}})
                         .dofs;
  // f(t) = cos(t) times the mass row sums: a smooth, cheap source (no assembly in the timing).
  const auto M = s.get<fem::CsrMatrix>("ba/M");
  std::vector<double> ones(static_cast<std::size_t>(V.num_dofs()), 1.0), row(ones.size());
  M->multiply(ones, row);
  p.load = [&](double t, std::span<double> f) {
    const double c = std::cos(t);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] += c * row[i];
  };
  ft::FirstOrderOptions o;
  o.scheme = ft::Scheme::crank_nicolson;
  o.dt = 0.05;
  o.tolerance = 1e-4;
  ft::FirstOrderStepper st(s, p, o, std::vector<double>(ones.size(), 0.0));
  for (int i = 0; i < 3; ++i) st.step();  // the ladder's first factorizations
  const auto r0 = st.report();
  double elapsed = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    st.step();
    elapsed += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const auto& r = st.report();
  const double accepted = static_cast<double>(r.accepted - r0.accepted);
  state.counters["dofs"] = static_cast<double>(V.num_dofs());
  state.counters["solves/step"] = static_cast<double>(r.solves - r0.solves) / accepted;
  state.counters["ms/step"] = 1e3 * elapsed / accepted;
  state.counters["solve_ms"] =
      1e3 * (r.solve_seconds - r0.solve_seconds) / static_cast<double>(r.solves - r0.solves);
  state.counters["rejected"] = static_cast<double>(r.rejected - r0.rejected);
  state.counters["dt"] = st.dt();
  fem::bench::report_peak_memory(state);
}

}  // namespace

BENCHMARK(BM_HeatAdaptive)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(10);
BENCHMARK(BM_HeatStep)
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Args({1000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(20);

BENCHMARK_MAIN();
