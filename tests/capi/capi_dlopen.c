/* Issue 21's test of the kernel libraries' C ABIs, as a C host would use them: this program
 * links no fem library. It dlopen()s libfem_mesh, libfem_assembly and libfem_solve separately
 * with RTLD_NOW | RTLD_LOCAL, finds every function with dlsym, and solves
 *   -Δu = 2π² sin(πx) sin(πy) on the unit square, u = 0 on the boundary
 * mesh → matrix → factorization → 10 solves, by store keys only. Checks: the counters show one
 * pattern build, one symbolic analysis and one numeric factorization; the solution equals the
 * `fem poisson` driver's on the same mesh (every nodal value, read from the driver's VTU, and its
 * --json min/max and DOF count); it approximates
 * u = sin(πx) sin(πy) at the nodes to O(h²) (the error falls by about 4 from n = 16 to 32).
 *
 *   capi_dlopen <driver json file>
 * FEM_MESH_LIBRARY, FEM_ASSEMBLY_LIBRARY, FEM_SOLVE_LIBRARY, FEM_EXECUTABLE: compile definitions. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlopen_check.h"
#include "fem/assembly/c_api.h"
#include "fem/c_api.h"
#include "fem/mesh/c_api.h"
#include "fem/newton/c_api.h" /* not used here: compiled as C99 all the same */
#include "fem/solve/c_api.h"

static const double pi = 3.14159265358979323846;

DECLARE(fem_last_error);
DECLARE(fem_counter);
DECLARE(fem_view_get);
DECLARE(fem_view_release);
DECLARE(fem_mesh_generate);
DECLARE(fem_mesh_info);
DECLARE(fem_assemble_diffusion);
DECLARE(fem_assemble_source);
DECLARE(fem_apply_dirichlet);
DECLARE(fem_interpolate);
DECLARE(fem_factorize);
DECLARE(fem_solve_keys);

/* f = 2π² sin(πx) sin(πy), the driver's --source, at `count` points; ctx counts the points. */
static void source(int64_t count, const double* x, double* values, void* ctx) {
  int64_t i;
  for (i = 0; i < count; ++i) values[i] = 2 * (pi * pi) * sin(pi * x[2 * i]) * sin(pi * x[2 * i + 1]);
  *(int64_t*)ctx += count;
}

static void exact(int64_t count, const double* x, double* values, void* ctx) {
  int64_t i;
  (void)ctx;
  for (i = 0; i < count; ++i) values[i] = sin(pi * x[2 * i]) * sin(pi * x[2 * i + 1]);
}

static int64_t counter(const char* name) {
  int64_t value = -1;
  OK(p_fem_counter(name, &value));
  return value;
}

/* max |u - v| over two stored f64 vectors of the same size; their size into *n. */
static double max_difference(const char* u_key, const char* v_key, int64_t* n) {
  fem_view u, v;
  double worst = 0;
  int64_t i;
  OK(p_fem_view_get(u_key, &u));
  OK(p_fem_view_get(v_key, &v));
  if (u.dtype != FEM_F64 || v.dtype != FEM_F64 || u.ndim != 1 || u.size != v.size) {
    FAIL("'%s' and '%s' are not f64 vectors of one size (%lld, %lld values)", u_key, v_key, (long long)u.size,
         (long long)v.size);
    exit(1);
  }
  for (i = 0; i < u.size; ++i) {
    const double d = fabs(((const double*)u.data)[i] - ((const double*)v.data)[i]);
    if (!(d <= worst)) worst = d; /* NaN wins */
  }
  *n = u.size;
  p_fem_view_release(&u);
  p_fem_view_release(&v);
  return worst;
}

/* min and max of a stored f64 vector. */
static void range(const char* key, double* lo, double* hi) {
  fem_view u;
  int64_t i;
  OK(p_fem_view_get(key, &u));
  *lo = INFINITY;
  *hi = -INFINITY;
  for (i = 0; i < u.size; ++i) {
    const double x = ((const double*)u.data)[i];
    if (x < *lo) *lo = x;
    if (x > *hi) *hi = x;
  }
  p_fem_view_release(&u);
}

/* The number after "name": inside the JSON text [begin, end), or NAN. */
static double json_number(const char* begin, const char* end, const char* name) {
  char quoted[64];
  const char* p;
  snprintf(quoted, sizeof quoted, "\"%s\"", name);
  p = strstr(begin, quoted);
  if (p == NULL || p >= end) return NAN;
  p += strlen(quoted);
  while (*p == ' ' || *p == ':') ++p;
  return strtod(p, NULL);
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  char* text;
  long size;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = malloc((size_t)size + 1);
  if (fread(text, 1, (size_t)size, f) != (size_t)size) size = 0;
  text[size] = '\0';
  fclose(f);
  return text;
}

/* The Float64 point data `u` of a VTU written with raw appended data (the driver's format: a
 * UInt64 byte count, then the values) into a malloc'ed array; NULL when it is not there. */
static double* vtu_u(const char* path, int64_t* count) {
  char *bytes = read_file(path), *appended, *array, *offset;
  uint64_t nbytes;
  double* values;
  if (bytes == NULL) return NULL;
  /* The XML head is text up to the appended data's '_' marker. */
  appended = strstr(bytes, "<AppendedData encoding=\"raw\">");
  array = strstr(bytes, "Name=\"u\"");
  offset = array ? strstr(array, "offset=\"") : NULL;
  if (appended == NULL || offset == NULL || offset > appended || strchr(appended, '_') == NULL) {
    free(bytes);
    return NULL;
  }
  appended = strchr(appended, '_') + 1 + strtol(offset + 8, NULL, 10);
  memcpy(&nbytes, appended, sizeof nbytes);
  *count = (int64_t)(nbytes / sizeof(double));
  values = malloc(nbytes > 0 ? nbytes : 1);
  memcpy(values, appended + sizeof nbytes, nbytes);
  free(bytes);
  return values;
}

/* Assemble, constrain, factorize and solve -Δu = f, u = 0 on the mesh gen:square-tri3:n under
 * `prefix`/...; `solves` solves by keys. Returns the max nodal error against the exact solution. */
static double poisson(int n, const char* prefix, int solves, int64_t* dofs) {
  char spec[64], mesh[64], A[64], b[64], u[64], u_exact[64];
  fem_space V;
  fem_function f = {source, NULL, 0.0, 0};
  fem_function u_ex = {exact, NULL, 0.0, 1};
  fem_factorization_info info;
  int64_t points = 0, size = 0;
  uint64_t version = 0, previous = 0;
  int k;
  snprintf(spec, sizeof spec, "gen:square-tri3:%d", n);
  snprintf(mesh, sizeof mesh, "%s/mesh", prefix);
  snprintf(A, sizeof A, "%s/A", prefix);
  snprintf(b, sizeof b, "%s/b", prefix);
  snprintf(u, sizeof u, "%s/u", prefix);
  snprintf(u_exact, sizeof u_exact, "%s/exact", prefix);
  f.ctx = &points;
  V.mesh_key = mesh;
  V.degree = 1;
  V.components = 1;

  OK(p_fem_mesh_generate(spec, mesh, NULL));
  OK(p_fem_assemble_diffusion(&V, NULL, A, NULL));
  OK(p_fem_assemble_source(&V, &f, b, 0, NULL));
  if (points <= 0) FAIL("the source callback was never called");
  OK(p_fem_apply_dirichlet(&V, NULL, 0, NULL, -1, A, b));
  OK(p_fem_factorize(A, NULL, &info));
  printf("%s: %s factorization (%s ordering) of n = %lld, %lld factor nonzeros, %lld bytes\n", A,
         info.backend, info.ordering, (long long)info.n, (long long)info.factor_nonzeros,
         (long long)info.bytes);
  for (k = 0; k < solves; ++k) {
    OK(p_fem_solve_keys(A, b, u, NULL, &version));
    if (version <= previous)
      FAIL("solve %d published '%s' at version %llu after %llu", k, u, (unsigned long long)version,
           (unsigned long long)previous);
    previous = version;
  }
  OK(p_fem_interpolate(&V, &u_ex, u_exact, NULL));
  *dofs = info.n;
  {
    const double error = max_difference(u, u_exact, &size);
    if (size != info.n)
      FAIL("'%s' holds %lld values, the factorization is of n = %lld", u, (long long)size, (long long)info.n);
    return error;
  }
}

int main(int argc, char** argv) {
  void *mesh_library, *assembly_library, *solve_library;
  void *last_error_via_assembly, *last_error_via_solve;
  const char* json_path;
  char command[12288], vtu_path[4096];
  char* json;
  double e16, e32, lo, hi, driver_lo, driver_hi, driver_dofs, h;
  int64_t dofs16, dofs32;
  fem_mesh_summary info;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <driver json file>\n", argv[0]);
    return 2;
  }
  json_path = argv[1];

  /* Three separate local loads: each library gets its own lookup scope. */
  mesh_library = open_library(FEM_MESH_LIBRARY);
  assembly_library = open_library(FEM_ASSEMBLY_LIBRARY);
  solve_library = open_library(FEM_SOLVE_LIBRARY);

  /* The store's functions come from libfem_shared, a dependency of each: dlsym on a handle
   * searches the library and its dependencies. All three handles must reach the same one. */
  LOAD(mesh_library, fem_last_error);
  LOAD(mesh_library, fem_counter);
  LOAD(mesh_library, fem_view_get);
  LOAD(mesh_library, fem_view_release);
  last_error_via_assembly = symbol(assembly_library, "assembly_library", "fem_last_error");
  last_error_via_solve = symbol(solve_library, "solve_library", "fem_last_error");
  {
    void* via_mesh;
    memcpy(&via_mesh, &p_fem_last_error, sizeof via_mesh);
    if (via_mesh != last_error_via_assembly || via_mesh != last_error_via_solve)
      FAIL("fem_last_error differs between the three handles: more than one libfem_shared is loaded");
  }
  LOAD(mesh_library, fem_mesh_generate);
  LOAD(mesh_library, fem_mesh_info);
  LOAD(assembly_library, fem_assemble_diffusion);
  LOAD(assembly_library, fem_assemble_source);
  LOAD(assembly_library, fem_apply_dirichlet);
  LOAD(assembly_library, fem_interpolate);
  LOAD(solve_library, fem_factorize);
  LOAD(solve_library, fem_solve_keys);
  /* A kernel library's function is not visible through another's handle (RTLD_LOCAL). */
  dlerror();
  if (dlsym(mesh_library, "fem_solve_keys") != NULL)
    FAIL("fem_solve_keys is visible through libfem_mesh's handle");

  /* Errors of every library reach the one fem_last_error(). */
  if (p_fem_factorize("no/such/matrix", NULL, NULL) != FEM_ERR_NOT_FOUND ||
      strstr(p_fem_last_error(), "no/such/matrix") == NULL)
    FAIL("a missing key in libfem_solve: expected FEM_ERR_NOT_FOUND naming it, got '%s'", p_fem_last_error());

  /* The run the issue asks for: n = 32, 10 solves. */
  e32 = poisson(32, "c32", 10, &dofs32);
  if (counter("assembly.pattern_builds") != 1)
    FAIL("assembly.pattern_builds = %lld, expected 1", (long long)counter("assembly.pattern_builds"));
  if (counter("assembly.dofmap_builds") != 1)
    FAIL("assembly.dofmap_builds = %lld, expected 1", (long long)counter("assembly.dofmap_builds"));
  if (counter("solve.symbolic_analyses") != 1)
    FAIL("solve.symbolic_analyses = %lld, expected 1", (long long)counter("solve.symbolic_analyses"));
  if (counter("solve.factorizations") != 1)
    FAIL("solve.factorizations = %lld, expected 1", (long long)counter("solve.factorizations"));
  if (counter("solve.solves") != 10)
    FAIL("solve.solves = %lld, expected 10", (long long)counter("solve.solves"));
  if (counter("solve.cache_hits") < 10)
    FAIL("solve.cache_hits = %lld, expected at least 10", (long long)counter("solve.cache_hits"));
  OK(p_fem_mesh_info("c32/mesh", &info));
  if (info.num_nodes != dofs32 || strcmp(info.cell_type, "tri3") != 0 || info.num_cells != 2 * 32 * 32)
    FAIL("mesh info: %lld nodes (%lld DOFs), %lld %s cells", (long long)info.num_nodes, (long long)dofs32,
         (long long)info.num_cells, info.cell_type);

  /* The driver on the same problem. */
  snprintf(vtu_path, sizeof vtu_path, "%s.vtu", json_path);
  snprintf(command, sizeof command,
           "'%s' poisson gen:square-tri3:32 --source '2*pi^2*sin(pi*x)*sin(pi*y)' --dirichlet all=0 --quiet "
           "--json '%s' --output '%s'",
           FEM_EXECUTABLE, json_path, vtu_path);
  remove(json_path);
  remove(vtu_path);
  if (system(command) != 0) {
    fprintf(stderr, "the driver failed: %s\n", command);
    return 1;
  }
  json = read_file(json_path);
  if (json == NULL) {
    fprintf(stderr, "the driver wrote no %s\n", json_path);
    return 1;
  }
  {
    const char* solution = strstr(json, "\"solution\"");
    const char* end = solution ? strchr(solution, '}') : NULL;
    if (solution == NULL || end == NULL) {
      fprintf(stderr, "no \"solution\" object in %s:\n%s\n", json_path, json);
      return 1;
    }
    driver_lo = json_number(solution, end, "min");
    driver_hi = json_number(solution, end, "max");
    driver_dofs = json_number(json, json + strlen(json), "dofs");
  }
  range("c32/u", &lo, &hi);
  printf("C ABI: u in [%.17g, %.17g]; driver: [%.17g, %.17g]\n", lo, hi, driver_lo, driver_hi);
  if (!(fabs(hi - driver_hi) <= 1e-12 * fabs(driver_hi)) ||
      !(fabs(lo - driver_lo) <= 1e-12 * fabs(driver_hi)))
    FAIL("the solution's range [%.17g, %.17g] differs from the driver's [%.17g, %.17g]", lo, hi, driver_lo,
         driver_hi);
  if (driver_dofs != (double)dofs32) FAIL("%lld DOFs, the driver had %g", (long long)dofs32, driver_dofs);
  free(json);
  {
    /* Every nodal value: P1 on a generated mesh numbers its DOFs as the mesh's nodes. */
    int64_t count = 0, i;
    double worst = 0;
    double* driver_u = vtu_u(vtu_path, &count);
    fem_view u;
    if (driver_u == NULL) FAIL("no point data u in the driver's %s", vtu_path);
    OK(p_fem_view_get("c32/u", &u));
    if (driver_u != NULL && count != u.size)
      FAIL("the driver's u has %lld values, ours %lld", (long long)count, (long long)u.size);
    for (i = 0; driver_u != NULL && i < count && i < u.size; ++i) {
      const double d = fabs(driver_u[i] - ((const double*)u.data)[i]);
      if (!(d <= worst)) worst = d; /* NaN wins */
    }
    printf("C ABI against the driver, every node: max difference %.3e\n", worst);
    if (!(worst <= 1e-12 * fabs(driver_hi))) FAIL("the solution differs from the driver's by %.3e", worst);
    p_fem_view_release(&u);
    free(driver_u);
  }

  /* The discretization error: O(h²) at the nodes, and it converges at that rate. */
  e16 = poisson(16, "c16", 1, &dofs16);
  h = 1.0 / 32;
  printf("max nodal error: %.3e (n = 16), %.3e (n = 32), ratio %.3f\n", e16, e32, e16 / e32);
  if (!(e32 > 0 && e32 <= 2 * h * h))
    FAIL("max nodal error %.3e at h = 1/32 is not below 2h² = %.3e", e32, 2 * h * h);
  if (!(e16 / e32 > 3.5 && e16 / e32 < 4.5))
    FAIL("the error falls by %.3f from h = 1/16 to 1/32, not ~4", e16 / e32);

  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
