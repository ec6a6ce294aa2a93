// fem nonlinear: Newton's method on Bratu's problem -Δu = λ e^u or the quasilinear problem
// -div((1 + u²)∇u) = f, with line search, Jacobian lagging and (Bratu) continuation in λ.
//   fem nonlinear gen:square-tri3:32 --problem bratu --lambda 6
//   fem nonlinear gen:square-tri3:32 --problem bratu --lambda 7 --continuation
//   fem nonlinear gen:square-tri3:16 --problem quasilinear --source 0 --dirichlet all=1+x+2*y --exact 1+x+2*y
// A run that does not converge prints the reason and exits with code 3.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/mesh/vtu.hpp"
#include "fem/newton/assembled.hpp"
#include "fem/newton/newton.hpp"
#include "parallel.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct NonlinearOptions {
  CommonOptions common;
  std::string problem = "bratu";
  double lambda = 1.0;
  bool continuation = false;
  std::vector<std::string> dirichlet;
  std::string source, exact;
  int lag = 1, anderson = 0, max_iterations = 50;
  std::string line_search = "none";
  double rtol = 1e-10, atol = 1e-10;
};

void run_nonlinear(const NonlinearOptions& o) {
  const CommonOptions c = parallel::for_this_rank(o.common);
  prepare_outputs(c, ".vtu", "VTU (a .vtu file: point data u)");
  if (o.problem != "bratu" && (o.continuation || o.lambda != 1.0))
    throw Error("--lambda and --continuation are for --problem bratu");
  if (o.problem == "bratu" && !o.source.empty()) throw Error("--source is for --problem quasilinear");
  if (o.anderson > 0 && o.lag == 1)
    throw Error("--anderson accelerates the steps that reuse a Jacobian: it needs --lag K with K > 1");
  apply_threads(c);
  Store& store = fem::store();
  Timings t;
  const std::string mesh_key = load_and_publish(c.mesh, t, store);
  const auto mesh = store.get<Mesh>(mesh_key);

  std::vector<Expression> keep;
  std::optional<Expression> source, exact;
  const auto dirichlet = parallel::local([&] {
    if (!o.source.empty()) source.emplace("--source", o.source, mesh->gdim());
    if (!o.exact.empty()) exact.emplace("--exact", o.exact, mesh->gdim());
    return dirichlet_conditions(*mesh, o.dirichlet.empty() ? std::vector<std::string>{"all=0"} : o.dirichlet,
                                keep);
  });

  Stopwatch w;
  const assembly::FunctionSpace V(mesh_key, c.order, 1, store);
  // --device builds the connectivity on that executor; Newton's residual and Jacobian kernels
  // (fem/newton) run on the host.
  const auto assembler = std::make_shared<const assembly::Assembler>(V, executor(c));
  LinearSystem system(c, V, /*spd=*/false);  // J = K - λ e^u M is indefinite past the fold
  t.connectivity = w.seconds();

  w = Stopwatch();
  const auto bc = system.dirichlet_values(dirichlet);
  std::vector<double> u(V.num_dofs(), 0.0);
  assembly::set_dirichlet(bc, u);
  t.assemble = w.seconds();

  auto form_at = [&](double lambda) {
    if (o.problem == "bratu") return assembly::bratu(lambda);
    const assembly::Function f =
        source ? source->function() : assembly::Function([](const double*) { return 0.0; });
    return assembly::nonlinear_poisson(f);
  };
  auto problem_at = [&](double lambda) {
    newton::Problem p = newton::assembled_problem(assembler, form_at(lambda), bc, "nonlinear", store);
    if (!system.distributed()) return p;
    // Each rank assembles its cells' part of F: summed over ranks into every copy of a shared
    // DOF, so that Newton's local vectors hold the global values; norms and solves are global.
    p.residual = [r = p.residual, &system](std::span<const double> u, std::span<double> F) {
      r(u, F);
      system.accumulate(F);
    };
    if (p.residual_and_jacobian)
      p.residual_and_jacobian = [rj = p.residual_and_jacobian, &system](std::span<const double> u,
                                                                        std::span<double> F) {
        CsrMatrix J = rj(u, F);
        system.accumulate(F);
        return J;
      };
    p.dot = [&system](std::span<const double> a, std::span<const double> b) { return system.dot(a, b); };
    p.linear_solver = system.newton_solver();
    return p;
  };

  newton::Options nopts;
  nopts.atol = o.atol;
  nopts.rtol = o.rtol;
  nopts.max_iterations = o.max_iterations;
  nopts.line_search =
      o.line_search == "backtracking" ? newton::LineSearch::backtracking : newton::LineSearch::none;
  if (o.lag > 1) nopts.lagging = newton::Lagging::fixed(o.lag, o.anderson);
  if (!system.distributed()) nopts.linear = solve_options(c);
  std::FILE* out = c.text();
  if (c.show_text()) nopts.monitor = newton::text_monitor(out);

  // Newton assembles, factorizes and solves in one loop; its own timings split its wall time
  // into the phases: residual and Jacobian assembly → assemble, factorizations (the symbolic
  // analysis included) → factorize, triangular solves and the rest of the loop → solve.
  w = Stopwatch();
  newton::Result result;
  std::optional<newton::ContinuationResult> cont;
  if (o.continuation) {
    newton::ContinuationOptions copts;
    copts.start = 0.0;
    copts.end = o.lambda;
    copts.step = o.lambda / 10;
    copts.min_step = std::abs(o.lambda) * 1e-4;
    cont = newton::continuation(problem_at, u, copts, nopts);
    if (!cont->results.empty()) result = cont->results.back();
    result.converged = cont->reached_end;
    if (!cont->reached_end) result.reason = newton::Reason::diverged_line_search;
  } else {
    result = newton::solve(problem_at(o.lambda), u, nopts);
  }
  const double newton_seconds = w.seconds();
  newton::Timings phases;  // summed over the continuation's converged steps
  if (cont) {
    for (const auto& r : cont->results) {
      phases.residual += r.timings.residual;
      phases.jacobian += r.timings.jacobian;
      phases.factorization += r.timings.factorization;
      phases.solve += r.timings.solve;
    }
  } else {
    phases = result.timings;
  }
  t.assemble += phases.residual + phases.jacobian;
  t.factorize = phases.factorization;
  // What the phases do not name (norms, updates; with continuation, the failed steps) is solve's.
  t.solve = std::max(0.0, newton_seconds - phases.residual - phases.jacobian - phases.factorization);

  const bool converged = o.continuation ? cont->reached_end : result.converged;
  const std::string reason =
      o.continuation && !converged
          ? fmt::format("continuation stopped at lambda = {} (step below the minimum)", cont->last_parameter)
          : std::string(newton::to_string(result.reason));
  assembly::Errors err;
  if (exact) err = system.errors(*assembler, u, exact->vector_function(), LinearSolveInfo{});
  const auto range = system.range(u);
  const std::int64_t constrained = system.count_owned(bc);
  // A run that did not converge writes no solution file (a previous one stays as it was): its
  // last finite iterate is no solution of anything.
  const bool write_output = !c.output.empty() && converged;
  if (write_output) {
    w = Stopwatch();
    const auto nodal = parallel::local([&] {
      require_finite(u, "nonlinear: the solution");
      return node_values(V, u);
    });
    const mesh::Field fields[] = {{"u", 1, nodal}};
    write_solution(c.output, store, mesh_key, fields);
    t.write = w.seconds();
  }

  parallel::local([&] {  // rank 0 writes: its failure is every rank's
    if (!c.json.empty()) {
      nlohmann::json j;
      j["command"] = "nonlinear";
      j["device"] = c.device;
      j["problem"] = o.problem;
      j["mesh"] = mesh_json(*parallel::whole_mesh(store, mesh_key));
      j["order"] = c.order;
      j["dofs"] = system.dofs();
      j["ranks"] = parallel::size();
      if (system.distributed()) j["solver"] = system.solver_json();
      j["timings"] = timings_json(t);
      j["cache"] = cache_json(store);
      j["solution"] = range;
      j["newton"] = {{"iterations", result.iterations},
                     {"converged", converged},
                     {"reason", reason},
                     {"jacobian_refreshes", result.jacobian_refreshes},
                     {"initial_residual_norm", result.initial_residual_norm},
                     {"residual_norm", result.residual_norm},
                     {"seconds", newton_seconds},
                     {"timings",
                      {{"residual", phases.residual},
                       {"jacobian", phases.jacobian},
                       {"factorization", phases.factorization},
                       {"solve", phases.solve}}}};
      if (o.problem == "bratu") j["lambda"] = o.lambda;
      if (cont)
        j["continuation"] = {{"last_lambda", cont->last_parameter},
                             {"reached_end", cont->reached_end},
                             {"parameters", cont->parameters},
                             {"failures", cont->failures}};
      if (exact) j["error"] = error_json(err);
      if (write_output) j["output"] = c.output;
      write_json(c.json, j);
    }
  });
  if (c.show_text()) {
    const auto whole = parallel::whole_mesh(store, mesh_key);
    fmt::print(out, "mesh        {} ({} nodes, {} {} cells)\n", whole->source(), whole->num_nodes(),
               whole->num_cells(), whole->cell_info().name);
    fmt::print(out, "space       {} with {} dofs ({} constrained)\n", V.name(), system.dofs(), constrained);
    if (system.distributed()) system.print_solver(out);
    fmt::print(out, "newton      {} after {} iterations, {} Jacobian refreshes, |F| = {:.3e}\n", reason,
               result.iterations, result.jacobian_refreshes, result.residual_norm);
    fmt::print(out,
               "newton time {:.4f} s: residual {:.4f}, Jacobian {:.4f}, factorize {:.4f}, solve {:.4f}\n",
               newton_seconds, phases.residual, phases.jacobian, phases.factorization, phases.solve);
    if (cont)
      fmt::print(out, "lambda      last converged {} of {} ({} steps, {} failures)\n", cont->last_parameter,
                 o.lambda, cont->parameters.size(), cont->failures);
    const auto& r = range;
    fmt::print(out, "solution    min {:.6g}, max {:.6g}\n", r["min"].get<double>(), r["max"].get<double>());
    if (exact) print_errors(out, err);
    if (write_output) fmt::print(out, "output      {}\n", c.output);
    if (!c.output.empty() && !converged)
      fmt::print(out, "output      none written: Newton did not converge\n");
    print_timings(out, t, store);
  }
  if (!converged) {
    if (parallel::root())
      std::fprintf(stderr, "fem: nonlinear: not converged: %s after %d iterations\n", reason.c_str(),
                   result.iterations);
    throw ExitCode{3};
  }
}

}  // namespace

void add_nonlinear(CLI::App& app) {
  auto* cmd = app.add_subcommand("nonlinear", "Newton's method on Bratu's or a quasilinear problem");
  auto o = std::make_shared<NonlinearOptions>();
  add_common_options(*cmd, o->common);
  cmd->add_option("--problem", o->problem, "bratu: -Δu = λ e^u; quasilinear: -div((1+u²)∇u) = f")
      ->check(CLI::IsMember({"bratu", "quasilinear"}));
  cmd->add_option("--lambda", o->lambda, "λ of Bratu's problem (default 1)")->check(finite_number());
  cmd->add_flag("--continuation", o->continuation, "Bratu: continue in λ from 0 up to --lambda");
  cmd->add_option("--source", o->source, "quasilinear: f as an expression in x, y, z (default 0)");
  cmd->add_option("--dirichlet", o->dirichlet, "u = EXPR on facets: TAG=EXPR (default all=0)")
      ->allow_extra_args(false);
  cmd->add_option("--exact", o->exact, "exact solution: print its L2 and H1 errors");
  cmd->add_option("--lag", o->lag, "refresh the Jacobian every K iterations (1: full Newton)")
      ->check(at_least(1));
  cmd->add_option(
         "--anderson", o->anderson,
         "Anderson-accelerate the steps that reuse a Jacobian, over the last M of them (0: chord steps)")
      ->check(between(0, 16));
  cmd->add_option("--line-search", o->line_search, "none or backtracking (Armijo)")
      ->check(CLI::IsMember({"none", "backtracking"}));
  cmd->add_option("--max-iterations", o->max_iterations, "Newton iterations at most")->check(at_least(1));
  cmd->add_option("--rtol", o->rtol, "residual tolerance relative to the initial residual")
      ->check(non_negative_number());
  cmd->add_option("--atol", o->atol, "absolute residual tolerance")->check(non_negative_number());
  cmd->add_option("--output", o->common.output, "write the solution to FILE.vtu (point data u)");
  cmd->callback([o] { run_nonlinear(*o); });
}

}  // namespace fem::app
