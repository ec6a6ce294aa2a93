// What the solver subcommands (poisson, heat, nonlinear, elasticity) share: their options, the
// translation of TAG=EXPR option values into the library's conditions and coefficients, the
// Run (mesh, space, assembler, solver and timings of one run, on one process or many: the
// library decides), and the JSON and text they print. Policy lives in the library; this file
// only parses, translates and prints.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fem/assembly/assembly.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/expression/expression.hpp"
#include "fem/mesh.hpp"
#include "fem/mesh/vtu.hpp"
#include "fem/solve/linear_solver.hpp"
#include "fem/store.hpp"
#include "progress.hpp"

namespace fem::app {

using expression::Admissible;
using expression::Expression;
using expression::Law;

/// One `TAG=EXPR` option value split at the first '=' (TAG: a physical name, a number or "all").
struct TaggedExpression {
  std::string tag;
  std::string expr;
};
/// The values of a repeatable TAG=VALUE option, split, tags resolved on the mesh (facets, or
/// cells when !facets), a tag given twice with different values refused (the same value twice
/// is harmless; a name and its number are one tag; `all` is its own).
std::vector<TaggedExpression> tagged_values(const Mesh& mesh, const std::string& option,
                                            const std::vector<std::string>& values, bool facets = true);
/// The facet tag (or cell tag) an option names: Mesh::resolve_tag, its message led by the option.
int facet_tag(const Mesh& mesh, const std::string& option, const std::string& tag);
/// The facets an option names: the tag's, or the whole boundary for `all`.
assembly::FacetSet facets(const Mesh& mesh, const std::string& option, const std::string& tag);

class Run;
/// An expression of the run's option: in x, y, z, and t when the run has time (Run::time_stepped;
/// t elsewhere is an error naming the option, rather than a silent t = 0).
Expression expression(const Run& run, const std::string& option, const std::string& text,
                      const Admissible& admissible = {});
/// Dirichlet conditions from `--dirichlet TAG=EXPR` values (the expressions kept in `keep`).
std::vector<assembly::Dirichlet> dirichlet_conditions(const Run& run, const std::vector<std::string>& values,
                                                      std::vector<Expression>& keep);
/// Neumann fluxes from `--neumann TAG=EXPR` values (`all`: the whole boundary).
std::vector<assembly::Neumann> neumann_conditions(const Run& run, const std::vector<std::string>& values,
                                                  std::vector<Expression>& keep);
/// The coefficient from `--coefficient TAG=VALUE` values (default `otherwise`; `all` sets the
/// value of the cells no tag gives one, whatever the order, and may depend on x, y, z, and t
/// when the run has time: that expression is kept in `keep`); `option` names the option in
/// messages. Every value, constant or evaluated at a point, must be `admissible` (by default:
/// positive).
assembly::Coefficient coefficient(const Run& run, const std::vector<std::string>& values,
                                  std::vector<Expression>& keep, const std::string& option = "--coefficient",
                                  double otherwise = 1.0,
                                  const Admissible& admissible = Admissible::positive("the coefficient"));
/// The components of a vector expression `EXPR,EXPR[,EXPR]` (split at commas outside
/// parentheses), exactly `components` of them; with `allow_free`, a component may be the word
/// `free` (std::nullopt).
std::vector<std::optional<Expression>> vector_expression(const Run& run, const std::string& option,
                                                         const std::string& text, int components,
                                                         bool allow_free = false);
/// A function from the components of a vector expression (none of them free).
assembly::VectorFunction vector_function(const std::vector<std::optional<Expression>>& components);

/// `--probe x,y[,z]` of the time-stepping drivers: the field interpolated at each point in the
/// cell that contains it (assembly::PointEvaluator; on many processes, by the lowest rank whose
/// part holds the point), at every recorded time. A point in no cell is an error naming it.
/// JSON: {"point", "times", "values": [[components...], ...]}.
class Probes {
 public:
  Probes(const Run& run, const std::vector<std::string>& points, int components);
  /// A second field on the same mesh, recorded after the first one's components (the flow
  /// drivers: the pressure after the velocity).
  void also(const assembly::FunctionSpace& W);
  /// Collective: the values of u (consistent, the space's DOF layout) at t, and of `w` (the
  /// field of also()).
  void record(double t, std::span<const double> u, std::span<const double> w = {});
  bool empty() const noexcept { return probes_.empty(); }
  nlohmann::json json() const;

 private:
  struct Probe {
    std::array<double, 3> point{};
    bool here = false;  // this process gives its value (the lowest rank whose part holds it)
    std::vector<double> times;
    std::vector<std::vector<double>> values;
  };
  const Run* run_;
  int components_;
  std::optional<assembly::PointEvaluator> evaluator_;  // the points, in this process's part
  std::optional<assembly::PointEvaluator> also_;       // the second field's
  std::vector<double> coordinates_;
  std::vector<Probe> probes_;
};

/// CLI11 checks that say what is wrong in words ("--every 0: must be at least 1").
CLI::Validator at_least(double lo);
CLI::Validator positive_number();
CLI::Validator non_negative_number();
CLI::Validator between(double lo, double hi);
CLI::Validator finite_number();

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
  std::string device = "cpu";  ///< where the connectivity and matrices are built
  bool quiet = false;
  std::string write_config;           ///< --write-config FILE
  const CLI::App* command = nullptr;  ///< the subcommand whose options these are
};
/// The effective options of a parsed subcommand, defaults too, as a --config file reads them
/// (TOML, its [SUBCOMMAND] section): what --write-config writes and the JSON's "options".
std::string effective_options(const CLI::App& cmd);
void add_common_options(CLI::App& cmd, CommonOptions& o, bool with_order = true);
/// --compatibility-tolerance, for the subcommands whose matrix may be singular (poisson, elasticity).
void add_compatibility_option(CLI::App& cmd, CommonOptions& o);
/// Whether the arguments ask for a PETSc solver (--solver mumps|gamg|hypre): main starts the
/// distributed path for it even on one process.
bool asks_for_distributed_solver(int argc, char** argv);

/// Wall-clock phases in the order of the table.
struct Timings {
  double read_mesh = 0, distribute = 0, connectivity = 0, assemble = 0, factorize = 0, solve = 0, write = 0;
};

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// One run of a solver subcommand. The constructor applies the options (this process's: only
/// rank 0 prints and writes the JSON), checks the outputs before any work (`extension`: what
/// --output must end with, empty: the subcommand checks it itself), and loads and publishes the
/// mesh (distributed when the run is). space() then makes the space, its assembler on --device,
/// and the layout and linear solver the library picks for it.
class Run {
 public:
  Run(const CommonOptions& options, const char* command, const std::string& extension = "",
      const std::string& writes = "");
  const CommonOptions& options() const noexcept { return o_; }
  const char* command() const noexcept { return command_; }
  Store& store() const noexcept { return *store_; }
  const std::string& mesh_key() const noexcept { return mesh_key_; }
  /// This process's mesh (its part of a distributed one).
  const Mesh& mesh() const noexcept { return *mesh_; }

  /// The space of `components`, its assembler, layout and solver (timed as connectivity); `spd`:
  /// the matrices are symmetric positive definite (Cholesky, CG for the distributed solvers).
  void make_space(int components, bool spd, const solve::Options& base = {});
  /// A space made elsewhere (a mixed space's velocity: fem stokes) and the solver the run's
  /// summary reports: no assembler of its own; layout() is V's.
  void adopt_space(const assembly::FunctionSpace& V, std::shared_ptr<solve::LinearSolver> solver);
  const assembly::FunctionSpace& space() const noexcept { return *V_; }
  const std::shared_ptr<const assembly::Assembler>& assembler() const noexcept { return assembler_; }
  const Layout& layout() const noexcept { return *layout_; }
  const std::shared_ptr<solve::LinearSolver>& solver() const noexcept { return solver_; }

  /// f() on every process, its failure agreed (every process throws the failing one's error):
  /// a phase that may fail on one process alone (options, assembly, output) before the next
  /// collective call.
  template <class F>
  auto local(F&& f) const {
    return dist::processes().collective(std::forward<F>(f));
  }
  /// The facet tags of fluxes and the cell tags of coefficients checked against the whole mesh
  /// (collective: before the local assembly that uses them, whose failure may be one process's
  /// alone).
  void check_tags(const std::vector<assembly::Neumann>& fluxes,
                  std::initializer_list<const assembly::Coefficient*> coefficients = {}) const;
  /// Publishes the constrained system under `key` (assembly::system_matrix: its null space;
  /// timed with the assembly), then factorizes it (timed).
  void publish_and_factorize(const std::string& key, std::vector<double> values,
                             const assembly::DirichletValues& bc);
  /// x = A⁻¹b with the solver (b as assembled; x consistent), timed and added to the solve time.
  void solve(std::span<const double> b, std::span<double> x);
  /// A time-stepped run's failure to factorize or solve with the matrix under `key`: thrown in
  /// words as the time step's when dt·K drowns M there; otherwise returns (rethrow the original).
  void explain_time_step_failure(const std::string& key, const std::string& what) const;

  /// Writes the point and cell fields of the mesh (--output; gathered or in pieces), timed.
  void write(std::span<const mesh::Field> points, std::span<const mesh::Field> cells = {});
  /// The errors of u against `exact` (with the published matrix's null space).
  assembly::Errors errors(std::span<const double> u, const assembly::VectorFunction& exact) const;

  /// The JSON fields every solver subcommand writes: command, mesh, order, device, dofs,
  /// dirichlet_dofs, ranks, solver, timings, cache (and dist counters when distributed).
  nlohmann::json json() const;
  /// Writes `j` where --json says (rank 0; its failure is every process's).
  void write_json(const nlohmann::json& j) const;
  /// Whether this process prints text, and where (stderr when the JSON goes to stdout).
  bool prints() const noexcept { return !o_.quiet; }
  std::FILE* out() const noexcept { return o_.json == "-" ? stderr : stdout; }
  /// Live progress on a terminal (time steps, phases longer than about 2 s).
  Progress& progress() const noexcept { return *progress_; }
  /// The "mesh" and "space" lines (with `extra` after the space), the solver's line and its
  /// warnings, and the null space's line.
  void print_header(const std::string& extra = "") const;
  /// The timing table and the cache counters.
  void print_timings() const;

  Timings t;
  std::int64_t constrained_dofs = 0;            ///< of the whole problem, counted by publish_and_factorize
  std::shared_ptr<const NullSpace> null_space;  ///< of the published system
  /// The run steps in time (fem heat), set before its options are read: t is a variable of its
  /// expressions (elsewhere t is an error), and its system is M + dt·K, so a numerical failure
  /// while the mass term is lost to rounding against dt·K is reported as the time step's.
  bool time_stepped = false;

 private:
  CommonOptions o_;
  const char* command_;
  std::string options_;  // effective_options()
  std::unique_ptr<Progress> progress_;
  Store* store_;
  std::string mesh_key_;
  std::shared_ptr<const Mesh> mesh_;
  std::optional<assembly::FunctionSpace> V_;
  std::shared_ptr<const assembly::Assembler> assembler_;
  std::shared_ptr<const Layout> layout_;
  std::shared_ptr<solve::LinearSolver> solver_;
  std::string key_;  // the published system
};

/// JSON parts.
nlohmann::json range_json(std::pair<double, double> range);
nlohmann::json error_json(const assembly::Errors& e);
/// The "error" line of the text summary.
void print_errors(std::FILE* out, const assembly::Errors& e);

/// Checks an output path before any work: its extension must be `extension` (the format follows
/// the extension: anything else is an error saying what the subcommand writes; a .pvtu is
/// accepted for a .vtu in a distributed run), missing folders are created, and the folder must
/// be writable (a path through a regular file is an error in words, not a filesystem exception).
void prepare_output(const std::string& option, const std::string& path, const std::string& extension,
                    const std::string& writes);
/// The folder of `path` created when missing and checked writable, with errors in words.
void prepare_output_folder(const std::string& option, const std::filesystem::path& path);
/// The extension of `path` in lower case (".vtu").
std::string lowercase_extension(const std::filesystem::path& path);
/// A result about to be written must be finite: a fem::Error naming `what` and the first entry
/// otherwise (results never carry NaN).
void require_finite(std::span<const double> values, const std::string& what);
/// Write the JSON to the file, or stdout for "-"; nothing when `file` is empty. All or nothing.
void write_json(const std::string& file, const nlohmann::json& j);

}  // namespace fem::app
