// fem: drivers that run the kernels on mesh files. Errors are one line and a non-zero exit, one
// code per class (commands.hpp, exit_code).
//   fem --help
//   fem store-demo
//   fem info gen:square-tri3:8 --json -
//   fem convert gen:cube-tet4:4 cube.vtu
//   fem partition gen:cube-tet4:32 --parts 2 --parts 8 --json partition.json
//   fem poisson gen:square-tri3:32 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y
//   fem elasticity gen:square-tri3:32 --fixed left --traction right=1,0 --output plate.vtu
//   mpirun -np 4 fem heat meshes/plate_hole_v41.msh --dt 0.01 --steps 50 --dirichlet hole=1
#include <fmt/format.h>

#include <exception>
#include <string>

#include "commands.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/error.hpp"
#include "fem/threads.hpp"
#include "solver_common.hpp"

int main(int argc, char** argv) {
  namespace exit_code = fem::app::exit_code;
  // Idle OpenMP threads sleep, the BLAS runs on the calling thread (docs/benchmarks.md, "Threads").
  fem::apply_executable_thread_defaults(argv);
  CLI::App app{"fem: finite-element kernels that share state through one store"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fem::app::version_text());
  // `fem SUBCOMMAND --config case.toml`: a subcommand hands the option to this one, which reads
  // the file's [SUBCOMMAND] section (as --write-config writes it) before the requirements are
  // checked; the command line wins over the file.
  app.set_config("--config", "",
                 "read a subcommand's options from a TOML file (as --write-config writes it)");
  app.fallthrough();
  // Parse errors are one line like every other error ("fem: error: --steps: 0 must be at least 1").
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("fem: error: {} (fem --help, or fem SUBCOMMAND --help)\n", e.what());
  });
  fem::app::add_store_demo(app);
  fem::app::add_info(app);
  fem::app::add_convert(app);
  fem::app::add_partition(app);
  fem::app::add_poisson(app);
  fem::app::add_heat(app);
  fem::app::add_nonlinear(app);
  fem::app::add_elasticity(app);
  fem::app::add_modes(app);
  fem::app::add_dynamics(app);
  fem::app::add_stokes(app);
  fem::app::add_navier_stokes(app);
  namespace dist = fem::dist;
  try {
    // MPI + PETSc when launched by mpirun on several processes, or asked for a PETSc solver.
    dist::start(argc, argv, fem::app::asks_for_distributed_solver(argc, argv));
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // One code for every usage error (CLI11's own are 101-114); --help: 0 on every rank.
    if (dist::processes().root()) app.exit(e);
    dist::stop();
    return e.get_exit_code() == 0 ? exit_code::success : exit_code::usage;
  } catch (const fem::app::ExitCode& e) {
    dist::stop();
    return e.code;
  } catch (const fem::NumericalError& e) {
    return dist::fail("fem", e.what(), exit_code::numerical);
  } catch (const fem::Error& e) {
    return dist::fail("fem", e.what(), exit_code::input);
  } catch (const std::exception& e) {
    return dist::fail("fem", std::string("internal error: ") + e.what(), exit_code::internal);
  }
  dist::stop();
  return exit_code::success;
}
