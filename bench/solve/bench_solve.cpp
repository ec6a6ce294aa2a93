// Factorize-and-solve benchmarks: analyze, factorize, refactorize (same pattern) and solve per
// backend and ordering on 2D Poisson (1M DOFs), 3D Poisson (~104k DOFs) and 3D elasticity
// (~81k DOFs); the cache against the raw backend and a fresh compute() per solve; block solves.
// Heavy cases run one iteration each (2-core machine); rates are counters.
//   ./build-solve/bench/solve/bench_solve --benchmark_min_time=0.1
#include <benchmark/benchmark.h>

#include <chrono>
#include <fem/solve/solve.hpp>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include "common/peak_memory.hpp"

#ifdef FEM_BENCH_HAVE_CHOLMOD
#include <cholmod.h>
#endif

namespace {

using namespace fem;
using namespace fem::solve;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Kronecker product of the (2D or 3D) 5/7-point Laplacian with a dof × dof SPD block
// (identity for Poisson; I + 0.5·11ᵀ/3 for the elasticity-like vector operator).
CsrMatrix stencil(index_t m, int dim, int dof) {
  const index_t nodes = dim == 2 ? m * m : m * m * m;
  const index_t n = nodes * dof;
  std::vector<index_t> offsets{0}, cols;
  std::vector<double> values;
  cols.reserve(static_cast<std::size_t>(n) * (2 * dim + 1) * dof);
  values.reserve(cols.capacity());
  const index_t stride[3] = {1, m, m * m};
  for (index_t v = 0; v < nodes; ++v) {
    const index_t c[3] = {v % m, (v / m) % m, v / (m * m)};
    std::vector<std::pair<index_t, double>> nb;
    for (int d = dim - 1; d >= 0; --d)
      if (c[d] > 0) nb.emplace_back(v - stride[d], -1.0);
    nb.emplace_back(v, 2.0 * dim);
    for (int d = 0; d < dim; ++d)
      if (c[d] + 1 < m) nb.emplace_back(v + stride[d], -1.0);
    for (int a = 0; a < dof; ++a) {
      for (auto [w, l] : nb)
        for (int b = 0; b < dof; ++b) {
          const double block = (a == b ? 1.0 : 0.0) + (dof > 1 ? 0.5 / 3.0 : 0.0);
          cols.push_back(w * dof + b);
          values.push_back(l * block);
        }
      offsets.push_back(static_cast<index_t>(cols.size()));
    }
  }
  return CsrMatrix(std::make_shared<const CsrPattern>(n, n, std::move(offsets), std::move(cols)),
                   std::move(values));
}

struct Problem {
  const char* name;
  index_t m;
  int dim, dof;
};
const Problem problems[] = {{"poisson2d_1M", 1000, 2, 1},
                            {"poisson3d_104k", 47, 3, 1},
                            {"elasticity3d_81k", 30, 3, 3},
                            {"poisson3d_27k", 30, 3, 1}};

const CsrMatrix& matrix(int p) {
  static std::map<int, std::shared_ptr<const CsrMatrix>> cache;
  auto& slot = cache[p];
  if (!slot)
    slot = std::make_shared<const CsrMatrix>(stencil(problems[p].m, problems[p].dim, problems[p].dof));
  return *slot;
}

std::vector<double> rhs(std::size_t n, unsigned seed = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> b(n);
  for (auto& x : b) x = d(g);
  return b;
}

// All phases of one backend/ordering on one problem, timed separately in one iteration.
void BM_Phases(benchmark::State& state, int p, Backend backend, Ordering ordering) {
  const CsrMatrix& a = matrix(p);
  const auto n = static_cast<std::size_t>(a.rows());
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    auto f = make_factorization(backend, {.ordering = ordering});
    auto t = Clock::now();
    f->analyze(a.pattern_ptr());
    const double analyze = seconds_since(t);
    t = Clock::now();
    if (!f->factorize(a)) {
      state.SkipWithError(f->status().reason.c_str());
      return;
    }
    const double factorize = seconds_since(t);
    const CsrMatrix a2(a.pattern_ptr(), std::vector<double>(a.values().begin(), a.values().end()));
    t = Clock::now();
    f->factorize(a2);
    const double refactorize = seconds_since(t);
    const auto b = rhs(n);
    std::vector<double> x(n);
    t = Clock::now();
    int solves = 0;
    do {
      f->solve(b, x);
      ++solves;
    } while (seconds_since(t) < 0.3 && solves < 20);
    const double solve = seconds_since(t) / solves;
    const index_t nrhs = 32;
    const auto B = rhs(n * nrhs, 2);
    std::vector<double> X(B.size());
    t = Clock::now();
    f->solve(B, X, nrhs);
    const double block = seconds_since(t) / nrhs;
    state.SetIterationTime(factorize);
    state.counters["analyze_s"] = analyze;
    state.counters["factorize_s"] = factorize;
    state.counters["refactorize_s"] = refactorize;
    state.counters["refactor_ratio"] = refactorize / factorize;
    state.counters["refactor_vs_first"] = refactorize / (analyze + factorize);
    state.counters["solve_s"] = solve;
    state.counters["solves_per_s"] = 1.0 / solve;
    state.counters["block32_solves_per_s"] = 1.0 / block;
    state.counters["block32_vs_single"] = block / solve;
    state.counters["solve_over_factorize"] = solve / factorize;
    state.counters["factor_nnz"] = static_cast<double>(f->factor_nonzeros());
    state.counters["factor_MB"] = static_cast<double>(f->bytes()) / 1e6;
    state.counters["A_nnz_per_s"] = static_cast<double>(a.nnz()) / factorize;
    state.counters["n"] = static_cast<double>(n);
  }
  fem::bench::report_peak_memory(state);
}

// The cache against the raw backend and a fresh compute() per solve (3D Poisson 27k).
const CsrMatrix& small() {
  static const CsrMatrix a = stencil(30, 3, 1);
  return a;
}

void BM_SolveRaw(benchmark::State& state) {
  const CsrMatrix& a = small();
  auto f = make_factorization(Backend::cholmod);
  f->compute(a);
  const auto b = rhs(static_cast<std::size_t>(a.rows()));
  std::vector<double> x(b.size());
  for (auto _ : state) {
    f->solve(b, x);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["solves_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

#ifdef FEM_BENCH_HAVE_CHOLMOD
// CHOLMOD's C API by hand, no library of ours in between: the floor the cache is held to.
void BM_SolveCholmodC(benchmark::State& state) {
  const CsrMatrix& a = small();
  cholmod_common c;
  cholmod_start(&c);
  c.supernodal = CHOLMOD_SUPERNODAL;
  cholmod_sparse s{};
  s.nrow = s.ncol = static_cast<std::size_t>(a.rows());
  s.nzmax = a.nnz();
  s.p = const_cast<int*>(a.pattern().row_offsets().data());
  s.i = const_cast<int*>(a.pattern().col_indices().data());
  s.x = const_cast<double*>(a.values().data());
  s.stype = 1;
  s.itype = CHOLMOD_INT;
  s.xtype = CHOLMOD_REAL;
  s.dtype = CHOLMOD_DOUBLE;
  s.sorted = s.packed = 1;
  cholmod_factor* L = cholmod_analyze(&s, &c);
  cholmod_factorize(&s, L, &c);
  auto b = rhs(static_cast<std::size_t>(a.rows()));
  cholmod_dense bd{};
  bd.nrow = bd.d = s.nrow;
  bd.ncol = 1;
  bd.nzmax = s.nrow;
  bd.x = b.data();
  bd.xtype = CHOLMOD_REAL;
  bd.dtype = CHOLMOD_DOUBLE;
  cholmod_dense *x = nullptr, *y = nullptr, *e = nullptr;
  for (auto _ : state) {
    cholmod_solve2(CHOLMOD_A, L, &bd, nullptr, &x, nullptr, &y, &e, &c);
    benchmark::DoNotOptimize(x->x);
  }
  cholmod_free_dense(&x, &c);
  cholmod_free_dense(&y, &c);
  cholmod_free_dense(&e, &c);
  cholmod_free_factor(&L, &c);
  cholmod_finish(&c);
  state.counters["solves_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
#endif

// The store path; `checked`: with the residual check of every solve (the default), else with
// max_relative_residual = infinity, to see what the check costs.
void BM_SolveCached(benchmark::State& state, bool checked) {
  Store s;
  s.put("A", small());
  Options o{.backend = Backend::cholmod};
  if (!checked) o.max_relative_residual = std::numeric_limits<double>::infinity();
  const auto b = rhs(static_cast<std::size_t>(small().rows()));
  std::vector<double> x(b.size());
  fem::solve::solve(s, "A", b, x, o);
  for (auto _ : state) {
    fem::solve::solve(s, "A", b, x, o);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["solves_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_CacheHitOnly(benchmark::State& state) {
  Store s;
  s.put("A", small());
  const Options o{.backend = Backend::cholmod};
  factorization(s, "A", o);
  for (auto _ : state) benchmark::DoNotOptimize(factorization(s, "A", o).get());
}

void BM_SolveUncached(benchmark::State& state) {
  const CsrMatrix& a = small();
  const auto b = rhs(static_cast<std::size_t>(a.rows()));
  std::vector<double> x(b.size());
  for (auto _ : state) {
    auto f = make_factorization(Backend::cholmod);
    f->compute(a);
    f->solve(b, x);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["solves_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// 100 solves: cached (one factorization) vs uncached (a compute() per solve), 3D Poisson 8k.
void BM_Hundred(benchmark::State& state, bool cached) {
  static const CsrMatrix a = stencil(20, 3, 1);
  const auto b = rhs(static_cast<std::size_t>(a.rows()));
  std::vector<double> x(b.size());
  for (auto _ : state) {
    Store s;
    s.put("A", a);
    for (int k = 0; k < 100; ++k) {
      if (cached) {
        fem::solve::solve(s, "A", b, x, {.backend = Backend::cholmod});
      } else {
        auto f = make_factorization(Backend::cholmod);
        f->compute(a);
        f->solve(b, x);
      }
    }
  }
}

// Block of `nrhs` against nrhs single solves, per right-hand side.
void BM_Block(benchmark::State& state, Backend backend) {
  const CsrMatrix& a = small();
  const auto n = static_cast<std::size_t>(a.rows());
  const auto nrhs = static_cast<index_t>(state.range(0));
  auto f = make_factorization(backend);
  f->compute(a);
  const auto B = rhs(n * static_cast<std::size_t>(nrhs));
  std::vector<double> X(B.size());
  for (auto _ : state) f->solve(B, X, nrhs);
  state.counters["rhs_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * nrhs, benchmark::Counter::kIsRate);
}

void register_all() {
  struct Run {
    int problem;
    Backend backend;
    Ordering ordering;
  };
  // The big problems with the fast backends; every backend on the 27k 3D problem (KLU and
  // Eigen's simplicial LDLT take minutes on the big ones on 2 cores).
  std::vector<Run> runs = {
      {0, Backend::cholmod, Ordering::amd},   {0, Backend::cholmod, Ordering::metis},
      {1, Backend::cholmod, Ordering::amd},   {1, Backend::cholmod, Ordering::metis},
      {1, Backend::umfpack, Ordering::metis}, {2, Backend::cholmod, Ordering::metis},
      {2, Backend::umfpack, Ordering::metis}, {3, Backend::cholmod, Ordering::amd},
      {3, Backend::cholmod, Ordering::metis}, {3, Backend::umfpack, Ordering::metis},
      {3, Backend::klu, Ordering::metis},     {3, Backend::klu, Ordering::amd},
      {3, Backend::ldlt, Ordering::metis},    {3, Backend::lu, Ordering::metis},
  };
  for (const Run& r : runs) {
    if (!available(r.backend) || !available(r.ordering)) continue;
    const std::string name = std::string("Phases/") + problems[r.problem].name + "/" +
                             std::string(to_string(r.backend)) + "/" + std::string(to_string(r.ordering));
    benchmark::RegisterBenchmark(name.c_str(), BM_Phases, r.problem, r.backend, r.ordering)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  if (!available(Backend::cholmod)) return;
#ifdef FEM_BENCH_HAVE_CHOLMOD
  benchmark::RegisterBenchmark("Cache/poisson3d_27k/cholmod_c_api_solve", BM_SolveCholmodC)
      ->Unit(benchmark::kMicrosecond);
#endif
  benchmark::RegisterBenchmark("Cache/poisson3d_27k/factorization_object_solve", BM_SolveRaw)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Cache/poisson3d_27k/cached_solve", BM_SolveCached, true)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Cache/poisson3d_27k/cached_solve_unchecked", BM_SolveCached, false)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Cache/poisson3d_27k/hit_only", BM_CacheHitOnly)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Cache/poisson3d_27k/fresh_compute_per_solve", BM_SolveUncached)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Cache/poisson3d_8k/100_solves_cached", BM_Hundred, true)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Cache/poisson3d_8k/100_solves_uncached", BM_Hundred, false)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  for (Backend b : {Backend::cholmod, Backend::umfpack, Backend::klu})
    benchmark::RegisterBenchmark((std::string("Block/poisson3d_27k/") + std::string(to_string(b))).c_str(),
                                 BM_Block, b)
        ->Arg(1)
        ->Arg(16)
        ->Arg(32)
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
