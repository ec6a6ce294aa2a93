// A mesh distributed over the processes: rank 0 reads and partitions it (METIS), every rank
// receives its cells (with tags), the tagged facets of those cells and the coordinates of the
// nodes they touch, and publishes them as an ordinary fem::Mesh, so the existing connectivity
// builder and assembler run on it unchanged.
//
//   fem::dist::Session session(argc, argv);
//   auto mesh = session.rank() == 0 ? fem::mesh::read("plate.msh") : nullptr;
//   fem::dist::distribute(session.comm(), mesh, "mesh/plate");   // on every rank
//   fem::assembly::FunctionSpace V("mesh/plate", 1);               // the local part
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "fem/mesh.hpp"
#include "fem/store.hpp"

namespace fem::dist {

/// How a rank's local mesh sits in the whole. Local nodes are numbered owned first (in global
/// order), then ghosts (nodes of local cells owned by another rank, in global order); every rank
/// owns a contiguous range of global node numbers, ordered by (owner, original id). Published as
/// `<mesh key>#dist` beside the local mesh.
struct Distribution {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  index_t owned_nodes = 0;       ///< the first local nodes
  index_t first_owned_node = 0;  ///< global number of local node 0
  index_t global_nodes = 0;      ///< nodes referenced by the cells of the whole mesh
  index_t global_cells = 0;
  std::vector<index_t> global_node;    ///< global number of each local node
  std::vector<int> node_owner;         ///< owning rank of each local node
  std::vector<index_t> original_node;  ///< each local node's index in the mesh rank 0 read
  std::vector<index_t> original_cell;  ///< each local cell's index in the mesh rank 0 read
  /// Bytes held.
  std::size_t bytes() const noexcept;
};

/// Collective. `mesh` is the whole mesh on rank 0 (ignored elsewhere, may be null there). Rank
/// 0 partitions its cells into one part per process (fem::mesh::partition) and sends each rank
/// its part; every rank publishes its local mesh under `key` and its Distribution under
/// `<key>#dist` (derived from the mesh, not evictable) in `store`, and returns the Distribution.
/// Tagged facets go with the cell they bound. A mesh that cannot be distributed (fewer cells than
/// processes, no METIS) is an error on every rank.
std::shared_ptr<const Distribution> distribute(MPI_Comm comm, std::shared_ptr<const Mesh> mesh,
                                               const std::string& key, Store& store = fem::store());

/// The Distribution published with the local mesh under `mesh_key`.
std::shared_ptr<const Distribution> distribution(const std::string& mesh_key,
                                                 const Store& store = fem::store());

}  // namespace fem::dist

FEM_TYPE_NAME(fem::dist::Distribution, "fem::dist::Distribution");
