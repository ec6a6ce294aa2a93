// fem dynamics: elastodynamics M ü + C u̇ + K u = f(t) (C = αM + βK) by Newmark or
// generalized-α through fem::time: K and M assembled once, the step's matrix factorized once,
// one cached solve per step; loads in t; the kinetic and strain energy per step; probes.
//   fem dynamics gen:square-quad4:16 --fixed left --initial-displacement 0,0.01*x^2 --dt 0.01 --steps 500
//   fem dynamics meshes/plate_hole_v41.msh --fixed left --traction right=0,'sin(10*t)' --scheme galpha
//       --rho-inf 0.8 --dt 0.005 --steps 200 --probe 1,0.5 --output out/dyn.pvd
#include <fmt/core.h>

#include <cmath>
#include <memory>

#include "commands.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/time/time.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct DynamicsOptions {
  CommonOptions common;
  std::vector<std::string> young, poisson, density, fixed, traction, probes;
  std::string body_force, initial_displacement, initial_velocity, rayleigh, plane;
  std::string scheme = "newmark";
  double rho_inf = 1.0, dt = 0, adaptive = 0, dt_min = 0, dt_max = 0;
  int steps = 0, every = 0;
};

void run_dynamics(const DynamicsOptions& o) {
  const auto pvd =
      o.common.output.empty() ? std::nullopt : std::optional(std::filesystem::path(o.common.output));
  if (pvd) prepare_output("--output", pvd->string(), ".pvd", "a time series");
  Run run(o.common, "dynamics");
  run.time_stepped = true;  // loads in t
  const Mesh& mesh = run.mesh();
  const int dim = mesh.tdim();
  if (dim < 2 || dim != mesh.gdim())
    throw Error(
        fmt::format("dynamics: mesh '{}' has {}D cells in {}D space; 2D or 3D cells in their own space",
                    mesh.source(), dim, mesh.gdim()));
  if (dim == 3 && !o.plane.empty())
    throw Error(fmt::format("--plane {}: mesh '{}' is 3D", o.plane, mesh.source()));
  double alpha = 0, beta = 0;
  if (!o.rayleigh.empty()) {
    const auto comma = o.rayleigh.find(',');
    try {
      if (comma == std::string::npos) throw std::invalid_argument("");
      alpha = std::stod(o.rayleigh.substr(0, comma));
      beta = std::stod(o.rayleigh.substr(comma + 1));
    } catch (const std::exception&) {
      throw Error(fmt::format("--rayleigh '{}': give A,B (C = A M + B K)", o.rayleigh));
    }
    if (!(alpha >= 0 && beta >= 0))
      throw Error(fmt::format("--rayleigh '{}': A and B must be at least 0", o.rayleigh));
  }
  const Admissible poisson_ratio{-1.0, 0.5, true, true, "Poisson's ratio must lie in (-1, 0.5)"};
  assembly::Elasticity material;
  assembly::Coefficient density;
  std::vector<Expression> keep;
  std::vector<assembly::Dirichlet> fixed;
  std::vector<assembly::Neumann> tractions;
  std::vector<std::optional<Expression>> body, u0e, v0e;
  std::vector<Expression> timed;  // the load's expressions, set to each step's time
  run.local([&] {
    material = {
        coefficient(run, o.young, keep, "--E", 1.0, Admissible::positive("Young's modulus")),
        coefficient(run, o.poisson, keep, "--nu", 0.3, poisson_ratio),
        o.plane == "stress" ? assembly::Elasticity::Plane::stress : assembly::Elasticity::Plane::strain};
    density = coefficient(run, o.density, keep, "--density", 1.0, Admissible::positive("density"));
    for (const auto& tag : o.fixed) fixed.push_back({facets(mesh, "--fixed", tag), nullptr, -1});
    for (const auto& [tag, expr] : tagged_values(mesh, "--traction", o.traction)) {
      const auto parts = vector_expression(run, "--traction " + tag, expr, dim);
      for (const auto& e : parts)
        if (e) timed.push_back(*e);
      tractions.push_back({facets(mesh, "--traction", tag), vector_function(parts)});
    }
    if (!o.body_force.empty()) {
      body = vector_expression(run, "--body-force", o.body_force, dim);
      for (const auto& e : body)
        if (e) timed.push_back(*e);
    }
    if (!o.initial_displacement.empty())
      u0e = vector_expression(run, "--initial-displacement", o.initial_displacement, dim);
    if (!o.initial_velocity.empty())
      v0e = vector_expression(run, "--initial-velocity", o.initial_velocity, dim);
  });
  run.make_space(dim, /*spd=*/true);
  const assembly::Assembler& a = *run.assembler();
  const assembly::FunctionSpace& V = a.space();
  run.check_tags(tractions, {&material.young, &material.poisson, &density});
  Stopwatch w;
  const auto nnz = a.pattern()->nnz();
  std::vector<double> k_values = prefaulted_vector<double>(nnz), m_values = prefaulted_vector<double>(nnz);
  const auto n = static_cast<std::size_t>(V.num_dofs());
  std::vector<double> u0(n, 0.0), v0(n, 0.0);
  run.local([&] {
    a.matrix_into(material, k_values);
    a.matrix_into(assembly::Mass{density}, m_values);
    if (!u0e.empty()) u0 = assembly::interpolate(V, vector_function(u0e));
    if (!v0e.empty()) v0 = assembly::interpolate(V, vector_function(v0e));
  });
  Store& store = run.store();
  store.put("dynamics/K", CsrMatrix(a.pattern(), std::move(k_values)));
  store.put("dynamics/M", CsrMatrix(a.pattern(), std::move(m_values)));
  const auto bc = assembly::dirichlet_values(V, fixed, run.layout());
  run.constrained_dofs = run.layout().count_owned(bc.dofs);
  time::SecondOrder p;
  p.name = "dynamics";
  p.M = "dynamics/M";
  p.K = "dynamics/K";
  p.rayleigh_mass = alpha;
  p.rayleigh_stiffness = beta;
  p.fixed = bc.dofs;
  p.solver = run.solver();
  if (!tractions.empty() || !body.empty())
    p.load = [&](double t, std::span<double> f) {
      for (const auto& e : timed) e.set_time(t);
      run.local([&] {
        if (!body.empty()) a.vector_into(assembly::VectorSource{vector_function(body)}, f);
        assembly::assemble_neumann(V, tractions, f);
      });
    };
  time::SecondOrderOptions to;
  to.scheme = o.scheme == "galpha" ? time::Scheme::generalized_alpha : time::Scheme::newmark;
  to.rho_inf = o.rho_inf;
  to.dt = o.dt;
  to.tolerance = o.adaptive;
  to.dt_min = o.dt_min;
  if (o.dt_max > 0) to.dt_max = o.dt_max;
  run.t.assemble = w.seconds();

  Probes probes(run, o.probes, dim);
  std::optional<dist::Series> series;
  if (pvd) series.emplace(*pvd);
  const int every = o.every > 0 ? o.every : std::max(1, o.steps / 10);
  const auto write_frame = [&](double t, std::span<const double> u) {
    if (!series) return;
    Stopwatch ww;
    std::vector<double> nodal;
    run.local([&] {
      require_finite(u, fmt::format("dynamics: the displacement at t = {}", t));
      nodal = assembly::mesh_node_values(V, u, 3);
    });
    const mesh::Field fields[] = {{"displacement", 3, nodal}};
    series->write(t, store, run.mesh_key(), fields);
    run.t.write += ww.seconds();
  };
  std::vector<double> times, kinetic, strain;
  std::optional<time::SecondOrderStepper> stepper;
  try {
    {
      const auto shown = run.progress().phase("factorizing");
      stepper.emplace(store, p, to, u0, v0);
    }
    const auto record = [&] {
      times.push_back(stepper->t());
      kinetic.push_back(stepper->kinetic_energy());
      strain.push_back(stepper->strain_energy());
      probes.record(stepper->t(), stepper->u());
    };
    record();
    write_frame(0.0, stepper->u());
    // Fixed steps: `steps` of dt. Adaptive: to steps·dt, each step's error within the tolerance.
    const double t_end = o.steps * o.dt;
    int step = 0;
    while (stepper->t() < t_end - 1e-12 * std::max(1.0, t_end)) {
      stepper->step(t_end - stepper->t());
      ++step;
      record();
      const bool last = stepper->t() >= t_end - 1e-12 * std::max(1.0, t_end);
      if (step % every == 0 || last) write_frame(stepper->t(), stepper->u());
      run.progress().step(std::min(step, o.steps), o.steps, stepper->t());
    }
  } catch (const NumericalError& e) {
    run.explain_time_step_failure(run.solver()->key(), e.what());
    throw;
  }
  if (series) series->commit();
  const auto& r = stepper->report();
  run.t.solve = 0;  // the stepper's solves and factorizations: timed together below
  nlohmann::json j = run.json();
  j.erase("solution");
  j["time"] = {
      {"scheme", r.scheme},     {"dt", o.dt},         {"steps", r.accepted}, {"accepted", r.accepted},
      {"rejected", r.rejected}, {"dt_min", r.dt_min}, {"dt_max", r.dt_max},  {"final", stepper->t()}};
  if (to.scheme == time::Scheme::generalized_alpha) j["time"]["rho_inf"] = o.rho_inf;
  j["energy"] = {{"times", times}, {"kinetic", kinetic}, {"strain", strain}};
  if (!probes.empty()) j["probes"] = probes.json();
  if (series) j["output"] = series->path().string(), j["frames"] = series->frames();
  run.write_json(j);
  if (!run.prints()) return;
  std::FILE* out = run.out();
  run.print_header(dim == 2 ? (o.plane == "stress" ? ", plane stress" : ", plane strain") : "");
  const std::string scheme =
      r.scheme + (to.scheme == time::Scheme::generalized_alpha ? fmt::format(" (ρ∞ = {})", o.rho_inf) : "");
  if (o.adaptive > 0)
    fmt::print(
        out,
        "time        {} to t = {}: {} steps accepted, {} rejected, dt in [{:.4g}, {:.4g}] (tolerance {}; {} "
        "step sizes)\n",
        scheme, stepper->t(), r.accepted, r.rejected, r.dt_min, r.dt_max, o.adaptive, r.distinct_dts.size());
  else
    fmt::print(out, "time        {}: {} steps of {} to t = {}\n", scheme, r.accepted, o.dt, stepper->t());
  fmt::print(
      out, "energy      at t = 0: kinetic {:.6g}, strain {:.6g}; at t = {}: kinetic {:.6g}, strain {:.6g}\n",
      kinetic.front(), strain.front(), stepper->t(), kinetic.back(), strain.back());
  fmt::print(out, "solves      {} (the initial acceleration's and one per step, on {} factorizations)\n",
             r.solves, store.counter("solve.factorizations"));
  if (series) fmt::print(out, "output      {} ({} frames)\n", series->path().string(), series->frames());
  run.print_timings();
}

}  // namespace

void add_dynamics(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "dynamics", "elastodynamics M ü + C u̇ + K u = f(t): Newmark or generalized-α, energy per step, probes");
  auto o = std::make_shared<DynamicsOptions>();
  add_common_options(*cmd, o->common);
  cmd->add_option("--dt", o->dt, "time step")->required()->check(positive_number());
  cmd->add_option("--steps", o->steps, "number of time steps")->required()->check(at_least(1));
  cmd->add_option("--scheme", o->scheme,
                  "newmark (average acceleration, the default) or galpha (generalized-α)")
      ->check(CLI::IsMember({"newmark", "galpha"}));
  cmd->add_option("--rho-inf", o->rho_inf,
                  "galpha: the high-frequency spectral radius ρ∞ in [0, 1] (default 1)")
      ->check(between(0.0, 1.0));
  cmd->add_option(
         "--adaptive", o->adaptive,
         "adaptive steps: each step's local error (β − 1/6) h² |a_{n+1} − a_n| at most TOL·max|u| (and "
         "TOL·max|u0|); dt on the ladder dt·2^k; the run ends at steps·dt (0, the default: fixed steps)")
      ->check(non_negative_number());
  cmd->add_option("--dt-min", o->dt_min, "--adaptive: the smallest step (0, the default: dt/1024)")
      ->check(non_negative_number());
  cmd->add_option("--dt-max", o->dt_max, "--adaptive: the largest step (0, the default: none)")
      ->check(non_negative_number());
  cmd->add_option("--E", o->young, "Young's modulus per cell tag: TAG=VALUE (default 1)")
      ->allow_extra_args(false);
  cmd->add_option("--nu", o->poisson, "Poisson's ratio per cell tag: TAG=VALUE (default 0.3)")
      ->allow_extra_args(false);
  cmd->add_option("--density", o->density, "density per cell tag: TAG=VALUE (default 1)")
      ->allow_extra_args(false);
  cmd->add_option("--plane", o->plane, "2D model: strain (default) or stress")
      ->check(CLI::IsMember({"strain", "stress"}));
  cmd->add_option("--rayleigh", o->rayleigh, "damping C = A M + B K: A,B (default none)");
  cmd->add_option("--fixed", o->fixed, "clamp every component on facets: TAG")->allow_extra_args(false);
  cmd->add_option("--traction", o->traction, "σ·n = g(t) on facets: TAG=EXPR,EXPR[,EXPR] in x, y, z, t")
      ->allow_extra_args(false);
  cmd->add_option("--body-force", o->body_force, "f as EXPR,EXPR[,EXPR] in x, y, z, t (default 0)");
  cmd->add_option("--initial-displacement", o->initial_displacement,
                  "u at t = 0: EXPR,EXPR[,EXPR] (default 0)");
  cmd->add_option("--initial-velocity", o->initial_velocity, "u̇ at t = 0: EXPR,EXPR[,EXPR] (default 0)");
  cmd->add_option("--probe", o->probes,
                  "record the displacement at x,y[,z] (interpolated in its cell) every step")
      ->allow_extra_args(false);
  cmd->add_option("--output", o->common.output, "write FILE.pvd: displacement frames (3 components)");
  cmd->add_option("--every", o->every, "write a frame every K steps (0, the default: about 10 frames)")
      ->check(at_least(0));
  cmd->callback([o] { run_dynamics(*o); });
}

}  // namespace fem::app
