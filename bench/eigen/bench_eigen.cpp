// The 20 lowest modes of a clamped 3D elasticity beam (P1 tets, 8:1:1), one core: fem::eigen
// (shift-invert Lanczos on the cached CHOLMOD factorization, with and without the Sturm check)
// against Spectra's own shift-invert operator on Eigen's SparseLU (what Spectra's documentation
// shows) in the same run; a repeated query, which finds its factorization in the store; and the
// peak memory of each case.
//   taskset -c 1 ./build/bench/eigen/bench_eigen --benchmark_counters_tabular=true
#include <Spectra/MatOp/SparseSymMatProd.h>
#include <Spectra/MatOp/SymShiftInvert.h>
#include <Spectra/SymGEigsShiftSolver.h>
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/SparseCore>
#include <Eigen/SparseLU>
#include <string>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/eigen/eigen.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"

namespace {

using fem::index_t;
constexpr int kModes = 20;

struct Beam {
  std::vector<index_t> clamped;
  index_t dofs = 0;
};

// A beam of n × n/8 × n/8 cubes (6 tets each), E = 210e9, ν = 0.3, ρ = 7800, clamped at x = 0,
// as K and M under bench/K, bench/M (new versions: no cached derivation survives).
Beam beam(int n) {
  auto& s = fem::store();
  const std::string key = "bench/beam/" + std::to_string(n);
  if (!s.contains(key))
    s.put(key, fem::mesh::box(fem::CellType::tet4, n, n / 8, n / 8, {0, 0, 0}, {8, 1, 1}));
  const fem::assembly::FunctionSpace V(key, 1, 3);
  const fem::assembly::Assembler a(V);
  s.put("bench/K", a.matrix(fem::assembly::Elasticity{210e9, 0.3}));
  s.put("bench/M", a.matrix(fem::assembly::Mass{7800.0}));
  const auto& mesh = *s.get<fem::Mesh>(key);
  const int left = mesh.resolve_tag("left", 2);
  Beam b;
  b.clamped = fem::assembly::dirichlet_values(
                  V, std::vector<fem::assembly::Dirichlet>{{fem::assembly::FacetSet{left}, nullptr}})
                  .dofs;
  b.dofs = V.num_dofs();
  return b;
}

void counters(benchmark::State& state, const Beam& b, double lambda_1) {
  state.counters["dofs"] = static_cast<double>(b.dofs);
  state.counters["modes/s"] = benchmark::Counter(kModes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["f1_Hz"] = std::sqrt(lambda_1) / (2 * M_PI);
  fem::bench::report_peak_memory(state);
}

// Args: cubes along the beam; verify (Sturm check) 0/1.
void BM_FemEigen(benchmark::State& state) {
  omp_set_num_threads(1);
  const auto n = static_cast<int>(state.range(0));
  fem::eigen::Options o;
  o.count = kModes;
  o.verify = state.range(1) != 0;
  fem::bench::reset_peak_memory();
  double lambda_1 = 0;
  Beam b;
  fem::eigen::Result r;
  for (auto _ : state) {
    state.PauseTiming();
    b = beam(n);  // new K and M: the first query of a model, factorizations included
    o.constrained = b.clamped;
    state.ResumeTiming();
    r = fem::eigen::solve("bench/K", "bench/M", o);
    lambda_1 = r.eigenvalues.at(0);
  }
  counters(state, b, lambda_1);
  state.counters["factorize_s"] = r.factorize_seconds;
  state.counters["solves"] = static_cast<double>(r.operator_applications);
  state.counters["sturm_ldlt"] = static_cast<double>(r.sturm_factorizations);
  state.SetLabel(r.method);
}

// The same query again on the same model: every factorization is in the store.
void BM_FemEigenRepeated(benchmark::State& state) {
  omp_set_num_threads(1);
  const Beam b = beam(static_cast<int>(state.range(0)));
  fem::eigen::Options o;
  o.count = kModes;
  o.constrained = b.clamped;
  fem::bench::reset_peak_memory();
  auto r = fem::eigen::solve("bench/K", "bench/M", o);  // the first query, not timed
  const auto factorizations = fem::store().counter("solve.factorizations");
  for (auto _ : state) r = fem::eigen::solve("bench/K", "bench/M", o);
  counters(state, b, r.eigenvalues.at(0));
  state.counters["new_factorizations"] =
      static_cast<double>(fem::store().counter("solve.factorizations") - factorizations);
}

// Baseline: Spectra's documented way, its SymShiftInvert (Eigen's SparseLU) and SparseSymMatProd,
// on the same reduced K and M, shift, subspace and tolerance.
void BM_SpectraSparseLU(benchmark::State& state) {
  omp_set_num_threads(1);
  const Beam b = beam(static_cast<int>(state.range(0)));
  // The reduced matrices as Eigen's, built outside the timing.
  std::vector<index_t> index_of(static_cast<std::size_t>(b.dofs), 0);
  for (index_t d : b.clamped) index_of[static_cast<std::size_t>(d)] = -1;
  index_t next = 0;
  for (auto& i : index_of)
    if (i == 0) i = next++;
  auto eigen_of = [&](const std::string& key) {
    const auto A = fem::store().get<fem::CsrMatrix>(key);
    std::vector<Eigen::Triplet<double>> t;
    for (index_t r = 0; r < A->rows(); ++r)
      for (index_t k = A->pattern().row_offsets()[r]; k < A->pattern().row_offsets()[r + 1]; ++k) {
        const index_t c = A->pattern().col_indices()[k];
        if (index_of[r] >= 0 && index_of[c] >= 0) t.emplace_back(index_of[r], index_of[c], A->values()[k]);
      }
    Eigen::SparseMatrix<double> S(next, next);
    S.setFromTriplets(t.begin(), t.end());
    return S;
  };
  const Eigen::SparseMatrix<double> K = eigen_of("bench/K"), M = eigen_of("bench/M");
  double tk = 0, tm = 0;
  for (index_t i = 0; i < next; ++i) tk += K.coeff(i, i), tm += M.coeff(i, i);
  const double sigma = -1e-6 * tk / tm;  // fem::eigen's shift for the smallest
  fem::bench::reset_peak_memory();
  double lambda_1 = 0;
  for (auto _ : state) {
    using Op = Spectra::SymShiftInvert<double, Eigen::Sparse, Eigen::Sparse>;
    using BOp = Spectra::SparseSymMatProd<double>;
    Op op(K, M);
    BOp bop(M);
    Spectra::SymGEigsShiftSolver<Op, BOp, Spectra::GEigsMode::ShiftInvert> solver(op, bop, kModes,
                                                                                  2 * kModes + 1, sigma);
    solver.init();
    solver.compute(Spectra::SortRule::LargestMagn, 1000, 1e-10, Spectra::SortRule::SmallestAlge);
    if (solver.info() != Spectra::CompInfo::Successful) state.SkipWithError("Spectra did not converge");
    lambda_1 = solver.eigenvalues()(0);
  }
  counters(state, b, lambda_1);
}

}  // namespace

BENCHMARK(BM_FemEigen)
    ->Args({64, 1})
    ->Args({64, 0})
    ->Args({128, 1})
    ->Args({128, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_FemEigenRepeated)->Arg(64)->Arg(128)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_SpectraSparseLU)->Arg(64)->Arg(128)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

BENCHMARK_MAIN();
