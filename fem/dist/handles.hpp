// PETSc's object types as PETSc itself declares them (`typedef struct _p_Mat *Mat;`), so that
// public headers of fem::dist can hand out a Mat, Vec or KSP without including petsc.h. A
// translation unit that includes PETSc's headers as well sees the same, compatible typedefs.
#pragma once

typedef struct _p_Mat* Mat;
typedef struct _p_Vec* Vec;
typedef struct _p_KSP* KSP;
typedef struct _p_PC* PC;
typedef struct _p_IS* IS;
typedef int PetscErrorCode;
