/* The C ABI of libfem_time: steppers that a host drives step by step, for first-order systems
 * M u' + K u = f(t) (backward Euler, Crank–Nicolson, θ-method, BDF2; fixed or adaptive steps)
 * and second-order ones M u'' + C u' + K u = f(t), C = αM + βK (Newmark, generalized-α), on two
 * stored fem::CsrMatrix entries of one pattern. Each scheme's matrix is a store entry named by
 * its coefficients (`<name>/A/<cM>/<cK>`) whose factorization is the store's cache: a fixed-step
 * run factorizes once. Plain C (C99); status codes and fem_last_error() as in fem/c_api.h.
 * See docs/c_api.md and docs/time.md. */
#ifndef FEM_TIME_C_API_H
#define FEM_TIME_C_API_H

#include "fem/c_api.h"
#include "fem/solve/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Schemes, as fem::time::Scheme. The first four are first-order, the last two second-order. */
enum {
  FEM_TIME_BACKWARD_EULER = 0,
  FEM_TIME_CRANK_NICOLSON = 1,
  FEM_TIME_THETA = 2,
  FEM_TIME_BDF2 = 3,
  FEM_TIME_NEWMARK = 4,
  FEM_TIME_GENERALIZED_ALPHA = 5
};

typedef struct fem_time_options {
  int32_t scheme; /* FEM_TIME_*: first-order schemes for fem_time_first_order_create, Newmark and
                     generalized-α for fem_time_second_order_create */
  double dt;      /* the (first) step, > 0 */
  double t0;      /* the time of the initial state */
  /* First order. */
  double theta;              /* FEM_TIME_THETA: 0.5 ≤ θ ≤ 1 */
  int32_t rannacher_steps;   /* Crank–Nicolson: the first steps as two backward-Euler half steps */
  double tolerance;          /* > 0: adaptive steps, dt on the ladder dt·2^k: each step's error
                                |e_i| ≤ absolute_tolerance + tolerance·max|u| (first order: step
                                doubling; second order: (β − 1/6) h² (a_{n+1} − a_n)) */
  double absolute_tolerance; /* < 0: tolerance·max|u0| (u0 ≠ 0), else tolerance */
  double dt_min, dt_max;     /* the adaptive ladder's bounds (dt_max INFINITY: none) */
  /* Second order. */
  double beta, gamma;                       /* Newmark (¼, ½: average acceleration) */
  double rho_inf;                           /* generalized-α: the high-frequency spectral radius, 0 .. 1 */
  double rayleigh_mass, rayleigh_stiffness; /* C = rayleigh_mass M + rayleigh_stiffness K */
  /* The linear solver (zero: the defaults). */
  fem_solve_options linear;
} fem_time_options;

/* Adds f(t) into f (n values, zero on entry). Nonzero: a failure (the step fails, see below). */
typedef int (*fem_time_load_fn)(double t, double* f, int64_t n, void* user);
/* The values of the constrained unknowns at t into g (ndofs values, in the order of the dofs
 * given). Nonzero: a failure. */
typedef int (*fem_time_values_fn)(double t, double* g, int64_t ndofs, void* user);

/* A stepper (first or second order). One thread at a time per stepper. */
typedef struct fem_time_stepper fem_time_stepper;

typedef struct fem_time_report {
  char scheme[32]; /* "backward-euler", "crank-nicolson", "theta", "bdf2", "newmark", "generalized-alpha" */
  int64_t accepted, rejected; /* steps */
  double dt_min, dt_max;      /* of the accepted steps (INFINITY and 0 before the first) */
  int64_t solves;             /* linear solves (half steps and step doubling included) */
  int64_t systems;            /* distinct matrices made (each factorized once while cached) */
  int64_t distinct_dts;       /* distinct step sizes tried */
  double factorize_seconds, solve_seconds;
  double t;  /* the current time */
  double dt; /* the step the next fem_time_step tries */
  /* Nonlinear steps (fem_time_set_nonlinear): Newton iterations, Jacobians factorized, steps
   * retried at half the step because Newton failed. */
  int64_t newton_iterations, jacobians, newton_failures;
} fem_time_report;

/* The defaults into *out: backward Euler, dt 0 (to be set), t0 0, θ 1, no Rannacher steps, fixed
 * steps (tolerance 0, dt_min 0, dt_max INFINITY), Newmark β ¼, γ ½, ρ∞ 1, no damping, the
 * default linear solver. */
int fem_time_options_default(fem_time_options* out);

/* A first-order stepper for M u' + K u = f(t) from u0 (n values, the rows of M) at options->t0,
 * u = g(t) at dirichlet_dofs (sorted, ndofs of them; NULL when ndofs is 0): g from `values`
 * (NULL: zero), f from `load` (NULL: none); both get `user`, and are called during
 * fem_time_step and fem_time_advance_to only. Its matrices are published as
 * `<name>/A/<cM %a>/<cK %a>` (user data; the factorizations are their cache entries). u0 is
 * taken as given (the first step imposes g(t1)). On failure *out is unchanged. */
/* K(t) when K depends on t: its nnz values on K's pattern at t (zeroed before the call); nonzero
 * aborts the step, as the other callbacks. */
typedef int (*fem_time_stiffness_fn)(double t, double* values, int64_t nnz, void* user);

int fem_time_first_order_create(const char* name, const char* M_key, const char* K_key,
                                const fem_time_options* options, const double* u0, int64_t n,
                                const int64_t* dirichlet_dofs, int64_t ndofs, fem_time_load_fn load,
                                fem_time_values_fn values, void* user, fem_time_stepper** out);
/* A first-order stepper's K from now on is K(t) from `stiffness` (NULL: K as it is in the store):
 * K(t_n) in a scheme's explicit part, K(t_{n+1}) in its matrix, refactorized every step on one
 * symbolic analysis. */
int fem_time_set_stiffness(fem_time_stepper* stepper, fem_time_stiffness_fn stiffness, void* user);

/* A part of the stiffness that depends on u: M u' + K u + N(t, u) = f(t). `residual` adds N(t, u)
 * into N (n values); `jacobian` writes dN/du at (t, u) as the nnz values of K's pattern (zeroed
 * before the call). Each step is then solved by Newton's method, its Jacobian M + c(K + dN/du)
 * lagged across steps while the lagged iterations converge fast (newton's adaptive lagging); a
 * step whose Newton solve fails is retried at half the step, down to dt_min. NULL for both: linear
 * again. Nonzero returns abort the step, as the other callbacks. */
typedef int (*fem_time_residual_fn)(double t, const double* u, double* N, int64_t n, void* user);
typedef int (*fem_time_jacobian_fn)(double t, const double* u, int64_t n, double* values, int64_t nnz,
                                    void* user);
int fem_time_set_nonlinear(fem_time_stepper* stepper, fem_time_residual_fn residual,
                           fem_time_jacobian_fn jacobian, void* user);

/* A second-order stepper for M u'' + C u' + K u = f(t) from u0, v0 (n values each) at options->t0,
 * u = 0 at the `fixed` unknowns (nfixed of them; NULL when 0). The initial acceleration is the
 * consistent one, M a0 = f(t0) − C v0 − K u0: `load` is called now, and during steps. */
int fem_time_second_order_create(const char* name, const char* M_key, const char* K_key,
                                 const fem_time_options* options, const double* u0, const double* v0,
                                 int64_t n, const int64_t* fixed, int64_t nfixed, fem_time_load_fn load,
                                 void* user, fem_time_stepper** out);

/* Frees the stepper (NULL: nothing). Its store entries stay. */
void fem_time_destroy(fem_time_stepper* stepper);

/* One accepted step of at most max_dt (> 0; INFINITY: the stepper's own step): adaptive steps are
 * retried at half the step until their error passes. dt_taken (may be NULL) gets the step. A
 * step cut by max_dt is a step of that size (first and second order alike: a new matrix unless
 * it lies on the ladder dt·2^k).
 * A callback that returns nonzero stops the step: FEM_ERR_INTERNAL, the message naming the
 * callback, its return value and t. A failed step (callback, solve, dt_min reached) leaves the
 * state (t, u, v, a) as it was. */
int fem_time_step(fem_time_stepper* stepper, double max_dt, double* dt_taken);

/* Steps until t_end, the last step cut to land on it. A failure stops at the last accepted step.
 * t_end at or before t: nothing. */
int fem_time_advance_to(fem_time_stepper* stepper, double t_end);

/* The time and the state: *u points to the stepper's n values (valid until the next step or
 * fem_time_destroy). Any of t, u, n may be NULL. */
int fem_time_state(const fem_time_stepper* stepper, double* t, const double** u, int64_t* n);

enum { FEM_TIME_U = 0, FEM_TIME_V = 1, FEM_TIME_A = 2 };
/* Copies u, v or a (FEM_TIME_U, _V, _A; v and a: second order only) into out (capacity values;
 * FEM_ERR_BUFFER_TOO_SMALL leaves out untouched). */
int fem_time_copy(const fem_time_stepper* stepper, int32_t which, double* out, int64_t capacity);

/* Publishes the state as f64 arrays [n]: `<prefix>/u`, and `<prefix>/v`, `<prefix>/a` for a
 * second-order stepper (each a new version). */
int fem_time_publish(const fem_time_stepper* stepper, const char* prefix);

int fem_time_report_get(const fem_time_stepper* stepper, fem_time_report* report);

/* ½ vᵀMv and ½ uᵀKu of a second-order stepper (either may be NULL). */
int fem_time_energy(const fem_time_stepper* stepper, double* kinetic, double* strain);

#ifdef __cplusplus
}
#endif
#endif /* FEM_TIME_C_API_H */
