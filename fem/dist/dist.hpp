// libfem_dist: the kernels on many processes (MPI + PETSc). See docs/dist.md.
#pragma once

#include "fem/dist/distribute.hpp"
#include "fem/dist/index_map.hpp"
#include "fem/dist/matrix.hpp"
#include "fem/dist/runtime.hpp"
#include "fem/dist/session.hpp"
#include "fem/dist/solver.hpp"
