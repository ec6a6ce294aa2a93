// Store throughput: put, replace, typed get (1 and 2 threads), get_or_compute hits, and the
// typed get made from inside a dlopen(RTLD_LOCAL)'ed kernel library.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/store.hpp"

namespace {

std::vector<std::string> make_keys(int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back("bench/key" + std::to_string(i));
  return keys;
}

// A ready value, so the benchmark times the store, not the allocation of the payload.
std::shared_ptr<const fem::Array<double>> payload() {
  static auto p = std::make_shared<const fem::Array<double>>(std::vector<double>(16, 1.0));
  return p;
}

void BM_PutNewKeys(benchmark::State& state) {
  const auto keys = make_keys(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    fem::Store s;
    state.ResumeTiming();
    for (const auto& k : keys) s.put(k, payload());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PutNewKeys)->Arg(100)->Arg(10000);

void BM_Replace(benchmark::State& state) {
  fem::Store s;
  s.put("A", payload());
  for (auto _ : state) benchmark::DoNotOptimize(s.put("A", payload()));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Replace);

fem::Store& shared_store(int entries) {
  static fem::Store s;
  static int filled = 0;
  if (filled != entries) {
    s.clear();
    for (const auto& k : make_keys(entries)) s.put(k, payload());
    filled = entries;
  }
  return s;
}

// Typed get among `range(0)` entries; run with 1 and 2 threads (concurrent readers).
void BM_Get(benchmark::State& state) {
  static fem::Store* s = nullptr;
  if (state.thread_index() == 0) s = &shared_store(static_cast<int>(state.range(0)));
  const std::string key = "bench/key" + std::to_string(state.range(0) / 2);
  for (auto _ : state) benchmark::DoNotOptimize(s->get<fem::Array<double>>(key));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Get)->Arg(100)->Arg(10000)->Threads(1)->Threads(2)->UseRealTime();

void BM_GetOrComputeHit(benchmark::State& state) {
  fem::Store s;
  const auto v = s.put("A", payload());
  auto make = [] { return fem::Array<double>(std::vector<double>(4, 2.0)); };
  for (auto _ : state)
    benchmark::DoNotOptimize(s.get_or_compute<fem::Array<double>>("A#derived", {{"A", v}}, make));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetOrComputeHit);

#ifdef FEM_BENCH_READER_PLUGIN
// The same typed get, issued from a kernel library loaded with dlopen(RTLD_NOW | RTLD_LOCAL).
void BM_GetAcrossDlopen(benchmark::State& state) {
  void* lib = dlopen(FEM_BENCH_READER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    state.SkipWithError(dlerror());
    return;
  }
  auto put = reinterpret_cast<unsigned long long (*)(const char*, double)>(dlsym(lib, "reader_put"));
  auto get = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "reader_get_only"));
  put("bench/plugin", 1.0);
  for (auto _ : state) benchmark::DoNotOptimize(get("bench/plugin"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetAcrossDlopen);
#endif

}  // namespace

BENCHMARK_MAIN();
