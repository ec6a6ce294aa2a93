// Shared pieces of the solver subcommands: expressions, tags, options, timings, JSON.
#include "solver_common.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <unordered_map>

#include "fem/atomic_file.hpp"
#include "fem/error.hpp"
#include "load_mesh.hpp"
#include "parallel.hpp"

#if FEM_APP_HAS_DIST
#include "fem/dist/dist.hpp"
#endif

namespace fem::app {

namespace {
/// `s` without leading and trailing blanks.
std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

}  // namespace

TaggedExpression split_tagged(const std::string& option, const std::string& value) {
  const auto eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    throw Error(fmt::format("{} '{}': expected TAG=VALUE (TAG: a physical name, a number or 'all')", option,
                            value));
  return {value.substr(0, eq), value.substr(eq + 1)};
}

namespace {

std::string names_in(const Mesh& mesh, int dim) {
  std::set<int> tags;
  for (int t : dim == mesh.tdim() ? mesh.cell_tags() : mesh.facet_tags()) tags.insert(t);
  std::string s;
  for (int t : tags) {
    const auto name = mesh.name_of(dim, t);
    s += fmt::format("{}{}{}", s.empty() ? "" : ", ", t, name.empty() ? "" : fmt::format(" ({})", name));
  }
  return s.empty() ? "none" : s;
}

int resolve_tag(const Mesh& mesh, int dim, const std::string& option, const std::string& tag, const char* what) {
  int number = 0;
  const auto [p, ec] = std::from_chars(tag.data(), tag.data() + tag.size(), number);
  if (ec == std::errc() && p == tag.data() + tag.size()) return number;
  if (const auto t = mesh.tag_of(tag, dim)) return *t;
  throw Error(fmt::format("{}: unknown {} tag '{}' in mesh '{}' (its {} tags: {})", option, what, tag,
                          mesh.source(), what, names_in(mesh, dim)));
}

}  // namespace

std::vector<int> facet_tags_of(const Mesh& mesh, const std::string& option, const std::string& tag) {
  if (tag != "all") return {facet_tag(mesh, option, tag)};
  std::set<int> all(mesh.facet_tags().begin(), mesh.facet_tags().end());
  // The part of the whole boundary a distributed part lists is no tag of the user's.
  // A part may have none of them (the whole mesh was checked on rank 0).
  if (const auto boundary = mesh.tag_of(boundary_facets_name, mesh.tdim() - 1)) {
    all.erase(*boundary);
    return {all.begin(), all.end()};
  }
  if (all.empty())
    throw Error(fmt::format("{} all: mesh '{}' has no tagged boundary facets", option, mesh.source()));
  return {all.begin(), all.end()};
}

int facet_tag(const Mesh& mesh, const std::string& option, const std::string& tag) {
  return resolve_tag(mesh, mesh.tdim() - 1, option, tag, "facet");
}

int cell_tag(const Mesh& mesh, const std::string& option, const std::string& tag) {
  return resolve_tag(mesh, mesh.tdim(), option, tag, "cell");
}

std::vector<TaggedExpression> tagged_values(const Mesh& mesh, const std::string& option,
                                            const std::vector<std::string>& values, bool facets) {
  std::vector<TaggedExpression> out;
  std::map<int, std::size_t> seen;  // resolved tag (all: INT_MIN) -> index in out
  for (const auto& v : values) {
    TaggedExpression te = split_tagged(option, v);
    te.expr = trimmed(te.expr);
    const int key = te.tag == "all"   ? std::numeric_limits<int>::min()
                    : facets          ? facet_tag(mesh, option, te.tag)
                                      : cell_tag(mesh, option, te.tag);
    if (const auto it = seen.find(key); it != seen.end()) {
      const TaggedExpression& first = out[it->second];
      if (first.expr != te.expr)
        throw Error(fmt::format("{}: tag '{}'{} is given two values, '{}' and '{}' (one value per tag)", option,
                                first.tag, te.tag == first.tag ? "" : fmt::format(" (also as '{}')", te.tag),
                                first.expr, te.expr));
      continue;
    }
    seen.emplace(key, out.size());
    out.push_back(std::move(te));
  }
  return out;
}

std::vector<assembly::Dirichlet> dirichlet_conditions(const Mesh& mesh, const std::vector<std::string>& values,
                                                      std::vector<Expression>& keep) {
  std::vector<assembly::Dirichlet> out;
  for (const auto& [tag, expr] : tagged_values(mesh, "--dirichlet", values)) {
    keep.emplace_back("--dirichlet " + tag, expr, mesh.gdim());
    assembly::Dirichlet d;
    d.where = tag == "all" ? assembly::FacetSet::all()
                           : assembly::FacetSet::tagged({facet_tag(mesh, "--dirichlet", tag)});
    d.value = keep.back().function();
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<assembly::Neumann> neumann_conditions(const Mesh& mesh, const std::vector<std::string>& values,
                                                  std::vector<Expression>& keep) {
  std::vector<assembly::Neumann> out;
  for (const auto& [tag, expr] : tagged_values(mesh, "--neumann", values)) {
    keep.emplace_back("--neumann " + tag, expr, mesh.gdim());
    out.push_back(assembly::Neumann::scalar(facet_tags_of(mesh, "--neumann", tag), keep.back().function()));
  }
  return out;
}

assembly::Coefficient coefficient(const Mesh& mesh, const std::vector<std::string>& values, const std::string& option,
                                  double otherwise, const Admissible& admissible) {
  std::optional<Expression> everywhere;
  std::map<int, double> per_tag;
  for (const auto& [tag, expr] : tagged_values(mesh, option, values, /*facets=*/false)) {
    Expression e(option + " " + tag, expr, mesh.gdim(), admissible);
    if (tag == "all") {
      everywhere = e;
      continue;
    }
    if (!e.is_constant())
      throw Error(fmt::format("{} {}='{}': a value per tag must be a constant (only 'all' may depend on x, y, z)",
                              option, tag, expr));
    per_tag[cell_tag(mesh, option, tag)] = e(nullptr);
  }
  if (per_tag.empty()) {
    if (!everywhere) return assembly::Coefficient(otherwise);
    if (everywhere->is_constant()) return assembly::Coefficient((*everywhere)(nullptr));
    return assembly::Coefficient::function(everywhere->function());
  }
  if (everywhere && !everywhere->is_constant())
    throw Error(fmt::format("{} all=EXPR depending on x, y, z cannot be combined with values per tag", option));
  return assembly::Coefficient::per_tag(std::move(per_tag), everywhere ? (*everywhere)(nullptr) : otherwise);
}

std::vector<std::optional<Expression>> vector_expression(const std::string& option, const std::string& text,
                                                         int components, int gdim, bool allow_free) {
  // Split at the commas outside parentheses: muparser's functions take comma-separated arguments.
  std::vector<std::string> parts(1);
  int depth = 0;
  for (const char ch : text) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (ch == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += ch;
  }
  if (static_cast<int>(parts.size()) != components)
    throw Error(fmt::format("{} '{}': {} component{}, expected {} (one per dimension: EXPR{})", option, text,
                            parts.size(), parts.size() == 1 ? "" : "s", components,
                            components == 3 ? ",EXPR,EXPR" : components == 2 ? ",EXPR" : ""));
  std::vector<std::optional<Expression>> out;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::string part = trimmed(parts[k]);
    if (part.empty())
      throw Error(fmt::format("{} '{}': component {} is empty{}", option, text, k + 1,
                              allow_free ? " (write 'free' for a component that is not prescribed)" : ""));
    if (allow_free && part == "free") {
      out.emplace_back(std::nullopt);
      continue;
    }
    out.emplace_back(Expression(fmt::format("{} (component {})", option, k + 1), part, gdim));
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

namespace {
/// --device cuda without a usable device: one line saying why.
void check_device(const std::string& device) {
  std::string reason;
  if (device == "cuda" && !gpu::cuda_available(&reason))
    throw Error(fmt::format("--device cuda: no CUDA device can be used: {}", reason));
}
}  // namespace

gpu::Executor executor(const CommonOptions& o) {
  if (o.device == "debug-device") return gpu::Executor::debug_device();
  if (o.device != "cuda") return gpu::Executor::host();
  check_device(o.device);
  try {
    return gpu::Executor::cuda(0);
  } catch (const Error& e) {
    throw Error(fmt::format("--device cuda: {}", e.what()));
  }
}

MatrixAssembler::MatrixAssembler(const assembly::FunctionSpace& V, const CommonOptions& o) {
  const gpu::Executor exec = executor(o);
  if (o.device == "cpu")
    host_ = std::make_shared<const assembly::Assembler>(V, exec);
  else
    device_ = std::make_shared<const assembly::DeviceAssembler>(V, exec);
}

std::shared_ptr<const assembly::Assembler> MatrixAssembler::host_ptr() const {
  if (host_) return host_;
  return std::shared_ptr<const assembly::Assembler>(device_, &device_->host());  // aliasing: keeps device_ alive
}

void add_common_options(CLI::App& cmd, CommonOptions& o, bool with_order) {
  cmd.add_option("mesh", o.mesh, "mesh file, or gen:square-tri3:N, gen:cube-tet4:N, ...")->required();
  if (with_order)
    cmd.add_option("--order", o.order, "polynomial degree of the Lagrange space")
        ->check(CLI::IsMember({1, 2}));
  cmd.add_option("--solver", o.solver,
                 "serial direct solver (auto, cholmod, umfpack, klu, ldlt, lu), or a distributed one (MPI + PETSc, "
                 "also on one process): mumps (direct, the default under mpirun), gamg or hypre (CG/GMRES with "
                 "algebraic multigrid; PETSc options through PETSC_OPTIONS with the prefix fem_)")
      ->check(CLI::IsMember({"auto", "cholmod", "umfpack", "klu", "ldlt", "lu", "mumps", "gamg", "hypre"}));
  cmd.add_option("--ksp-rtol", o.ksp_rtol, "relative residual ‖b − Ax‖/‖b‖ of the iterative solvers (--solver gamg|hypre)")
      ->check(positive_number());
  cmd.add_option("--ordering", o.ordering, "fill-reducing ordering")
      ->check(CLI::IsMember({"auto", "amd", "colamd", "metis", "natural"}));
  cmd.add_option("--device", o.device,
                 "where the connectivity and the matrices are built: cpu (default), cuda (a CUDA build and GPU), "
                 "or debug-device (the device code path on the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "debug-device"}))
      ->each(check_device);  // fails at parse time, before any work, in every subcommand
  cmd.add_option("--threads", o.threads, "assembly threads (OpenMP; 0: its default)")->check(at_least(0));
  cmd.add_option("--json", o.json,
                 "write the results as JSON to FILE ('-': standard output; the text then goes to standard error)");
  cmd.add_flag("--quiet,-q", o.quiet, "print nothing but errors (and the JSON)");
}

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

void add_compatibility_option(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--compatibility-tolerance", o.compatibility_tolerance,
                 "without constraints that stop every rigid motion (no Dirichlet condition): the largest relative "
                 "defect of the data (e.g. |∫f + ∫g| / ∫|f| + ∫|g|) solved as compatible, with its part along the "
                 "free motions removed (default 1e-6)")
      ->check(between(0, 1));
}

void apply_threads(const CommonOptions& o) {
  if (o.threads > 0) {
    omp_set_num_threads(o.threads);
  } else if (parallel::size() > 1 && !std::getenv("OMP_NUM_THREADS")) {
    // Ranks on one machine share its cores: each takes its share, not all of them.
    omp_set_num_threads(std::max(1, omp_get_num_procs() / parallel::size()));
  }
}

solve::Options solve_options(const CommonOptions& o) {
  solve::Options s;
  using B = solve::Backend;
  using R = solve::Ordering;
  const std::map<std::string, B> backends{{"auto", B::automatic}, {"cholmod", B::cholmod}, {"umfpack", B::umfpack},
                                          {"klu", B::klu},         {"ldlt", B::ldlt},       {"lu", B::lu}};
  const std::map<std::string, R> orderings{
      {"auto", R::automatic}, {"amd", R::amd}, {"colamd", R::colamd}, {"metis", R::metis}, {"natural", R::natural}};
  if (!backends.count(o.solver))
    throw Error(fmt::format("--solver {}: a distributed solver (MPI + PETSc) but this run is serial", o.solver));
  s.backend = backends.at(o.solver);
  s.compatibility_tolerance = o.compatibility_tolerance;
  s.ordering = orderings.at(o.ordering);
  if (!solve::available(s.backend))
    throw Error(fmt::format("--solver {}: not available in this build", o.solver));
  if (!solve::available(s.ordering))
    throw Error(fmt::format("--ordering {}: not available in this build", o.ordering));
  return s;
}

LinearSolveInfo publish_system(Store& store, const std::string& key, const assembly::Assembler& assembler,
                               std::vector<double> values, std::span<const double> b,
                               const assembly::DirichletValues& constrained, const solve::Options& options,
                               const char* command) {
  LinearSolveInfo info;
  CsrMatrix A(assembler.pattern(), std::move(values));
  info.null_space = assembly::null_space(assembler, A, constrained);
  if (const auto& ns = info.null_space) {
    info.compatibility_defect = ns->defect(b);
    if (!(info.compatibility_defect <= std::max(options.compatibility_tolerance, ns->rounding_defect()))) {
      if (assembler.space().components() == 1) {
        double sum = 0;  // Σ b_i = ∫f + ∫g: the basis functions sum to 1
        for (double v : b) sum += v;
        throw Error(fmt::format(
            "{}: without a Dirichlet condition the problem has a solution only if the data balance (∫f + ∫g = "
            "0), but ∫f + ∫g = {:.6g} (relative defect {:.3g} > --compatibility-tolerance {:.3g}): give "
            "--dirichlet on some boundary, or a source and fluxes whose integrals cancel",
            command, sum, info.compatibility_defect, options.compatibility_tolerance));
      }
      throw Error(fmt::format(
          "{}: the constraints leave rigid motions free ({}) and the loads are not in equilibrium against them "
          "(relative defect {:.3g} > --compatibility-tolerance {:.3g}): stop them with --fixed or --dirichlet, or "
          "balance the loads",
          command, ns->description(), info.compatibility_defect, options.compatibility_tolerance));
    }
  }
  store.put(key, CsrMatrix(A.pattern_ptr(), std::move(A).release_values(), info.null_space));
  return info;
}

std::vector<double> solve_checked(Store& store, const std::string& key, std::span<const double> b,
                                  const solve::Options& options, LinearSolveInfo& info) {
  std::vector<double> x(b.size());
  const solve::SolveReport r = solve::solve(store, key, b, x, options);
  if (!r)
    throw NumericalError(fmt::format("solve '{}' failed ({}): {}", key, solve::to_string(r.status), r.reason));
  info.relative_residual = std::max(info.relative_residual, r.residual);
  info.backward_error = std::max(info.backward_error, r.backward_error);
  info.refinement_steps = std::max(info.refinement_steps, r.refinement_steps);
  return x;
}

assembly::Errors errors_against(const assembly::Assembler& assembler, std::span<const double> u,
                                const assembly::VectorFunction& exact, const LinearSolveInfo& info) {
  if (!info.null_space) return assembly::errors(assembler, u, exact);
  // The exact solution carries its own constant (rigid motion); u_h has ∫u·z = 0. Compare u_h
  // normalized like the exact solution: u_h + (I u - normalized I u), I the interpolant.
  std::vector<double> shift = assembly::interpolate(assembler.space(), exact), normalized = shift;
  info.null_space->normalize(normalized);
  for (std::size_t i = 0; i < shift.size(); ++i) shift[i] = u[i] + (shift[i] - normalized[i]);
  return assembly::errors(assembler, shift, exact);
}

void print_null_space(std::FILE* out, const LinearSolveInfo& info) {
  if (!info.null_space) return;
  const bool scalar = info.null_space->description() == "constant";
  fmt::print(out, "null space  {} (no condition stops {}): data defect {:.2e}, solution {}\n",
             info.null_space->description(), info.null_space->dimension() == 1 ? "it" : "them",
             info.compatibility_defect,
             scalar ? "normalized to zero mean" : "orthogonal to the free rigid motions (∫u·z = 0)");
}

void add_solve_json(nlohmann::json& j, const LinearSolveInfo& info) {
  j["solve"] = {{"relative_residual", info.relative_residual},
                {"backward_error", info.backward_error},
                {"refinement_steps", info.refinement_steps}};
  auto& s = j["solution"];
  if (!info.null_space) {
    s["normalization"] = "none";
    return;
  }
  s["normalization"] = info.null_space->description() == "constant" ? "zero_mean" : "orthogonal_to_rigid_motions";
  s["null_space"] = info.null_space->names();
  s["compatibility_defect"] = info.compatibility_defect;
}

std::string load_and_publish(const std::string& spec, Timings& t, Store& store) {
  Stopwatch w;
  std::string stem = spec.rfind("gen:", 0) == 0 ? spec.substr(4) : std::filesystem::path(spec).stem().string();
  std::replace(stem.begin(), stem.end(), ':', '_');
  const std::string key = "mesh/" + stem;
#if FEM_APP_HAS_DIST
  if (parallel::distributed()) {
    std::shared_ptr<const Mesh> whole = parallel::local([&]() -> std::shared_ptr<const Mesh> {
      if (!parallel::root()) return nullptr;
      auto m = std::make_shared<const Mesh>(load_mesh(spec));
      store.put(key + "#whole", m);  // for gathered output and the JSON's mesh
      return m;
    });
    t.read_mesh = w.seconds();
    w = Stopwatch();
    dist::distribute(MPI_COMM_WORLD, whole, key, store);
    t.distribute = w.seconds();
    return key;
  }
#endif
  store.put(key, load_mesh(spec));
  t.read_mesh = w.seconds();
  return key;
}

nlohmann::json mesh_json(const Mesh& mesh) {
  return {{"source", mesh.source()},
          {"nodes", mesh.num_nodes()},
          {"cells", mesh.num_cells()},
          {"cell_type", std::string(mesh.cell_info().name)}};
}

nlohmann::json timings_json(const Timings& t) {
  nlohmann::json j = {{"read_mesh", t.read_mesh}, {"connectivity", t.connectivity}, {"assemble", t.assemble},
                      {"factorize", t.factorize}, {"solve", t.solve},               {"write", t.write}};
  if (parallel::distributed()) j["distribute"] = t.distribute;
  return j;
}

namespace {
const char* const counter_names[][2] = {{"pattern_builds", "assembly.pattern_builds"},
                                        {"pattern_hits", "assembly.pattern_hits"},
                                        {"symbolic_analyses", "solve.symbolic_analyses"},
                                        {"factorizations", "solve.factorizations"},
                                        {"solves", "solve.solves"},
                                        {"cache_hits", "solve.cache_hits"}};
}

void print_solver(std::FILE* out, const solve::Factorization& factor) {
  fmt::print(out, "solver      {} ({} ordering, {} factor nonzeros)\n", solve::to_string(factor.backend()),
             solve::to_string(factor.ordering()), factor.factor_nonzeros());
}

nlohmann::json linear_run_json(const char* command, const CommonOptions& c, const Mesh& mesh, index_t dofs,
                               std::size_t dirichlet_dofs, const solve::Factorization& factor, const Timings& t,
                               const Store& store) {
  nlohmann::json j;
  j["command"] = command;
  j["mesh"] = mesh_json(mesh);
  j["order"] = c.order;
  j["device"] = c.device;
  j["dofs"] = dofs;
  j["dirichlet_dofs"] = dirichlet_dofs;
  j["solver"] = {{"backend", std::string(solve::to_string(factor.backend()))},
                 {"ordering", std::string(solve::to_string(factor.ordering()))},
                 {"factor_nonzeros", factor.factor_nonzeros()}};
  j["timings"] = timings_json(t);
  j["cache"] = cache_json(store);
  return j;
}

nlohmann::json cache_json(const Store& store) {
  nlohmann::json j;
  for (const auto& [short_name, name] : counter_names) j[short_name] = store.counter(name);
  return j;
}

nlohmann::json range_json(std::span<const double> u) {
  if (u.empty()) return {{"min", 0.0}, {"max", 0.0}};
  const auto [lo, hi] = std::minmax_element(u.begin(), u.end());
  return {{"min", *lo}, {"max", *hi}};
}

nlohmann::json error_json(const assembly::Errors& e) {
  return {{"l2", e.l2}, {"h1_seminorm", e.h1}, {"h1", e.h1}};
}

void print_errors(std::FILE* out, const assembly::Errors& e) {
  fmt::print(out, "error       L2 {:.6e}, H1 seminorm {:.6e}\n", e.l2, e.h1);
}

void print_timings(std::FILE* out, const Timings& t, const Store& store) {
  fmt::print(out, "\nphase          seconds\n");
  for (const auto& [name, s] : {std::pair{"read_mesh", t.read_mesh}, {"distribute", t.distribute},
                                {"connectivity", t.connectivity}, {"assemble", t.assemble},
                                {"factorize", t.factorize}, {"solve", t.solve}, {"write", t.write}})
    if (name != std::string_view("distribute") || parallel::distributed()) fmt::print(out, "{:<14} {:>9.4f}\n", name, s);
  fmt::print(out, "cache         ");
  for (const auto& [short_name, name] : counter_names)
    if (!parallel::distributed() || std::string_view(name).rfind("assembly.", 0) == 0)
      fmt::print(out, " {}={}", name, store.counter(name));
  if (parallel::distributed())  // this rank's counters (every rank makes the same collective calls)
    for (const auto& [name, value] : store.counters())
      if (name.rfind("dist.", 0) == 0) fmt::print(out, " {}={}", name, value);
  fmt::print(out, "\n");
}

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
  const bool pieces = extension == ".vtu" && parallel::distributed() && lowercase_extension(path) == ".pvtu";
  if (lowercase_extension(path) != extension && !pieces)
    throw Error(fmt::format("{} '{}': this subcommand writes {}; give a file name ending in {}", option, path, writes,
                            extension));
  prepare_output_folder(option, path);
}

void prepare_outputs(const CommonOptions& o, const std::string& extension, const std::string& writes) {
  parallel::local([&] {  // the JSON is rank 0's: a failure there is every rank's
    if (!extension.empty()) prepare_output("--output", o.output, extension, writes);
    if (!o.json.empty() && o.json != "-") prepare_output_folder("--json", o.json);
  });
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

namespace {
/// The vertex pair of a second-order mesh node in Gmsh's order (edge nodes), or {-1, -1}.
std::pair<int, int> edge_of(CellType type, int node) {
  static constexpr int line3[][2] = {{0, 1}};
  static constexpr int tri6[][2] = {{0, 1}, {1, 2}, {2, 0}};
  static constexpr int quad9[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
  static constexpr int tet10[][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};
  static constexpr int hex27[][2] = {{0, 1}, {0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3},
                                     {2, 6}, {3, 7}, {4, 5}, {4, 7}, {5, 6}, {6, 7}};
  auto pick = [&](const auto& table, int first) -> std::pair<int, int> {
    const int e = node - first;
    if (e < 0 || e >= static_cast<int>(std::size(table))) return {-1, -1};
    return {table[e][0], table[e][1]};
  };
  switch (type) {
    case CellType::line3: return pick(line3, 2);
    case CellType::tri6: return pick(tri6, 3);
    case CellType::quad9: return pick(quad9, 4);
    case CellType::tet10: return pick(tet10, 4);
    case CellType::hex27: return pick(hex27, 8);
    default: return {-1, -1};
  }
}
}  // namespace

std::vector<double> node_values(const assembly::FunctionSpace& V, std::span<const double> u) {
  const Mesh& mesh = V.mesh();
  const auto& dm = V.dofmap();
  std::vector<double> out(mesh.num_nodes(), 0.0);
  const int mesh_npc = mesh.cell_info().num_nodes, nv = mesh.cell_info().num_vertices;
  const bool same_nodes = dm.nodes_per_cell == mesh_npc;
  for (index_t c = 0; c < mesh.num_cells(); ++c) {
    const auto cell = mesh.cell(c);
    const index_t* nodes = dm.cell_nodes.data() + static_cast<std::size_t>(c) * dm.nodes_per_cell;
    double mean = 0;
    for (int i = 0; i < nv; ++i) mean += u[nodes[i]];
    mean /= nv;
    for (int i = 0; i < mesh_npc; ++i) {
      if (i < nv || same_nodes) {
        out[cell[i]] = u[nodes[i]];
      } else if (const auto [a, b] = edge_of(mesh.cell_type(), i); a >= 0) {
        out[cell[i]] = 0.5 * (u[nodes[a]] + u[nodes[b]]);  // the linear interpolant at the edge midpoint
      } else {
        out[cell[i]] = mean;  // face and cell centres
      }
    }
  }
  return out;
}

std::vector<double> p1_gradient(const assembly::FunctionSpace& V, std::span<const double> u) {
  const Mesh& mesh = V.mesh();
  const int d = mesh.gdim(), td = mesh.tdim();
  const auto type = mesh.cell_type();
  if (d != td || !(type == CellType::tri3 || type == CellType::tet4 || type == CellType::line2)) return {};
  const auto& dm = V.dofmap();
  const auto X = mesh.coords();
  std::vector<double> g(static_cast<std::size_t>(mesh.num_cells()) * d, 0.0);
  for (index_t c = 0; c < mesh.num_cells(); ++c) {
    const auto cell = mesh.cell(c);
    double J[3][3] = {}, du[3] = {};
    for (int k = 0; k < d; ++k) {
      for (int r = 0; r < d; ++r) J[k][r] = X[cell[k + 1] * d + r] - X[cell[0] * d + r];  // row k: edge k
      du[k] = u[dm.cell_nodes[c * dm.nodes_per_cell + k + 1]] - u[dm.cell_nodes[c * dm.nodes_per_cell]];
    }
    // Solve J grad = du (rows: edges) by Cramer's rule.
    double* gc = g.data() + static_cast<std::size_t>(c) * d;
    if (d == 1) {
      gc[0] = du[0] / J[0][0];
    } else if (d == 2) {
      const double det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
      gc[0] = (du[0] * J[1][1] - J[0][1] * du[1]) / det;
      gc[1] = (J[0][0] * du[1] - du[0] * J[1][0]) / det;
    } else {
      auto det3 = [](const double A[3][3]) {
        return A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) - A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
               A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
      };
      const double det = det3(J);
      for (int col = 0; col < 3; ++col) {
        double A[3][3];
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 3; ++k) A[r][k] = k == col ? du[r] : J[r][k];
        gc[col] = det3(A) / det;
      }
    }
  }
  return g;
}

}  // namespace fem::app
