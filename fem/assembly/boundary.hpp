// Boundary conditions on tagged facets: Dirichlet values imposed so symmetric systems stay
// symmetric (lifting into the right-hand side, so Cholesky still applies), and Neumann fluxes.
#pragma once

#include <span>
#include <vector>

#include "fem/assembly/forms.hpp"
#include "fem/assembly/space.hpp"
#include "fem/layout.hpp"

namespace fem::assembly {

/// Boundary facets picked by physical tag, or the whole boundary (tagged or not).
struct FacetSet {
  std::vector<int> tags;
  bool whole_boundary = false;
  static FacetSet all() { return {{}, true}; }
  static FacetSet tagged(std::vector<int> tags) { return {std::move(tags), false}; }
};

/// A tag that no boundary facet of the whole mesh carries is an InvalidArgument naming it and
/// the facet tags present (with their names), on every process of `layout`. A part of a
/// distributed mesh checked without its layout is not checked (the whole mesh is).
void check_facet_tags(const Mesh& mesh, std::span<const int> tags, const Layout& layout = Layout::serial());

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
  /// The same DOFs with zero values (for Newton increments).
  DirichletValues homogeneous() const { return {dofs, std::vector<double>(dofs.size(), 0.0)}; }
};

/// Evaluate the conditions at the DOFs' coordinates; where conditions overlap the later wins.
DirichletValues dirichlet_values(const FunctionSpace& V, std::span<const Dirichlet> conditions);

/// Impose the values on A x = b symmetrically: b_i -= Σ_j A_ij g_j for free rows, constrained
/// rows and columns are zeroed but for their diagonal, and b_k = A_kk g_k. The pattern is kept
/// (explicit zeros), so cached factorizations of the pattern stay valid.
void apply_dirichlet(const DirichletValues& bc, const CsrPattern& pattern, std::span<double> values,
                     std::span<double> b);
/// x_k = g_k at the constrained DOFs.
void set_dirichlet(const DirichletValues& bc, std::span<double> x);
/// r_k = 0 at the constrained DOFs (residuals of Newton with the values already in u).
void zero_dirichlet(const DirichletValues& bc, std::span<double> r);

/// Add ∫_Γ g·v over the facets of `n.tags` to b. Each facet is integrated with its own geometry
/// map (select_facet_geometry(): curved line3/tri6/quad9 facets of second-order meshes), with a
/// rule two degrees higher on curved facets.
void assemble_neumann(const FunctionSpace& V, const Neumann& n, std::span<double> b);

}  // namespace fem::assembly
