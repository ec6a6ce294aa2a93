// Subcommands of the fem executable. Each lives in its own file and registers itself here.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

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
/// Registers `fem modes` (modes.cpp).
void add_modes(CLI::App& app);
/// Registers `fem dynamics` (dynamics.cpp).
void add_dynamics(CLI::App& app);
/// Registers `fem stokes` and `fem navier-stokes` (flow.cpp).
void add_stokes(CLI::App& app);
void add_navier_stokes(CLI::App& app);

/// "fem 0.1.0 (Release build; with cuda petsc suitesparse metis python)": `fem --version`.
std::string version_text();

/// The exit status of `fem`, one per class of outcome (the table in README.md, "Using the `fem`
/// executable").
namespace exit_code {
constexpr int success = 0;
/// The input was refused: a mesh file, a tag, an expression or its values, an output path, a
/// feature this build lacks (fem::Error other than a NumericalError).
constexpr int input = 1;
/// The command line itself: an unknown subcommand or option, a missing or malformed value, a
/// number out of its option's range (what CLI11 checks while parsing, before any work).
constexpr int usage = 2;
/// Numerical failure: the problem was accepted but has no trustworthy answer (a singular or
/// incompatible system, a failed factorization, Newton not converged: fem::NumericalError).
constexpr int numerical = 3;
/// A bug: an exception outside the fem::Error family.
constexpr int internal = 4;
}  // namespace exit_code

/// Thrown by a subcommand that has printed its own message and wants this exit status
/// (e.g. exit_code::numerical: Newton did not converge).
struct ExitCode {
  int code = exit_code::input;
};

}  // namespace fem::app
