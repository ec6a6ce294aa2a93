/* The C ABI of libfem_solve: factorizations of stored matrices through the store's cache (the
 * symbolic analysis once per pattern, the numeric factorization once per matrix version), and
 * solves with them, plain or transposed, one right-hand side or a block. Plain C (C99); status
 * codes and fem_last_error() as in fem/c_api.h. See docs/c_api.md. */
#ifndef FEM_SOLVE_C_API_H
#define FEM_SOLVE_C_API_H

#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Backends and orderings, as fem::solve::Backend and fem::solve::Ordering. AUTOMATIC: CHOLMOD
 * for symmetric matrices (falling back to LU when not positive definite), UMFPACK otherwise;
 * the LDLT/LU of Eigen without SuiteSparse. A backend or ordering missing from this build is
 * FEM_ERR_NOT_COMPILED. */
enum {
  FEM_BACKEND_AUTOMATIC = 0,
  FEM_BACKEND_CHOLMOD = 1,
  FEM_BACKEND_UMFPACK = 2,
  FEM_BACKEND_KLU = 3,
  FEM_BACKEND_LDLT = 4,
  FEM_BACKEND_LU = 5
};
enum {
  FEM_ORDERING_AUTOMATIC = 0,
  FEM_ORDERING_AMD = 1,
  FEM_ORDERING_COLAMD = 2,
  FEM_ORDERING_METIS = 3,
  FEM_ORDERING_NATURAL = 4
};

/* A zero-initialized struct is the defaults, and so is a NULL pointer. */
typedef struct fem_solve_options {
  int32_t backend;
  int32_t ordering;
  int32_t refinement_steps;     /* iterative refinement steps per solve (0: none) */
  double max_relative_residual; /* refuse solutions with ‖b − Ax‖/‖b‖ above it (unless backward
                                   stable); 0: the default 1e-6; INFINITY: no check */
} fem_solve_options;

typedef struct fem_factorization_info {
  char backend[16];  /* "cholmod", "umfpack", ...: the backend that factorized */
  char ordering[16]; /* the ordering actually used */
  int64_t n;
  int64_t factor_nonzeros;
  int64_t bytes;                /* of the numeric factorization */
  int64_t symbolic_analyses;    /* made by this factorization object itself (0: it reused a cached one) */
  int64_t factorizations;       /* numeric factorizations of this object */
  int32_t null_space_dimension; /* of a singular matrix solved with its null space, else 0 */
} fem_factorization_info;

/* The defaults into *out. */
int fem_solve_options_default(fem_solve_options* out);

/* The factorization of the fem::CsrMatrix under matrix_key at its current version: from the
 * cache, or made (and cached) now. info may be NULL. A matrix that cannot be factorized is
 * FEM_ERR_NUMERICAL with the backend's reason. */
int fem_factorize(const char* matrix_key, const fem_solve_options* options, fem_factorization_info* info);

/* x = A⁻¹b (or A⁻ᵀb) with A the n × n matrix under matrix_key, through the cached factorization
 * (made when missing). b and x hold n values and may not overlap. On failure x is unchanged. */
int fem_solve(const char* matrix_key, const double* b, double* x, int64_t n,
              const fem_solve_options* options);
int fem_solve_transpose(const char* matrix_key, const double* b, double* x, int64_t n,
                        const fem_solve_options* options);
/* The same for nrhs right-hand sides at once: B and X are n × nrhs, column-major. */
int fem_solve_block(const char* matrix_key, const double* B, double* X, int64_t n, int64_t nrhs,
                    const fem_solve_options* options);
int fem_solve_transpose_block(const char* matrix_key, const double* B, double* X, int64_t n, int64_t nrhs,
                              const fem_solve_options* options);

/* By keys only: the f64 array under b_key, of shape [n] or [n, nrhs] (row-major as every store
 * array: right-hand side k is column k), is solved for and x, of the same shape, is published
 * under x_key (b_key itself is allowed). version may be NULL. */
int fem_solve_keys(const char* matrix_key, const char* b_key, const char* x_key,
                   const fem_solve_options* options, uint64_t* version);
int fem_solve_transpose_keys(const char* matrix_key, const char* b_key, const char* x_key,
                             const fem_solve_options* options, uint64_t* version);

#ifdef __cplusplus
}
#endif
#endif /* FEM_SOLVE_C_API_H */
