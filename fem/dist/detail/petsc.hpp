// PETSc inside libfem_dist (private: the public headers name PETSc types only through the
// opaque handles in fem/dist/handles.hpp). Every PETSc call goes through FEM_PETSC, which turns
// an error code into a fem::Error naming the call; PETSc's own error printing is off.
#pragma once

#include <petsc/private/garbagecollector.h>
#include <petscksp.h>

#include <string>

#include "fem/error.hpp"

namespace fem::dist::detail {

[[noreturn]] void throw_petsc(PetscErrorCode code, const char* call, const char* file, int line);

/// Release a PETSc object without a collective call: PetscObjectDelayedDestroy puts it on the
/// garbage list, and the next PetscGarbageCleanup (collective, at the start of each collective
/// operation of fem::dist and at the end of the Session) destroys it on every process together.
/// After PetscFinalize (a holder outliving the Session) the object is left alone.
void delayed_destroy(PetscObject* object) noexcept;

/// Collective: destroy the objects every process has released.
void collect_garbage(MPI_Comm comm);

}  // namespace fem::dist::detail

#define FEM_PETSC(call)                                                                                     \
  do {                                                                                                      \
    const PetscErrorCode fem_petsc_code_ = (call);                                                          \
    if (fem_petsc_code_ != 0) ::fem::dist::detail::throw_petsc(fem_petsc_code_, #call, __FILE__, __LINE__); \
  } while (0)
