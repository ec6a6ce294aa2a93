// Mesh files or generated meshes for the subcommands.
#include "load_mesh.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "fem/error.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"

namespace fem::app {

Mesh load_mesh(const std::string& spec) {
  // Parsed, checked (32-bit counts, the memory available) and named by the mesh library, before
  // anything is allocated.
  if (mesh::is_generated(spec)) return mesh::generate(spec);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(spec, ec))
    throw Error(fmt::format("cannot read mesh '{}': {}", spec,
                            std::filesystem::exists(spec, ec) ? "not a regular file" : "no such file"));
  return mesh::read(spec);
}

}  // namespace fem::app
