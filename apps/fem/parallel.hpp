// How a solver subcommand runs: in one process through the store's serial factorization cache,
// or distributed through fem::dist (MPI + PETSc) when started by mpirun with several processes,
// or asked for a PETSc solver (--solver mumps|gamg|hypre, also on one process). The subcommands
// are written once against this file: in a serial run every function here is the identity or
// the serial path.
//
// Distributed runs: rank 0 reads and partitions the mesh, every rank assembles its part; text
// and JSON come from rank 0 only, for the whole problem; an error on any rank is one line from
// rank 0 and every rank exits non-zero. Everything collective (the reductions here, the solves)
// is called by every rank in the same order: never inside a rank-0-only block (text, JSON).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "fem/mesh/vtu.hpp"
#include "fem/newton/newton.hpp"
#include "solver_common.hpp"

namespace fem::dist {
class IndexMap;
class Solver;
}  // namespace fem::dist

namespace fem::app::parallel {

/// In main, before the options are parsed: starts MPI and PETSc when the run is distributed (see
/// the file comment). Without libfem_dist, several processes or a PETSc solver are an error.
void start(int& argc, char**& argv);
/// In main, at the end: PETSc and MPI finalized (collective).
void stop();
/// main's error path: 1 when every rank failed together (rank 0 printed `message`); a failure
/// on some ranks only (others wait in a collective) aborts the job with the message instead.
int fail(const std::string& message, int code);

bool distributed() noexcept;
int rank() noexcept;
int size() noexcept;
inline bool root() noexcept { return rank() == 0; }

/// Every rank's outcome agreed: when one failed, every rank throws (the failing rank's error).
void agree(std::exception_ptr failure);
/// f(), its failure agreed across ranks (a no-op serially).
template <class F>
auto local(F&& f) -> std::invoke_result_t<F> {
  return agreed(std::forward<F>(f), [](std::exception_ptr failure) { agree(failure); });
}

/// Sums, minima and maxima over ranks (the value itself serially).
double sum(double v);
std::int64_t sum(std::int64_t v);
double min(double v);
double max(double v);
/// Rank 0's string on every rank.
void broadcast(std::string& s);

/// The options this rank acts on: ranks other than 0 print nothing and write no JSON.
CommonOptions for_this_rank(CommonOptions c);

/// The whole mesh as read (rank 0 of a distributed run; the mesh itself serially).
std::shared_ptr<const Mesh> whole_mesh(const Store& store, const std::string& key);

}  // namespace fem::app::parallel

namespace fem::app {

/// The linear system of a run and its solver: the serial factorization cache, or a distributed
/// fem::dist solver (MUMPS by default, GAMG or BoomerAMG with --solver).
class LinearSystem {
 public:
  /// `spd`: the matrix is symmetric positive definite (Cholesky, CG).
  LinearSystem(const CommonOptions& c, const assembly::FunctionSpace& V, bool spd);
  ~LinearSystem();

  /// The Dirichlet values of `conditions` (assembly::dirichlet_values; distributed: the same on
  /// every rank that has the DOF, tags checked against the whole mesh, failures agreed).
  assembly::DirichletValues dirichlet_values(const std::vector<assembly::Dirichlet>& conditions) const;
  /// Distributed: the facet tags of Neumann conditions checked against the whole mesh (a part
  /// may lack them); serially the assembly checks them.
  void check_tags(const std::vector<assembly::Neumann>& conditions) const;
  /// Publishes the matrix (serial: publish_system, with its null space checks; distributed: a
  /// Dirichlet condition is required, a singular problem runs on one process). A matrix that
  /// cannot be singular (M + dt K) is published as it is (`may_be_singular` false).
  LinearSolveInfo publish(Store& store, const std::string& key, const assembly::Assembler& assembler,
                          std::vector<double> values, std::span<const double> b,
                          const assembly::DirichletValues& constrained, const char* command,
                          bool may_be_singular = true);
  /// Factorizes (or sets the preconditioner up for) the current version of `key`.
  void factorize(Store& store, const std::string& key);
  /// x = A⁻¹b (b as assembled: partial sums on shared DOFs when distributed); x consistent.
  std::vector<double> solve(Store& store, const std::string& key, std::span<const double> b,
                            LinearSolveInfo& info);

  bool distributed() const noexcept { return distributed_; }
  /// DOFs of the whole problem, and its constrained DOFs (counted by publish()). Not collective:
  /// what rank 0 prints alone must not wait for the others.
  std::int64_t dofs() const;
  std::int64_t constrained() const noexcept { return constrained_; }
  /// Collective: the DOFs of `bc` in the whole problem.
  std::int64_t count_owned(const assembly::DirichletValues& bc) const { return constrained_dofs_total(bc); }
  /// Global minimum and maximum of a consistent vector.
  nlohmann::json range(std::span<const double> u) const;
  /// Errors of the whole solution (errors_against, summed over ranks).
  assembly::Errors errors(const assembly::Assembler& assembler, std::span<const double> u,
                          const assembly::VectorFunction& exact, const LinearSolveInfo& info) const;
  /// The JSON "solver" object and the "solver" line of the text summary.
  nlohmann::json solver_json() const;
  void print_solver(std::FILE* out) const;
  /// The JSON fields every linear subcommand writes (linear_run_json, plus ranks and dist counters).
  nlohmann::json run_json(const char* command, const CommonOptions& c, const Store& store,
                          const std::string& mesh_key, const Timings& t) const;
  /// Global inner product of consistent vectors (Newton's norms).
  double dot(std::span<const double> a, std::span<const double> b) const;
  /// Partial sums → consistent values (Newton's residuals); identity serially.
  void accumulate(std::span<double> v) const;
  /// The solver of Newton's Jacobians (distributed runs).
  newton::Problem::LinearSolver newton_solver();

 private:
  std::int64_t constrained_dofs_total(const assembly::DirichletValues& bc) const;
  bool distributed_ = false;
  std::int64_t constrained_ = 0;
  solve::Options serial_options_;
  std::shared_ptr<const solve::Factorization> factor_;
  const assembly::FunctionSpace* V_ = nullptr;
  struct Dist;
  std::unique_ptr<Dist> dist_;
};

/// Writes point fields (on the mesh nodes) and cell fields of the local mesh: serially a .vtu;
/// distributed, FILE.pvtu writes one piece per rank (FILE_p<rank>.vtu, with a "rank" cell
/// field) and rank 0 the .pvtu, FILE.vtu gathers everything on rank 0 into one serial file.
void write_solution(const std::string& path, const Store& store, const std::string& mesh_key,
                    std::span<const mesh::Field> points, std::span<const mesh::Field> cells = {});

/// A time series: serially .vtu frames; distributed, .pvtu frames (pieces per rank) listed by
/// the .pvd that rank 0 writes.
class SolutionSeries {
 public:
  explicit SolutionSeries(const std::filesystem::path& pvd);
  void write(double time, const Store& store, const std::string& mesh_key,
             std::span<const mesh::Field> points);
  const std::filesystem::path& path() const noexcept { return pvd_.path(); }
  std::size_t frames() const noexcept { return frames_; }

 private:
  mesh::PvdWriter pvd_;
  std::size_t frames_ = 0;
};

}  // namespace fem::app
