// The distributed path as a program's front end sees it, with no MPI or PETSc in its types:
// start and stop the process group, publish a mesh (distributed when running on several
// processes), the layout and the linear solver of a space, output gathered on one process or in
// pieces. A front end calls these whether it runs on one process or many, and the library
// decides. Every function exists in every build: without MPI and PETSc (libfem_dist's stub) a
// program runs on one process, and a request for the distributed path is refused with one line.
//
//   int main(int argc, char** argv) {
//     fem::dist::start(argc, argv);                   // MPI + PETSc when launched by mpirun
//     auto whole = fem::dist::processes().root() ? read_the_mesh() : nullptr;
//     fem::dist::publish_mesh(whole, "mesh/p", store);          // the whole mesh, or each part
//     fem::assembly::FunctionSpace V("mesh/p", 1, 1, store);   // this process's part
//     auto solver = fem::dist::make_solver(V, options);         // serial cache, or MUMPS/GAMG/hypre
//     ...
//     fem::dist::stop();
//   }
#pragma once

#include <filesystem>
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

namespace fem::dist {

/// Whether this build has the distributed path (MPI and PETSc).
bool available() noexcept;
/// Processes in the job as its launcher says (Open MPI, MPICH/Hydra, PMIx), before MPI starts.
int launched_processes() noexcept;

/// Starts MPI and PETSc (until stop()) when the program was launched on several processes, or
/// when `wanted` (a PETSc solver on one process). In a build without the distributed path that
/// is a NotCompiled error of one line; otherwise nothing happens.
void start(int& argc, char**& argv, bool wanted = false);
/// Collective: PETSc and MPI finalized (nothing when start() started nothing).
void stop();
/// Whether start() started the process group.
bool running() noexcept;
/// The processes of the run: all of them when running, one otherwise.
const Processes& processes() noexcept;
/// The error path of a program's main: prints "<program>: error: <message>" once (rank 0),
/// stops and returns `code` when every process failed together; when only some did (the others
/// wait in a collective call), prints the failing rank's message and aborts the job with `code`.
int fail(const std::string& program, const std::string& message, int code);

/// Collective: `whole` (rank 0's when running; ignored, may be null, on the others) published
/// under `key`: itself on one process; when running, rank 0 keeps it as `<key>#whole` and
/// partitions it, and every process publishes its part under `key` (fem::dist::distribute).
void publish_mesh(std::shared_ptr<const Mesh> whole, const std::string& key, Store& store = fem::store());
/// The whole mesh published under `key`: the mesh itself, or on rank 0 of a distributed run the
/// whole one (nullptr on the other ranks).
std::shared_ptr<const Mesh> whole_mesh(const Store& store, const std::string& key);

/// Collective: how V's local vectors sit in the problem's global vectors: its IndexMap on a
/// distributed mesh, Layout::serial() otherwise.
std::shared_ptr<const Layout> layout(const assembly::FunctionSpace& V);

/// Collective: the linear solver of `options` for matrices on V: on a distributed mesh, or for
/// a distributed backend (mumps, gamg, hypre), a PETSc solver over V's IndexMap (automatic:
/// MUMPS; a serial backend there is an InvalidArgument naming it); otherwise the serial
/// factorization cache (solve::make_solver).
std::unique_ptr<solve::LinearSolver> make_solver(const assembly::FunctionSpace& V,
                                                 const solve::Options& options);

/// Collective: the layout of a mixed space's vectors (its velocity's DOFs, then its pressure's):
/// on a distributed mesh the two spaces' IndexMaps stacked (each process owns its owned
/// velocity DOFs, then its owned pressure DOFs; its ghosts are the two spaces' ghosts);
/// Layout::serial() otherwise.
std::shared_ptr<const Layout> layout(const assembly::MixedSpace& W);

/// Collective: the linear solver of `options` for block matrices on W (W.pattern()): on a
/// distributed mesh, or for a distributed backend, MUMPS over W's stacked IndexMap (LU; LDLᵀ
/// with Options::symmetric); otherwise the serial factorization cache. A matrix that declares a
/// null space of one vector (the flow's free pressure constant) is solved as the serial
/// factorizations solve it: one unknown pinned (the lowest rank's), the data made compatible and
/// the solution normalized by the null space's functional, with global sums.
std::unique_ptr<solve::LinearSolver> make_solver(const assembly::MixedSpace& W,
                                                 const solve::Options& options);

/// Collective: the eigenpairs of K x = λ M x for matrices on V (fem::eigen's contract): on a
/// distributed mesh SLEPc's Krylov–Schur with shift-invert on MUMPS (the constrained unknowns
/// eliminated, Sturm counts from MUMPS's inertia), its vectors in the local numbering of each
/// process; otherwise fem::eigen::solve.
eigen::Result eigen_solve(Store& store, const std::string& K, const std::string& M,
                          const assembly::FunctionSpace& V, const eigen::Options& options);

/// Collective: point fields (on the mesh nodes) and cell fields of the mesh under `mesh_key`,
/// written as a .vtu; on a distributed mesh FILE.vtu is gathered on rank 0 into one serial file
/// by original node and cell, FILE.pvtu is one piece per process (FILE_p<rank>.vtu, with a
/// "rank" cell field) and the .pvtu that rank 0 writes.
void write_vtu(const std::filesystem::path& path, const Store& store, const std::string& mesh_key,
               std::span<const mesh::Field> points, std::span<const mesh::Field> cells = {});

/// A time series: .vtu frames listed by a .pvd; on a distributed mesh .pvtu frames (a piece per
/// process) listed by the .pvd that rank 0 writes. One output, all or nothing (mesh::PvdWriter):
/// the frames wait in a private folder next to the .pvd until commit() publishes them with the
/// .pvd; a series destroyed before (a failed step) removes them and leaves a previous series at
/// that path as it was. write() and commit() are collective.
class Series {
 public:
  explicit Series(const std::filesystem::path& pvd);
  void write(double time, const Store& store, const std::string& mesh_key,
             std::span<const mesh::Field> points);
  void commit();
  const std::filesystem::path& path() const noexcept { return pvd_.path(); }
  std::size_t frames() const noexcept { return frames_; }

 private:
  mesh::PvdWriter pvd_;
  std::size_t frames_ = 0;
};

}  // namespace fem::dist
