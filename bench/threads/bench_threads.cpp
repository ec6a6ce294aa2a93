// Never slower on more threads: the driver's phases for P1 Poisson on 2n² triangles, 10³ to 10⁶
// cells (connectivity; assembly of matrix, vector and Dirichlet values; CHOLMOD factorization +
// one solve; one cached solve), each timed on one thread and on the default thread count in
// alternation (so drift in a shared machine's load hits both alike), on a quiet machine
// (busy:0) and with the last core kept busy by a spinning process pinned to it (busy:1).
// Counters: the median of each, their ratio (default ÷ one thread; the goal is ≤ 1.2), and
// other_load, the cores other processes used meanwhile (a comparison with other_load well
// above 0 was taken on a machine busier than it says). The iteration time is the default's.
//   ./build/bench/threads/bench_threads
//   ./build/bench/threads/bench_threads --benchmark_filter='busy:1'
// The executable has the drivers' thread defaults (fem/threads.hpp); set OMP_WAIT_POLICY,
// OMP_NUM_THREADS, OPENBLAS_NUM_THREADS or FEM_ADAPTIVE_THREADS=0 to measure others.
#include <benchmark/benchmark.h>
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fem/solve/solve.hpp>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/threads.hpp"

namespace {

using namespace fem;
using namespace fem::assembly;
using Clock = std::chrono::steady_clock;

// The default thread counts (OpenMP's and the BLAS's), read before any benchmark changes them.
const int kDefaultThreads = omp_get_max_threads();
const int kDefaultBlasThreads = blas_threads();

// Cells ≈ 10^k for k = 3..6: 2n² triangles.
index_t side(int exponent) {
  static const index_t n[] = {22, 71, 224, 707};
  return n[exponent - 3];
}

const std::shared_ptr<const Mesh>& mesh(int exponent) {
  static std::shared_ptr<const Mesh> cache[4];
  auto& m = cache[exponent - 3];
  if (!m) m = std::make_shared<const Mesh>(mesh::unit_square(CellType::tri3, side(exponent)));
  return m;
}

// Enough pairs for a stable median at every size (about 0.5 s of one-thread work, at least 7).
int pairs(int exponent) {
  static const int n[] = {400, 60, 11, 7};
  return n[exponent - 3];
}

/// A process spinning on the last CPU this one may use, for as long as the object lives.
class BusyCore {
 public:
  BusyCore() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    sched_getaffinity(0, sizeof(allowed), &allowed);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) last = c;
    if (CPU_COUNT(&allowed) < 2) return;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(last, &one);
      sched_setaffinity(0, sizeof(one), &one);
      for (;;) asm volatile("" ::: "memory");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it start spinning
  }
  ~BusyCore() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  BusyCore(const BusyCore&) = delete;
  BusyCore& operator=(const BusyCore&) = delete;
  bool running() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }

 private:
  pid_t pid_ = -1;
};

// CPU seconds used so far by the whole machine (all but idle and iowait), and by one process.
double machine_cpu_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return (user + nice + system + irq + softirq) / static_cast<double>(sysconf(_SC_CLK_TCK));
}
double process_cpu_seconds(pid_t pid) {
  std::ifstream stat(pid > 0 ? "/proc/" + std::to_string(pid) + "/stat" : "/proc/self/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));  // fields from 3 on
  std::string field;
  double utime = 0, stime = 0;
  for (int k = 3; k <= 15 && rest >> field; ++k) {
    if (k == 14) utime = std::stod(field);
    if (k == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One thread: OpenMP's and the BLAS's; the default: both as they were at start.
void use_threads(int n) {
  omp_set_num_threads(n);
  set_blas_threads(n == 1 ? 1 : kDefaultBlasThreads);
}

// Args: exponent of the cell count, busy (0/1). run(): one timed execution of the phase;
// prepare() (untimed) before each.
template <class Prepare, class Run>
void compare(benchmark::State& state, Prepare&& prepare, Run&& run) {
  const int exponent = static_cast<int>(state.range(0));
  std::optional<BusyCore> busy;
  if (state.range(1)) {
    busy.emplace();
    if (!busy->running()) {
      state.SkipWithError("needs two CPUs");
      return;
    }
  }
  std::vector<double> one, many;
  auto timed = [&](int threads) {
    use_threads(threads);
    prepare();
    const auto t = Clock::now();
    run();
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  // Other processes' CPU use meanwhile (cores' worth): a shared machine's own load, which
  // spoils a comparison; 10 ms resolution.
  const pid_t child = busy ? busy->pid() : 0;
  auto others = [&] {
    return machine_cpu_seconds() - process_cpu_seconds(0) - (child > 0 ? process_cpu_seconds(child) : 0.0);
  };
  const double others_before = others();
  const auto wall_before = Clock::now();
  bool one_first = true;
  for (auto _ : state) {
    double t1 = 0, tn = 0;
    if (one_first) {
      t1 = timed(1);
      tn = timed(kDefaultThreads);
    } else {
      tn = timed(kDefaultThreads);
      t1 = timed(1);
    }
    one_first = !one_first;
    one.push_back(t1);
    many.push_back(tn);
    state.SetIterationTime(tn);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - wall_before).count();
  state.counters["other_load"] = std::max(0.0, others() - others_before) / wall;
  use_threads(kDefaultThreads);
  state.counters["cells"] = static_cast<double>(mesh(exponent)->num_cells());
  state.counters["threads"] = kDefaultThreads;
  state.counters["1thread_ms"] = 1e3 * median(one);
  state.counters["default_ms"] = 1e3 * median(many);
  state.counters["ratio"] = median(many) / median(one);
}

// f = 1.
Source unit_source() {
  Source s;
  s.f = [](const double*) { return 1.0; };
  return s;
}

// The driver's "connectivity" phase: the DOF map and the plan (pattern, slot map, colouring).
void BM_Connectivity(benchmark::State& state) {
  const auto& m = mesh(static_cast<int>(state.range(0)));
  std::size_t nnz = 0;
  compare(
      state, [] {},
      [&] {
        const FunctionSpace V(m, 1);
        nnz = build_plan(V).pattern().nnz();
      });
  benchmark::DoNotOptimize(nnz);
}

// The driver's "assemble" phase: matrix and vector values on the cached plan, the Dirichlet
// values on the whole boundary and their imposition.
void BM_Assembly(benchmark::State& state) {
  const Assembler a(FunctionSpace(mesh(static_cast<int>(state.range(0))), 1));
  std::vector<double> values(a.pattern()->nnz()), b(a.space().num_dofs());
  const Dirichlet zero{FacetSet::all(), nullptr};
  compare(
      state, [&] { std::fill(b.begin(), b.end(), 0.0); },
      [&] {
        a.matrix_into(Diffusion{}, values);
        a.vector_into(unit_source(), b);
        apply_dirichlet(dirichlet_values(a.space(), {&zero, 1}), *a.pattern(), values, b);
      });
}

// The factorization's input: the driver's matrix (u = 0 on the boundary) and right-hand side.
struct System {
  Assembler a;
  CsrMatrix A;
  std::vector<double> b;
};
System system(int exponent) {
  Assembler a(FunctionSpace(mesh(exponent), 1));
  std::vector<double> values(a.pattern()->nnz()), b(a.space().num_dofs(), 0.0);
  const Dirichlet zero{FacetSet::all(), nullptr};
  a.matrix_into(Diffusion{}, values);
  a.vector_into(unit_source(), b);
  apply_dirichlet(dirichlet_values(a.space(), {&zero, 1}), *a.pattern(), values, b);
  CsrMatrix A(a.pattern(), std::move(values));
  return {std::move(a), std::move(A), std::move(b)};
}

std::unique_ptr<solve::Factorization> analyzed(const System& s) {
  const solve::Backend backend =
      solve::available(solve::Backend::cholmod) ? solve::Backend::cholmod : solve::Backend::ldlt;
  auto f = solve::make_factorization(backend);
  if (!f->analyze(s.A.pattern_ptr()).ok()) return nullptr;
  return f;
}

// Numerical factorization (CHOLMOD on the cached symbolic analysis) and one solve.
void BM_FactorizeSolve(benchmark::State& state) {
  const System s = system(static_cast<int>(state.range(0)));
  std::vector<double> x(s.b.size());
  auto f = analyzed(s);
  if (!f) return state.SkipWithError("analysis failed");
  bool ok = true;
  compare(
      state, [] {}, [&] { ok = ok && f->factorize(s.A).ok() && f->solve(s.b, x).ok(); });
  if (!ok) state.SkipWithError("factorization or solve failed");
}

// One solve with the cached factorization (what a time step or a lagged Newton step costs).
void BM_Solve(benchmark::State& state) {
  const System s = system(static_cast<int>(state.range(0)));
  std::vector<double> x(s.b.size());
  auto f = analyzed(s);
  if (!f || !f->factorize(s.A).ok()) return state.SkipWithError("factorization failed");
  bool ok = true;
  compare(
      state, [] {}, [&] { ok = ok && f->solve(s.b, x).ok(); });
  if (!ok) state.SkipWithError("solve failed");
}

}  // namespace

// Each size gets a fixed number of pairs (pairs()), so every median has enough samples.
int main(int argc, char** argv) {
  fem::apply_executable_thread_defaults(argv);  // the drivers' defaults
  const std::pair<const char*, void (*)(benchmark::State&)> phases[] = {{"Connectivity", BM_Connectivity},
                                                                        {"Assembly", BM_Assembly},
                                                                        {"FactorizeSolve", BM_FactorizeSolve},
                                                                        {"Solve", BM_Solve}};
  for (const auto& [name, fn] : phases)
    for (int busy : {0, 1})
      for (int e = 3; e <= 6; ++e)
        benchmark::RegisterBenchmark(name, fn)
            ->ArgNames({"log10cells", "busy"})
            ->Args({e, busy})
            ->Iterations(pairs(e))
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
