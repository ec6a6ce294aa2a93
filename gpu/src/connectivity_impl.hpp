// The connectivity builders, written once over a launch policy (HostLaunch: OpenMP loops;
// CudaLaunch: kernels) and executor memory. Compiled into connectivity_host.cpp and
// connectivity_cuda.cu. Keep this file free of fmt (nvcc compiles it): checks happen in the
// host-compiled entry points before these run.
#pragma once

#include <algorithm>
#include <vector>

#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/detail/table_ops.hpp"
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

/// Throws InvalidArgument when nnz_nodes · block_size² leaves the 32-bit index range (host code).
void check_pattern_size(std::size_t nnz_nodes, int block_size);

/// Capacity (a power of two) of the node-pair table for `nkeys` pair occurrences in `nc` cells
/// on `nn` nodes: at least 1.3 times the expected number of distinct pairs (a load of at most
/// 0.77 before the rounding up), which the cells predict. A pair is shared by 2 triangles (Euler:
/// E = 1.5 F), ~5 tetrahedra (5.1 in a structured mesh, 5-5.5 in Delaunay ones: 4.5 to be safe),
/// ~2.4 P2 tetrahedra; quadrilateral edges by 2 and their diagonals by none (1.5); the pairs of
/// 1D cells by none (1); the rest by at least 1.2 (quad9 1.2, tri6 1.4, hex8 2.2). The node
/// count tells the cells with the same number of nodes apart: triangles outnumber their nodes
/// (2:1), P2 lines do not (1:2); tetrahedra outnumber theirs 5-6:1, quadrilaterals 1:1. An
/// estimate too low only costs a rebuild.
inline std::size_t pair_table_capacity(std::size_t nkeys, int npc, std::size_t nc, std::size_t nn) {
  const double shared_by = npc == 2    ? 1.0
                           : npc == 3  ? (nc > nn ? 2.0 : 1.0)
                           : npc == 4  ? (nc > 2 * nn ? 4.5 : 1.5)
                           : npc == 10 ? 2.4
                                       : 1.2;
  const auto expected = static_cast<std::size_t>(double(nkeys) / shared_by) + 1024;
  std::size_t cap = 1;
  while (double(cap) < 1.3 * double(expected)) cap *= 2;
  return cap;
}

/// Call f.template operator()<NPC>() with the usual cells' node counts as compile-time
/// constants (unrolled loops), or NPC = 0 (run-time npc) for the others.
template <class F>
void with_nodes_per_cell(int npc, F&& f) {
  switch (npc) {
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 6:
      return f.template operator()<6>();
    case 8:
      return f.template operator()<8>();
    case 10:
      return f.template operator()<10>();
    default:
      return f.template operator()<0>();
  }
}

/// Step 1 of the pattern build: every pair of distinct nodes of every cell into the table, as
/// (larger, smaller) or (smaller, larger): the first node owns the pair's row-local window. *full is set when
/// an insert gave up; the remaining cells then stop early.
template <class Launch, int NPC>
void insert_cell_pairs(const Executor& exec, const index_t* cells, std::size_t nc, int npc_run,
                       TableRef<std::uint64_t, std::uint32_t> t, bool larger_first, std::uint32_t* full,
                       index_t* row_length) {
  using A = typename Launch::Atomics;
  Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
    if (A::load(full)) return;
    const int npc = NPC ? NPC : npc_run;
    const index_t* v = cells + c * npc;
    for (int a = 0; a < npc; ++a)
      for (int b = a + 1; b < npc; ++b) {
        if (v[a] == v[b]) continue;
        const bool swap = (v[a] < v[b]) == larger_first;
        const ProbeResult r = insert_key<A>(t, swap ? pack_pair(v[b], v[a]) : pack_pair(v[a], v[b]));
        if (r.full) A::store(full, 1u);
        if (r.inserted) {  // a new pair: one more column in both rows
          A::fetch_add(&row_length[v[a]], index_t{1});
          A::fetch_add(&row_length[v[b]], index_t{1});
        }
      }
  });
}

/// pos[j] = the position of nodes[j] in the sorted row cols[b, e), where present: the launch
/// policy's vectorised scan when it has one, else one column at a time, branch-free.
template <class Launch>
FEM_HD_INLINE void row_positions(const index_t* cols, index_t b, index_t e, index_t end, const index_t* nodes,
                                 int m, index_t* pos) {
  if constexpr (Launch::has_row_positions) {
    Launch::row_positions(cols, b, e, end, nodes, m, pos);
  } else {
    for (index_t k = b; k < e; ++k)
      for (int j = 0; j < m; ++j) pos[j] = cols[k] == nodes[j] ? k : pos[j];
  }
}

/// Step 4: each cell's block of the element-to-slot map. Each node's row is scanned once for
/// all the cell's nodes (branch-free: the rows are short and sorted, and the compares of one
/// column against the cell's nodes vectorize), then expanded to blocks: local DOF a*bs+ca of a
/// cell is component ca of its node a; row (node r, component c) starts at
/// off[r]*bs*bs + c*len(r)*bs.
template <class Launch, int NPC>
void cell_slots(const Executor& exec, const index_t* cells, std::size_t nc, int npc_run, int bs,
                const index_t* off, const index_t* cols, index_t nnz, index_t* out) {
  Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
    const int npc = NPC ? NPC : npc_run;
    const int n = npc * bs;
    index_t v[NPC ? NPC : 64];
    for (int a = 0; a < npc; ++a) v[a] = cells[c * npc + a];
    index_t* cell_out = out + c * n * n;
    // Node-level slots, written straight into the output when bs == 1 (else expanded below).
    for (int a = 0; a < npc; ++a) {
      index_t pos[NPC ? NPC : 64] = {};
      row_positions<Launch>(cols, off[v[a]], off[v[a] + 1], nnz, v, npc, pos);
      for (int b = 0; b < npc; ++b) cell_out[a * n + b] = pos[b];
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

template <class Launch>
Connectivity build_connectivity_impl(const Executor& exec, std::span<const index_t> cell_nodes_host, int npc,
                                     index_t num_nodes, int bs) {
  using A = typename Launch::Atomics;
  using Ref = TableRef<std::uint64_t, std::uint32_t>;
  const std::size_t nc = cell_nodes_host.size() / npc;
  const int npairs = npc * (npc - 1) / 2;
  const std::size_t nkeys = nc * npairs;
  const auto nn = static_cast<std::size_t>(num_nodes);
  Resident<index_t> cells_r(exec, cell_nodes_host);
  const index_t* cells = cells_r.get();

  // 1. Insert every pair of distinct nodes of every cell into a table with row-local home slots:
  //    consecutive cells touch neighbouring windows, so the inserts stay in cache. Nothing is
  //    stored per occurrence. The window of a pair belongs to its larger node (so P2 pairs of a
  //    vertex and an edge node, numbered after all vertices, spread over the edge rows); when an
  //    insert gives up (the numbering piles pairs into a run of windows: a fan around one node),
  //    to its smaller node; then hashed home slots. The first try is a table loaded up to 0.77
  //    (half the memory to fill and scan of a load of 0.4), which a random numbering overflows:
  //    then the same sequence again at half the load. A hashed table found full is rebuilt twice
  //    as big. Later steps read a key's two nodes symmetrically, so the order inside the key
  //    does not matter.
  // Row lengths of the node pattern are counted by the inserts (one per new pair and row), on
  // top of the diagonal; offsets are their scan.
  DeviceBuffer<index_t> offsets_node;
  Output<index_t> offsets_out(exec, bs == 1 ? nn + 1 : 0);
  if (bs != 1) offsets_node = DeviceBuffer<index_t>(exec, nn + 1);
  index_t* off = bs == 1 ? offsets_out.get() : offsets_node.data();

  std::size_t capacity = pair_table_capacity(nkeys, npc, nc, nn);
  DeviceBuffer<std::uint64_t> table_keys;
  Ref table;
  DeviceBuffer<std::uint32_t> flag(exec, 1);
  bool grown = false;
  for (int attempt = 0;; ++attempt) {
    const bool row_local = attempt < 2, larger_first = attempt == 0;
    table_keys = DeviceBuffer<std::uint64_t>(exec, capacity);
    exec.context().fill_bytes(table_keys.data(), 0xff, table_keys.bytes());
    exec.context().fill_bytes(flag.data(), 0, flag.bytes());
    table.keys = table_keys.data();
    table.mask = capacity - 1;
    // Windows of about capacity / rows slots (a power of two, at least 4), spread evenly.
    table.window_shift = 0;
    table.row_scale = 0;
    if (row_local) {
      const double spacing = double(capacity) / double(nn);
      table.window_shift = 2;
      while (table.window_shift < 16 && double(std::uint64_t{2} << table.window_shift) <= spacing * 1.5)
        ++table.window_shift;
      table.row_scale = static_cast<std::uint64_t>(spacing * 65536.0);
    }
    table.probe_limit = table.window_shift ? 64 : 0;
    Launch::for_each(exec, nn + 1, [=] FEM_HD(std::size_t r) { off[r] = r < nn ? 1 : 0; });
    with_nodes_per_cell(npc, [&]<int NPC>() {
      insert_cell_pairs<Launch, NPC>(exec, cells, nc, npc, table, larger_first, flag.data(), off);
    });
    if (read_scalar(exec, flag.data()) == 0) break;
    if (!grown) {
      // The numbering crowds some windows (a random one does): first half the load, as before.
      grown = true;
      capacity *= 2;
      attempt = -1;
      continue;
    }
    if (!table.window_shift) capacity *= 2;
    attempt = std::min(attempt, 1);  // row-local by larger, by smaller, then hashed from then on
  }

  // 2. Row offsets of the node pattern: the scan of the lengths the inserts counted.
  const auto nnz_nodes = static_cast<std::size_t>(Launch::exclusive_scan(exec, off, nn + 1));
  check_pattern_size(nnz_nodes, bs);

  // 3. Fill the rows with columns (diagonal first, then both sides of every table entry) and
  //    sort each row (rows are short: a sorting network for up to 8 columns where the launch
  //    policy has one, else insertion sort). The order before the sort depends on the
  //    threads, the sorted rows do not.
  DeviceBuffer<index_t> node_cols;
  Output<index_t> cols_out(exec, bs == 1 ? nnz_nodes : 0);
  if (bs != 1) node_cols = DeviceBuffer<index_t>(exec, nnz_nodes);
  index_t* cols = bs == 1 ? cols_out.get() : node_cols.data();
  {
    DeviceBuffer<index_t> cursor(exec, nn);
    index_t* cur = cursor.data();
    Launch::for_each(exec, nn, [=] FEM_HD(std::size_t r) {
      cols[off[r]] = static_cast<index_t>(r);
      cur[r] = off[r] + 1;
    });
    const Ref t = table;
    Launch::for_each(exec, capacity, [=] FEM_HD(std::size_t s) {
      const std::uint64_t key = t.keys[s];
      if (key == KeyTraits<std::uint64_t>::empty) return;
      const index_t lo = pair_first(key), hi = pair_second(key);
      cols[A::fetch_add(&cur[lo], index_t{1})] = hi;
      cols[A::fetch_add(&cur[hi], index_t{1})] = lo;
    });
    const auto total = static_cast<index_t>(nnz_nodes);
    Launch::for_each(exec, nn, [=] FEM_HD(std::size_t r) {
      const index_t b = off[r], end = off[r + 1];
      if (Launch::sort_short_row(cols, b, end, total)) return;
      for (index_t i = b + 1; i < end; ++i) {
        const index_t c = cols[i];
        index_t j = i;
        for (; j > b && cols[j - 1] > c; --j) cols[j] = cols[j - 1];
        cols[j] = c;
      }
    });
  }
  table_keys.reset();

  // 4. The element-to-slot map.
  const int n = npc * bs;
  Output<index_t> slots(exec, nc * n * n);
  with_nodes_per_cell(npc, [&]<int NPC>() {
    cell_slots<Launch, NPC>(exec, cells, nc, npc, bs, off, cols, static_cast<index_t>(nnz_nodes),
                            slots.get());
  });

  // 5. The pattern: for bs = 1 the node pattern itself (already in the outputs), else expanded.
  Connectivity result;
  const std::size_t nrows = nn * bs;
  if (bs == 1) {
    result.pattern = std::make_shared<const CsrPattern>(
        CsrPattern::trusted(num_nodes, num_nodes, offsets_out.take(), cols_out.take()));
  } else {
    Output<index_t> row_offsets(exec, nrows + 1), col_indices(exec, nnz_nodes * bs * bs);
    const index_t* nc_cols = node_cols.data();
    index_t* ro = row_offsets.get();
    index_t* co = col_indices.get();
    const auto total = static_cast<index_t>(nnz_nodes * bs * bs);
    Launch::for_each(exec, nn, [=] FEM_HD(std::size_t r) {
      const index_t len = off[r + 1] - off[r];
      for (int c = 0; c < bs; ++c) {
        const index_t start = off[r] * bs * bs + c * len * bs;
        ro[r * bs + c] = start;
        index_t k = start;
        for (index_t kk = off[r]; kk < off[r + 1]; ++kk)
          for (int cb = 0; cb < bs; ++cb) co[k++] = nc_cols[kk] * bs + cb;
      }
      if (r + 1 == nn) ro[nrows] = total;
    });
    const auto rows = static_cast<index_t>(nrows);
    result.pattern = std::make_shared<const CsrPattern>(
        CsrPattern::trusted(rows, rows, row_offsets.take(), col_indices.take()));
  }
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

// The boundary facets' arrays, once written, as the builders return them.
inline BoundaryFacets boundary_facets(Output<index_t>& vertices, Output<index_t>& cell,
                                      Output<std::int8_t>& local, int nv, std::size_t nfacets) {
  BoundaryFacets out;
  out.vertices = vertices.take();
  out.cell = cell.take();
  out.local_facet = local.take();
  out.vertices_per_facet = nv;
  out.num_facets = static_cast<index_t>(nfacets);
  return out;
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
  return boundary_facets(vertices, cell, local, nv, nfacets);
}

/// The boundary facets again, for 64-bit facet keys (all but faces of meshes with 2^21 nodes or
/// more), with the facet table's home slots local to each facet's smallest vertex (as the pattern
/// build does for node pairs): the facets of neighbouring cells share cache lines, where hashed
/// slots cost a DRAM round trip per facet. A facet probes from the start of its vertex's window,
/// so the keys of one vertex land next to each other and no hash is computed. The table holds
/// nothing but the keys: a facet seen again gets the key's top bit (free in every 64-bit facet
/// key) set, so one probe per occurrence does all the counting. A boundary facet occurs once, so
/// the output, in occurrence order, is boundary_facets_impl()'s (2D P1 on 2·1024² triangles,
/// one core: 395 → 50 ms; 6·48³ tetrahedra 182 → 35 ms).
template <class Launch>
BoundaryFacets boundary_facets_local_impl(const Executor& exec, const Mesh& mesh, const FacetTable& ft) {
  using A = typename Launch::Atomics;
  using K = std::uint64_t;
  constexpr K seen_again = K{1} << 63, empty = KeyTraits<K>::empty;
  const std::size_t nc = static_cast<std::size_t>(mesh.num_cells());
  const int npc = mesh.nodes_per_cell(), nf = ft.count, nv = ft.nv;
  const std::size_t nkeys = nc * nf;
  // The rows that own windows: the vertices. Second-order meshes may number them first, before
  // the edge nodes: windows spread over all nodes would crowd the vertices' part of the table.
  std::size_t nn = static_cast<std::size_t>(mesh.num_nodes());
  if (npc > mesh.cell_info().num_vertices) {
    index_t top = 0;
    const auto all = mesh.cells();
    const int ncv = mesh.cell_info().num_vertices;
    for (std::size_t c = 0; c < nc; ++c)
      for (int k = 0; k < ncv; ++k) top = std::max(top, all[c * npc + k]);
    nn = static_cast<std::size_t>(top) + 1;
  }
  nn = std::max<std::size_t>(nn, 1);
  Resident<index_t> cells_r(exec, mesh.cells());
  const index_t* cells = cells_r.get();

  // 1. Every facet occurrence into the table, its slot kept; per cell, how many facets it saw
  //    first. Interior facets are seen twice: about nkeys / 2 distinct ones, at a load of at most
  //    0.77. A facet probes from the start of its smallest vertex's share of the table; a
  //    numbering that crowds those (an insert gives up after 64 probes) gets twice the room,
  //    then hashed home slots.
  std::size_t capacity = 1;
  while (double(capacity) < 1.3 * (double(nkeys) / 2 + 1024)) capacity *= 2;
  DeviceBuffer<K> keys;
  DeviceBuffer<std::uint32_t> slots(exec, nkeys), first_seen(exec, nc + 1), flag(exec, 1);
  for (int attempt = 0;; ++attempt) {
    keys = DeviceBuffer<K>(exec, capacity);
    exec.context().fill_bytes(keys.data(), 0xff, keys.bytes());
    exec.context().fill_bytes(flag.data(), 0, flag.bytes());
    K* table = keys.data();
    const std::uint64_t mask = capacity - 1;
    // Windows of capacity / rows slots, the row's share of the table in 1/65536ths of a slot.
    const bool windows = attempt < 2;
    const std::uint64_t row_scale = static_cast<std::uint64_t>(double(capacity) / double(nn) * 65536.0);
    const std::uint64_t limit = windows ? 64 : mask + 1;
    std::uint32_t* slot_of = slots.data();
    std::uint32_t* fresh = first_seen.data();
    std::uint32_t* full = flag.data();
    Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
      if (A::load(full)) return;
      const index_t* v = cells + c * npc;
      std::uint32_t inserted = 0;
      for (int f = 0; f < ft.count; ++f) {
        const K key = facet_key<K>(v, ft.v[f], ft.nv);
        std::uint64_t slot;
        if (windows) {
          index_t row = v[ft.v[f][0]];
          for (int k = 1; k < ft.nv; ++k) row = v[ft.v[f][k]] < row ? v[ft.v[f][k]] : row;
          slot = (std::uint64_t(row) * row_scale) >> 16;
        } else {
          slot = KeyTraits<K>::hash(key);
        }
        bool placed = false;
        for (std::uint64_t probes = 0; probes < limit && !placed; ++probes, ++slot) {
          slot &= mask;
          K cur = A::load(&table[slot]);
          if (cur == empty) {
            cur = A::cas(&table[slot], empty, key);
            if (cur == empty) {
              ++inserted;
              placed = true;
              continue;
            }
          }
          if ((cur & ~seen_again) != key) continue;
          while (!(cur & seen_again)) {  // the facet again: mark it
            const K prev = A::cas(&table[slot], cur, cur | seen_again);
            if (prev == cur) break;
            cur = prev;
          }
          placed = true;
        }
        if (!placed) {
          A::store(full, 1u);
          return;
        }
        slot_of[c * ft.count + f] = static_cast<std::uint32_t>(slot - 1);
      }
      fresh[c] = inserted;
    });
    if (read_scalar(exec, flag.data()) == 0) break;
    capacity *= 2;
  }

  // 2. Per cell, its facets seen once; ranked in cell order they are the boundary facets in
  //    occurrence order.
  DeviceBuffer<std::uint32_t> rank(exec, nc + 1);
  {
    const K* table = keys.data();
    const std::uint32_t* slot_of = slots.data();
    std::uint32_t* rk = rank.data();
    std::uint32_t* fresh = first_seen.data();
    Launch::for_each(exec, nc + 1, [=] FEM_HD(std::size_t c) {
      std::uint32_t once = 0;
      if (c < nc)
        for (int f = 0; f < ft.count; ++f) once += (table[slot_of[c * ft.count + f]] & seen_again) ? 0u : 1u;
      else
        fresh[c] = 0;
      rk[c] = once;
    });
  }
  const auto nboundary = static_cast<std::size_t>(Launch::exclusive_scan(exec, rank.data(), nc + 1));
  const auto nfacets = static_cast<std::size_t>(Launch::exclusive_scan(exec, first_seen.data(), nc + 1));

  Output<index_t> vertices(exec, nboundary * nv), cell(exec, nboundary);
  Output<std::int8_t> local(exec, nboundary);
  {
    const K* table = keys.data();
    const std::uint32_t* slot_of = slots.data();
    const std::uint32_t* pos = rank.data();
    index_t* vo = vertices.get();
    index_t* co = cell.get();
    std::int8_t* lo = local.get();
    Launch::for_each(exec, nc, [=] FEM_HD(std::size_t c) {
      std::size_t b = pos[c];
      if (pos[c + 1] == b) return;  // no boundary facet
      for (int f = 0; f < ft.count; ++f) {
        if (table[slot_of[c * ft.count + f]] & seen_again) continue;
        co[b] = static_cast<index_t>(c);
        lo[b] = static_cast<std::int8_t>(f);
        for (int k = 0; k < nv; ++k) vo[b * nv + k] = cells[c * npc + ft.v[f][k]];
        ++b;
      }
    });
  }
  return boundary_facets(vertices, cell, local, nv, nfacets);
}

}  // namespace fem::gpu::detail
