// fem modes: natural frequencies and mode shapes, K x = λ M x, by shift-invert Lanczos on the
// factorization cache (fem/eigen, docs/eigen.md). Laplace: −Δu = λu (acoustic or membrane modes)
// with homogeneous Dirichlet data on tags, Neumann elsewhere; elasticity: K u = ω² M u with a
// density, clamped or roller facets, and the effective modal mass of each mode per direction.
//   fem modes gen:square-tri3:64 --count 10 --dirichlet all=0
//   fem modes gen:square-tri3:64 --count 8 --range 40:200 --dirichlet all=0 --json -
//   fem modes meshes/plate_hole_v41.msh --problem elasticity --fixed left --count 12 --output modes.pvd
// Constrained unknowns are eliminated: no eigenvalue of theirs is ever reported. Under mpirun:
// SLEPc's Krylov–Schur with shift-invert on MUMPS (the same contract).
#include <fmt/core.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "commands.hpp"
#include "fem/eigen/eigen.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct ModesOptions {
  CommonOptions common;
  int count = 6;
  std::optional<double> shift;
  std::string range;
  std::string problem = "laplace";
  std::vector<std::string> dirichlet, fixed, young, poisson, density;
  std::string plane;
  bool lumped = false;
  bool verify = true;
  double tolerance = 1e-10;
};

// "A:B" with A < B, both finite.
std::pair<double, double> parse_range(const std::string& text) {
  const auto colon = text.find(':');
  double a = 0, b = 0;
  std::size_t used_a = 0, used_b = 0;
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    a = std::stod(text.substr(0, colon), &used_a);
    b = std::stod(text.substr(colon + 1), &used_b);
  } catch (const std::exception&) {
    throw Error(fmt::format("--range '{}': give the interval as A:B (two numbers, A < B)", text));
  }
  if (used_a != colon || used_b != text.size() - colon - 1 || !std::isfinite(a) || !std::isfinite(b) ||
      a >= b)
    throw Error(fmt::format("--range '{}': give the interval as A:B (two finite numbers, A < B)", text));
  return {a, b};
}

// A homogeneous value: "0" (or "free" per component for elasticity, when allowed).
bool is_zero(const std::string& v) {
  try {
    std::size_t used = 0;
    const double x = std::stod(v, &used);
    return used == v.size() && x == 0.0;
  } catch (const std::exception&) {
    return false;
  }
}

void run_modes(const ModesOptions& o) {
  const auto pvd =
      o.common.output.empty() ? std::nullopt : std::optional(std::filesystem::path(o.common.output));
  if (pvd) prepare_output("--output", pvd->string(), ".pvd", "one frame per mode");
  Run run(o.common, "modes");

  const Mesh& mesh = run.mesh();
  const int dim = mesh.tdim();
  const bool elastic = o.problem == "elasticity";
  if (elastic && (dim < 2 || dim != mesh.gdim()))
    throw Error(fmt::format("modes --problem elasticity: mesh '{}' has {}D cells in {}D space", mesh.source(),
                            dim, mesh.gdim()));
  if (!elastic && (!o.fixed.empty() || !o.young.empty() || !o.poisson.empty() || !o.plane.empty()))
    throw Error("modes: --fixed, --E, --nu and --plane belong to --problem elasticity");
  if (o.shift && !o.range.empty()) throw Error("modes: give --shift or --range, not both");

  fem::eigen::Options eo;
  eo.count = o.count;
  eo.lumped = o.lumped;
  eo.verify = o.verify;
  eo.tolerance = o.tolerance;
  if (o.shift) {
    eo.which = fem::eigen::Which::nearest;
    eo.shift = *o.shift;
  } else if (!o.range.empty()) {
    eo.which = fem::eigen::Which::interval;
    std::tie(eo.lower, eo.upper) = parse_range(o.range);
  }

  // Homogeneous conditions only: a mode has no data.
  const int components = elastic ? dim : 1;
  std::vector<assembly::Dirichlet> dirichlet;
  for (const auto& tag : o.fixed) dirichlet.push_back({facets(mesh, "--fixed", tag), nullptr, -1});
  for (const auto& [tag, expr] : tagged_values(mesh, "--dirichlet", o.dirichlet)) {
    const auto where = facets(mesh, "--dirichlet", tag);
    std::vector<std::string> parts;
    for (std::size_t a = 0, b; a <= expr.size(); a = b + 1) {
      b = std::min(expr.find(',', a), expr.size());
      parts.push_back(expr.substr(a, b - a));
    }
    if (static_cast<int>(parts.size()) != components)
      throw Error(fmt::format("--dirichlet {}={}: {} value(s) for {} component(s)", tag, expr, parts.size(),
                              components));
    for (int k = 0; k < components; ++k) {
      if (elastic && parts[k] == "free") continue;
      if (!is_zero(parts[k]))
        throw Error(fmt::format("--dirichlet {}={}: a mode's boundary values are zero ('0'{}), not '{}'", tag,
                                expr, elastic ? " or 'free'" : "", parts[k]));
      dirichlet.push_back({where, nullptr, elastic ? k : -1});
    }
  }
  assembly::Coefficient density, young, poisson;
  std::vector<Expression> keep;
  const Admissible poisson_ratio{-1.0, 0.5, true, true, "Poisson's ratio must lie in (-1, 0.5)"};
  run.local([&] {
    density = coefficient(run, o.density, keep, "--density", 1.0, Admissible::positive("density"));
    if (elastic) {
      young = coefficient(run, o.young, keep, "--E", 1.0, Admissible::positive("Young's modulus"));
      poisson = coefficient(run, o.poisson, keep, "--nu", 0.3, poisson_ratio);
    }
  });
  run.make_space(components, /*spd=*/true);
  const assembly::Assembler& a = *run.assembler();
  run.check_tags({}, {&density, &young, &poisson});

  Stopwatch w;
  const auto nnz = a.pattern()->nnz();
  std::vector<double> k_values = prefaulted_vector<double>(nnz), m_values = prefaulted_vector<double>(nnz);
  const assembly::Elasticity material{
      young, poisson,
      o.plane == "stress" ? assembly::Elasticity::Plane::stress : assembly::Elasticity::Plane::strain};
  run.local([&] {
    if (elastic)
      a.matrix_into(material, k_values);
    else
      a.matrix_into(assembly::Diffusion{1.0}, k_values);
    a.matrix_into(assembly::Mass{density}, m_values);
  });
  Store& store = run.store();
  store.put("modes/K", CsrMatrix(a.pattern(), std::move(k_values)));
  store.put("modes/M", CsrMatrix(a.pattern(), std::move(m_values)));
  eo.constrained = assembly::dirichlet_values(a.space(), dirichlet, run.layout()).dofs;
  run.constrained_dofs = eo.constrained.size();
  run.t.assemble = w.seconds();
  eo.linear.backend = solve::backend_from_name(o.common.solver, "--solver");
  eo.linear.ordering = solve::ordering_from_name(o.common.ordering, "--ordering");

  const auto r = run.local([&] {
    const auto shown = run.progress().phase("eigensolve");
    return dist::eigen_solve(store, "modes/K", "modes/M", a.space(), eo);
  });
  run.t.factorize = r.factorize_seconds;
  run.t.solve = r.solve_seconds;
  const auto k = r.modes();
  const auto n = static_cast<std::size_t>(a.space().num_dofs());

  // Effective modal mass per direction: Γ² with Γ = φᵀ M r, r the unit translation (on the free
  // unknowns), against the free mass rᵀ M r.
  std::vector<std::vector<double>> effective(static_cast<std::size_t>(elastic ? dim : 0));
  std::vector<double> total(effective.size(), 0.0);
  if (elastic) {
    const auto M = store.get<CsrMatrix>("modes/M");
    std::vector<char> fixed(n, 0);
    for (index_t d : eo.constrained) fixed[static_cast<std::size_t>(d)] = 1;
    std::vector<double> rd(n), mr(n);
    for (int c = 0; c < dim; ++c) {
      for (std::size_t i = 0; i < n; ++i)
        rd[i] = (i % dim == static_cast<std::size_t>(c) && !fixed[i]) ? 1.0 : 0.0;
      M->multiply(rd, mr);  // this process's cells (partial sums on a distributed mesh): summed below
      const Processes& group = run.layout().processes();
      double t = 0;
      for (std::size_t i = 0; i < n; ++i) t += rd[i] * mr[i];
      total[c] = group.sum(t);
      for (index_t j = 0; j < k; ++j) {
        double gamma = 0;
        const auto phi = r.vector(j);
        for (std::size_t i = 0; i < n; ++i) gamma += phi[i] * mr[i];
        gamma = group.sum(gamma);
        effective[c].push_back(gamma * gamma);
      }
    }
  }
  std::vector<double> frequencies;
  if (elastic)
    for (double l : r.eigenvalues)
      frequencies.push_back(std::sqrt(std::max(l, 0.0)) / (2 * std::numbers::pi));

  std::vector<std::string> warnings = r.log;
  if (dirichlet.empty() && !r.eigenvalues.empty() &&
      std::abs(r.eigenvalues.front()) < 1e-8 * std::max(1.0, r.eigenvalues.back()))
    warnings.push_back(elastic ? "no facet is fixed: the rigid motions come first, with eigenvalue 0"
                               : "no Dirichlet tag: the constant mode comes first, with eigenvalue 0");
  if (!r.converged) warnings.push_back("not every eigenpair converged (see eigen.residual_max)");

  if (pvd) {
    Stopwatch ww;
    dist::Series series(*pvd);
    for (index_t j = 0; j < k; ++j) {
      const auto phi = r.vector(j);
      const auto nodal = assembly::mesh_node_values(a.space(), phi, elastic ? 3 : 1);
      const mesh::Field fields[] = {{"mode", elastic ? 3 : 1, nodal}};
      series.write(static_cast<double>(j + 1), store, run.mesh_key(), fields);
    }
    series.commit();
    run.t.write = ww.seconds();
  }

  nlohmann::json j = run.json();
  j.erase("solution");  // the eigenpairs instead
  j["problem"] = o.problem;
  if (!run.layout().distributed())  // the operator's factorization (distributed: MUMPS, as run.json says)
    j["solver"] = {{"backend", std::string(solve::to_string(r.backend))},
                   {"method", r.method},
                   {"ordering", std::string(solve::to_string(r.ordering))},
                   {"factor_nonzeros", r.factor_nonzeros}};
  j["eigenvalues"] = r.eigenvalues;
  j["modes"] = k;
  if (elastic) j["frequencies"] = frequencies;
  j["eigen"] = {{"method", r.method},
                {"shift", r.shift},
                {"residual_max", r.residual_max},
                {"orthogonality_max", r.orthogonality_max},
                {"converged", r.converged},
                {"missing", r.missing},
                {"restarts", r.restarts},
                {"operator_applications", r.operator_applications},
                {"sturm_factorizations", r.sturm_factorizations},
                {"residuals", r.residuals}};
  if (r.sturm_count >= 0) j["eigen"]["sturm_count"] = r.sturm_count;
  if (elastic) {
    nlohmann::json e;
    for (int c = 0; c < dim; ++c) {
      const std::string axis(1, "xyz"[c]);
      e[axis] = effective[c];
      double sum = 0;
      for (double m : effective[c]) sum += m;
      e["total"][axis] = total[c];
      e["cumulative_share"][axis] = total[c] > 0 ? sum / total[c] : 0.0;
    }
    j["effective_mass"] = e;
  }
  j["warnings"] = warnings;
  if (pvd) j["output"] = pvd->string(), j["frames"] = k;
  run.write_json(j);
  if (!run.prints()) return;
  std::FILE* out = run.out();
  run.print_header(
      fmt::format(", {}{}", o.problem,
                  elastic && dim == 2 ? (o.plane == "stress" ? ", plane stress" : ", plane strain") : ""));
  fmt::print(out, "eigensolver {} (shift {:.6g}; {} solves, {} restart(s))\n", r.method, r.shift,
             r.operator_applications, r.restarts);
  if (r.sturm_count >= 0)
    fmt::print(out, "sturm count {} {}\n", r.sturm_count,
               eo.which == fem::eigen::Which::interval
                   ? fmt::format("eigenvalues in [{:.6g}, {:.6g}]", eo.lower, eo.upper)
                   : fmt::format("eigenvalues below {:.6g}", eo.shift));
  fmt::print(out, "{:>5}  {:>16}  {}{:>9}", "mode", "eigenvalue",
             elastic ? fmt::format("{:>14}  ", "frequency/Hz") : "", "residual");
  if (elastic)
    for (int c = 0; c < dim; ++c) fmt::print(out, "  {:>10}", fmt::format("m_eff,{} %", "xyz"[c]));
  fmt::print(out, "\n");
  std::vector<double> cumulative(static_cast<std::size_t>(elastic ? dim : 0), 0.0);
  for (index_t i = 0; i < k; ++i) {
    fmt::print(out, "{:>5}  {:>16.10g}  ", i + 1, r.eigenvalues[i]);
    if (elastic) fmt::print(out, "{:>14.8g}  ", frequencies[i]);
    fmt::print(out, "{:>9.2e}", r.residuals[i]);
    for (int c = 0; c < (elastic ? dim : 0); ++c) {
      const double share = total[c] > 0 ? 100 * effective[c][i] / total[c] : 0.0;
      cumulative[c] += share;
      fmt::print(out, "  {:>10.2f}", share);
    }
    fmt::print(out, "\n");
  }
  if (elastic) {
    fmt::print(out, "{:>5}  {:>16}  {:>14}  {:>9}", "sum", "", "", "");
    for (double c : cumulative) fmt::print(out, "  {:>10.2f}", c);
    fmt::print(out, "   (share of the free mass in each direction)\n");
  }
  fmt::print(out, "checks      residual max {:.2e}, M-orthogonality {:.2e}{}\n", r.residual_max,
             r.orthogonality_max, r.missing ? fmt::format(", {} missing", r.missing) : "");
  for (const auto& line : warnings) fmt::print(out, "warning     {}\n", line);
  if (pvd) fmt::print(out, "output      {} ({} frames, one per mode)\n", pvd->string(), k);
  run.print_timings();
}

}  // namespace

void add_modes(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "modes",
      "natural frequencies and mode shapes (K x = λ M x by shift-invert Lanczos): laplace or elasticity");
  auto o = std::make_shared<ModesOptions>();
  add_common_options(*cmd, o->common);
  cmd->add_option("--count", o->count, "how many eigenpairs (with --range: at most this many); default 6")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--shift", o->shift, "the eigenvalues nearest this shift (default: the smallest)")
      ->check(finite_number());
  cmd->add_option("--range", o->range,
                  "every eigenvalue in A:B (Sturm counts say how many there are and whether one is missing)");
  cmd->add_option("--problem", o->problem, "laplace (−Δu = λu, the default) or elasticity (K u = ω² M u)")
      ->check(CLI::IsMember({"laplace", "elasticity"}));
  cmd->add_option(
         "--dirichlet", o->dirichlet,
         "u = 0 on facets: TAG=0 (elasticity: TAG=0,0[,0] with 'free' for an unconstrained component)")
      ->allow_extra_args(false);
  cmd->add_option("--fixed", o->fixed, "elasticity: clamp every component on facets: TAG")
      ->allow_extra_args(false);
  cmd->add_option("--E", o->young, "elasticity: Young's modulus per cell tag, TAG=VALUE (default 1)")
      ->allow_extra_args(false);
  cmd->add_option("--nu", o->poisson, "elasticity: Poisson's ratio per cell tag, TAG=VALUE (default 0.3)")
      ->allow_extra_args(false);
  cmd->add_option("--density", o->density, "mass density per cell tag, TAG=VALUE (default 1)")
      ->allow_extra_args(false);
  cmd->add_option("--plane", o->plane, "elasticity in 2D: strain (default) or stress")
      ->check(CLI::IsMember({"strain", "stress"}));
  cmd->add_flag("--lumped", o->lumped, "a lumped (row-sum) mass instead of the consistent one");
  cmd->add_flag(
      "--verify,!--no-verify", o->verify,
      "check with Sturm counts that no eigenvalue was missed (an LDLᵀ per end of the results' window; "
      "the default); --no-verify skips it (a range is always counted)");
  cmd->add_option("--tolerance", o->tolerance, "Lanczos's relative tolerance (default 1e-10)")
      ->check(between(1e-15, 0.1));
  cmd->add_option(
      "--output", o->common.output,
      "write FILE.pvd: one frame per mode (time = the mode's number), the shape as point data 'mode'");
  cmd->callback([o] { run_modes(*o); });
}

}  // namespace fem::app
