// The phases of a distributed Poisson run, one benchmark each, under mpirun: mesh distribution,
// connectivity (with the PETSc matrix's COO preallocation, where DOLFINx creates its matrix),
// first assembly (Dirichlet values, load vector, matrix, the PETSc matrix filled),
// re-assembly of the matrix (scatter, Dirichlet lifting, MatSetValuesCOO), the load vector, MUMPS
// factorization, refactorization and solve, CG + GAMG setup and solve to rtol 1e-8. Every rank runs the same
// fixed iterations (collective calls), the time reported is the slowest rank's, and peak_MB the largest
// resident set of any rank.
//
//   OMP_NUM_THREADS=1 mpirun -np 1 build/bench/dist/bench_dist --mesh=gen:square-tri3:1024
//   OMP_NUM_THREADS=1 mpirun -np 2 build/bench/dist/bench_dist --mesh=gen:square-tri3:1024
//   OMP_NUM_THREADS=1 mpirun -np 2 build/bench/dist/bench_dist --mesh=gen:cube-tet4:125 --no-direct
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/peak_memory.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/dist/dist.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"

namespace {

using Clock = std::chrono::steady_clock;
const MPI_Comm comm = MPI_COMM_WORLD;

struct Case {
  std::string spec = "gen:square-tri3:1024";
  bool direct = true;
  fem::Store store;
  std::shared_ptr<const fem::dist::Distribution> dist;
  std::unique_ptr<fem::assembly::FunctionSpace> V;
  std::unique_ptr<fem::assembly::Assembler> assembler;
  std::shared_ptr<const fem::dist::IndexMap> map;
  std::shared_ptr<const fem::dist::PetscMatrix> A;
  std::shared_ptr<const fem::dist::Solver> mumps, gamg;
  std::vector<double> values, f, b, u;
  std::size_t nnz = 0;
  fem::assembly::DirichletValues bc;
  int version = 0;
};
Case& the_case() {
  static Case c;
  return c;
}

// Time `f` on every rank; the iteration takes the slowest rank's time.
template <class F>
void timed(benchmark::State& state, F&& f) {
  for (auto _ : state) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    f();
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    seconds = fem::dist::max(comm, seconds);
    state.SetIterationTime(seconds);
  }
  state.counters["peak_MB"] = fem::dist::max(comm, fem::bench::peak_memory_bytes() / 1e6);
  state.counters["ranks"] = fem::dist::size(comm);
}

void dofs_rate(benchmark::State& state) {
  Case& c = the_case();
  state.counters["dofs"] = c.map ? c.map->global_dofs() : 0;
  if (c.map)
    state.counters["dofs_per_s"] = benchmark::Counter(static_cast<double>(c.map->global_dofs()),
                                                      benchmark::Counter::kIsIterationInvariantRate);
}

// A new version of the matrix: assemble k = 1 + version/10, lift the conditions into a copy of
// the load vector, publish (the values move into the store: a fresh buffer per version).
void assemble_version(Case& c) {
  const double k = 1 + 0.1 * c.version++;
  c.values.assign(c.assembler->pattern()->nnz(), 0.0);
  c.assembler->matrix_into(fem::assembly::Diffusion{k}, c.values);
  c.b = c.f;
  fem::assembly::apply_dirichlet(c.bc, *c.assembler->pattern(), c.values, c.b);
  c.store.put("A", fem::CsrMatrix(c.assembler->pattern(), std::move(c.values)));
}

// The load vector of f = 1 (partial sums on shared DOFs).
void assemble_load(Case& c) {
  c.f.assign(c.V->num_dofs(), 0.0);
  c.assembler->vector_into(fem::assembly::Source{[](const double*) { return 1.0; }}, c.f);
}

void Distribute(benchmark::State& state) {
  Case& c = the_case();
  std::shared_ptr<const fem::Mesh> whole;
  if (fem::dist::rank(comm) == 0)
    whole = std::make_shared<const fem::Mesh>(c.spec.rfind("gen:", 0) == 0 ? fem::mesh::generate(c.spec)
                                                                           : fem::mesh::read(c.spec));
  timed(state, [&] { c.dist = fem::dist::distribute(comm, whole, "mesh/bench", c.store); });
  state.counters["cells"] = c.dist->global_cells;
}

// Connectivity, as DOLFINx's phase of that name: the part's connectivity (pattern, slot map), the
// global DOF numbering and the PETSc matrix's pattern (MatSetPreallocationCOO, of a zero matrix
// that the first assembly refills; DOLFINx creates its matrix there). Reported apart, then summed.
void Connectivity(benchmark::State& state) {
  Case& c = the_case();
  double plan = 0, numbering = 0, pattern = 0;
  timed(state, [&] {
    auto t0 = Clock::now();
    c.V = std::make_unique<fem::assembly::FunctionSpace>("mesh/bench", 1, 1, c.store);
    c.assembler = std::make_unique<fem::assembly::Assembler>(*c.V);
    auto t1 = Clock::now();
    c.map = fem::dist::index_map(*c.V);
    auto t2 = Clock::now();
    c.store.put("A",
                fem::CsrMatrix(c.assembler->pattern(), std::vector<double>(c.assembler->pattern()->nnz())));
    c.A = fem::dist::petsc_matrix(c.store, "A", c.map);
    auto t3 = Clock::now();
    plan = std::chrono::duration<double>(t1 - t0).count();
    numbering = std::chrono::duration<double>(t2 - t1).count();
    pattern = std::chrono::duration<double>(t3 - t2).count();
  });
  state.counters["plan_ms"] = 1e3 * fem::dist::max(comm, plan);
  state.counters["numbering_ms"] = 1e3 * fem::dist::max(comm, numbering);
  state.counters["petsc_pattern_ms"] = 1e3 * fem::dist::max(comm, pattern);
  dofs_rate(state);
}

void FirstAssembly(benchmark::State& state) {
  Case& c = the_case();
  timed(state, [&] {
    c.bc = fem::assembly::dirichlet_values(
        *c.V, std::vector{fem::assembly::Dirichlet{fem::assembly::FacetSet::all(), nullptr, -1}}, *c.map);
    assemble_load(c);
    assemble_version(c);
    c.A = fem::dist::petsc_matrix(c.store, "A", c.map, std::move(c.A));
  });
  c.nnz = c.assembler->pattern()->nnz();
  dofs_rate(state);
}

void Reassembly(benchmark::State& state) {
  Case& c = the_case();
  double assemble = 0, fill = 0;  // summed over the iterations, this rank
  timed(state, [&] {
    const auto t0 = Clock::now();
    assemble_version(c);
    const auto t1 = Clock::now();
    c.A = fem::dist::petsc_matrix(c.store, "A", c.map, std::move(c.A));
    assemble += std::chrono::duration<double>(t1 - t0).count();
    fill += std::chrono::duration<double>(Clock::now() - t1).count();
  });
  // Where the time goes: the local assembly (scatter, lifting, publishing) and the PETSc refill.
  state.counters["local_ms"] = 1e3 * fem::dist::max(comm, assemble) / static_cast<double>(state.iterations());
  state.counters["local_min_ms"] =
      -1e3 * fem::dist::max(comm, -assemble) / static_cast<double>(state.iterations());
  state.counters["petsc_fill_ms"] =
      1e3 * fem::dist::max(comm, fill) / static_cast<double>(state.iterations());
  dofs_rate(state);
  state.counters["nnz_per_s"] =
      benchmark::Counter(static_cast<double>(fem::dist::sum(comm, std::int64_t(c.nnz))),
                         benchmark::Counter::kIsIterationInvariantRate);
}

// The load vector alone (the library's Source form: a function evaluated at quadrature points).
void LoadVector(benchmark::State& state) {
  Case& c = the_case();
  timed(state, [&] { assemble_load(c); });
  dofs_rate(state);
}

void MumpsFactorize(benchmark::State& state) {
  Case& c = the_case();
  c.A.reset();  // the solver takes the matrix over
  timed(state, [&] {
    c.mumps = fem::dist::solver(c.store, "A", c.map, {.backend = fem::solve::Backend::mumps, .spd = true});
  });
  dofs_rate(state);
}

void MumpsRefactorize(benchmark::State& state) {
  Case& c = the_case();
  for (auto _ : state) {
    state.PauseTiming();
    assemble_version(c);
    state.ResumeTiming();
    MPI_Barrier(comm);
    const auto start = Clock::now();
    c.mumps = fem::dist::solver(c.store, "A", c.map, {.backend = fem::solve::Backend::mumps, .spd = true},
                                std::move(c.mumps));
    state.SetIterationTime(fem::dist::max(comm, std::chrono::duration<double>(Clock::now() - start).count()));
  }
  state.counters["peak_MB"] = fem::dist::max(comm, fem::bench::peak_memory_bytes() / 1e6);
  dofs_rate(state);
}

void MumpsSolve(benchmark::State& state) {
  Case& c = the_case();
  c.u.assign(c.V->num_dofs(), 0.0);
  timed(state, [&] { c.mumps->solve(c.b, fem::dist::Sums::partial, c.u); });
  dofs_rate(state);
}

// y = A x with the PETSc matrix (local vectors in and out): an upper bound of what the residual
// check after every solve costs (one MatMult and two norms).
void Matvec(benchmark::State& state) {
  Case& c = the_case();
  std::vector<double> y(c.u.size());
  timed(state, [&] { c.mumps->matrix().multiply(c.u, y); });
  state.counters["nnz_per_s"] =
      benchmark::Counter(static_cast<double>(fem::dist::sum(comm, std::int64_t(c.nnz))),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void GamgSetup(benchmark::State& state) {
  Case& c = the_case();
  c.mumps.reset();
  c.store.erase("A#factor/mumps/cholesky");
  timed(state, [&] {
    c.gamg = fem::dist::solver(c.store, "A", c.map,
                               {.backend = fem::solve::Backend::gamg, .spd = true, .rtol = 1e-8});
  });
  dofs_rate(state);
}

void GamgSolve(benchmark::State& state) {
  Case& c = the_case();
  c.u.assign(c.V->num_dofs(), 0.0);
  int iterations = 0;
  timed(state, [&] { iterations = c.gamg->solve(c.b, fem::dist::Sums::partial, c.u).iterations; });
  state.counters["iterations"] = iterations;
  dofs_rate(state);
}

// Ranks other than 0 run the same benchmarks silently.
class Quiet : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  fem::dist::Session session(argc, argv);
  Case& c = the_case();
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--mesh=", 7) == 0)
      c.spec = argv[i] + 7;
    else if (std::strcmp(argv[i], "--no-direct") == 0)
      c.direct = false;
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  auto reg = [](const char* name, void (*f)(benchmark::State&), int iterations) {
    benchmark::RegisterBenchmark(name, f)
        ->Iterations(iterations)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  reg("distribute", Distribute, 1);
  reg("connectivity", Connectivity, 1);
  reg("first_assembly", FirstAssembly, 1);
  reg("reassembly", Reassembly, 5);
  reg("load_vector", LoadVector, 3);
  if (c.direct) {
    reg("mumps_factorize", MumpsFactorize, 1);
    reg("mumps_refactorize", MumpsRefactorize, 2);
    reg("mumps_solve", MumpsSolve, 5);
    reg("matvec", Matvec, 5);
  }
  reg("gamg_setup", GamgSetup, 1);
  reg("gamg_solve", GamgSolve, 3);
  if (session.rank() != 0) {
    Quiet quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
