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
#include "fem/dist/runtime.hpp"
#include "fem/newton/assembled.hpp"
#include "fem/newton/newton.hpp"
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
  if (o.problem != "bratu" && (o.continuation || o.lambda != 1.0))
    throw Error("--lambda and --continuation are for --problem bratu");
  if (o.problem == "bratu" && !o.source.empty()) throw Error("--source is for --problem quasilinear");
  if (o.anderson > 0 && o.lag == 1)
    throw Error("--anderson accelerates the steps that reuse a Jacobian: it needs --lag K with K > 1");
  Run run(o.common, "nonlinear", ".vtu", "VTU (a .vtu file: point data u)");
  std::vector<Expression> keep;
  std::optional<Expression> source, exact;
  std::vector<assembly::Dirichlet> dirichlet;
  run.local([&] {
    if (!o.source.empty()) source = expression(run, "--source", o.source);
    if (!o.exact.empty()) exact = expression(run, "--exact", o.exact);
    dirichlet = dirichlet_conditions(
        run, o.dirichlet.empty() ? std::vector<std::string>{"all=0"} : o.dirichlet, keep);
  });
  newton::Options nopts;
  run.make_space(1, /*spd=*/false, nopts.linear);  // J = K - λ e^u M is indefinite past the fold
  const auto& assembler = run.assembler();

  Stopwatch w;
  const auto bc = assembly::dirichlet_values(assembler->space(), dirichlet, run.layout());
  run.constrained_dofs = run.layout().count_owned(bc.dofs);
  std::vector<double> u(assembler->space().num_dofs(), 0.0);
  assembly::set_dirichlet(bc, u);
  run.t.assemble = w.seconds();

  auto problem_at = [&](double lambda) {
    const assembly::NonlinearForm form =
        o.problem == "bratu"
            ? assembly::bratu(lambda)
            : assembly::nonlinear_poisson(source ? source->function() : assembly::Function(nullptr));
    return newton::assembled_problem(assembler, form, bc, "nonlinear", run.store(), run.solver());
  };
  nopts.atol = o.atol;
  nopts.rtol = o.rtol;
  nopts.max_iterations = o.max_iterations;
  nopts.line_search =
      o.line_search == "backtracking" ? newton::LineSearch::backtracking : newton::LineSearch::none;
  if (o.lag > 1) nopts.lagging = newton::Lagging::fixed(o.lag, o.anderson);
  if (run.prints()) nopts.monitor = newton::text_monitor(run.out());

  // Newton assembles, factorizes and solves in one loop; its own timings split its wall time
  // into the phases: residual and Jacobian assembly → assemble, factorizations (the symbolic
  // analysis included) → factorize, triangular solves and the rest of the loop → solve.
  w = Stopwatch();
  newton::Result result;
  std::optional<newton::ContinuationResult> cont;
  if (o.continuation) {
    cont = newton::continuation(
        problem_at, u,
        {.start = 0.0, .end = o.lambda, .step = o.lambda / 10, .min_step = std::abs(o.lambda) * 1e-4}, nopts);
    if (!cont->results.empty()) result = cont->results.back();
  } else {
    result = newton::solve(problem_at(o.lambda), u, nopts);
  }
  const double newton_seconds = w.seconds();
  newton::Timings phases;  // summed over the continuation's converged steps
  for (const auto& r : cont ? cont->results : std::vector<newton::Result>{result}) {
    phases.residual += r.timings.residual;
    phases.jacobian += r.timings.jacobian;
    phases.factorization += r.timings.factorization;
    phases.solve += r.timings.solve;
  }
  run.t.assemble += phases.residual + phases.jacobian;
  run.t.factorize = phases.factorization;
  // What the phases do not name (norms, updates; with continuation, the failed steps) is solve's.
  run.t.solve = std::max(0.0, newton_seconds - phases.residual - phases.jacobian - phases.factorization);

  const bool converged = cont ? cont->reached_end : result.converged;
  const std::string reason =
      cont && !converged
          ? fmt::format("continuation stopped at lambda = {} (step below the minimum)", cont->last_parameter)
          : std::string(newton::to_string(result.reason));
  assembly::Errors err;
  if (exact) err = run.errors(u, exact->vector_function());
  const auto range = run.layout().range(u);
  // A run that did not converge writes no solution file (a previous one stays as it was): its
  // last finite iterate is no solution of anything.
  const bool write_output = !o.common.output.empty() && converged;
  if (write_output) {
    const auto nodal = run.local([&] {
      require_finite(u, "nonlinear: the solution");
      return assembly::mesh_node_values(assembler->space(), u);
    });
    const mesh::Field fields[] = {{"u", 1, nodal}};
    run.write(fields);
  }

  nlohmann::json j = run.json();
  j["problem"] = o.problem;
  j["solution"].update(range_json(range));
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
  if (write_output) j["output"] = o.common.output;
  run.write_json(j);
  if (run.prints()) {
    std::FILE* out = run.out();
    run.print_header();
    fmt::print(out, "newton      {} after {} iterations, {} Jacobian refreshes, |F| = {:.3e}\n", reason,
               result.iterations, result.jacobian_refreshes, result.residual_norm);
    fmt::print(out,
               "newton time {:.4f} s: residual {:.4f}, Jacobian {:.4f}, factorize {:.4f}, solve {:.4f}\n",
               newton_seconds, phases.residual, phases.jacobian, phases.factorization, phases.solve);
    if (cont)
      fmt::print(out, "lambda      last converged {} of {} ({} steps, {} failures)\n", cont->last_parameter,
                 o.lambda, cont->parameters.size(), cont->failures);
    fmt::print(out, "solution    min {:.6g}, max {:.6g}\n", range.first, range.second);
    if (exact) print_errors(out, err);
    if (write_output) fmt::print(out, "output      {}\n", o.common.output);
    if (!o.common.output.empty() && !converged)
      fmt::print(out, "output      none written: Newton did not converge\n");
    run.print_timings();
  }
  if (!converged) {
    if (dist::processes().root())
      fmt::print(stderr, "fem: nonlinear: not converged: {} after {} iterations\n", reason,
                 result.iterations);
    throw ExitCode{exit_code::numerical};
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
