// fem stokes and fem navier-stokes: incompressible flow on Taylor–Hood elements through
// libfem_flow (docs/flow.md). Steady flow by Picard steps then Newton on the block matrix (every
// Jacobian on one symbolic analysis); unsteady flow (--dt, --steps) by the incremental
// pressure-correction scheme, whose three matrices are factorized once for the whole run. Steady
// flow runs distributed under mpirun (MUMPS on the mixed space's stacked index map).
//   fem stokes gen:square-tri3:32 --velocity all=0,0 --velocity top=1,0
//   fem navier-stokes meshes/cylinder2d_v41.msh --viscosity 1e-3 --velocity inlet='4*1.5*y*(0.41-y)/0.41^2',0
//       --velocity walls=0,0 --velocity cylinder=0,0 --outflow outlet --drag cylinder
//   fem navier-stokes ... --dt 0.001 --steps 8000 --output out/ns.pvd
//   mpirun -n 2 fem stokes gen:square-tri3:32 --velocity all=0,0 --velocity top=1,0
#include "fem/flow/flow.hpp"

#include <fmt/core.h>

#include <cmath>
#include <memory>

#include "commands.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/time/time.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct FlowOptions {
  CommonOptions common;
  bool navier_stokes = false;
  double viscosity = 1, density = 1;
  std::vector<std::string> velocity, outflow, traction, probes;  // probes: --probe x,y[,z]
  std::string body_force, drag, flux, pressure_difference, exact, exact_pressure;
  bool symmetric = false;
  int picard = 3, max_iterations = 30, lag = 1;
  std::string scheme = "ipcs";
  double dt = 0;
  int steps = 0, every = 0;
};

// "X1,Y1:X2,Y2" → two points of gdim coordinates.
std::vector<double> two_points(const std::string& text, int gdim) {
  const auto colon = text.find(':');
  std::vector<double> xs;
  const auto parse = [&](const std::string& part) {
    std::size_t start = 0;
    int count = 0;
    for (;;) {
      const auto comma = part.find(',', start);
      const std::string item =
          part.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      try {
        std::size_t used = 0;
        xs.push_back(std::stod(item, &used));
        if (used != item.size()) throw std::invalid_argument("");
      } catch (const std::exception&) {
        throw Error(
            fmt::format("--pressure-difference '{}': '{}' is not a number (give X1,Y1:X2,Y2)", text, item));
      }
      ++count;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (count != gdim)
      throw Error(
          fmt::format("--pressure-difference '{}': {} coordinate(s) for a mesh in {}D", text, count, gdim));
  };
  if (colon == std::string::npos)
    throw Error(fmt::format("--pressure-difference '{}': give two points X1,Y1:X2,Y2", text));
  parse(text.substr(0, colon));
  parse(text.substr(colon + 1));
  return xs;
}

void run_flow(const FlowOptions& o) {
  const char* name = o.navier_stokes ? "navier-stokes" : "stokes";
  const bool unsteady = o.steps > 0;
  if (unsteady && !o.navier_stokes) throw Error("--dt and --steps are for fem navier-stokes (unsteady flow)");
  if ((o.dt > 0) != unsteady) throw Error("--dt and --steps go together (unsteady flow)");
  const auto pvd = o.common.output.empty() || !unsteady
                       ? std::nullopt
                       : std::optional(std::filesystem::path(o.common.output));
  if (pvd) prepare_output("--output", pvd->string(), ".pvd", "a time series");
  Run run(o.common, name, unsteady ? "" : ".vtu",
          unsteady ? "" : "VTU (a .vtu file: point data velocity and pressure)");
  run.time_stepped = unsteady;  // velocity data and forces in t
  const Mesh& mesh = run.mesh();
  const int dim = mesh.tdim();
  if (o.velocity.empty()) throw Error("--velocity TAG=EXPR,...: give the velocity on the walls and inflow");

  std::vector<assembly::Dirichlet> conditions;
  std::vector<int> outflow_tags;
  std::vector<assembly::Neumann> tractions;
  std::vector<Expression> keep;
  std::optional<assembly::VectorFunction> body_force, exact, exact_pressure;
  std::vector<Expression> timed;  // expressions in t, set per step
  run.local([&] {
    for (const auto& [tag, expr] : tagged_values(mesh, "--velocity", o.velocity)) {
      const auto where = facets(mesh, "--velocity", tag);
      auto parts = vector_expression(run, "--velocity " + tag, expr, dim, true);
      for (int k = 0; k < dim; ++k)
        if (parts[static_cast<std::size_t>(k)]) {
          timed.push_back(*parts[static_cast<std::size_t>(k)]);
          conditions.push_back({where, parts[static_cast<std::size_t>(k)]->function(), k});
        }
    }
    for (const auto& tag : o.outflow) outflow_tags.push_back(facet_tag(mesh, "--outflow", tag));
    for (const auto& [tag, expr] : tagged_values(mesh, "--traction", o.traction)) {
      if (tag == "all")
        throw Error("--traction all: name the outflow's facets (the velocity is given elsewhere)");
      const auto parts = vector_expression(run, "--traction " + tag, expr, dim);
      for (const auto& e : parts)
        if (e && e->uses_time())
          throw Error(fmt::format(
              "--traction {}='{}': a traction is constant in time here (t is not allowed)", tag, expr));
      tractions.push_back({facets(mesh, "--traction", tag), vector_function(parts)});
    }
    if (!o.body_force.empty()) {
      auto parts = vector_expression(run, "--body-force", o.body_force, dim);
      for (auto& p : parts) timed.push_back(*p);
      body_force = vector_function(parts);
    }
    if (!o.exact.empty()) exact = vector_function(vector_expression(run, "--exact", o.exact, dim));
    if (!o.exact_pressure.empty())
      exact_pressure = vector_function(vector_expression(run, "--exact-pressure", o.exact_pressure, 1));
  });
  const auto set_time = [&](double t) {
    for (const auto& e : timed) e.set_time(t);
  };
  set_time(0.0);

  Stopwatch w;
  auto W = std::make_shared<const assembly::MixedSpace>(run.mesh_key(), run.store());
  // The layout of the mixed space's vectors and its solver, as the library picks them: the serial
  // factorization cache (UMFPACK by default: indefinite, unsymmetric with convection), or MUMPS
  // on a distributed mesh (LDLᵀ for Stokes, whose matrix is symmetric; LU otherwise).
  const auto mixed = dist::layout(*W);
  if (unsteady && mixed->distributed())
    throw Error(fmt::format(
        "{}: unsteady flow (--dt, --steps) runs on one process; steady flow runs distributed", name));
  solve::Options linear;
  linear.backend = o.common.solver != "auto" ? solve::backend_from_name(o.common.solver)
                   : mixed->distributed()    ? solve::Backend::automatic
                                             : solve::Backend::umfpack;
  linear.ordering = solve::ordering_from_name(o.common.ordering, "--ordering");
  linear.compatibility_tolerance = o.common.compatibility_tolerance;
  linear.symmetric = !o.navier_stokes;
  linear.rtol = o.common.ksp_rtol;
  linear.prefix = "fem_";
  if (unsteady && solve::distributed(linear.backend))
    throw Error(
        fmt::format("{}: --solver {}: the unsteady schemes factorize on one process (umfpack, klu, "
                    "cholmod, ldlt, lu); --solver {} is for steady flow",
                    name, o.common.solver, o.common.solver));
  assembly::Flow flow = o.navier_stokes ? assembly::Flow::navier_stokes(o.viscosity, o.density)
                                        : assembly::Flow::stokes(o.viscosity);
  flow.density = o.density;
  flow.symmetric_gradient = o.symmetric;
  if (body_force) flow.body_force = *body_force;
  const bool free_pressure = outflow_tags.empty() && tractions.empty();
  // fieldsplit: the Schur complement's preconditioner is the library's (flow::solver_options).
  linear = flow::solver_options(*W, flow, free_pressure, linear, name, run.store());
  auto solver = std::shared_ptr<solve::LinearSolver>(dist::make_solver(*W, linear));
  run.adopt_space(W->velocity(), solver);
  const auto pressure_layout = dist::layout(W->pressure());
  run.t.connectivity = w.seconds();
  w = Stopwatch();
  const auto bc = assembly::dirichlet_values(W->velocity(), conditions, run.layout());
  run.constrained_dofs = run.layout().count_owned(bc.dofs);
  if (!tractions.empty()) {  // ∫ g·v on the velocity: constant in time
    auto load = std::make_shared<std::vector<double>>(static_cast<std::size_t>(W->pressure_offset()), 0.0);
    assembly::assemble_neumann(W->velocity(), tractions, *load);
    flow.load = load;
  }
  std::vector<index_t> drag_nodes;
  if (!o.drag.empty()) {
    const int tag = run.local([&] { return facet_tag(mesh, "--drag", o.drag); });
    assembly::check_facet_tags(mesh, std::vector<int>{tag}, run.layout());
    drag_nodes = flow::boundary_nodes(W->velocity(), {tag}, run.layout());
  }
  std::optional<assembly::FacetSet> flux_facets;
  if (!o.flux.empty()) {
    const int tag = run.local([&] { return facet_tag(mesh, "--flux", o.flux); });
    assembly::check_facet_tags(mesh, std::vector<int>{tag}, run.layout());
    flux_facets = assembly::FacetSet{{tag}};
  }
  // The pressure at two points: each from the lowest process whose part holds it (as --probe).
  std::optional<assembly::PointEvaluator> pressure_points;
  std::array<bool, 2> pressure_here{true, true};
  if (!o.pressure_difference.empty()) {
    const auto xs = run.local([&] { return two_points(o.pressure_difference, mesh.gdim()); });
    const Processes& group = run.layout().processes();
    assembly::PointEvaluator::Options po;
    po.require_all = group.size() == 1;
    run.local([&] { pressure_points.emplace(W->pressure(), xs, po); });
    for (index_t i = 0; i < 2; ++i) {
      const double ranks = group.size(),
                   lowest =
                       -group.max(pressure_points->found(i) ? -static_cast<double>(group.rank()) : -ranks);
      if (lowest >= ranks)
        throw Error(fmt::format("--pressure-difference '{}': point {} lies in no cell of the mesh",
                                o.pressure_difference, i + 1));
      pressure_here[static_cast<std::size_t>(i)] = static_cast<double>(group.rank()) == lowest;
    }
  }
  run.t.assemble = w.seconds();

  Probes probes(run, o.probes, dim);  // velocity, then the pressure
  probes.also(W->pressure());
  std::vector<double> state(static_cast<std::size_t>(W->num_dofs()), 0.0);
  nlohmann::json flow_json;
  const auto functionals = [&](std::span<const double> x, std::span<const double> inertia,
                               nlohmann::json& out, bool list) {
    const auto put = [&](const char* key, double v) {
      if (list)
        out[key].push_back(v);
      else
        out[key] = v;
    };
    const Processes& group = run.layout().processes();
    if (!o.drag.empty()) {
      const auto f = flow::force(*W, flow, x, drag_nodes, inertia, *mixed);
      put("drag", f[0]);
      put("lift", f[1]);
    }
    if (pressure_points) {
      double p[2] = {0, 0};
      for (index_t i = 0; i < 2; ++i)
        if (pressure_here[static_cast<std::size_t>(i)])
          pressure_points->value(W->pressure_part(x), i, std::span<double>(&p[i], 1));
      put("pressure_difference", group.sum(p[0]) - group.sum(p[1]));
    }
    if (flux_facets) {  // each boundary facet is one process's
      const double mine = run.local(
          [&] { return assembly::boundary_flux(W->velocity(), W->velocity_part(x), *flux_facets); });
      put("flux", group.sum(mine));
    }
  };
  const auto record = [&](double t, std::span<const double> x) {
    probes.record(t, W->velocity_part(x), W->pressure_part(x));
  };
  std::optional<flow::SteadyResult> steady;
  std::optional<flow::ProjectionStepper> stepper;
  std::optional<time::FirstOrderStepper> monolithic;  // --scheme bdf2
  std::optional<dist::Series> series;
  const auto nodal = [&](std::span<const double> x) {
    require_finite(x, fmt::format("{}: the velocity and pressure", name));
    return std::pair{assembly::mesh_node_values(W->velocity(), W->velocity_part(x), 3),
                     assembly::mesh_node_values(W->pressure(), W->pressure_part(x))};
  };
  if (!unsteady) {
    flow::SteadyOptions so;
    so.picard_steps = o.picard;
    so.newton.linear = linear;
    so.newton.max_iterations = o.max_iterations;
    if (o.lag > 1) so.newton.lagging = newton::Lagging::fixed(o.lag);
    if (run.prints() && o.navier_stokes) so.newton.monitor = newton::text_monitor(run.out());
    steady = flow::solve_steady(W, flow, bc, free_pressure, state, so, name, run.store(), solver);
    const auto& r = steady->newton;
    run.t.assemble += r.timings.residual + r.timings.jacobian + steady->picard.timings.residual +
                      steady->picard.timings.jacobian;
    run.t.factorize = r.timings.factorization + steady->picard.timings.factorization;
    run.t.solve =
        r.timings.solve + r.timings.other + steady->picard.timings.solve + steady->picard.timings.other;
    functionals(state, {}, flow_json, false);
    record(0.0, state);
  } else {
    const auto velocity_values = [&](double t, std::span<double> g) {
      set_time(t);
      const auto values = assembly::dirichlet_values(W->velocity(), conditions);
      std::copy(values.values.begin(), values.values.end(), g.begin());
    };
    assembly::set_dirichlet(bc, state);
    if (pvd) series.emplace(*pvd);
    const int every = o.every > 0 ? o.every : std::max(1, o.steps / 10);
    const auto frame = [&](double t, std::span<const double> x) {
      if (!series) return;
      Stopwatch ww;
      const auto [u, pr] = nodal(x);
      const mesh::Field fields[] = {{"velocity", 3, u}, {"pressure", 1, pr}};
      series->write(t, run.store(), run.mesh_key(), fields);
      run.t.write += ww.seconds();
    };
    Stopwatch ws;
    const auto before = run.store().counter("solve.factorizations");
    if (o.scheme == "ipcs") {
      flow::Projection p;
      p.name = name;
      p.W = W;
      p.viscosity = o.viscosity;
      p.density = o.density;
      p.convection = true;
      p.load = flow.load;
      if (body_force)
        p.body_force = [&](double t, const double* x, double* f) {
          set_time(t);
          (*body_force)(x, f);
        };
      p.velocity.dofs = bc.dofs;
      p.velocity.values = velocity_values;
      if (!outflow_tags.empty())
        p.pressure_dofs =
            assembly::condition_values(W->pressure(), {assembly::FacetSet{outflow_tags}, nullptr}).dofs;
      p.linear = linear;
      p.linear.backend = o.common.solver == "auto" ? solve::Backend::automatic : linear.backend;
      const auto shown = run.progress().phase("factorizing");
      stepper.emplace(run.store(), std::move(p), o.dt, state);
      run.t.factorize = ws.seconds();
    } else {
      // BDF2 + Newton on the whole block system, its Jacobian lagged across steps.
      auto p = flow::monolithic(W, flow, free_pressure, name, run.store(), set_time);
      p.dirichlet.dofs = bc.dofs;
      p.dirichlet.values = velocity_values;
      p.solver = solver;
      time::FirstOrderOptions to;
      to.scheme = time::Scheme::bdf2;
      to.dt = o.dt;
      to.newton.lagging = newton::Lagging::adaptive();
      to.newton.max_iterations = o.max_iterations;
      to.newton.linear = linear;
      monolithic.emplace(run.store(), std::move(p), to, state);
    }
    const auto current = [&]() { return stepper ? stepper->w() : monolithic->u(); };
    frame(0.0, current());
    record(0.0, current());
    ws = Stopwatch();
    std::vector<double> previous(state.size()), inertia(static_cast<std::size_t>(W->pressure_offset()));
    const auto M = monolithic ? run.store().get<CsrMatrix>(std::string(name) + "/M") : nullptr;
    for (int s = 1; s <= o.steps; ++s) {
      if (stepper) {
        stepper->step();
      } else {
        std::copy(monolithic->u().begin(), monolithic->u().end(), previous.begin());
        monolithic->step();
        if (!o.drag.empty()) {  // ρM(w₁ − w₀)/dt on the velocity: the force's inertia
          std::vector<double> dw(state.size()), Mdw(state.size());
          for (std::size_t i = 0; i < dw.size(); ++i) dw[i] = (monolithic->u()[i] - previous[i]) / o.dt;
          M->multiply(dw, Mdw);
          std::copy_n(Mdw.begin(), inertia.size(), inertia.begin());
        }
      }
      const double t = stepper ? stepper->t() : monolithic->t();
      flow_json["times"].push_back(t);
      functionals(current(), stepper ? stepper->inertia() : std::span<const double>(inertia), flow_json,
                  true);
      record(t, current());
      if (s % every == 0 || s == o.steps) frame(t, current());
      run.progress().step(s, o.steps, t);
    }
    if (stepper) {
      run.t.solve = ws.seconds() - run.t.write;
      flow_json["factorizations_in_steps"] =
          run.store().counter("solve.factorizations") - before - stepper->matrices();
    } else {
      const auto& r = monolithic->report();
      run.t.factorize = r.factorize_seconds;
      run.t.solve = r.solve_seconds;
      run.t.assemble += ws.seconds() - run.t.write - r.factorize_seconds - r.solve_seconds;
    }
    std::copy(current().begin(), current().end(), state.begin());
    if (series) series->commit();
  }

  // Errors against an exact flow: the pressure's free constant removed when it is free (the
  // integrals and norms summed over the processes' cells).
  assembly::Errors velocity_error, pressure_error;
  if (exact)
    velocity_error = assembly::solution_errors(assembly::Assembler(W->velocity()), W->velocity_part(state),
                                               *exact, nullptr, run.layout());
  if (exact_pressure) {
    const assembly::Assembler P(W->pressure());
    std::vector<double> p(W->pressure_part(state).begin(), W->pressure_part(state).end());
    if (free_pressure) {
      const auto [difference, area] = run.local([&] {
        const auto ip = assembly::interpolate(W->pressure(), *exact_pressure);
        std::vector<double> d(p.size()), one(p.size(), 1.0);
        for (std::size_t i = 0; i < p.size(); ++i) d[i] = p[i] - ip[i];
        return std::pair{assembly::integrate(P, d), assembly::integrate(P, one)};
      });
      const Processes& group = run.layout().processes();
      const double shift = group.sum(difference) / group.sum(area);
      for (double& v : p) v -= shift;
    }
    pressure_error = assembly::solution_errors(P, p, *exact_pressure, nullptr, *pressure_layout);
  }
  if (!o.common.output.empty() && !unsteady) {
    const auto [u, pr] = run.local([&] { return nodal(state); });
    const mesh::Field points[] = {{"velocity", 3, u}, {"pressure", 1, pr}};
    run.write(points);
  }
  const auto pressure_range = run.layout().range(W->pressure_part(state));
  double speed = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(W->pressure_offset());
       i += static_cast<std::size_t>(dim)) {
    double s2 = 0;
    for (int k = 0; k < dim; ++k)
      s2 += state[i + static_cast<std::size_t>(k)] * state[i + static_cast<std::size_t>(k)];
    speed = std::max(speed, std::sqrt(s2));
  }
  speed = run.layout().processes().max(speed);
  const auto global = [](const Layout& l, index_t n) { return l.global_size(static_cast<std::size_t>(n)); };

  nlohmann::json j = run.json();
  j["order"] = 2;
  j["dofs"] = global(*mixed, W->num_dofs());
  j["space"] = {{"velocity", W->velocity().name()},
                {"pressure", W->pressure().name()},
                {"velocity_dofs", global(run.layout(), W->pressure_offset())},
                {"pressure_dofs", global(*pressure_layout, W->num_pressure_dofs())}};
  j["solution"] = {{"max_speed", speed},
                   {"pressure_min", pressure_range.first},
                   {"pressure_max", pressure_range.second},
                   {"normalization", free_pressure ? "zero_mean_pressure" : "outflow"}};
  j["viscosity"] = o.viscosity;
  j["density"] = o.density;
  if (steady) {
    const auto& r = steady->newton;
    j["newton"] = {{"iterations", r.iterations},
                   {"converged", r.converged},
                   {"reason", std::string(newton::to_string(r.reason))},
                   {"jacobian_refreshes", r.jacobian_refreshes},
                   {"picard_iterations", steady->picard.iterations},
                   {"initial_residual_norm", r.initial_residual_norm},
                   {"residual_norm", r.residual_norm}};
  } else if (stepper) {
    j["time"] = {{"scheme", "ipcs"},
                 {"dt", o.dt},
                 {"steps", stepper->steps()},
                 {"final", stepper->t()},
                 {"matrices", stepper->matrices()}};
  } else {
    const auto& r = monolithic->report();
    j["time"] = {{"scheme", "bdf2"},
                 {"dt", o.dt},
                 {"steps", r.accepted},
                 {"final", monolithic->t()},
                 {"newton_iterations", r.newton_iterations},
                 {"jacobian_refreshes", r.jacobians},
                 {"failed_steps", r.newton_failures}};
  }
  if (!flow_json.empty()) j["flow"] = flow_json;
  if (!probes.empty()) j["probes"] = probes.json();
  if (exact) j["error"] = error_json(velocity_error);
  if (exact_pressure) j["pressure_error"] = {{"l2", pressure_error.l2}};
  if (!o.common.output.empty()) j["output"] = o.common.output;
  if (series) j["frames"] = series->frames();
  run.write_json(j);
  if (steady && !steady->converged()) {
    if (run.prints())
      fmt::print(run.out(), "{}: Newton did not converge ({})\n", name,
                 newton::to_string(steady->newton.reason));
    throw ExitCode{exit_code::numerical};
  }
  if (!run.prints()) return;
  std::FILE* out = run.out();
  run.print_header(fmt::format(" + {} with {} dofs: {} in all", W->pressure().name(),
                               global(*pressure_layout, W->num_pressure_dofs()),
                               global(*mixed, W->num_dofs())));
  if (free_pressure)
    fmt::print(out, "pressure    free up to a constant (no --outflow): normalized to zero mean\n");
  if (steady)
    fmt::print(out, "newton      {} Picard + {} Newton iterations, {} Jacobians on {} symbolic analysis\n",
               steady->picard.iterations, steady->newton.iterations,
               steady->picard.jacobian_refreshes + steady->newton.jacobian_refreshes,
               steady->picard.symbolic_analyses + steady->newton.symbolic_analyses);
  else if (stepper)
    fmt::print(out,
               "time        ipcs: {} steps of {} to t = {}; {} matrices factorized once, {} in the steps\n",
               stepper->steps(), o.dt, stepper->t(), stepper->matrices(),
               flow_json["factorizations_in_steps"].get<std::int64_t>());
  else
    fmt::print(
        out,
        "time        bdf2 + Newton: {} steps of {} to t = {}; {} Newton iterations on {} Jacobians (one "
        "symbolic analysis), {} steps retried\n",
        monolithic->report().accepted, o.dt, monolithic->t(), monolithic->report().newton_iterations,
        monolithic->report().jacobians, monolithic->report().newton_failures);
  fmt::print(out, "solution    max |u| {:.6g}, p in [{:.6g}, {:.6g}]\n", speed, pressure_range.first,
             pressure_range.second);
  if (!o.drag.empty()) {
    const auto last = [&](const char* key) {
      return flow_json[key].is_array() ? flow_json[key].back().get<double>() : flow_json[key].get<double>();
    };
    fmt::print(out, "force       on {}: drag {:.8g}, lift {:.8g}\n", o.drag, last("drag"), last("lift"));
  }
  if (flux_facets) {
    const auto& v = flow_json["flux"];
    fmt::print(out, "flux        through {}: {:.8g}\n", o.flux,
               v.is_array() ? v.back().get<double>() : v.get<double>());
  }
  if (pressure_points) {
    const auto& v = flow_json["pressure_difference"];
    fmt::print(out, "pressure    difference {:.8g}\n",
               v.is_array() ? v.back().get<double>() : v.get<double>());
  }
  if (exact)
    fmt::print(out, "error       velocity L2 {:.6e}, H1 {:.6e}\n", velocity_error.l2, velocity_error.h1);
  if (exact_pressure) fmt::print(out, "error       pressure L2 {:.6e}\n", pressure_error.l2);
  if (!o.common.output.empty()) fmt::print(out, "output      {}\n", o.common.output);
  run.print_timings();
}

void add_flow_command(CLI::App& app, bool navier_stokes) {
  auto* cmd = app.add_subcommand(
      navier_stokes ? "navier-stokes" : "stokes",
      navier_stokes
          ? "incompressible Navier–Stokes on Taylor–Hood elements: steady (Picard + Newton) or unsteady "
            "(--dt, --steps: incremental pressure correction)"
          : "Stokes flow on Taylor–Hood elements (P2–P1, Q2–Q1): velocity and pressure");
  auto o = std::make_shared<FlowOptions>();
  o->navier_stokes = navier_stokes;
  add_common_options(*cmd, o->common, /*with_order=*/false);
  add_compatibility_option(*cmd, o->common);
  cmd->add_option("--viscosity", o->viscosity, "dynamic viscosity μ (the kinematic ν when --density is 1)")
      ->check(positive_number());
  cmd->add_option("--density", o->density, "density ρ (default 1)")->check(positive_number());
  cmd->add_option("--velocity", o->velocity,
                  "u = EXPR,EXPR[,EXPR] on facets: TAG=... ('all': the whole boundary; 'free': a component "
                  "not prescribed; expressions in x, y, z and, unsteady, t)")
      ->allow_extra_args(false);
  cmd->add_option("--outflow", o->outflow,
                  "do-nothing outflow on facets TAG (μ∂u/∂n − p n = 0; unsteady: p = 0 there). None: the "
                  "velocity is given on the whole boundary and p is found with zero mean")
      ->allow_extra_args(false);
  cmd->add_option(
         "--traction", o->traction,
         "σ·n = g on outflow facets: TAG=EXPR,EXPR[,EXPR] (σ the form's stress: μ∇u − pI, or 2με(u) − pI "
         "with --symmetric-gradient); constant in time")
      ->allow_extra_args(false);
  cmd->add_option("--body-force", o->body_force, "f as EXPR,EXPR[,EXPR]");
  cmd->add_flag("--symmetric-gradient", o->symmetric,
                "viscous term 2μ ε(u):ε(v) instead of μ ∇u:∇v (outflow: zero physical traction)");
  cmd->add_option("--drag", o->drag,
                  "the force on facets TAG: flow.drag (x) and flow.lift (y), per unit depth in 2D");
  cmd->add_option("--flux", o->flux, "∮ u·n over facets TAG (n outward): flow.flux");
  cmd->add_option("--pressure-difference", o->pressure_difference,
                  "X1,Y1:X2,Y2: flow.pressure_difference p(1) − p(2)");
  cmd->add_option(
         "--probe", o->probes,
         "record the velocity and the pressure at x,y[,z] (interpolated in its cell; unsteady: every step): "
         "JSON probes, values [u, v(, w), p]")
      ->allow_extra_args(false);
  cmd->add_option("--exact", o->exact, "exact velocity EXPR,EXPR[,EXPR]: its L2 and H1 errors");
  cmd->add_option("--exact-pressure", o->exact_pressure,
                  "exact pressure EXPR: its L2 error (up to a constant when free)");
  cmd->add_option("--output", o->common.output,
                  "steady: FILE.vtu with point data velocity and pressure; unsteady: FILE.pvd");
  if (navier_stokes) {
    cmd->add_option("--picard", o->picard, "Picard iterations before Newton (default 3)")->check(at_least(0));
    cmd->add_option("--max-iterations", o->max_iterations, "Newton's iteration limit (default 30)")
        ->check(at_least(1));
    cmd->add_option("--lag", o->lag,
                    "steady: reuse each Newton Jacobian for K iterations (default 1: full Newton)")
        ->check(at_least(1));
    cmd->add_option("--dt", o->dt, "unsteady: the time step")->check(positive_number());
    cmd->add_option("--steps", o->steps, "unsteady: the number of steps")->check(at_least(1));
    cmd->add_option(
           "--scheme", o->scheme,
           "unsteady: ipcs (incremental pressure correction, explicit convection: its three matrices "
           "factorized once; the default) or bdf2 (monolithic BDF2 + Newton, lagged Jacobians: no CFL "
           "limit)")
        ->check(CLI::IsMember({"ipcs", "bdf2"}));
    cmd->add_option("--every", o->every, "unsteady: a frame every K steps (default: about 10 frames)")
        ->check(at_least(0));
  }
  cmd->callback([o] { run_flow(*o); });
}

}  // namespace

void add_stokes(CLI::App& app) { add_flow_command(app, false); }
void add_navier_stokes(CLI::App& app) { add_flow_command(app, true); }

}  // namespace fem::app
