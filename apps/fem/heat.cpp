// fem heat: ρc u_t − div(k ∇u) = f through fem::time (docs/time.md): backward Euler (the
// default), Crank–Nicolson, BDF2 or the θ-method, fixed or adaptive steps. The scheme's matrix
// M + c K is a store entry per step size (heat/A/<1>/<c>), factorized once; every step is one
// cached solve with it.
//   fem heat gen:square-tri3:32 --dt 0.01 --steps 100 --initial 'sin(pi*x)*sin(pi*y)' --dirichlet all=0
//   fem heat meshes/plate_hole_v41.msh --dt 0.01 --steps 50 --dirichlet hole=1 --output out/heat.pvd --scheme
//   cn
// Every datum may depend on t and is evaluated at the times the scheme asks for; a coefficient in
// t makes a new matrix every step (refactorized on the same symbolic analysis: the counters say so).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "commands.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/time/time.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct HeatOptions {
  CommonOptions common;
  std::vector<std::string> coefficients, capacity, dirichlet, neumann, probes;
  std::string source, initial = "0", exact, law;
  double dt = 0;
  int steps = 0, every = 0;
  std::string scheme = "be";
  double theta = 1.0;
  int rannacher = 0;
  double adaptive = 0, dt_min = 0, dt_max = 0;
};

time::Scheme scheme_of(const HeatOptions& o) {
  if (o.scheme == "cn") return time::Scheme::crank_nicolson;
  if (o.scheme == "bdf2") return time::Scheme::bdf2;
  if (o.scheme == "theta") return time::Scheme::theta;
  return time::Scheme::backward_euler;
}

// The .pvd of --output: FILE.pvd, or FOLDER/heat.pvd; folders created, writability checked.
std::filesystem::path pvd_path(const std::string& output) {
  std::filesystem::path p(output);
  const std::string ext = lowercase_extension(p);
  std::error_code ec;
  if (ext != ".pvd") {
    if (!ext.empty() && !std::filesystem::is_directory(p, ec))
      throw Error(
          fmt::format("--output '{}': heat writes a time series: give FILE.pvd, or a folder (FOLDER/heat.pvd "
                      "with its frames)",
                      output));
    p /= "heat.pvd";
  }
  prepare_output("--output", p.string(), ".pvd", "a time series");
  return p;
}

// Every scheme through fem::time when k does not depend on t: ρc M and K assembled once, the
// scheme's matrix M + c K a store entry per step size (factorized once each), the data
// evaluated at the times the scheme asks for.
void heat_by_schemes(const HeatOptions& o, Run& run, const assembly::Coefficient& k,
                     const assembly::Coefficient& capacity, const std::optional<Expression>& source,
                     const std::optional<Expression>& initial, const std::optional<Expression>& exact,
                     const std::vector<assembly::Dirichlet>& dirichlet,
                     const std::vector<assembly::Neumann>& neumann, const std::vector<Expression>& keep_k,
                     const std::vector<Expression>& keep_dirichlet,
                     const std::vector<Expression>& keep_neumann,
                     const std::optional<std::filesystem::path>& pvd, int every,
                     const std::optional<Law>& law) {
  const assembly::Assembler& a = *run.assembler();
  const assembly::FunctionSpace& V = a.space();
  Stopwatch w;
  run.check_tags(neumann, {&k, &capacity});
  const auto nnz = a.pattern()->nnz();
  std::vector<double> mass = prefaulted_vector<double>(nnz), stiffness = prefaulted_vector<double>(nnz), u;
  const auto set_time = [](const std::vector<Expression>& e, double t) {
    for (const auto& x : e) x.set_time(t);
  };
  set_time(keep_k, 0.0);
  run.local([&] {
    a.matrix_into(assembly::Mass{capacity}, mass);
    if (!law)
      a.matrix_into(assembly::Diffusion{k}, stiffness);  // a k(u) is all in N(u)
    else
      std::fill(stiffness.begin(), stiffness.end(), 0.0);
    u = assembly::interpolate(V, initial->function());
  });
  Store& store = run.store();
  store.put("heat/M", CsrMatrix(a.pattern(), std::move(mass)));
  store.put("heat/K", CsrMatrix(a.pattern(), std::move(stiffness)));
  time::FirstOrder p;
  p.name = "heat";
  p.M = "heat/M";
  p.K = "heat/K";
  p.solver = run.solver();
  // A k in t: K(t) assembled where the scheme needs it, a new matrix every step (refactorized on
  // the same symbolic analysis).
  const auto uses_t = [](const std::vector<Expression>& e) {
    return std::any_of(e.begin(), e.end(), [](const Expression& x) { return x.uses_time(); });
  };
  const bool k_uses_t = uses_t(keep_k);
  if (k_uses_t)
    p.stiffness = [&](double t, std::span<double> values) {
      set_time(keep_k, t);
      run.local([&] { a.matrix_into(assembly::Diffusion{k}, values); });
    };
  // A k(u): N(u) = −div(k(u)∇u), each step by Newton with a lagged Jacobian (one factorization
  // for as long as the lagged iterations converge fast).
  std::shared_ptr<const assembly::NonlinearForm> form;
  if (law) {
    form = std::make_shared<const assembly::NonlinearForm>(assembly::quasilinear(
        [&](double u) { return (*law)(u); }, [&](double u) { return law->derivative(u); }, nullptr));
    p.nonlinear.residual = [&](double, std::span<const double> x, std::span<double> N) {
      run.local([&] { a.residual_into(*form, x, N); });
    };
    p.nonlinear.jacobian = [&](double, std::span<const double> x, std::span<double> values) {
      run.local([&] { a.jacobian_into(*form, x, values); });
    };
  }
  // The data: assembled at each time the scheme asks for when they depend on t, once otherwise.
  const auto assemble_load = [&](double t, std::span<double> f) {
    if (source) source->set_time(t);
    set_time(keep_neumann, t);
    run.local([&] {
      if (source) a.vector_into(assembly::Source{source->function(), source->batch_function()}, f);
      assembly::assemble_neumann(V, neumann, f);
    });
  };
  std::vector<double> constant_load;
  if ((source && source->uses_time()) || uses_t(keep_neumann)) {
    p.load = assemble_load;
  } else if (source || !neumann.empty()) {
    constant_load.assign(u.size(), 0.0);
    assemble_load(0.0, constant_load);
    p.load = [&](double, std::span<double> f) {
      for (std::size_t i = 0; i < f.size(); ++i) f[i] += constant_load[i];
    };
  }
  set_time(keep_dirichlet, 0.0);
  const auto bc0 = assembly::dirichlet_values(V, dirichlet, run.layout());
  run.constrained_dofs = run.layout().count_owned(bc0.dofs);
  p.dirichlet.dofs = bc0.dofs;
  if (uses_t(keep_dirichlet))
    p.dirichlet.values = [&](double t, std::span<double> g) {
      set_time(keep_dirichlet, t);
      const auto bc = assembly::dirichlet_values(V, dirichlet, run.layout());
      std::copy(bc.values.begin(), bc.values.end(), g.begin());
    };
  else
    p.dirichlet.values = [&](double, std::span<double> g) {
      std::copy(bc0.values.begin(), bc0.values.end(), g.begin());
    };
  time::FirstOrderOptions to;
  to.scheme = scheme_of(o);
  to.theta = o.theta;
  to.rannacher_steps = o.rannacher;
  to.dt = o.dt;
  to.tolerance = o.adaptive;
  to.dt_min = o.dt_min > 0 ? o.dt_min : o.dt / 1024;
  to.dt_max = o.dt_max > 0 ? o.dt_max : std::numeric_limits<double>::infinity();
  to.newton.lagging = newton::Lagging::adaptive();
  run.t.assemble = w.seconds();

  const double t_end = o.steps * o.dt;
  std::optional<dist::Series> series;
  if (pvd) series.emplace(*pvd);
  const auto write_frame = [&](double t, std::span<const double> x) {
    if (!series) return;
    Stopwatch ww;
    std::vector<double> nodal;
    run.local([&] {
      require_finite(x, fmt::format("heat: the solution at t = {}", t));
      nodal = assembly::mesh_node_values(V, x);
    });
    const mesh::Field fields[] = {{"u", 1, nodal}};
    series->write(t, run.store(), run.mesh_key(), fields);
    run.t.write += ww.seconds();
  };
  time::FirstOrderStepper stepper(store, p, to, u, 0.0);
  Probes probes(run, o.probes, 1);
  probes.record(0.0, stepper.u());
  write_frame(0.0, stepper.u());
  index_t accepted = 0;
  const auto after_step = [&](const time::FirstOrderStepper& s) {
    ++accepted;
    const bool last = s.t() >= t_end - 1e-12 * std::max(1.0, t_end);
    if (accepted % every == 0 || last) write_frame(s.t(), s.u());
    probes.record(s.t(), s.u());
    run.progress().step(std::min<index_t>(accepted, o.steps), o.steps, s.t());
  };
  try {
    {
      const auto shown = run.progress().phase("factorizing");  // the first step makes its matrix
      stepper.step(t_end);
    }
    after_step(stepper);
    stepper.advance_to(t_end, after_step);
  } catch (const NumericalError& e) {
    run.explain_time_step_failure(stepper.solver().key(), e.what());  // dt's, in words, when it is
    throw;
  }
  const auto& r = stepper.report();
  run.t.factorize = r.factorize_seconds;
  run.t.solve = r.solve_seconds;
  const std::vector<double> final_u(stepper.u().begin(), stepper.u().end());
  assembly::Errors err;
  if (exact) {
    exact->set_time(stepper.t());
    err = run.errors(final_u, exact->vector_function());
  }
  const auto range = run.layout().range(final_u);
  if (series) series->commit();
  nlohmann::json j = run.json();
  j["time"] = {
      {"scheme", r.scheme},     {"dt", o.dt},         {"steps", r.accepted}, {"accepted", r.accepted},
      {"rejected", r.rejected}, {"dt_min", r.dt_min}, {"dt_max", r.dt_max},  {"final", stepper.t()}};
  j["solution"].update(range_json(range));
  if (exact) j["error"] = error_json(err);
  if (!probes.empty()) j["probes"] = probes.json();
  if (law)
    j["newton"] = {{"iterations", r.newton_iterations},
                   {"jacobian_refreshes", r.jacobians},
                   {"failed_steps", r.newton_failures}};
  if (series) j["output"] = series->path().string(), j["frames"] = series->frames();
  run.write_json(j);
  if (!run.prints()) return;
  std::FILE* out = run.out();
  run.print_header();
  if (o.adaptive > 0)
    fmt::print(
        out,
        "time        {} to t = {}: {} steps accepted, {} rejected, dt in [{:.4g}, {:.4g}] (tolerance {})\n",
        r.scheme, stepper.t(), r.accepted, r.rejected, r.dt_min, r.dt_max, o.adaptive);
  else
    fmt::print(out, "time        {}: {} steps of {} to t = {}\n", r.scheme, r.accepted, o.dt, stepper.t());
  if (law)
    fmt::print(out,
               "newton      k(u) = {}: {} iterations, {} Jacobians factorized, {} steps retried at half dt\n",
               law->text(), r.newton_iterations, r.jacobians, r.newton_failures);
  fmt::print(out, "factorize   {:.4f} s: {}; {} solves {:.4f} s in all ({:.2e} s each)\n", run.t.factorize,
             law ? fmt::format("{} Jacobians (lagged across steps)", r.jacobians)
             : k_uses_t
                 ? fmt::format("{} factorizations (k depends on t: one per step)",
                               store.counter("solve.factorizations"))
                 : fmt::format("{} matri{} for {} step size{}", r.systems, r.systems == 1 ? "x" : "ces",
                               r.distinct_dts.size(), r.distinct_dts.size() == 1 ? "" : "s"),
             r.solves, run.t.solve, run.t.solve / std::max<index_t>(1, r.solves));
  fmt::print(out, "solution    at t = {}: min {:.6g}, max {:.6g}\n", stepper.t(), range.first, range.second);
  if (exact) print_errors(out, err);
  if (series) fmt::print(out, "output      {} ({} frames)\n", series->path().string(), series->frames());
  run.print_timings();
}

void run_heat(const HeatOptions& o) {
  Run run(o.common, "heat");
  run.time_stepped = true;  // t in its expressions; M + dt·K: a failure while dt·K drowns M is dt's
  const auto pvd = run.local([&]() -> std::optional<std::filesystem::path> {
    return o.common.output.empty() ? std::nullopt : std::optional(pvd_path(o.common.output));
  });
  // Each datum is evaluated at the time of the step it enters (backward Euler: t_{n+1}).
  std::vector<Expression> keep_k, keep_dirichlet, keep_neumann;
  std::optional<Expression> source, initial, exact;
  std::vector<assembly::Dirichlet> dirichlet;
  std::vector<assembly::Neumann> neumann;
  assembly::Coefficient k, capacity;
  std::vector<Expression> keep_capacity;
  std::optional<Law> law;
  run.local([&] {
    capacity = coefficient(run, o.capacity, keep_capacity, "--capacity", 1.0, Admissible::positive("ρc"));
    if (!o.source.empty()) source = expression(run, "--source", o.source);
    initial = expression(run, "--initial", o.initial);
    if (!o.exact.empty()) exact = expression(run, "--exact", o.exact);
    k = coefficient(run, o.coefficients, keep_k);
    if (!o.law.empty()) {
      if (!o.coefficients.empty())
        throw Error("--conductivity-law gives k(u) everywhere: it replaces --coefficient (give one of them)");
      law.emplace("--conductivity-law", o.law, Admissible::positive("k(u)"));
    }
    dirichlet = dirichlet_conditions(run, o.dirichlet, keep_dirichlet);
    neumann = neumann_conditions(run, o.neumann, keep_neumann);
  });
  const int every = o.every > 0 ? o.every : std::max(1, o.steps / 10);
  run.make_space(1, /*spd=*/true);
  heat_by_schemes(o, run, k, capacity, source, initial, exact, dirichlet, neumann, keep_k, keep_dirichlet,
                  keep_neumann, pvd, every, law);
}

}  // namespace

void add_heat(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("heat", "backward Euler for u_t - div(k grad u) = f: one factorization, N solves");
  auto o = std::make_shared<HeatOptions>();
  add_common_options(*cmd, o->common);
  cmd->add_option("--dt", o->dt, "time step")->required()->check(positive_number());
  cmd->add_option("--steps", o->steps, "number of time steps")->required()->check(at_least(1));
  cmd->add_option("--initial", o->initial, "u at t = 0 as an expression in x, y, z (default 0)");
  cmd->add_option("--coefficient", o->coefficients,
                  "k per cell tag: TAG=VALUE (TAG: physical name, number or 'all': an expression in x, y, z, "
                  "t); default 1")
      ->allow_extra_args(false);
  cmd->add_option("--source", o->source, "f as an expression in x, y, z and t (default 0)");
  cmd->add_option(
         "--dirichlet", o->dirichlet,
         "u = EXPR on facets (x, y, z, t): TAG=EXPR (TAG: name, number or 'all': the whole boundary)")
      ->allow_extra_args(false);
  cmd->add_option("--neumann", o->neumann,
                  "k du/dn = EXPR on boundary facets (x, y, z, t): TAG=EXPR ('all': the whole boundary)")
      ->allow_extra_args(false);
  cmd->add_option(
      "--output", o->common.output,
      "write a time series: FILE.pvd, or a folder (FOLDER/heat.pvd), with FILE_NNNNNN.vtu frames");
  cmd->add_option("--exact", o->exact,
                  "exact solution in x, y, z and t: print its L2 and H1-seminorm errors at the final time");
  cmd->add_option("--every", o->every, "write a frame every K steps (0, the default: about 10 frames)")
      ->check(at_least(0));
  cmd->add_option(
         "--scheme", o->scheme,
         "be (backward Euler, the default), cn (Crank–Nicolson), bdf2, or theta (--theta); docs/time.md")
      ->check(CLI::IsMember({"be", "cn", "bdf2", "theta"}));
  cmd->add_option("--theta", o->theta, "θ of --scheme theta, in [0.5, 1]")->check(between(0.5, 1.0));
  cmd->add_option("--rannacher", o->rannacher,
                  "cn: the first N steps as two backward-Euler half steps each (rough initial data)")
      ->check(at_least(0));
  cmd->add_option("--adaptive", o->adaptive,
                  "adaptive steps: each step's error (step doubling) at most TOL·max|u| (and TOL·max|u0|); "
                  "dt on the ladder "
                  "dt·2^k; the run ends at steps·dt (0, the default: fixed steps)")
      ->check(non_negative_number());
  cmd->add_option("--dt-min", o->dt_min, "--adaptive: the smallest step (0, the default: dt/1024)")
      ->check(non_negative_number());
  cmd->add_option("--dt-max", o->dt_max, "--adaptive: the largest step (0, the default: none)")
      ->check(non_negative_number());
  cmd->add_option(
         "--probe", o->probes,
         "record u at x,y[,z] after every step, interpolated in the cell that holds the point (JSON probes)")
      ->allow_extra_args(false);
  cmd->add_option(
      "--conductivity-law", o->law,
      "k as an expression in u, e.g. '1+u^2' (−div(k(u) ∇u); replaces --coefficient): each step by "
      "Newton, its Jacobian lagged across steps");
  cmd->add_option("--capacity", o->capacity, "ρc per cell tag: TAG=VALUE (ρc u_t − div(k ∇u) = f); default 1")
      ->allow_extra_args(false);
  cmd->callback([o] { run_heat(*o); });
}

}  // namespace fem::app
