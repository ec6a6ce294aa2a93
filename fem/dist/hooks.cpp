// The distributed half of runtime.cpp (detail/runtime.hpp) on MPI and PETSc: the program's
// Session, distributing a mesh, a space's IndexMap as its Layout, the PETSc solvers as
// solve::LinearSolver, and output gathered on rank 0. Handed to libfem_dist_runtime's loader as
// one table (fem_dist_hooks_v2): these functions are this library's own, no exported symbol
// stands in for the loader's.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "fem/dist/detail/runtime.hpp"
#include "fem/dist/dist.hpp"

namespace fem::dist::on_petsc {
namespace {

std::optional<Session>& session() {
  static std::optional<Session> s;
  return s;
}

/// A Solver of the store as a LinearSolver: factorize() asks for the solver of the key's new
/// version, handing the previous one back to be refactorized (or re-preconditioned) in place.
/// A matrix that declares a null space (the flow's free pressure constant) is solved as the
/// serial factorizations solve one: its pinned matrix factorized (pin_null_space), the data made
/// compatible (refused beyond the compatibility tolerance) with the pinned unknown zero, and the
/// solution normalized by the null space's functional, every sum a global one.
class DistributedSolver final : public solve::LinearSolver {
 public:
  DistributedSolver(std::shared_ptr<const IndexMap> map, const solve::Options& options)
      : LinearSolver(options), map_(std::move(map)) {
    solve::SolverReport& r = report_mut();
    r.backend = options.backend;
    r.method = method(options);
    r.processes = map_->processes().size();
  }
  const Layout& layout() const noexcept override { return *map_; }

 protected:
  bool do_factorize(Store& store, const std::string& key) override {
    bool computed = false;
    null_space_ = collective_input(map_->comm(), store, key, *map_).value->null_space();
    pinned_ = {};
    // A null space on some processes only is refused (with the others) by pin_null_space.
    solve::Options o = options();
    if (map_->processes().max(null_space_ ? 1.0 : 0.0) > 0) {
      pinned_ = pin_null_space(store, key, *map_);
      // The Schur complement of the pinned operator has 1 at the pinned pressure: so has its
      // preconditioner's (a mass matrix's diagonal there would be an eigenvalue of the wrong sign).
      for (std::string* k : {&o.schur_preconditioner, &o.schur_laplacian, &o.schur_convection})
        if (!k->empty()) *k = pin(store, *k, *map_, pinned_);
    }
    solver_ = solver(store, null_space_ ? pinned_.key : key, map_, o, std::move(solver_), &computed);
    return computed;  // the same on every process
  }

  solve::SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs, bool transpose,
                              Sums sums, bool check) override {
    try {
      if (!null_space_) return solver_->solve(B, sums, X, nrhs, transpose, check);
      // Consistent data, compatible (the defect and the correction are global), the pinned
      // unknown's equation dropped; the solution normalized (every process decides alike).
      const auto n = static_cast<std::size_t>(map_->local_dofs());
      std::vector<double> C(B.begin(), B.end());
      double defect = 0;
      for (index_t k = 0; k < nrhs; ++k) {
        const std::span<double> c(C.data() + static_cast<std::size_t>(k) * n, n);
        if (sums == Sums::partial) map_->accumulate(c);
        const double d = null_space_->defect(c, *map_);
        defect = std::max(defect, d);
        const double tolerance = std::max(options().compatibility_tolerance, null_space_->rounding_defect());
        if (!(d <= tolerance)) {
          solve::SolveReport r;
          r.status = solve::Status::incompatible;
          r.compatibility_defect = d;
          r.reason = fmt::format(
              "the data are not compatible with the matrix's null space ({}): relative defect {:.3g} > "
              "tolerance {:.3g}",
              null_space_->description(), d, tolerance);
          return r;
        }
        null_space_->make_compatible(c, *map_);
        if (pinned_.local >= 0) c[static_cast<std::size_t>(pinned_.local)] = 0.0;
      }
      solve::SolveReport r = solver_->solve(C, Sums::consistent, X, nrhs, transpose, check);
      for (index_t k = 0; k < nrhs; ++k)
        null_space_->normalize(X.subspan(static_cast<std::size_t>(k) * n, n), *map_);
      r.compatibility_defect = defect;
      return r;
    } catch (const NumericalError& e) {  // agreed: PETSc's reason and the residual are global
      return {solve::Status::backend_error, e.what()};
    }
  }

 private:
  std::shared_ptr<const IndexMap> map_;
  std::shared_ptr<const Solver> solver_;
  std::shared_ptr<const NullSpace> null_space_;  // of the matrix last factorized
  Pinned pinned_;
};

// On rank 0 (where `whole` is the whole mesh): the fields of every rank, placed by original node
// and cell.
void gather_fields(const Distribution& d, const Mesh* whole, std::span<const mesh::Field> in, bool cells,
                   std::vector<std::vector<double>>& out) {
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
      placed.assign(static_cast<std::size_t>(cells ? whole->num_cells() : whole->num_nodes()) * f.components,
                    0.0);
      for (std::size_t k = 0; k < all_ids.size(); ++k)
        std::copy_n(all.begin() + k * f.components, f.components, placed.begin() + all_ids[k] * f.components);
    }
    out.push_back(std::move(placed));
  }
}

void start(int& argc, char**& argv) { session().emplace(argc, argv); }
void stop() { session().reset(); }
bool running() noexcept { return session().has_value(); }

const Processes& world() noexcept {
  static const Group g(MPI_COMM_WORLD);
  return g;
}

void abort_unless_all_failed(const std::string& prefix, const std::string& message, int code) {
  // Did every rank fail? Wait a little for all of them at a non-blocking barrier.
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  int done = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (done) return;
  // The others wait in a collective this rank will never join.
  std::fprintf(stderr, "%s: rank %d: %s\n", prefix.c_str(), world().rank(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
}

void distribute(std::shared_ptr<const Mesh> whole, const std::string& key, Store& store) {
  dist::distribute(MPI_COMM_WORLD, std::move(whole), key, store);
}

bool distributed(const Store& store, const std::string& mesh_key) {
  return store.contains(mesh_key + "#dist");
}

std::shared_ptr<const Layout> index_map(const assembly::FunctionSpace& V) { return dist::index_map(V); }

std::unique_ptr<solve::LinearSolver> make_solver(const assembly::FunctionSpace& V,
                                                 const solve::Options& options) {
  solve::Options o = options;
  if (o.backend == solve::Backend::automatic) o.backend = solve::Backend::mumps;
  FEM_EXPECTS(solve::distributed(o.backend) && o.backend != solve::Backend::fieldsplit,
              "solver {}: the distributed solvers of one field are mumps (the default), gamg and hypre "
              "(fieldsplit is for mixed spaces)",
              solve::to_string(o.backend));
  FEM_EXPECTS(distributed(*V.store(), V.mesh_key()),
              "solver {}: the mesh '{}' was not published by fem::dist::publish_mesh while running "
              "(fem::dist::start)",
              solve::to_string(o.backend), V.mesh_key());
  return std::make_unique<DistributedSolver>(dist::index_map(V), o);
}

std::shared_ptr<const Layout> mixed_index_map(const assembly::MixedSpace& W) { return dist::index_map(W); }

std::unique_ptr<solve::LinearSolver> make_mixed_solver(const assembly::MixedSpace& W,
                                                       const solve::Options& options) {
  solve::Options o = options;
  if (o.backend == solve::Backend::automatic) o.backend = solve::Backend::mumps;
  const assembly::FunctionSpace& V = W.velocity();
  FEM_EXPECTS(o.backend == solve::Backend::mumps || o.backend == solve::Backend::fieldsplit,
              "solver {}: the mixed space's saddle-point matrices are solved by mumps (the default) or "
              "fieldsplit (FGMRES with a Schur complement preconditioner) on the distributed path",
              solve::to_string(o.backend));
  FEM_EXPECTS(distributed(*V.store(), V.mesh_key()),
              "solver {}: the mesh '{}' was not published by fem::dist::publish_mesh while running "
              "(fem::dist::start)",
              solve::to_string(o.backend), V.mesh_key());
  return std::make_unique<DistributedSolver>(dist::index_map(W), o);
}

void write_gathered(const std::string& path, const Store& store, const std::string& mesh_key,
                    std::span<const mesh::Field> points, std::span<const mesh::Field> cells) {
  const auto d = distribution(mesh_key, store);
  const auto whole = store.find<Mesh>(mesh_key + "#whole");
  collective(d->comm, [&] {
    FEM_EXPECTS(d->rank != 0 || whole,
                "writing '{}' gathered on rank 0: rank 0 has no whole mesh of '{}' (publish the mesh with "
                "fem::dist::publish_mesh, or write .pvtu pieces)",
                path, mesh_key);
  });
  std::vector<std::vector<double>> point_values, cell_values;
  gather_fields(*d, whole.get(), points, false, point_values);
  gather_fields(*d, whole.get(), cells, true, cell_values);
  collective(d->comm, [&] {
    if (d->rank != 0) return;
    std::vector<mesh::Field> p, c;
    for (std::size_t k = 0; k < points.size(); ++k)
      p.push_back({points[k].name, points[k].components, point_values[k]});
    for (std::size_t k = 0; k < cells.size(); ++k)
      c.push_back({cells[k].name, cells[k].components, cell_values[k]});
    mesh::write_vtu(path, *whole, p, c);
  });
}

}  // namespace
// eigen.cpp
eigen::Result eigen_solve(Store& store, const std::string& K, const std::string& M,
                          const assembly::FunctionSpace& V, const eigen::Options& options);

}  // namespace fem::dist::on_petsc

extern "C" const fem::dist::detail::Hooks* fem_dist_hooks_v2() noexcept {
  using namespace fem::dist::on_petsc;
  static const fem::dist::detail::Hooks hooks{start,
                                              stop,
                                              running,
                                              world,
                                              abort_unless_all_failed,
                                              distribute,
                                              distributed,
                                              index_map,
                                              make_solver,
                                              write_gathered,
                                              eigen_solve,
                                              mixed_index_map,
                                              make_mixed_solver};
  return &hooks;
}
