// Assembly: connectivity build (pattern + slot map + colouring), first assembly end to end
// (mesh in the store -> matrix values), and re-assembly (values only, into a view), on 1 and
// 2 threads, with DOF/s and nonzeros/s. Baselines in the same run: Eigen triplets +
// setFromTriplets for the same matrix, and a STREAM-style copy of the CSR values array (the
// memory floor of re-assembly).
//
// Cases: 0 = P1 Poisson on 2·1024² triangles (1.05M DOFs); 1 = P1 Poisson on 6·66³ tetrahedra
// (300k DOFs); 2 = P2 Poisson on 6·32³ tetrahedra (275k DOFs); 3 = P1 elasticity on 6·46³
// tetrahedra (311k DOFs).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/SparseCore>
#include <cstring>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/assembly/detail/kernels.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;

struct Case {
  const char* name;
  CellType cell;
  int n, degree, components;
};
const Case kCases[] = {{"P1 2D Poisson", CellType::tri3, 1024, 1, 1},
                       {"P1 3D Poisson", CellType::tet4, 66, 1, 1},
                       {"P2 3D Poisson", CellType::tet4, 32, 2, 1},
                       {"P1 3D elasticity", CellType::tet4, 46, 1, 3}};

std::shared_ptr<const fem::Mesh> mesh(int which) {
  static std::shared_ptr<const fem::Mesh> cache[4];
  if (!cache[which]) {
    const Case& c = kCases[which];
    cache[which] = std::make_shared<const fem::Mesh>(fem::cell_info(c.cell).dim == 2
                                                         ? fem::mesh::unit_square(c.cell, c.n)
                                                         : fem::mesh::unit_cube(c.cell, c.n));
  }
  return cache[which];
}

FunctionSpace space(int which) {
  const Case& c = kCases[which];
  return FunctionSpace(mesh(which), c.degree, c.components);
}

void assemble(const Assembler& a, int which, std::span<double> values) {
  if (kCases[which].components > 1)
    a.matrix_into(Elasticity{200.0, 0.3}, values);
  else
    a.matrix_into(Diffusion{}, values);
}

void counters(benchmark::State& state, const FunctionSpace& V, std::size_t nnz) {
  state.SetLabel(kCases[state.range(0)].name);
  state.counters["threads"] = static_cast<double>(state.range(1));
  state.counters["dofs"] = V.num_dofs();
  state.counters["nnz"] = static_cast<double>(nnz);
  state.counters["DOF/s"] = benchmark::Counter(V.num_dofs(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["nnz/s"] =
      benchmark::Counter(static_cast<double>(nnz), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: case, threads.
void BM_Connectivity(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const FunctionSpace V = space(static_cast<int>(state.range(0)));
  std::size_t nnz = 0;
  fem::bench::reset_peak_memory();
  for (auto _ : state) nnz = build_plan(V).pattern().nnz();
  counters(state, V, nnz);
  fem::bench::report_peak_memory(state);
}

// From a mesh in the store to assembled values: DOF map, plan and values, nothing cached.
void BM_FirstAssembly(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const int which = static_cast<int>(state.range(0));
  std::size_t nnz = 0;
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    fem::Store s;
    s.put("mesh", mesh(which));
    const Assembler a(FunctionSpace("mesh", kCases[which].degree, kCases[which].components, s));
    auto values = fem::prefaulted_vector<double>(a.pattern()->nnz());
    assemble(a, which, values);
    nnz = values.size();
  }
  counters(state, space(which), nnz);
  fem::bench::report_peak_memory(state);
}

// Values only, into a caller-provided view: the scatter through the cached slot map.
void BM_Reassembly(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const int which = static_cast<int>(state.range(0));
  const Assembler a(space(which));
  auto values = fem::prefaulted_vector<double>(a.pattern()->nnz());
  assemble(a, which, values);
  for (auto _ : state) assemble(a, which, values);
  counters(state, a.space(), values.size());
  state.counters["colors"] = a.plan().num_colors();
}

// The memory floor: read and write the values array once (a STREAM copy of its size).
void BM_ValuesCopy(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const Assembler a(space(static_cast<int>(state.range(0))));
  const std::size_t n = a.pattern()->nnz();
  auto src = fem::prefaulted_vector<double>(n), dst = fem::prefaulted_vector<double>(n);
  const auto nn = static_cast<std::int64_t>(n);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < nn; ++i) dst[i] = src[i] + 1.0;
    benchmark::DoNotOptimize(dst.data());
  }
  counters(state, a.space(), n);
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * n * sizeof(double), benchmark::Counter::kIsIterationInvariantRate);
}

struct Constant {
  double value;
  double operator()(fem::index_t, int, const double*) const { return value; }
};

// What a code without cached connectivity does: element matrices into triplets, then
// setFromTriplets. Same element kernel (P1 Poisson / elasticity through a user kernel).
void BM_EigenTriplets(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const FunctionSpace V = space(which);
  const Assembler a(V);
  const auto& d = V.dofmap();
  const int bs = V.components(), n = d.nodes_per_cell * bs;
  // Element matrices once, with the library (not timed): the baseline is the sparse assembly.
  std::vector<double> element(static_cast<std::size_t>(V.mesh().num_cells()) * n * n);
  {
    auto kernel = [&](const auto& cv, double* A) {
      if constexpr (std::decay_t<decltype(cv)>::bs == 1) {
        kernels::Diffusion<Constant>{{1.0}}(cv, A);
      } else {
        kernels::Elasticity<Constant, Constant>{{200.0}, {0.3}}(cv, A);
      }
      std::memcpy(&element[static_cast<std::size_t>(cv.cell) * n * n], A, sizeof(double) * n * n);
    };
    std::vector<double> scratch(a.pattern()->nnz());
    a.matrix_into(kernel, 2 * (V.degree() - 1), scratch);
  }
  std::size_t nnz = 0;
  for (auto _ : state) {
    std::vector<Eigen::Triplet<double, int>> triplets;
    triplets.reserve(element.size());
    for (fem::index_t c = 0; c < V.mesh().num_cells(); ++c)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          triplets.emplace_back(d.cell_nodes[c * d.nodes_per_cell + i / bs] * bs + i % bs,
                                d.cell_nodes[c * d.nodes_per_cell + j / bs] * bs + j % bs,
                                element[(static_cast<std::size_t>(c) * n + i) * n + j]);
    Eigen::SparseMatrix<double, Eigen::RowMajor> A(V.num_dofs(), V.num_dofs());
    A.setFromTriplets(triplets.begin(), triplets.end());
    nnz = static_cast<std::size_t>(A.nonZeros());
    benchmark::DoNotOptimize(A.valuePtr());
  }
  counters(state, V, nnz);
}

}  // namespace

#define CASES_AND_THREADS ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
BENCHMARK(BM_Connectivity) CASES_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FirstAssembly) CASES_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Reassembly) CASES_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ValuesCopy) CASES_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EigenTriplets)->ArgsProduct({{0, 1, 2, 3}, {1}})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
