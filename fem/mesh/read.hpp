// Mesh readers: Gmsh MSH 2.2 and 4.1 (ASCII and binary) and MEDIT .mesh. Every error is a
// fem::ParseError naming the file and the line (ASCII) or byte offset (binary).
#pragma once

#include <filesystem>
#include <string_view>

#include "fem/mesh.hpp"

namespace fem::mesh {

/// Read a mesh file; the format comes from the content (Gmsh's $MeshFormat) or the extension
/// (.msh, .mesh). The cell type is the highest-dimensional one present; lower-dimensional
/// elements with a physical tag become tagged boundary facets.
Mesh read(const std::filesystem::path& file);

/// Gmsh MSH 2.2 or 4.1, ASCII or binary.
Mesh read_gmsh(const std::filesystem::path& file);
/// The same from bytes in memory; `name` is used in messages (fuzzing, tests).
Mesh read_gmsh(std::string_view bytes, std::string_view name);

/// MEDIT .mesh (ASCII).
Mesh read_medit(const std::filesystem::path& file);
Mesh read_medit(std::string_view bytes, std::string_view name);

}  // namespace fem::mesh
