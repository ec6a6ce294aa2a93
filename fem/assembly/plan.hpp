// The connectivity of a space, built once per (mesh version, space) through the hash table and
// cached in the store: the CSR pattern, the element-to-slot map, and a colouring of blocks of
// consecutive cells that makes threaded assembly race-free and bitwise deterministic.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "fem/assembly/space.hpp"
#include "fem/gpu/connectivity.hpp"

namespace fem::assembly {

struct AssemblyPlan {
  gpu::Connectivity connectivity;  ///< pattern + element_slots
  index_t num_cells = 0;
  int block_size = 0;  ///< cells per block (a function of the cell count, never of the thread count)
  /// Blocks of colour k are color_blocks[color_offsets[k] .. color_offsets[k + 1]); blocks of
  /// one colour share no DOF node. The last colour may be a "serial" one run by one thread.
  std::vector<index_t> color_offsets;
  std::vector<index_t> color_blocks;
  bool last_color_serial = false;

  int num_colors() const noexcept { return static_cast<int>(color_offsets.size()) - 1; }
  const CsrPattern& pattern() const noexcept { return *connectivity.pattern; }
  std::size_t bytes() const noexcept;
};

/// Build the plan of V (no caching).
AssemblyPlan build_plan(const FunctionSpace& V, const gpu::Executor& exec = gpu::Executor::host());

/// The plan of a space given by its cell DOFs (num_cells × dofs_per_cell, e.g. a mixed space's),
/// coloured by `colouring`: a DOF map of the same cells such that two cells sharing a DOF share
/// one of its nodes.
AssemblyPlan build_plan(const DofMap& colouring, std::span<const index_t> cell_dofs, int dofs_per_cell,
                        index_t num_dofs, const gpu::Executor& exec = gpu::Executor::host());

/// The plan of V: from the store when V's mesh is in one (key "<mesh key>#plan/<space name>",
/// derived from the mesh's version), else built. Counts assembly.pattern_builds and
/// assembly.pattern_hits in the store.
std::shared_ptr<const AssemblyPlan> plan(const FunctionSpace& V,
                                         const gpu::Executor& exec = gpu::Executor::host());

/// The space whose plan built `pattern` (build_plan records it), for as long as the pattern lives,
/// also after its plan left the store: what tells a matrix of one space from a matrix of another
/// with the same structure (another version of the mesh). Unknown (SpaceId{}) for a pattern made
/// elsewhere.
SpaceId space_of_pattern(const CsrPattern& pattern);

/// Run body(first_cell, end_cell) over every block: colours one after the other, the blocks of
/// a colour in parallel (OpenMP), the cells of a block in order. The first exception thrown
/// (by block order) is rethrown once the colour is done.
void for_each_cell_block(const AssemblyPlan& plan, const std::function<void(index_t, index_t)>& body);

}  // namespace fem::assembly

FEM_TYPE_NAME(fem::assembly::AssemblyPlan, "fem::assembly::AssemblyPlan");
