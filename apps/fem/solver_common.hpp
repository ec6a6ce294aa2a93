// Shared pieces of the solver subcommands (poisson, heat, nonlinear, elasticity): expressions
// (expression.hpp) per tag and per component, TAG=VALUE options resolved against the mesh's
// physical names, solver and device options, the phase timing table, cache counters and JSON
// output.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "expression.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/assembly/device.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/mesh.hpp"
#include "fem/solve/solve.hpp"
#include "fem/store.hpp"

namespace fem::app {

/// One `TAG=EXPR` option value split at the first '='.
struct TaggedExpression {
  std::string tag;  ///< name, number or "all"
  std::string expr;
};
TaggedExpression split_tagged(const std::string& option, const std::string& value);

/// The facet tag of `tag` (a physical name of dimension tdim-1, or a number); a name the mesh
/// lacks is a fem::Error naming it, the option and the facet names present.
int facet_tag(const Mesh& mesh, const std::string& option, const std::string& tag);
/// The facet tags a boundary option names: facet_tag(tag), or for `all` every facet tag of the
/// mesh (an error naming the option when the mesh has none, rather than a silent no-op).
std::vector<int> facet_tags_of(const Mesh& mesh, const std::string& option, const std::string& tag);
/// The same for cell tags.
int cell_tag(const Mesh& mesh, const std::string& option, const std::string& tag);

/// The values of a repeatable TAG=VALUE option, split, with a tag given twice with different
/// values refused (the same value twice is harmless). Tags are compared as the mesh resolves
/// them (a name and its number are one tag; `all` is its own).
std::vector<TaggedExpression> tagged_values(const Mesh& mesh, const std::string& option,
                                            const std::vector<std::string>& values, bool facets = true);

/// Dirichlet conditions from `--dirichlet TAG=EXPR` values.
std::vector<assembly::Dirichlet> dirichlet_conditions(const Mesh& mesh, const std::vector<std::string>& values,
                                                      std::vector<Expression>& keep);
/// Neumann fluxes from `--neumann TAG=EXPR` values.
std::vector<assembly::Neumann> neumann_conditions(const Mesh& mesh, const std::vector<std::string>& values,
                                                  std::vector<Expression>& keep);
/// The coefficient from `--coefficient TAG=VALUE` values (default `otherwise`; `all` sets the
/// default); `option` names the option in messages (e.g. "--E"). Every value, constant or
/// evaluated at a point, must be `admissible` (by default: positive). A tag given twice with
/// different values is an error.
assembly::Coefficient coefficient(const Mesh& mesh, const std::vector<std::string>& values,
                                  const std::string& option = "--coefficient", double otherwise = 1.0,
                                  const Admissible& admissible = Admissible::positive("the coefficient"));

/// The components of a vector expression `EXPR,EXPR[,EXPR]` (split at commas outside
/// parentheses), exactly `components` of them, else a fem::Error naming `option`. With
/// `allow_free`, a component may be the word `free` (returned as std::nullopt).
std::vector<std::optional<Expression>> vector_expression(const std::string& option, const std::string& text,
                                                         int components, int gdim, bool allow_free = false);
/// A function from the components of a vector expression (none of them free).
assembly::VectorFunction vector_function(const std::vector<std::optional<Expression>>& components);

/// CLI11 checks that say what is wrong in words ("--every 0: must be at least 1").
CLI::Validator at_least(double lo);
CLI::Validator positive_number();
CLI::Validator non_negative_number();
CLI::Validator between(double lo, double hi);
CLI::Validator finite_number();

/// Wall-clock phases in the order of the table.
struct Timings {
  double read_mesh = 0, distribute = 0, connectivity = 0, assemble = 0, factorize = 0, solve = 0, write = 0;
};

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// The options every solver subcommand has.
struct CommonOptions {
  std::string mesh;
  int order = 1;
  std::string solver = "auto", ordering = "auto";
  int threads = 0;
  double compatibility_tolerance = 1e-6;  ///< solve::Options::compatibility_tolerance
  double ksp_rtol = 1e-10;                ///< Krylov solvers (--solver gamg|hypre): relative residual
  std::string json;
  std::string output;
  std::string device = "cpu";  ///< cpu, cuda or debug-device (see MatrixAssembler)
  bool quiet = false;
  /// Human text goes to stdout, or to stderr when the JSON goes to stdout.
  std::FILE* text() const { return json == "-" ? stderr : stdout; }
  bool show_text() const { return !quiet; }
};
void add_common_options(CLI::App& cmd, CommonOptions& o, bool with_order = true);
/// --compatibility-tolerance, for the subcommands whose matrix may be singular (poisson, elasticity).
void add_compatibility_option(CLI::App& cmd, CommonOptions& o);
/// Applies --threads.
void apply_threads(const CommonOptions& o);
solve::Options solve_options(const CommonOptions& o);
/// The executor of --device: the host, a CUDA device (a fem::Error of one line when this
/// build has no CUDA support or no device answers), or the debug device (the device code path
/// on the CPU). `--device cuda` is also checked as soon as it is parsed, so every subcommand
/// fails before it reads the mesh.
gpu::Executor executor(const CommonOptions& o);

/// The matrices of a run: with --device cpu the host Assembler; with cuda or debug-device a
/// DeviceAssembler (the connectivity built on that executor, the mesh and slot map uploaded
/// once, every matrix assembled there and copied back for the CPU solver). Vectors, Dirichlet
/// data and errors always use the host Assembler.
class MatrixAssembler {
 public:
  MatrixAssembler(const assembly::FunctionSpace& V, const CommonOptions& o);
  const assembly::Assembler& host() const { return device_ ? device_->host() : *host_; }
  std::shared_ptr<const assembly::Assembler> host_ptr() const;
  template <class Form>
  void matrix_into(const Form& form, std::span<double> values) const {
    if (device_)
      device_->matrix_into(form, values);
    else
      host_->matrix_into(form, values);
  }

 private:
  std::shared_ptr<const assembly::Assembler> host_;
  std::shared_ptr<const assembly::DeviceAssembler> device_;
};

/// How a linear run's system was solved: its null space (nullptr: the Dirichlet conditions make
/// it nonsingular), the data's compatibility defect, and the worst relative residual ‖b − Ax‖/‖b‖
/// of its solves.
struct LinearSolveInfo {
  std::shared_ptr<const NullSpace> null_space;
  double compatibility_defect = 0;
  double relative_residual = 0;
  double backward_error = 0;  ///< of the Jacobi-scaled system (solve::SolveReport)
  int refinement_steps = 0;
};

/// Publish the system matrix (the pattern's values with the Dirichlet conditions `constrained`
/// applied) under `key`. When the conditions leave rigid-body modes free (the constants of a
/// scalar problem without a Dirichlet condition, translations and rotations of an elastic body),
/// the matrix carries its null space (assembly::null_space) and the data b must be compatible
/// with it: otherwise a fem::Error in the problem's words (`command`: "poisson", "elasticity")
/// naming the free modes and the defect.
LinearSolveInfo publish_system(Store& store, const std::string& key, const assembly::Assembler& assembler,
                               std::vector<double> values, std::span<const double> b,
                               const assembly::DirichletValues& constrained, const solve::Options& options,
                               const char* command);
/// The errors of u against `exact`; with a null space, of u shifted along it to the exact
/// solution's own normalization (its mean, its rigid motion), which the data cannot fix.
assembly::Errors errors_against(const assembly::Assembler& assembler, std::span<const double> u,
                                const assembly::VectorFunction& exact, const LinearSolveInfo& info);
/// Solve with the cached factorization of `key`, recording the residual in `info`; a failed or
/// refused solve (solve::Options::max_relative_residual) is a NumericalError naming key and backend.
std::vector<double> solve_checked(Store& store, const std::string& key, std::span<const double> b,
                                  const solve::Options& options, LinearSolveInfo& info);
/// The "null space" line of the text summary (nothing for a nonsingular system).
void print_null_space(std::FILE* out, const LinearSolveInfo& info);
/// JSON: solution.{normalization, null_space, compatibility_defect} into `solution`, and the
/// `solve` object {relative_residual, backward_error, refinement_steps}.
void add_solve_json(nlohmann::json& j, const LinearSolveInfo& info);

/// Load the mesh (timed as read_mesh) and publish it under `mesh/<stem>`; returns the key. In a
/// distributed run (parallel.hpp) rank 0 loads it and keeps it as `mesh/<stem>#whole`, and every
/// rank publishes its part under the key (fem::dist::distribute, timed as distribute).
std::string load_and_publish(const std::string& spec, Timings& t, Store& store = fem::store());

/// JSON parts shared by every subcommand.
nlohmann::json mesh_json(const Mesh& mesh);
nlohmann::json timings_json(const Timings& t);
nlohmann::json cache_json(const Store& store);
/// The --json fields the linear solver subcommands share: command, mesh, order, device, dofs,
/// dirichlet_dofs, solver.{backend, ordering, factor_nonzeros}, timings and cache.
/// The "solver" line of the text summary: backend, ordering, factor nonzeros.
void print_solver(std::FILE* out, const solve::Factorization& factor);
nlohmann::json linear_run_json(const char* command, const CommonOptions& c, const Mesh& mesh, index_t dofs,
                               std::size_t dirichlet_dofs, const solve::Factorization& factor, const Timings& t,
                               const Store& store);
nlohmann::json range_json(std::span<const double> u);
/// The errors against an exact solution: {l2, h1_seminorm, h1}; `h1` repeats the seminorm under
/// its old name for one release (it never was the full H1 norm).
nlohmann::json error_json(const assembly::Errors& e);
/// The "error" line of the text summary.
void print_errors(std::FILE* out, const assembly::Errors& e);
/// Print the timing table and cache counters to `out`.
void print_timings(std::FILE* out, const Timings& t, const Store& store);
/// Checks an output path before any work: its extension must be `extension` (the format follows
/// the extension: anything else is an error saying what the subcommand writes), missing folders
/// are created, and the folder must be writable (a path through a regular file is an error in
/// words, not a filesystem exception).
void prepare_output(const std::string& option, const std::string& path, const std::string& extension,
                    const std::string& writes);
/// prepare_output for --output (when `extension` is not empty) and the --json file's folder.
void prepare_outputs(const CommonOptions& o, const std::string& extension, const std::string& writes);
/// The folder of `path` created when missing and checked writable, with errors in words.
void prepare_output_folder(const std::string& option, const std::filesystem::path& path);
/// The extension of `path` in lower case (".vtu").
std::string lowercase_extension(const std::filesystem::path& path);
/// A result about to be written must be finite: a fem::Error naming `what` and the first entry
/// otherwise (results never carry NaN).
void require_finite(std::span<const double> values, const std::string& what);

/// Write the JSON to the file, or stdout for "-"; nothing when `file` is empty. All or nothing.
void write_json(const std::string& file, const nlohmann::json& j);

/// The mesh-node values of a space's solution (P1: the DOFs in mesh node order; P2: the
/// vertex DOFs), for output on the mesh itself. Mesh nodes that are not vertices get 0.
std::vector<double> node_values(const assembly::FunctionSpace& V, std::span<const double> u);
/// The cell-wise gradient of a P1 solution on simplices (gdim values per cell).
std::vector<double> p1_gradient(const assembly::FunctionSpace& V, std::span<const double> u);

}  // namespace fem::app
