// fem poisson: -div(k ∇u) = f with Dirichlet and Neumann conditions on tagged facets, solved
// through the store's cached factorization; errors against an exact solution, .vtu output.
//   fem poisson gen:square-tri3:32 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y
//   fem poisson meshes/plate_hole_v41.msh --dirichlet hole=1 --dirichlet left=0 --output u.vtu
//   fem poisson gen:cube-tet4:16 --order 2 --source 1 --dirichlet all=0 --json -
#include <fmt/core.h>

#include <memory>
#include <tuple>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/mesh/vtu.hpp"
#include "parallel.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct PoissonOptions {
  CommonOptions common;
  std::vector<std::string> coefficients, dirichlet, neumann;
  std::string source, exact;
};

void run_poisson(const PoissonOptions& o) {
  const CommonOptions c = parallel::for_this_rank(o.common);
  prepare_outputs(c, ".vtu", "VTU (a .vtu file: point data u, cell data grad_u)");
  apply_threads(c);
  Store& store = fem::store();
  Timings t;
  const std::string mesh_key = load_and_publish(c.mesh, t, store);
  const auto mesh = store.get<Mesh>(mesh_key);

  // Every option is checked before the work starts.
  std::vector<Expression> keep;
  std::optional<Expression> source, exact;
  const auto [k, dirichlet, neumann] = parallel::local([&] {
    if (!o.source.empty()) source.emplace("--source", o.source, mesh->gdim());
    if (!o.exact.empty()) exact.emplace("--exact", o.exact, mesh->gdim());
    return std::tuple(coefficient(*mesh, o.coefficients), dirichlet_conditions(*mesh, o.dirichlet, keep),
                      neumann_conditions(*mesh, o.neumann, keep));
  });

  Stopwatch w;
  const assembly::FunctionSpace V(mesh_key, c.order, 1, store);
  const MatrixAssembler matrices(V, c);
  const auto assembler = matrices.host_ptr();
  LinearSystem system(c, V, /*spd=*/true);
  t.connectivity = w.seconds();

  w = Stopwatch();
  const auto pattern = assembler->pattern();
  std::vector<double> values = prefaulted_vector<double>(pattern->nnz());
  std::vector<double> b(V.num_dofs(), 0.0);
  system.check_tags(neumann);
  parallel::local([&] {
    matrices.matrix_into(assembly::Diffusion{k}, values);
    if (source) assembler->vector_into(assembly::Source{source->function(), source->batch_function()}, b);
    for (const auto& n : neumann) assembler->vector_into(n, b);
  });
  const auto bc = system.dirichlet_values(dirichlet);
  assembly::apply_dirichlet(bc, *pattern, values, b);
  // Without a Dirichlet condition the constants are free: data checked, solution of zero mean.
  LinearSolveInfo info = parallel::local(
      [&] { return system.publish(store, "poisson/A", *assembler, std::move(values), b, bc, "poisson"); });
  t.assemble = w.seconds();

  w = Stopwatch();
  system.factorize(store, "poisson/A");
  t.factorize = w.seconds();
  w = Stopwatch();
  const std::vector<double> u = system.solve(store, "poisson/A", b, info);
  t.solve = w.seconds();

  assembly::Errors err;
  if (exact) err = system.errors(*assembler, u, exact->vector_function(), info);

  if (!c.output.empty()) {
    w = Stopwatch();
    std::vector<double> nodal, grad;
    std::vector<mesh::Field> points, cells;
    parallel::local([&] {
      require_finite(u, "poisson: the solution");
      nodal = node_values(V, u);
      points.push_back({"u", 1, nodal});
      if (c.order == 1) {
        grad = p1_gradient(V, u);
        if (!grad.empty()) cells.push_back({"grad_u", mesh->gdim(), grad});
      }
    });
    write_solution(c.output, store, mesh_key, points, cells);
    t.write = w.seconds();
  }

  const auto range = system.range(u);
  parallel::local([&] {  // rank 0 writes: its failure is every rank's
    if (!c.json.empty()) {
      nlohmann::json j = system.run_json("poisson", c, store, mesh_key, t);
      j["solution"] = range;
      add_solve_json(j, info);
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
  fmt::print(out, "space       {} with {} dofs ({} constrained)\n", V.name(), system.dofs(),
             system.constrained());
  system.print_solver(out);
  print_null_space(out, info);
  fmt::print(out, "solution    min {:.6g}, max {:.6g}\n", range["min"].get<double>(),
             range["max"].get<double>());
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
  cmd->add_option(
         "--coefficient", o->coefficients,
         "k per cell tag: TAG=VALUE (TAG: physical name, number or 'all'; 'all' may be an expression "
         "in x, y, z); default 1")
      ->allow_extra_args(false);
  cmd->add_option("--source", o->source, "f as an expression in x, y, z (default 0)");
  cmd->add_option(
         "--dirichlet", o->dirichlet,
         "u = EXPR on facets: TAG=EXPR (TAG: physical name, number, or 'all' for the whole boundary)")
      ->allow_extra_args(false);
  cmd->add_option("--neumann", o->neumann, "k du/dn = EXPR on facets: TAG=EXPR")->allow_extra_args(false);
  cmd->add_option("--exact", o->exact, "exact solution: print its L2 and H1 errors");
  cmd->add_option("--output", o->common.output,
                  "write the solution to FILE.vtu (point data u; cell data grad_u for P1)");
  cmd->callback([o] { run_poisson(*o); });
}

}  // namespace fem::app
