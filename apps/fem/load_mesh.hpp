// Loading the mesh a subcommand is given: a file (any format fem::mesh::read knows) or a
// generated mesh `gen:<shape>-<cell>:<n>` for tests and benchmarks without files:
//   gen:interval-line2:N, gen:square-tri3:N, gen:square-quad4:N, gen:cube-tet4:N, gen:cube-hex8:N
#pragma once

#include <string>

#include "fem/mesh.hpp"

namespace fem::app {

/// The mesh named by `spec`. A missing file is a fem::Error naming it; a malformed gen: spec
/// is a fem::InvalidArgument listing the accepted forms.
Mesh load_mesh(const std::string& spec);

}  // namespace fem::app
