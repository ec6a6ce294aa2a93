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

}  // namespace fem::app
