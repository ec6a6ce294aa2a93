/* The C ABI of libfem_eigen: the generalized symmetric eigenproblem K x = λ M x (natural
 * frequencies and mode shapes) of two stored matrices, by shift-invert Lanczos on the store's
 * factorization cache, with Sturm counts that prove no eigenvalue was missed. The eigenpairs
 * are published under store keys. Plain C (C99); status codes and fem_last_error() as in
 * fem/c_api.h. See docs/c_api.md. */
#ifndef FEM_EIGEN_C_API_H
#define FEM_EIGEN_C_API_H

#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which eigenvalues, as fem::eigen::Which. */
enum {
  FEM_EIGEN_SMALLEST = 0, /* the `count` smallest (K positive semi-definite: a stiffness) */
  FEM_EIGEN_NEAREST = 1,  /* the `count` nearest `shift` */
  FEM_EIGEN_INTERVAL = 2  /* every one in [lower, upper], the lowest `count` of them at most */
};

typedef struct fem_eigen_options {
  int32_t which; /* FEM_EIGEN_SMALLEST, _NEAREST or _INTERVAL */
  int32_t count; /* eigenvalues wanted (an interval's: at most) */
  double shift;  /* FEM_EIGEN_NEAREST */
  double lower;  /* FEM_EIGEN_INTERVAL: [lower, upper] */
  double upper;
  /* Unknowns eliminated from the problem (homogeneous Dirichlet conditions; NULL when
   * nconstrained is 0): the eigenvectors are zero there and no eigenvalue of theirs exists. */
  const int32_t* constrained;
  int64_t nconstrained;
  int32_t lumped;         /* nonzero: M replaced by its row sums (a lumped mass) */
  int32_t verify;         /* nonzero: Sturm counts check the window of the results (and find missed
                             copies of multiple eigenvalues by deflation) */
  double tolerance;       /* relative tolerance of the Ritz values, in (0, 1) */
  int32_t max_iterations; /* Lanczos restarts, at least 1 */
  int32_t subspace;       /* Lanczos basis size (0: max(2 count + 1, count + 20)) */
  int32_t dense_below;    /* problems of at most this many free unknowns are solved densely */
} fem_eigen_options;

typedef struct fem_eigen_result {
  int64_t n;           /* unknowns of K (the full numbering, constrained ones included) */
  int32_t modes;       /* eigenpairs found and published */
  int32_t converged;   /* every wanted pair found, every residual below 1e-8 */
  int64_t sturm_count; /* NEAREST: eigenvalues below the shift; INTERVAL: in [lower, upper];
                          -1 for SMALLEST */
  int64_t missing;     /* eigenvalues the Sturm counts show in the window but not found, or an
                          interval's beyond `count` */
  int32_t restarts;    /* deflated Lanczos runs after the first */
  double shift;        /* the operator's shift */
  double residual_max; /* the largest backward error ‖Kx − λMx‖ / ((‖K‖∞ + |λ|‖M‖∞)‖x‖) */
  double orthogonality_max;      /* max |XᵀMX − I| */
  int64_t operator_applications; /* solves with the shifted factorization */
  int64_t sturm_factorizations;  /* LDLᵀ factorizations made for Sturm counts */
  char method[64];               /* "shift-invert Lanczos (Spectra), cholmod", "dense (...)" */
  char backend[16];              /* the operator's factorization backend ("" for the dense path) */
  char message[256]; /* the solver's log lines, "; "-separated (truncated): warnings, nudged shifts */
} fem_eigen_result;

/* The defaults into *out: SMALLEST, count 6, tolerance 1e-10, 1000 iterations, verify on, dense
 * below 200 unknowns, nothing constrained, consistent mass. */
int fem_eigen_options_default(fem_eigen_options* out);

/* Eigenpairs of K x = λ M x, K and M symmetric fem::CsrMatrix entries of one size (M positive
 * definite on the free unknowns). Published, each a new version:
 *   <out_prefix>/eigenvalues  f64 [modes], ascending
 *   <out_prefix>/vectors      f64 [modes, n]: row j is mode j (M-orthonormal, zero at the
 *                             constrained unknowns), i.e. the n x modes block column-major
 *   <out_prefix>/residuals    f64 [modes], the backward error of each pair
 * The factorizations of K − σM are derived store entries of K and M (a repeated call factorizes
 * nothing). Not converging or missing eigenvalues is FEM_OK with result->converged = 0 and
 * result->missing; a K − σM that cannot be factorized is FEM_ERR_NUMERICAL; bad options or
 * matrices FEM_ERR_INVALID_ARGUMENT; a failed call publishes nothing. options NULL: the
 * defaults; result may be NULL. */
int fem_eigen_solve(const char* K_key, const char* M_key, const fem_eigen_options* options,
                    const char* out_prefix, fem_eigen_result* result);

/* The number of eigenvalues below sigma (Sylvester's inertia of a cached LDLᵀ of K − σM on the
 * free unknowns of options: its constrained unknowns and lumped are used; NULL: none). */
int fem_eigen_count_below(const char* K_key, const char* M_key, double sigma,
                          const fem_eigen_options* options, int64_t* count);

#ifdef __cplusplus
}
#endif
#endif /* FEM_EIGEN_C_API_H */
