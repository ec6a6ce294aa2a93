/* The C ABI of libfem_mesh: meshes read or generated into the store under a key, and what a
 * host needs to know about them (sizes, checks, physical names). Plain C (C99); status codes
 * and fem_last_error() as in fem/c_api.h. See docs/c_api.md. */
#ifndef FEM_MESH_C_API_H
#define FEM_MESH_C_API_H

#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fem_mesh_summary {
  int32_t gdim; /* coordinates per node, 1..3 */
  int32_t tdim; /* dimension of the cells */
  int64_t num_nodes;
  int64_t num_cells;
  int64_t num_facets; /* tagged boundary facets the mesh lists */
  int32_t nodes_per_cell;
  char cell_type[32]; /* "tri3", "tet10", ... */
} fem_mesh_summary;

/* What fem_mesh_check found (fem::mesh::check): counts of each kind of finding. */
typedef struct fem_mesh_check_report {
  int64_t inverted;   /* cells with a negative Jacobian determinant everywhere */
  int64_t degenerate; /* cells whose determinant vanishes somewhere */
  int64_t tangled;    /* cells whose determinant changes sign */
  int64_t duplicate_nodes;
  int64_t unreferenced_nodes;
  int64_t tagged_interior_facets;   /* tagged facets shared by two cells */
  int64_t stray_facets;             /* tagged facets of no cell */
  int64_t untagged_boundary_facets; /* a warning only: not counted by `ok` */
  int64_t boundary_facets;          /* boundary facets in total */
  int32_t ok;                       /* 1: none of the errors above (untagged facets allowed) */
} fem_mesh_check_report;

/* Read a mesh file (Gmsh .msh 2.2/4.1, MEDIT .mesh) and publish it under key. version: the
 * entry's new version, may be NULL. A bad file is FEM_ERR_PARSE naming the file and line. */
int fem_mesh_read(const char* path, const char* key, uint64_t* version);
/* Generate the mesh of a spec "gen:<shape>:<n>" (interval-line2, square-tri3, square-quad4,
 * cube-tet4, cube-hex8; n cells per side) and publish it under key. */
int fem_mesh_generate(const char* spec, const char* key, uint64_t* version);
/* Sizes and cell type of the mesh under key. */
int fem_mesh_info(const char* key, fem_mesh_summary* out);
/* Check the mesh under key. FEM_OK whenever the check ran, also when it found problems: the
 * report says (out->ok). */
int fem_mesh_check(const char* key, fem_mesh_check_report* out);
/* The number of the physical name `name` of dimension dim (dim < 0: any dimension), e.g. the
 * facet tag of "left" on a generated mesh. FEM_ERR_NOT_FOUND when the mesh has no such name
 * (the message lists the names it has). */
int fem_mesh_tag(const char* key, const char* name, int32_t dim, int32_t* tag);

#ifdef __cplusplus
}
#endif
#endif /* FEM_MESH_C_API_H */
