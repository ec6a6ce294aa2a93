// Connectivity builds: pattern + element-to-slot map through the hash table, against the
// sort+unique baseline that builds the same CSR and slot map; edge numbering and boundary
// facets. Host twin on 1 and 2 threads (and the device where a GPU is present).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "common/peak_memory.hpp"
#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using namespace fem::gpu;
using fem::CellType;
using fem::index_t;

// Case 0: unit square, 2·1024² P1 triangles (1.05M DOFs). Case 1: unit cube, 6·48³ P1 tets (118k DOFs).
// Case 2: the same cube with 3 components per node (elasticity, 353k DOFs). BM_BuildConnectivityShuffled:
// cases 0 and 1 with randomly renumbered nodes.
const fem::Mesh& mesh(int which) {
  static const fem::Mesh square = fem::mesh::unit_square(CellType::tri3, 1024);
  static const fem::Mesh cube = fem::mesh::unit_cube(CellType::tet4, 48);
  return which == 0 ? square : cube;
}
int block_size(int which) { return which == 2 ? 3 : 1; }

void label(benchmark::State& state, const fem::Mesh& m, int bs, std::size_t nnz) {
  state.counters["dofs"] = double(m.num_nodes()) * bs;
  state.counters["nnz"] = double(nnz);
  state.counters["nnz/s"] = benchmark::Counter(double(nnz), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["cells/s"] =
      benchmark::Counter(double(m.num_cells()), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: case, threads.
void BM_BuildConnectivity(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const auto& m = mesh(which);
  std::size_t nnz = 0;
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    auto c =
        build_connectivity(Executor::host(), m.cells(), m.nodes_per_cell(), m.num_nodes(), block_size(which));
    nnz = c.pattern->nnz();
    benchmark::DoNotOptimize(c.element_slots.data());
  }
  label(state, m, block_size(which), nnz);
  fem::bench::report_peak_memory(state);
}

// Cases 0 and 1 with randomly renumbered nodes: no locality left, the worst case of the
// row-local pair table (its first, tight table overflows and is retried at half the load).
void BM_BuildConnectivityShuffled(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  omp_set_num_threads(1);
  const auto& m = mesh(which);
  static std::vector<index_t> shuffled[2];
  if (shuffled[which].empty()) {
    std::vector<index_t> perm(m.num_nodes());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937(42));
    for (index_t v : m.cells()) shuffled[which].push_back(perm[v]);
  }
  std::size_t nnz = 0;
  for (auto _ : state) {
    auto c = build_connectivity(Executor::host(), shuffled[which], m.nodes_per_cell(), m.num_nodes(), 1);
    nnz = c.pattern->nnz();
    benchmark::DoNotOptimize(c.element_slots.data());
  }
  label(state, m, 1, nnz);
}

// Baseline: every (row, col) of every element matrix, sort + unique into CSR, then each element
// entry located by binary search in its row.
void BM_SortUniqueConnectivity(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const auto& m = mesh(which);
  const int bs = block_size(which), npc = m.nodes_per_cell(), n = npc * bs;
  std::size_t nnz = 0;
  for (auto _ : state) {
    std::vector<std::uint64_t> entries;
    entries.reserve(std::size_t(m.num_cells()) * n * n);
    for (index_t c = 0; c < m.num_cells(); ++c)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          entries.push_back(pack_pair(m.cell(c)[i / bs] * bs + i % bs, m.cell(c)[j / bs] * bs + j % bs));
    std::sort(entries.begin(), entries.end());
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
    const index_t rows = m.num_nodes() * bs;
    std::vector<index_t> off(rows + 1, 0), col(entries.size());
    for (std::size_t k = 0; k < entries.size(); ++k) {
      ++off[pair_first(entries[k]) + 1];
      col[k] = pair_second(entries[k]);
    }
    for (index_t r = 0; r < rows; ++r) off[r + 1] += off[r];
    std::vector<index_t> slots(std::size_t(m.num_cells()) * n * n);
    for (index_t c = 0, s = 0; c < m.num_cells(); ++c)
      for (int i = 0; i < n; ++i) {
        const index_t r = m.cell(c)[i / bs] * bs + i % bs;
        for (int j = 0; j < n; ++j) {
          const index_t cc = m.cell(c)[j / bs] * bs + j % bs;
          slots[s++] = static_cast<index_t>(
              std::lower_bound(col.begin() + off[r], col.begin() + off[r + 1], cc) - col.begin());
        }
      }
    nnz = col.size();
    benchmark::DoNotOptimize(slots.data());
  }
  label(state, m, bs, nnz);
}

void BM_NumberEdges(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const auto& m = mesh(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(number_edges(Executor::host(), m).num_edges);
  state.counters["cells/s"] =
      benchmark::Counter(double(m.num_cells()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_BoundaryFacets(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const auto& m = mesh(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(find_boundary_facets(Executor::host(), m).size());
  state.counters["cells/s"] =
      benchmark::Counter(double(m.num_cells()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DeviceBuildConnectivity(benchmark::State& state) {
  std::string reason;
  if (!cuda_available(&reason)) {
    state.SkipWithError(("no GPU: " + reason).c_str());
    return;
  }
  const int which = static_cast<int>(state.range(0));
  const auto& m = mesh(which);
  const auto exec = Executor::cuda();
  std::size_t nnz = 0;
  for (auto _ : state)
    nnz = build_connectivity(exec, m.cells(), m.nodes_per_cell(), m.num_nodes(), block_size(which))
              .pattern->nnz();
  label(state, m, block_size(which), nnz);
}

}  // namespace

BENCHMARK(BM_BuildConnectivity)
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BuildConnectivityShuffled)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SortUniqueConnectivity)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NumberEdges)->ArgsProduct({{0, 1}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BoundaryFacets)->ArgsProduct({{0, 1}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeviceBuildConnectivity)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
