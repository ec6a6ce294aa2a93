// fem heat: backward Euler for u_t - div(k ∇u) = f. The matrix M + dt K is assembled and
// factorized once (store key heat/A); every time step is one cached solve with it.
//   fem heat gen:square-tri3:32 --dt 0.01 --steps 100 --initial 'sin(pi*x)*sin(pi*y)' --dirichlet all=0
//   fem heat meshes/plate_hole_v41.msh --dt 0.01 --steps 50 --dirichlet hole=1 --output out/heat.pvd
// Dirichlet and Neumann values are evaluated once, at t = 0 (time-independent); the source is
// evaluated at every new time t_{n+1} when it uses t.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <tuple>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/mesh/vtu.hpp"
#include "parallel.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct HeatOptions {
  CommonOptions common;
  std::vector<std::string> coefficients, dirichlet, neumann;
  std::string source, initial = "0", exact;
  double dt = 0;
  int steps = 0, every = 0;
};

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

void run_heat(const HeatOptions& o) {
  const CommonOptions c = parallel::for_this_rank(o.common);
  const auto pvd = parallel::local([&]() -> std::optional<std::filesystem::path> {
    prepare_outputs(c, "", "");
    return c.output.empty() ? std::nullopt : std::optional(pvd_path(c.output));
  });
  if (!(o.dt > 0) || !std::isfinite(o.dt))
    throw Error(fmt::format("--dt {}: must be a positive time step", o.dt));
  if (o.steps < 1) throw Error(fmt::format("--steps {}: must be at least 1", o.steps));
  apply_threads(c);
  Store& store = fem::store();
  Timings t;
  const std::string mesh_key = load_and_publish(c.mesh, t, store);
  const auto mesh = store.get<Mesh>(mesh_key);

  std::vector<Expression> keep;
  std::optional<Expression> source, initial, exact;
  const auto [k, dirichlet, neumann] = parallel::local([&] {
    if (!o.source.empty()) source.emplace("--source", o.source, mesh->gdim());
    initial.emplace("--initial", o.initial, mesh->gdim());
    if (!o.exact.empty()) exact.emplace("--exact", o.exact, mesh->gdim());
    return std::tuple(coefficient(*mesh, o.coefficients), dirichlet_conditions(*mesh, o.dirichlet, keep),
                      neumann_conditions(*mesh, o.neumann, keep));
  });
  const int every = o.every > 0 ? o.every : std::max(1, o.steps / 10);

  Stopwatch w;
  const assembly::FunctionSpace V(mesh_key, c.order, 1, store);
  const MatrixAssembler matrices(V, c);
  const auto assembler = matrices.host_ptr();
  LinearSystem system(c, V, /*spd=*/true);
  t.connectivity = w.seconds();

  // M, and A = M + dt K with the Dirichlet rows; lift = what the conditions add to every b.
  w = Stopwatch();
  const auto pattern = assembler->pattern();
  const auto n = static_cast<std::size_t>(V.num_dofs());
  // Local matrices and vectors are partial sums on the DOFs shared by ranks (distributed runs).
  std::vector<double> mass = prefaulted_vector<double>(pattern->nnz()),
                      values = prefaulted_vector<double>(pattern->nnz());
  std::vector<double> fixed(n, 0.0);  // dt · (Neumann fluxes; the source too when it does not use t)
  const bool source_uses_t = source && source->uses_time();
  std::vector<double> u;
  system.check_tags(neumann);
  parallel::local([&] {
    matrices.matrix_into(assembly::Mass{}, mass);
    matrices.matrix_into(assembly::Diffusion{k}, values);
    for (const auto& nm : neumann) assembler->vector_into(nm, fixed);
    if (source && !source_uses_t)
      assembler->vector_into(assembly::Source{source->function(), source->batch_function()}, fixed);
    u = assembly::interpolate(V, initial->function());
  });
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = mass[i] + o.dt * values[i];
  for (double& v : fixed) v *= o.dt;
  const CsrMatrix M(pattern, std::move(mass));
  const auto bc = system.dirichlet_values(dirichlet);
  std::vector<double> lift(n, 0.0);
  assembly::apply_dirichlet(bc, *pattern, values, lift);
  system.publish(store, "heat/A", *assembler, std::move(values), lift, bc, "heat", /*may_be_singular=*/false);
  t.assemble = w.seconds();

  w = Stopwatch();
  system.factorize(store, "heat/A");
  t.factorize = w.seconds();

  std::optional<SolutionSeries> series;
  auto write_frame = [&](double time) {
    if (!series) return;
    Stopwatch ww;
    std::vector<double> nodal;
    parallel::local([&] {
      require_finite(u, fmt::format("heat: the solution at t = {}", time));
      nodal = node_values(V, u);
    });
    const mesh::Field fields[] = {{"u", 1, nodal}};
    series->write(time, store, mesh_key, fields);
    t.write += ww.seconds();
  };
  if (pvd) series.emplace(*pvd);
  write_frame(0.0);

  const bool progress = !c.quiet && ::isatty(::fileno(stderr));
  std::vector<double> b(n), f(n);
  double solve_seconds = 0;
  LinearSolveInfo info;  // M + dt K is nonsingular: the residuals only
  for (int step = 1; step <= o.steps; ++step) {
    const double time = step * o.dt;
    w = Stopwatch();
    M.multiply(u, b);
    for (std::size_t i = 0; i < n; ++i) b[i] += fixed[i];
    if (source_uses_t) {
      source->set_time(time);
      std::fill(f.begin(), f.end(), 0.0);
      parallel::local([&] {
        assembler->vector_into(assembly::Source{source->function(), source->batch_function()}, f);
      });
      for (std::size_t i = 0; i < n; ++i) b[i] += o.dt * f[i];
    }
    assembly::zero_dirichlet(bc, b);
    for (std::size_t i = 0; i < n; ++i) b[i] += lift[i];
    t.assemble += w.seconds();

    w = Stopwatch();
    u = system.solve(store, "heat/A", b, info);
    solve_seconds += w.seconds();

    if (step % every == 0 || step == o.steps) write_frame(time);
    if (progress) {
      const int width = 40, done = step * width / o.steps;
      fmt::print(stderr, "\r[{}{}] step {}/{}  t = {:.4g}", std::string(done, '#'),
                 std::string(width - done, ' '), step, o.steps, time);
      if (step == o.steps) fmt::print(stderr, "\n");
    }
  }
  t.solve = solve_seconds;

  assembly::Errors err;  // at the final time
  if (exact) {
    exact->set_time(o.steps * o.dt);
    err = system.errors(*assembler, u, exact->vector_function(), info);
  }
  const auto range = system.range(u);
  const std::int64_t factorizations = store.counter("solve.factorizations"),
                     cache_hits = store.counter("solve.cache_hits");
  parallel::local([&] {  // rank 0 writes: its failure is every rank's
    if (!c.json.empty()) {
      nlohmann::json j = system.run_json("heat", c, store, mesh_key, t);
      j["time"] = {{"dt", o.dt}, {"steps", o.steps}, {"final", o.steps * o.dt}};
      j["solution"] = range;
      add_solve_json(j, info);
      if (exact) j["error"] = error_json(err);
      if (series) {
        j["output"] = series->path().string();
        j["frames"] = series->frames();
      }
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
  fmt::print(out, "time        {} steps of {} to t = {}\n", o.steps, o.dt, o.steps * o.dt);
  system.print_solver(out);
  fmt::print(out, "factorize   {:.4f} s once; {} solves {:.4f} s in all ({:.2e} s each)\n", t.factorize,
             o.steps, t.solve, t.solve / o.steps);
  fmt::print(out, "store       solve.factorizations={} solve.cache_hits={}\n", factorizations, cache_hits);
  const auto& r = range;
  fmt::print(out, "solution    at t = {}: min {:.6g}, max {:.6g}\n", o.steps * o.dt, r["min"].get<double>(),
             r["max"].get<double>());
  if (exact) print_errors(out, err);
  if (series) fmt::print(out, "output      {} ({} frames)\n", series->path().string(), series->frames());
  print_timings(out, t, store);
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
                  "k per cell tag: TAG=VALUE (TAG: physical name, number or 'all'); default 1")
      ->allow_extra_args(false);
  cmd->add_option("--source", o->source, "f as an expression in x, y, z and t (default 0)");
  cmd->add_option("--dirichlet", o->dirichlet,
                  "u = EXPR on facets, evaluated at t = 0: TAG=EXPR (TAG: name, number or 'all')")
      ->allow_extra_args(false);
  cmd->add_option("--neumann", o->neumann, "k du/dn = EXPR on facets, evaluated at t = 0: TAG=EXPR")
      ->allow_extra_args(false);
  cmd->add_option(
      "--output", o->common.output,
      "write a time series: FILE.pvd, or a folder (FOLDER/heat.pvd), with FILE_NNNNNN.vtu frames");
  cmd->add_option("--exact", o->exact,
                  "exact solution in x, y, z and t: print its L2 and H1-seminorm errors at the final time");
  cmd->add_option("--every", o->every, "write a frame every K steps (default: about 10 frames)")
      ->check(at_least(1));
  cmd->callback([o] { run_heat(*o); });
}

}  // namespace fem::app
