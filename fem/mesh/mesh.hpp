// libfem_mesh: everything that makes a fem::Mesh (readers, generators) or consumes one for
// output and inspection (VTU writer, checks). The Mesh type itself is in fem/mesh.hpp (shared).
#pragma once

#include "fem/mesh.hpp"
#include "fem/mesh/check.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/partition.hpp"
#include "fem/mesh/read.hpp"
#include "fem/mesh/vtu.hpp"
#include "fem/mesh/write_gmsh.hpp"
