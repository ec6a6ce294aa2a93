// fem elasticity: linear elasticity -div σ(u) = f, σ = λ tr(ε) I + 2μ ε with E and ν per cell tag
// (plane strain in 2D, or plane stress with --plane stress); clamped, prescribed and free
// displacement components on tagged facets, tractions, a body force; the von Mises stress per
// cell; errors against an exact displacement.
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
#include "parallel.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct ElasticityOptions {
  CommonOptions common;
  std::vector<std::string> young, poisson, fixed, dirichlet, traction;
  std::string body_force, exact;
  std::string plane;  // "strain" or "stress" (2D only); empty: not given, plane strain
};

assembly::FacetSet facets(const Mesh& mesh, const std::string& option, const std::string& tag) {
  return tag == "all" ? assembly::FacetSet::all()
                      : assembly::FacetSet::tagged({facet_tag(mesh, option, tag)});
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
  const CommonOptions c = parallel::for_this_rank(o.common);
  prepare_outputs(c, ".vtu", "VTU (a .vtu file: point data displacement, cell data von_mises and stress)");
  apply_threads(c);
  Store& store = fem::store();
  Timings t;
  const std::string mesh_key = load_and_publish(c.mesh, t, store);
  const auto mesh = store.get<Mesh>(mesh_key);
  const int dim = mesh->tdim(), gdim = mesh->gdim();
  if (dim < 2 || dim != gdim)
    throw Error(
        fmt::format("elasticity: mesh '{}' has {}D cells in {}D space; 2D (plane strain or stress) "
                    "or 3D cells in their own space are needed",
                    mesh->source(), dim, gdim));
  if (dim == 3 && !o.plane.empty())
    throw Error(fmt::format("--plane {}: mesh '{}' is 3D; plane strain and plane stress are 2D models",
                            o.plane, mesh->source()));
  const bool plane_stress = o.plane == "stress";

  // Every option is checked before the work starts.
  // E > 0 and -1 < ν < 1/2 at every point where an expression is evaluated, not only for constants.
  const Admissible poisson_ratio{-1.0, 0.5, true, true, "Poisson's ratio must lie in (-1, 0.5)"};
  std::vector<assembly::Dirichlet> dirichlet;
  std::vector<assembly::Neumann> tractions;
  std::optional<assembly::VectorFunction> body_force, exact;
  const assembly::Elasticity material = parallel::local([&] {
    const assembly::Elasticity material{
        coefficient(*mesh, o.young, "--E", 1.0, Admissible::positive("Young's modulus")),
        coefficient(*mesh, o.poisson, "--nu", 0.3, poisson_ratio),
        plane_stress ? assembly::Elasticity::Plane::stress : assembly::Elasticity::Plane::strain};
    for (const auto& tag : o.fixed) dirichlet.push_back({facets(*mesh, "--fixed", tag), nullptr, -1});
    for (const auto& [tag, expr] : tagged_values(*mesh, "--dirichlet", o.dirichlet)) {
      const auto where = facets(*mesh, "--dirichlet", tag);
      const auto parts = vector_expression("--dirichlet " + tag, expr, dim, gdim, true);
      for (int k = 0; k < dim; ++k)
        if (parts[k]) dirichlet.push_back({where, parts[k]->function(), k});
    }
    for (const auto& [tag, expr] : tagged_values(*mesh, "--traction", o.traction)) {
      auto tags = facet_tags_of(*mesh, "--traction", tag);
      auto g = vector_function(vector_expression("--traction " + tag, expr, dim, gdim));
      tractions.push_back({std::move(tags), std::move(g)});
    }
    if (!o.body_force.empty())
      body_force = vector_function(vector_expression("--body-force", o.body_force, dim, gdim));
    if (!o.exact.empty()) exact = vector_function(vector_expression("--exact", o.exact, dim, gdim));
    return material;
  });

  Stopwatch w;
  const assembly::FunctionSpace V(mesh_key, c.order, dim, store);
  const MatrixAssembler matrices(V, c);
  const auto assembler = matrices.host_ptr();
  LinearSystem system(c, V, /*spd=*/true);
  t.connectivity = w.seconds();

  w = Stopwatch();
  const auto pattern = assembler->pattern();
  std::vector<double> values = prefaulted_vector<double>(pattern->nnz());
  std::vector<double> b(V.num_dofs(), 0.0);
  system.check_tags(tractions);
  parallel::local([&] {
    matrices.matrix_into(material, values);
    if (body_force) assembler->vector_into(assembly::VectorSource{*body_force}, b);
    for (const auto& n : tractions) assembler->vector_into(n, b);
  });
  const auto bc = system.dirichlet_values(dirichlet);
  assembly::apply_dirichlet(bc, *pattern, values, b);
  // The constraints are checked against the rigid motions (not against which options were
  // given): free ones with balanced loads are solved orthogonal to them, else an error naming them.
  LinearSolveInfo info = parallel::local([&] {
    return system.publish(store, "elasticity/A", *assembler, std::move(values), b, bc, "elasticity");
  });
  t.assemble = w.seconds();

  w = Stopwatch();
  system.factorize(store, "elasticity/A");
  t.factorize = w.seconds();
  w = Stopwatch();
  const std::vector<double> u = system.solve(store, "elasticity/A", b, info);
  t.solve = w.seconds();

  // Post-processing (stresses, errors) is timed with the assembly: it runs the same cell loops.
  w = Stopwatch();
  const std::vector<double> stress =
      parallel::local([&] { return assembly::cell_stress(*assembler, u, material); });
  const std::vector<double> mises = assembly::von_mises(stress);
  assembly::Errors err;
  if (exact) err = system.errors(*assembler, u, *exact, info);
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
  for (auto& [lo, hi] : ranges) lo = parallel::min(lo), hi = parallel::max(hi);
  const auto mises_range = system.range(mises);
  const auto magnitude_range = system.range(magnitude);

  if (!c.output.empty()) {
    w = Stopwatch();
    const auto nodal = parallel::local([&] {
      require_finite(u, "elasticity: the displacement");
      require_finite(stress, "elasticity: the stress");
      return nodal_displacement(V, u);
    });
    const mesh::Field points[] = {{"displacement", 3, nodal}};
    const mesh::Field cells[] = {{"von_mises", 1, mises}, {"stress", 6, stress}};
    write_solution(c.output, store, mesh_key, points, cells);
    t.write = w.seconds();
  }

  parallel::local([&] {  // rank 0 writes: its failure is every rank's
  if (!c.json.empty()) {
    nlohmann::json j = system.run_json("elasticity", c, store, mesh_key, t);
    if (dim == 2) j["plane"] = plane_stress ? "stress" : "strain";
    j["solution"] = magnitude_range;  // of |u| at the DOF nodes
    for (const auto& [lo, hi] : ranges) j["solution"]["components"].push_back({{"min", lo}, {"max", hi}});
    add_solve_json(j, info);
    j["stress"] = {{"von_mises_min", mises_range["min"]}, {"von_mises_max", mises_range["max"]}};
    if (exact) j["error"] = error_json(err);
    if (!c.output.empty()) j["output"] = c.output;
    write_json(c.json, j);
  }
  });
  if (!c.show_text()) return;
  std::FILE* out = c.text();
  const auto whole = parallel::whole_mesh(store, mesh_key);
  fmt::print(out, "mesh        {} ({} nodes, {} {} cells)\n", whole->source(), whole->num_nodes(),
             whole->num_cells(), whole->cell_info().name);
  fmt::print(out, "space       {} with {} dofs ({} constrained){}\n", V.name(), system.dofs(),
             system.constrained(), dim == 2 ? (plane_stress ? ", plane stress" : ", plane strain") : "");
  system.print_solver(out);
  print_null_space(out, info);
  const auto& r = magnitude_range;
  fmt::print(out, "displacement max |u| {:.6g}", r["max"].get<double>());
  for (int k = 0; k < dim; ++k)
    fmt::print(out, ", u{} in [{:.6g}, {:.6g}]", "xyz"[k], ranges[k].first, ranges[k].second);
  fmt::print(out, "\nvon Mises   min {:.6g}, max {:.6g}\n", mises_range["min"].get<double>(),
             mises_range["max"].get<double>());
  if (exact) print_errors(out, err);
  if (!c.output.empty()) fmt::print(out, "output      {}\n", c.output);
  print_timings(out, t, store);
}

}  // namespace

void add_elasticity(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "elasticity", "linear elasticity (plane strain or stress in 2D): displacement, von Mises stress");
  auto o = std::make_shared<ElasticityOptions>();
  add_common_options(*cmd, o->common);
  add_compatibility_option(*cmd, o->common);
  cmd->add_option(
         "--E", o->young,
         "Young's modulus per cell tag: TAG=VALUE (TAG: physical name, number or 'all'; 'all' may be an "
         "expression in x, y, z); default 1")
      ->allow_extra_args(false);
  cmd->add_option("--nu", o->poisson, "Poisson's ratio per cell tag: TAG=VALUE; default 0.3")
      ->allow_extra_args(false);
  cmd->add_option("--plane", o->plane,
                  "2D model: 'strain' (εzz = 0, the default) or 'stress' (σzz = 0: thin plates, Cook's "
                  "membrane, NAFEMS LE1); an error on 3D meshes")
      ->check(CLI::IsMember({"strain", "stress"}));
  cmd->add_option("--fixed", o->fixed,
                  "clamp every displacement component on facets: TAG (name, number or 'all')")
      ->allow_extra_args(false);
  cmd->add_option("--dirichlet", o->dirichlet,
                  "prescribed displacement on facets: TAG=EXPR,EXPR[,EXPR], one per component ('free': not "
                  "prescribed); wins over --fixed")
      ->allow_extra_args(false);
  cmd->add_option("--traction", o->traction, "σ·n = g on facets: TAG=EXPR,EXPR[,EXPR]")
      ->allow_extra_args(false);
  cmd->add_option("--body-force", o->body_force, "f as EXPR,EXPR[,EXPR] in x, y, z (default 0)");
  cmd->add_option("--exact", o->exact, "exact displacement EXPR,EXPR[,EXPR]: print its L2 and H1 errors");
  cmd->add_option("--output", o->common.output,
                  "write FILE.vtu: point data displacement (3 components); cell data von_mises and stress "
                  "(xx, yy, zz, xy, yz, xz, cell averages)");
  cmd->callback([o] { run_elasticity(*o); });
}

}  // namespace fem::app
