/* libfem_flow's arrays and its projection stepper from a C host that links no fem library: it
 * dlopen()s libfem_mesh (for a generated mesh) and libfem_flow, and checks Stokes Poiseuille
 * flow exact to rounding with the velocity's Dirichlet data given as arrays (built from
 * fem_flow_nodes and fem_flow_boundary_nodes), the same flow through tagged conditions, forces on
 * node sets, and a projection stepper (a ramped inflow from a C callback, an outflow) that
 * settles on Poiseuille flow with its three matrices factorized at create and none in 1200
 * steps; then the errors.
 *
 * FEM_FLOW_LIBRARY, FEM_MESH_LIBRARY: compile definitions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlopen_check.h"
#include "fem/c_api.h"
#include "fem/flow/c_api.h"
#include "fem/mesh/c_api.h"

DECLARE(fem_last_error);
DECLARE(fem_view_get);
DECLARE(fem_view_release);
DECLARE(fem_counter);
DECLARE(fem_mesh_generate);
DECLARE(fem_mesh_tag);
DECLARE(fem_flow_options_default);
DECLARE(fem_flow_sizes_get);
DECLARE(fem_flow_solve_steady);
DECLARE(fem_flow_solve_steady_dofs);
DECLARE(fem_flow_force);
DECLARE(fem_flow_force_nodes);
DECLARE(fem_flow_nodes);
DECLARE(fem_flow_boundary_nodes);
DECLARE(fem_flow_stepper_create);
DECLARE(fem_flow_stepper_destroy);
DECLARE(fem_flow_stepper_step);
DECLARE(fem_flow_stepper_state);
DECLARE(fem_flow_stepper_publish);
DECLARE(fem_flow_stepper_report_get);
DECLARE(fem_flow_stepper_force);

static int64_t counter(const char* name) {
  int64_t value = -1;
  OK(p_fem_counter(name, &value));
  return value;
}

/* y(1 − y) at count points (x, y). */
static void parabola(int64_t count, const double* x, double* values, void* ctx) {
  int64_t i;
  (void)ctx;
  for (i = 0; i < count; ++i) values[i] = x[2 * i + 1] * (1 - x[2 * i + 1]);
}

/* The stepper's data: its constrained DOFs, the nodes' coordinates, the inflow ramp's length. */
typedef struct inflow {
  const int64_t* dofs;
  const double* x; /* nodes × 2 */
  double ramp;
  int fail_after; /* the callback fails for t > fail_after (a negative value: never) */
  int calls;
} inflow;

/* u = min(1, t/ramp)·y(1 − y) at x = 0, else 0 (walls); v = 0. */
static int inflow_values(double t, double* g, int64_t n, void* user) {
  inflow* in = (inflow*)user;
  const double s = t < in->ramp ? t / in->ramp : 1.0;
  int64_t i;
  ++in->calls;
  if (in->fail_after >= 0 && t > in->fail_after) return 7;
  for (i = 0; i < n; ++i) {
    const int64_t node = in->dofs[i] / 2;
    const double x = in->x[2 * node], y = in->x[2 * node + 1];
    g[i] = (in->dofs[i] % 2 == 0 && x < 1e-12) ? s * y * (1 - y) : 0.0;
  }
  return 0;
}

/* The velocity DOFs (both components) of the nodes in `nodes`, strictly increasing. */
static int64_t dofs_of_nodes(const int64_t* nodes, int64_t n, int64_t* dofs) {
  int64_t i;
  for (i = 0; i < n; ++i) dofs[2 * i] = 2 * nodes[i], dofs[2 * i + 1] = 2 * nodes[i] + 1;
  return 2 * n;
}

int main(void) {
  void* mesh_library = open_library(FEM_MESH_LIBRARY);
  void* library = open_library(FEM_FLOW_LIBRARY);
  fem_flow_options o;
  fem_flow_sizes sizes;
  fem_flow_report r;
  fem_view coordinates, boundary, solution;
  int32_t left = 0, right = 0, top = 0, bottom = 0;
  int64_t nnodes = 0, nboundary = 0, i;
  const double* x;
  LOAD(library, fem_last_error);
  LOAD(library, fem_view_get);
  LOAD(library, fem_view_release);
  LOAD(library, fem_counter);
  LOAD(mesh_library, fem_mesh_generate);
  LOAD(mesh_library, fem_mesh_tag);
  LOAD(library, fem_flow_options_default);
  LOAD(library, fem_flow_sizes_get);
  LOAD(library, fem_flow_solve_steady);
  LOAD(library, fem_flow_solve_steady_dofs);
  LOAD(library, fem_flow_force);
  LOAD(library, fem_flow_force_nodes);
  LOAD(library, fem_flow_nodes);
  LOAD(library, fem_flow_boundary_nodes);
  LOAD(library, fem_flow_stepper_create);
  LOAD(library, fem_flow_stepper_destroy);
  LOAD(library, fem_flow_stepper_step);
  LOAD(library, fem_flow_stepper_state);
  LOAD(library, fem_flow_stepper_publish);
  LOAD(library, fem_flow_stepper_report_get);
  LOAD(library, fem_flow_stepper_force);

  OK(p_fem_mesh_generate("gen:square-tri3:4", "channel", NULL));
  OK(p_fem_mesh_tag("channel", "left", 1, &left));
  OK(p_fem_mesh_tag("channel", "right", 1, &right));
  OK(p_fem_mesh_tag("channel", "top", 1, &top));
  OK(p_fem_mesh_tag("channel", "bottom", 1, &bottom));
  OK(p_fem_flow_sizes_get("channel", &sizes));
  OK(p_fem_flow_nodes("channel", "channel/x", &nnodes));
  if (nnodes != 81 || nnodes * 2 != sizes.velocity_dofs) FAIL("%lld nodes", (long long)nnodes);
  OK(p_fem_view_get("channel/x", &coordinates));
  if (coordinates.ndim != 2 || coordinates.shape[0] != nnodes || coordinates.shape[1] != 2)
    FAIL("the coordinates' shape");
  x = (const double*)coordinates.data;
  OK(p_fem_flow_boundary_nodes("channel", NULL, 0, "channel/boundary", &nboundary));
  if (nboundary != 32) FAIL("%lld boundary nodes of 32", (long long)nboundary);
  OK(p_fem_view_get("channel/boundary", &boundary));

  /* Stokes Poiseuille flow, u = (y(1 − y), 0) on the whole boundary: p = −2μ(x − ½) (zero mean).
   * Taylor–Hood holds both exactly: the solution equals them to rounding. */
  {
    const int64_t* nodes = (const int64_t*)boundary.data;
    int64_t* dofs = malloc(sizeof(int64_t) * 2 * (size_t)nboundary);
    double* values = malloc(sizeof(double) * 2 * (size_t)nboundary);
    const double mu = 0.5;
    const int64_t ndofs = dofs_of_nodes(nodes, nboundary, dofs);
    double worst_u = 0, worst_p = 0, worst_diff = 0;
    for (i = 0; i < ndofs; ++i) {
      const double y = x[2 * (dofs[i] / 2) + 1];
      values[i] = dofs[i] % 2 == 0 ? y * (1 - y) : 0.0;
    }
    OK(p_fem_flow_options_default(&o));
    o.viscosity = mu;
    o.pressure_null_space = 1;
    OK(p_fem_flow_solve_steady_dofs("channel", &o, dofs, values, ndofs, NULL, "poiseuille", &r));
    if (!r.converged || r.newton_iterations != 1)
      FAIL("Poiseuille: converged %d in %d iterations (%s)", r.converged, r.newton_iterations, r.reason);
    OK(p_fem_view_get("poiseuille", &solution));
    {
      const double* w = (const double*)solution.data;
      for (i = 0; i < nnodes; ++i) {
        const double y = x[2 * i + 1];
        worst_u = fmax(worst_u, fmax(fabs(w[2 * i] - y * (1 - y)), fabs(w[2 * i + 1])));
      }
      for (i = 0; i < sizes.pressure_dofs; ++i) /* pressure DOF i sits at node i (a vertex) */
        worst_p = fmax(worst_p, fabs(w[sizes.velocity_dofs + i] + 2 * mu * (x[2 * i] - 0.5)));
    }
    if (!(worst_u < 1e-13) || !(worst_p < 1e-12))
      FAIL("Poiseuille: velocity error %.3g, pressure error %.3g", worst_u, worst_p);
    printf("Poiseuille from arrays: velocity error %.2g, pressure error %.2g\n", worst_u, worst_p);

    /* The same flow through tagged conditions (a host function on the whole boundary). */
    {
      const fem_function u = {parabola, NULL, 0.0, 0}, zero = {NULL, NULL, 0.0, 0};
      fem_flow_velocity velocity;
      fem_view other;
      memset(&velocity, 0, sizeof velocity);
      velocity.components[0] = &u, velocity.components[1] = &zero;
      OK(p_fem_flow_solve_steady("channel", &o, &velocity, 1, NULL, "poiseuille/tags", &r));
      OK(p_fem_view_get("poiseuille/tags", &other));
      for (i = 0; i < sizes.dofs; ++i)
        worst_diff =
            fmax(worst_diff, fabs(((const double*)other.data)[i] - ((const double*)solution.data)[i]));
      p_fem_view_release(&other);
      if (!(worst_diff < 1e-13)) FAIL("arrays and tags differ by %.3g", worst_diff);
    }

    /* Forces: on the walls' nodes as the tags give them, and on the whole boundary (equilibrium:
     * no body force, so the fluid's total force on its boundary is zero). */
    {
      const int32_t walls[2] = {top, bottom};
      double by_tags[3], by_nodes[3], total[3];
      int64_t nwalls = 0;
      fem_view w;
      OK(p_fem_flow_force("channel", &o, "poiseuille", walls, 2, by_tags));
      OK(p_fem_flow_boundary_nodes("channel", walls, 2, "channel/walls", &nwalls));
      OK(p_fem_view_get("channel/walls", &w));
      OK(p_fem_flow_force_nodes("channel", &o, "poiseuille", (const int64_t*)w.data, nwalls, by_nodes));
      p_fem_view_release(&w);
      OK(p_fem_flow_force_nodes("channel", &o, "poiseuille", nodes, nboundary, total));
      if (by_tags[0] != by_nodes[0] || by_tags[1] != by_nodes[1] || !(by_tags[0] > 0))
        FAIL("walls: (%g, %g) by tags, (%g, %g) by nodes", by_tags[0], by_tags[1], by_nodes[0], by_nodes[1]);
      if (!(fabs(total[0]) < 1e-13 && fabs(total[1]) < 1e-13))
        FAIL("the whole boundary: (%g, %g)", total[0], total[1]);
      printf("Poiseuille: the walls' drag %.6g (the whole boundary: %.1g, %.1g)\n", by_tags[0], total[0],
             total[1]);
    }
    p_fem_view_release(&solution);
    free(dofs);
    free(values);
  }

  /* The projection stepper: inflow min(1, t/2)·y(1 − y) on the left, no-slip walls, p = 0 at the
   * outflow (right). It settles on Poiseuille flow, p = −2μ(x − 1), its three matrices factorized
   * at create and none in the steps. */
  {
    const int32_t inlet_walls[3] = {left, top, bottom};
    int64_t nin = 0, nout = 0, ndofs, noutflow = 0;
    fem_view in_nodes, out_nodes;
    int64_t *dofs, *outflow;
    inflow data;
    fem_flow_stepper* s = NULL;
    fem_flow_stepper_report report;
    const double* w;
    double t = -1, worst_u = 0, worst_p = 0, f[3], g[3];
    int64_t n = 0, before;
    OK(p_fem_flow_boundary_nodes("channel", inlet_walls, 3, "channel/inlet+walls", &nin));
    OK(p_fem_flow_boundary_nodes("channel", &right, 1, "channel/outlet", &nout));
    OK(p_fem_view_get("channel/inlet+walls", &in_nodes));
    OK(p_fem_view_get("channel/outlet", &out_nodes));
    dofs = malloc(sizeof(int64_t) * 2 * (size_t)nin);
    outflow = malloc(sizeof(int64_t) * (size_t)nout);
    ndofs = dofs_of_nodes((const int64_t*)in_nodes.data, nin, dofs);
    for (i = 0; i < nout; ++i) /* the outlet's vertices are pressure DOFs */
      if (((const int64_t*)out_nodes.data)[i] < sizes.pressure_dofs)
        outflow[noutflow++] = ((const int64_t*)out_nodes.data)[i];
    data.dofs = dofs, data.x = x, data.ramp = 2.0, data.fail_after = -1, data.calls = 0;

    OK(p_fem_flow_options_default(&o));
    o.convection = 1;
    before = counter("solve.factorizations");
    OK(p_fem_flow_stepper_create("ipcs", "channel", &o, 0.05, dofs, ndofs, inflow_values, &data, outflow,
                                 noutflow, NULL, &s));
    OK(p_fem_flow_stepper_report_get(s, &report));
    if (report.matrices != 3 || counter("solve.factorizations") - before != 3 || report.steps != 0 ||
        report.dofs != sizes.dofs)
      FAIL("create: %lld matrices, %lld factorizations", (long long)report.matrices,
           (long long)(counter("solve.factorizations") - before));
    OK(p_fem_flow_stepper_step(s, 1200));
    OK(p_fem_flow_stepper_report_get(s, &report));
    if (report.steps != 1200 || fabs(report.t - 60) > 1e-9 || data.calls != 1201)
      FAIL("after 1200 steps: %lld steps, t = %g, %d calls", (long long)report.steps, report.t, data.calls);
    if (counter("solve.factorizations") - before != 3)
      FAIL("the steps factorized: %lld in all", (long long)(counter("solve.factorizations") - before));
    OK(p_fem_flow_stepper_state(s, &t, &w, &n));
    if (n != sizes.dofs || fabs(t - 60) > 1e-9) FAIL("state: t %g, %lld values", t, (long long)n);
    for (i = 0; i < nnodes; ++i) {
      const double y = x[2 * i + 1];
      worst_u = fmax(worst_u, fmax(fabs(w[2 * i] - y * (1 - y)), fabs(w[2 * i + 1])));
    }
    for (i = 0; i < sizes.pressure_dofs; ++i)
      worst_p = fmax(worst_p, fabs(w[sizes.velocity_dofs + i] + 2 * (x[2 * i] - 1)));
    if (!(worst_u < 1e-8) || !(worst_p < 1e-6))
      FAIL("settled: velocity error %.3g, pressure error %.3g", worst_u, worst_p);
    printf("projection: settled after %lld steps, velocity error %.2g, pressure error %.2g\n",
           (long long)report.steps, worst_u, worst_p);

    /* The force on the walls with the (vanishing) inertia equals the steady one on the state. */
    {
      const int32_t walls[2] = {top, bottom};
      int64_t nwalls = 0;
      fem_view v;
      OK(p_fem_flow_boundary_nodes("channel", walls, 2, "channel/walls", &nwalls));
      OK(p_fem_view_get("channel/walls", &v));
      OK(p_fem_flow_stepper_force(s, (const int64_t*)v.data, nwalls, f));
      OK(p_fem_flow_stepper_publish(s, "ipcs/w"));
      OK(p_fem_flow_force_nodes("channel", &o, "ipcs/w", (const int64_t*)v.data, nwalls, g));
      p_fem_view_release(&v);
      if (!(fabs(f[0] - g[0]) < 1e-8 && fabs(f[1] - g[1]) < 1e-8 && f[0] > 0))
        FAIL("the walls' force (%g, %g), steady (%g, %g)", f[0], f[1], g[0], g[1]);
    }

    /* A failing callback stops before the step: t and the state stay. */
    data.fail_after = 60;
    if (p_fem_flow_stepper_step(s, 1) != FEM_ERR_INTERNAL || strstr(p_fem_last_error(), "returned 7") == NULL)
      FAIL("a failing callback: '%s'", p_fem_last_error());
    OK(p_fem_flow_stepper_state(s, &t, NULL, NULL));
    OK(p_fem_flow_stepper_report_get(s, &report));
    if (fabs(t - 60) > 1e-9 || report.steps != 1200) FAIL("a failed step moved t to %g", t);

    p_fem_flow_stepper_destroy(s);
    p_fem_flow_stepper_destroy(NULL);
    p_fem_view_release(&in_nodes);
    p_fem_view_release(&out_nodes);

    /* Errors: nothing is made. */
    s = NULL;
    {
      const int64_t unsorted[2] = {3, 1}, pressure[1] = {1000000};
      if (p_fem_flow_stepper_create("bad", "channel", &o, 0.05, unsorted, 2, NULL, NULL, NULL, 0, NULL, &s) !=
              FEM_ERR_INVALID_ARGUMENT ||
          strstr(p_fem_last_error(), "strictly increasing") == NULL || s != NULL)
        FAIL("unsorted dofs: '%s'", p_fem_last_error());
      if (p_fem_flow_stepper_create("bad", "channel", &o, 0.05, dofs, ndofs, NULL, NULL, pressure, 1, NULL,
                                    &s) != FEM_ERR_INVALID_ARGUMENT ||
          strstr(p_fem_last_error(), "pressure DOFs") == NULL || s != NULL)
        FAIL("an outflow DOF out of range: '%s'", p_fem_last_error());
      if (p_fem_flow_stepper_create("bad", "channel", &o, 0, dofs, ndofs, NULL, NULL, NULL, 0, NULL, &s) !=
              FEM_ERR_INVALID_ARGUMENT ||
          s != NULL)
        FAIL("dt 0: '%s'", p_fem_last_error());
      o.symmetric_gradient = 1;
      if (p_fem_flow_stepper_create("bad", "channel", &o, 0.05, dofs, ndofs, NULL, NULL, NULL, 0, NULL, &s) !=
              FEM_ERR_INVALID_ARGUMENT ||
          s != NULL)
        FAIL("the symmetric gradient: '%s'", p_fem_last_error());
      o.symmetric_gradient = 0;
      if (p_fem_flow_stepper_step(NULL, 1) != FEM_ERR_INVALID_ARGUMENT) FAIL("a NULL stepper");
      if (p_fem_flow_solve_steady_dofs("channel", &o, unsorted, NULL, 2, NULL, "x", &r) !=
          FEM_ERR_INVALID_ARGUMENT)
        FAIL("unsorted steady dofs: '%s'", p_fem_last_error());
      if (p_fem_flow_force_nodes("channel", &o, "poiseuille", pressure, 1, f) != FEM_ERR_INVALID_ARGUMENT ||
          strstr(p_fem_last_error(), "velocity nodes") == NULL)
        FAIL("a node out of range: '%s'", p_fem_last_error());
    }
    free(dofs);
    free(outflow);
  }
  p_fem_view_release(&boundary);
  p_fem_view_release(&coordinates);

  if (failures) return 1;
  printf("all checks passed\n");
  return 0;
}
