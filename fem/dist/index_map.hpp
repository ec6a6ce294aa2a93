// The global numbering of a function space's DOFs across processes, and the moves between a
// rank's local vectors and PETSc's distributed ones.
//
// A rank's local vectors are indexed like its local space (FunctionSpace::num_dofs() entries:
// owned and ghost DOFs, in the local DOF map's order), in one of two forms:
//  - partial: what the rank's own cells contribute (assembled vectors, residuals before
//    accumulate()); the true value at a shared DOF is the sum over ranks;
//  - consistent: every entry holds the true global value (solutions, iterates).
#pragma once

#include <mpi.h>

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/mixed.hpp"
#include "fem/assembly/space.hpp"
#include "fem/dist/handles.hpp"
#include "fem/dist/session.hpp"
#include "fem/layout.hpp"
#include "fem/store.hpp"

namespace fem::dist {

/// Which form a local vector is in (see the file comment).
using Sums = fem::Sums;

/// Global numbers of a space's nodes (a node carries `block` consecutive DOFs, one per
/// component). Every rank owns a contiguous range of nodes; a node on several ranks is owned by
/// one of them: mesh vertices by the mesh node's owner, edge nodes (P2, Q2) by the lowest rank
/// whose cells hold the edge, cell nodes (Q2) by the cell's rank.
class IndexMap final : public Layout {
 public:
  IndexMap(const assembly::FunctionSpace& V, MPI_Comm comm);
  /// Collective: the maps of several spaces on one mesh stacked, as a mixed space numbers its
  /// DOFs (the velocity's, then the pressure's): a local vector is the blocks' local vectors one
  /// after the other; each process owns its owned DOFs of every block, in block order (one
  /// contiguous global range), and has the blocks' ghosts. A node of the stacked map is one DOF
  /// (block() is 1), and a block keeps its own owners and ghosts.
  explicit IndexMap(std::span<const IndexMap* const> blocks);
  ~IndexMap();
  IndexMap(const IndexMap&) = delete;
  IndexMap& operator=(const IndexMap&) = delete;

  MPI_Comm comm() const noexcept { return comm_; }
  int block() const noexcept { return block_; }
  index_t local_nodes() const noexcept { return static_cast<index_t>(global_.size()); }
  index_t owned_nodes() const noexcept { return owned_; }
  index_t first_owned_node() const noexcept { return first_; }
  index_t global_nodes() const noexcept { return global_nodes_; }
  index_t local_dofs() const noexcept { return local_nodes() * block_; }
  index_t owned_dofs() const noexcept { return owned_ * block_; }
  index_t global_dofs() const noexcept { return global_nodes_ * block_; }
  /// Global node number of each local node.
  std::span<const index_t> global_nodes_of_local() const noexcept { return global_; }
  index_t global_dof(index_t local_dof) const noexcept {
    return global_[local_dof / block_] * block_ + local_dof % block_;
  }
  /// The owned DOFs here of each stacked block, in block order (contiguous in the owned range),
  /// and each block's own block size (a velocity's dim); one block for a map that is no stack.
  std::vector<index_t> owned_dofs_per_block() const {
    return stacked_owned_.empty() ? std::vector<index_t>{owned_dofs()} : stacked_owned_;
  }
  std::vector<int> block_sizes() const {
    return stacked_block_.empty() ? std::vector<int>{block_} : stacked_block_;
  }
  bool owns_node(index_t local_node) const noexcept { return position_[local_node] < owned_; }
  bool owns_dof(index_t local_dof) const noexcept { return owns_node(local_dof / block_); }

  // --- fem::Layout: local DOF vectors over the communicator ------------------------------
  const Processes& processes() const noexcept override { return group_; }
  bool distributed() const noexcept override { return true; }
  std::int64_t global_size(std::size_t) const override { return global_dofs(); }
  bool owns(index_t local_dof) const noexcept override { return owns_dof(local_dof); }
  /// Coordinates of the owned nodes in global order (gdim() each): rigid-body modes for AMG.
  std::span<const double> owned_coordinates() const noexcept { return owned_coordinates_; }
  int gdim() const noexcept { return gdim_; }

  // --- collective moves of local vectors (local_dofs() entries) -------------------------

  /// partial → consistent: the contributions of every rank summed into the owner, then copied
  /// to every rank that has the DOF.
  void accumulate(std::span<double> local) const override;
  /// Every entry replaced by the maximum over the ranks that have the DOF.
  void maximize(std::span<double> local) const override;
  /// A new PETSc vector of this layout (owned_dofs() entries here, global_dofs() in all);
  /// the caller destroys it (VecDestroy).
  Vec create_vector() const;
  /// The global vector of a local one: partial sums are added up, consistent values copied.
  void to_petsc(std::span<const double> local, Sums form, Vec global) const;
  /// The local values (owned and ghosts) of a global vector: consistent.
  void from_petsc(Vec global, std::span<double> local) const;
  /// Σ over the owned entries of consistent vectors, summed over ranks.
  double dot(std::span<const double> a, std::span<const double> b) const override;
  /// The whole vector on `root` in global DOF order (empty elsewhere), from consistent values.
  std::vector<double> gather(std::span<const double> local, int root = 0) const;

  std::size_t bytes() const noexcept;

 private:
  void check(std::span<const double> local) const;
  // The copies of every DOF combined into its owner (a sum or a maximum), then copied back.
  void combine(std::span<double> local, bool maximum) const;
  MPI_Comm comm_;
  Group group_;
  int block_ = 1;
  index_t owned_ = 0, first_ = 0, global_nodes_ = 0;
  std::vector<index_t> stacked_owned_;  // a stack: owned DOFs of each block here
  std::vector<int> stacked_block_;      // a stack: each block's block size
  std::vector<index_t> global_;         // per local node
  std::vector<index_t> position_;       // per local node: slot in the ghosted vector's local form
  std::vector<index_t> ghosts_;         // global numbers of the ghost nodes, in slot order
  std::vector<double> owned_coordinates_;
  int gdim_ = 0;
  Vec ghosted_ = nullptr;     // scratch for the moves (VecCreateGhostBlock)
  mutable std::mutex mutex_;  // the scratch is shared; the moves are main-thread anyway
};

/// Collective: the IndexMap of V (on a mesh published by distribute()), cached in V's store as
/// `<mesh key>#indexmap/<space>` (not evictable: every rank must find it, or all rebuild it).
std::shared_ptr<const IndexMap> index_map(const assembly::FunctionSpace& V);
/// Collective: the IndexMap of a mixed space, its velocity's and its pressure's maps stacked,
/// cached as `<mesh key>#indexmap/TaylorHood`.
std::shared_ptr<const IndexMap> index_map(const assembly::MixedSpace& W);

/// Collective: the cached value of `key` when every rank holds it derived from `inputs`;
/// otherwise every rank drops its own and computes (so no rank computes alone a value whose
/// computation is collective). Not evictable.
template <class T, class Compute>
std::shared_ptr<const T> collective_get_or_compute(MPI_Comm comm, Store& store, const std::string& key,
                                                   std::vector<Input> inputs, Compute&& compute);

}  // namespace fem::dist

FEM_TYPE_NAME(fem::dist::IndexMap, "fem::dist::IndexMap");

namespace fem::dist {
bool all(MPI_Comm comm, bool local);
template <class T, class Compute>
std::shared_ptr<const T> collective_get_or_compute(MPI_Comm comm, Store& store, const std::string& key,
                                                   std::vector<Input> inputs, Compute&& compute) {
  if (!all(comm, store.holds(key, inputs))) store.erase(key);
  return store.get_or_compute<T>(key, std::move(inputs), std::forward<Compute>(compute), /*evictable=*/false);
}
}  // namespace fem::dist
