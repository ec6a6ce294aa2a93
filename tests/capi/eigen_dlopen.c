/* libfem_eigen's C ABI from a C host that links no fem library: it dlopen()s libfem_eigen alone
 * (RTLD_NOW | RTLD_LOCAL), publishes the 1D finite-element Laplacian on N = 300 interior nodes
 * (h = 1/(N+1), K = tridiag(-1, 2, -1)/h, M = h/6 tridiag(1, 4, 1)) with fem_put_csr, and checks
 * the eigenpairs against the analytic ones, θ_k = kπh:
 *   consistent mass  λ_k = 6/h² (1 − cos θ_k)/(2 + cos θ_k),
 *   lumped           λ_k = (2 − 2 cos θ_k)/h² (M's corners raised to 5h/6: every row sums to h),
 *   mode k           x_i = sin(θ_k (i + 1)).
 * N is above the dense path's size, so shift-invert Lanczos runs. Checked: the smallest, the
 * nearest a shift, an interval (whole and cut by count), lumped mass, a constrained unknown, the
 * Sturm counts, the published keys (shapes, values, M-orthonormal vectors), a repeated call
 * factorizing nothing, and the errors (nothing published).
 *
 * FEM_EIGEN_LIBRARY: a compile definition. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlopen_check.h"
#include "fem/c_api.h"
#include "fem/eigen/c_api.h"

#define N 300

static const double pi = 3.14159265358979323846;

DECLARE(fem_last_error);
DECLARE(fem_put_csr);
DECLARE(fem_view_get);
DECLARE(fem_view_release);
DECLARE(fem_contains);
DECLARE(fem_version);
DECLARE(fem_counter);
DECLARE(fem_eigen_options_default);
DECLARE(fem_eigen_solve);
DECLARE(fem_eigen_count_below);

static const double h = 1.0 / (N + 1);

static double theta(int k, int size) { return k * pi / (size + 1); }
static double consistent(int k, int size) {
  const double c = cos(theta(k, size));
  return 6 / (h * h) * (1 - c) / (2 + c);
}
static double lumped(int k, int size) { return (2 - 2 * cos(theta(k, size))) / (h * h); }

/* The n × n tridiagonal matrix tridiag(off, diagonal, off) under key, its two corners `corner`. */
static void put_tridiagonal(const char* key, double diagonal, double off, double corner) {
  static int32_t offsets[N + 1], columns[3 * N];
  static double values[3 * N];
  int32_t nnz = 0;
  int i;
  offsets[0] = 0;
  for (i = 0; i < N; ++i) {
    if (i > 0) columns[nnz] = i - 1, values[nnz++] = off;
    columns[nnz] = i, values[nnz++] = i == 0 || i == N - 1 ? corner : diagonal;
    if (i < N - 1) columns[nnz] = i + 1, values[nnz++] = off;
    offsets[i + 1] = nnz;
  }
  OK(p_fem_put_csr(key, N, N, offsets, columns, values, NULL));
}

/* y = M x for M = h/6 tridiag(1, 4, 1). */
static double mass_product(const double* x, const double* y) {
  double s = 0;
  int i;
  for (i = 0; i < N; ++i) {
    double mx = 4 * x[i];
    if (i > 0) mx += x[i - 1];
    if (i < N - 1) mx += x[i + 1];
    s += y[i] * mx * h / 6;
  }
  return s;
}

/* The published f64 array under key: its values (malloc'ed), its shape checked. */
static double* published(const char* key, int32_t ndim, int64_t rows, int64_t cols) {
  fem_view v;
  double* out;
  OK(p_fem_view_get(key, &v));
  if (v.dtype != FEM_F64 || v.ndim != ndim || v.shape[0] != rows || (ndim == 2 && v.shape[1] != cols)) {
    FAIL("'%s': dtype %d, %d dimensions, shape [%lld, %lld]; expected f64 [%lld%s%lld]", key, v.dtype, v.ndim,
         (long long)v.shape[0], (long long)(v.ndim > 1 ? v.shape[1] : 0), (long long)rows,
         ndim == 2 ? ", " : "", ndim == 2 ? (long long)cols : 0LL);
    exit(1);
  }
  out = malloc((size_t)(v.size > 0 ? v.size : 1) * sizeof(double));
  memcpy(out, v.data, (size_t)v.size * sizeof(double));
  p_fem_view_release(&v);
  return out;
}

/* Checks the keys under prefix against result and the analytic pairs exact(first + j): relative
 * eigenvalue error ≤ 1e-10, residuals ≤ 1e-8, vectors M-orthonormal and parallel to the modes. */
static void check(const char* what, const char* prefix, const fem_eigen_result* r, int modes, int first,
                  double (*exact)(int, int), int size, int offset, int mass_checks) {
  char key[128];
  double *values, *vectors, *residuals;
  int j, i;
  printf(
      "%s: %d modes, %s, shift %.6g, sturm count %lld, %lld missing, residual %.2e, orthogonality %.2e%s%s\n",
      what, r->modes, r->method, r->shift, (long long)r->sturm_count, (long long)r->missing, r->residual_max,
      r->orthogonality_max, r->message[0] ? "; " : "", r->message);
  if (r->modes != modes || r->n != N)
    FAIL("%s: %d modes of n = %lld; expected %d of %d", what, r->modes, (long long)r->n, modes, N);
  if (!r->converged) FAIL("%s: not converged (%s)", what, r->message);
  if (strstr(r->method, "Lanczos") == NULL) FAIL("%s: method '%s', not Lanczos", what, r->method);
  snprintf(key, sizeof key, "%s/eigenvalues", prefix);
  values = published(key, 1, modes, 0);
  snprintf(key, sizeof key, "%s/vectors", prefix);
  vectors = published(key, 2, modes, N);
  snprintf(key, sizeof key, "%s/residuals", prefix);
  residuals = published(key, 1, modes, 0);
  for (j = 0; j < modes && j < r->modes; ++j) {
    const double want = exact(first + j, size), error = fabs(values[j] - want) / want;
    const double* x = vectors + (size_t)j * N;
    double dot = 0, norm = 0;
    if (!(error <= 1e-10))
      FAIL("%s: eigenvalue %d is %.17g, exactly %.17g (relative error %.2e)", what, j, values[j], want,
           error);
    if (!(residuals[j] <= 1e-8)) FAIL("%s: residual %d is %.2e", what, j, residuals[j]);
    if (j > 0 && !(values[j] >= values[j - 1])) FAIL("%s: eigenvalues not ascending at %d", what, j);
    for (i = 0; i < offset; ++i)
      if (x[i] != 0) FAIL("%s: mode %d is %g at constrained unknown %d", what, j, x[i], i);
    for (i = offset; i < N; ++i) {
      const double s = sin(theta(first + j, size) * (i - offset + 1));
      dot += s * x[i];
      norm += s * s;
    }
    if (mass_checks) {
      const double xmx = mass_product(x, x);
      if (!(fabs(xmx - 1) <= 1e-9)) FAIL("%s: mode %d has xᵀMx = %.17g", what, j, xmx);
      if (j > 0 && !(fabs(mass_product(x, vectors + (size_t)(j - 1) * N)) <= 1e-9))
        FAIL("%s: modes %d and %d are not M-orthogonal", what, j - 1, j);
    }
    {
      double xx = 0;
      for (i = 0; i < N; ++i) xx += x[i] * x[i];
      if (!(1 - fabs(dot) / sqrt(norm * xx) <= 1e-8))
        FAIL("%s: mode %d is not sin(θ_%d (i + 1)): cos angle %.17g", what, j, first + j,
             dot / sqrt(norm * xx));
    }
  }
  free(values);
  free(vectors);
  free(residuals);
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

int main(void) {
  void* eigen_library = open_library(FEM_EIGEN_LIBRARY);
  fem_eigen_options o;
  fem_eigen_result r;
  int64_t count = -1, factorizations;
  uint64_t v1 = 0, v2 = 0;
  int32_t present = 1;
  /* The store's functions through libfem_eigen's handle: libfem_shared is its dependency. */
  LOAD(eigen_library, fem_last_error);
  LOAD(eigen_library, fem_put_csr);
  LOAD(eigen_library, fem_view_get);
  LOAD(eigen_library, fem_view_release);
  LOAD(eigen_library, fem_contains);
  LOAD(eigen_library, fem_version);
  LOAD(eigen_library, fem_counter);
  LOAD(eigen_library, fem_eigen_options_default);
  LOAD(eigen_library, fem_eigen_solve);
  LOAD(eigen_library, fem_eigen_count_below);

  put_tridiagonal("K", 2 / h, -1 / h, 2 / h);
  put_tridiagonal("M", 4 * h / 6, h / 6, 4 * h / 6);
  /* Its corners raised to 5h/6: every row sums to h, so that its lumped mass is h I. */
  put_tridiagonal("Mc", 4 * h / 6, h / 6, 5 * h / 6);
  OK(p_fem_eigen_options_default(&o));
  if (o.which != FEM_EIGEN_SMALLEST || o.count != 6 || !o.verify || o.dense_below >= N)
    FAIL("defaults: which %d, count %d, verify %d, dense below %d", o.which, o.count, o.verify,
         o.dense_below);

  /* The 6 smallest (options NULL: the defaults). */
  OK(p_fem_eigen_solve("K", "M", NULL, "small", &r));
  check("smallest", "small", &r, 6, 1, consistent, N, 0, 1);
  if (r.sturm_count != -1) FAIL("smallest: sturm count %lld, expected -1", (long long)r.sturm_count);
  /* Again: the factorization of K − σM is a cached entry; new versions of the keys. */
  OK(p_fem_version("small/eigenvalues", &v1));
  factorizations = counter("solve.factorizations");
  OK(p_fem_eigen_solve("K", "M", &o, "small", &r));
  OK(p_fem_version("small/eigenvalues", &v2));
  if (counter("solve.factorizations") != factorizations)
    FAIL("a repeated solve made %lld factorizations",
         (long long)(counter("solve.factorizations") - factorizations));
  if (!(v2 > v1)) FAIL("small/eigenvalues kept version %llu", (unsigned long long)v1);

  /* The 4 nearest the middle of λ10 and λ11: λ9 .. λ12; 10 below the shift. */
  o.which = FEM_EIGEN_NEAREST;
  o.count = 4;
  o.shift = 0.5 * (consistent(10, N) + consistent(11, N));
  OK(p_fem_eigen_solve("K", "M", &o, "near", &r));
  check("nearest", "near", &r, 4, 9, consistent, N, 0, 1);
  if (r.sturm_count != 10) FAIL("nearest: sturm count %lld, expected 10", (long long)r.sturm_count);
  OK(p_fem_eigen_count_below("K", "M", o.shift, NULL, &count));
  if (count != 10) FAIL("count_below between λ10 and λ11: %lld", (long long)count);

  /* An interval around λ20 .. λ30: all 11, then the lowest 5 of them. */
  o.which = FEM_EIGEN_INTERVAL;
  o.count = 20;
  o.lower = consistent(20, N) - 0.25 * (consistent(20, N) - consistent(19, N));
  o.upper = consistent(30, N) + 0.25 * (consistent(31, N) - consistent(30, N));
  OK(p_fem_eigen_solve("K", "M", &o, "band", &r));
  check("interval", "band", &r, 11, 20, consistent, N, 0, 1);
  if (r.sturm_count != 11 || r.missing != 0)
    FAIL("interval: sturm count %lld, missing %lld", (long long)r.sturm_count, (long long)r.missing);
  o.count = 5;
  OK(p_fem_eigen_solve("K", "M", &o, "band5", &r));
  check("interval, count 5", "band5", &r, 5, 20, consistent, N, 0, 1);
  if (r.sturm_count != 11 || r.missing != 6)
    FAIL("interval, count 5: sturm count %lld, missing %lld", (long long)r.sturm_count, (long long)r.missing);

  /* Lumped mass: Mc lumped is h I. */
  OK(p_fem_eigen_options_default(&o));
  o.lumped = 1;
  o.count = 4;
  OK(p_fem_eigen_solve("K", "Mc", &o, "lumped", &r));
  check("lumped", "lumped", &r, 4, 1, lumped, N, 0, 0);
  OK(p_fem_eigen_count_below("K", "Mc", 0.5 * (lumped(5, N) + lumped(6, N)), &o, &count));
  if (count != 5) FAIL("lumped count_below between λ5 and λ6: %lld", (long long)count);

  /* Unknown 0 eliminated: the chain of N − 1 unknowns, θ_k = kπ/N, zero at unknown 0. */
  {
    const int32_t fixed[1] = {0};
    OK(p_fem_eigen_options_default(&o));
    o.constrained = fixed;
    o.nconstrained = 1;
    o.count = 3;
    OK(p_fem_eigen_solve("K", "M", &o, "clamped", &r));
    check("constrained", "clamped", &r, 3, 1, consistent, N - 1, 1, 1);
    OK(p_fem_eigen_count_below("K", "M", 0.5 * (consistent(3, N - 1) + consistent(4, N - 1)), &o, &count));
    if (count != 3) FAIL("constrained count_below between λ3 and λ4: %lld", (long long)count);
  }

  /* Errors: a status, a message, nothing published. */
  expect_error("a missing M", p_fem_eigen_solve("K", "no/such/M", NULL, "err", &r), FEM_ERR_NOT_FOUND,
               "no/such/M");
  OK(p_fem_eigen_options_default(&o));
  o.which = 7;
  expect_error("an unknown which", p_fem_eigen_solve("K", "M", &o, "err", &r), FEM_ERR_INVALID_ARGUMENT,
               "which");
  OK(p_fem_eigen_options_default(&o));
  o.count = 0;
  expect_error("count 0", p_fem_eigen_solve("K", "M", &o, "err", &r), FEM_ERR_INVALID_ARGUMENT, "count");
  OK(p_fem_eigen_options_default(&o));
  o.which = FEM_EIGEN_INTERVAL;
  o.lower = 2;
  o.upper = 1;
  expect_error("an empty interval", p_fem_eigen_solve("K", "M", &o, "err", &r), FEM_ERR_INVALID_ARGUMENT,
               "interval");
  expect_error("a null out_prefix", p_fem_eigen_solve("K", "M", NULL, NULL, &r), FEM_ERR_INVALID_ARGUMENT,
               "out_prefix");
  expect_error("a prefix with a space", p_fem_eigen_solve("K", "M", NULL, "e r", &r), FEM_ERR_INVALID_KEY,
               "e r");
  expect_error("a null count", p_fem_eigen_count_below("K", "M", 1.0, NULL, NULL), FEM_ERR_INVALID_ARGUMENT,
               "count");
  {
    /* K unsymmetric: its (0, 1) entry changed. */
    static int32_t offsets[3] = {0, 2, 4}, columns[4] = {0, 1, 0, 1};
    static double values[4] = {2, -1, -0.5, 2};
    static int32_t identity_offsets[3] = {0, 1, 2}, identity_columns[2] = {0, 1};
    static double ones[2] = {1, 1};
    OK(p_fem_put_csr("U", 2, 2, offsets, columns, values, NULL));
    OK(p_fem_put_csr("I2", 2, 2, identity_offsets, identity_columns, ones, NULL));
    expect_error("an unsymmetric K", p_fem_eigen_solve("U", "I2", NULL, "err", &r), FEM_ERR_INVALID_ARGUMENT,
                 "K 'U'");
    columns[1] = 0; /* a repeated column */
    expect_error("a bad CSR pattern", p_fem_put_csr("U", 2, 2, offsets, columns, values, NULL),
                 FEM_ERR_INVALID_ARGUMENT, "increasing");
  }
  OK(p_fem_contains("err/eigenvalues", &present));
  if (present) FAIL("a failed call published err/eigenvalues");

  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
