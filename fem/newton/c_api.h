/* The C ABI of libfem_newton: the library's nonlinear problems solved with Newton's method on a
 * space of a stored mesh, the Jacobian factorized through the store's cache (one symbolic
 * analysis for the whole solve). Plain C (C99); status codes and fem_last_error() as in
 * fem/c_api.h. See docs/c_api.md. */
#ifndef FEM_NEWTON_C_API_H
#define FEM_NEWTON_C_API_H

#include "fem/assembly/c_api.h"
#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  FEM_NEWTON_BRATU = 0,       /* -Δu = λ e^u, λ = parameter (no source) */
  FEM_NEWTON_QUASILINEAR = 1, /* -div((1 + u²)∇u) = f (the `fem nonlinear` driver's problem) */
  FEM_NEWTON_P_LAPLACIAN = 2  /* -div((ε² + |∇u|²)^((p-2)/2) ∇u) = f, p = parameter, ε = 1e-6 */
};

typedef struct fem_newton_problem {
  int32_t kind;
  double parameter;    /* λ (Bratu) or p (p-Laplacian); unused by the quasilinear problem */
  fem_function source; /* f (fn NULL: the constant `value`); must be 0 for Bratu */
} fem_newton_problem;

enum { FEM_LINE_SEARCH_NONE = 0, FEM_LINE_SEARCH_BACKTRACKING = 1 };

typedef struct fem_newton_options {
  double atol; /* ‖F‖ ≤ atol stops */
  double rtol; /* ‖F‖ ≤ rtol ‖F₀‖ stops */
  int32_t max_iterations;
  int32_t lag;         /* refresh the Jacobian every `lag` iterations (1: full Newton) */
  int32_t line_search; /* FEM_LINE_SEARCH_NONE or _BACKTRACKING */
} fem_newton_options;

typedef struct fem_newton_result {
  int32_t converged;
  char reason[32];   /* "converged_rtol", "diverged_nan", "diverged_linear_solve", ... */
  char message[256]; /* more words where there are some (a failed factorization's reason) */
  int32_t iterations;
  int32_t jacobian_refreshes; /* numeric factorizations */
  int32_t symbolic_analyses;  /* by this solve (0 when the Jacobian's pattern was analyzed before) */
  double initial_residual_norm;
  double residual_norm;
} fem_newton_result;

/* The defaults into *out (atol = rtol = 1e-10, 50 iterations, full Newton, no line search). */
int fem_newton_options_default(fem_newton_options* out);

/* Solve the problem on a scalar space with u = value on the facets of the given tags (ntags = 0:
 * the whole boundary; value NULL: 0). The initial guess is the f64 array under u_key when there
 * is one (its Dirichlet values are replaced), else zero. On convergence the solution is
 * published under u_key. Newton's own entries are `<u_key>/J` (the last Jacobian), `<u_key>/F`
 * (the last residual) and `<u_key>/u` (the last iterate, also when it did not converge).
 * Not converging is FEM_OK with result->converged = 0 and the reason (a NaN residual, a
 * Jacobian that cannot be factorized) in the result; u_key then keeps its previous entry.
 * options and result may be NULL. */
int fem_newton_solve(const fem_space* space, const fem_newton_problem* problem, const int32_t* tags,
                     int32_t ntags, const fem_function* value, const char* u_key,
                     const fem_newton_options* options, fem_newton_result* result);

#ifdef __cplusplus
}
#endif
#endif /* FEM_NEWTON_C_API_H */
