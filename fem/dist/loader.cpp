// The distributed path on demand (detail/runtime.hpp): libfem_dist, and with it MPI and PETSc
// (some hundred shared libraries), is loaded when a run is distributed and only then, so a
// serial program starts in milliseconds. Until it is loaded every answer is the serial one.
#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>

#include "fem/dist/detail/runtime.hpp"

namespace fem::dist::detail {
namespace {

const Hooks* loaded = nullptr;

// libfem_dist sits beside this library (build tree and installation alike).
std::filesystem::path library_path() {
#ifdef FEM_DIST_LIBRARY
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&library_path), &info) != 0 && info.dli_fname)
    return std::filesystem::path(info.dli_fname).parent_path() / FEM_DIST_LIBRARY;
  return FEM_DIST_LIBRARY;
#else
  return {};
#endif
}

[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  throw NotCompiled("MPI and PETSc", fmt::format("{} ({})", what, why));
}

const std::string& not_built() {
  static const std::string why =
      "the distributed path, libfem_dist: scripts/install-deps.sh dist, then configure again";
  return why;
}

// The table, loaded now if need be; throws NotCompiled saying why it cannot be.
const Hooks& load(const std::string& what) {
  if (loaded) return *loaded;
  const auto path = library_path();
  if (path.empty()) refuse(what, not_built());
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    refuse(what, fmt::format("{} is not built: cmake --build build --target fem_dist, or ./test.sh",
                             path.filename().string()));
  // Global: Open MPI's own plugins resolve libmpi's symbols through the global scope.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) refuse(what, fmt::format("loading {}: {}", path.string(), dlerror()));
  using Get = const Hooks* (*)() noexcept;
  const auto get = reinterpret_cast<Get>(dlsym(handle, "fem_dist_hooks_v2"));
  if (!get) refuse(what, fmt::format("{} has no fem_dist_hooks_v2: another version?", path.string()));
  loaded = get();
  return *loaded;
}

}  // namespace

bool available() noexcept {
  if (loaded) return true;
  std::error_code ec;
  const auto path = library_path();
  return !path.empty() && std::filesystem::exists(path, ec);
}

void start(int& argc, char**& argv) { load("a distributed run").start(argc, argv); }
void stop() {
  if (loaded) loaded->stop();
}
bool running() noexcept { return loaded && loaded->running(); }
const Processes& world() noexcept { return loaded ? loaded->world() : Processes::one(); }
void abort_unless_all_failed(const std::string& prefix, const std::string& message, int code) {
  if (loaded) loaded->abort_unless_all_failed(prefix, message, code);
}
void distribute(std::shared_ptr<const Mesh> whole, const std::string& key, Store& store) {
  load("distributing a mesh").distribute(std::move(whole), key, store);
}
bool distributed(const Store& store, const std::string& mesh_key) {
  return loaded && loaded->distributed(store, mesh_key);
}
std::shared_ptr<const Layout> index_map(const assembly::FunctionSpace& V) {
  return load("an index map over processes").index_map(V);
}
std::unique_ptr<solve::LinearSolver> make_solver(const assembly::FunctionSpace& V,
                                                 const solve::Options& options) {
  return load(fmt::format("the {} solver", solve::to_string(options.backend))).make_solver(V, options);
}
void write_gathered(const std::string& path, const Store& store, const std::string& mesh_key,
                    std::span<const mesh::Field> points, std::span<const mesh::Field> cells) {
  load("gathering a distributed solution").write_gathered(path, store, mesh_key, points, cells);
}

std::shared_ptr<const Layout> mixed_index_map(const assembly::MixedSpace& W) {
  return load("an index map over processes").mixed_index_map(W);
}
std::unique_ptr<solve::LinearSolver> make_mixed_solver(const assembly::MixedSpace& W,
                                                       const solve::Options& options) {
  return load(fmt::format("the {} solver", solve::to_string(options.backend))).make_mixed_solver(W, options);
}

eigen::Result eigen_solve(Store& store, const std::string& K, const std::string& M,
                          const assembly::FunctionSpace& V, const eigen::Options& options) {
  return load("a distributed eigenproblem").eigen_solve(store, K, M, V, options);
}

}  // namespace fem::dist::detail
