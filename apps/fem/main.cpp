// fem: drivers that run the kernels on mesh files. Errors are one line and a non-zero exit.
//   fem --help
//   fem store-demo
//   fem info gen:square-tri3:8 --json -
//   fem convert gen:cube-tet4:4 cube.vtu
#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "fem/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fem: finite-element kernels that share state through one store"};
  app.require_subcommand(1);
  fem::app::add_store_demo(app);
  fem::app::add_info(app);
  fem::app::add_convert(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fem::Error& e) {
    std::fprintf(stderr, "fem: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fem: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
