// GPU assembly: pattern build, first assembly and re-assembly of 3D P1 Poisson on unit-cube tet
// meshes, on the host (the CPU Assembler, next to its device twins on the same mesh), the debug
// device (the device code path on the CPU: separate buffers, explicit copies, atomics) and CUDA
// (skipped with the reason when no GPU answers).
//
// Args: executor (0 host Assembler, 1 debug device, 2 CUDA), n (6·n³ tets: 32 → 197k,
// 64 → 1.57M, 96 → 5.3M, 120 → 10.4M cells). Counters: cells/s, and bytes/s (printed as G/s)
// for the bytes a re-assembly must move at least: coordinates, cells, tags and slot map read
// once, the values zeroed, then read and written once (3 × 8 bytes per nonzero); on CUDA also
// "of_peak", that rate over the card's peak memory bandwidth.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <map>
#include <memory>
#include <string>

#include "fem/assembly/device.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"

namespace {

using namespace fem;
using namespace fem::assembly;

std::shared_ptr<const Mesh> cube(int n) {
  static std::map<int, std::shared_ptr<const Mesh>> meshes;
  auto& m = meshes[n];
  if (!m) m = std::make_shared<const Mesh>(mesh::unit_cube(CellType::tet4, n));
  return m;
}

// The executor of case `which`, or nullptr with the reason (CUDA without a device).
std::unique_ptr<gpu::Executor> executor(int which, std::string& reason) {
  if (which == 0) return std::make_unique<gpu::Executor>(gpu::Executor::host());
  if (which == 1) return std::make_unique<gpu::Executor>(gpu::Executor::debug_device());
  if (!gpu::cuda_available(&reason)) return nullptr;
  return std::make_unique<gpu::Executor>(gpu::Executor::cuda());
}

double minimal_bytes(const Mesh& m, std::size_t nnz) {
  return double(m.num_nodes()) * 3 * 8 + double(m.num_cells()) * (4 * 4 + 4 + 16 * 4) + double(nnz) * 3 * 8;
}

void counters(benchmark::State& state, const Mesh& m, std::size_t nnz, const gpu::Executor* exec,
              bool bandwidth) {
  state.counters["cells"] = double(m.num_cells());
  state.counters["nnz"] = double(nnz);
  state.counters["cells/s"] =
      benchmark::Counter(double(m.num_cells()), benchmark::Counter::kIsIterationInvariantRate);
  if (!bandwidth) return;
  const double bytes = minimal_bytes(m, nnz);
  state.counters["bytes/s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  if (exec && exec->kind() == gpu::Executor::Kind::cuda) {
    const double peak = exec->context().properties().memory_bandwidth_gbs;
    if (peak > 0)
      state.counters["of_peak"] =
          benchmark::Counter(bytes / 1e9 / peak, benchmark::Counter::kIsIterationInvariantRate);
  }
}

#define FEM_BENCH_EXECUTOR(state, exec)                   \
  std::string reason_;                                    \
  auto exec = executor(int(state.range(0)), reason_);     \
  if (!exec) {                                            \
    state.SkipWithError(("skipped: " + reason_).c_str()); \
    return;                                               \
  }

// The connectivity (pattern, element→slot map, colouring) built on the executor.
void BM_PatternBuild(benchmark::State& state) {
  FEM_BENCH_EXECUTOR(state, exec);
  const auto m = cube(int(state.range(1)));
  Store store;
  store.put("mesh/cube", m);
  const FunctionSpace V("mesh/cube", 1, 1, store);
  std::size_t nnz = 0;
  for (auto _ : state) {
    const AssemblyPlan plan = build_plan(V, *exec);
    nnz = plan.pattern().nnz();
  }
  counters(state, *m, nnz, exec.get(), false);
}

// A fresh store: DOF map, connectivity, uploads and one assembly (into host values).
void BM_FirstAssembly(benchmark::State& state) {
  FEM_BENCH_EXECUTOR(state, exec);
  const auto m = cube(int(state.range(1)));
  std::size_t nnz = 0;
  for (auto _ : state) {
    Store store;
    store.put("mesh/cube", m);
    const FunctionSpace V("mesh/cube", 1, 1, store);
    if (state.range(0) == 0) {
      const Assembler a(V);
      benchmark::DoNotOptimize(a.matrix(Diffusion{}).values().data());
      nnz = a.pattern()->nnz();
    } else {
      const Assembler a(V, *exec);
      benchmark::DoNotOptimize(a.matrix(Diffusion{}).values().data());
      nnz = a.pattern()->nnz();
    }
  }
  counters(state, *m, nnz, exec.get(), false);
}

// Values only, left where they are assembled (host memory for the host Assembler, the
// executor's memory for the device ones).
void BM_Reassembly(benchmark::State& state) {
  FEM_BENCH_EXECUTOR(state, exec);
  const auto m = cube(int(state.range(1)));
  Store store;
  store.put("mesh/cube", m);
  const FunctionSpace V("mesh/cube", 1, 1, store);
  std::size_t nnz = 0;
  if (state.range(0) == 0) {
    const Assembler a(V);
    auto values = prefaulted_vector<double>(a.pattern()->nnz());
    a.matrix_into(Diffusion{}, values);
    for (auto _ : state) a.matrix_into(Diffusion{}, values);
    nnz = values.size();
  } else {
    const Assembler a(V, *exec, state.range(2) ? Assembler::Scatter::atomic : Assembler::Scatter::coloured);
    auto values = a.values_buffer();
    a.matrix_into_device(Diffusion{}, values);
    for (auto _ : state) a.matrix_into_device(Diffusion{}, values);
    nnz = values.size();
    state.counters["colours"] = a.device_mesh().num_colours();
  }
  counters(state, *m, nnz, exec.get(), true);
}

// The device re-assemblies again with the atomic scatter (third argument 1), against the
// coloured default: what determinism and bitwise symmetry cost.
void atomic_sizes(benchmark::internal::Benchmark* b) {
  for (int n : {32, 64}) b->Args({1, n, 1});
  for (int n : {64, 96, 120}) b->Args({2, n, 1});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// Device re-assembly copied back into host values for the CPU solver (the copy's cost on top).
void BM_ReassemblyToHost(benchmark::State& state) {
  FEM_BENCH_EXECUTOR(state, exec);
  const auto m = cube(int(state.range(1)));
  Store store;
  store.put("mesh/cube", m);
  const Assembler a(FunctionSpace("mesh/cube", 1, 1, store), *exec);
  auto values = prefaulted_vector<double>(a.pattern()->nnz());
  a.matrix_into(Diffusion{}, values);
  for (auto _ : state) a.matrix_into(Diffusion{}, values);
  counters(state, *m, values.size(), exec.get(), true);
}

// Host and debug device: 197k and 1.57M cells; CUDA: 1.57M, 5.3M and 10.4M cells.
void sizes(benchmark::internal::Benchmark* b) {
  for (int e : {0, 1})
    for (int n : {32, 64}) b->Args({e, n, 0});
  for (int n : {64, 96, 120}) b->Args({2, n, 0});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_PatternBuild)->Apply(sizes);
BENCHMARK(BM_FirstAssembly)->Apply(sizes)->Iterations(2);
BENCHMARK(BM_Reassembly)->Apply(sizes);
BENCHMARK(BM_Reassembly)->Apply(atomic_sizes);
BENCHMARK(BM_ReassemblyToHost)
    ->Args({1, 32})
    ->Args({1, 64})
    ->Args({2, 64})
    ->Args({2, 96})
    ->Args({2, 120})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
