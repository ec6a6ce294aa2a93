/* libfem_flow's C ABI from a C host that links no fem library: it dlopen()s libfem_mesh (for a
 * generated mesh) and libfem_flow, and checks the Taylor–Hood sizes, a Stokes lid-driven cavity
 * (one Newton iteration, one symbolic analysis, the continuity residual zero at the solution
 * through fem_flow_assemble), a Navier–Stokes cavity by Picard and Newton, the force on the lid,
 * and the errors.
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
DECLARE(fem_flow_assemble);
DECLARE(fem_flow_solve_steady);
DECLARE(fem_flow_force);

static int64_t counter(const char* name) {
  int64_t value = -1;
  OK(p_fem_counter(name, &value));
  return value;
}

int main(void) {
  void* mesh_library = open_library(FEM_MESH_LIBRARY);
  void* library = open_library(FEM_FLOW_LIBRARY);
  fem_flow_options o;
  fem_flow_sizes sizes;
  fem_flow_report r;
  fem_view v;
  int32_t top = 0;
  int64_t i;
  LOAD(library, fem_last_error);
  LOAD(library, fem_view_get);
  LOAD(library, fem_view_release);
  LOAD(library, fem_counter);
  LOAD(mesh_library, fem_mesh_generate);
  LOAD(mesh_library, fem_mesh_tag);
  LOAD(library, fem_flow_options_default);
  LOAD(library, fem_flow_sizes_get);
  LOAD(library, fem_flow_assemble);
  LOAD(library, fem_flow_solve_steady);
  LOAD(library, fem_flow_force);

  OK(p_fem_mesh_generate("gen:square-tri3:4", "cavity", NULL));
  OK(p_fem_flow_sizes_get("cavity", &sizes));
  /* P2 on a 4 × 4 square: 9 × 9 nodes, 2 components; P1: 5 × 5 vertices. */
  if (sizes.dim != 2 || sizes.velocity_dofs != 162 || sizes.pressure_dofs != 25 || sizes.dofs != 187)
    FAIL("sizes: dim %d, velocity %lld, pressure %lld, all %lld", sizes.dim, (long long)sizes.velocity_dofs,
         (long long)sizes.pressure_dofs, (long long)sizes.dofs);

  /* Stokes: u = 0 on the walls, (1, 0) on the lid (the tag wins over the whole boundary). */
  {
    const fem_function zero = {NULL, NULL, 0.0, 0}, one = {NULL, NULL, 1.0, 0};
    fem_flow_velocity velocity[2];
    const int64_t before = counter("solve.symbolic_analyses");
    OK(p_fem_mesh_tag("cavity", "top", 1, &top));
    memset(velocity, 0, sizeof velocity);
    velocity[0].components[0] = &zero, velocity[0].components[1] = &zero;
    velocity[1].tags = &top, velocity[1].ntags = 1;
    velocity[1].components[0] = &one, velocity[1].components[1] = &zero;
    OK(p_fem_flow_options_default(&o));
    o.pressure_null_space = 1;
    OK(p_fem_flow_solve_steady("cavity", &o, velocity, 2, NULL, "stokes", &r));
    if (!r.converged || r.newton_iterations != 1 || r.symbolic_analyses != 1)
      FAIL("Stokes: converged %d in %d iterations (%s), %d analyses", r.converged, r.newton_iterations,
           r.reason, r.symbolic_analyses);
    if (counter("solve.symbolic_analyses") - before != 1) FAIL("Stokes: more than one symbolic analysis");
    /* The continuity residual at the solution: −∫ q div u = 0 for every pressure test function
     * (the velocity holds its data exactly: the discrete inflow and outflow balance). */
    OK(p_fem_flow_assemble("cavity", &o, NULL, "stokes", NULL, "stokes/F"));
    OK(p_fem_view_get("stokes/F", &v));
    {
      const double* F = (const double*)v.data;
      double worst = 0;
      for (i = sizes.velocity_dofs; i < sizes.dofs; ++i) worst = fmax(worst, fabs(F[i]));
      if (!(worst < 1e-12)) FAIL("Stokes: continuity residual %.3g at the solution", worst);
    }
    p_fem_view_release(&v);
    {
      double force[3];
      OK(p_fem_flow_force("cavity", &o, "stokes", &top, 1, force));
      /* The lid drags the fluid forward: the fluid holds the lid back (F_x < 0). */
      if (!(force[0] < 0) || force[2] != 0)
        FAIL("Stokes: force on the lid (%g, %g, %g)", force[0], force[1], force[2]);
      printf("Stokes cavity: force on the lid (%.6g, %.6g)\n", force[0], force[1]);
    }

    /* Navier–Stokes at Re = 100 from the Stokes solution: Picard, then Newton, on one analysis. */
    o.convection = 1;
    o.viscosity = 0.01;
    OK(p_fem_flow_solve_steady("cavity", &o, velocity, 2, NULL, "stokes", &r));
    if (!r.converged || r.picard_iterations < 1 || r.symbolic_analyses != 0)
      FAIL("Navier–Stokes: converged %d (%s), %d Picard + %d Newton, %d analyses", r.converged, r.reason,
           r.picard_iterations, r.newton_iterations, r.symbolic_analyses);
    printf("Navier-Stokes cavity: %d Picard + %d Newton iterations, %d Jacobians, |F| %.3g\n",
           r.picard_iterations, r.newton_iterations, r.jacobians, r.residual_norm);
  }

  /* Errors. */
  if (p_fem_flow_sizes_get("nowhere", &sizes) == FEM_OK) FAIL("a mesh that is not there");
  o.viscosity = -1;
  if (p_fem_flow_solve_steady("cavity", &o, NULL, 0, NULL, "x", &r) != FEM_ERR_INVALID_ARGUMENT ||
      strstr(p_fem_last_error(), "viscosity") == NULL)
    FAIL("a negative viscosity: '%s'", p_fem_last_error());

  if (failures) return 1;
  printf("all checks passed\n");
  return 0;
}
