/* The C ABI of libfem_assembly: the library's forms assembled on a space of a stored mesh into
 * matrix and vector keys, and Dirichlet conditions applied to them. Plain C (C99); status codes
 * and fem_last_error() as in fem/c_api.h. See docs/c_api.md.
 *
 * Matrices are published as fem::CsrMatrix entries (one pattern object per space, cached in
 * the store with the DOF map: repeated assemblies build the connectivity once), vectors as 1-D
 * f64 arrays (read them with fem_get_f64 or fem_view_get). */
#ifndef FEM_ASSEMBLY_C_API_H
#define FEM_ASSEMBLY_C_API_H

#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Lagrange space of `degree` (1 or 2) with `components` components (1: scalar; the mesh's
 * dimension for elasticity) on the mesh published under mesh_key. */
typedef struct fem_space {
  const char* mesh_key;
  int32_t degree;
  int32_t components;
} fem_space;

/* A scalar function at `count` points at once: x holds count × gdim coordinates, point after
 * point; the value at point i goes to values[i]. */
typedef void (*fem_batch_fn)(int64_t count, const double* x, double* values, void* ctx);

/* A function of position: fn(…, ctx) when fn is not NULL, else the constant `value`.
 * Calls are serialized by the library (never two at once) unless `concurrent` is nonzero,
 * which promises that fn may run on several threads at the same time. Either way a call may
 * come from a thread other than the caller's (the assembly's OpenMP threads). fn and ctx are
 * used during the call only. */
typedef struct fem_function {
  fem_batch_fn fn;
  void* ctx;
  double value;
  int32_t concurrent;
} fem_function;

enum {
  FEM_COEF_CONSTANT = 0, /* `value` everywhere */
  FEM_COEF_PER_CELL = 1, /* the f64 array entry under `key`, one value per cell */
  FEM_COEF_PER_TAG = 2,  /* tag_values[i] on cells of tag tags[i]; `value` elsewhere (NaN: an error) */
  FEM_COEF_FUNCTION = 3  /* function.fn at the quadrature points */
};

/* A coefficient of a form. A NULL fem_coefficient pointer means the form's default (1 for
 * diffusion, mass and Young's modulus; 0.3 for Poisson's ratio). */
typedef struct fem_coefficient {
  int32_t kind;
  double value;
  const char* key;
  const int32_t* tags;
  const double* tag_values;
  int32_t ntags;
  fem_function function;
} fem_coefficient;

/* ∫ k ∇u·∇v on a scalar space, published under matrix_key. Without constraints the constants
 * are its null space: the matrix carries it (as the `fem poisson` driver's does), so that a pure
 * Neumann problem is solved with zero mean; fem_apply_dirichlet removes it when its conditions
 * fix the constants. */
int fem_assemble_diffusion(const fem_space* space, const fem_coefficient* k, const char* matrix_key,
                           uint64_t* version);
/* ∫ rho u·v (every component). */
int fem_assemble_mass(const fem_space* space, const fem_coefficient* rho, const char* matrix_key,
                      uint64_t* version);
/* Linear elasticity from Young's modulus E and Poisson's ratio nu on a space with one component
 * per dimension; in 2D plane strain, or plane stress when plane_stress is nonzero. Carries the
 * free rigid motions as its null space, like diffusion. */
int fem_assemble_elasticity(const fem_space* space, const fem_coefficient* E, const fem_coefficient* nu,
                            int32_t plane_stress, const char* matrix_key, uint64_t* version);
/* ∫ f v on a scalar space (f: NULL is 0), published under vector_key; with accumulate nonzero
 * and an entry under vector_key, added to it (sizes checked). */
int fem_assemble_source(const fem_space* space, const fem_function* f, const char* vector_key,
                        int32_t accumulate, uint64_t* version);
/* ∫_Γ g v over the boundary facets with the given tags (ntags = 0: the whole boundary, tagged or
 * not), each facet once, on a scalar space; a tagged interior facet is an error (a flux is a
 * boundary condition). accumulate as for fem_assemble_source. */
int fem_assemble_neumann(const fem_space* space, const int32_t* tags, int32_t ntags, const fem_function* g,
                         const char* vector_key, int32_t accumulate, uint64_t* version);
/* u = value(x) on the facets with the given tags (ntags = 0: the whole boundary) on component
 * `component` (-1: all), imposed on the matrix under matrix_key and the vector under vector_key
 * symmetrically (lifting into the vector); both are republished (new versions; the matrix keeps
 * its pattern object, so a cached symbolic analysis stays valid). value NULL means 0. On failure
 * neither entry changes. */
int fem_apply_dirichlet(const fem_space* space, const int32_t* tags, int32_t ntags, const fem_function* value,
                        int32_t component, const char* matrix_key, const char* vector_key);
/* The nodal interpolant of f on a scalar space, published under vector_key (e.g. an exact
 * solution to compare with, or a Newton guess). */
int fem_interpolate(const fem_space* space, const fem_function* f, const char* vector_key, uint64_t* version);
/* The number of DOFs of the space (builds or reads its cached DOF map). */
int fem_space_dofs(const fem_space* space, int64_t* dofs);

#ifdef __cplusplus
}
#endif
#endif /* FEM_ASSEMBLY_C_API_H */
