/* The C ABI of libfem_flow: incompressible flow (Stokes, Navier–Stokes) and nearly incompressible
 * solids on the Taylor–Hood mixed space of a published mesh: the block system assembled on store
 * keys, steady saddle-point solves (Picard, then Newton; the pressure's free constant), and the
 * force on a boundary. Plain C (C99); status codes and fem_last_error() as in fem/c_api.h;
 * functions of position as fem_function (fem/assembly/c_api.h). See docs/c_api.md and
 * docs/flow.md. The unknowns of the mixed space: the velocity's DOFs (node·dim + component, the
 * numbering of the P2/Q2 vector space on the mesh), then the pressure's (one per vertex). */
#ifndef FEM_FLOW_C_API_H
#define FEM_FLOW_C_API_H

#include "fem/assembly/c_api.h"
#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fem_flow_options {
  double viscosity;            /* μ (> 0) */
  double density;              /* ρ in front of the convection */
  int32_t convection;          /* nonzero: Navier–Stokes */
  int32_t symmetric_gradient;  /* nonzero: 2μ ε(u):ε(v) instead of μ ∇u:∇v */
  double compressibility;      /* 1/λ: u–p elasticity (0: incompressible) */
  int32_t pressure_null_space; /* nonzero: the velocity is given on the whole boundary; p is found
                                  with zero mean */
  int32_t picard_steps;        /* Picard iterations before Newton (Navier–Stokes) */
  int32_t max_iterations;      /* Newton's */
  double atol, rtol;           /* Newton's residual tolerances */
} fem_flow_options;

/* A velocity condition: u_k = components[k] on the facets of `tags` (ntags 0: the whole
 * boundary); a NULL component is not prescribed. A tag wins over the whole boundary. */
typedef struct fem_flow_velocity {
  const int32_t* tags;
  int32_t ntags;
  const fem_function* components[3];
} fem_flow_velocity;

typedef struct fem_flow_sizes {
  int32_t dim;
  int64_t velocity_dofs, pressure_dofs, dofs; /* dofs = velocity_dofs + pressure_dofs */
} fem_flow_sizes;

typedef struct fem_flow_report {
  int32_t converged;
  int32_t picard_iterations, newton_iterations, jacobians;
  int32_t symbolic_analyses; /* of the block pattern, over the solve (1 the first time, then 0) */
  double initial_residual_norm, residual_norm;
  char reason[40]; /* Newton's reason ("converged_rtol", ...) */
} fem_flow_report;

/* The defaults: μ = ρ = 1, Stokes, the gradient form, 3 Picard steps, 30 Newton iterations,
 * atol = rtol = 1e-10. */
int fem_flow_options_default(fem_flow_options* out);

/* The sizes of the Taylor–Hood space on the mesh under mesh_key (first-order triangles,
 * quadrilaterals or tetrahedra). Its block pattern is built once per mesh version and cached. */
int fem_flow_sizes_get(const char* mesh_key, fem_flow_sizes* out);

/* Block assembly at the state under w_key (f64 [dofs]; NULL: zero): the Jacobian as a CsrMatrix
 * under J_key and the residual F(w) as f64 [dofs] under F_key (either key may be NULL). For Stokes
 * the Jacobian is the saddle-point matrix and −F(0) the load. body_force: dim functions (NULL:
 * none). No boundary condition is applied. */
int fem_flow_assemble(const char* mesh_key, const fem_flow_options* options, const fem_function* body_force,
                      const char* w_key, const char* J_key, const char* F_key);

/* The steady flow with `nvelocity` velocity conditions, from the guess under out_key when there
 * is one (else zero); the solution (velocity, then pressure) is published as f64 [dofs] under
 * out_key, converged or not (report->converged says). The Jacobians are published as
 * <out_key>/J and factorized by the store's cache (one symbolic analysis for all). Newton not
 * converging is FEM_OK with report->converged = 0. */
int fem_flow_solve_steady(const char* mesh_key, const fem_flow_options* options,
                          const fem_flow_velocity* velocity, int32_t nvelocity,
                          const fem_function* body_force, const char* out_key, fem_flow_report* report);

/* The force of the fluid on the facets of `tags` at the state under w_key (the volume
 * formulation: minus the momentum residual summed over the boundary's velocity nodes), into
 * force[3] (unused components 0; per unit depth in 2D). */
int fem_flow_force(const char* mesh_key, const fem_flow_options* options, const char* w_key,
                   const int32_t* tags, int32_t ntags, double force[3]);

#ifdef __cplusplus
}
#endif

#endif /* FEM_FLOW_C_API_H */
