// The fem driver's path, end to end: what `fem poisson MESH --source EXPR --dirichlet all=0`
// does between reading the mesh and factorizing, the same calls in the same order as
// apps/fem/poisson.cpp on one process and the CPU: the connectivity phase (DOF map, plan:
// pattern, slot map, colouring) and the assemble phase (matrix, load vector with the parsed
// source expression at every quadrature point, Dirichlet values on the whole boundary, their
// symmetric application, the matrix published by the null-space rule). The iteration time is those two
// phases, as the driver prints them; connectivity_s and assemble_s split it, and matrix_s,
// vector_s and dirichlet_s split the assemble phase.
//
//   taskset -c 1 build/bench/e2e/bench_e2e --benchmark_filter='/1$'
//   taskset -c 1 build/apps/fem poisson gen:square-tri3:1024 --source '2*pi^2*sin(pi*x)*sin(pi*y)'
//     --dirichlet all=0 --threads 1
//
// Cases: 0 = P1 on gen:square-tri3:1024 (2·1024² triangles, 1.05M DOFs) with
// f = 2π² sin(πx) sin(πy); 1 = P1 on gen:cube-tet4:48 (6·48³ tetrahedra, 118k DOFs) with
// f = 3π² sin(πx) sin(πy) sin(πz). Args: case, threads.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <memory>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/expression/expression.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"

namespace {

using namespace fem::assembly;
using Clock = std::chrono::steady_clock;

struct Case {
  const char* mesh;
  const char* source;
};
const Case kCases[] = {{"gen:square-tri3:1024", "2*pi^2*sin(pi*x)*sin(pi*y)"},
                       {"gen:cube-tet4:48", "3*pi^2*sin(pi*x)*sin(pi*y)*sin(pi*z)"}};

std::shared_ptr<const fem::Mesh> mesh(int which) {
  static std::shared_ptr<const fem::Mesh> cache[2];
  if (!cache[which])
    cache[which] = std::make_shared<const fem::Mesh>(fem::mesh::generate(kCases[which].mesh));
  return cache[which];
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void BM_PoissonDriverPath(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const int which = static_cast<int>(state.range(0));
  const auto m = mesh(which);
  // Parsed before the phases, as the driver checks every option before the work starts.
  const fem::expression::Expression source("--source", kCases[which].source, m->gdim());
  const fem::expression::Expression zero("--dirichlet all", "0", m->gdim());
  std::vector<Dirichlet> dirichlet(1);
  dirichlet[0].where = FacetSet::all();
  dirichlet[0].value = zero.function();
  const Coefficient k(1.0);  // no --coefficient

  double connectivity = 0, assemble = 0, matrix = 0, vector = 0, boundary = 0;
  fem::index_t dofs = 0;
  std::size_t constrained = 0;
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    fem::Store store;  // a fresh run: nothing cached
    store.put("mesh/square", m);
    const auto t0 = Clock::now();
    const FunctionSpace V("mesh/square", 1, 1, store);
    const Assembler assembler(V);
    const auto t1 = Clock::now();
    const auto pattern = assembler.pattern();
    std::vector<double> values = fem::prefaulted_vector<double>(pattern->nnz());
    std::vector<double> b(V.num_dofs(), 0.0);
    assembler.matrix_into(Diffusion{k}, values);
    const auto t2 = Clock::now();
    assembler.vector_into(Source{source.function(), source.batch_function()}, b);
    const auto t3 = Clock::now();
    const DirichletValues bc = dirichlet_values(V, dirichlet);
    apply_dirichlet(bc, *pattern, values, b);
    store.put("poisson/A", system_matrix(assembler, std::move(values), bc));  // the null-space rule
    const auto t4 = Clock::now();
    benchmark::DoNotOptimize(b.data());
    state.SetIterationTime(seconds(t0, t4));
    connectivity += seconds(t0, t1);
    assemble += seconds(t1, t4);
    matrix += seconds(t1, t2);
    vector += seconds(t2, t3);
    boundary += seconds(t3, t4);
    dofs = V.num_dofs();
    constrained = bc.dofs.size();
  }
  const double n = static_cast<double>(state.iterations());
  state.SetLabel(kCases[which].mesh);
  state.counters["threads"] = static_cast<double>(state.range(1));
  state.counters["dofs"] = dofs;
  state.counters["constrained"] = static_cast<double>(constrained);
  state.counters["connectivity_s"] = connectivity / n;
  state.counters["assemble_s"] = assemble / n;
  state.counters["matrix_s"] = matrix / n;       // the values allocated, then assembled
  state.counters["vector_s"] = vector / n;       // the load vector, the expression included
  state.counters["dirichlet_s"] = boundary / n;  // values on the boundary, applied, published
  state.counters["DOF/s"] = benchmark::Counter(dofs, benchmark::Counter::kIsIterationInvariantRate);
  fem::bench::report_peak_memory(state);
}

}  // namespace

BENCHMARK(BM_PoissonDriverPath)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

BENCHMARK_MAIN();
