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

#include "commands.hpp"
#include "fem/assembly/mixed.hpp"
#include "fem/flow/flow.hpp"
#include "fem/norm.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct ElasticityOptions {
  CommonOptions common;
  std::vector<std::string> young, poisson, fixed, dirichlet, traction;
  std::string body_force, exact;
  std::string plane;  // "strain" or "stress" (2D only); empty: not given, plane strain
  std::string formulation = "displacement";
};

// --formulation up: displacement and pressure on Taylor–Hood (fem/assembly/mixed.hpp), which does
// not lock as ν → ½. The same options and outputs, with the pressure p = −λ div u added.
void run_up(const ElasticityOptions& o, Run& run, const assembly::Elasticity& material,
            const std::vector<assembly::Dirichlet>& dirichlet,
            const std::vector<assembly::Neumann>& tractions,
            const std::optional<assembly::VectorFunction>& body_force,
            const std::optional<assembly::VectorFunction>& exact, bool plane_stress) {
  if (dist::processes().size() > 1)
    throw Error("--formulation up: the distributed path is not built for it yet; run it on one process");
  if (o.common.order != 1)
    throw Error("--formulation up uses Taylor–Hood (P2 displacement, P1 pressure): --order does not apply");
  const Mesh& mesh = run.mesh();
  const int dim = mesh.tdim();
  Stopwatch w;
  auto W = std::make_shared<const assembly::MixedSpace>(run.mesh_key(), run.store());
  run.t.connectivity = w.seconds();

  w = Stopwatch();
  const auto E = material.young.resolved(mesh, "--E"), nu = material.poisson.resolved(mesh, "--nu");
  assembly::Flow flow = assembly::Flow::up_elasticity(1, 1);
  flow.material = [E, nu, plane_stress](index_t cell, int tag, const double* x, double* mu,
                                        double* inv_lambda) {
    const double e = E(cell, tag, x), v = nu(cell, tag, x);
    *mu = e / (2 * (1 + v));
    double lambda = e * v / ((1 + v) * (1 - 2 * v));
    if (plane_stress) lambda = 2 * lambda * *mu / (lambda + 2 * *mu);
    *inv_lambda = 1 / lambda;
  };
  if (body_force) flow.body_force = *body_force;
  // The library's solver for the saddle point: UMFPACK by default; --solver mumps (LDLᵀ) or
  // fieldsplit (FGMRES, Schur complement by the pressure mass over the shear modulus) on PETSc.
  solve::Options linear;
  linear.backend =
      o.common.solver == "auto" ? solve::Backend::umfpack : solve::backend_from_name(o.common.solver);
  linear.ordering = solve::ordering_from_name(o.common.ordering, "--ordering");
  linear.symmetric = true;
  linear.rtol = o.common.ksp_rtol;
  linear.prefix = "fem_";
  linear = flow::solver_options(*W, flow, false, linear, "elasticity", run.store());
  auto solver = std::shared_ptr<solve::LinearSolver>(dist::make_solver(*W, linear));
  run.adopt_space(W->velocity(), solver);
  const auto n = static_cast<std::size_t>(W->num_dofs());
  std::vector<double> values = prefaulted_vector<double>(W->pattern()->nnz()), b(n, 0.0), zero(n, 0.0);
  assembly::flow_into(*W, flow, zero, values, b);  // b = F(0) = −∫f·v
  for (double& v : b) v = -v;
  std::vector<double> traction(static_cast<std::size_t>(W->pressure_offset()), 0.0);
  assembly::assemble_neumann(W->velocity(), tractions, traction);
  for (std::size_t i = 0; i < traction.size(); ++i) b[i] += traction[i];
  const auto bc = assembly::dirichlet_values(W->velocity(), dirichlet);
  run.constrained_dofs = static_cast<std::int64_t>(bc.dofs.size());
  assembly::apply_dirichlet(bc, *W->pattern(), values, b);
  run.store().put("elasticity/A", CsrMatrix(W->pattern(), std::move(values)));
  run.t.assemble = w.seconds();
  w = Stopwatch();
  solver->factorize(run.store(), "elasticity/A");
  run.t.factorize = w.seconds();
  w = Stopwatch();
  std::vector<double> x(n);
  solve::require(solver->solve(b, x));
  run.t.solve = w.seconds();

  w = Stopwatch();
  const std::vector<double> stress = assembly::up_cell_stress(*W, flow, x);
  const std::vector<double> mises = assembly::von_mises(stress);
  assembly::Errors err;
  if (exact) err = assembly::errors(assembly::Assembler(W->velocity()), W->velocity_part(x), *exact);
  const assembly::Locking locking = assembly::locking(W->velocity(), material);
  run.t.assemble += w.seconds();
  const auto nodes = static_cast<std::size_t>(W->velocity().dofmap().num_nodes);
  std::vector<double> magnitude(nodes), component(nodes);
  std::vector<std::pair<double, double>> ranges;
  for (std::size_t i = 0; i < nodes; ++i)
    magnitude[i] = norm2(std::span<const double>(x).subspan(i * dim, static_cast<std::size_t>(dim)));
  for (int k = 0; k < dim; ++k) {
    for (std::size_t i = 0; i < nodes; ++i) component[i] = x[i * dim + k];
    ranges.push_back(run.layout().range(component));
  }
  const auto pressure_range = run.layout().range(W->pressure_part(x));
  const auto mises_range = run.layout().range(mises), magnitude_range = run.layout().range(magnitude);
  if (!o.common.output.empty()) {
    require_finite(x, "elasticity: the displacement and pressure");
    const auto u = assembly::mesh_node_values(W->velocity(), W->velocity_part(x), 3);
    const auto p = assembly::mesh_node_values(W->pressure(), W->pressure_part(x));
    const mesh::Field points[] = {{"displacement", 3, u}, {"pressure", 1, p}};
    const mesh::Field cells[] = {{"von_mises", 1, mises}, {"stress", 6, stress}};
    run.write(points, cells);
  }
  nlohmann::json j = run.json();
  j["order"] = 2;
  j["dofs"] = W->num_dofs();
  j["formulation"] = "up";
  if (dim == 2) j["plane"] = plane_stress ? "stress" : "strain";
  j["solution"].update(range_json(magnitude_range));
  for (const auto& r : ranges) j["solution"]["components"].push_back(range_json(r));
  j["pressure"] = range_json(pressure_range);
  j["stress"] = {{"von_mises_min", mises_range.first}, {"von_mises_max", mises_range.second}};
  j["locking"] = {{"lambda_over_mu", locking.lambda_over_mu},
                  {"h_over_L", locking.h_over_L},
                  {"indicator", locking.indicator}};
  j["warnings"] = nlohmann::json::array();  // the mixed formulation does not lock
  if (exact) j["error"] = error_json(err);
  if (!o.common.output.empty()) j["output"] = o.common.output;
  run.write_json(j);
  if (!run.prints()) return;
  std::FILE* out = run.out();
  run.print_header(fmt::format("{} + {} pressure with {} dofs (u–p, Taylor–Hood)",
                               dim == 2 ? (plane_stress ? ", plane stress" : ", plane strain") : "",
                               W->pressure().name(), W->num_pressure_dofs()));
  fmt::print(out, "displacement max |u| {:.6g}", magnitude_range.second);
  for (int k = 0; k < dim; ++k)
    fmt::print(out, ", u{} in [{:.6g}, {:.6g}]", "xyz"[k], ranges[k].first, ranges[k].second);
  fmt::print(out, "\npressure    in [{:.6g}, {:.6g}]\n", pressure_range.first, pressure_range.second);
  fmt::print(out, "von Mises   min {:.6g}, max {:.6g}\n", mises_range.first, mises_range.second);
  if (exact) print_errors(out, err);
  if (!o.common.output.empty()) fmt::print(out, "output      {}\n", o.common.output);
  run.print_timings();
}

void run_elasticity(const ElasticityOptions& o) {
  Run run(o.common, "elasticity", ".vtu",
          "VTU (a .vtu file: point data displacement, cell data von_mises and stress)");
  const Mesh& mesh = run.mesh();
  const int dim = mesh.tdim(), gdim = mesh.gdim();
  if (dim < 2 || dim != gdim)
    throw Error(
        fmt::format("elasticity: mesh '{}' has {}D cells in {}D space; 2D (plane strain or stress) or 3D "
                    "cells in their own space are needed",
                    mesh.source(), dim, gdim));
  if (dim == 3 && !o.plane.empty())
    throw Error(fmt::format("--plane {}: mesh '{}' is 3D; plane strain and plane stress are 2D models",
                            o.plane, mesh.source()));
  const bool plane_stress = o.plane == "stress";

  // Every option is checked before the work starts. E > 0 and -1 < ν < 1/2 at every point where
  // an expression is evaluated, not only for constants.
  const Admissible poisson_ratio{-1.0, 0.5, true, true, "Poisson's ratio must lie in (-1, 0.5)"};
  std::vector<assembly::Dirichlet> dirichlet;
  std::vector<assembly::Neumann> tractions;
  std::optional<assembly::VectorFunction> body_force, exact;
  assembly::Elasticity material;
  std::vector<Expression> keep;
  run.local([&] {
    material = {coefficient(run, o.young, keep, "--E", 1.0, Admissible::positive("Young's modulus")),
                coefficient(run, o.poisson, keep, "--nu", 0.3, poisson_ratio),
                plane_stress ? assembly::Elasticity::Plane::stress : assembly::Elasticity::Plane::strain};
    for (const auto& tag : o.fixed) dirichlet.push_back({facets(mesh, "--fixed", tag), nullptr, -1});
    for (const auto& [tag, expr] : tagged_values(mesh, "--dirichlet", o.dirichlet)) {
      const auto where = facets(mesh, "--dirichlet", tag);
      const auto parts = vector_expression(run, "--dirichlet " + tag, expr, dim, true);
      for (int k = 0; k < dim; ++k)
        if (parts[k]) dirichlet.push_back({where, parts[k]->function(), k});
    }
    for (const auto& [tag, expr] : tagged_values(mesh, "--traction", o.traction)) {
      tractions.push_back({facets(mesh, "--traction", tag),
                           vector_function(vector_expression(run, "--traction " + tag, expr, dim))});
    }
    if (!o.body_force.empty())
      body_force = vector_function(vector_expression(run, "--body-force", o.body_force, dim));
    if (!o.exact.empty()) exact = vector_function(vector_expression(run, "--exact", o.exact, dim));
  });
  if (o.formulation == "up")
    return run_up(o, run, material, dirichlet, tractions, body_force, exact, plane_stress);
  run.make_space(dim, /*spd=*/true);
  const assembly::Assembler& a = *run.assembler();

  Stopwatch w;
  std::vector<double> values = prefaulted_vector<double>(a.pattern()->nnz()), b(a.space().num_dofs(), 0.0);
  run.check_tags(tractions, {&material.young, &material.poisson});
  run.local([&] {
    a.matrix_into(material, values);
    if (body_force) a.vector_into(assembly::VectorSource{*body_force}, b);
    assembly::assemble_neumann(a.space(), tractions, b);
  });
  const auto bc = assembly::dirichlet_values(a.space(), dirichlet, run.layout());
  assembly::apply_dirichlet(bc, *a.pattern(), values, b);
  run.t.assemble = w.seconds();
  // The constraints are checked against the rigid motions (not against which options were
  // given): free ones with balanced loads are solved orthogonal to them, else an error naming them.
  run.publish_and_factorize("elasticity/A", std::move(values), bc);
  // A locked displacement is no answer: warned in the text and the JSON (assembly/locking.hpp).
  const assembly::Locking locking = assembly::locking(a.space(), material, run.layout());
  std::vector<double> u(b.size());
  run.solve(b, u);

  // Post-processing (stresses, errors) is timed with the assembly: it runs the same cell loops.
  w = Stopwatch();
  const std::vector<double> stress = run.local([&] { return assembly::cell_stress(a, u, material); });
  const std::vector<double> mises = assembly::von_mises(stress);
  assembly::Errors err;
  if (exact) err = run.errors(u, *exact);
  run.t.assemble += w.seconds();

  // |u| and each component at the DOF nodes.
  const auto num_nodes = static_cast<std::size_t>(a.space().dofmap().num_nodes);
  std::vector<double> magnitude(num_nodes), component(num_nodes);
  std::vector<std::pair<double, double>> ranges;
  for (std::size_t i = 0; i < num_nodes; ++i)  // scaled: finite components give a finite |u|
    magnitude[i] = norm2(std::span<const double>(u).subspan(i * dim, static_cast<std::size_t>(dim)));
  for (int k = 0; k < dim; ++k) {
    for (std::size_t i = 0; i < num_nodes; ++i) component[i] = u[i * dim + k];
    ranges.push_back(run.layout().range(component));
  }
  const auto mises_range = run.layout().range(mises), magnitude_range = run.layout().range(magnitude);

  if (!o.common.output.empty()) {
    const auto nodal = run.local([&] {
      require_finite(u, "elasticity: the displacement");
      require_finite(stress, "elasticity: the stress");
      return assembly::mesh_node_values(a.space(), u, 3);  // 3 components: ParaView's Warp By Vector
    });
    const mesh::Field points[] = {{"displacement", 3, nodal}};
    const mesh::Field cells[] = {{"von_mises", 1, mises}, {"stress", 6, stress}};
    run.write(points, cells);
  }

  nlohmann::json j = run.json();
  if (dim == 2) j["plane"] = plane_stress ? "stress" : "strain";
  j["solution"].update(range_json(magnitude_range));  // of |u| at the DOF nodes
  for (const auto& r : ranges) j["solution"]["components"].push_back(range_json(r));
  j["stress"] = {{"von_mises_min", mises_range.first}, {"von_mises_max", mises_range.second}};
  j["locking"] = {{"lambda_over_mu", locking.lambda_over_mu},
                  {"h_over_L", locking.h_over_L},
                  {"indicator", locking.indicator}};
  j["warnings"] = nlohmann::json::array();
  if (locking.locks) j["warnings"].push_back(locking.warning());
  if (exact) j["error"] = error_json(err);
  if (!o.common.output.empty()) j["output"] = o.common.output;
  run.write_json(j);
  if (!run.prints()) return;
  std::FILE* out = run.out();
  run.print_header(dim == 2 ? (plane_stress ? ", plane stress" : ", plane strain") : "");
  fmt::print(out, "displacement max |u| {:.6g}", magnitude_range.second);
  for (int k = 0; k < dim; ++k)
    fmt::print(out, ", u{} in [{:.6g}, {:.6g}]", "xyz"[k], ranges[k].first, ranges[k].second);
  fmt::print(out, "\nvon Mises   min {:.6g}, max {:.6g}\n", mises_range.first, mises_range.second);
  if (exact) print_errors(out, err);
  if (locking.locks) fmt::print(out, "warning     {}\n", locking.warning());
  if (!o.common.output.empty()) fmt::print(out, "output      {}\n", o.common.output);
  run.print_timings();
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
  cmd->add_option("--nu", o->poisson,
                  "Poisson's ratio per cell tag: TAG=VALUE; default 0.3. Near 0.5 use --order 2: degree 1 "
                  "locks (a warning says when: docs/elasticity.md)")
      ->allow_extra_args(false);
  cmd->add_option(
         "--plane", o->plane,
         "2D model: 'strain' (εzz = 0, the default) or 'stress' (σzz = 0: thin plates, Cook's membrane, "
         "NAFEMS LE1); an error on 3D meshes")
      ->check(CLI::IsMember({"strain", "stress"}));
  cmd->add_option(
         "--formulation", o->formulation,
         "displacement (the default) or up: displacement and pressure on Taylor–Hood (P2–P1, Q2–Q1), "
         "free of volumetric locking as ν → ½")
      ->check(CLI::IsMember({"displacement", "up"}));
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
  cmd->add_option(
      "--output", o->common.output,
      "write FILE.vtu: point data displacement (3 components); cell data von_mises and stress (xx, yy, "
      "zz, xy, yz, xz, cell averages)");
  cmd->callback([o] { run_elasticity(*o); });
}

}  // namespace fem::app
