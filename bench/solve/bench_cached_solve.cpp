// The cached solve, the operation the project exists for, side by side with PETSc's best
// direct solver on one core (MATSOLVERCHOLMOD, CHOLMOD's own supernodal solve) on the same
// finite-element matrices: P1 Poisson on the unit square, 2·1024² triangles (1.05M DOFs), and
// on the unit cube, 6·48³ tetrahedra (118k DOFs), Dirichlet conditions on the whole boundary.
// A STREAM triad in the same run gives the machine's memory rate; a solve's rate is the bytes
// of factor it reads (each stored entry twice: forward and backward) per second.
//
//   taskset -c 1 ./build/bench/solve/bench_cached_solve
//   ./build/bench/solve/bench_cached_solve --benchmark_filter=threads:2   (both cores)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/solve/detail/backends.hpp"
#include "fem/solve/linear_solver.hpp"
#include "fem/solve/solve.hpp"

#ifdef FEM_BENCH_HAVE_PETSC
#include <petscksp.h>
#endif

namespace {

using namespace fem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Case {
  const char* name;
  CellType cell;
  index_t n;
};
const Case kCases[] = {{"poisson2d_P1_1.05M", CellType::tri3, 1024},
                       {"poisson3d_P1_118k", CellType::tet4, 48}};

const CsrMatrix& matrix(int which) {
  static std::map<int, std::unique_ptr<const CsrMatrix>> cache;
  auto& slot = cache[which];
  if (!slot) {
    const Case& c = kCases[which];
    auto mesh = std::make_shared<const Mesh>(cell_info(c.cell).dim == 2 ? mesh::unit_square(c.cell, c.n)
                                                                        : mesh::unit_cube(c.cell, c.n));
    const assembly::FunctionSpace V(mesh, 1);
    const assembly::Assembler a(V);
    CsrMatrix A = a.matrix(assembly::Diffusion{});
    const assembly::Dirichlet bc[] = {{assembly::FacetSet::all(), nullptr, -1}};
    std::vector<double> b(static_cast<std::size_t>(A.rows()));
    std::vector<double> values(A.values().begin(), A.values().end());
    assembly::apply_dirichlet(assembly::dirichlet_values(V, bc), A.pattern(), values, b);
    slot = std::make_unique<const CsrMatrix>(A.pattern_ptr(), std::move(values));
  }
  return *slot;
}

std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// One factorization per case, shared by the solve benchmarks; its phases timed once.
struct Factored {
  std::unique_ptr<solve::Factorization> f;
  double analyze = 0, factorize = 0, refactorize = 0;
};
Factored& factored(int which) {
  static std::map<int, Factored> cache;
  Factored& s = cache[which];
  if (!s.f) {
    const CsrMatrix& A = matrix(which);
    s.f = solve::make_factorization(solve::Backend::cholmod);
    auto t = Clock::now();
    s.f->analyze(A.pattern_ptr());
    s.analyze = seconds_since(t);
    t = Clock::now();
    if (!s.f->factorize(A)) throw std::runtime_error(s.f->status().reason);
    s.factorize = seconds_since(t);
    const CsrMatrix A2(A.pattern_ptr(), std::vector<double>(A.values().begin(), A.values().end()));
    t = Clock::now();
    s.f->factorize(A2);
    s.refactorize = seconds_since(t);
  }
  return s;
}

double factor_bytes_read(const solve::Factorization& f) {
  return 2.0 * static_cast<double>(solve::detail::supernodal_info(f).entries) * sizeof(double);
}

// Analysis, factorization and refactorization of fem's CHOLMOD factorization (one run each).
void BM_FemFactorize(benchmark::State& state, int which) {
  omp_set_num_threads(1);
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    Factored& s = factored(which);
    state.SetIterationTime(s.analyze + s.factorize);
    state.counters["analyze_s"] = s.analyze;
    state.counters["factorize_s"] = s.factorize;
    state.counters["refactorize_s"] = s.refactorize;
    state.counters["refactor_vs_first"] = s.refactorize / (s.analyze + s.factorize);
    const auto info = solve::detail::supernodal_info(*s.f);
    state.counters["factor_nnz"] = static_cast<double>(s.f->factor_nonzeros());
    state.counters["stored_entries"] = static_cast<double>(info.stored);
    state.counters["solve_entries"] = static_cast<double>(info.entries);
    state.counters["supernodes"] = static_cast<double>(info.supernodes);
    state.counters["solve_nodes"] = static_cast<double>(info.nodes);
    state.counters["row_indices"] = static_cast<double>(info.row_indices);
    state.counters["factor_MB"] = static_cast<double>(s.f->bytes()) / 1e6;
  }
  fem::bench::report_peak_memory(state);
}

// One cached solve (nrhs = 1), or a block of nrhs, per iteration; `transpose`: solve_transpose.
void BM_FemSolve(benchmark::State& state, int which, int threads, index_t nrhs, bool transpose) {
  Factored& s = factored(which);
  omp_set_num_threads(threads);
  const auto n = static_cast<std::size_t>(s.f->size());
  const auto B = random_vector(n * static_cast<std::size_t>(nrhs), 3);
  std::vector<double> X(B.size());
  // Once untimed: the first solve of a width allocates its workspace (a chunk of 16 columns is
  // 134 MB at 1.05M DOFs), which the solves after it reuse.
  if (!(transpose ? s.f->solve_transpose(B, X, nrhs) : s.f->solve(B, X, nrhs)))
    state.SkipWithError("solve failed");
  for (auto _ : state) {
    if (!(transpose ? s.f->solve_transpose(B, X, nrhs) : s.f->solve(B, X, nrhs)))
      state.SkipWithError("solve failed");
    benchmark::DoNotOptimize(X.data());
  }
  omp_set_num_threads(1);
  state.counters["rhs/s"] =
      benchmark::Counter(static_cast<double>(nrhs), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["factor_GB/s"] =
      benchmark::Counter(factor_bytes_read(*s.f) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["subtrees"] = solve::detail::supernodal_info(*s.f).subtrees;
}

// The solve the drivers make at every time step: the store's matrix through a LinearSolver
// (factorized once, checked on its first solve), into the caller's buffer. Within 1.1× of
// FemSolve (the factorization object's own solve) on one core: the interface costs nothing.
void BM_LinearSolverSolve(benchmark::State& state, int which) {
  omp_set_num_threads(1);
  Store store;
  store.put("A", std::make_shared<const CsrMatrix>(matrix(which)));
  const auto solver = solve::make_solver({.backend = solve::Backend::cholmod});
  solver->factorize(store, "A");
  const auto b = random_vector(static_cast<std::size_t>(matrix(which).rows()), 3);
  std::vector<double> x(b.size());
  solve::require(solver->solve(b, x));  // the checked first solve, untimed as the workspace's
  for (auto _ : state) {
    if (!solver->solve(b, x)) state.SkipWithError("solve failed");
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["rhs/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}

// CHOLMOD's own cholmod_solve2 on the same factor: what the backend gave before.
void BM_CholmodSolve2(benchmark::State& state, int which) {
  Factored& s = factored(which);
  omp_set_num_threads(1);
  const solve::detail::CholmodReference reference(*s.f, matrix(which));
  const auto n = static_cast<std::size_t>(s.f->size());
  const auto b = random_vector(n, 3);
  std::vector<double> x(n);
  for (auto _ : state) reference.solve(b, x, 1);
  // CHOLMOD reads its whole supernodes, explicit zeros and upper triangles included.
  const double bytes =
      2.0 * static_cast<double>(solve::detail::supernodal_info(*s.f).stored) * sizeof(double);
  state.counters["factor_GB/s"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The bytes a solve reads (the packed factor twice: forward and backward), read once in one
// sequential stream (four vector sums): the floor the memory sets under a one-core solve.
void BM_FactorStream(benchmark::State& state, int which) {
  Factored& s = factored(which);
  const auto entries = static_cast<std::size_t>(solve::detail::supernodal_info(*s.f).entries);
  using v4 = double __attribute__((vector_size(32), aligned(8)));
  std::vector<double> a(2 * entries + 16, 1.0);
  for (auto _ : state) {
    v4 s0{}, s1{}, s2{}, s3{};
    const double* p = a.data();
    for (std::size_t i = 0; i + 16 <= 2 * entries; i += 16) {
      s0 += *reinterpret_cast<const v4*>(p + i);
      s1 += *reinterpret_cast<const v4*>(p + i + 4);
      s2 += *reinterpret_cast<const v4*>(p + i + 8);
      s3 += *reinterpret_cast<const v4*>(p + i + 12);
    }
    const v4 t = s0 + s1 + s2 + s3;
    benchmark::DoNotOptimize(t);
  }
  state.counters["GB/s"] = benchmark::Counter(16.0 * static_cast<double>(entries) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// STREAM triad a = b + s c on 3 × 64M doubles (24 bytes per element, STREAM's count).
void BM_StreamTriad(benchmark::State& state) {
  const std::size_t n = std::size_t{1} << 26;
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  for (auto _ : state) {
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    const double* __restrict pc = c.data();
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0 * pc[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(24.0 * static_cast<double>(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

#ifdef FEM_BENCH_HAVE_PETSC
#define CHECK_PETSC(call)                                                                          \
  do {                                                                                             \
    if (PetscErrorCode e_ = (call)) throw std::runtime_error("PETSc error " + std::to_string(e_)); \
  } while (0)

// PETSc 3.18 with MATSOLVERCHOLMOD on the same CSR arrays: factorization (its default CHOLMOD
// parameters) and one solve per iteration.
void BM_PetscCholmod(benchmark::State& state, int which) {
  const CsrMatrix& A = matrix(which);
  const PetscInt n = A.rows();
  Mat M = nullptr, F = nullptr;
  CHECK_PETSC(MatCreateSeqAIJWithArrays(PETSC_COMM_SELF, n, n,
                                        const_cast<PetscInt*>(A.pattern().row_offsets().data()),
                                        const_cast<PetscInt*>(A.pattern().col_indices().data()),
                                        const_cast<PetscScalar*>(A.values().data()), &M));
  CHECK_PETSC(MatSetOption(M, MAT_SPD, PETSC_TRUE));
  CHECK_PETSC(MatGetFactor(M, MATSOLVERCHOLMOD, MAT_FACTOR_CHOLESKY, &F));
  IS perm = nullptr;
  MatFactorInfo info;
  CHECK_PETSC(MatFactorInfoInitialize(&info));
  CHECK_PETSC(ISCreateStride(PETSC_COMM_SELF, n, 0, 1, &perm));
  auto t = Clock::now();
  CHECK_PETSC(MatCholeskyFactorSymbolic(F, M, perm, &info));
  const double symbolic = seconds_since(t);
  t = Clock::now();
  CHECK_PETSC(MatCholeskyFactorNumeric(F, M, &info));
  const double numeric = seconds_since(t);
  Vec b = nullptr, x = nullptr;
  CHECK_PETSC(MatCreateVecs(M, &x, &b));
  const auto rb = random_vector(static_cast<std::size_t>(n), 3);
  PetscScalar* pb = nullptr;
  CHECK_PETSC(VecGetArray(b, &pb));
  std::copy(rb.begin(), rb.end(), pb);
  CHECK_PETSC(VecRestoreArray(b, &pb));
  for (auto _ : state) CHECK_PETSC(MatSolve(F, b, x));
  state.counters["analyze_s"] = symbolic;
  state.counters["factorize_s"] = numeric;
  state.counters["solves/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  ISDestroy(&perm);
  VecDestroy(&b);
  VecDestroy(&x);
  MatDestroy(&F);
  MatDestroy(&M);
}
#endif

void register_all() {
  benchmark::RegisterBenchmark("StreamTriad/one_core", BM_StreamTriad)->Unit(benchmark::kMillisecond);
  for (int c = 0; c < 2; ++c) {
    const std::string name = kCases[c].name;
    benchmark::RegisterBenchmark(("FemFactorize/" + name).c_str(), BM_FemFactorize, c)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("LinearSolverSolve/" + name).c_str(), BM_LinearSolverSolve, c)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("CholmodSolve2/" + name).c_str(), BM_CholmodSolve2, c)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("FactorStream/" + name).c_str(), BM_FactorStream, c)
        ->Unit(benchmark::kMillisecond);
    for (int threads : {1, 2})
      benchmark::RegisterBenchmark(("FemSolve/" + name + "/threads:" + std::to_string(threads)).c_str(),
                                   BM_FemSolve, c, threads, 1, false)
          ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("FemSolveTranspose/" + name).c_str(), BM_FemSolve, c, 1, 1, true)
        ->Unit(benchmark::kMillisecond);
    for (int threads : {1, 2})
      benchmark::RegisterBenchmark(("FemBlock16/" + name + "/threads:" + std::to_string(threads)).c_str(),
                                   BM_FemSolve, c, threads, 16, false)
          ->Unit(benchmark::kMillisecond);
#ifdef FEM_BENCH_HAVE_PETSC
    benchmark::RegisterBenchmark(("PetscCholmod/" + name).c_str(), BM_PetscCholmod, c)
        ->Unit(benchmark::kMillisecond);
#endif
  }
}

}  // namespace

int main(int argc, char** argv) {
#ifdef FEM_BENCH_HAVE_PETSC
  if (PetscInitializeNoArguments()) return 1;
#endif
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
#ifdef FEM_BENCH_HAVE_PETSC
  PetscFinalize();
#endif
  return 0;
}
