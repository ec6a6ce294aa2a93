// Boundary conditions on tagged facets: Dirichlet values imposed so symmetric systems stay
// symmetric (lifting into the right-hand side, so Cholesky still applies), and Neumann fluxes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "fem/assembly/forms.hpp"
#include "fem/assembly/space.hpp"
#include "fem/layout.hpp"

namespace fem::assembly {

/// A tag that no boundary facet of the whole mesh carries is an InvalidArgument naming it and
/// the facet tags present (with their names), on every process of `layout`. A part of a
/// distributed mesh checked without its layout is not checked (the whole mesh is).
void check_facet_tags(const Mesh& mesh, std::span<const int> tags, const Layout& layout = Layout::serial());
/// The same for cell tags (the per-tag values of a coefficient: Coefficient::tags()).
void check_cell_tags(const Mesh& mesh, std::span<const int> tags, const Layout& layout = Layout::serial());

/// The vertices of the selected facets (size() / vertices_per_facet facets). A tag that no
/// facet of the mesh carries is an error naming it and the facet tags present.
std::vector<index_t> select_facets(const Mesh& mesh, const FacetSet& set, int& vertices_per_facet);

/// The selected facets with their geometry: besides the vertices (as select_facets() gives
/// them), all the mesh nodes of each facet in the node order of the facet's own Lagrange element
/// (`geometry`: line3 on tri6/quad9 meshes, tri6 on tet10, quad9 on hex27; the first-order
/// facet on first-order meshes), so that a facet of a curved mesh is integrated over its curve
/// or surface, not over the chord between its vertices. Tagged facets take their nodes from
/// Mesh::facet(); for the whole boundary they come from the cell that owns each facet.
struct SelectedFacets {
  std::vector<index_t> vertices;  ///< size() × vertices_per_facet
  std::vector<index_t> nodes;     ///< size() × nodes_per_facet: mesh nodes of the geometry map
  int vertices_per_facet = 0;
  int nodes_per_facet = 0;
  CellType geometry = CellType::point;
  std::size_t size() const noexcept {
    return vertices_per_facet > 0 ? vertices.size() / static_cast<std::size_t>(vertices_per_facet) : 0;
  }
};
SelectedFacets select_facet_geometry(const Mesh& mesh, const FacetSet& set);

/// ∮ u·n over the boundary facets of `where`, n the outward unit normal, for a field u of V with
/// one component per coordinate (a velocity: the flux through an inlet or outlet). The trace is
/// integrated exactly for P1, P2, Q1, Q2 on the facets' vertex geometry (straight facets).
/// Interior facets of `where` are an InvalidArgument naming one.
double boundary_flux(const FunctionSpace& V, std::span<const double> u, const FacetSet& where);

/// The space nodes on each facet (vertex nodes, then edge nodes), nodes_per_facet per facet,
/// in the order of the facet's Lagrange element.
std::vector<index_t> facet_nodes(const FunctionSpace& V, std::span<const index_t> facet_vertices,
                                 int vertices_per_facet, int& nodes_per_facet);

/// u = value(x) on the selected facets (value nullptr: zero), on one component or all (-1).
struct Dirichlet {
  FacetSet where;
  Function value;
  int component = -1;
};

/// The constrained DOFs, sorted and unique, and their values.
struct DirichletValues {
  std::vector<index_t> dofs;
  std::vector<double> values;
  /// The space they were made on (dirichlet_values records it): what the problem layer checks
  /// them against (system.hpp's require_space). Unknown for values made by hand.
  SpaceId space;
  /// The same DOFs with zero values (for Newton increments).
  DirichletValues homogeneous() const { return {dofs, std::vector<double>(dofs.size(), 0.0), space}; }
};

/// The Dirichlet values of `conditions` on one process: system.hpp's dirichlet_values with
/// Layout::serial(), where the rule for overlapping conditions is stated.
DirichletValues dirichlet_values(const FunctionSpace& V, std::span<const Dirichlet> conditions);
/// One condition alone: its DOFs (sorted, unique) and their values.
DirichletValues condition_values(const FunctionSpace& V, const Dirichlet& condition);

/// Impose the values on A x = b symmetrically: b_i -= Σ_j A_ij g_j for free rows, constrained
/// rows and columns are zeroed but for their diagonal, and b_k = A_kk g_k. The pattern is kept
/// (explicit zeros), so cached factorizations of the pattern stay valid.
void apply_dirichlet(const DirichletValues& bc, const CsrPattern& pattern, std::span<double> values,
                     std::span<double> b);
/// x_k = g_k at the constrained DOFs.
void set_dirichlet(const DirichletValues& bc, std::span<double> x);
/// r_k = 0 at the constrained DOFs (residuals of Newton with the values already in u).
void zero_dirichlet(const DirichletValues& bc, std::span<double> r);

/// Add ∫_Γ g·v over the facets of the conditions to b, each facet once, with the value the rule
/// gives it (the one rule of every kind of data, docs/semantics.md): a condition on a tag wins
/// over one on `all`, whatever their order; two conditions on tags that share a facet must give
/// it the same flux (an InvalidArgument naming both otherwise), and it is integrated once. A
/// flux on an interior facet is an InvalidArgument naming its tag: a Neumann condition is a
/// boundary condition. Each facet is integrated with its own geometry map
/// (select_facet_geometry(): curved line3/tri6/quad9 facets of second-order meshes), with a rule
/// two degrees higher on curved facets.
void assemble_neumann(const FunctionSpace& V, std::span<const Neumann> conditions, std::span<double> b);
inline void assemble_neumann(const FunctionSpace& V, const Neumann& n, std::span<double> b) {
  assemble_neumann(V, std::span<const Neumann>(&n, 1), b);
}

}  // namespace fem::assembly
