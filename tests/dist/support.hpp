// Helpers of the distributed tests: the problems assembled on a local part or on the whole
// mesh, and the comparison of a distributed solution with the serial one by original node.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "fem/assembly/assembly.hpp"
#include "fem/dist/dist.hpp"
#include "fem/mesh/mesh.hpp"

namespace fem::test {

/// Each space node's key in the numbering of the mesh rank 0 read: (vertex, -1) or (a, b) for
/// the edge between vertices a < b; cell nodes (-1 - global cell, node) — unique on every part.
std::vector<std::pair<index_t, index_t>> original_keys(const assembly::FunctionSpace& V,
                                                       std::span<const index_t> original_node,
                                                       std::span<const index_t> original_cell);

/// On rank 0: every owned node's values (block per node) by original key; empty elsewhere.
std::map<std::pair<index_t, index_t>, std::vector<double>> gather_by_key(const assembly::FunctionSpace& V,
                                                                         const dist::IndexMap& map,
                                                                         std::span<const double> u);
/// The same for a serial solution on the whole mesh.
std::map<std::pair<index_t, index_t>, std::vector<double>> by_key(const assembly::FunctionSpace& V,
                                                                  std::span<const double> u);

/// max |a − b| / max |b| over the keys of b (a must have them all: a missing key is infinity).
double relative_difference(const std::map<std::pair<index_t, index_t>, std::vector<double>>& a,
                           const std::map<std::pair<index_t, index_t>, std::vector<double>>& b);

/// Collective: the mesh of `spec` (a file under meshes/, or "square-tri3:16"-like generator
/// specs handled here) on rank 0, null elsewhere.
std::shared_ptr<const Mesh> whole_mesh(MPI_Comm comm, const std::string& spec);

}  // namespace fem::test
