// Mesh partitions: METIS on the dual graph of the cells, node owners among the parts
// that touch each node, and the communication a partition implies (statistics without METIS).
#include "fem/mesh/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <span>

#include "fem/error.hpp"

#ifdef FEM_HAVE_METIS
#include <metis.h>
#endif

namespace fem::mesh {
namespace {

/// Corner vertices two cells must share to be neighbours in the dual graph: those of a facet
/// (1 for lines and points, 2 for triangles and quadrilaterals, 3 for tets, 4 for hexes).
int ncommon_of(const Mesh& mesh) { return std::max(1, mesh.facet_info().num_vertices); }

/// Owners of the nodes: a node that one part's cells touch belongs to it; a node on an interface
/// goes to the touching part that owns the fewest nodes so far (nodes in index order, ties to the
/// lowest part), which balances the owned nodes as METIS's node partition does; -1 for nodes no
/// cell references.
std::vector<int> owners(const Mesh& mesh, const std::vector<int>& cell_part, int parts) {
  const auto nn = static_cast<std::size_t>(mesh.num_nodes());
  constexpr int none = -1, several = -2;
  std::vector<int> only(nn, none);
  for (index_t c = 0; c < mesh.num_cells(); ++c) {
    const int p = cell_part[static_cast<std::size_t>(c)];
    for (const index_t n : mesh.cell(c)) {
      int& o = only[static_cast<std::size_t>(n)];
      o = o == none || o == p ? p : several;
    }
  }
  std::vector<std::int64_t> owned(static_cast<std::size_t>(parts), 0);
  for (int o : only)
    if (o >= 0) ++owned[static_cast<std::size_t>(o)];
  std::vector<int> owner(only);
  const NodeCells node_cells(mesh);
  for (std::size_t i = 0; i < nn; ++i) {
    if (only[i] != several) continue;
    int best = -1;
    for (const index_t c : node_cells.of(static_cast<index_t>(i))) {
      const int p = cell_part[static_cast<std::size_t>(c)];
      if (best < 0 || owned[static_cast<std::size_t>(p)] < owned[static_cast<std::size_t>(best)] ||
          (owned[static_cast<std::size_t>(p)] == owned[static_cast<std::size_t>(best)] && p < best))
        best = p;
    }
    owner[i] = best;
    ++owned[static_cast<std::size_t>(best)];
  }
  return owner;
}

#ifdef FEM_HAVE_METIS
const char* metis_status(int rc) {
  switch (rc) {
    case METIS_ERROR_INPUT:
      return "input error";
    case METIS_ERROR_MEMORY:
      return "out of memory";
    default:
      return "error";
  }
}

/// Whether a graph (CSR) is connected: METIS refuses contiguous parts of a disconnected graph
/// (and says so on standard error).
bool connected(idx_t n, const idx_t* xadj, const idx_t* adjncy) {
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  std::vector<idx_t> stack{0};
  seen[0] = 1;
  idx_t reached = 1;
  while (!stack.empty()) {
    const idx_t v = stack.back();
    stack.pop_back();
    for (idx_t k = xadj[v]; k < xadj[v + 1]; ++k) {
      const idx_t w = adjncy[k];
      if (!seen[static_cast<std::size_t>(w)]) {
        seen[static_cast<std::size_t>(w)] = 1;
        ++reached;
        stack.push_back(w);
      }
    }
  }
  return reached == n;
}

/// The part of every cell: METIS_PartGraphKway on the dual graph (cells sharing ncommon corner
/// vertices), built once (METIS_PartMeshDual would build it again after the connectivity check).
void metis_parts(const Mesh& mesh, int parts, std::vector<int>& cell_part) {
  const std::int64_t ne = mesh.num_cells();
  const int nv = mesh.cell_info().num_vertices;
  const std::int64_t entries = ne * nv;
  FEM_EXPECTS(entries <= std::numeric_limits<idx_t>::max(),
              "partition: {} cells of {} corner vertices ({} entries) exceed METIS's {}-bit indices", ne, nv,
              entries, 8 * sizeof(idx_t));
  std::vector<idx_t> eptr(static_cast<std::size_t>(ne) + 1), eind(static_cast<std::size_t>(entries));
  for (std::int64_t c = 0; c < ne; ++c) {
    eptr[static_cast<std::size_t>(c)] = static_cast<idx_t>(c * nv);
    const auto cell = mesh.cell(static_cast<index_t>(c));
    for (int k = 0; k < nv; ++k)
      eind[static_cast<std::size_t>(c * nv + k)] = cell[static_cast<std::size_t>(k)];
  }
  eptr.back() = static_cast<idx_t>(entries);

  idx_t ne_i = static_cast<idx_t>(ne), nn = mesh.num_nodes(), ncommon = ncommon_of(mesh), nparts = parts;
  idx_t numflag = 0, ncon = 1;
  idx_t* xadj = nullptr;
  idx_t* adjncy = nullptr;
  int rc = METIS_MeshToDual(&ne_i, &nn, eptr.data(), eind.data(), &ncommon, &numflag, &xadj, &adjncy);
  if (rc != METIS_OK)
    throw Error(fmt::format("METIS_MeshToDual failed on {} cells: {} (code {})", ne, metis_status(rc), rc));
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  options[METIS_OPTION_SEED] = 0;
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_CONTIG] = connected(ne_i, xadj, adjncy) ? 1 : 0;
  static_assert(sizeof(idx_t) == sizeof(int), "cell_part is handed to METIS as idx_t");
  cell_part.assign(static_cast<std::size_t>(ne), 0);
  idx_t objval = 0;
  rc = METIS_PartGraphKway(&ne_i, &ncon, xadj, adjncy, nullptr, nullptr, nullptr, &nparts, nullptr, nullptr,
                           options, &objval, reinterpret_cast<idx_t*>(cell_part.data()));
  METIS_Free(xadj);
  METIS_Free(adjncy);
  if (rc != METIS_OK)
    throw Error(fmt::format("METIS_PartGraphKway failed on {} cells into {} parts: {} (code {})", ne, parts,
                            metis_status(rc), rc));
}
#endif

}  // namespace

NodeCells::NodeCells(const Mesh& mesh) {
  const std::span<const index_t> conn = mesh.cells();
  const auto nn = static_cast<std::size_t>(mesh.num_nodes());
  const auto npc = static_cast<std::size_t>(mesh.nodes_per_cell());
  offsets.assign(nn + 1, 0);
  for (const index_t n : conn) ++offsets[static_cast<std::size_t>(n) + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  cells.resize(conn.size());
  std::vector<std::size_t> next(offsets.begin(), offsets.end() - 1);
  for (std::size_t k = 0; k < conn.size(); ++k)
    cells[next[static_cast<std::size_t>(conn[k])]++] = static_cast<index_t>(k / npc);
}

Partition partition(const Mesh& mesh, int parts) {
  const index_t nc = mesh.num_cells();
  FEM_EXPECTS(parts >= 1, "partition: {} parts: there must be at least 1", parts);
  FEM_EXPECTS(parts == 1 || parts <= nc,
              "partition: {} parts of a mesh of {} cells: at most one part per cell", parts, nc);
  Partition p;
  p.parts = parts;
  if (parts == 1) {
    p.cell_part.assign(static_cast<std::size_t>(nc), 0);
  } else if (parts == nc) {
    p.cell_part.resize(static_cast<std::size_t>(nc));
    std::iota(p.cell_part.begin(), p.cell_part.end(), 0);
  } else {
#ifdef FEM_HAVE_METIS
    metis_parts(mesh, parts, p.cell_part);
#else
    throw NotCompiled("METIS", fmt::format("partitioning a mesh into {} parts", parts));
#endif
  }
  p.node_owner = owners(mesh, p.cell_part, parts);
  return p;
}

PartitionStats partition_stats(const Mesh& mesh, const Partition& partition) {
  const int P = partition.parts;
  const index_t nc = mesh.num_cells(), nn = mesh.num_nodes();
  FEM_EXPECTS(P >= 1, "partition_stats: {} parts: there must be at least 1", P);
  FEM_EXPECTS(partition.cell_part.size() == static_cast<std::size_t>(nc),
              "partition_stats: {} cell parts for a mesh of {} cells", partition.cell_part.size(), nc);
  FEM_EXPECTS(partition.node_owner.size() == static_cast<std::size_t>(nn),
              "partition_stats: {} node owners for a mesh of {} nodes", partition.node_owner.size(), nn);
  const auto& part = partition.cell_part;
  const auto& owner = partition.node_owner;

  PartitionStats s;
  s.parts = P;
  s.cells.assign(static_cast<std::size_t>(P), 0);
  s.owned_nodes.assign(static_cast<std::size_t>(P), 0);
  s.ghost_nodes.assign(static_cast<std::size_t>(P), 0);
  s.neighbours.assign(static_cast<std::size_t>(P), 0);
  for (index_t c = 0; c < nc; ++c) {
    const int q = part[static_cast<std::size_t>(c)];
    FEM_EXPECTS(q >= 0 && q < P, "partition_stats: cell {} is in part {}, not one of 0..{}", c, q, P - 1);
    ++s.cells[static_cast<std::size_t>(q)];
  }

  const NodeCells node_cells(mesh);
  std::vector<char> interface(static_cast<std::size_t>(nn), 0);
  std::vector<std::vector<int>> neighbours(static_cast<std::size_t>(P));
  std::vector<int> touching;
  for (index_t n = 0; n < nn; ++n) {
    touching.clear();
    for (const index_t c : node_cells.of(n)) touching.push_back(part[static_cast<std::size_t>(c)]);
    std::sort(touching.begin(), touching.end());
    touching.erase(std::unique(touching.begin(), touching.end()), touching.end());
    const int o = owner[static_cast<std::size_t>(n)];
    if (touching.empty()) {
      FEM_EXPECTS(o == -1, "partition_stats: node {} is in no cell but has owner {} (must be -1)", n, o);
      continue;
    }
    FEM_EXPECTS(std::binary_search(touching.begin(), touching.end(), o),
                "partition_stats: node {} is owned by part {}, which none of its cells is in", n, o);
    ++s.owned_nodes[static_cast<std::size_t>(o)];
    for (const int q : touching)
      if (q != o) ++s.ghost_nodes[static_cast<std::size_t>(q)];
    if (touching.size() < 2) continue;
    interface[static_cast<std::size_t>(n)] = 1;
    ++s.interface_nodes;
    for (const int a : touching)
      for (const int b : touching) {
        auto& list = neighbours[static_cast<std::size_t>(a)];
        if (a != b && std::find(list.begin(), list.end(), b) == list.end()) list.push_back(b);
      }
  }
  for (int q = 0; q < P; ++q)
    s.neighbours[static_cast<std::size_t>(q)] = static_cast<int>(neighbours[q].size());
  s.total_ghost_nodes = std::accumulate(s.ghost_nodes.begin(), s.ghost_nodes.end(), index_t{0});

  // Edge cut: pairs (c, d), c < d, in different parts sharing at least ncommon corner vertices.
  // Every vertex such a pair shares is touched by both parts, so only interface vertices are visited.
  const int nv = mesh.cell_info().num_vertices, ncommon = ncommon_of(mesh);
  std::vector<index_t> other;
  for (index_t c = 0; c < nc; ++c) {
    const int pc = part[static_cast<std::size_t>(c)];
    const auto cell = mesh.cell(c);
    other.clear();
    for (int k = 0; k < nv; ++k) {
      const index_t v = cell[static_cast<std::size_t>(k)];
      if (!interface[static_cast<std::size_t>(v)]) continue;
      for (const index_t d : node_cells.of(v))
        if (d > c && part[static_cast<std::size_t>(d)] != pc) other.push_back(d);
    }
    std::sort(other.begin(), other.end());
    for (std::size_t i = 0; i < other.size();) {
      std::size_t j = i;
      while (j < other.size() && other[j] == other[i]) ++j;
      if (static_cast<int>(j - i) >= ncommon) ++s.edge_cut;
      i = j;
    }
  }

  auto imbalance = [P](const std::vector<index_t>& v) {
    const double total = static_cast<double>(std::accumulate(v.begin(), v.end(), std::int64_t{0}));
    if (total <= 0) return 1.0;
    return static_cast<double>(*std::max_element(v.begin(), v.end())) / (total / P);
  };
  s.cell_imbalance = imbalance(s.cells);
  s.node_imbalance = imbalance(s.owned_nodes);
  return s;
}

}  // namespace fem::mesh
