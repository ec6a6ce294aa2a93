// The serial and the distributed path of the solver subcommands (see parallel.hpp).
#include "parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "fem/mesh/vtu.hpp"

#if FEM_APP_HAS_DIST
#include "fem/dist/dist.hpp"
#endif

namespace fem::app::parallel {
namespace {

#if FEM_APP_HAS_DIST
std::optional<dist::Session>& session() {
  static std::optional<dist::Session> s;
  return s;
}
#endif

// Processes in the job as the launcher says (Open MPI, MPICH/Hydra, PMIx), before MPI starts.
int launched_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  return 1;
}

// The value of --solver among the arguments, or "".
std::string solver_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--solver") == 0 && i + 1 < argc) return argv[i + 1];
    if (std::strncmp(argv[i], "--solver=", 9) == 0) return argv[i] + 9;
  }
  return "";
}

bool petsc_solver(const std::string& s) { return s == "mumps" || s == "gamg" || s == "hypre"; }

}  // namespace

void start(int& argc, char**& argv) {
  const int processes = launched_processes();
  const bool wanted = processes > 1 || petsc_solver(solver_argument(argc, argv));
  if (!wanted) return;
#if FEM_APP_HAS_DIST
  session().emplace(argc, argv);
#else
  throw Error(
      processes > 1
          ? fmt::format("started on {} processes, but this build has no distributed path (libfem_dist: "
                        "configure with MPI and PETSc, scripts/install-deps.sh dist)",
                        processes)
          : "--solver mumps, gamg and hypre need the distributed path (libfem_dist), which this build lacks");
#endif
}

void stop() {
#if FEM_APP_HAS_DIST
  session().reset();
#endif
}

int fail(const std::string& message, int code) {
#if FEM_APP_HAS_DIST
  if (session() && size() > 1) {
    // Did every rank fail? Wait a little for all of them at a non-blocking barrier.
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    int done = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!done) {  // the others wait in a collective this rank will never join
      std::fprintf(stderr, "fem: error: rank %d: %s\n", rank(), message.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, code);
    }
    if (root()) std::fprintf(stderr, "fem: error: %s\n", message.c_str());
    stop();
    return code;
  }
#endif
  std::fprintf(stderr, "fem: error: %s\n", message.c_str());
  stop();
  return code;
}

bool distributed() noexcept {
#if FEM_APP_HAS_DIST
  return session().has_value();
#else
  return false;
#endif
}

int rank() noexcept {
#if FEM_APP_HAS_DIST
  if (distributed()) return session()->rank();
#endif
  return 0;
}

int size() noexcept {
#if FEM_APP_HAS_DIST
  if (distributed()) return session()->size();
#endif
  return 1;
}

void agree(std::exception_ptr failure) {
#if FEM_APP_HAS_DIST
  if (distributed()) return dist::agree(MPI_COMM_WORLD, failure);
#endif
  if (failure) std::rethrow_exception(failure);
}

double sum(double v) {
#if FEM_APP_HAS_DIST
  if (distributed()) return dist::sum(MPI_COMM_WORLD, v);
#endif
  return v;
}
std::int64_t sum(std::int64_t v) {
#if FEM_APP_HAS_DIST
  if (distributed()) return dist::sum(MPI_COMM_WORLD, v);
#endif
  return v;
}
double max(double v) {
#if FEM_APP_HAS_DIST
  if (distributed()) return dist::max(MPI_COMM_WORLD, v);
#endif
  return v;
}
double min(double v) { return -max(-v); }

void broadcast(std::string& s) {
#if FEM_APP_HAS_DIST
  if (!distributed()) return;
  int n = static_cast<int>(s.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD);
#else
  (void)s;
#endif
}

CommonOptions for_this_rank(CommonOptions c) {
  if (!root()) {
    c.json.clear();
    c.quiet = true;
  }
  return c;
}

std::shared_ptr<const Mesh> whole_mesh(const Store& store, const std::string& key) {
  if (distributed()) return store.find<Mesh>(key + "#whole");
  return store.get<Mesh>(key);
}

}  // namespace fem::app::parallel

namespace fem::app {

#if FEM_APP_HAS_DIST
struct LinearSystem::Dist {
  std::shared_ptr<const dist::IndexMap> map;
  dist::SolverOptions options;
  std::shared_ptr<const dist::Solver> solver;
  int iterations = 0;  // of the last solve
  std::int64_t solves = 0, total_iterations = 0;
};
#else
struct LinearSystem::Dist {};
#endif

LinearSystem::LinearSystem(const CommonOptions& c, const assembly::FunctionSpace& V, bool spd)
    : distributed_(parallel::distributed()), V_(&V) {
#if FEM_APP_HAS_DIST
  if (distributed_) {
    dist_ = std::make_unique<Dist>();
    const auto method = dist::method_from_name(c.solver == "auto" ? "mumps" : c.solver);
    if (!method)
      throw Error(fmt::format(
          "--solver {}: a serial backend; distributed runs use mumps (the default), gamg or hypre",
          c.solver));
    dist_->options.method = *method;
    dist_->options.spd = spd;
    dist_->options.rtol = c.ksp_rtol;
    dist_->options.prefix = "fem_";
    dist_->map = dist::index_map(V);
    return;
  }
#endif
  (void)spd;
  serial_options_ = solve_options(c);
}

LinearSystem::~LinearSystem() = default;

assembly::DirichletValues LinearSystem::dirichlet_values(
    const std::vector<assembly::Dirichlet>& conditions) const {
#if FEM_APP_HAS_DIST
  if (distributed_) return dist::dirichlet_values(*dist_->map, *V_, conditions);
#endif
  return assembly::dirichlet_values(*V_, conditions);
}

void LinearSystem::check_tags(const std::vector<assembly::Neumann>& conditions) const {
#if FEM_APP_HAS_DIST
  if (distributed_) {
    const auto d = dist::distribution(V_->mesh_key(), *V_->store());
    parallel::local([&] {
      for (const auto& n : conditions) dist::check_facet_tags(*d, n.tags, V_->mesh().source());
    });
  }
#else
  (void)conditions;
#endif
}

LinearSolveInfo LinearSystem::publish(Store& store, const std::string& key,
                                      const assembly::Assembler& assembler, std::vector<double> values,
                                      std::span<const double> b, const assembly::DirichletValues& constrained,
                                      const char* command, bool may_be_singular) {
  constrained_ = constrained_dofs_total(constrained);
  if (!may_be_singular) {
    store.put(key, CsrMatrix(assembler.pattern(), std::move(values)));
    return {};
  }
#if FEM_APP_HAS_DIST
  if (distributed_) {
    if (constrained_ == 0)
      throw Error(
          fmt::format("{}: no Dirichlet condition: the distributed solvers need one (a problem whose "
                      "constants or rigid motions are free runs on one process, without mpirun and "
                      "--solver mumps|gamg|hypre)",
                      command));
    store.put(key, CsrMatrix(assembler.pattern(), std::move(values)));
    return {};
  }
#endif
  return publish_system(store, key, assembler, std::move(values), b, constrained, serial_options_, command);
}

std::int64_t LinearSystem::constrained_dofs_total(const assembly::DirichletValues& bc) const {
  std::int64_t mine = 0;
#if FEM_APP_HAS_DIST
  if (distributed_) {
    for (index_t d : bc.dofs) mine += dist_->map->owns_dof(d) ? 1 : 0;
    return parallel::sum(mine);
  }
#endif
  return static_cast<std::int64_t>(bc.dofs.size());
}

void LinearSystem::factorize(Store& store, const std::string& key) {
#if FEM_APP_HAS_DIST
  if (distributed_) {
    dist_->solver = dist::solver(store, key, dist_->map, dist_->options, std::move(dist_->solver));
    return;
  }
#endif
  factor_ = solve::factorization(store, key, std::move(factor_), serial_options_);
}

std::vector<double> LinearSystem::solve(Store& store, const std::string& key, std::span<const double> b,
                                        LinearSolveInfo& info) {
#if FEM_APP_HAS_DIST
  if (distributed_) {
    if (!dist_->solver) factorize(store, key);
    std::vector<double> x(b.size());
    const auto r = dist_->solver->solve(b, dist::Sums::partial, x);
    info.relative_residual = std::max(info.relative_residual, r.relative_residual);
    dist_->iterations = r.iterations;
    dist_->total_iterations += r.iterations;
    ++dist_->solves;
    return x;
  }
#endif
  return solve_checked(store, key, b, serial_options_, info);
}

std::int64_t LinearSystem::dofs() const {
#if FEM_APP_HAS_DIST
  if (distributed_) return dist_->map->global_dofs();
#endif
  return V_->num_dofs();
}

nlohmann::json LinearSystem::range(std::span<const double> u) const {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : u) lo = std::min(lo, v), hi = std::max(hi, v);
  lo = parallel::min(lo), hi = parallel::max(hi);
  if (!std::isfinite(lo)) lo = hi = 0;
  return {{"min", lo}, {"max", hi}};
}

assembly::Errors LinearSystem::errors(const assembly::Assembler& assembler, std::span<const double> u,
                                      const assembly::VectorFunction& exact,
                                      const LinearSolveInfo& info) const {
  assembly::Errors e = parallel::local([&] { return errors_against(assembler, u, exact, info); });
  if (distributed_)
    e.l2 = std::sqrt(parallel::sum(e.l2 * e.l2)), e.h1 = std::sqrt(parallel::sum(e.h1 * e.h1));
  return e;
}

nlohmann::json LinearSystem::solver_json() const {
#if FEM_APP_HAS_DIST
  if (distributed_) {
    const auto& o = dist_->options;
    nlohmann::json j = {
        {"backend", std::string(dist::to_string(o.method))},
        {"method", o.method == dist::Method::mumps ? (o.spd ? "cholesky" : "lu") : (o.spd ? "cg" : "gmres")},
        {"iterations", dist_->iterations},
        {"total_iterations", dist_->total_iterations},
        {"solves", dist_->solves}};
    if (o.method != dist::Method::mumps) j["rtol"] = o.rtol;
    return j;
  }
#endif
  return {{"backend", std::string(solve::to_string(factor_->backend()))},
          {"ordering", std::string(solve::to_string(factor_->ordering()))},
          {"factor_nonzeros", factor_->factor_nonzeros()}};
}

void LinearSystem::print_solver(std::FILE* out) const {
#if FEM_APP_HAS_DIST
  if (distributed_) {
    const auto j = solver_json();
    fmt::print(
        out, "solver      {} ({}) on {} processes{}\n", j["backend"].get<std::string>(),
        j["method"].get<std::string>(), parallel::size(),
        dist_->options.method == dist::Method::mumps
            ? std::string()
            : fmt::format(", {} iterations (last solve), rtol {:g}", dist_->iterations, dist_->options.rtol));
    return;
  }
#endif
  app::print_solver(out, *factor_);
}

nlohmann::json LinearSystem::run_json(const char* command, const CommonOptions& c, const Store& store,
                                      const std::string& mesh_key, const Timings& t) const {
  nlohmann::json j;
  j["command"] = command;
  const auto whole = parallel::whole_mesh(store, mesh_key);
  j["mesh"] = mesh_json(whole ? *whole : *store.get<Mesh>(mesh_key));
  j["order"] = c.order;
  j["device"] = c.device;
  j["dofs"] = dofs();
  j["dirichlet_dofs"] = constrained();
  j["solver"] = solver_json();
  j["timings"] = timings_json(t);
  j["cache"] = cache_json(store);
  j["ranks"] = parallel::size();
  if (distributed_) {
    nlohmann::json d;
    for (const auto& [name, value] : store.counters())
      if (name.rfind("dist.", 0) == 0) d[name.substr(5)] = value;
    j["dist"] = d;
  }
  return j;
}

double LinearSystem::dot(std::span<const double> a, std::span<const double> b) const {
#if FEM_APP_HAS_DIST
  if (distributed_) return dist_->map->dot(a, b);
#endif
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

void LinearSystem::accumulate(std::span<double> v) const {
#if FEM_APP_HAS_DIST
  if (distributed_) dist_->map->accumulate(v);
#else
  (void)v;
#endif
}

newton::Problem::LinearSolver LinearSystem::newton_solver() {
  newton::Problem::LinearSolver s;
#if FEM_APP_HAS_DIST
  s.refresh = [this](Store& store, const std::string& key) {
    factorize(store, key);
    return solve::Result{};
  };
  s.solve = [this](std::span<const double> F, std::span<double> delta) {
    const auto r = dist_->solver->solve(F, dist::Sums::consistent, delta);
    dist_->iterations = r.iterations;
    dist_->total_iterations += r.iterations;
    ++dist_->solves;
    solve::SolveReport report;
    report.residual = r.relative_residual;
    return report;
  };
#endif
  return s;
}

namespace {

#if FEM_APP_HAS_DIST
// On rank 0: the fields of every rank, placed by original node and cell.
void gather_fields(const dist::Distribution& d, const Mesh& whole, std::span<const mesh::Field> in,
                   bool cells, std::vector<std::vector<double>>& out) {
  const MPI_Comm comm = d.comm;
  const int ranks = d.size;
  std::vector<index_t> ids;
  if (cells)
    ids = d.original_cell;
  else
    ids.assign(d.original_node.begin(), d.original_node.begin() + d.owned_nodes);
  auto gather = [&](const auto& mine, MPI_Datatype type) {
    using T = typename std::decay_t<decltype(mine)>::value_type;
    int n = static_cast<int>(mine.size());
    std::vector<int> counts(ranks), offsets(ranks + 1, 0);
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
    for (int p = 0; p < ranks; ++p) offsets[p + 1] = offsets[p] + counts[p];
    std::vector<T> all(d.rank == 0 ? static_cast<std::size_t>(offsets[ranks]) : 0);
    MPI_Gatherv(mine.data(), n, type, all.data(), counts.data(), offsets.data(), type, 0, comm);
    return all;
  };
  const auto all_ids = gather(ids, MPI_INT);
  out.clear();
  for (const auto& f : in) {
    std::vector<double> mine;
    for (std::size_t k = 0; k < ids.size(); ++k)
      mine.insert(mine.end(), f.values.begin() + k * f.components, f.values.begin() + (k + 1) * f.components);
    const auto all = gather(mine, MPI_DOUBLE);
    std::vector<double> placed;
    if (d.rank == 0) {
      placed.assign(static_cast<std::size_t>(cells ? whole.num_cells() : whole.num_nodes()) * f.components,
                    0.0);
      for (std::size_t k = 0; k < all_ids.size(); ++k)
        std::copy_n(all.begin() + k * f.components, f.components, placed.begin() + all_ids[k] * f.components);
    }
    out.push_back(std::move(placed));
  }
}
#endif

}  // namespace

void write_solution(const std::string& path, const Store& store, const std::string& mesh_key,
                    std::span<const mesh::Field> points, std::span<const mesh::Field> cells) {
  const auto mesh = store.get<Mesh>(mesh_key);
#if FEM_APP_HAS_DIST
  if (parallel::distributed()) {
    const auto d = dist::distribution(mesh_key, store);
    if (lowercase_extension(path) == ".pvtu") {
      std::vector<double> ranks(static_cast<std::size_t>(mesh->num_cells()), parallel::rank());
      std::vector<mesh::Field> cell_fields(cells.begin(), cells.end());
      cell_fields.push_back({"rank", 1, ranks});
      parallel::local([&] {
        mesh::write_vtu(mesh::pvtu_piece_path(path, parallel::rank()), *mesh, points, cell_fields);
      });
      parallel::local([&] {
        if (!parallel::root()) return;
        std::vector<std::string> pieces;
        for (int r = 0; r < parallel::size(); ++r) pieces.push_back(mesh::pvtu_piece_path(path, r).string());
        mesh::write_pvtu(path, pieces, points, cell_fields);
      });
      return;
    }
    // One serial file on rank 0, by original node and cell.
    const auto whole = parallel::whole_mesh(store, mesh_key);
    std::vector<std::vector<double>> point_values, cell_values;
    gather_fields(*d, whole ? *whole : *mesh, points, false, point_values);
    gather_fields(*d, whole ? *whole : *mesh, cells, true, cell_values);
    parallel::local([&] {
      if (!parallel::root()) return;
      std::vector<mesh::Field> p, c;
      for (std::size_t k = 0; k < points.size(); ++k)
        p.push_back({points[k].name, points[k].components, point_values[k]});
      for (std::size_t k = 0; k < cells.size(); ++k)
        c.push_back({cells[k].name, cells[k].components, cell_values[k]});
      mesh::write_vtu(path, *whole, p, c);
    });
    return;
  }
#endif
  mesh::write_vtu(path, *mesh, points, cells);
}

SolutionSeries::SolutionSeries(const std::filesystem::path& pvd) : pvd_(pvd) {}

void SolutionSeries::write(double time, const Store& store, const std::string& mesh_key,
                           std::span<const mesh::Field> points) {
  if (!parallel::distributed()) {
    pvd_.write(time, *store.get<Mesh>(mesh_key), points);
    ++frames_;
    return;
  }
  // Rank 0 keeps the .pvd and names the frame; every rank writes its piece of it.
  std::string pvtu = parallel::root() ? pvd_.next_path(".pvtu").string() : std::string();
  parallel::broadcast(pvtu);
  write_solution(pvtu, store, mesh_key, points);
  parallel::local([&] {
    if (parallel::root()) pvd_.add(time, pvtu);
  });
  ++frames_;
}

}  // namespace fem::app
