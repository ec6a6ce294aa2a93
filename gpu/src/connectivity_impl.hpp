// The connectivity builders, written once over a launch policy (HostLaunch: OpenMP loops;
// CudaLaunch: kernels) and executor memory. Compiled into connectivity_host.cpp and
// connectivity_cuda.cu. Keep this file free of fmt (nvcc compiles it): checks happen in the
// host-compiled entry points before these run.
#pragma once

#include <algorithm>
#include <vector>

#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/hash_table.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/memory.hpp"

namespace fem::gpu::detail {

/// A host array seen from the executor: the host pointer itself when the executor shares host
/// memory, else an uploaded copy.
template <class T>
class Resident {
 public:
  Resident(const Executor& exec, std::span<const T> host) {
    if (exec.separate_memory()) {
      copy_ = DeviceBuffer<T>(exec, host.size());
      copy_.upload(host);
      ptr_ = copy_.data();
    } else {
      ptr_ = host.data();
    }
  }
  const T* get() const { return ptr_; }

 private:
  DeviceBuffer<T> copy_;
  const T* ptr_ = nullptr;
};

/// An output array: written in place when the executor shares host memory, else in executor
/// memory and downloaded at the end.
template <class T>
class Output {
 public:
  Output(const Executor& exec, std::size_t n) : exec_(exec) {
    if (exec.separate_memory())
      device_ = DeviceBuffer<T>(exec, n);
    else
      resize_prefaulted(host_, n);
  }
  T* get() { return exec_.separate_memory() ? device_.data() : host_.data(); }
  std::vector<T> take() {
    if (exec_.separate_memory()) {
      resize_prefaulted(host_, device_.size());
      device_.download(host_);
      exec_.context().synchronize();
    }
    return std::move(host_);
  }

 private:
  Executor exec_;
  std::vector<T> host_;
  DeviceBuffer<T> device_;
};

template <class T>
T read_scalar(const Executor& exec, const T* p) {
  T v{};
  exec.context().copy_to_host(&v, p, sizeof(T));
  exec.context().synchronize();
  return v;
}

inline constexpr std::uint32_t diagonal_tag = ~std::uint32_t{0};

/// Throws InvalidArgument when nnz_nodes · block_size² leaves the 32-bit index range (host code).
void check_pattern_size(std::size_t nnz_nodes, int block_size);

template <class Launch>
Connectivity build_connectivity_impl(const Executor& exec, std::span<const index_t> cell_nodes_host, int npc,
                                     index_t num_nodes, int bs) {
  using A = typename Launch::Atomics;
  const std::size_t nc = cell_nodes_host.size() / npc;
  const int npairs = npc * (npc - 1) / 2;
  const std::size_t nkeys = nc * npairs;
  Resident<index_t> cells_r(exec, cell_nodes_host);
  const index_t* cells = cells_r.get();

  // 1. Every unordered pair of nodes of every cell, as a key, in cell order.
  DeviceBuffer<std::uint64_t> keys(exec, nkeys);
  {
    std::uint64_t* k = keys.data();
    Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
      const index_t* v = cells + c * npc;
      std::uint64_t* out = k + c * npairs;
      for (int a = 0, q = 0; a < npc; ++a)
        for (int b = a + 1; b < npc; ++b) out[q++] = pack_sorted_pair(v[a], v[b]);
    });
  }

  // 2. Number the unique pairs (in first-occurrence order: deterministic).
  DeviceBuffer<std::uint32_t> ids(exec, nkeys);
  DeviceBuffer<std::uint8_t> is_new(exec, nkeys);
  // Each pair is shared by about two cells in 2D (more in 3D): room for nkeys/2 avoids growth.
  HashTable64x32 table(exec, std::max<std::size_t>(nkeys / 2, 1024));
  table.insert_unique_resident(keys.data(), ids.data(), is_new.data(), nkeys);
  const std::size_t npair_unique = table.size();

  // 3. The key of each pair id.
  DeviceBuffer<std::uint64_t> pair_key(exec, npair_unique);
  {
    const std::uint64_t* k = keys.data();
    const std::uint32_t* id = ids.data();
    const std::uint8_t* fresh = is_new.data();
    std::uint64_t* pk = pair_key.data();
    Launch::for_each(exec, nkeys, [=] FEM_HD(std::size_t i) {
      if (fresh[i]) pk[id[i]] = k[i];
    });
  }
  keys.reset();
  is_new.reset();

  // 4. Row lengths of the node pattern: the diagonal plus one per distinct neighbour.
  DeviceBuffer<index_t> offsets(exec, static_cast<std::size_t>(num_nodes) + 1);
  index_t* off = offsets.data();
  Launch::for_each(exec, static_cast<std::size_t>(num_nodes) + 1, [=] FEM_HD(std::size_t r) {
    off[r] = r < static_cast<std::size_t>(num_nodes) ? 1 : 0;
  });
  {
    const std::uint64_t* pk = pair_key.data();
    Launch::for_each(exec, npair_unique, [=] FEM_HD(std::size_t p) {
      const index_t lo = pair_first(pk[p]), hi = pair_second(pk[p]);
      if (lo != hi) {
        A::fetch_add(&off[lo], index_t{1});
        A::fetch_add(&off[hi], index_t{1});
      }
    });
  }
  const auto nnz_nodes = static_cast<std::size_t>(Launch::exclusive_scan(exec, off, static_cast<std::size_t>(num_nodes) + 1));
  check_pattern_size(nnz_nodes, bs);

  // 5. Fill the rows with (column, tag) entries; the tag says which pair side (or the diagonal)
  //    each came from. Order within a row is arbitrary until step 6 sorts it.
  DeviceBuffer<std::uint64_t> entries(exec, nnz_nodes);
  {
    DeviceBuffer<index_t> cursor(exec, num_nodes);
    exec.context().copy_on_device(cursor.data(), off, sizeof(index_t) * num_nodes);
    index_t* cur = cursor.data();
    std::uint64_t* e = entries.data();
    Launch::for_each(exec, num_nodes, [=] FEM_HD(std::size_t r) {
      e[A::fetch_add(&cur[r], index_t{1})] = (std::uint64_t(r) << 32) | diagonal_tag;
    });
    const std::uint64_t* pk = pair_key.data();
    Launch::for_each(exec, npair_unique, [=] FEM_HD(std::size_t p) {
      const index_t lo = pair_first(pk[p]), hi = pair_second(pk[p]);
      if (lo == hi) return;
      e[A::fetch_add(&cur[lo], index_t{1})] = (std::uint64_t(hi) << 32) | std::uint32_t(2 * p);
      e[A::fetch_add(&cur[hi], index_t{1})] = (std::uint64_t(lo) << 32) | std::uint32_t(2 * p + 1);
    });
  }

  // 6. Sort each row by column (rows are short: insertion sort), then record where each pair
  //    side and each diagonal landed.
  DeviceBuffer<index_t> node_cols(exec, nnz_nodes), pair_slot(exec, 2 * npair_unique), diag_slot(exec, num_nodes);
  {
    std::uint64_t* e = entries.data();
    index_t* cols = node_cols.data();
    index_t* ps = pair_slot.data();
    index_t* ds = diag_slot.data();
    Launch::for_each(exec, num_nodes, [=] FEM_HD(std::size_t r) {
      const index_t b = off[r], end = off[r + 1];
      for (index_t i = b + 1; i < end; ++i) {
        const std::uint64_t x = e[i];
        index_t j = i;
        for (; j > b && e[j - 1] > x; --j) e[j] = e[j - 1];
        e[j] = x;
      }
      for (index_t k = b; k < end; ++k) {
        cols[k] = static_cast<index_t>(e[k] >> 32);
        const std::uint32_t tag = static_cast<std::uint32_t>(e[k]);
        if (tag == diagonal_tag)
          ds[r] = k;
        else
          ps[tag] = k;
      }
    });
  }
  entries.reset();
  pair_key.reset();

  // 7. The element-to-slot map, expanded to blocks: local DOF a*bs+ca of a cell is component ca
  //    of its node a. Row (node r, component c) starts at off[r]*bs*bs + c*len(r)*bs.
  const int n = npc * bs;
  Output<index_t> slots(exec, nc * n * n);
  {
    const std::uint32_t* id = ids.data();
    const index_t* ps = pair_slot.data();
    const index_t* ds = diag_slot.data();
    index_t* out = slots.get();
    Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
      const index_t* v = cells + c * npc;
      const std::uint32_t* cell_ids = id + c * npairs;
      index_t* cell_out = out + c * n * n;
      // Node-level slots, written straight into the output when bs == 1 (else expanded below).
      for (int a = 0; a < npc; ++a) cell_out[a * n + a] = ds[v[a]];
      for (int a = 0, q = 0; a < npc; ++a)
        for (int b = a + 1; b < npc; ++b, ++q) {
          const std::uint32_t p = cell_ids[q];
          const index_t lo_side = ps[2 * p], hi_side = ps[2 * p + 1];  // row min(v), row max(v)
          if (v[a] == v[b]) {
            cell_out[a * n + b] = cell_out[b * n + a] = ds[v[a]];
          } else if (v[a] < v[b]) {
            cell_out[a * n + b] = lo_side;
            cell_out[b * n + a] = hi_side;
          } else {
            cell_out[a * n + b] = hi_side;
            cell_out[b * n + a] = lo_side;
          }
        }
      if (bs == 1) return;
      // Expand in place, last block first, so node slots are read before they are overwritten.
      for (int a = npc - 1; a >= 0; --a)
        for (int b = npc - 1; b >= 0; --b) {
          const index_t node_slot = cell_out[a * n + b];
          const index_t row_begin = off[v[a]], len = off[v[a] + 1] - row_begin;
          const index_t pos = node_slot - row_begin;
          for (int ca = bs - 1; ca >= 0; --ca)
            for (int cb = bs - 1; cb >= 0; --cb)
              cell_out[(a * bs + ca) * n + b * bs + cb] = row_begin * bs * bs + ca * len * bs + pos * bs + cb;
        }
    });
  }

  // 8. The block-expanded pattern (for bs = 1, the node pattern itself).
  Connectivity result;
  const auto nrows = static_cast<std::size_t>(num_nodes) * bs;
  Output<index_t> row_offsets(exec, nrows + 1), col_indices(exec, nnz_nodes * bs * bs);
  if (bs == 1) {
    exec.context().copy_on_device(row_offsets.get(), off, sizeof(index_t) * (nrows + 1));
    exec.context().copy_on_device(col_indices.get(), node_cols.data(), sizeof(index_t) * nnz_nodes);
  } else {
    const index_t* cols = node_cols.data();
    index_t* ro = row_offsets.get();
    index_t* co = col_indices.get();
    const auto total = static_cast<index_t>(nnz_nodes * bs * bs);
    Launch::for_each(exec, num_nodes, [=] FEM_HD(std::size_t r) {
      const index_t len = off[r + 1] - off[r];
      for (int c = 0; c < bs; ++c) {
        const index_t start = off[r] * bs * bs + c * len * bs;
        ro[r * bs + c] = start;
        index_t k = start;
        for (index_t kk = off[r]; kk < off[r + 1]; ++kk)
          for (int cb = 0; cb < bs; ++cb) co[k++] = cols[kk] * bs + cb;
      }
      if (r + 1 == static_cast<std::size_t>(num_nodes)) ro[nrows] = total;
    });
  }

  const auto rows = static_cast<index_t>(nrows);
  result.pattern = std::make_shared<const CsrPattern>(rows, rows, row_offsets.take(), col_indices.take());
  result.element_slots = slots.take();
  result.dofs_per_cell = n;
  return result;
}

/// Edge table passed by value to device code.
struct EdgeTable {
  int count = 0;
  int v[12][2] = {};
};

template <class Launch>
EdgeNumbering number_edges_impl(const Executor& exec, const Mesh& mesh, const EdgeTable& et) {
  const std::size_t nc = static_cast<std::size_t>(mesh.num_cells());
  const int npc = mesh.nodes_per_cell(), ne = et.count;
  const std::size_t nkeys = nc * ne;
  Resident<index_t> cells_r(exec, mesh.cells());
  const index_t* cells = cells_r.get();

  DeviceBuffer<std::uint64_t> keys(exec, nkeys);
  {
    std::uint64_t* k = keys.data();
    Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
      const index_t* v = cells + c * npc;
      for (int e = 0; e < et.count; ++e) k[c * et.count + e] = pack_sorted_pair(v[et.v[e][0]], v[et.v[e][1]]);
    });
  }
  Output<index_t> cell_edges(exec, nkeys);
  DeviceBuffer<std::uint32_t> ids(exec, nkeys);
  DeviceBuffer<std::uint8_t> is_new(exec, nkeys);
  auto table = std::make_shared<HashTable64x32>(exec, std::max<std::size_t>(nkeys / 2, 1024));
  table->insert_unique_resident(keys.data(), ids.data(), is_new.data(), nkeys);
  const std::size_t nedges = table->size();

  Output<index_t> edge_vertices(exec, 2 * nedges);
  {
    const std::uint32_t* id = ids.data();
    const std::uint8_t* fresh = is_new.data();
    index_t* ce = cell_edges.get();
    index_t* ev = edge_vertices.get();
    Launch::for_each(exec, nkeys, [=] FEM_HD(std::size_t i) {
      ce[i] = static_cast<index_t>(id[i]);
      if (fresh[i]) {
        const std::size_t c = i / et.count;
        const int e = static_cast<int>(i % et.count);
        ev[2 * id[i]] = cells[c * npc + et.v[e][0]];
        ev[2 * id[i] + 1] = cells[c * npc + et.v[e][1]];
      }
    });
  }
  EdgeNumbering out;
  out.num_edges = static_cast<index_t>(nedges);
  out.cell_edges = cell_edges.take();
  out.edge_vertices = edge_vertices.take();
  out.table = std::move(table);
  return out;
}

/// Facet table passed by value to device code.
struct FacetTable {
  int count = 0;
  int nv = 0;
  int v[6][4] = {};
};

/// The key of a facet: its vertex (points), sorted pair (edges) or the sorted three smallest
/// vertices (triangles, and quadrilaterals: in a conforming mesh two distinct faces share at
/// most an edge, so three vertices identify a face).
template <class K>
FEM_HD_INLINE K facet_key(const index_t* v, const int* local, int nv) {
  if constexpr (std::is_same_v<K, Key128>) {
    index_t a = v[local[0]], b = v[local[1]], c = v[local[2]];
    if (nv == 4) {
      const index_t d = v[local[3]];
      sort3(a, b, c);
      if (d < c) c = d;
    }
    return pack_sorted_triple_128(a, b, c);
  } else {
    if (nv == 1) return std::uint64_t(std::uint32_t(v[local[0]]));
    if (nv == 2) return pack_sorted_pair(v[local[0]], v[local[1]]);
    index_t a = v[local[0]], b = v[local[1]], c = v[local[2]];
    if (nv == 4) {
      const index_t d = v[local[3]];
      sort3(a, b, c);
      if (d < c) c = d;
    }
    return pack_sorted_triple(a, b, c);
  }
}

template <class Launch, class K>
BoundaryFacets boundary_facets_impl(const Executor& exec, const Mesh& mesh, const FacetTable& ft) {
  using A = typename Launch::Atomics;
  const std::size_t nc = static_cast<std::size_t>(mesh.num_cells());
  const int npc = mesh.nodes_per_cell(), nf = ft.count, nv = ft.nv;
  const std::size_t nkeys = nc * nf;
  Resident<index_t> cells_r(exec, mesh.cells());
  const index_t* cells = cells_r.get();

  DeviceBuffer<K> keys(exec, nkeys);
  {
    K* k = keys.data();
    Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
      for (int f = 0; f < ft.count; ++f) k[c * ft.count + f] = facet_key<K>(cells + c * npc, ft.v[f], ft.nv);
    });
  }
  DeviceBuffer<std::uint32_t> ids(exec, nkeys);
  DeviceBuffer<std::uint8_t> is_new(exec, nkeys);
  HashTable<K, std::uint32_t> table(exec, std::max<std::size_t>(nkeys / 2, 1024));
  table.insert_unique_resident(keys.data(), ids.data(), is_new.data(), nkeys);
  keys.reset();
  const std::size_t nfacets = table.size();

  // How many cells see each facet, and where it was seen first.
  DeviceBuffer<std::uint32_t> count(exec, nfacets + 1), first(exec, nfacets);
  exec.context().fill_bytes(count.data(), 0, count.bytes());
  {
    const std::uint32_t* id = ids.data();
    const std::uint8_t* fresh = is_new.data();
    std::uint32_t* cnt = count.data();
    std::uint32_t* fst = first.data();
    Launch::for_each(exec, nkeys, [=] FEM_HD(std::size_t i) {
      A::fetch_add(&cnt[id[i]], 1u);
      if (fresh[i]) fst[id[i]] = static_cast<std::uint32_t>(i);
    });
    // Boundary facets are those seen once; number them in facet-id order.
    Launch::for_each(exec, nfacets, [=] FEM_HD(std::size_t f) { cnt[f] = cnt[f] == 1 ? 1 : 0; });
  }
  const auto nboundary = static_cast<std::size_t>(Launch::exclusive_scan(exec, count.data(), nfacets + 1));

  Output<index_t> vertices(exec, nboundary * nv), cell(exec, nboundary);
  Output<std::int8_t> local(exec, nboundary);
  {
    const std::uint32_t* pos = count.data();
    const std::uint32_t* fst = first.data();
    index_t* vo = vertices.get();
    index_t* co = cell.get();
    std::int8_t* lo = local.get();
    Launch::for_each(exec, nfacets, [=] FEM_HD(std::size_t f) {
      if (pos[f + 1] == pos[f]) return;  // interior
      const std::size_t b = pos[f], occurrence = fst[f];
      const std::size_t c = occurrence / ft.count;
      const int lf = static_cast<int>(occurrence % ft.count);
      co[b] = static_cast<index_t>(c);
      lo[b] = static_cast<std::int8_t>(lf);
      for (int k = 0; k < nv; ++k) vo[b * nv + k] = cells[c * npc + ft.v[lf][k]];
    });
  }
  BoundaryFacets out;
  out.vertices = vertices.take();
  out.cell = cell.take();
  out.local_facet = local.take();
  out.vertices_per_facet = nv;
  out.num_facets = static_cast<index_t>(nfacets);
  return out;
}

}  // namespace fem::gpu::detail
