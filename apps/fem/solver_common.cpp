// Shared pieces of the solver subcommands: options, their translation, the Run, JSON and text.
#include "solver_common.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>

#include "fem/atomic_file.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/error.hpp"
#include "fem/gpu/executor.hpp"
#include "load_mesh.hpp"

namespace fem::app {

std::string version_text() {
  const std::string features = FEM_FEATURES;
  return fmt::format("fem {} ({} build; with {})", FEM_VERSION, FEM_BUILD_TYPE,
                     features.empty() ? "no optional feature" : features);
}

namespace {
/// `s` without leading and trailing blanks.
std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

/// The library's resolver with the option in front of its message.
int resolve(const Mesh& mesh, const std::string& option, const std::string& tag, int dim) {
  try {
    return mesh.resolve_tag(tag, dim);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("{}: {}", option, e.what()));
  }
}
}  // namespace

int facet_tag(const Mesh& mesh, const std::string& option, const std::string& tag) {
  return resolve(mesh, option, tag, mesh.tdim() - 1);
}

assembly::FacetSet facets(const Mesh& mesh, const std::string& option, const std::string& tag) {
  return tag == "all" ? assembly::FacetSet::all()
                      : assembly::FacetSet::tagged({facet_tag(mesh, option, tag)});
}

std::vector<TaggedExpression> tagged_values(const Mesh& mesh, const std::string& option,
                                            const std::vector<std::string>& values, bool on_facets) {
  std::vector<TaggedExpression> out;
  std::map<int, std::size_t> seen;  // resolved tag (all: INT_MIN) -> index in out
  for (const auto& v : values) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      throw Error(
          fmt::format("{} '{}': expected TAG=VALUE (TAG: a physical name, a number or 'all')", option, v));
    TaggedExpression te{v.substr(0, eq), trimmed(v.substr(eq + 1))};
    const int key = te.tag == "all"
                        ? std::numeric_limits<int>::min()
                        : resolve(mesh, option, te.tag, on_facets ? mesh.tdim() - 1 : mesh.tdim());
    if (const auto it = seen.find(key); it != seen.end()) {
      const TaggedExpression& first = out[it->second];
      if (first.expr != te.expr)
        throw Error(fmt::format(
            "{}: tag '{}'{} is given two values, '{}' and '{}' (one value per tag)", option, first.tag,
            te.tag == first.tag ? "" : fmt::format(" (also as '{}')", te.tag), first.expr, te.expr));
      continue;
    }
    seen.emplace(key, out.size());
    out.push_back(std::move(te));
  }
  return out;
}

Expression expression(const Run& run, const std::string& option, const std::string& text,
                      const Admissible& admissible) {
  Expression e(option, text, run.mesh().gdim(), admissible);
  if (e.uses_time() && !run.time_stepped)
    throw Error(
        fmt::format("{} '{}': t is not defined here: fem {} has no time (t is a variable of fem heat)",
                    option, text, run.command()));
  return e;
}

std::vector<assembly::Dirichlet> dirichlet_conditions(const Run& run, const std::vector<std::string>& values,
                                                      std::vector<Expression>& keep) {
  const Mesh& mesh = run.mesh();
  std::vector<assembly::Dirichlet> out;
  for (const auto& [tag, expr] : tagged_values(mesh, "--dirichlet", values)) {
    keep.push_back(expression(run, "--dirichlet " + tag, expr));
    out.push_back({facets(mesh, "--dirichlet", tag), keep.back().function(), -1});
  }
  return out;
}

std::vector<assembly::Neumann> neumann_conditions(const Run& run, const std::vector<std::string>& values,
                                                  std::vector<Expression>& keep) {
  const Mesh& mesh = run.mesh();
  std::vector<assembly::Neumann> out;
  for (const auto& [tag, expr] : tagged_values(mesh, "--neumann", values)) {
    keep.push_back(expression(run, "--neumann " + tag, expr));
    out.push_back(assembly::Neumann::scalar(facets(mesh, "--neumann", tag), keep.back().function()));
  }
  return out;
}

assembly::Coefficient coefficient(const Run& run, const std::vector<std::string>& values,
                                  std::vector<Expression>& keep, const std::string& option, double otherwise,
                                  const Admissible& admissible) {
  const Mesh& mesh = run.mesh();
  std::optional<Expression> everywhere;
  std::map<int, double> per_tag;
  for (const auto& [tag, expr] : tagged_values(mesh, option, values, /*facets=*/false)) {
    Expression e = expression(run, option + " " + tag, expr, admissible);
    if (tag == "all") {
      everywhere = e;
      continue;
    }
    if (!e.is_constant())
      throw Error(
          fmt::format("{} {}='{}': a value per tag must be a constant (only 'all' may depend on x, y, z{})",
                      option, tag, expr, run.time_stepped ? " and t" : ""));
    per_tag[resolve(mesh, option, tag, mesh.tdim())] = e(nullptr);
  }
  if (per_tag.empty()) {
    if (!everywhere) return assembly::Coefficient(otherwise);
    if (everywhere->is_constant()) return assembly::Coefficient((*everywhere)(nullptr));
    keep.push_back(*everywhere);
    return assembly::Coefficient::function(everywhere->function());
  }
  if (everywhere && !everywhere->is_constant())
    throw Error(fmt::format("{} all=EXPR depending on x, y, z{} cannot be combined with values per tag",
                            option, run.time_stepped ? " or t" : ""));
  return assembly::Coefficient::per_tag(std::move(per_tag), everywhere ? (*everywhere)(nullptr) : otherwise);
}

std::vector<std::optional<Expression>> vector_expression(const Run& run, const std::string& option,
                                                         const std::string& text, int components,
                                                         bool allow_free) {
  // Split at the commas outside parentheses: muparser's functions take comma-separated arguments.
  std::vector<std::string> parts(1);
  int depth = 0;
  for (const char ch : text) {
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    if (ch == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += ch;
  }
  if (static_cast<int>(parts.size()) != components)
    throw Error(fmt::format("{} '{}': {} component{}, expected {} (one per dimension: EXPR{})", option, text,
                            parts.size(), parts.size() == 1 ? "" : "s", components,
                            components == 3   ? ",EXPR,EXPR"
                            : components == 2 ? ",EXPR"
                                              : ""));
  std::vector<std::optional<Expression>> out;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::string part = trimmed(parts[k]);
    if (part.empty())
      throw Error(fmt::format("{} '{}': component {} is empty{}", option, text, k + 1,
                              allow_free ? " (write 'free' for a component that is not prescribed)" : ""));
    if (allow_free && part == "free")
      out.emplace_back(std::nullopt);
    else
      out.emplace_back(expression(run, fmt::format("{} (component {})", option, k + 1), part));
  }
  return out;
}

assembly::VectorFunction vector_function(const std::vector<std::optional<Expression>>& components) {
  std::vector<Expression> e;
  for (const auto& c : components) {
    FEM_EXPECTS(c.has_value(), "a vector function with a free component");
    e.push_back(*c);
  }
  return [e = std::move(e)](const double* x, double* v) {
    for (std::size_t k = 0; k < e.size(); ++k) v[k] = e[k](x);
  };
}

// --- options ------------------------------------------------------------------------------

namespace {
CLI::Validator number_check(std::string words, std::function<bool(double)> ok) {
  return CLI::Validator(
      [words, ok](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || p != end) return fmt::format("'{}' is not a number", text);
        if (!ok(v)) return fmt::format("{} {}", text, words);
        return {};
      },
      "", "");
}

/// --device cuda without a usable device: one line saying why, at parse time.
void check_device(const std::string& device) {
  std::string reason;
  if (device == "cuda" && !gpu::cuda_available(&reason))
    throw Error(fmt::format("--device cuda: no CUDA device can be used: {}", reason));
}

gpu::Executor executor(const std::string& device) {
  if (device == "debug-device") return gpu::Executor::debug_device();
  if (device != "cuda") return gpu::Executor::host();
  check_device(device);
  try {
    return gpu::Executor::cuda(0);
  } catch (const Error& e) {
    throw Error(fmt::format("--device cuda: {}", e.what()));
  }
}
}  // namespace

CLI::Validator at_least(double lo) {
  return number_check(fmt::format("must be at least {}", lo), [lo](double v) { return v >= lo; });
}
CLI::Validator positive_number() {
  return number_check("must be positive", [](double v) { return v > 0 && std::isfinite(v); });
}
CLI::Validator non_negative_number() {
  return number_check("must be at least 0 (and finite)", [](double v) { return v >= 0 && std::isfinite(v); });
}
CLI::Validator finite_number() {
  return number_check("must be a finite number", [](double v) { return std::isfinite(v); });
}
CLI::Validator between(double lo, double hi) {
  return number_check(fmt::format("must lie between {} and {}", lo, hi),
                      [lo, hi](double v) { return v >= lo && v <= hi; });
}

void add_common_options(CLI::App& cmd, CommonOptions& o, bool with_order) {
  cmd.option_defaults()->always_capture_default();  // --write-config writes every value
  // Positional, and --mesh too: a --config file names it like any option.
  cmd.add_option("mesh,--mesh", o.mesh, "mesh file, or gen:square-tri3:N, gen:cube-tet4:N, ...")->required();
  if (with_order)
    cmd.add_option("--order", o.order, "polynomial degree of the Lagrange space")
        ->check(CLI::IsMember({1, 2}));
  cmd.add_option(
         "--solver", o.solver,
         "serial direct solver (auto, cholmod, umfpack, klu, ldlt, lu), or a distributed one (MPI + PETSc, "
         "also on one process): mumps (direct, the default under mpirun), gamg or hypre (CG/GMRES with "
         "algebraic multigrid), fieldsplit (flow and u-p: FGMRES with a Schur complement preconditioner); "
         "PETSc options through PETSC_OPTIONS with the prefix fem_")
      ->check(CLI::IsMember(
          {"auto", "cholmod", "umfpack", "klu", "ldlt", "lu", "mumps", "gamg", "hypre", "fieldsplit"}));
  cmd.add_option("--ksp-rtol", o.ksp_rtol,
                 "relative residual ‖b − Ax‖/‖b‖ of the iterative solvers (--solver gamg|hypre|fieldsplit)")
      ->check(positive_number());
  cmd.add_option("--ordering", o.ordering, "fill-reducing ordering")
      ->check(CLI::IsMember({"auto", "amd", "colamd", "metis", "natural"}));
  cmd.add_option(
         "--device", o.device,
         "where the connectivity and the matrices are built: cpu (default), cuda (a CUDA build and GPU), "
         "or debug-device (the device code path on the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "debug-device"}))
      ->each(check_device);  // fails at parse time, before any work, in every subcommand
  cmd.add_option("--threads", o.threads, "assembly threads (OpenMP; 0: its default)")->check(at_least(0));
  cmd.add_option(
      "--json", o.json,
      "write the results as JSON to FILE ('-': standard output; the text then goes to standard error)");
  cmd.add_flag("--quiet,-q", o.quiet, "print nothing but errors (and the JSON)");
  cmd.add_option("--write-config", o.write_config,
                 "write the effective options of this run to FILE (TOML), to replay it with --config FILE");
  o.command = &cmd;
}

std::string effective_options(const CLI::App& cmd) {
  std::string text = "[" + cmd.get_name() + "]\n";  // the subcommand's section of a --config file
  std::istringstream all(cmd.config_to_str(/*default_also=*/true, /*write_description=*/false));
  for (std::string line; std::getline(all, line);)
    // Empty strings and lists are options not given (their default, which a check may refuse).
    if (line.rfind("write-config=", 0) != 0 && !line.ends_with("=\"[]\"") && !line.ends_with("=\"\""))
      text += line + "\n";
  return text;
}

void add_compatibility_option(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option(
         "--compatibility-tolerance", o.compatibility_tolerance,
         "without constraints that stop every rigid motion (no Dirichlet condition): the largest relative "
         "defect of the data (e.g. |∫f + ∫g| / ∫|f| + ∫|g|) solved as compatible, with its part along the "
         "free motions removed (default 1e-6)")
      ->check(between(0, 1));
}

bool asks_for_distributed_solver(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string value;
    if (std::strcmp(argv[i], "--solver") == 0 && i + 1 < argc) value = argv[i + 1];
    if (std::strncmp(argv[i], "--solver=", 9) == 0) value = argv[i] + 9;
    if (value == "mumps" || value == "gamg" || value == "hypre" || value == "fieldsplit") return true;
  }
  return false;
}

// --- the run ------------------------------------------------------------------------------

Run::Run(const CommonOptions& options, const char* command, const std::string& extension,
         const std::string& writes)
    : o_(options),
      command_(command),
      options_(options.command ? effective_options(*options.command) : std::string()),
      store_(&fem::store()),
      layout_(&Layout::serial(), [](const Layout*) {}) {
  const Processes& p = dist::processes();
  if (!p.root()) o_.json.clear(), o_.quiet = true;  // rank 0 alone prints and writes the JSON
  progress_ = std::make_unique<Progress>(!o_.quiet && o_.json != "-");
  p.collective([&] {  // rank 0's checks: its failure is every rank's
    if (!extension.empty()) prepare_output("--output", o_.output, extension, writes);
    if (!o_.json.empty() && o_.json != "-") prepare_output_folder("--json", o_.json);
    if (!o_.write_config.empty() && p.root()) {
      prepare_output_folder("--write-config", o_.write_config);
      write_file_atomically(o_.write_config, options_);
    }
  });
  if (o_.threads > 0) {
    omp_set_num_threads(o_.threads);
  } else if (p.size() > 1 && !std::getenv("OMP_NUM_THREADS")) {
    // Ranks on one machine share its cores: each takes its share, not all of them.
    omp_set_num_threads(std::max(1, omp_get_num_procs() / p.size()));
  }
  Stopwatch w;
  std::string stem =
      o_.mesh.rfind("gen:", 0) == 0 ? o_.mesh.substr(4) : std::filesystem::path(o_.mesh).stem().string();
  std::replace(stem.begin(), stem.end(), ':', '_');
  mesh_key_ = "mesh/" + stem;
  auto whole = p.collective([&]() -> std::shared_ptr<const Mesh> {
    const auto shown = progress_->phase("reading " + o_.mesh);
    return p.root() ? std::make_shared<const Mesh>(load_mesh(o_.mesh)) : nullptr;
  });
  t.read_mesh = w.seconds();
  w = Stopwatch();
  dist::publish_mesh(std::move(whole), mesh_key_, *store_);
  if (dist::running()) t.distribute = w.seconds();
  mesh_ = store_->get<Mesh>(mesh_key_);
}

void Run::adopt_space(const assembly::FunctionSpace& V, std::shared_ptr<solve::LinearSolver> solver) {
  V_.emplace(V);
  layout_ = dist::layout(*V_);
  solver_ = std::move(solver);
}

void Run::make_space(int components, bool spd, const solve::Options& base) {
  const auto shown = progress_->phase("connectivity");
  Stopwatch w;
  V_.emplace(mesh_key_, o_.order, components, *store_);
  assembler_ = std::make_shared<const assembly::Assembler>(*V_, executor(o_.device));
  layout_ = dist::layout(*V_);
  solve::Options s = base;
  s.backend = solve::backend_from_name(o_.solver, "--solver");
  s.ordering = solve::ordering_from_name(o_.ordering, "--ordering");
  s.compatibility_tolerance = o_.compatibility_tolerance;
  s.spd = spd;
  s.rtol = o_.ksp_rtol;
  s.prefix = "fem_";
  if (!solve::distributed(s.backend) && !layout_->distributed()) {
    if (!solve::available(s.backend))
      throw Error(fmt::format("--solver {}: not available in this build", o_.solver));
    if (!solve::available(s.ordering))
      throw Error(fmt::format("--ordering {}: not available in this build", o_.ordering));
  }
  solver_ = dist::make_solver(*V_, s);
  t.connectivity = w.seconds();
}

void Run::check_tags(const std::vector<assembly::Neumann>& fluxes,
                     std::initializer_list<const assembly::Coefficient*> coefficients) const {
  for (const auto& n : fluxes)
    if (!n.where.whole_boundary) assembly::check_facet_tags(*mesh_, n.where.tags, *layout_);
  for (const auto* c : coefficients) assembly::check_cell_tags(*mesh_, c->tags(), *layout_);
}

namespace {
/// The largest share of the mass term in a row of M + dt·K: K's rows sum to zero and M's to
/// ∫φ_i ≥ 0, so a row's sum over its diagonal is about h²/(dt·k); 1 in a Dirichlet row.
double mass_share(const CsrMatrix& A) {
  const auto offsets = A.pattern().row_offsets();
  const auto cols = A.pattern().col_indices();
  const auto values = A.values();
  double share = 0;
  for (index_t i = 0; i < A.rows(); ++i) {
    double sum = 0, diagonal = 0;
    for (index_t p = offsets[i]; p < offsets[i + 1]; ++p) {
      sum += values[static_cast<std::size_t>(p)];
      if (cols[p] == i) diagonal = values[static_cast<std::size_t>(p)];
    }
    if (diagonal > 0) share = std::max(share, sum / diagonal);
  }
  return share;
}

/// A failure of M + dt·K whose mass term is below what the solver's checks resolve (about 1e-6
/// of the diagonal and less) is the time step's: thrown in words, with the solver's after them.
void explain_time_step(const char* command, const Store& store, const std::string& key,
                       const std::string& reason) {
  const auto A = store.find<CsrMatrix>(key);
  if (!A) return;
  const double share = mass_share(*A);
  if (!(share < 1e-6)) return;
  throw NumericalError(fmt::format(
      "{}: the time step is too large for this mesh: the mass term of M + dt·K is at most {:.2g} of "
      "its diagonal (dt·k/h² ≈ {:.2g}), so the matrix is dt·K to working precision, which is singular "
      "without a Dirichlet condition (its constants are free); take a smaller --dt (the solver: {})",
      command, share, share > 0 ? 1 / share : std::numeric_limits<double>::infinity(), reason));
}
}  // namespace

void Run::publish_and_factorize(const std::string& key, std::vector<double> values,
                                const assembly::DirichletValues& bc) {
  Stopwatch w;
  constrained_dofs = layout_->count_owned(bc.dofs);
  local([&] {
    const auto A = std::make_shared<const CsrMatrix>(
        assembly::system_matrix(*assembler_, std::move(values), bc, *layout_));
    null_space = A->null_space();
    store_->put(key, A);
  });
  key_ = key;
  t.assemble += w.seconds();
  w = Stopwatch();
  const auto shown = progress_->phase("factorizing");
  try {
    solver_->factorize(*store_, key);
  } catch (const NumericalError& e) {
    const std::string what = e.what();
    if (time_stepped && what.find("(too_large)") == std::string::npos &&
        what.find("(out_of_memory)") == std::string::npos)
      explain_time_step(command_, *store_, key, what);
    throw;
  }
  t.factorize += w.seconds();
}

void Run::explain_time_step_failure(const std::string& key, const std::string& what) const {
  if (time_stepped && what.find("(too_large)") == std::string::npos &&
      what.find("(out_of_memory)") == std::string::npos)
    explain_time_step(command_, *store_, key, what);
}

void Run::solve(std::span<const double> b, std::span<double> x) {
  Stopwatch w;
  const solve::SolveReport r = solver_->solve(b, x);
  using solve::Status;
  if (time_stepped && (r.status == Status::singular || r.status == Status::not_positive_definite ||
                       r.status == Status::incompatible || r.status == Status::inaccurate))
    explain_time_step(command_, *store_, key_, r.reason);
  if (r.status == solve::Status::incompatible)  // the remedies in this program's words
    throw NumericalError(fmt::format(
        "{}: {} (with --dirichlet or --fixed, or within --compatibility-tolerance)", command_, r.reason));
  solve::require(r);
  t.solve += w.seconds();
}

void Run::write(std::span<const mesh::Field> points, std::span<const mesh::Field> cells) {
  Stopwatch w;
  dist::write_vtu(o_.output, *store_, mesh_key_, points, cells);
  t.write += w.seconds();
}

assembly::Errors Run::errors(std::span<const double> u, const assembly::VectorFunction& exact) const {
  return assembly::solution_errors(*assembler_, u, exact, null_space.get(), *layout_);
}

nlohmann::json Run::json() const {
  nlohmann::json j;
  j["command"] = command_;
  j["version"] = FEM_VERSION;
  j["options"] = options_;  // TOML: --config replays the run
  const auto whole = dist::whole_mesh(*store_, mesh_key_);
  const Mesh& m = whole ? *whole : *mesh_;
  j["mesh"] = {{"source", m.source()},
               {"nodes", m.num_nodes()},
               {"cells", m.num_cells()},
               {"cell_type", std::string(m.cell_info().name)}};
  j["order"] = o_.order;
  j["device"] = o_.device;
  j["dofs"] = layout_->global_size(static_cast<std::size_t>(V_->num_dofs()));
  j["dirichlet_dofs"] = constrained_dofs;
  j["ranks"] = dist::processes().size();
  const solve::SolverReport& r = solver_->report();
  nlohmann::json s = {{"backend", std::string(solve::to_string(r.backend))}, {"method", r.method}};
  if (layout_->distributed()) {
    s["iterations"] = r.iterations;
    s["total_iterations"] = r.total_iterations;
    s["solves"] = r.solves;
    if (r.backend != solve::Backend::mumps) s["rtol"] = solver_->options().rtol;
  } else {
    s["ordering"] = std::string(solve::to_string(r.ordering));
    s["factor_nonzeros"] = r.factor_nonzeros;
  }
  j["solver"] = s;
  j["solve"] = {{"relative_residual", r.relative_residual},
                {"backward_error", r.backward_error},
                {"refinement_steps", r.refinement_steps}};
  j["timings"] = {{"read_mesh", t.read_mesh}, {"connectivity", t.connectivity},
                  {"assemble", t.assemble},   {"factorize", t.factorize},
                  {"solve", t.solve},         {"write", t.write}};
  if (dist::running()) j["timings"]["distribute"] = t.distribute;
  for (const char* name : {"pattern_builds", "pattern_hits"})
    j["cache"][name] = store_->counter(fmt::format("assembly.{}", name));
  for (const char* name : {"symbolic_analyses", "factorizations", "solves", "cache_hits"})
    j["cache"][name] = store_->counter(fmt::format("solve.{}", name));
  if (layout_->distributed())
    for (const auto& [name, value] : store_->counters())
      if (name.rfind("dist.", 0) == 0) j["dist"][name.substr(5)] = value;
  if (null_space) {
    j["solution"]["normalization"] =
        null_space->description() == "constant" ? "zero_mean" : "orthogonal_to_rigid_motions";
    j["solution"]["null_space"] = null_space->names();
    j["solution"]["compatibility_defect"] = std::max(0.0, r.compatibility_defect);
  } else {
    j["solution"]["normalization"] = "none";
  }
  return j;
}

void Run::write_json(const nlohmann::json& j) const {
  local([&] { app::write_json(o_.json, j); });
}

void Run::print_header(const std::string& extra) const {
  const auto whole = dist::whole_mesh(*store_, mesh_key_);
  std::FILE* f = out();
  fmt::print(f, "mesh        {} ({} nodes, {} {} cells)\n", whole->source(), whole->num_nodes(),
             whole->num_cells(), whole->cell_info().name);
  fmt::print(f, "space       {} with {} dofs ({} constrained){}\n", V_->name(),
             layout_->global_size(static_cast<std::size_t>(V_->num_dofs())), constrained_dofs, extra);
  const solve::SolverReport& r = solver_->report();
  if (layout_->distributed())
    fmt::print(
        f, "solver      {} ({}) on {} processes{}\n", solve::to_string(r.backend), r.method, r.processes,
        r.backend == solve::Backend::mumps
            ? std::string()
            : fmt::format(", {} iterations (last solve), rtol {:g}", r.iterations, solver_->options().rtol));
  else if (r.factorizations > 0 || !key_.empty())
    fmt::print(f, "solver      {} ({} ordering, {} factor nonzeros)\n", solve::to_string(r.backend),
               solve::to_string(r.ordering), r.factor_nonzeros);
  for (const auto& line : r.log) fmt::print(f, "note        {}\n", line);
  if (null_space)
    fmt::print(f, "null space  {} (no condition stops {}): data defect {:.2e}, solution {}\n",
               null_space->description(), null_space->dimension() == 1 ? "it" : "them",
               std::max(0.0, r.compatibility_defect),
               null_space->description() == "constant" ? "normalized to zero mean"
                                                       : "orthogonal to the free rigid motions (∫u·z = 0)");
}

void Run::print_timings() const {
  std::FILE* f = out();
  fmt::print(f, "\nphase          seconds\n");
  for (const auto& [name, s] : {std::pair{"read_mesh", t.read_mesh},
                                {"distribute", t.distribute},
                                {"connectivity", t.connectivity},
                                {"assemble", t.assemble},
                                {"factorize", t.factorize},
                                {"solve", t.solve},
                                {"write", t.write}})
    if (name != std::string_view("distribute") || dist::running())
      fmt::print(f, "{:<14} {:>9.4f}\n", name, s);
  fmt::print(f, "cache         ");
  for (const char* name : {"assembly.pattern_builds", "assembly.pattern_hits", "solve.symbolic_analyses",
                           "solve.factorizations", "solve.solves", "solve.cache_hits"})
    fmt::print(f, " {}={}", name, store_->counter(name));
  fmt::print(f, "\n");
}

nlohmann::json range_json(std::pair<double, double> range) {
  return {{"min", range.first}, {"max", range.second}};
}

nlohmann::json error_json(const assembly::Errors& e) {
  return {{"l2", e.l2}, {"h1_seminorm", e.h1}, {"h1", e.h1}};
}

void print_errors(std::FILE* out, const assembly::Errors& e) {
  fmt::print(out, "error       L2 {:.6e}, H1 seminorm {:.6e}\n", e.l2, e.h1);
}

// --- outputs ------------------------------------------------------------------------------

std::string lowercase_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

void prepare_output_folder(const std::string& option, const std::filesystem::path& path) {
  std::error_code ec;
  if (const auto folder = path.parent_path(); !folder.empty() && !std::filesystem::is_directory(folder, ec))
    std::filesystem::create_directories(folder, ec);  // on failure, check_writable says what is in the way
  try {
    check_writable(path);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", option, e.what()));
  }
}

void prepare_output(const std::string& option, const std::string& path, const std::string& extension,
                    const std::string& writes) {
  if (path.empty()) return;
  // A distributed run writes a .vtu gathered on rank 0, or pieces and their .pvtu.
  const bool pieces = extension == ".vtu" && dist::running() && lowercase_extension(path) == ".pvtu";
  if (lowercase_extension(path) != extension && !pieces)
    throw Error(fmt::format("{} '{}': this subcommand writes {}; give a file name ending in {}", option, path,
                            writes, extension));
  prepare_output_folder(option, path);
}

void require_finite(std::span<const double> values, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) [[unlikely]]
      throw NumericalError(fmt::format("{}: entry {} is {}; nothing is written", what, i, values[i]));
}

void write_json(const std::string& file, const nlohmann::json& j) {
  if (file.empty()) return;
  const std::string text = j.dump(2) + "\n";
  if (file == "-") {
    std::cout << text << std::flush;
    return;
  }
  write_file_atomically(file, text);
}

}  // namespace fem::app

namespace fem::app {

Probes::Probes(const Run& run, const std::vector<std::string>& points, int components)
    : run_(&run), components_(components) {
  const auto& V = run.space();
  const int gdim = run.mesh().gdim();
  const Processes& group = run.layout().processes();
  if (points.empty()) return;
  if (V.components() != components)
    throw Error(
        fmt::format("--probe: a field of {} components on a space of {}", components, V.components()));
  std::vector<double> coordinates;
  for (const auto& text : points) {
    Probe p;
    std::vector<double> xs;
    std::size_t at = 0;
    while (at <= text.size()) {
      const std::size_t comma = std::min(text.find(',', at), text.size());
      try {
        std::size_t used = 0;
        const std::string part = text.substr(at, comma - at);
        xs.push_back(std::stod(part, &used));
        if (used != part.size() || !std::isfinite(xs.back())) throw std::invalid_argument(part);
      } catch (const std::exception&) {
        throw Error(fmt::format("--probe '{}': give the point as x,y[,z] (numbers)", text));
      }
      at = comma + 1;
    }
    if (static_cast<int>(xs.size()) != gdim)
      throw Error(fmt::format("--probe '{}': {} coordinate(s) for a mesh in {}D", text, xs.size(), gdim));
    for (int d = 0; d < gdim; ++d) p.point[static_cast<std::size_t>(d)] = xs[static_cast<std::size_t>(d)];
    coordinates.insert(coordinates.end(), xs.begin(), xs.end());
    probes_.push_back(std::move(p));
  }
  // Each process finds the points in its part; the lowest rank that holds a point gives its value.
  assembly::PointEvaluator::Options options;
  options.require_all = false;
  evaluator_.emplace(V, coordinates, options);
  coordinates_ = coordinates;
  const auto size = static_cast<double>(group.size());
  for (std::size_t i = 0; i < probes_.size(); ++i) {
    const bool found = evaluator_->found(static_cast<index_t>(i));
    const double lowest = -group.max(found ? -static_cast<double>(group.rank()) : -size);
    if (lowest >= size) {
      const auto [lo, hi] = run.mesh().bounding_box();
      std::string span;
      for (int d = 0; d < gdim; ++d)
        span += fmt::format("{}[{}, {}]", d ? " × " : "", group.min(lo[static_cast<std::size_t>(d)]),
                            group.max(hi[static_cast<std::size_t>(d)]));
      throw Error(
          fmt::format("--probe '{}': the point lies in no cell of the mesh (none within {} of a cell's "
                      "size; the mesh spans {})",
                      points[i], options.tolerance, span));
    }
    probes_[i].here = static_cast<double>(group.rank()) == lowest;
  }
}

void Probes::also(const assembly::FunctionSpace& W) {
  if (probes_.empty()) return;
  assembly::PointEvaluator::Options options;
  options.require_all = false;
  also_.emplace(W, coordinates_, options);
}

void Probes::record(double t, std::span<const double> u, std::span<const double> w) {
  const Processes& group = run_->layout().processes();
  const int extra = also_ ? also_->components() : 0, all = components_ + extra;
  std::vector<double> local(static_cast<std::size_t>(all));
  for (std::size_t i = 0; i < probes_.size(); ++i) {
    auto& p = probes_[i];
    std::fill(local.begin(), local.end(), 0.0);
    if (p.here) {
      evaluator_->value(u, static_cast<index_t>(i),
                        std::span<double>(local).first(static_cast<std::size_t>(components_)));
      if (also_)
        also_->value(w, static_cast<index_t>(i),
                     std::span<double>(local).subspan(static_cast<std::size_t>(components_)));
    }
    std::vector<double> v(static_cast<std::size_t>(all));
    for (int c = 0; c < all; ++c)
      v[static_cast<std::size_t>(c)] = group.sum(local[static_cast<std::size_t>(c)]);
    p.times.push_back(t);
    p.values.push_back(std::move(v));
  }
}

nlohmann::json Probes::json() const {
  nlohmann::json j = nlohmann::json::array();
  const int gdim = run_->mesh().gdim();
  for (const auto& p : probes_)
    j.push_back({{"point", std::vector<double>(p.point.begin(), p.point.begin() + gdim)},
                 {"times", p.times},
                 {"values", p.values}});
  return j;
}

}  // namespace fem::app
