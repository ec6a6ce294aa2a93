// fem elasticity: linear elasticity -div σ(u) = f, σ = λ tr(ε) I + 2μ ε with E and ν per cell tag
// (plane strain in 2D); clamped, prescribed and free displacement components on tagged facets,
// tractions, a body force; the von Mises stress per cell; errors against an exact displacement.
//   fem elasticity gen:square-tri3:32 --E all=200 --nu all=0.3 --fixed left --traction right=1,0
//   fem elasticity meshes/plate_hole_v41.msh --fixed left --traction right=1,0 --output plate.vtu
//   fem elasticity gen:cube-tet4:8 --fixed left --body-force 0,0,-1 --json -
//   fem elasticity gen:square-tri3:16 --dirichlet all=0.01*x,-0.003*y --exact 0.01*x,-0.003*y
// Where --fixed and --dirichlet meet, --dirichlet wins; a component given as `free` is not
// prescribed (rollers: --dirichlet left=0,free).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/mesh/vtu.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct ElasticityOptions {
  CommonOptions common;
  std::vector<std::string> young, poisson, fixed, dirichlet, traction;
  std::string body_force, exact;
};

assembly::FacetSet facets(const Mesh& mesh, const std::string& option, const std::string& tag) {
  return tag == "all" ? assembly::FacetSet::all() : assembly::FacetSet::tagged({facet_tag(mesh, option, tag)});
}

/// Constant per-tag values of --E and --nu must be admissible: E > 0, -1 < ν < 1/2.
void check_material(const Mesh& mesh, const std::vector<std::string>& values, const std::string& option,
                    bool is_nu) {
  for (const auto& v : values) {
    const auto [tag, expr] = split_tagged(option, v);
    const Expression e(option + " " + tag, expr, mesh.gdim());
    if (!e.is_constant()) continue;
    const double value = e(nullptr);
    if (is_nu && !(value > -1.0 && value < 0.5))
      throw Error(fmt::format("{} {}={}: Poisson's ratio must lie in (-1, 0.5)", option, tag, value));
    if (!is_nu && !(value > 0.0 && std::isfinite(value)))
      throw Error(fmt::format("{} {}={}: Young's modulus must be positive", option, tag, value));
  }
}

/// The displacement's nodal values on the mesh nodes, 3 components per node (z = 0 in 2D) so
/// that ParaView's "Warp By Vector" takes it as it is.
std::vector<double> nodal_displacement(const assembly::FunctionSpace& V, std::span<const double> u) {
  const int dim = V.components();
  const auto n = static_cast<std::size_t>(V.dofmap().num_nodes);
  std::vector<double> out(static_cast<std::size_t>(V.mesh().num_nodes()) * 3, 0.0), component(n);
  for (int k = 0; k < dim; ++k) {
    for (std::size_t i = 0; i < n; ++i) component[i] = u[i * dim + k];
    const auto values = node_values(V, component);
    for (std::size_t i = 0; i < values.size(); ++i) out[i * 3 + k] = values[i];
  }
  return out;
}

void run_elasticity(const ElasticityOptions& o) {
  const CommonOptions& c = o.common;
  apply_threads(c);
  const solve::Options sopts = solve_options(c);
  Store& store = fem::store();
  Timings t;
  const std::string mesh_key = load_and_publish(c.mesh, t, store);
  const auto mesh = store.get<Mesh>(mesh_key);
  const int dim = mesh->tdim(), gdim = mesh->gdim();
  if (dim < 2 || dim != gdim)
    throw Error(fmt::format("elasticity: mesh '{}' has {}D cells in {}D space; 2D (plane strain) or 3D cells in "
                            "their own space are needed",
                            mesh->source(), dim, gdim));

  // Every option is checked before the work starts.
  check_material(*mesh, o.young, "--E", false);
  check_material(*mesh, o.poisson, "--nu", true);
  const assembly::Elasticity material{coefficient(*mesh, o.young, "--E", 1.0),
                                      coefficient(*mesh, o.poisson, "--nu", 0.3)};
  std::vector<assembly::Dirichlet> dirichlet;
  for (const auto& tag : o.fixed) dirichlet.push_back({facets(*mesh, "--fixed", tag), nullptr, -1});
  for (const auto& v : o.dirichlet) {
    const auto [tag, expr] = split_tagged("--dirichlet", v);
    const auto where = facets(*mesh, "--dirichlet", tag);
    const auto parts = vector_expression("--dirichlet " + tag, expr, dim, gdim, true);
    for (int k = 0; k < dim; ++k)
      if (parts[k]) dirichlet.push_back({where, parts[k]->function(), k});
  }
  std::vector<assembly::Neumann> tractions;
  for (const auto& v : o.traction) {
    const auto [tag, expr] = split_tagged("--traction", v);
    auto tags = facet_tags_of(*mesh, "--traction", tag);
    auto g = vector_function(vector_expression("--traction " + tag, expr, dim, gdim));
    tractions.push_back({std::move(tags), std::move(g)});
  }
  std::optional<assembly::VectorFunction> body_force, exact;
  if (!o.body_force.empty()) body_force = vector_function(vector_expression("--body-force", o.body_force, dim, gdim));
  if (!o.exact.empty()) exact = vector_function(vector_expression("--exact", o.exact, dim, gdim));

  Stopwatch w;
  const assembly::FunctionSpace V(mesh_key, c.order, dim, store);
  const MatrixAssembler matrices(V, c);
  const auto assembler = matrices.host_ptr();
  t.connectivity = w.seconds();

  w = Stopwatch();
  const auto pattern = assembler->pattern();
  std::vector<double> values(pattern->nnz(), 0.0);
  matrices.matrix_into(material, values);
  std::vector<double> b(V.num_dofs(), 0.0);
  if (body_force) assembler->vector_into(assembly::VectorSource{*body_force}, b);
  for (const auto& n : tractions) assembler->vector_into(n, b);
  const auto bc = assembly::dirichlet_values(V, dirichlet);
  assembly::apply_dirichlet(bc, *pattern, values, b);
  // The constraints are checked against the rigid motions (not against which options were
  // given): free ones with balanced loads are solved orthogonal to them, else an error naming them.
  LinearSolveInfo info =
      publish_system(store, "elasticity/A", *assembler, std::move(values), b, sopts, "elasticity");
  t.assemble = w.seconds();

  w = Stopwatch();
  const auto factor = solve::factorization(store, "elasticity/A", sopts);
  t.factorize = w.seconds();
  w = Stopwatch();
  const std::vector<double> u = solve_checked(store, "elasticity/A", b, sopts, info);
  t.solve = w.seconds();

  // Post-processing (stresses, errors) is timed with the assembly: it runs the same cell loops.
  w = Stopwatch();
  const std::vector<double> stress = assembly::cell_stress(*assembler, u, material);
  const std::vector<double> mises = assembly::von_mises(stress);
  assembly::Errors err;
  if (exact) err = assembly::errors(*assembler, u, *exact);
  t.assemble += w.seconds();

  // |u| at the DOF nodes, and each component's range.
  const auto num_nodes = static_cast<std::size_t>(V.dofmap().num_nodes);
  std::vector<double> magnitude(num_nodes);
  std::vector<std::pair<double, double>> ranges(dim, {0.0, 0.0});
  for (std::size_t i = 0; i < num_nodes; ++i) {
    double s = 0;
    for (int k = 0; k < dim; ++k) {
      const double v = u[i * dim + k];
      s += v * v;
      auto& [lo, hi] = ranges[k];
      lo = i == 0 ? v : std::min(lo, v);
      hi = i == 0 ? v : std::max(hi, v);
    }
    magnitude[i] = std::sqrt(s);
  }
  const auto mises_range = range_json(mises);

  if (!c.output.empty()) {
    w = Stopwatch();
    const auto nodal = nodal_displacement(V, u);
    const mesh::Field points[] = {{"displacement", 3, nodal}};
    const mesh::Field cells[] = {{"von_mises", 1, mises}, {"stress", 6, stress}};
    mesh::write_vtu(c.output, *mesh, points, cells);
    t.write = w.seconds();
  }

  if (!c.json.empty()) {
    nlohmann::json j = linear_run_json("elasticity", c, *mesh, V.num_dofs(), bc.dofs.size(), *factor, t, store);
    j["solution"] = range_json(magnitude);  // of |u| at the DOF nodes
    for (const auto& [lo, hi] : ranges) j["solution"]["components"].push_back({{"min", lo}, {"max", hi}});
    add_solve_json(j, info);
    j["stress"] = {{"von_mises_min", mises_range["min"]}, {"von_mises_max", mises_range["max"]}};
    if (exact) j["error"] = {{"l2", err.l2}, {"h1", err.h1}};
    if (!c.output.empty()) j["output"] = c.output;
    write_json(c.json, j);
  }
  if (!c.show_text()) return;
  std::FILE* out = c.text();
  fmt::print(out, "mesh        {} ({} nodes, {} {} cells)\n", mesh->source(), mesh->num_nodes(), mesh->num_cells(),
             mesh->cell_info().name);
  fmt::print(out, "space       {} with {} dofs ({} constrained){}\n", V.name(), V.num_dofs(), bc.dofs.size(),
             dim == 2 ? ", plane strain" : "");
  print_solver(out, *factor);
  print_null_space(out, info);
  const auto r = range_json(magnitude);
  fmt::print(out, "displacement max |u| {:.6g}", r["max"].get<double>());
  for (int k = 0; k < dim; ++k)
    fmt::print(out, ", u{} in [{:.6g}, {:.6g}]", "xyz"[k], ranges[k].first, ranges[k].second);
  fmt::print(out, "\nvon Mises   min {:.6g}, max {:.6g}\n", mises_range["min"].get<double>(),
             mises_range["max"].get<double>());
  if (exact) fmt::print(out, "error       L2 {:.6e}, H1 {:.6e}\n", err.l2, err.h1);
  if (!c.output.empty()) fmt::print(out, "output      {}\n", c.output);
  print_timings(out, t, store);
}

}  // namespace

void add_elasticity(CLI::App& app) {
  auto* cmd = app.add_subcommand("elasticity", "linear elasticity (plane strain in 2D): displacement, von Mises stress");
  auto o = std::make_shared<ElasticityOptions>();
  add_common_options(*cmd, o->common);
  add_compatibility_option(*cmd, o->common);
  cmd->add_option("--E", o->young,
                  "Young's modulus per cell tag: TAG=VALUE (TAG: physical name, number or 'all'; 'all' may be an "
                  "expression in x, y, z); default 1")
      ->allow_extra_args(false);
  cmd->add_option("--nu", o->poisson, "Poisson's ratio per cell tag: TAG=VALUE; default 0.3")
      ->allow_extra_args(false);
  cmd->add_option("--fixed", o->fixed, "clamp every displacement component on facets: TAG (name, number or 'all')")
      ->allow_extra_args(false);
  cmd->add_option("--dirichlet", o->dirichlet,
                  "prescribed displacement on facets: TAG=EXPR,EXPR[,EXPR], one per component ('free': not "
                  "prescribed); wins over --fixed")
      ->allow_extra_args(false);
  cmd->add_option("--traction", o->traction, "σ·n = g on facets: TAG=EXPR,EXPR[,EXPR]")->allow_extra_args(false);
  cmd->add_option("--body-force", o->body_force, "f as EXPR,EXPR[,EXPR] in x, y, z (default 0)");
  cmd->add_option("--exact", o->exact, "exact displacement EXPR,EXPR[,EXPR]: print its L2 and H1 errors");
  cmd->add_option("--output", o->common.output,
                  "write FILE.vtu: point data displacement (3 components); cell data von_mises and stress "
                  "(xx, yy, zz, xy, yz, xz, cell averages)");
  cmd->callback([o] { run_elasticity(*o); });
}

}  // namespace fem::app
