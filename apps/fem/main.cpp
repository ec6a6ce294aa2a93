// fem: drivers that run the kernels on mesh files. Errors are one line and a non-zero exit.
//   fem --help
//   fem store-demo
//   fem info gen:square-tri3:8 --json -
//   fem convert gen:cube-tet4:4 cube.vtu
//   fem partition gen:cube-tet4:32 --parts 2 --parts 8 --json partition.json
//   fem poisson gen:square-tri3:32 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y
//   fem elasticity gen:square-tri3:32 --fixed left --traction right=1,0 --output plate.vtu
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/threads.hpp"
#if FEM_APP_HAS_SOLVERS
#include "parallel.hpp"
#else
namespace fem::app::parallel {  // no solvers, no distributed runs
inline void start(int&, char**&) {}
inline void stop() {}
inline bool root() { return true; }
inline int fail(const std::string& message, int code) {
  std::fprintf(stderr, "fem: error: %s\n", message.c_str());
  return code;
}
}  // namespace fem::app::parallel
#endif

int main(int argc, char** argv) {
  // Idle OpenMP threads sleep, the BLAS runs on the calling thread (README.md, "Threads").
  fem::apply_executable_thread_defaults(argv);
  CLI::App app{"fem: finite-element kernels that share state through one store"};
  app.require_subcommand(1);
  // Parse errors are one line like every other error ("fem: error: --steps: 0 must be at least 1").
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("fem: error: {} (fem --help, or fem SUBCOMMAND --help)\n", e.what());
  });
  fem::app::add_store_demo(app);
  fem::app::add_info(app);
  fem::app::add_convert(app);
  fem::app::add_partition(app);
#if FEM_APP_HAS_SOLVERS
  fem::app::add_poisson(app);
  fem::app::add_heat(app);
  fem::app::add_nonlinear(app);
  fem::app::add_elasticity(app);
#endif
  namespace parallel = fem::app::parallel;
  try {
    parallel::start(argc, argv);  // MPI + PETSc when run distributed (mpirun, --solver mumps|gamg|hypre)
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = parallel::root() ? app.exit(e) : e.get_exit_code();  // --help: 0 on every rank
    parallel::stop();
    return code;
  } catch (const fem::app::ExitCode& e) {
    parallel::stop();
    return e.code;
  } catch (const fem::Error& e) {
    return parallel::fail(e.what(), 1);
  } catch (const std::exception& e) {
    return parallel::fail(std::string("internal error: ") + e.what(), 2);
  }
  parallel::stop();
  return 0;
}
