// Mesh files or generated meshes for the subcommands.
#include "load_mesh.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

#include "fem/error.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"

namespace fem::app {

Mesh load_mesh(const std::string& spec) {
  if (spec.rfind("gen:", 0) == 0) {
    const std::string forms =
        "gen:interval-line2:N, gen:square-tri3:N, gen:square-quad4:N, gen:cube-tet4:N or gen:cube-hex8:N";
    const auto colon = spec.find(':', 4);
    FEM_EXPECTS(colon != std::string::npos, "mesh '{}': expected {}", spec, forms);
    const std::string shape = spec.substr(4, colon - 4), count = spec.substr(colon + 1);
    index_t n = 0;
    const auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    FEM_EXPECTS(ec == std::errc() && p == count.data() + count.size() && n >= 1,
                "mesh '{}': '{}' is not a positive number of cells per side", spec, count);
    Mesh m = [&] {
      if (shape == "interval-line2" || shape == "interval") return mesh::interval(n);
      if (shape == "square-tri3") return mesh::unit_square(CellType::tri3, n);
      if (shape == "square-quad4") return mesh::unit_square(CellType::quad4, n);
      if (shape == "cube-tet4") return mesh::unit_cube(CellType::tet4, n);
      if (shape == "cube-hex8") return mesh::unit_cube(CellType::hex8, n);
      throw InvalidArgument(fmt::format("mesh '{}': unknown shape '{}'; expected {}", spec, shape, forms));
    }();
    Mesh::Data d = m.data();
    d.source = spec;
    return Mesh(std::move(d));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(spec, ec))
    throw Error(fmt::format("cannot read mesh '{}': {}", spec,
                            std::filesystem::exists(spec, ec) ? "not a regular file" : "no such file"));
  return mesh::read(spec);
}

}  // namespace fem::app
