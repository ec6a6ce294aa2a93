// Writing a fem::Mesh as a Gmsh MSH 2.2 or 4.1 file, ASCII or binary: for `fem convert`, for
// benchmarks that need big files, and for round-trip tests of the reader.
#pragma once

#include <bit>
#include <filesystem>
#include <string>

#include "fem/mesh.hpp"

namespace fem::mesh {

enum class GmshVersion { msh22, msh41 };

struct GmshWriteOptions {
  GmshVersion version = GmshVersion::msh41;
  bool binary = false;
  /// Byte order of binary files (readers detect it from the marker; tests write both).
  std::endian byte_order = std::endian::native;
};

/// The file's bytes. Node and element tags are 1-based positions; every distinct (dimension,
/// physical tag) of the cells and the boundary facets gets its own geometric entity, and runs of
/// equal tags become element blocks in mesh order, so read_gmsh(to_gmsh(m)) gives back m's data
/// exactly (coordinates are written in shortest round-trip form). Facets tagged 0 are written
/// without a physical group, hence not read back as tagged facets.
std::string to_gmsh(const Mesh& mesh, const GmshWriteOptions& options);
inline std::string to_gmsh(const Mesh& mesh, bool binary = false, GmshVersion version = GmshVersion::msh41) {
  return to_gmsh(mesh, GmshWriteOptions{version, binary});
}

/// Write to_gmsh() to a file; throws fem::Error if the file cannot be written.
void write_gmsh(const Mesh& mesh, const std::filesystem::path& file, bool binary = false,
                GmshVersion version = GmshVersion::msh41);

}  // namespace fem::mesh
