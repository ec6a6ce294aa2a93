// The front ends' distributed path (runtime.hpp): the decisions and everything that needs no
// MPI, built in every configuration; the rest goes through detail/runtime.hpp (hooks.cpp with
// MPI and PETSc, stub.cpp without).
#include "fem/dist/runtime.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "fem/dist/detail/runtime.hpp"

namespace fem::dist {

bool available() noexcept { return detail::available(); }

int launched_processes() noexcept {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  return 1;
}

void start(int& argc, char**& argv, bool wanted) {
  const int processes = launched_processes();
  if (processes <= 1 && !wanted) return;
  if (!detail::available())
    throw NotCompiled("MPI and PETSc",
                      processes > 1
                          ? fmt::format("a run on {} processes (the distributed path of libfem_dist: "
                                        "scripts/install-deps.sh dist, then configure again)",
                                        processes)
                          : std::string("a distributed solver (mumps, gamg or hypre: libfem_dist's; "
                                        "scripts/install-deps.sh dist, then configure again)"));
  detail::start(argc, argv);
}

void stop() {
  if (detail::running()) detail::stop();
}

bool running() noexcept { return detail::running(); }

const Processes& processes() noexcept { return running() ? detail::world() : Processes::one(); }

int fail(const std::string& program, const std::string& message, int code) {
  if (processes().size() > 1)
    detail::abort_unless_all_failed(fmt::format("{}: error", program), message, code);
  if (processes().root()) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), message.c_str());
    std::fflush(stderr);
  }
  stop();
  return code;
}

void publish_mesh(std::shared_ptr<const Mesh> whole, const std::string& key, Store& store) {
  if (!running()) {
    FEM_EXPECTS(whole != nullptr, "publish_mesh '{}': no mesh", key);
    store.put(key, std::move(whole));
    return;
  }
  processes().collective([&] {
    if (processes().root()) store.put(key + "#whole", whole);  // for gathered output and reports
  });
  detail::distribute(std::move(whole), key, store);
}

std::shared_ptr<const Mesh> whole_mesh(const Store& store, const std::string& key) {
  if (detail::distributed(store, key)) return store.find<Mesh>(key + "#whole");
  return store.get<Mesh>(key);
}

std::shared_ptr<const Layout> layout(const assembly::FunctionSpace& V) {
  if (detail::distributed(*V.store(), V.mesh_key())) return detail::index_map(V);
  return std::shared_ptr<const Layout>(std::shared_ptr<const Layout>(),
                                       &Layout::serial());  // static: no owner
}

std::unique_ptr<solve::LinearSolver> make_solver(const assembly::FunctionSpace& V,
                                                 const solve::Options& options) {
  if (detail::distributed(*V.store(), V.mesh_key()) || solve::distributed(options.backend))
    return detail::make_solver(V, options);
  return solve::make_solver(options);
}

std::shared_ptr<const Layout> layout(const assembly::MixedSpace& W) {
  const assembly::FunctionSpace& V = W.velocity();
  if (detail::distributed(*V.store(), V.mesh_key())) return detail::mixed_index_map(W);
  return std::shared_ptr<const Layout>(std::shared_ptr<const Layout>(), &Layout::serial());
}

std::unique_ptr<solve::LinearSolver> make_solver(const assembly::MixedSpace& W,
                                                 const solve::Options& options) {
  const assembly::FunctionSpace& V = W.velocity();
  if (detail::distributed(*V.store(), V.mesh_key()) || solve::distributed(options.backend))
    return detail::make_mixed_solver(W, options);
  return solve::make_solver(options);
}

eigen::Result eigen_solve(Store& store, const std::string& K, const std::string& M,
                          const assembly::FunctionSpace& V, const eigen::Options& options) {
  if (detail::distributed(*V.store(), V.mesh_key())) return detail::eigen_solve(store, K, M, V, options);
  return eigen::solve(store, K, M, options);
}

void write_vtu(const std::filesystem::path& path, const Store& store, const std::string& mesh_key,
               std::span<const mesh::Field> points, std::span<const mesh::Field> cells) {
  const auto mesh = store.get<Mesh>(mesh_key);
  if (!detail::distributed(store, mesh_key)) {
    mesh::write_vtu(path, *mesh, points, cells);
    return;
  }
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".pvtu") {
    detail::write_gathered(path.string(), store, mesh_key, points, cells);
    return;
  }
  const Processes& p = processes();
  std::vector<double> ranks(static_cast<std::size_t>(mesh->num_cells()), p.rank());
  std::vector<mesh::Field> cell_fields(cells.begin(), cells.end());
  cell_fields.push_back({"rank", 1, ranks});
  p.collective([&] { mesh::write_vtu(mesh::pvtu_piece_path(path, p.rank()), *mesh, points, cell_fields); });
  p.collective([&] {
    if (!p.root()) return;
    std::vector<std::string> pieces;
    for (int r = 0; r < p.size(); ++r) pieces.push_back(mesh::pvtu_piece_path(path, r).string());
    mesh::write_pvtu(path, pieces, points, cell_fields);
  });
}

Series::Series(const std::filesystem::path& pvd) : pvd_(pvd) {}

void Series::write(double time, const Store& store, const std::string& mesh_key,
                   std::span<const mesh::Field> points) {
  if (!detail::distributed(store, mesh_key)) {
    pvd_.write(time, *store.get<Mesh>(mesh_key), points);
    ++frames_;
    return;
  }
  // Rank 0 keeps the .pvd and names the frame; every process writes its piece of it.
  const Processes& p = processes();
  std::string pvtu = p.root() ? pvd_.next_path(".pvtu").string() : std::string();
  p.broadcast(pvtu);
  write_vtu(pvtu, store, mesh_key, points);
  p.collective([&] {
    if (p.root()) pvd_.add(time, pvtu);
  });
  ++frames_;
}

void Series::commit() {
  // Rank 0 made the private folder and names the frames (the pieces in it too: one file system).
  const Processes& p = processes();
  if (p.size() == 1) return pvd_.commit();
  p.collective([&] {
    if (p.root()) pvd_.commit();
  });
}

}  // namespace fem::dist
