/* The C ABI of libfem_flow: incompressible flow (Stokes, Navier–Stokes) and nearly incompressible
 * solids on the Taylor–Hood mixed space of a published mesh: the block system assembled on store
 * keys, steady saddle-point solves (Picard, then Newton; the pressure's free constant), and the
 * force on a boundary. Plain C (C99); status codes and fem_last_error() as in fem/c_api.h;
 * functions of position as fem_function (fem/assembly/c_api.h). See docs/c_api.md and
 * docs/flow.md. The unknowns of the mixed space: the velocity's DOFs (node·dim + component, the
 * numbering of the P2/Q2 vector space on the mesh), then the pressure's (one per vertex). The
 * vertices are the first nodes of the velocity's numbering, so pressure DOF velocity_dofs + i sits
 * at node i (fem_flow_nodes gives where the nodes are). An unsteady flow is a projection stepper,
 * a handle driven step by step (fem_flow_stepper_create). */
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

/* The velocity's nodes: their coordinates as f64 [nodes, gdim] under coordinates_key (node i's
 * DOFs are i·dim + k; the first pressure_dofs nodes are the vertices, pressure DOF
 * velocity_dofs + i at node i). *count (may be NULL) gets the number of nodes. */
int fem_flow_nodes(const char* mesh_key, const char* coordinates_key, int64_t* count);

/* The velocity's nodes on the facets of `tags` (ntags 0: the whole boundary), sorted, as i64
 * [count] under nodes_key: where a force is summed, and (node·dim + k) where velocity data go.
 * *count (may be NULL) gets their number. A tag no boundary facet carries is an error. */
int fem_flow_boundary_nodes(const char* mesh_key, const int32_t* tags, int32_t ntags, const char* nodes_key,
                            int64_t* count);

/* fem_flow_solve_steady with the velocity's Dirichlet data as arrays: u_dofs[i] = values[i] for
 * ndofs velocity DOFs (strictly increasing, each < velocity_dofs; NULL when ndofs is 0). */
int fem_flow_solve_steady_dofs(const char* mesh_key, const fem_flow_options* options, const int64_t* dofs,
                               const double* values, int64_t ndofs, const fem_function* body_force,
                               const char* out_key, fem_flow_report* report);

/* fem_flow_force on the given velocity nodes (any set: fem_flow_boundary_nodes, or a part of it). */
int fem_flow_force_nodes(const char* mesh_key, const fem_flow_options* options, const char* w_key,
                         const int64_t* nodes, int64_t nnodes, double force[3]);

/* ---- Unsteady flow: the incremental pressure-correction (projection) scheme ----------------- */

/* A projection stepper (fem::flow::ProjectionStepper, docs/flow.md): explicit convection (AB2),
 * Crank–Nicolson viscosity, its three matrices factorized once for the run. One thread at a time
 * per stepper. */
typedef struct fem_flow_stepper fem_flow_stepper;

/* The velocity's Dirichlet values at t into g (ndofs values, in the order of the dofs given).
 * Nonzero: a failure (the step is not taken). */
typedef int (*fem_flow_values_fn)(double t, double* g, int64_t ndofs, void* user);

typedef struct fem_flow_stepper_report {
  double t, dt;
  int64_t steps;    /* taken since create */
  int64_t matrices; /* distinct matrices factorized at create (2 per set of constrained velocity
                       nodes, 1 for the pressure); the steps factorize none */
  int64_t dofs;     /* the state's length */
} fem_flow_stepper_report;

/* A stepper on the Taylor–Hood space of mesh_key with step dt (> 0) from t = 0. options: μ, ρ
 * and convection (nonzero: Navier–Stokes, else unsteady Stokes); symmetric_gradient and
 * compressibility must be 0. The velocity is g(t) at `dofs` (strictly increasing velocity DOFs,
 * ndofs of them), g from `values` (NULL: zero) with `user`, called at create (t = 0, when w0 is
 * NULL) and once before each step (t + dt) on the caller's thread. p = 0 at the `outflow`
 * pressure DOFs (0 .. pressure_dofs − 1, i.e. vertex nodes; noutflow 0: p is free up to a
 * constant, found with Σp = 0). w0: the mixed state at t = 0 (dofs values), taken as given; NULL:
 * rest, u = g(0) at the dofs. Its matrices are store entries `<name>/tentative/<i>`,
 * `<name>/correction/<i>` and `<name>/pressure` (kept after destroy). On failure *out is
 * unchanged. */
int fem_flow_stepper_create(const char* name, const char* mesh_key, const fem_flow_options* options,
                            double dt, const int64_t* dofs, int64_t ndofs, fem_flow_values_fn values,
                            void* user, const int64_t* outflow, int64_t noutflow, const double* w0,
                            fem_flow_stepper** out);

/* Frees the stepper (NULL: nothing). Its store entries stay. */
void fem_flow_stepper_destroy(fem_flow_stepper* stepper);

/* `count` (≥ 1) steps of dt. A values callback that returns nonzero (or gives a non-finite value)
 * stops before the step it was called for: FEM_ERR_INTERNAL (FEM_ERR_NUMERICAL), the message
 * naming the callback, its return and t; that step's state is as it was, the earlier steps stay. */
int fem_flow_stepper_step(fem_flow_stepper* stepper, int64_t count);

/* The time and the mixed state (velocity, then pressure): *w points to the stepper's n values
 * (valid until the next step or destroy). Any of t, w, n may be NULL. */
int fem_flow_stepper_state(const fem_flow_stepper* stepper, double* t, const double** w, int64_t* n);

/* Publishes the state as f64 [dofs] under key (a new version): what fem_flow_force, fem_flow_assemble
 * or a steady solve's guess read. */
int fem_flow_stepper_publish(const fem_flow_stepper* stepper, const char* key);

int fem_flow_stepper_report_get(const fem_flow_stepper* stepper, fem_flow_stepper_report* report);

/* The force of the fluid on the velocity nodes given (fem_flow_boundary_nodes) at the current
 * state, the last step's inertia ρ M (u^{n+1} − u^n)/dt included (volume formulation). */
int fem_flow_stepper_force(const fem_flow_stepper* stepper, const int64_t* nodes, int64_t nnodes,
                           double force[3]);

#ifdef __cplusplus
}
#endif

#endif /* FEM_FLOW_C_API_H */
