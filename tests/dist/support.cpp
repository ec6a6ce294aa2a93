#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "fem/gpu/keys.hpp"

namespace fem::test {

std::vector<std::pair<index_t, index_t>> original_keys(const assembly::FunctionSpace& V,
                                                       std::span<const index_t> original_node,
                                                       std::span<const index_t> original_cell) {
  const assembly::DofMap& dm = V.dofmap();
  std::vector<std::pair<index_t, index_t>> key(dm.num_nodes, {-1, -1});
  for (std::size_t m = 0; m < dm.vertex_node.size(); ++m)
    if (dm.vertex_node[m] >= 0) key[dm.vertex_node[m]] = {original_node[m], -1};
  if (dm.edges) {
    std::vector<std::uint64_t> pairs;
    std::vector<std::uint32_t> ids;
    dm.edges->export_entries(pairs, ids);
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const index_t a = original_node[gpu::pair_first(pairs[k])],
                    b = original_node[gpu::pair_second(pairs[k])];
      key[dm.node_of_edge(static_cast<index_t>(ids[k]))] = {std::min(a, b), std::max(a, b)};
    }
  }
  // Cell nodes (Q2): the cell's last node.
  const index_t first_cell_node = dm.num_vertex_nodes + dm.num_edges;
  for (index_t c = 0; c < V.mesh().num_cells(); ++c)
    for (int k = 0; k < dm.nodes_per_cell; ++k) {
      const index_t d = dm.cell_nodes[static_cast<std::size_t>(c) * dm.nodes_per_cell + k];
      if (d >= first_cell_node) key[d] = {-1 - original_cell[c], k};
    }
  return key;
}

namespace {
std::vector<index_t> iota(index_t n) {
  std::vector<index_t> v(n);
  for (index_t i = 0; i < n; ++i) v[i] = i;
  return v;
}
}  // namespace

std::map<std::pair<index_t, index_t>, std::vector<double>> by_key(const assembly::FunctionSpace& V,
                                                                  std::span<const double> u) {
  const auto keys = original_keys(V, iota(V.mesh().num_nodes()), iota(V.mesh().num_cells()));
  const int bs = V.components();
  std::map<std::pair<index_t, index_t>, std::vector<double>> out;
  for (std::size_t d = 0; d < keys.size(); ++d)
    out[keys[d]].assign(u.begin() + d * bs, u.begin() + (d + 1) * bs);
  return out;
}

std::map<std::pair<index_t, index_t>, std::vector<double>> gather_by_key(const assembly::FunctionSpace& V,
                                                                         const dist::IndexMap& map,
                                                                         std::span<const double> u) {
  const auto d = dist::distribution(V.mesh_key(), *V.store());
  const auto keys = original_keys(V, d->original_node, d->original_cell);
  const int bs = V.components();
  std::vector<index_t> mine_keys;
  std::vector<double> mine_values;
  for (std::size_t n = 0; n < keys.size(); ++n)
    if (map.owns_node(static_cast<index_t>(n))) {
      mine_keys.push_back(keys[n].first), mine_keys.push_back(keys[n].second);
      mine_values.insert(mine_values.end(), u.begin() + n * bs, u.begin() + (n + 1) * bs);
    }
  const MPI_Comm comm = map.comm();
  const int ranks = dist::size(comm), me = dist::rank(comm);
  auto gather = [&](auto& local, MPI_Datatype type) {
    std::vector<int> counts(ranks), offsets(ranks + 1, 0);
    int n = static_cast<int>(local.size());
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
    for (int p = 0; p < ranks; ++p) offsets[p + 1] = offsets[p] + counts[p];
    std::remove_reference_t<decltype(local)> all(me == 0 ? offsets[ranks] : 0);
    MPI_Gatherv(local.data(), n, type, all.data(), counts.data(), offsets.data(), type, 0, comm);
    return all;
  };
  const auto all_keys = gather(mine_keys, MPI_INT);
  const auto all_values = gather(mine_values, MPI_DOUBLE);
  std::map<std::pair<index_t, index_t>, std::vector<double>> out;
  for (std::size_t k = 0; k < all_keys.size() / 2; ++k) {
    auto& v = out[{all_keys[2 * k], all_keys[2 * k + 1]}];
    EXPECT_TRUE(v.empty()) << "node owned twice";
    v.assign(all_values.begin() + k * bs, all_values.begin() + (k + 1) * bs);
  }
  return out;
}

double relative_difference(const std::map<std::pair<index_t, index_t>, std::vector<double>>& a,
                           const std::map<std::pair<index_t, index_t>, std::vector<double>>& b) {
  double diff = 0, scale = 0;
  for (const auto& [key, vb] : b) {
    auto it = a.find(key);
    if (it == a.end() || it->second.size() != vb.size()) return std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < vb.size(); ++k) {
      diff = std::max(diff, std::abs(it->second[k] - vb[k]));
      scale = std::max(scale, std::abs(vb[k]));
    }
  }
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  return scale > 0 ? diff / scale : diff;
}

std::shared_ptr<const Mesh> whole_mesh(MPI_Comm comm, const std::string& spec) {
  if (dist::rank(comm) != 0) return nullptr;
  if (spec.rfind("gen:", 0) == 0) return std::make_shared<const Mesh>(mesh::generate(spec));
  return std::make_shared<const Mesh>(mesh::read(std::string(FEM_MESHES_DIR) + "/" + spec));
}

}  // namespace fem::test
