// Global DOF numbering by keys: a vertex node is known everywhere by its global mesh node, an
// edge node by the global numbers of its two vertices. Edge owners are decided by a "post
// office" (the owner of the edge's first vertex hears from every rank that has the edge and
// picks the lowest), then owners number their nodes contiguously and answer the ghosts.
#include "fem/dist/index_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "fem/dist/detail/petsc.hpp"
#include "fem/dist/distribute.hpp"
#include "fem/dist/session.hpp"
#include "fem/gpu/keys.hpp"

namespace fem::dist {
namespace {

struct Key {
  index_t a = -1, b = -1;  // global vertex numbers, a < b; b = -1 for a vertex node
  friend bool operator==(const Key&, const Key&) = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    return std::hash<std::uint64_t>()(gpu::pack_pair(k.a, k.b));
  }
};
struct Request {  // a key and the rank that asks
  Key key;
  index_t local = 0;
};

}  // namespace

IndexMap::IndexMap(const assembly::FunctionSpace& V, MPI_Comm comm)
    : comm_(comm), group_(comm), block_(V.components()) {
  FEM_EXPECTS(V.store() != nullptr && !V.mesh_key().empty(),
              "a distributed index map needs a space on a mesh published by fem::dist::distribute");
  const auto dist = distribution(V.mesh_key(), *V.store());
  const assembly::DofMap& dm = V.dofmap();
  const int me = rank(comm), ranks = size(comm);
  const index_t n = dm.num_nodes;

  // Each local node's key and, where known already, its owner.
  std::vector<Key> key(n);
  std::vector<int> owner(n, -1);
  for (index_t m = 0; m < static_cast<index_t>(dm.vertex_node.size()); ++m) {
    const index_t d = dm.vertex_node[m];
    if (d < 0) continue;
    key[d] = {dist->global_node[m], -1};
    owner[d] = dist->node_owner[m];
  }
  std::vector<int> post_office(n, -1);  // edges: the rank that decides their owner
  if (dm.edges) {
    std::vector<std::uint64_t> pairs;
    std::vector<std::uint32_t> ids;
    dm.edges->export_entries(pairs, ids);
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const index_t ma = gpu::pair_first(pairs[k]), mb = gpu::pair_second(pairs[k]);
      index_t ga = dist->global_node[ma], gb = dist->global_node[mb];
      const index_t d = dm.node_of_edge(static_cast<index_t>(ids[k]));
      key[d] = {std::min(ga, gb), std::max(ga, gb)};
      post_office[d] = dist->node_owner[ga < gb ? ma : mb];
    }
  }
  for (index_t d = dm.num_vertex_nodes + dm.num_edges; d < n; ++d) owner[d] = me;  // cell nodes

  // Edge owners: the lowest rank that has the edge.
  {
    std::vector<std::vector<Request>> ask(ranks);
    for (index_t d = 0; d < n; ++d)
      if (post_office[d] >= 0) ask[post_office[d]].push_back({key[d], d});
    const auto heard = dist::exchange(comm, ask);
    std::unordered_map<Key, int, KeyHash> lowest;
    for (int p = 0; p < ranks; ++p)
      for (const auto& r : heard[p]) {
        auto [it, fresh] = lowest.try_emplace(r.key, p);
        if (!fresh) it->second = std::min(it->second, p);
      }
    std::vector<std::vector<int>> answer(ranks);
    for (int p = 0; p < ranks; ++p)
      for (const auto& r : heard[p]) answer[p].push_back(lowest.at(r.key));
    const auto told = dist::exchange(comm, answer);
    for (int p = 0; p < ranks; ++p)
      for (std::size_t k = 0; k < ask[p].size(); ++k) owner[ask[p][k].local] = told[p][k];
  }

  // Owners number their nodes contiguously, in local order.
  global_.assign(n, -1);
  owned_ = static_cast<index_t>(std::count(owner.begin(), owner.end(), me));
  MPI_Exscan(&owned_, &first_, 1, MPI_INT, MPI_SUM, comm);
  if (me == 0) first_ = 0;
  MPI_Allreduce(&owned_, &global_nodes_, 1, MPI_INT, MPI_SUM, comm);
  // Vertex nodes are found from their global mesh node (owned mesh nodes are the first local
  // nodes, in global order); only edge nodes need a table.
  std::unordered_map<Key, index_t, KeyHash> mine;
  index_t next = first_;
  for (index_t d = 0; d < n; ++d)
    if (owner[d] == me) {
      global_[d] = next++;
      if (key[d].b >= 0) mine.emplace(key[d], global_[d]);
    }
  auto find_mine = [&](const Key& k) -> index_t {
    if (k.b >= 0) {
      auto it = mine.find(k);
      return it == mine.end() ? -1 : it->second;
    }
    const index_t m = k.a - dist->first_owned_node;
    if (k.a < 0 || m < 0 || m >= dist->owned_nodes || m >= static_cast<index_t>(dm.vertex_node.size()))
      return -1;
    const index_t d = dm.vertex_node[m];
    return d < 0 || owner[d] != me ? -1 : global_[d];
  };
  // Ghosts ask their owners.
  {
    std::vector<std::vector<Request>> ask(ranks);
    for (index_t d = 0; d < n; ++d)
      if (owner[d] != me) {
        FEM_EXPECTS(owner[d] >= 0, "index map: local node {} of '{}' has no owner", d, V.mesh().source());
        ask[owner[d]].push_back({key[d], d});
      }
    const auto heard = dist::exchange(comm, ask);
    std::vector<std::vector<index_t>> answer(ranks);
    std::string missing;
    for (int p = 0; p < ranks; ++p)
      for (const auto& r : heard[p]) {
        const index_t g = find_mine(r.key);
        if (g < 0 && missing.empty()) missing = fmt::format("({}, {}) asked by rank {}", r.key.a, r.key.b, p);
        answer[p].push_back(g);
      }
    agree(comm, missing.empty() ? nullptr
                                : std::make_exception_ptr(
                                      Error(fmt::format("index map of '{}': rank {} does not have node {}",
                                                        V.mesh().source(), me, missing))));
    const auto told = dist::exchange(comm, answer);
    for (int p = 0; p < ranks; ++p)
      for (std::size_t k = 0; k < ask[p].size(); ++k) global_[ask[p][k].local] = told[p][k];
  }

  // Slots of the ghosted vector: owned in global order, then ghosts.
  position_.assign(n, -1);
  for (index_t d = 0; d < n; ++d)
    if (owner[d] == me) position_[d] = global_[d] - first_;
  for (index_t d = 0; d < n; ++d)
    if (owner[d] != me) {
      position_[d] = owned_ + static_cast<index_t>(ghosts_.size());
      ghosts_.push_back(global_[d]);
    }
  gdim_ = V.mesh().gdim();
  owned_coordinates_.resize(static_cast<std::size_t>(owned_) * gdim_);
  for (index_t d = 0; d < n; ++d)
    if (owner[d] == me)
      for (int k = 0; k < gdim_; ++k)
        owned_coordinates_[static_cast<std::size_t>(position_[d]) * gdim_ + k] =
            dm.coordinates[static_cast<std::size_t>(d) * gdim_ + k];
  std::vector<PetscInt> ghosts(ghosts_.begin(), ghosts_.end());
  FEM_PETSC(VecCreateGhostBlock(comm, block_, owned_ * block_, global_nodes_ * block_,
                                static_cast<PetscInt>(ghosts.size()), ghosts.data(), &ghosted_));
}

IndexMap::IndexMap(std::span<const IndexMap* const> blocks)
    : comm_(blocks.empty() ? MPI_COMM_NULL : blocks.front()->comm()), group_(comm_) {
  FEM_EXPECTS(!blocks.empty(), "a stacked index map needs at least one block");
  const int ranks = size(comm_), nb = static_cast<int>(blocks.size());
  // Every rank's owned range of each block (first DOF, count), and its first stacked DOF.
  std::vector<index_t> mine(static_cast<std::size_t>(2 * nb));
  for (int b = 0; b < nb; ++b) {
    mine[static_cast<std::size_t>(2 * b)] = blocks[b]->first_owned_node() * blocks[b]->block();
    mine[static_cast<std::size_t>(2 * b + 1)] = blocks[b]->owned_dofs();
    owned_ += blocks[b]->owned_dofs();
    stacked_owned_.push_back(blocks[b]->owned_dofs());
    stacked_block_.push_back(blocks[b]->block());
  }
  std::vector<index_t> ranges(static_cast<std::size_t>(2 * nb * ranks));
  MPI_Allgather(mine.data(), 2 * nb, MPI_INT, ranges.data(), 2 * nb, MPI_INT, comm_);
  std::vector<index_t> first(static_cast<std::size_t>(ranks) + 1, 0);  // stacked, per rank
  for (int p = 0; p < ranks; ++p) {
    index_t owned = 0;
    for (int b = 0; b < nb; ++b) owned += ranges[static_cast<std::size_t>(2 * (p * nb + b) + 1)];
    first[static_cast<std::size_t>(p) + 1] = first[static_cast<std::size_t>(p)] + owned;
  }
  const int me = rank(comm_);
  first_ = first[static_cast<std::size_t>(me)];
  global_nodes_ = first[static_cast<std::size_t>(ranks)];
  // A block's global DOF g lies in the owned range of one rank (ranges are contiguous, in rank
  // order): its stacked number is that rank's first, its owned DOFs of the blocks before, and
  // g's place in its range.
  index_t local = 0;
  for (const IndexMap* m : blocks) local += m->local_dofs();
  global_.resize(static_cast<std::size_t>(local));
  position_.assign(static_cast<std::size_t>(local), -1);
  index_t at = 0;
  std::string wrong;
  for (int b = 0; b < nb; ++b) {
    const IndexMap& m = *blocks[b];
    const auto block_first = [&](int p) { return ranges[static_cast<std::size_t>(2 * (p * nb + b))]; };
    for (index_t d = 0; d < m.local_dofs(); ++d, ++at) {
      const index_t g = m.global_dof(d);
      int lo = 0, hi = ranks - 1;  // the last rank whose range starts at or before g
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (block_first(mid) <= g)
          lo = mid;
        else
          hi = mid - 1;
      }
      // Ranks that own nothing of this block share its first DOF with the next one: the owner
      // is the last of them whose range holds g.
      while (lo > 0 && g >= block_first(lo) + ranges[static_cast<std::size_t>(2 * (lo * nb + b) + 1)]) --lo;
      index_t before = 0;
      for (int c = 0; c < b; ++c) before += ranges[static_cast<std::size_t>(2 * (lo * nb + c) + 1)];
      global_[static_cast<std::size_t>(at)] =
          first[static_cast<std::size_t>(lo)] + before + (g - block_first(lo));
      if (m.owns_dof(d) != (lo == me) && wrong.empty())
        wrong = fmt::format("stacked index map: DOF {} of block {} is owned by rank {}, its block says {}", d,
                            b, lo, m.owns_dof(d) ? "by rank " + std::to_string(me) : "elsewhere");
    }
  }
  agree(comm_, wrong.empty() ? nullptr : std::make_exception_ptr(Error(wrong)));
  // Slots of the ghosted vector: owned in global order, then ghosts.
  for (index_t d = 0; d < local; ++d) {
    const index_t g = global_[static_cast<std::size_t>(d)];
    if (g >= first_ && g < first_ + owned_) position_[static_cast<std::size_t>(d)] = g - first_;
  }
  for (index_t d = 0; d < local; ++d)
    if (position_[static_cast<std::size_t>(d)] < 0) {
      position_[static_cast<std::size_t>(d)] = owned_ + static_cast<index_t>(ghosts_.size());
      ghosts_.push_back(global_[static_cast<std::size_t>(d)]);
    }
  gdim_ = blocks.front()->gdim();  // no coordinates: the rigid-body modes need a vector space's map
  std::vector<PetscInt> ghosts(ghosts_.begin(), ghosts_.end());
  FEM_PETSC(VecCreateGhostBlock(comm_, 1, owned_, global_nodes_, static_cast<PetscInt>(ghosts.size()),
                                ghosts.data(), &ghosted_));
}

IndexMap::~IndexMap() { detail::delayed_destroy(reinterpret_cast<PetscObject*>(&ghosted_)); }

std::size_t IndexMap::bytes() const noexcept {
  return sizeof(*this) + (global_.size() + position_.size() + ghosts_.size()) * sizeof(index_t) +
         owned_coordinates_.size() * sizeof(double) + static_cast<std::size_t>(local_dofs()) * sizeof(double);
}

void IndexMap::check(std::span<const double> local) const {
  FEM_EXPECTS(local.size() == static_cast<std::size_t>(local_dofs()),
              "local vector of {} entries, the space has {} here", local.size(), local_dofs());
}

namespace {
// The local values into the ghosted vector's local form (owned slots, then ghosts).
void scatter_local(Vec ghosted, std::span<const index_t> position, int block, std::span<const double> local) {
  Vec form;
  FEM_PETSC(VecGhostGetLocalForm(ghosted, &form));
  PetscScalar* x;
  FEM_PETSC(VecGetArray(form, &x));
  for (std::size_t d = 0; d < position.size(); ++d)
    for (int k = 0; k < block; ++k) x[position[d] * block + k] = local[d * block + k];
  FEM_PETSC(VecRestoreArray(form, &x));
  FEM_PETSC(VecGhostRestoreLocalForm(ghosted, &form));
}

// The ghosted vector's local form back into the local order.
void gather_local(Vec ghosted, std::span<const index_t> position, int block, std::span<double> local) {
  Vec form;
  FEM_PETSC(VecGhostGetLocalForm(ghosted, &form));
  const PetscScalar* y;
  FEM_PETSC(VecGetArrayRead(form, &y));
  for (std::size_t d = 0; d < position.size(); ++d)
    for (int k = 0; k < block; ++k) local[d * block + k] = y[position[d] * block + k];
  FEM_PETSC(VecRestoreArrayRead(form, &y));
  FEM_PETSC(VecGhostRestoreLocalForm(ghosted, &form));
}
}  // namespace

void IndexMap::accumulate(std::span<double> local) const { combine(local, /*maximum=*/false); }

void IndexMap::maximize(std::span<double> local) const { combine(local, /*maximum=*/true); }

void IndexMap::combine(std::span<double> local, bool maximum) const {
  check(local);
  std::lock_guard lock(mutex_);
  scatter_local(ghosted_, position_, block_, local);
  const InsertMode m = maximum ? MAX_VALUES : ADD_VALUES;
  FEM_PETSC(VecGhostUpdateBegin(ghosted_, m, SCATTER_REVERSE));
  FEM_PETSC(VecGhostUpdateEnd(ghosted_, m, SCATTER_REVERSE));
  FEM_PETSC(VecGhostUpdateBegin(ghosted_, INSERT_VALUES, SCATTER_FORWARD));
  FEM_PETSC(VecGhostUpdateEnd(ghosted_, INSERT_VALUES, SCATTER_FORWARD));
  gather_local(ghosted_, position_, block_, local);
}

Vec IndexMap::create_vector() const {
  Vec v;
  FEM_PETSC(VecCreateMPI(comm_, owned_dofs(), global_dofs(), &v));
  FEM_PETSC(VecSetBlockSize(v, block_));
  return v;
}

void IndexMap::to_petsc(std::span<const double> local, Sums form, Vec global) const {
  check(local);
  if (form == Sums::partial) {  // the owners add up the ghosts' contributions: one reverse scatter
    std::lock_guard lock(mutex_);
    scatter_local(ghosted_, position_, block_, local);
    FEM_PETSC(VecGhostUpdateBegin(ghosted_, ADD_VALUES, SCATTER_REVERSE));
    FEM_PETSC(VecGhostUpdateEnd(ghosted_, ADD_VALUES, SCATTER_REVERSE));
    FEM_PETSC(VecCopy(ghosted_, global));  // the owned part
    return;
  }
  PetscScalar* x;
  FEM_PETSC(VecGetArray(global, &x));
  for (index_t d = 0; d < local_nodes(); ++d)
    if (position_[d] < owned_)
      for (int k = 0; k < block_; ++k)
        x[position_[d] * block_ + k] = local[static_cast<std::size_t>(d) * block_ + k];
  FEM_PETSC(VecRestoreArray(global, &x));
}

void IndexMap::from_petsc(Vec global, std::span<double> local) const {
  check(local);
  std::lock_guard lock(mutex_);
  FEM_PETSC(VecCopy(global, ghosted_));
  FEM_PETSC(VecGhostUpdateBegin(ghosted_, INSERT_VALUES, SCATTER_FORWARD));
  FEM_PETSC(VecGhostUpdateEnd(ghosted_, INSERT_VALUES, SCATTER_FORWARD));
  gather_local(ghosted_, position_, block_, local);
}

double IndexMap::dot(std::span<const double> a, std::span<const double> b) const {
  check(a), check(b);
  double s = 0;
  for (index_t d = 0; d < local_nodes(); ++d)
    if (position_[d] < owned_)
      for (int k = 0; k < block_; ++k) {
        const std::size_t i = static_cast<std::size_t>(d) * block_ + k;
        s += a[i] * b[i];
      }
  return sum(comm_, s);
}

std::vector<double> IndexMap::gather(std::span<const double> local, int root) const {
  check(local);
  std::vector<double> owned(static_cast<std::size_t>(owned_dofs()));
  for (index_t d = 0; d < local_nodes(); ++d)
    if (position_[d] < owned_)
      for (int k = 0; k < block_; ++k)
        owned[static_cast<std::size_t>(position_[d]) * block_ + k] =
            local[static_cast<std::size_t>(d) * block_ + k];
  const int ranks = size(comm_), me = rank(comm_);
  std::vector<int> counts(ranks), offsets(ranks + 1, 0);
  const int mine = owned_dofs();
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm_);
  for (int p = 0; p < ranks; ++p) offsets[p + 1] = offsets[p] + counts[p];
  std::vector<double> all(me == root ? static_cast<std::size_t>(global_dofs()) : 0);
  MPI_Gatherv(owned.data(), mine, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, root,
              comm_);
  return all;  // owned ranges are contiguous and in rank order: this is global DOF order
}

std::shared_ptr<const IndexMap> index_map(const assembly::FunctionSpace& V) {
  FEM_EXPECTS(V.store() != nullptr && !V.mesh_key().empty(),
              "a distributed index map needs a space on a mesh published by fem::dist::distribute");
  Store& store = *V.store();
  // Every rank published the mesh with its distribution (a missing one cannot be agreed on).
  const auto dist = distribution(V.mesh_key(), store);
  const std::string key = fmt::format("{}#indexmap/{}", V.mesh_key(), V.name());
  return collective_get_or_compute<IndexMap>(dist->comm, store, key, {{V.mesh_key(), V.mesh_version()}}, [&] {
    register_collective(store, key);  // holds a PETSc vector
    return std::make_shared<const IndexMap>(V, dist->comm);
  });
}

std::shared_ptr<const IndexMap> index_map(const assembly::MixedSpace& W) {
  const assembly::FunctionSpace& V = W.velocity();
  FEM_EXPECTS(V.store() != nullptr && !V.mesh_key().empty(),
              "a distributed index map needs a space on a mesh published by fem::dist::distribute");
  Store& store = *V.store();
  const auto dist = distribution(V.mesh_key(), store);
  const auto velocity = index_map(V), pressure = index_map(W.pressure());
  const std::string key = fmt::format("{}#indexmap/TaylorHood", V.mesh_key());
  return collective_get_or_compute<IndexMap>(dist->comm, store, key, {{V.mesh_key(), V.mesh_version()}}, [&] {
    register_collective(store, key);  // holds a PETSc vector
    const IndexMap* blocks[] = {velocity.get(), pressure.get()};
    return std::make_shared<const IndexMap>(std::span<const IndexMap* const>(blocks));
  });
}

}  // namespace fem::dist
