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

#include "commands.hpp"
#include "fem/error.hpp"

int main(int argc, char** argv) {
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fem::app::ExitCode& e) {
    return e.code;
  } catch (const fem::Error& e) {
    std::fprintf(stderr, "fem: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fem: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
