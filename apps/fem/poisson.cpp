// fem poisson: -div(k ∇u) = f with Dirichlet and Neumann conditions on tagged facets, solved by
// the library's linear solver (the cached factorization, or MUMPS/GAMG/hypre under mpirun);
// errors against an exact solution, .vtu output.
//   fem poisson gen:square-tri3:32 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y
//   fem poisson meshes/plate_hole_v41.msh --dirichlet hole=1 --dirichlet left=0 --output u.vtu
//   fem poisson gen:cube-tet4:16 --order 2 --source 1 --dirichlet all=0 --json -
#include <fmt/core.h>

#include <memory>

#include "commands.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct PoissonOptions {
  CommonOptions common;
  std::vector<std::string> coefficients, dirichlet, neumann;
  std::string source, exact;
};

void run_poisson(const PoissonOptions& o) {
  Run run(o.common, "poisson", ".vtu", "VTU (a .vtu file: point data u, cell data grad_u)");
  const Mesh& mesh = run.mesh();
  // Every option is checked before the work starts.
  std::vector<Expression> keep;
  std::optional<Expression> source, exact;
  std::vector<assembly::Dirichlet> dirichlet;
  std::vector<assembly::Neumann> neumann;
  assembly::Coefficient k;
  run.local([&] {
    if (!o.source.empty()) source = expression(run, "--source", o.source);
    if (!o.exact.empty()) exact = expression(run, "--exact", o.exact);
    k = coefficient(run, o.coefficients, keep);
    dirichlet = dirichlet_conditions(run, o.dirichlet, keep);
    neumann = neumann_conditions(run, o.neumann, keep);
  });
  run.make_space(1, /*spd=*/true);
  const assembly::Assembler& a = *run.assembler();

  Stopwatch w;
  std::vector<double> values = prefaulted_vector<double>(a.pattern()->nnz()), b(a.space().num_dofs(), 0.0);
  run.check_tags(neumann, {&k});
  run.local([&] {
    a.matrix_into(assembly::Diffusion{k}, values);
    if (source) a.vector_into(assembly::Source{source->function(), source->batch_function()}, b);
    assembly::assemble_neumann(a.space(), neumann, b);
  });
  const auto bc = assembly::dirichlet_values(a.space(), dirichlet, run.layout());
  assembly::apply_dirichlet(bc, *a.pattern(), values, b);
  run.t.assemble = w.seconds();
  // Without a Dirichlet condition the constants are free: solved with zero mean, or refused.
  run.publish_and_factorize("poisson/A", std::move(values), bc);
  std::vector<double> u(b.size());
  run.solve(b, u);

  assembly::Errors err;
  if (exact) err = run.errors(u, exact->vector_function());
  if (!o.common.output.empty()) {
    std::vector<double> nodal, grad;
    run.local([&] {
      require_finite(u, "poisson: the solution");
      nodal = assembly::mesh_node_values(a.space(), u);
      grad = assembly::cell_average_gradient(a, u);
    });
    const mesh::Field points[] = {{"u", 1, nodal}}, cells[] = {{"grad_u", mesh.gdim(), grad}};
    run.write(points, cells);
  }
  const auto range = run.layout().range(u);
  nlohmann::json j = run.json();
  j["solution"].update(range_json(range));
  if (exact) j["error"] = error_json(err);
  if (!o.common.output.empty()) j["output"] = o.common.output;
  run.write_json(j);
  if (!run.prints()) return;
  run.print_header();
  fmt::print(run.out(), "solution    min {:.6g}, max {:.6g}\n", range.first, range.second);
  if (exact) print_errors(run.out(), err);
  if (!o.common.output.empty()) fmt::print(run.out(), "output      {}\n", o.common.output);
  run.print_timings();
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
                  "write the solution to FILE.vtu (point data u; cell data grad_u)");
  cmd->callback([o] { run_poisson(*o); });
}

}  // namespace fem::app
