// Rank 0 partitions and packs one part per rank; every rank unpacks its part into a fem::Mesh.
#include "fem/dist/distribute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "fem/assembly/boundary.hpp"
#include "fem/dist/session.hpp"
#include "fem/mesh/partition.hpp"

namespace fem::dist {

std::size_t Distribution::bytes() const noexcept {
  return sizeof(*this) +
         (global_node.size() + original_node.size() + original_cell.size()) * sizeof(index_t) +
         node_owner.size() * sizeof(int);
}

namespace {

// One rank's part as it travels: everything a Mesh::Data and a Distribution need.
struct Part {
  std::vector<index_t> header;  // local nodes, owned nodes, cells, facets
  std::vector<double> coords;
  std::vector<index_t> cells, facets, global_node, original_node, original_cell;
  std::vector<int> cell_tags, facet_tags, node_owner;
};

// What every rank needs besides its part.
struct Common {
  int gdim = 0;
  int cell_type = 0;
  index_t global_nodes = 0, global_cells = 0;
  std::vector<index_t> first_owned;  // per rank
  std::vector<PhysicalName> names;
  std::vector<TagSet> tag_sets;
  std::string source;
};

// Sizes are checked in make_parts(), where a failure is agreed by every rank.
template <class T>
void send_vector(const std::vector<T>& v, int to, int tag, MPI_Comm comm) {
  MPI_Send(v.data(), static_cast<int>(v.size() * sizeof(T)), MPI_BYTE, to, tag, comm);
}

template <class T>
void recv_vector(std::vector<T>& v, int from, int tag, MPI_Comm comm) {
  MPI_Status status;
  MPI_Probe(from, tag, comm, &status);
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  v.resize(static_cast<std::size_t>(bytes) / sizeof(T));
  MPI_Recv(v.data(), bytes, MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE);
}

// Both directions of one Part, field by field in one order.
template <class F>
void for_each_field(Part& p, F&& f) {
  int tag = 100;
  f(p.header, tag++), f(p.coords, tag++), f(p.cells, tag++), f(p.facets, tag++), f(p.global_node, tag++);
  f(p.original_node, tag++), f(p.original_cell, tag++), f(p.cell_tags, tag++), f(p.facet_tags, tag++);
  f(p.node_owner, tag++);
}

void broadcast_string(std::string& s, MPI_Comm comm) {
  int n = static_cast<int>(s.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, comm);
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), n, MPI_CHAR, 0, comm);
}

void broadcast(Common& c, int ranks, MPI_Comm comm) {
  int ints[4] = {c.gdim, c.cell_type, c.global_nodes, c.global_cells};
  MPI_Bcast(ints, 4, MPI_INT, 0, comm);
  c.gdim = ints[0], c.cell_type = ints[1], c.global_nodes = ints[2], c.global_cells = ints[3];
  c.first_owned.resize(static_cast<std::size_t>(ranks));
  MPI_Bcast(c.first_owned.data(), ranks, MPI_INT, 0, comm);
  int names = static_cast<int>(c.names.size());
  MPI_Bcast(&names, 1, MPI_INT, 0, comm);
  c.names.resize(static_cast<std::size_t>(names));
  for (auto& n : c.names) {
    int dt[2] = {n.dim, n.tag};
    MPI_Bcast(dt, 2, MPI_INT, 0, comm);
    n.dim = dt[0], n.tag = dt[1];
    broadcast_string(n.name, comm);
  }
  int sets = static_cast<int>(c.tag_sets.size());
  MPI_Bcast(&sets, 1, MPI_INT, 0, comm);
  c.tag_sets.resize(static_cast<std::size_t>(sets));
  for (auto& t : c.tag_sets) {
    int head[3] = {t.dim, t.tag, static_cast<int>(t.members.size())};
    MPI_Bcast(head, 3, MPI_INT, 0, comm);
    t.dim = head[0], t.tag = head[1];
    t.members.resize(static_cast<std::size_t>(head[2]));
    MPI_Bcast(t.members.data(), head[2], MPI_INT, 0, comm);
  }
  broadcast_string(c.source, comm);
}

// Rank 0: the parts of `mesh` for `ranks` processes.
std::vector<Part> make_parts(const Mesh& mesh, int ranks, Common& common) {
  const mesh::Partition partition = mesh::partition(mesh, ranks);
  const index_t num_nodes = mesh.num_nodes(), num_cells = mesh.num_cells();
  const int npc = mesh.nodes_per_cell(), npf = mesh.nodes_per_facet();

  // Global numbers: referenced nodes ordered by (owner, original index).
  std::vector<index_t> first_owned(static_cast<std::size_t>(ranks) + 1, 0);
  for (index_t i = 0; i < num_nodes; ++i)
    if (partition.node_owner[i] >= 0) ++first_owned[partition.node_owner[i] + 1];
  std::partial_sum(first_owned.begin(), first_owned.end(), first_owned.begin());
  std::vector<index_t> global(num_nodes, -1), next(first_owned.begin(), first_owned.end() - 1);
  for (index_t i = 0; i < num_nodes; ++i)
    if (partition.node_owner[i] >= 0) global[i] = next[partition.node_owner[i]]++;

  // The facets each part receives: the tagged ones, and the whole boundary under the reserved
  // name (fem::boundary_facets_name), so that "the whole boundary" on a part excludes the
  // interfaces between parts.
  std::vector<index_t> facet_nodes(mesh.facets().begin(), mesh.facets().end());
  std::vector<int> facet_tags(mesh.facet_tags().begin(), mesh.facet_tags().end());
  if (facet_tags.empty()) facet_tags.assign(static_cast<std::size_t>(mesh.num_facets()), 0);
  int boundary_tag = 1;
  for (int t : facet_tags) boundary_tag = std::max(boundary_tag, t + 1);
  for (const auto& n : mesh.names()) boundary_tag = std::max(boundary_tag, n.tag + 1);
  {
    const auto boundary = assembly::select_facet_geometry(mesh, assembly::FacetSet::all());
    FEM_EXPECTS(boundary.nodes_per_facet == npf,
                "distribute: boundary facets of {} nodes, the mesh's have {}", boundary.nodes_per_facet, npf);
    facet_nodes.insert(facet_nodes.end(), boundary.nodes.begin(), boundary.nodes.end());
    facet_tags.insert(facet_tags.end(), boundary.size(), boundary_tag);
  }
  const auto num_facets = static_cast<index_t>(facet_tags.size());
  auto facet = [&](index_t f) {
    return std::span<const index_t>(facet_nodes).subspan(static_cast<std::size_t>(f) * npf, npf);
  };

  // Each facet goes with a cell it bounds (the first one holding all its nodes), so a Neumann
  // integral is counted once and the facet's nodes are local where it is.
  const mesh::NodeCells node_cells(mesh);
  std::vector<int> facet_part(static_cast<std::size_t>(num_facets), -1);
  for (index_t f = 0; f < num_facets; ++f) {
    const auto nodes = facet(f);
    for (const index_t c : node_cells.of(nodes[0])) {
      const auto cell = mesh.cell(c);
      if (std::all_of(nodes.begin(), nodes.end(),
                      [&](index_t n) { return std::find(cell.begin(), cell.end(), n) != cell.end(); })) {
        facet_part[f] = partition.cell_part[c];
        break;
      }
    }
    if (facet_part[f] < 0)
      throw InvalidArgument(
          fmt::format("distribute: tagged facet {} of '{}' (tag {}) bounds no cell of the mesh", f,
                      mesh.source(), facet_tags[f]));
  }

  std::vector<Part> parts(static_cast<std::size_t>(ranks));
  std::vector<index_t> local(num_nodes, -1);
  for (int p = 0; p < ranks; ++p) {
    Part& part = parts[p];
    std::vector<index_t> nodes;
    for (index_t c = 0; c < num_cells; ++c) {
      if (partition.cell_part[c] != p) continue;
      part.original_cell.push_back(c);
      for (index_t n : mesh.cell(c))
        if (local[n] < 0) local[n] = 0, nodes.push_back(n);
    }
    std::vector<index_t> facets;
    for (index_t f = 0; f < num_facets; ++f)
      if (facet_part[f] == p) facets.push_back(f);
    // Owned first, then ghosts, each in global order.
    std::sort(nodes.begin(), nodes.end(), [&](index_t a, index_t b) {
      const bool oa = partition.node_owner[a] == p, ob = partition.node_owner[b] == p;
      return oa != ob ? oa : global[a] < global[b];
    });
    const auto owned = static_cast<index_t>(
        std::count_if(nodes.begin(), nodes.end(), [&](index_t n) { return partition.node_owner[n] == p; }));
    FEM_EXPECTS(owned == first_owned[p + 1] - first_owned[p],
                "distribute: part {} owns {} nodes but touches {}", p, first_owned[p + 1] - first_owned[p],
                owned);
    const int gdim = mesh.gdim();
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const index_t n = nodes[k];
      local[n] = static_cast<index_t>(k);
      part.global_node.push_back(global[n]);
      part.node_owner.push_back(partition.node_owner[n]);
      part.original_node.push_back(n);
      const auto x = mesh.node(n);
      part.coords.insert(part.coords.end(), x.begin(), x.begin() + gdim);
    }
    part.cells.reserve(part.original_cell.size() * npc);
    for (index_t c : part.original_cell) {
      for (index_t n : mesh.cell(c)) part.cells.push_back(local[n]);
      if (!mesh.cell_tags().empty()) part.cell_tags.push_back(mesh.cell_tags()[c]);
    }
    for (index_t f : facets) {
      for (index_t n : facet(f)) part.facets.push_back(local[n]);
      part.facet_tags.push_back(facet_tags[f]);
    }
    if (part.original_cell.empty())
      throw Error(fmt::format("distribute '{}': the partition left part {} of {} without cells",
                              mesh.source(), p, ranks));
    const std::size_t bytes =
        std::max(part.coords.size() * sizeof(double), part.cells.size() * sizeof(index_t));
    FEM_EXPECTS(bytes < (std::size_t{1} << 31),
                "distribute '{}': part {} sends an array of {} bytes, more than one MPI message holds (use "
                "more ranks)",
                mesh.source(), p, bytes);
    part.header = {static_cast<index_t>(nodes.size()), owned, static_cast<index_t>(part.original_cell.size()),
                   static_cast<index_t>(facets.size())};
    for (index_t n : nodes) local[n] = -1;
  }

  common.gdim = mesh.gdim();
  common.cell_type = static_cast<int>(mesh.cell_type());
  common.global_nodes = first_owned.back();
  common.global_cells = num_cells;
  common.first_owned.assign(first_owned.begin(), first_owned.end() - 1);
  common.names = mesh.names();
  common.tag_sets = mesh.tag_sets();
  common.names.push_back({mesh.tdim() - 1, boundary_tag, std::string(boundary_facets_name)});
  common.source = mesh.source();
  return parts;
}

}  // namespace

std::shared_ptr<const Distribution> distribute(MPI_Comm comm, std::shared_ptr<const Mesh> mesh,
                                               const std::string& key, Store& store) {
  const int me = rank(comm), ranks = size(comm);
  Common common;
  std::vector<Part> parts;
  collective(comm, [&] {
    if (me != 0) return;
    FEM_EXPECTS(mesh != nullptr, "distribute '{}': rank 0 has no mesh", key);
    parts = make_parts(*mesh, ranks, common);
  });
  broadcast(common, ranks, comm);
  Part part;
  if (me == 0) {
    for (int p = 1; p < ranks; ++p)
      for_each_field(parts[p], [&](auto& v, int tag) { send_vector(v, p, tag, comm); });
    part = std::move(parts[0]);
    parts.clear();
  } else {
    for_each_field(part, [&](auto& v, int tag) { recv_vector(v, 0, tag, comm); });
  }

  auto dist = std::make_shared<Distribution>();
  dist->comm = comm;
  dist->rank = me;
  dist->size = ranks;
  dist->owned_nodes = part.header[1];
  dist->first_owned_node = common.first_owned[me];
  dist->global_nodes = common.global_nodes;
  dist->global_cells = common.global_cells;
  dist->global_node = std::move(part.global_node);
  dist->node_owner = std::move(part.node_owner);
  dist->original_node = std::move(part.original_node);
  dist->original_cell = std::move(part.original_cell);

  Mesh::Data data;
  data.gdim = common.gdim;
  data.cell_type = static_cast<CellType>(common.cell_type);
  data.coords = std::move(part.coords);
  data.cells = std::move(part.cells);
  data.cell_tags = std::move(part.cell_tags);
  data.facets = std::move(part.facets);
  data.facet_tags = std::move(part.facet_tags);
  data.names = std::move(common.names);
  data.tag_sets = std::move(common.tag_sets);
  data.source = ranks > 1 ? fmt::format("{} (part {} of {})", common.source, me, ranks) : common.source;
  collective(comm, [&] {
    const Version v = store.put(key, std::make_shared<const Mesh>(std::move(data)));
    store.put(key + "#dist", std::shared_ptr<const Distribution>(dist),
              PutOptions{}.derived_from({{key, v}}));
  });
  return dist;
}

std::shared_ptr<const Distribution> distribution(const std::string& mesh_key, const Store& store) {
  return store.get<Distribution>(mesh_key + "#dist");
}

}  // namespace fem::dist
