// libfem_shared: the store every kernel library shares, and the vocabulary types that travel
// through it (meshes, CSR patterns and matrices, arrays), plus the error family.
#pragma once

#include "fem/array.hpp"
#include "fem/atomic_file.hpp"
#include "fem/csr.hpp"
#include "fem/error.hpp"
#include "fem/lagrange.hpp"
#include "fem/memory.hpp"
#include "fem/mesh.hpp"
#include "fem/null_space.hpp"
#include "fem/reference_cell.hpp"
#include "fem/store.hpp"
#include "fem/threads.hpp"
#include "fem/type_name.hpp"
