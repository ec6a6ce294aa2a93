// The mesh vocabulary type shared by every kernel: node coordinates, cells of one type, tagged
// boundary facets and the names of the physical tags. Immutable once built and shared through
// the store as shared_ptr<const Mesh>, so geometry is stored once and never copied.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fem/csr.hpp"
#include "fem/type_name.hpp"

namespace fem {

/// Cell types, Gmsh's first- and second-order Lagrange elements. Node order within a cell is
/// Gmsh's (vertices first, then edge, face and interior nodes; see docs/ARCHITECTURE.md).
enum class CellType : std::uint8_t {
  point,
  line2,
  line3,
  tri3,
  tri6,
  quad4,
  quad9,
  tet4,
  tet10,
  hex8,
  hex27
};

struct CellTypeInfo {
  CellType type;
  std::string_view name;  ///< "tri3", "hex27", ...
  int dim;                ///< topological dimension
  int num_nodes;          ///< nodes per cell
  int num_vertices;       ///< corner nodes per cell
  int order;              ///< polynomial order of the geometry
  CellType facet;         ///< type of its facets (the first facet for mixed prisms: none here)
  int num_facets;
  int gmsh_type;  ///< Gmsh element type number
  int vtk_type;   ///< VTK cell type number
};

const CellTypeInfo& cell_info(CellType type);
/// Cell type by its name ("tet4") or nullopt.
std::optional<CellType> cell_type_from_name(std::string_view name);
/// Cell type by Gmsh element type number, or nullopt for types this project does not support.
std::optional<CellType> cell_type_from_gmsh(int gmsh_type);

/// The name of a physical group ($PhysicalNames in Gmsh).
struct PhysicalName {
  int dim = 0;
  int tag = 0;
  std::string name;
};

/// A set of physical groups that entities of one dimension belong to together. Gmsh's physical
/// groups are sets: an element may be in several (MSH 2.2 writes it once per group, MSH 4.1 once
/// with its entity's several tags). Such a cell or facet is stored once, and its entry in
/// cell_tags()/facet_tags() is the set's `tag`: negative, so that it is no user's (a user's
/// physical tags are positive; 0 is "no group"). Mesh::in_group() and groups() read through it.
struct TagSet {
  int dim = 0;
  int tag = 0;               ///< < 0
  std::vector<int> members;  ///< the groups, positive, sorted, at least two
};

/// A mesh that is one part of a larger one (a rank's part of a distributed mesh, fem::dist)
/// lists its share of the whole mesh's boundary as the facets of this physical name (dimension
/// tdim - 1). "The whole boundary" (assembly::FacetSet::all()) then means those facets, not the
/// part's own boundary, which includes the interfaces between parts.
inline constexpr std::string_view boundary_facets_name = "fem:boundary";

class Mesh {
 public:
  /// Everything a mesh holds; build one and hand it to the Mesh constructor, which checks it.
  struct Data {
    int gdim = 0;  ///< coordinate dimension 1..3
    CellType cell_type = CellType::tri3;
    std::vector<double> coords;   ///< num_nodes × gdim
    std::vector<index_t> cells;   ///< num_cells × nodes per cell
    std::vector<int> cell_tags;   ///< physical tag per cell (empty: all 0)
    std::vector<index_t> facets;  ///< tagged boundary facets, num_facets × nodes per facet
    std::vector<int> facet_tags;  ///< physical tag per facet (empty: all 0)
    std::vector<PhysicalName> names;
    std::vector<TagSet> tag_sets;  ///< the sets that negative cell or facet tags stand for
    std::string source;            ///< where it came from (a file name), for messages
  };

  /// Checks sizes, node references and that coordinates are finite; throws InvalidArgument
  /// naming the cell, facet or node (and the source) otherwise.
  explicit Mesh(Data data);

  int gdim() const noexcept { return d_.gdim; }
  int tdim() const noexcept { return info_->dim; }
  CellType cell_type() const noexcept { return d_.cell_type; }
  const CellTypeInfo& cell_info() const noexcept { return *info_; }
  const CellTypeInfo& facet_info() const noexcept { return fem::cell_info(info_->facet); }

  index_t num_nodes() const noexcept { return static_cast<index_t>(d_.coords.size() / d_.gdim); }
  index_t num_cells() const noexcept { return static_cast<index_t>(d_.cells.size() / info_->num_nodes); }
  index_t num_facets() const noexcept {
    return static_cast<index_t>(d_.facets.size() / facet_info().num_nodes);
  }
  int nodes_per_cell() const noexcept { return info_->num_nodes; }
  int nodes_per_facet() const noexcept { return facet_info().num_nodes; }

  std::span<const double> coords() const noexcept { return d_.coords; }
  std::span<const double> node(index_t i) const noexcept {
    return std::span<const double>(d_.coords).subspan(static_cast<std::size_t>(i) * d_.gdim, d_.gdim);
  }
  std::span<const index_t> cells() const noexcept { return d_.cells; }
  std::span<const index_t> cell(index_t c) const noexcept {
    const auto n = static_cast<std::size_t>(info_->num_nodes);
    return std::span<const index_t>(d_.cells).subspan(c * n, n);
  }
  std::span<const int> cell_tags() const noexcept { return d_.cell_tags; }
  std::span<const index_t> facets() const noexcept { return d_.facets; }
  std::span<const index_t> facet(index_t f) const noexcept {
    const auto n = static_cast<std::size_t>(nodes_per_facet());
    return std::span<const index_t>(d_.facets).subspan(f * n, n);
  }
  std::span<const int> facet_tags() const noexcept { return d_.facet_tags; }

  const std::vector<PhysicalName>& names() const noexcept { return d_.names; }
  /// The tag of a physical name in dimension `dim` (any dimension when dim < 0).
  std::optional<int> tag_of(std::string_view name, int dim = -1) const;
  /// The name of (dim, tag), empty when it has none.
  std::string_view name_of(int dim, int tag) const;
  /// "'left' (dimension 1, tag 4), ..." for the physical names of dimension `dim` (all when
  /// dim < 0), "none" without any: what a message about an unknown name lists.
  std::string describe_names(int dim = -1) const;
  /// The tag a user names: a number as it is, or a physical name of dimension `dim` (of any
  /// dimension when dim < 0). The one resolver of every front end: a name the mesh lacks is an
  /// InvalidArgument naming it and listing the tags of that dimension with their names.
  int resolve_tag(std::string_view tag, int dim) const;
  /// The message of a tag (name or number) the mesh lacks, as resolve_tag throws it.
  std::string unknown_tag(std::string_view tag, int dim) const;
  /// Whether an entity of dimension `dim` whose tag (in cell_tags() or facet_tags()) is
  /// `entity_tag` belongs to the physical group `group`: the tag itself, or a member of its set.
  bool in_group(int dim, int entity_tag, int group) const noexcept {
    if (entity_tag == group) return true;
    if (entity_tag >= 0) return false;
    const TagSet* s = tag_set(dim, entity_tag);
    return s && std::binary_search(s->members.begin(), s->members.end(), group);
  }
  /// The groups of such an entity: {entity_tag}, or its set's members.
  std::vector<int> groups(int dim, int entity_tag) const;
  /// The set a negative tag of dimension `dim` stands for, or nullptr.
  const TagSet* tag_set(int dim, int tag) const noexcept;
  const std::vector<TagSet>& tag_sets() const noexcept { return d_.tag_sets; }
  /// The groups the cells (dim = tdim()) or boundary facets (dim = tdim() - 1) carry (the members
  /// of their sets), or that are named in another dimension, sorted (a distributed part's own
  /// share-of-the-boundary tag left out: it is no user's).
  std::vector<int> tags(int dim) const;
  /// `tags` of dimension `dim` with their names: "4 'left', 5 'right'", or "none".
  std::string describe_tags(std::span<const int> tags, int dim) const;
  const std::string& source() const noexcept { return d_.source; }

  /// Axis-aligned bounding box: {min x, min y, min z}, {max x, max y, max z}.
  std::pair<std::array<double, 3>, std::array<double, 3>> bounding_box() const;
  /// Memory held by the mesh in bytes.
  std::size_t bytes() const noexcept;
  /// All its data (e.g. to build a modified copy).
  const Data& data() const noexcept { return d_; }

 private:
  Data d_;
  const CellTypeInfo* info_;
};

}  // namespace fem

FEM_TYPE_NAME(fem::Mesh, "fem::Mesh");
