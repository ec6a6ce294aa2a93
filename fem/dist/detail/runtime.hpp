// Internal: the distributed half of fem/dist/runtime.cpp. runtime.cpp and loader.cpp make
// libfem_dist_runtime, which links no MPI and no PETSc: a serial program loads neither. The
// functions below are loader.cpp's; when a run is distributed (fem::dist::start), it dlopen()s
// libfem_dist, whose hooks.cpp hands over the table `Hooks` (fem_dist_hooks), and forwards to it.
// Without libfem_dist (a build without MPI and PETSc, or the library not built) the distributed
// path refuses with NotCompiled, and running() is false.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "fem/assembly/mixed.hpp"
#include "fem/assembly/space.hpp"
#include "fem/eigen/eigen.hpp"
#include "fem/layout.hpp"
#include "fem/mesh.hpp"
#include "fem/mesh/vtu.hpp"
#include "fem/solve/linear_solver.hpp"
#include "fem/store.hpp"

namespace fem::dist::detail {

bool available() noexcept;
void start(int& argc, char**& argv);
void stop();
bool running() noexcept;
const Processes& world() noexcept;
/// When only some processes failed (the others wait in a collective): prints "<prefix>: rank r:
/// <message>" and aborts the job with `code` (never returns). When all did, returns.
void abort_unless_all_failed(const std::string& prefix, const std::string& message, int code);
/// Collective: distributes `whole` (rank 0's; null elsewhere) under `key`.
void distribute(std::shared_ptr<const Mesh> whole, const std::string& key, Store& store);
/// Whether the mesh under `mesh_key` is a part of a distributed mesh (published with a
/// Distribution).
bool distributed(const Store& store, const std::string& mesh_key);
std::shared_ptr<const Layout> index_map(const assembly::FunctionSpace& V);
std::unique_ptr<solve::LinearSolver> make_solver(const assembly::FunctionSpace& V,
                                                 const solve::Options& options);
std::shared_ptr<const Layout> mixed_index_map(const assembly::MixedSpace& W);
std::unique_ptr<solve::LinearSolver> make_mixed_solver(const assembly::MixedSpace& W,
                                                       const solve::Options& options);
eigen::Result eigen_solve(Store& store, const std::string& K, const std::string& M,
                          const assembly::FunctionSpace& V, const eigen::Options& options);
/// Gathers the fields of a distributed mesh on rank 0 into one .vtu of the whole mesh.
void write_gathered(const std::string& path, const Store& store, const std::string& mesh_key,
                    std::span<const mesh::Field> points, std::span<const mesh::Field> cells);

/// The distributed path as libfem_dist implements it (hooks.cpp).
struct Hooks {
  void (*start)(int& argc, char**& argv);
  void (*stop)();
  bool (*running)() noexcept;
  const Processes& (*world)() noexcept;
  void (*abort_unless_all_failed)(const std::string& prefix, const std::string& message, int code);
  void (*distribute)(std::shared_ptr<const Mesh> whole, const std::string& key, Store& store);
  bool (*distributed)(const Store& store, const std::string& mesh_key);
  std::shared_ptr<const Layout> (*index_map)(const assembly::FunctionSpace& V);
  std::unique_ptr<solve::LinearSolver> (*make_solver)(const assembly::FunctionSpace& V,
                                                      const solve::Options& options);
  void (*write_gathered)(const std::string& path, const Store& store, const std::string& mesh_key,
                         std::span<const mesh::Field> points, std::span<const mesh::Field> cells);
  eigen::Result (*eigen_solve)(Store& store, const std::string& K, const std::string& M,
                               const assembly::FunctionSpace& V, const eigen::Options& options);
  std::shared_ptr<const Layout> (*mixed_index_map)(const assembly::MixedSpace& W);
  std::unique_ptr<solve::LinearSolver> (*make_mixed_solver)(const assembly::MixedSpace& W,
                                                            const solve::Options& options);
};

}  // namespace fem::dist::detail

/// libfem_dist's table, the one symbol the loader looks up (C linkage: a plain name for dlsym).
extern "C" const fem::dist::detail::Hooks* fem_dist_hooks_v2() noexcept;
