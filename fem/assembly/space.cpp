// DOF maps of Lagrange spaces: vertex nodes, then edge nodes numbered through the hash table's
// edge numbering, then cell nodes.
#include "fem/assembly/space.hpp"

#include <algorithm>

#include "fem/error.hpp"
#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/lagrange.hpp"
#include "fem/memory.hpp"
#include "fem/reference_cell.hpp"

namespace fem::assembly {
namespace {

std::string where(const Mesh& m) {
  return m.source().empty() ? std::string("mesh") : "mesh '" + m.source() + "'";
}

bool tensor_cell(CellType t) {
  return t == CellType::quad4 || t == CellType::quad9 || t == CellType::hex8 || t == CellType::hex27;
}

}  // namespace

CellType lagrange_element(CellType type, int degree) {
  FEM_EXPECTS(degree == 1 || degree == 2, "Lagrange spaces of degree 1 or 2 are supported, not {}", degree);
  const bool p2 = degree == 2;
  switch (type) {
    case CellType::line2:
    case CellType::line3:
      return p2 ? CellType::line3 : CellType::line2;
    case CellType::tri3:
    case CellType::tri6:
      return p2 ? CellType::tri6 : CellType::tri3;
    case CellType::quad4:
    case CellType::quad9:
      return p2 ? CellType::quad9 : CellType::quad4;
    case CellType::tet4:
    case CellType::tet10:
      return p2 ? CellType::tet10 : CellType::tet4;
    case CellType::hex8:
      FEM_EXPECTS(
          !p2, "Q2 on hexahedra is not supported (it needs face DOFs); use Q1, or a tetrahedral mesh for P2");
      return CellType::hex8;
    default:
      break;
  }
  throw InvalidArgument(
      fmt::format("no Lagrange space of degree {} on {} cells", degree, cell_info(type).name));
}

DofMap build_dofmap(std::shared_ptr<const Mesh> mesh_ptr, int degree) {
  FEM_EXPECTS(mesh_ptr != nullptr, "build_dofmap needs a mesh");
  const Mesh& mesh = *mesh_ptr;
  const CellType e = lagrange_element(mesh.cell_type(), degree);
  FEM_EXPECTS(mesh.cell_type() != CellType::hex27, "{}: hex27 geometry is not supported by the assembly",
              where(mesh));
  const auto& info = mesh.cell_info();
  const int nv = info.num_vertices, npc = cell_info(e).num_nodes;
  const index_t nc = mesh.num_cells();
  DofMap d;
  d.element = e;
  d.nodes_per_cell = npc;

  // Vertex nodes: the mesh nodes that are cell vertices, in mesh order.
  // (Big arrays in prefaulted memory: faulting 4 KB pages one at a time costs more than the loops.)
  resize_prefaulted(d.vertex_node, static_cast<std::size_t>(mesh.num_nodes()));
  std::fill(d.vertex_node.begin(), d.vertex_node.end(), -1);
  for (index_t c = 0; c < nc; ++c)
    for (int v = 0; v < nv; ++v) d.vertex_node[mesh.cell(c)[v]] = 0;
  for (index_t i = 0; i < mesh.num_nodes(); ++i)
    if (d.vertex_node[i] == 0) d.vertex_node[i] = d.num_vertex_nodes++;
  d.num_nodes = d.num_vertex_nodes;

  gpu::EdgeNumbering edges;
  const bool with_edges = cell_info(e).num_nodes > nv;
  if (with_edges) {
    edges = gpu::number_edges(gpu::Executor::host(), mesh);
    d.num_edges = edges.num_edges;
    d.num_nodes += edges.num_edges;
    d.edges = edges.table;
  }
  const bool with_cell_nodes = e == CellType::quad9;
  const index_t first_cell_node = d.num_nodes;
  if (with_cell_nodes) d.num_nodes += nc;

  // The space's nodes are the mesh's nodes: view the mesh's cells and coordinates.
  if (!with_edges && !with_cell_nodes && npc == mesh.nodes_per_cell() &&
      d.num_vertex_nodes == mesh.num_nodes()) {
    d.cell_nodes = mesh.cells();
    d.coordinates = mesh.coords();
    d.mesh = std::move(mesh_ptr);
    return d;
  }

  const int ne = with_edges ? static_cast<int>(local_edges(mesh.cell_type()).size()) : 0;
  resize_prefaulted(d.owned_cell_nodes, static_cast<std::size_t>(nc) * npc);
  for (index_t c = 0; c < nc; ++c) {
    index_t* out = &d.owned_cell_nodes[static_cast<std::size_t>(c) * npc];
    for (int v = 0; v < nv; ++v) out[v] = d.vertex_node[mesh.cell(c)[v]];
    for (int k = 0; k < ne; ++k)
      out[nv + k] = d.num_vertex_nodes + edges.cell_edges[static_cast<std::size_t>(c) * ne + k];
    if (with_cell_nodes) out[npc - 1] = first_cell_node + c;
  }

  // Node coordinates: vertex nodes are mesh nodes (copied once per node); the other nodes
  // (edge and cell nodes of P2/Q2) go through each cell's geometry map, so they sit on curved
  // second-order cells.
  const int gdim = mesh.gdim(), ng = mesh.nodes_per_cell();
  resize_prefaulted(d.owned_coordinates, static_cast<std::size_t>(d.num_nodes) * gdim);
  d.cell_nodes = d.owned_cell_nodes;
  d.coordinates = d.owned_coordinates;
  for (index_t i = 0; i < mesh.num_nodes(); ++i)
    if (d.vertex_node[i] >= 0)
      for (int k = 0; k < gdim; ++k)
        d.owned_coordinates[static_cast<std::size_t>(d.vertex_node[i]) * gdim + k] = mesh.node(i)[k];
  if (npc > nv) {
    const auto ref = reference_nodes(e);
    std::vector<double> psi(ng), dpsi(ng * 3);
    std::vector<std::vector<double>> psi_at(npc);
    for (int k = nv; k < npc; ++k) {
      FEM_EXPECTS(lagrange_eval(mesh.cell_type(), ref[k].data(), psi.data(), dpsi.data()),
                  "{}: no geometry map for {} cells", where(mesh), info.name);
      psi_at[k] = psi;
    }
    for (index_t c = 0; c < nc; ++c)
      for (int k = nv; k < npc; ++k) {
        double* x = &d.owned_coordinates[static_cast<std::size_t>(
                                             d.owned_cell_nodes[static_cast<std::size_t>(c) * npc + k]) *
                                         gdim];
        for (int d2 = 0; d2 < gdim; ++d2) {
          double s = 0;
          for (int g = 0; g < ng; ++g) s += psi_at[k][g] * mesh.node(mesh.cell(c)[g])[d2];
          x[d2] = s;
        }
      }
  }
  return d;
}

std::size_t DofMap::bytes() const noexcept {
  return sizeof(*this) + (owned_cell_nodes.capacity() + vertex_node.capacity()) * sizeof(index_t) +
         owned_coordinates.capacity() * sizeof(double) + (edges ? edges->bytes() : 0);
}

FunctionSpace::FunctionSpace(std::string mesh_key, int degree, int components, Store& store)
    : mesh_key_(std::move(mesh_key)), store_(&store), degree_(degree), components_(components) {
  FEM_EXPECTS(components >= 1 && components <= 3, "a space has 1 to 3 components, not {}", components);
  auto mesh = store.get_versioned<Mesh>(mesh_key_);
  mesh_ = mesh.value;
  mesh_version_ = mesh.version;
  lagrange_element(mesh_->cell_type(), degree);  // reject unsupported spaces before caching anything
  const std::string key =
      fmt::format("{}#dofmap/{}{}", mesh_key_, tensor_cell(mesh_->cell_type()) ? 'Q' : 'P', degree);
  dofmap_ = store.get_or_compute<DofMap>(key, {{mesh_key_, mesh_version_}}, [&] {
    store.count("assembly.dofmap_builds");
    return build_dofmap(mesh_, degree);
  });
}

FunctionSpace::FunctionSpace(std::shared_ptr<const Mesh> mesh, int degree, int components)
    : mesh_(std::move(mesh)), degree_(degree), components_(components) {
  FEM_EXPECTS(mesh_ != nullptr, "FunctionSpace needs a mesh");
  FEM_EXPECTS(components >= 1 && components <= 3, "a space has 1 to 3 components, not {}", components);
  dofmap_ = std::make_shared<const DofMap>(build_dofmap(mesh_, degree));
}

std::string FunctionSpace::name() const {
  std::string n = fmt::format("{}{}", tensor_cell(mesh_->cell_type()) ? 'Q' : 'P', degree_);
  if (components_ > 1) n += fmt::format("x{}", components_);
  return n;
}

std::string FunctionSpace::describe() const {
  if (!mesh_key_.empty())
    return fmt::format("{} of mesh '{}' (version {}, {} DOFs)", name(), mesh_key_, mesh_version_, num_dofs());
  return fmt::format("{} of a {} not in a store ({} DOFs)", name(), where(*mesh_), num_dofs());
}

SpaceId::SpaceId(const FunctionSpace& V)
    : mesh_(V.mesh_ptr()), description_(V.describe()), degree_(V.degree()), components_(V.components()) {}

bool SpaceId::operator==(const SpaceId& other) const noexcept {
  return degree_ == other.degree_ && components_ == other.components_ && !mesh_.owner_before(other.mesh_) &&
         !other.mesh_.owner_before(mesh_);
}

std::string SpaceId::describe() const { return known() ? description_ : std::string("a space not recorded"); }

}  // namespace fem::assembly
