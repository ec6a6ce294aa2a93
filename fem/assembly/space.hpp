// Lagrange function spaces: P1/P2 on simplices, Q1/Q2 on quadrilaterals, Q1 on hexahedra,
// scalar or with several components. The DOF map is cached in the store per mesh version.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fem/gpu/hash_table.hpp"
#include "fem/mesh.hpp"
#include "fem/store.hpp"

namespace fem::assembly {

/// The numbering of a scalar Lagrange space's nodes (its DOFs; vector spaces give each node
/// `components` consecutive DOFs). Vertex nodes come first (mesh nodes referenced as cell
/// vertices, in mesh order), then one node per edge (P2, Q2) in order of first appearance, then
/// one per cell (Q2).
///
/// When the space's nodes are exactly the mesh's nodes (P1/Q1 on a first-order mesh whose
/// every node is a vertex), cell_nodes and coordinates are views of the mesh's own arrays (kept
/// alive by `mesh`), not copies. Move-only: the views may point into the owned arrays.
struct DofMap {
  DofMap() = default;
  DofMap(DofMap&&) = default;
  DofMap& operator=(DofMap&&) = default;
  DofMap(const DofMap&) = delete;
  DofMap& operator=(const DofMap&) = delete;

  CellType element = CellType::point;  ///< the element whose nodes these are (tri6 for P2 on triangles)
  int nodes_per_cell = 0;
  index_t num_nodes = 0;
  index_t num_vertex_nodes = 0;
  index_t num_edges = 0;
  std::span<const index_t> cell_nodes;  ///< num_cells × nodes_per_cell, in the element's node order
  std::span<const double> coordinates;  ///< num_nodes × gdim: where each node sits
  std::vector<index_t> vertex_node;     ///< mesh node -> space node, -1 for mesh nodes that are not vertices
  /// Sorted vertex pair (fem::gpu::pack_sorted_pair of mesh nodes) -> edge id, for P2/Q2.
  std::shared_ptr<const gpu::HashTable64x32> edges;

  index_t node_of_edge(index_t edge) const noexcept { return num_vertex_nodes + edge; }
  /// Bytes this DOF map owns (shared mesh arrays not counted).
  std::size_t bytes() const noexcept;

  std::vector<index_t> owned_cell_nodes;  ///< what cell_nodes views, unless it views the mesh
  std::vector<double> owned_coordinates;  ///< what coordinates views, unless it views the mesh
  std::shared_ptr<const Mesh> mesh;       ///< keeps the viewed mesh arrays alive
};

class FunctionSpace {
 public:
  /// The Lagrange space of `degree` (1 or 2) with `components` components on the mesh published
  /// under `mesh_key`; its DOF map is cached in `store` as `<mesh_key>#dofmap/<P|Q><degree>`.
  FunctionSpace(std::string mesh_key, int degree, int components = 1, Store& store = fem::store());
  /// The same on a mesh that is not in a store (the DOF map is computed here, not cached).
  FunctionSpace(std::shared_ptr<const Mesh> mesh, int degree, int components = 1);

  const Mesh& mesh() const noexcept { return *mesh_; }
  const std::shared_ptr<const Mesh>& mesh_ptr() const noexcept { return mesh_; }
  /// Empty when the mesh is not in a store.
  const std::string& mesh_key() const noexcept { return mesh_key_; }
  Version mesh_version() const noexcept { return mesh_version_; }
  Store* store() const noexcept { return store_; }

  int degree() const noexcept { return degree_; }
  int components() const noexcept { return components_; }
  const DofMap& dofmap() const noexcept { return *dofmap_; }
  const std::shared_ptr<const DofMap>& dofmap_ptr() const noexcept { return dofmap_; }
  /// The scalar element (tri3 = P1 on triangles, tri6 = P2, quad9 = Q2, ...).
  CellType element() const noexcept { return dofmap_->element; }
  index_t num_dofs() const noexcept { return dofmap_->num_nodes * components_; }
  /// "P1", "P2x3", "Q1", ...: used in cache keys.
  std::string name() const;
  /// The space in words, for messages: "P2 of mesh 'm' (version 3, 81 DOFs)".
  std::string describe() const;

 private:
  std::shared_ptr<const Mesh> mesh_;
  std::string mesh_key_;
  Version mesh_version_ = 0;
  Store* store_ = nullptr;
  int degree_, components_;
  std::shared_ptr<const DofMap> dofmap_;
};

/// Which space a piece of data was made for (Dirichlet values), so that it is refused on another
/// one: the mesh object (a newer version under the same key is another mesh, and so is another
/// mesh of the same size), the degree and the components. Empty (known() false) for data made
/// by hand, which only a count can check.
class SpaceId {
 public:
  SpaceId() = default;
  explicit SpaceId(const FunctionSpace& V);

  bool known() const noexcept { return degree_ > 0; }
  /// The same mesh object, degree and components (two unknown ids are the same).
  bool operator==(const SpaceId& other) const noexcept;
  /// FunctionSpace::describe() of the space, or "a space not recorded".
  std::string describe() const;

 private:
  std::weak_ptr<const Mesh> mesh_;  ///< identity only (owner comparison): never locked
  std::string description_;
  int degree_ = 0, components_ = 0;
};

/// The element type of the degree-`degree` Lagrange space on cells of `type` (tri6 for P2 on
/// tri3 or tri6 meshes). Throws InvalidArgument for unsupported pairs (e.g. Q2 on hexahedra).
CellType lagrange_element(CellType type, int degree);

/// Build the DOF map of the degree-`degree` space on `mesh` (what FunctionSpace caches).
DofMap build_dofmap(std::shared_ptr<const Mesh> mesh, int degree);

}  // namespace fem::assembly

FEM_TYPE_NAME(fem::assembly::DofMap, "fem::assembly::DofMap");
