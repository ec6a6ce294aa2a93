// fem poisson: -div(k ∇u) = f with Dirichlet and Neumann conditions on tagged facets, solved
// through the store's cached factorization; errors against an exact solution, .vtu output.
//   fem poisson gen:square-tri3:32 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y
//   fem poisson meshes/plate_hole_v41.msh --dirichlet hole=1 --dirichlet left=0 --output u.vtu
//   fem poisson gen:cube-tet4:16 --order 2 --source 1 --dirichlet all=0 --json -
#include <fmt/core.h>

#include <memory>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/mesh/vtu.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct PoissonOptions {
  CommonOptions common;
  std::vector<std::string> coefficients, dirichlet, neumann;
  std::string source, exact;
};

void run_poisson(const PoissonOptions& o) {
  const CommonOptions& c = o.common;
  prepare_outputs(c, ".vtu", "VTU (a .vtu file: point data u, cell data grad_u)");
  apply_threads(c);
  const solve::Options sopts = solve_options(c);
  Store& store = fem::store();
  Timings t;
  const std::string mesh_key = load_and_publish(c.mesh, t, store);
  const auto mesh = store.get<Mesh>(mesh_key);

  // Every option is checked before the work starts.
  std::vector<Expression> keep;
  const assembly::Coefficient k = coefficient(*mesh, o.coefficients);
  std::optional<Expression> source, exact;
  if (!o.source.empty()) source.emplace("--source", o.source, mesh->gdim());
  if (!o.exact.empty()) exact.emplace("--exact", o.exact, mesh->gdim());
  const auto dirichlet = dirichlet_conditions(*mesh, o.dirichlet, keep);
  const auto neumann = neumann_conditions(*mesh, o.neumann, keep);

  Stopwatch w;
  const assembly::FunctionSpace V(mesh_key, c.order, 1, store);
  const MatrixAssembler matrices(V, c);
  const auto assembler = matrices.host_ptr();
  t.connectivity = w.seconds();

  w = Stopwatch();
  const auto pattern = assembler->pattern();
  std::vector<double> values(pattern->nnz(), 0.0);
  matrices.matrix_into(assembly::Diffusion{k}, values);
  std::vector<double> b(V.num_dofs(), 0.0);
  if (source) assembler->vector_into(assembly::Source{source->function()}, b);
  for (const auto& n : neumann) assembler->vector_into(n, b);
  const auto bc = assembly::dirichlet_values(V, dirichlet);
  assembly::apply_dirichlet(bc, *pattern, values, b);
  // Without a Dirichlet condition the constants are free: data checked, solution of zero mean.
  LinearSolveInfo info = publish_system(store, "poisson/A", *assembler, std::move(values), b, bc, sopts, "poisson");
  t.assemble = w.seconds();

  w = Stopwatch();
  const auto factor = solve::factorization(store, "poisson/A", sopts);
  t.factorize = w.seconds();
  w = Stopwatch();
  const std::vector<double> u = solve_checked(store, "poisson/A", b, sopts, info);
  t.solve = w.seconds();

  assembly::Errors err;
  if (exact) err = errors_against(*assembler, u, exact->vector_function(), info);

  if (!c.output.empty()) {
    w = Stopwatch();
    require_finite(u, "poisson: the solution");
    const auto nodal = node_values(V, u);
    std::vector<mesh::Field> points{{"u", 1, nodal}};
    std::vector<double> grad;
    std::vector<mesh::Field> cells;
    if (c.order == 1) {
      grad = p1_gradient(V, u);
      if (!grad.empty()) cells.push_back({"grad_u", mesh->gdim(), grad});
    }
    mesh::write_vtu(c.output, *mesh, points, cells);
    t.write = w.seconds();
  }

  if (!c.json.empty()) {
    nlohmann::json j = linear_run_json("poisson", c, *mesh, V.num_dofs(), bc.dofs.size(), *factor, t, store);
    j["solution"] = range_json(u);
    add_solve_json(j, info);
    if (exact) j["error"] = error_json(err);
    if (!c.output.empty()) j["output"] = c.output;
    write_json(c.json, j);
  }
  if (!c.show_text()) return;
  std::FILE* out = c.text();
  fmt::print(out, "mesh        {} ({} nodes, {} {} cells)\n", mesh->source(), mesh->num_nodes(), mesh->num_cells(),
             mesh->cell_info().name);
  fmt::print(out, "space       {} with {} dofs ({} constrained)\n", V.name(), V.num_dofs(), bc.dofs.size());
  print_solver(out, *factor);
  print_null_space(out, info);
  const auto r = range_json(u);
  fmt::print(out, "solution    min {:.6g}, max {:.6g}\n", r["min"].get<double>(), r["max"].get<double>());
  if (exact) print_errors(out, err);
  if (!c.output.empty()) fmt::print(out, "output      {}\n", c.output);
  print_timings(out, t, store);
}

}  // namespace

void add_poisson(CLI::App& app) {
  auto* cmd = app.add_subcommand("poisson", "solve -div(k grad u) = f with Dirichlet and Neumann conditions");
  auto o = std::make_shared<PoissonOptions>();
  add_common_options(*cmd, o->common);
  add_compatibility_option(*cmd, o->common);
  cmd->add_option("--coefficient", o->coefficients,
                  "k per cell tag: TAG=VALUE (TAG: physical name, number or 'all'; 'all' may be an expression "
                  "in x, y, z); default 1")
      ->allow_extra_args(false);
  cmd->add_option("--source", o->source, "f as an expression in x, y, z (default 0)");
  cmd->add_option("--dirichlet", o->dirichlet,
                  "u = EXPR on facets: TAG=EXPR (TAG: physical name, number, or 'all' for the whole boundary)")
      ->allow_extra_args(false);
  cmd->add_option("--neumann", o->neumann, "k du/dn = EXPR on facets: TAG=EXPR")
      ->allow_extra_args(false);
  cmd->add_option("--exact", o->exact, "exact solution: print its L2 and H1 errors");
  cmd->add_option("--output", o->common.output,
                  "write the solution to FILE.vtu (point data u; cell data grad_u for P1)");
  cmd->callback([o] { run_poisson(*o); });
}

}  // namespace fem::app
