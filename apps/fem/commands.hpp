// Subcommands of the fem executable. Each lives in its own file and registers itself here.
#pragma once

#include <CLI/CLI.hpp>

namespace fem::app {

/// Registers `fem store-demo`.
void add_store_demo(CLI::App& app);
/// Registers `fem info` (info.cpp).
void add_info(CLI::App& app);
/// Registers `fem convert` (convert.cpp).
void add_convert(CLI::App& app);
/// Registers `fem partition` (partition.cpp).
void add_partition(CLI::App& app);
/// Registers `fem poisson` (poisson.cpp).
void add_poisson(CLI::App& app);
/// Registers `fem heat` (heat.cpp).
void add_heat(CLI::App& app);
/// Registers `fem nonlinear` (nonlinear.cpp).
void add_nonlinear(CLI::App& app);
/// Registers `fem elasticity` (elasticity.cpp).
void add_elasticity(CLI::App& app);

/// Thrown by a subcommand that has printed its own message and wants this exit status
/// (e.g. 3: Newton did not converge).
struct ExitCode {
  int code = 1;
};

}  // namespace fem::app
