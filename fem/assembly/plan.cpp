// Plans: connectivity through fem::gpu::build_connectivity, and a greedy colouring of cell
// blocks with one bitmask of used colours per DOF node.
#include "fem/assembly/plan.hpp"

#include <bit>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "fem/error.hpp"
#include "fem/threads.hpp"

namespace fem::assembly {
namespace {

// Cells per block: big blocks, run in cell order, keep the matrix rows they share in cache
// from one cell to the next (blocks of 256 cells re-read the values from memory once per
// colour: 2D P1 re-assembly 32 ms instead of 23 ms on one core), but at least 64 blocks per
// mesh (where blocks of 256 allow it) for the threads. A function of the cell count only:
// never of the thread count.
constexpr index_t kMinBlockSize = 256, kMaxBlockSize = 4096, kMinBlocks = 64;

index_t block_size_for(index_t num_cells) {
  index_t b = kMinBlockSize;
  while (b < kMaxBlockSize && 2 * b * kMinBlocks <= num_cells) b *= 2;
  return b;
}

// Colour masks of 32 bits: 31 colours (meshes need 4-8) and colour 31, run by one thread, for
// the blocks that found no free colour. Half the memory of 64-bit masks, which the greedy pass
// reads and writes at every node of every cell.
using ColourMask = std::uint32_t;
constexpr int kMaxColors = 31;

void colour_blocks(const DofMap& d, AssemblyPlan& p) {
  const index_t nc = p.num_cells;
  const index_t bs = block_size_for(nc);
  const index_t nblocks = (nc + bs - 1) / bs;
  p.block_size = static_cast<int>(bs);
  std::vector<ColourMask> used(d.num_nodes, 0);  // colours of the blocks touching each node
  std::vector<int> colour(nblocks);
  std::vector<index_t> count(kMaxColors + 1, 0);
  const int npc = d.nodes_per_cell;
  for (index_t b = 0; b < nblocks; ++b) {
    // A block's cells are consecutive: their nodes are one stretch of the cell-node array.
    const index_t* begin = d.cell_nodes.data() + static_cast<std::size_t>(b) * bs * npc;
    const index_t* end = d.cell_nodes.data() + static_cast<std::size_t>(std::min(nc, (b + 1) * bs)) * npc;
    ColourMask forbidden = 0;
    for (const index_t* v = begin; v != end; ++v) forbidden |= used[*v];
    const int col = std::min(std::countr_one(forbidden), kMaxColors);
    colour[b] = col;
    ++count[col];
    const ColourMask bit = col < kMaxColors ? ColourMask{1} << col : 0;
    for (const index_t* v = begin; v != end; ++v) used[*v] |= bit;
  }
  p.last_color_serial = count[kMaxColors] > 0;
  int ncolors = 0;
  while (ncolors < kMaxColors && count[ncolors] > 0) ++ncolors;
  // Colours are dense 0..ncolors-1 (greedy), then possibly the serial one.
  std::vector<int> remap(kMaxColors + 1, -1);
  for (int k = 0; k < ncolors; ++k) remap[k] = k;
  if (p.last_color_serial) remap[kMaxColors] = ncolors++;
  p.color_offsets.assign(ncolors + 1, 0);
  for (index_t b = 0; b < nblocks; ++b) ++p.color_offsets[remap[colour[b]] + 1];
  for (int k = 0; k < ncolors; ++k) p.color_offsets[k + 1] += p.color_offsets[k];
  p.color_blocks.resize(nblocks);
  std::vector<index_t> cursor(p.color_offsets.begin(), p.color_offsets.end() - 1);
  for (index_t b = 0; b < nblocks; ++b) p.color_blocks[cursor[remap[colour[b]]]++] = b;
}

// Cells per thread below which a colour runs on one thread (fem/threads.hpp): a P1 triangle
// costs about 80 ns to assemble, so 4096 are about 0.3 ms, well above the wake-up of a
// sleeping thread (10-100 µs); higher-order and 3D cells cost more, so they pay sooner.
constexpr std::size_t kCellGrain = 4096;

// Pattern -> the space whose plan built it. Weak: a pattern that died is pruned (its address may
// be reused by another: the weak pointer tells them apart).
struct PatternSpaces {
  std::mutex mutex;
  std::unordered_map<const CsrPattern*, std::pair<std::weak_ptr<const CsrPattern>, SpaceId>> spaces;
  std::size_t pruned_at = 0;

  void add(const std::shared_ptr<const CsrPattern>& pattern, SpaceId space) {
    std::lock_guard lock(mutex);
    if (spaces.size() >= 2 * pruned_at + 16) {
      std::erase_if(spaces, [](const auto& e) { return e.second.first.expired(); });
      pruned_at = spaces.size();
    }
    spaces[pattern.get()] = {pattern, std::move(space)};
  }
  SpaceId find(const CsrPattern& pattern) {
    std::lock_guard lock(mutex);
    const auto it = spaces.find(&pattern);
    if (it == spaces.end() || it->second.first.lock().get() != &pattern) return {};
    return it->second.second;
  }
};

PatternSpaces& pattern_spaces() {
  static PatternSpaces registry;
  return registry;
}

}  // namespace

SpaceId space_of_pattern(const CsrPattern& pattern) { return pattern_spaces().find(pattern); }

std::size_t AssemblyPlan::bytes() const noexcept {
  return sizeof(*this) + connectivity.bytes() +
         (color_offsets.capacity() + color_blocks.capacity()) * sizeof(index_t);
}

AssemblyPlan build_plan(const FunctionSpace& V, const gpu::Executor& exec) {
  const DofMap& d = V.dofmap();
  AssemblyPlan p;
  p.num_cells = V.mesh().num_cells();
  p.connectivity = gpu::build_connectivity(exec, d.cell_nodes, d.nodes_per_cell, d.num_nodes, V.components());
  colour_blocks(d, p);
  pattern_spaces().add(p.connectivity.pattern, SpaceId(V));
  return p;
}

AssemblyPlan build_plan(const DofMap& colouring, std::span<const index_t> cell_dofs, int dofs_per_cell,
                        index_t num_dofs, const gpu::Executor& exec) {
  AssemblyPlan p;
  p.num_cells = static_cast<index_t>(cell_dofs.size() / static_cast<std::size_t>(dofs_per_cell));
  p.connectivity = gpu::build_connectivity(exec, cell_dofs, dofs_per_cell, num_dofs, 1);
  colour_blocks(colouring, p);
  return p;
}

std::shared_ptr<const AssemblyPlan> plan(const FunctionSpace& V, const gpu::Executor& exec) {
  if (V.store() == nullptr) return std::make_shared<const AssemblyPlan>(build_plan(V, exec));
  Store& s = *V.store();
  bool built = false;
  auto p = s.get_or_compute<AssemblyPlan>(fmt::format("{}#plan/{}", V.mesh_key(), V.name()),
                                          {{V.mesh_key(), V.mesh_version()}}, [&] {
                                            built = true;
                                            return build_plan(V, exec);
                                          });
  s.count(built ? "assembly.pattern_builds" : "assembly.pattern_hits");
  return p;
}

void for_each_cell_block(const AssemblyPlan& plan, const std::function<void(index_t, index_t)>& body) {
  std::exception_ptr error;
  index_t error_block = -1;
  std::mutex mutex;
  auto run = [&](index_t b) {
    const index_t first = b * plan.block_size, last = std::min(plan.num_cells, first + plan.block_size);
    try {
      body(first, last);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (error_block < 0 || b < error_block) {
        error = std::current_exception();
        error_block = b;
      }
    }
  };
  for (int k = 0; k < plan.num_colors() && !error; ++k) {
    const index_t begin = plan.color_offsets[k], end = plan.color_offsets[k + 1];
    // A colour's threads each get at least kCellGrain cells (blocks are whole); the serial
    // colour gets one thread.
    const bool serial = plan.last_color_serial && k + 1 == plan.num_colors();
    const std::size_t cells = static_cast<std::size_t>(end - begin) * plan.block_size;
    const int threads = serial ? 1 : std::min(threads_for(cells, kCellGrain), static_cast<int>(end - begin));
    if (threads == 1) {
      for (index_t i = begin; i < end; ++i) run(plan.color_blocks[i]);
      continue;
    }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (index_t i = begin; i < end; ++i) run(plan.color_blocks[i]);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fem::assembly
