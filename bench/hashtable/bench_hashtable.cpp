// Hash table throughput (keys/s): insert, insert_unique and find at load 0.25, 0.5 and 0.75 on
// uniform random keys and on the (row, col) stream of a 3D P1 mesh, host twin on 1 and 2
// threads, with std::unordered_map and sort+unique baselines in the same run. On a machine with
// a GPU the same cases run on the device too, with effective bandwidth against the card's peak.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "common/peak_memory.hpp"
#include "fem/c_api.h"
#include "fem/gpu/c_api.h"
#include "fem/gpu/hash_table.hpp"
#include "fem/gpu/table.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"

namespace {

using namespace fem::gpu;
constexpr std::size_t kCapacity = std::size_t{1} << 24;  // 16.8M slots

const std::vector<std::uint64_t>& random_keys() {
  static const auto keys = [] {
    std::mt19937_64 rng(42);
    std::vector<std::uint64_t> k(kCapacity * 3 / 4);
    for (auto& x : k) x = rng() >> 1;  // below the reserved all-ones key, duplicates negligible
    return k;
  }();
  return keys;
}

// The (row, col) pairs of the P1 element matrices of ~2M tetrahedra.
const std::vector<std::uint64_t>& mesh_stream() {
  static const auto keys = [] {
    const auto m = fem::mesh::unit_cube(fem::CellType::tet4, 70);
    std::vector<std::uint64_t> k;
    k.reserve(static_cast<std::size_t>(m.num_cells()) * 16);
    for (fem::index_t c = 0; c < m.num_cells(); ++c)
      for (auto a : m.cell(c))
        for (auto b : m.cell(c)) k.push_back(pack_pair(a, b));
    return k;
  }();
  return keys;
}

std::span<const std::uint64_t> keys_at_load(int load_percent) {
  return std::span(random_keys()).first(kCapacity * load_percent / 100);
}

// A table of exactly kCapacity slots that neither grows nor rebuilds at the benchmarked load.
HashTable64x32::Options fixed_capacity() {
  HashTable64x32::Options o;
  o.max_load = 0.8;
  o.max_probe = 1u << 30;
  return o;
}
constexpr std::size_t kSizedFor = kCapacity * 8 / 10;

void set_threads(benchmark::State& state, int arg) {
  omp_set_num_threads(static_cast<int>(state.range(arg)));
  state.counters["threads"] = static_cast<double>(state.range(arg));
}

// Args: load percent, threads.
void BM_Insert(benchmark::State& state) {
  set_threads(state, 1);
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  std::vector<std::uint32_t> values(keys.size(), 1);
  HashTable64x32 table(Executor::host(), kSizedFor, fixed_capacity());
  for (auto _ : state) {
    state.PauseTiming();
    table.clear();
    state.ResumeTiming();
    table.insert(keys, values);
  }
  state.counters["load"] = table.load_factor();
  state.counters["max_probe"] = table.max_probe_length();
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_InsertUnique(benchmark::State& state) {
  set_threads(state, 1);
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  std::vector<std::uint32_t> ids(keys.size());
  HashTable64x32 table(Executor::host(), kSizedFor, fixed_capacity());
  for (auto _ : state) {
    state.PauseTiming();
    table.clear();
    state.ResumeTiming();
    table.insert_unique(keys, ids);
  }
  state.counters["load"] = table.load_factor();
  state.counters["max_probe"] = table.max_probe_length();
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_Find(benchmark::State& state) {
  set_threads(state, 1);
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  std::vector<std::uint32_t> values(keys.size(), 1);
  HashTable64x32 table(Executor::host(), kSizedFor, fixed_capacity());
  table.insert(keys, values);
  for (auto _ : state) table.find(keys, values);
  state.counters["load"] = table.load_factor();
  state.counters["max_probe"] = table.max_probe_length();
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

// The op path (fem/gpu/c_api.h): the same inserts and finds through the C ABI on a table in the
// store (int64 keys used in place, int32 values), against BM_Insert and BM_Find in the same run.
void make_op_table() {
  if (fem_table_create("bench/table", FEM_I64, FEM_I32, static_cast<int64_t>(kSizedFor), 0.8,
                       FEM_DEVICE_HOST) != FEM_OK)
    throw std::runtime_error(fem_last_error());
}

void BM_OpInsert(benchmark::State& state) {
  set_threads(state, 1);
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  std::vector<std::int32_t> values(keys.size(), 1);
  for (auto _ : state) {
    state.PauseTiming();
    make_op_table();  // a fresh, empty table of the same capacity
    state.ResumeTiming();
    if (fem_table_insert("bench/table", keys.data(), values.data(), static_cast<int64_t>(keys.size())) !=
        FEM_OK)
      state.SkipWithError(fem_last_error());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_OpFind(benchmark::State& state) {
  set_threads(state, 1);
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  std::vector<std::int32_t> values(keys.size(), 1);
  std::vector<std::uint8_t> found(keys.size());
  make_op_table();
  fem_table_insert("bench/table", keys.data(), values.data(), static_cast<int64_t>(keys.size()));
  for (auto _ : state)
    fem_table_find("bench/table", keys.data(), values.data(), found.data(),
                   static_cast<int64_t>(keys.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_UnorderedMapInsert(benchmark::State& state) {
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::unordered_map<std::uint64_t, std::uint32_t> map;
    map.reserve(keys.size());
    for (auto k : keys) map.emplace(k, 1);
    benchmark::DoNotOptimize(map.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_SortUnique(benchmark::State& state) {
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::vector<std::uint64_t> v(keys.begin(), keys.end());
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    benchmark::DoNotOptimize(v.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

// The mesh's pair stream: 16 pairs per tetrahedron, each unique pair seen ~4-6 times.
void BM_MeshStreamInsertUnique(benchmark::State& state) {
  set_threads(state, 0);
  const auto& keys = mesh_stream();
  std::vector<std::uint32_t> ids(keys.size());
  fem::bench::reset_peak_memory();
  std::size_t unique = 0;
  for (auto _ : state) {
    HashTable64x32 table(Executor::host(), keys.size() / 4);
    table.insert_unique(keys, ids);
    unique = table.size();
  }
  state.counters["unique"] = static_cast<double>(unique);
  fem::bench::report_peak_memory(state);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_MeshStreamInsert(benchmark::State& state) {
  set_threads(state, 0);
  const auto& keys = mesh_stream();
  std::vector<std::uint32_t> values(keys.size(), 1);
  for (auto _ : state) {
    HashTable64x32 table(Executor::host(), keys.size() / 4);
    table.insert(keys, values);
    benchmark::DoNotOptimize(table.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_MeshStreamSortUnique(benchmark::State& state) {
  const auto& keys = mesh_stream();
  for (auto _ : state) {
    std::vector<std::uint64_t> v(keys.begin(), keys.end());
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    benchmark::DoNotOptimize(v.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_MeshStreamUnorderedMap(benchmark::State& state) {
  const auto& keys = mesh_stream();
  for (auto _ : state) {
    std::unordered_map<std::uint64_t, std::uint32_t> map;
    map.reserve(keys.size() / 4);
    for (auto k : keys) map.emplace(k, static_cast<std::uint32_t>(map.size()));
    benchmark::DoNotOptimize(map.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

// --- device ------------------------------------------------------------------------------------

// Args: load percent. Keys already on the device; stream-ordered calls, one sync per iteration.
template <int Op>
void BM_Device(benchmark::State& state) {
  std::string reason;
  if (!cuda_available(&reason)) {
    state.SkipWithError(("no GPU: " + reason).c_str());
    return;
  }
  const auto exec = Executor::cuda();
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  DeviceBuffer<std::uint64_t> d_keys(exec, keys.size());
  DeviceBuffer<std::uint32_t> d_values(exec, keys.size());
  d_keys.upload(keys);
  exec.context().fill_bytes(d_values.data(), 0, d_values.bytes());
  HashTable64x32 table(exec, kSizedFor, fixed_capacity());
  if (Op == 2) table.insert_async(d_keys.data(), d_values.data(), keys.size());
  exec.context().synchronize();
  for (auto _ : state) {
    if (Op != 2) table.clear();
    if (Op == 0) table.insert_async(d_keys.data(), d_values.data(), keys.size());
    if (Op == 1) table.insert_unique_async(d_keys.data(), d_values.data(), nullptr, keys.size());
    if (Op == 2) table.find_async(d_keys.data(), d_values.data(), nullptr, keys.size());
    exec.context().synchronize();
  }
  // Bytes a perfect kernel moves: read the key and the value array, touch one slot (key+value).
  const double bytes = double(keys.size()) * (8 + 4 + 8 + 4);
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_GB/s"] = exec.context().properties().memory_bandwidth_gbs;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

// The op path on the device: fem_table_insert / fem_table_find on a CUDA table with the arrays
// in device memory (taken in place, the keys checked there), against BM_DeviceInsert/50 and
// BM_DeviceFind/50 in the same run. Args: load percent.
template <int Op>
void BM_DeviceOp(benchmark::State& state) {
  std::string reason;
  if (!cuda_available(&reason)) {
    state.SkipWithError(("no GPU: " + reason).c_str());
    return;
  }
  const auto keys = keys_at_load(static_cast<int>(state.range(0)));
  const auto n = static_cast<int64_t>(keys.size());
  auto make = [] {
    if (fem_table_create("bench/device", FEM_I64, FEM_I32, static_cast<int64_t>(kSizedFor), 0.8,
                         FEM_DEVICE_CUDA) != FEM_OK)
      throw std::runtime_error(fem_last_error());
    return fem::store().get<fem::gpu::Table>("bench/device")->executor();
  };
  const auto exec = make();
  DeviceBuffer<std::uint64_t> d_keys(exec, keys.size());
  DeviceBuffer<std::uint32_t> d_values(exec, keys.size());
  d_keys.upload(keys);
  exec.context().fill_bytes(d_values.data(), 0, d_values.bytes());
  exec.context().synchronize();
  if (Op == 2) fem_table_insert("bench/device", d_keys.data(), d_values.data(), n);
  for (auto _ : state) {
    if (Op == 0) {
      state.PauseTiming();
      make();  // a fresh, empty table of the same capacity
      state.ResumeTiming();
    }
    const int rc = Op == 0 ? fem_table_insert("bench/device", d_keys.data(), d_values.data(), n)
                           : fem_table_find("bench/device", d_keys.data(), d_values.data(), nullptr, n);
    if (rc != FEM_OK) state.SkipWithError(fem_last_error());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

}  // namespace

#define LOADS_AND_THREADS \
  ->Args({25, 1})->Args({50, 1})->Args({75, 1})->Args({25, 2})->Args({50, 2})->Args({75, 2})
BENCHMARK(BM_Insert) LOADS_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_InsertUnique) LOADS_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Find) LOADS_AND_THREADS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpInsert)->Args({50, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpFind)->Args({50, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_UnorderedMapInsert)->Arg(25)->Arg(50)->Arg(75)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SortUnique)->Arg(25)->Arg(50)->Arg(75)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MeshStreamInsert)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MeshStreamInsertUnique)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MeshStreamSortUnique)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MeshStreamUnorderedMap)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Device, 0)->Name("BM_DeviceInsert")->Arg(25)->Arg(50)->Arg(75)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Device, 1)->Name("BM_DeviceInsertUnique")->Arg(25)->Arg(50)->Arg(75)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Device, 2)->Name("BM_DeviceFind")->Arg(25)->Arg(50)->Arg(75)->UseRealTime();
BENCHMARK_TEMPLATE(BM_DeviceOp, 0)->Name("BM_DeviceOpInsert")->Arg(50)->UseRealTime();
BENCHMARK_TEMPLATE(BM_DeviceOp, 2)->Name("BM_DeviceOpFind")->Arg(50)->UseRealTime();

BENCHMARK_MAIN();
