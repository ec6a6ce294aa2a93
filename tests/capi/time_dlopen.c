/* libfem_time's C ABI from a C host that links no fem library: it dlopen()s libfem_time alone
 * (RTLD_NOW | RTLD_LOCAL), publishes the 1D finite-element Laplacian on N = 50 interior nodes
 * (h = 1/(N+1), K = tridiag(-1, 2, -1)/h, M = h/6 tridiag(1, 4, 1): one pattern) with
 * fem_put_csr, and steps M u' + K u = f(t) with the load f(t) = g(t) M s, s_i = sin(π x_i) the
 * first mode (K s = λ M s, λ = 6/h² (1 − cos πh)/(2 + cos πh)) and g(t) = λ cos t − sin t, from
 * u0 = s: the semi-discrete solution is cos(t) s, so every error is the scheme's. Checked:
 *   - backward Euler and Crank–Nicolson equal their exact recurrences on the mode's amplitude
 *     ((1 + λdt) a' = a + dt g(t'), (1 + λdt/2) a' = (1 − λdt/2) a + dt/2 (g(t) + g(t'))) to 1e-10;
 *   - their errors at t = 1 fall 2x (BE) and 4x (CN) when dt halves;
 *   - a fixed-dt run of 10 steps factorizes once (fem_counter("solve.factorizations"));
 *   - Dirichlet values from a callback, the published state, the report;
 *   - Newmark keeps ½vᵀMv + ½uᵀKu to 1e-10 over 1000 steps, generalized-α (ρ∞ = 0.5) loses energy;
 *   - errors: bad dt, a NULL handle, max_dt ≤ 0, a failing callback, a wrong scheme: a status, a
 *     message in fem_last_error, and nothing changed.
 *
 * FEM_TIME_LIBRARY: a compile definition. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlopen_check.h"
#include "fem/c_api.h"
#include "fem/time/c_api.h"

#define N 50

static const double pi = 3.14159265358979323846;

DECLARE(fem_last_error);
DECLARE(fem_put_csr);
DECLARE(fem_get_f64);
DECLARE(fem_counter);
DECLARE(fem_time_options_default);
DECLARE(fem_time_first_order_create);
DECLARE(fem_time_second_order_create);
DECLARE(fem_time_destroy);
DECLARE(fem_time_step);
DECLARE(fem_time_advance_to);
DECLARE(fem_time_state);
DECLARE(fem_time_copy);
DECLARE(fem_time_publish);
DECLARE(fem_time_report_get);
DECLARE(fem_time_energy);
DECLARE(fem_time_set_stiffness);
DECLARE(fem_time_set_nonlinear);

static const double h = 1.0 / (N + 1);
static double lambda1; /* the first mode's eigenvalue */
static double mode[N], mass_mode[N];

/* tridiag(off, diagonal, off) under key. */
static void put_tridiagonal(const char* key, double diagonal, double off) {
  static int32_t offsets[N + 1], columns[3 * N];
  static double values[3 * N];
  int32_t nnz = 0;
  int i;
  offsets[0] = 0;
  for (i = 0; i < N; ++i) {
    if (i > 0) columns[nnz] = i - 1, values[nnz++] = off;
    columns[nnz] = i, values[nnz++] = diagonal;
    if (i < N - 1) columns[nnz] = i + 1, values[nnz++] = off;
    offsets[i + 1] = nnz;
  }
  OK(p_fem_put_csr(key, N, N, offsets, columns, values, NULL));
}

static void multiply(double diagonal, double off, const double* x, double* y) {
  int i;
  for (i = 0; i < N; ++i)
    y[i] = diagonal * x[i] + (i > 0 ? off * x[i - 1] : 0) + (i < N - 1 ? off * x[i + 1] : 0);
}

static double g(double t) { return lambda1 * cos(t) - sin(t); }

/* K(t) = (1 + t) K, in put_tridiagonal's order. */
static int growing_stiffness(double t, double* values, int64_t nnz, void* user) {
  int64_t k = 0;
  int i;
  (void)user;
  for (i = 0; i < N; ++i) {
    if (i > 0) values[k++] = (1 + t) * (-1 / h);
    values[k++] = (1 + t) * (2 / h);
    if (i < N - 1) values[k++] = (1 + t) * (-1 / h);
  }
  return k == nnz ? 0 : 1;
}

/* N(t, u) = t K u through the nonlinear path (with K in the store: (1 + t) K u in all) and its
 * Jacobian t K. */
static int growing_residual(double t, const double* u, double* out, int64_t n, void* user) {
  double Ku[N];
  (void)user;
  if (n != N) return 1;
  multiply(2 / h, -1 / h, u, Ku);
  for (int i = 0; i < N; ++i) out[i] += t * Ku[i];
  return 0;
}
static int growing_jacobian(double t, const double* u, int64_t n, double* values, int64_t nnz, void* user) {
  (void)u;
  if (n != N) return 1;
  if (growing_stiffness(t - 1, values, nnz, user) != 0) return 1; /* (1 + (t − 1)) K = t K */
  return 0;
}

/* f(t) = g(t) M s; *user counts the calls. */
static int load(double t, double* f, int64_t n, void* user) {
  int64_t i;
  for (i = 0; i < n; ++i) f[i] += g(t) * mass_mode[i];
  ++*(int*)user;
  return 0;
}

static int failing_load(double t, double* f, int64_t n, void* user) {
  (void)f, (void)n, (void)user;
  return t > 0.15 ? 7 : 0;
}

/* u = t at the two ends. */
static int boundary_values(double t, double* values, int64_t ndofs, void* user) {
  int64_t i;
  (void)user;
  for (i = 0; i < ndofs; ++i) values[i] = t;
  return 0;
}

/* max_i |u_i − a s_i| / max |s|. */
static double distance(const double* u, double a) {
  double e = 0;
  int i;
  for (i = 0; i < N; ++i) e = fmax(e, fabs(u[i] - a * mode[i]));
  return e;
}

static int64_t counter(const char* name) {
  int64_t value = -1;
  OK(p_fem_counter(name, &value));
  return value;
}

static void expect_error(const char* what, int status, int expected, const char* needle) {
  if (status != expected || strstr(p_fem_last_error(), needle) == NULL)
    FAIL("%s: expected status %d with '%s' in the message, got %d: '%s'", what, expected, needle, status,
         p_fem_last_error());
  else
    printf("%s: %d, '%s'\n", what, status, p_fem_last_error());
}

/* The error at t = 1 of `scheme` with steps dt (and, with `recurrence`, its distance from the
 * exact recurrence). */
static double run(const char* name, int scheme, double dt, double* recurrence) {
  fem_time_options o;
  fem_time_stepper* s = NULL;
  fem_time_report r;
  const double* u;
  double t = 0, a = 1, tn = 0;
  int64_t n = 0;
  int calls = 0, k;
  const int steps = (int)(1 / dt + 0.5);
  OK(p_fem_time_options_default(&o));
  o.scheme = scheme;
  o.dt = dt;
  OK(p_fem_time_first_order_create(name, "M", "K", &o, mode, N, NULL, 0, load, NULL, &calls, &s));
  for (k = 0; k < steps; ++k) {
    double taken = 0;
    OK(p_fem_time_step(s, INFINITY, &taken));
    if (fabs(taken - dt) > 1e-15) FAIL("%s: step %d took %.17g, not %.17g", name, k, taken, dt);
    if (scheme == FEM_TIME_BACKWARD_EULER)
      a = (a + dt * g(tn + dt)) / (1 + lambda1 * dt);
    else
      a = ((1 - lambda1 * dt / 2) * a + dt / 2 * (g(tn) + g(tn + dt))) / (1 + lambda1 * dt / 2);
    tn += dt;
  }
  OK(p_fem_time_state(s, &t, &u, &n));
  if (n != N || fabs(t - 1) > 1e-12) FAIL("%s: state at t = %.17g with n = %lld", name, t, (long long)n);
  *recurrence = distance(u, a);
  OK(p_fem_time_report_get(s, &r));
  if (r.accepted != steps || r.rejected != 0 || r.systems != 1 || r.dt_min != dt || r.dt_max != dt)
    FAIL("%s: report accepted %lld, rejected %lld, systems %lld, dt in [%g, %g]", name, (long long)r.accepted,
         (long long)r.rejected, (long long)r.systems, r.dt_min, r.dt_max);
  if (calls == 0) FAIL("%s: the load callback was never called", name);
  {
    const double error = distance(u, cos(1.0));
    p_fem_time_destroy(s);
    return error;
  }
}

int main(void) {
  void* library = open_library(FEM_TIME_LIBRARY);
  fem_time_options o;
  fem_time_stepper *s = NULL, *const sentinel = (fem_time_stepper*)&failures;
  fem_time_report r;
  double recurrence, e[3], t, u_before[N], u_after[N];
  int i, calls = 0;
  /* The store's functions through libfem_time's handle: libfem_shared is its dependency. */
  LOAD(library, fem_last_error);
  LOAD(library, fem_put_csr);
  LOAD(library, fem_get_f64);
  LOAD(library, fem_counter);
  LOAD(library, fem_time_options_default);
  LOAD(library, fem_time_first_order_create);
  LOAD(library, fem_time_second_order_create);
  LOAD(library, fem_time_destroy);
  LOAD(library, fem_time_step);
  LOAD(library, fem_time_advance_to);
  LOAD(library, fem_time_state);
  LOAD(library, fem_time_copy);
  LOAD(library, fem_time_publish);
  LOAD(library, fem_time_report_get);
  LOAD(library, fem_time_energy);
  LOAD(library, fem_time_set_stiffness);
  LOAD(library, fem_time_set_nonlinear);

  put_tridiagonal("K", 2 / h, -1 / h);
  put_tridiagonal("M", 4 * h / 6, h / 6);
  lambda1 = 6 / (h * h) * (1 - cos(pi * h)) / (2 + cos(pi * h));
  for (i = 0; i < N; ++i) mode[i] = sin(pi * (i + 1) * h);
  multiply(4 * h / 6, h / 6, mode, mass_mode);

  OK(p_fem_time_options_default(&o));
  if (o.scheme != FEM_TIME_BACKWARD_EULER || o.theta != 1 || o.tolerance != 0 ||
      !(o.absolute_tolerance < 0) || !isinf(o.dt_max) || o.beta != 0.25 || o.gamma != 0.5 || o.rho_inf != 1)
    FAIL("defaults: scheme %d, θ %g, tolerance %g, dt_max %g, β %g, γ %g, ρ∞ %g", o.scheme, o.theta,
         o.tolerance, o.dt_max, o.beta, o.gamma, o.rho_inf);

  /* Orders and the exact recurrences. */
  {
    const int schemes[2] = {FEM_TIME_BACKWARD_EULER, FEM_TIME_CRANK_NICOLSON};
    const char* names[2] = {"be", "cn"};
    const double want[2] = {2, 4};
    int j, k;
    for (j = 0; j < 2; ++j) {
      for (k = 0; k < 3; ++k) {
        char name[32];
        const double dt = 0.1 / (1 << k);
        snprintf(name, sizeof name, "%s%d", names[j], k);
        e[k] = run(name, schemes[j], dt, &recurrence);
        if (!(recurrence <= 1e-10))
          FAIL("%s, dt %g: %.3e from the exact recurrence", names[j], dt, recurrence);
      }
      printf("%s: errors %.4e %.4e %.4e, ratios %.3f %.3f\n", names[j], e[0], e[1], e[2], e[0] / e[1],
             e[1] / e[2]);
      for (k = 0; k < 2; ++k)
        if (!(fabs(e[k] / e[k + 1] - want[j]) <= 0.1 * want[j]))
          FAIL("%s: error ratio %.3f when dt halves, expected %g", names[j], e[k] / e[k + 1], want[j]);
    }
  }

  /* K(t) = (1 + t) K through fem_time_set_stiffness: Crank–Nicolson equals its exact recurrence
   * with K(t_n) explicit and K(t_{n+1}) implicit, and refactorizes every step. */
  {
    const int64_t before = counter("solve.factorizations");
    const double dt = 0.05;
    double a = 1, tn = 0;
    const double* u;
    int k;
    OK(p_fem_time_options_default(&o));
    o.scheme = FEM_TIME_CRANK_NICOLSON;
    o.dt = dt;
    OK(p_fem_time_first_order_create("kt", "M", "K", &o, mode, N, NULL, 0, load, NULL, &calls, &s));
    OK(p_fem_time_set_stiffness(s, growing_stiffness, NULL));
    for (k = 0; k < 10; ++k) {
      OK(p_fem_time_step(s, INFINITY, NULL));
      a = ((1 - lambda1 * (1 + tn) * dt / 2) * a + dt / 2 * (g(tn) + g(tn + dt))) /
          (1 + lambda1 * (1 + tn + dt) * dt / 2);
      tn += dt;
    }
    OK(p_fem_time_state(s, &t, &u, NULL));
    if (distance(u, a) > 1e-10) FAIL("K(t): %.3g from the exact recurrence", distance(u, a));
    if (counter("solve.factorizations") - before != 10)
      FAIL("K(t): %lld factorizations for 10 steps", (long long)(counter("solve.factorizations") - before));
    expect_error("a second stepper's K in t", p_fem_time_set_stiffness(NULL, growing_stiffness, NULL),
                 FEM_ERR_INVALID_ARGUMENT, "null");
    p_fem_time_destroy(s);
    put_tridiagonal("K", 2 / h, -1 / h); /* K as the other cases have it */
  }

  /* The same (1 + t) K as K + N(t, u), N = t K u, through fem_time_set_nonlinear: each step by
   * Newton (lagged Jacobians), the same recurrence to Newton's tolerance. */
  {
    const double dt = 0.05;
    double a = 1, tn = 0;
    const double* u;
    int k;
    OK(p_fem_time_options_default(&o));
    o.scheme = FEM_TIME_CRANK_NICOLSON;
    o.dt = dt;
    OK(p_fem_time_first_order_create("nl", "M", "K", &o, mode, N, NULL, 0, load, NULL, &calls, &s));
    OK(p_fem_time_set_nonlinear(s, growing_residual, growing_jacobian, NULL));
    for (k = 0; k < 10; ++k) {
      OK(p_fem_time_step(s, INFINITY, NULL));
      a = ((1 - lambda1 * (1 + tn) * dt / 2) * a + dt / 2 * (g(tn) + g(tn + dt))) /
          (1 + lambda1 * (1 + tn + dt) * dt / 2);
      tn += dt;
    }
    OK(p_fem_time_state(s, &t, &u, NULL));
    OK(p_fem_time_report_get(s, &r));
    if (distance(u, a) > 1e-8) FAIL("N(t, u): %.3g from the exact recurrence", distance(u, a));
    if (r.newton_iterations < 10 || r.jacobians < 1 || r.jacobians >= r.newton_iterations ||
        r.newton_failures != 0)
      FAIL("N(t, u): %lld Newton iterations, %lld Jacobians, %lld failures", (long long)r.newton_iterations,
           (long long)r.jacobians, (long long)r.newton_failures);
    expect_error("a residual without a Jacobian", p_fem_time_set_nonlinear(s, growing_residual, NULL, NULL),
                 FEM_ERR_INVALID_ARGUMENT, "both");
    p_fem_time_destroy(s);
  }

  /* A fixed-dt Crank–Nicolson run of 10 steps factorizes once; advance_to lands on t_end. */
  {
    const int64_t before = counter("solve.factorizations");
    double t_before = 0;
    OK(p_fem_time_options_default(&o));
    o.scheme = FEM_TIME_CRANK_NICOLSON;
    o.dt = 0.05;
    OK(p_fem_time_first_order_create("once", "M", "K", &o, mode, N, NULL, 0, load, NULL, &calls, &s));
    OK(p_fem_time_advance_to(s, 0.5));
    OK(p_fem_time_state(s, &t, NULL, NULL));
    OK(p_fem_time_report_get(s, &r));
    if (counter("solve.factorizations") - before != 1)
      FAIL("a fixed-step run of %lld steps made %lld factorizations", (long long)r.accepted,
           (long long)(counter("solve.factorizations") - before));
    if (fabs(t - 0.5) > 1e-12 || r.accepted != 10 || r.solves != 10 ||
        strcmp(r.scheme, "crank-nicolson") != 0)
      FAIL("advance_to(0.5): t %.17g, %lld steps, %lld solves, scheme '%s'", t, (long long)r.accepted,
           (long long)r.solves, r.scheme);
    /* The state published under keys. */
    OK(p_fem_time_publish(s, "once/state"));
    OK(p_fem_get_f64("once/state/u", u_after, N));
    OK(p_fem_time_copy(s, FEM_TIME_U, u_before, N));
    if (memcmp(u_after, u_before, sizeof u_before) != 0) FAIL("once/state/u is not the stepper's u");
    /* Errors on a first-order stepper. */
    expect_error("copy into a small buffer", p_fem_time_copy(s, FEM_TIME_U, u_before, N - 1),
                 FEM_ERR_BUFFER_TOO_SMALL, "capacity");
    expect_error("the velocity of a first-order stepper", p_fem_time_copy(s, FEM_TIME_V, u_before, N),
                 FEM_ERR_INVALID_ARGUMENT, "velocity");
    expect_error("the energy of a first-order stepper", p_fem_time_energy(s, &t, &t),
                 FEM_ERR_INVALID_ARGUMENT, "first-order");
    OK(p_fem_time_copy(s, FEM_TIME_U, u_before, N));
    OK(p_fem_time_state(s, &t_before, NULL, NULL));
    expect_error("max_dt 0", p_fem_time_step(s, 0.0, NULL), FEM_ERR_INVALID_ARGUMENT, "max_dt");
    expect_error("max_dt NaN", p_fem_time_step(s, NAN, NULL), FEM_ERR_INVALID_ARGUMENT, "max_dt");
    OK(p_fem_time_state(s, &t, NULL, NULL));
    OK(p_fem_time_copy(s, FEM_TIME_U, u_after, N));
    if (t != t_before || memcmp(u_after, u_before, sizeof u_before) != 0)
      FAIL("a refused step changed the state");
    p_fem_time_destroy(s);
  }

  /* Dirichlet values from a callback: u = t at both ends after every step. */
  {
    const int64_t ends[2] = {0, N - 1};
    const double* u;
    OK(p_fem_time_options_default(&o));
    o.scheme = FEM_TIME_BDF2;
    o.dt = 0.1;
    OK(p_fem_time_first_order_create("ends", "M", "K", &o, mode, N, ends, 2, NULL, boundary_values, NULL,
                                     &s));
    OK(p_fem_time_step(s, INFINITY, NULL));
    OK(p_fem_time_step(s, 0.05, NULL)); /* a shorter step */
    OK(p_fem_time_state(s, &t, &u, NULL));
    if (fabs(t - 0.15) > 1e-15 || fabs(u[0] - t) > 1e-12 || fabs(u[N - 1] - t) > 1e-12)
      FAIL("Dirichlet values: t %.17g, u[0] %.17g, u[N-1] %.17g", t, u[0], u[N - 1]);
    p_fem_time_destroy(s);
    {
      const int64_t unsorted[2] = {N - 1, 0};
      s = sentinel;
      expect_error(
          "unsorted Dirichlet unknowns",
          p_fem_time_first_order_create("e", "M", "K", &o, mode, N, unsorted, 2, NULL, NULL, NULL, &s),
          FEM_ERR_INVALID_ARGUMENT, "increasing");
      if (s != sentinel) FAIL("a failed create wrote *out");
    }
  }

  /* A load callback that fails after the first step: the step stops, the state stays. */
  {
    OK(p_fem_time_options_default(&o));
    o.dt = 0.1;
    OK(p_fem_time_first_order_create("fails", "M", "K", &o, mode, N, NULL, 0, failing_load, NULL, NULL, &s));
    OK(p_fem_time_step(s, INFINITY, NULL));
    OK(p_fem_time_copy(s, FEM_TIME_U, u_before, N));
    expect_error("a failing load callback", p_fem_time_step(s, INFINITY, NULL), FEM_ERR_INTERNAL,
                 "load callback returned 7");
    OK(p_fem_time_state(s, &t, NULL, NULL));
    OK(p_fem_time_copy(s, FEM_TIME_U, u_after, N));
    if (fabs(t - 0.1) > 1e-15 || memcmp(u_after, u_before, sizeof u_before) != 0)
      FAIL("a failed step changed the state: t %.17g", t);
    expect_error("advance_to with a failing load", p_fem_time_advance_to(s, 1.0), FEM_ERR_INTERNAL,
                 "t = 0.2");
    p_fem_time_destroy(s);
  }

  /* Newmark on the chain (modes 1 and 7 released from rest): the energy stays, one factorization
   * for the steps (and one of M for the initial acceleration). Generalized-α, ρ∞ = 0.5, damps. */
  {
    double u0[N], v0[N], kinetic, strain, energy0, drift = 0;
    int step;
    int64_t before;
    for (i = 0; i < N; ++i) u0[i] = mode[i] + 0.1 * sin(7 * pi * (i + 1) * h), v0[i] = 0;
    OK(p_fem_time_options_default(&o));
    o.scheme = FEM_TIME_NEWMARK;
    o.dt = 0.01;
    before = counter("solve.factorizations");
    OK(p_fem_time_second_order_create("swing", "M", "K", &o, u0, v0, N, NULL, 0, NULL, NULL, &s));
    OK(p_fem_time_energy(s, &kinetic, &strain));
    energy0 = kinetic + strain;
    if (!(kinetic == 0 && strain > 0)) FAIL("Newmark at rest: kinetic %g, strain %g", kinetic, strain);
    for (step = 0; step < 1000; ++step) {
      OK(p_fem_time_step(s, INFINITY, NULL));
      OK(p_fem_time_energy(s, &kinetic, &strain));
      drift = fmax(drift, fabs(kinetic + strain - energy0) / energy0);
    }
    OK(p_fem_time_state(s, &t, NULL, NULL));
    printf("newmark: 1000 steps to t = %g, energy drift %.2e, %lld factorizations\n", t, drift,
           (long long)(counter("solve.factorizations") - before));
    if (!(drift <= 1e-10)) FAIL("Newmark's energy drifts by %.3e", drift);
    if (fabs(t - 10) > 1e-9) FAIL("Newmark at t = %.17g after 1000 steps of 0.01", t);
    if (counter("solve.factorizations") - before != 2)
      FAIL("Newmark made %lld factorizations, expected 2 (M, the step's matrix)",
           (long long)(counter("solve.factorizations") - before));
    OK(p_fem_time_copy(s, FEM_TIME_V, v0, N));
    OK(p_fem_time_copy(s, FEM_TIME_A, u_after, N));
    {
      /* A step cut by max_dt is a step of that size. */
      double taken = 0;
      OK(p_fem_time_step(s, 0.005, &taken));
      if (fabs(taken - 0.005) > 1e-15) FAIL("a second-order step of at most 0.005 took %.17g", taken);
    }
    OK(p_fem_time_advance_to(s, 10.05));
    OK(p_fem_time_state(s, &t, NULL, NULL));
    if (fabs(t - 10.05) > 1e-9) FAIL("Newmark advance_to(10.05) ends at %.17g", t);
    p_fem_time_destroy(s);

    o.scheme = FEM_TIME_GENERALIZED_ALPHA;
    o.rho_inf = 0.5;
    o.dt = 0.05;
    {
      const int64_t fixed[1] = {0};
      OK(p_fem_time_second_order_create("damped", "M", "K", &o, u0, v0, N, fixed, 1, NULL, NULL, &s));
    }
    OK(p_fem_time_energy(s, &kinetic, &strain));
    energy0 = kinetic + strain;
    OK(p_fem_time_advance_to(s, 5.0));
    OK(p_fem_time_energy(s, &kinetic, &strain));
    OK(p_fem_time_copy(s, FEM_TIME_U, u_after, N));
    printf("generalized-alpha (0.5): energy %.6g -> %.6g\n", energy0, kinetic + strain);
    if (!(kinetic + strain < energy0) || u_after[0] != 0)
      FAIL("generalized-α: energy %g -> %g, u[fixed] %g", energy0, kinetic + strain, u_after[0]);
    p_fem_time_destroy(s);
  }

  /* Errors: a status, a message, nothing made or changed. */
  OK(p_fem_time_options_default(&o));
  s = sentinel;
  expect_error("dt 0",
               p_fem_time_first_order_create("e", "M", "K", &o, mode, N, NULL, 0, NULL, NULL, NULL, &s),
               FEM_ERR_INVALID_ARGUMENT, "dt");
  o.dt = NAN;
  expect_error("dt NaN",
               p_fem_time_second_order_create("e", "M", "K", &o, mode, mode, N, NULL, 0, NULL, NULL, &s),
               FEM_ERR_INVALID_ARGUMENT, "dt");
  o.dt = 0.1;
  o.scheme = FEM_TIME_NEWMARK;
  expect_error("a second-order scheme, first-order stepper",
               p_fem_time_first_order_create("e", "M", "K", &o, mode, N, NULL, 0, NULL, NULL, NULL, &s),
               FEM_ERR_INVALID_ARGUMENT, "second-order");
  o.scheme = 42;
  expect_error("an unknown scheme",
               p_fem_time_first_order_create("e", "M", "K", &o, mode, N, NULL, 0, NULL, NULL, NULL, &s),
               FEM_ERR_INVALID_ARGUMENT, "scheme");
  o.scheme = FEM_TIME_BACKWARD_EULER;
  expect_error("a wrong size",
               p_fem_time_first_order_create("e", "M", "K", &o, mode, N - 1, NULL, 0, NULL, NULL, NULL, &s),
               FEM_ERR_INVALID_ARGUMENT, "u0");
  expect_error("a missing M",
               p_fem_time_first_order_create("e", "no/M", "K", &o, mode, N, NULL, 0, NULL, NULL, NULL, &s),
               FEM_ERR_NOT_FOUND, "no/M");
  expect_error("NULL options",
               p_fem_time_first_order_create("e", "M", "K", NULL, mode, N, NULL, 0, NULL, NULL, NULL, &s),
               FEM_ERR_INVALID_ARGUMENT, "options");
  if (s != sentinel) FAIL("a failed create wrote *out");
  expect_error("step on NULL", p_fem_time_step(NULL, 1.0, NULL), FEM_ERR_INVALID_ARGUMENT, "stepper");
  expect_error("advance_to on NULL", p_fem_time_advance_to(NULL, 1.0), FEM_ERR_INVALID_ARGUMENT, "stepper");
  expect_error("state of NULL", p_fem_time_state(NULL, &t, NULL, NULL), FEM_ERR_INVALID_ARGUMENT, "stepper");
  expect_error("report of NULL", p_fem_time_report_get(NULL, &r), FEM_ERR_INVALID_ARGUMENT, "stepper");
  p_fem_time_destroy(NULL);

  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
