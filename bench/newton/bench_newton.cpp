// Newton on 2D P1 problems at ≈250k and ≈1M DOFs: Bratu (λ = 6) and the nonlinear Poisson
// problem -div((1+u²)∇u) = f. Full Newton and lagged Newton (Lagging::adaptive(): one
// factorization reused while every iteration reduces ‖F‖ at least 3.3×) through the store and
// the solve cache, against the naive baseline of a fresh factorization with a fresh symbolic
// analysis every iteration. Counters: iterations, factorizations, seconds per iteration, DOF/s.
//
//   ./build/bench/newton/bench_newton --benchmark_filter=.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/newton/assembled.hpp"

namespace {

using namespace fem::assembly;
namespace nt = fem::newton;

enum Variant { full = 0, lagged = 1, naive = 2 };
enum Which { bratu_problem = 0, quasilinear_problem = 1 };

struct Setup {
  std::shared_ptr<const Assembler> assembler;
  DirichletValues bc;
  NonlinearForm form;
};

Setup make(int n, int which) {
  const std::string key = "bench/newton/" + std::to_string(n);
  if (!fem::store().contains(key)) fem::store().put(key, fem::mesh::unit_square(fem::CellType::tri3, n));
  const FunctionSpace V(key, 1);
  auto a = std::make_shared<const Assembler>(V);
  Function g = nullptr;
  NonlinearForm form;
  if (which == bratu_problem) {
    form = bratu(6.0);
  } else {  // u = 1 + x + 2y on the boundary, f = -10 - 10x - 20y
    g = [](const double* x) { return 1 + x[0] + 2 * x[1]; };
    form = quasilinear([](double u) { return 1 + u * u; }, [](double u) { return 2 * u; },
                       [](const double* x) { return -10 - 10 * x[0] - 20 * x[1]; });
  }
  return {a, dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), g}}), std::move(form)};
}

// Full Newton with a new factorization object (analysis + factorization) every iteration.
int naive_newton(const nt::Problem& p, std::span<double> u, double rtol) {
  std::vector<double> F(u.size()), du(u.size());
  p.residual(u, F);
  const auto norm = [](std::span<const double> v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
  };
  const double f0 = norm(F);
  int it = 0;
  for (; it < 50 && norm(F) > rtol * f0; ++it) {
    const auto factors = fem::solve::factorize(p.jacobian(u));
    factors->solve(F, du);
    for (std::size_t i = 0; i < u.size(); ++i) u[i] -= du[i];
    p.residual(u, F);
  }
  return it;
}

// Args: n (cells per side), problem, variant.
void BM_Newton(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int which = static_cast<int>(state.range(1));
  const auto variant = static_cast<Variant>(state.range(2));
  const Setup s = make(n, which);
  const std::size_t ndofs = s.assembler->space().num_dofs();
  auto& store = fem::store();
  nt::Options o;
  o.rtol = 1e-9;
  o.atol = 0;
  if (variant == lagged) o.lagging = nt::Lagging::adaptive();
  int iterations = 0;
  std::int64_t factorizations = 0, symbolic = 0;
  nt::Timings phases;  // of the last repetition (Newton's own split; not for the naive loop)
  double seconds = 0;  // of the last repetition
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> u(ndofs, 0.0);
    set_dirichlet(s.bc, u);
    const auto problem = nt::assembled_problem(s.assembler, s.form, s.bc, "bench/newton");
    const auto f0 = store.counter("solve.factorizations"), s0 = store.counter("solve.symbolic_analyses");
    if (variant == naive) {
      iterations = naive_newton(problem, u, o.rtol);
      factorizations = iterations;
      symbolic = iterations;
    } else {
      const auto r = nt::solve(problem, u, o);
      if (!r.converged) state.SkipWithError(std::string(nt::to_string(r.reason)).c_str());
      iterations = r.iterations;
      phases = r.timings;
      factorizations = store.counter("solve.factorizations") - f0;
      symbolic = store.counter("solve.symbolic_analyses") - s0;
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    store.erase("bench/newton/J");  // the next repetition starts cold, like a new run
  }
  static const char* names[] = {"full Newton", "lagged Newton (adaptive)",
                                "naive (fresh analysis per iteration)"};
  static const char* problems[] = {"Bratu 6", "quasilinear"};
  state.SetLabel(std::string(problems[which]) + ", " + names[variant]);
  state.counters["dofs"] = static_cast<double>(ndofs);
  state.counters["iterations"] = iterations;
  state.counters["factorizations"] = static_cast<double>(factorizations);
  state.counters["symbolic"] = static_cast<double>(symbolic);
  state.counters["s/iteration"] = seconds / std::max(iterations, 1);
  if (variant != naive) {
    state.counters["residual_s"] = phases.residual;
    state.counters["jacobian_s"] = phases.jacobian;
    state.counters["factorize_s"] = phases.factorization;
    state.counters["solve_s"] = phases.solve;
    state.counters["other_s"] = phases.other;
  }
  state.counters["DOF/s"] =
      benchmark::Counter(static_cast<double>(ndofs), benchmark::Counter::kIsIterationInvariantRate);
  fem::bench::report_peak_memory(state);
}

// One residual evaluation (values only) and one fused residual + Jacobian of the problem at a
// smooth u, through the assembled problem's callbacks: the assembly part of every iteration.
// Args: n (cells per side), problem, fused (0: residual only, 1: residual and Jacobian).
void BM_Residual(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int which = static_cast<int>(state.range(1));
  const bool fused = state.range(2) != 0;
  const Setup s = make(n, which);
  const std::size_t ndofs = s.assembler->space().num_dofs();
  const auto problem = nt::assembled_problem(s.assembler, s.form, s.bc, "bench/newton/residual");
  std::vector<double> u(ndofs), F(ndofs);
  for (std::size_t i = 0; i < ndofs; ++i) u[i] = 0.5 * std::sin(0.001 * static_cast<double>(i));
  set_dirichlet(s.bc, u);
  for (auto _ : state) {
    if (fused)
      benchmark::DoNotOptimize(problem.residual_and_jacobian(u, F).values().data());
    else
      problem.residual(u, F);
    benchmark::DoNotOptimize(F.data());
  }
  static const char* problems[] = {"Bratu 6", "quasilinear"};
  state.SetLabel(std::string(problems[which]) + (fused ? ", residual + Jacobian" : ", residual"));
  state.counters["dofs"] = static_cast<double>(ndofs);
  state.counters["cells/s"] = benchmark::Counter(static_cast<double>(s.assembler->space().mesh().num_cells()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Residual)
    ->ArgsProduct({{512, 1024}, {bratu_problem, quasilinear_problem}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_Newton)
    ->ArgsProduct({{512, 1024}, {bratu_problem, quasilinear_problem}, {full, lagged, naive}})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
