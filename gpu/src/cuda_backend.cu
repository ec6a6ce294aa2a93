// The device backend of the hash table: the shared per-index bodies (detail/table_ops.hpp) with
// CUDA atomics in grid-stride kernels. Counters are aggregated per warp before one atomic, and
// scans come from CUB. Every call is queued on the context's stream.
#include <cub/device/device_scan.cuh>

#include "backend.hpp"
#include "cuda_try.cuh"

namespace fem::gpu::detail {
namespace {

constexpr int kBlock = 256;

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < (1u << 20) ? (blocks ? blocks : 1) : (1u << 20));
}

__device__ std::size_t global_index() { return std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ std::size_t grid_stride() { return std::size_t(gridDim.x) * blockDim.x; }

// One atomic per warp for the new-key count, the longest probe and the full flag.
__device__ void fold_counters(Counters* c, unsigned added, unsigned probes, unsigned full) {
  added = __reduce_add_sync(0xffffffffu, added);
  probes = __reduce_max_sync(0xffffffffu, probes);
  full = __reduce_or_sync(0xffffffffu, full);
  if ((threadIdx.x & 31) == 0) {
    if (added) atomicAdd(&c->size, static_cast<unsigned long long>(added));
    if (probes) atomicMax(&c->max_probe, probes);
    if (full) c->full = 1;
  }
}

template <class K, class V>
__global__ void insert_kernel(TableRef<K, V> t, Counters* c, const K* keys, const V* values, std::size_t n) {
  unsigned added = 0, probes = 0, full = 0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const ProbeResult r = insert_one<DeviceAtomics>(t, keys[i], values[i]);
    added += r.inserted;
    probes = max(probes, r.probes);
    full |= r.full;
  }
  fold_counters(c, added, probes, full);
}

__global__ void snapshot_base_kernel(Counters* c) { c->base = c->size; }

template <class K, class V>
__global__ void mark_kernel(TableRef<K, V> t, Counters* c, const K* keys, std::size_t n,
                            std::uint32_t* slots) {
  unsigned added = 0, probes = 0, full = 0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const ProbeResult r = mark_one<DeviceAtomics>(t, keys[i], i, slots);
    added += r.inserted;
    probes = max(probes, r.probes);
    full |= r.full;
  }
  fold_counters(c, added, probes, full);
}

// The phases after mark_kernel stop at once when it found the table full (the front end then
// reports the overflow; the ids of such a batch are not defined).
template <class K, class V>
__global__ void flag_kernel(TableRef<K, V> t, const Counters* c, std::size_t n, const std::uint32_t* slots,
                            V* ids, std::uint32_t* flags) {
  const bool full = c->full;
  for (std::size_t i = global_index(); i < n; i += grid_stride())
    flags[i] = full ? 0u : first_occurrence_flag(t, i, slots, ids);  // the scan reads every flag
}

template <class K, class V>
__global__ void resolve_kernel(TableRef<K, V> t, const Counters* c, std::size_t n, const std::uint32_t* slots,
                               const std::uint32_t* ranks, V* ids, std::uint8_t* fresh) {
  if (c->full) return;
  const V base = static_cast<V>(c->base);
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    resolve_id(i, base, ranks, ids, fresh);
    if (fresh[i]) t.values[slots[i]] = ids[i];
  }
}

template <class K, class V>
__global__ void find_kernel(TableRef<K, V> t, const K* keys, std::size_t n, V* values, std::uint8_t* found) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const std::uint32_t s = find_key<DeviceAtomics>(t, keys[i]);
    values[i] = s == not_found ? empty_value<V> : t.values[s];
    if (found) found[i] = s != not_found;
  }
}

template <class K, class V>
__global__ void occupancy_kernel(TableRef<K, V> t, std::uint32_t* flags) {
  for (std::size_t s = global_index(); s <= t.mask; s += grid_stride())
    flags[s] = slot_occupied(t.keys[s]) ? 1 : 0;
}

template <class K, class V>
__global__ void compact_kernel(TableRef<K, V> t, const std::uint32_t* offsets, std::size_t bound, K* keys,
                               V* values) {
  for (std::size_t s = global_index(); s <= t.mask; s += grid_stride())
    if (slot_occupied(t.keys[s]) && offsets[s] < bound) {
      keys[offsets[s]] = t.keys[s];
      values[offsets[s]] = t.values[s];
    }
}

template <class K, class V>
__global__ void rehash_kernel(TableRef<K, V> from, TableRef<K, V> to, Counters* c) {
  unsigned probes = 0, full = 0;
  for (std::size_t s = global_index(); s <= from.mask; s += grid_stride())
    if (slot_occupied(from.keys[s])) {
      const ProbeResult r = insert_one<DeviceAtomics>(to, from.keys[s], from.values[s]);
      probes = max(probes, r.probes);
      full |= r.full;
    }
  fold_counters(c, 0, probes, full);
}

template <class K>
__global__ void first_invalid_kernel(const K* keys, std::size_t n, unsigned long long* first) {
  for (std::size_t i = global_index(); i < n; i += grid_stride())
    if (!KeyTraits<K>::valid(keys[i])) atomicMin(first, static_cast<unsigned long long>(i));
}

__global__ void widen_kernel(const std::int32_t* in, std::size_t n, std::uint64_t* out) {
  for (std::size_t i = global_index(); i < n; i += grid_stride())
    out[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(in[i]));
}

template <class K, class V>
class CudaBackend final : public TableBackend<K, V> {
 public:
  explicit CudaBackend(Executor exec)
      : exec_(std::move(exec)), stream_(static_cast<cudaStream_t>(exec_.context().stream())) {}

  void clear(TableRef<K, V> t, Counters* c) override {
    const DeviceScope on(exec_.context().device());
    exec_.context().fill_bytes(t.keys, 0xff, (t.mask + 1) * sizeof(K));
    exec_.context().fill_bytes(t.values, 0xff, (t.mask + 1) * sizeof(V));
    if (c) exec_.context().fill_bytes(c, 0, sizeof(Counters));
  }

  void insert(TableRef<K, V> t, Counters* c, const K* keys, const V* values, std::size_t n) override {
    const DeviceScope on(exec_.context().device());
    if (n == 0) return;
    insert_kernel<<<grid_for(n), kBlock, 0, stream_>>>(t, c, keys, values, n);
    FEM_CUDA_TRY(cudaGetLastError());
  }

  void insert_unique(TableRef<K, V> t, Counters* c, const K* keys, std::size_t n, V* ids,
                     std::uint8_t* is_new) override {
    const DeviceScope on(exec_.context().device());
    if (n == 0) return;
    DeviceBuffer<std::uint32_t> slots(exec_, n), flags(exec_, n);
    DeviceBuffer<std::uint8_t> fresh_buffer;
    std::uint8_t* fresh = is_new;
    if (!fresh) {
      fresh_buffer = DeviceBuffer<std::uint8_t>(exec_, n);
      fresh = fresh_buffer.data();
    }
    snapshot_base_kernel<<<1, 1, 0, stream_>>>(c);
    mark_kernel<<<grid_for(n), kBlock, 0, stream_>>>(t, c, keys, n, slots.data());
    flag_kernel<<<grid_for(n), kBlock, 0, stream_>>>(t, c, n, slots.data(), ids, flags.data());
    exclusive_sum(flags.data(), n);
    resolve_kernel<<<grid_for(n), kBlock, 0, stream_>>>(t, c, n, slots.data(), flags.data(), ids, fresh);
    FEM_CUDA_TRY(cudaGetLastError());
  }

  void find(TableRef<K, V> t, const K* keys, std::size_t n, V* values, std::uint8_t* found) override {
    const DeviceScope on(exec_.context().device());
    if (n == 0) return;
    find_kernel<<<grid_for(n), kBlock, 0, stream_>>>(t, keys, n, values, found);
    FEM_CUDA_TRY(cudaGetLastError());
  }

  void export_entries(TableRef<K, V> t, std::size_t bound, K* keys, V* values) override {
    const DeviceScope on(exec_.context().device());
    const std::size_t cap = t.mask + 1;
    DeviceBuffer<std::uint32_t> offsets(exec_, cap);
    occupancy_kernel<<<grid_for(cap), kBlock, 0, stream_>>>(t, offsets.data());
    exclusive_sum(offsets.data(), cap);
    compact_kernel<<<grid_for(cap), kBlock, 0, stream_>>>(t, offsets.data(), bound, keys, values);
    FEM_CUDA_TRY(cudaGetLastError());
  }

  void rehash(TableRef<K, V> from, TableRef<K, V> to, Counters* c) override {
    const DeviceScope on(exec_.context().device());
    FEM_CUDA_TRY(cudaMemsetAsync(&c->max_probe, 0, sizeof(c->max_probe), stream_));
    rehash_kernel<<<grid_for(from.mask + 1), kBlock, 0, stream_>>>(from, to, c);
    FEM_CUDA_TRY(cudaGetLastError());
  }

  std::size_t first_invalid(const K* keys, std::size_t n) override {
    const DeviceScope on(exec_.context().device());
    if (n == 0) return 0;
    DeviceBuffer<unsigned long long> first(exec_, 1);
    exec_.context().fill_bytes(first.data(), 0xff, sizeof(unsigned long long));
    first_invalid_kernel<<<grid_for(n), kBlock, 0, stream_>>>(keys, n, first.data());
    FEM_CUDA_TRY(cudaGetLastError());
    unsigned long long at = 0;
    first.download({&at, 1});
    exec_.context().synchronize();
    return at == ~0ull ? n : static_cast<std::size_t>(at);
  }

  void widen(const std::int32_t* in, std::size_t n, K* out) override {
    const DeviceScope on(exec_.context().device());
    if constexpr (std::is_same_v<K, std::uint64_t>) {
      if (n == 0) return;
      widen_kernel<<<grid_for(n), kBlock, 0, stream_>>>(in, n, out);
      FEM_CUDA_TRY(cudaGetLastError());
    }
  }

 private:
  void exclusive_sum(std::uint32_t* data, std::size_t n) {
    std::size_t temp_bytes = 0;
    FEM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, data, data, static_cast<std::int64_t>(n),
                                               stream_));
    DeviceBuffer<unsigned char> temp(exec_, temp_bytes);
    FEM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, data, data,
                                               static_cast<std::int64_t>(n), stream_));
  }

  Executor exec_;
  cudaStream_t stream_;
};

}  // namespace

template <class K, class V>
std::unique_ptr<TableBackend<K, V>> make_cuda_backend(const Executor& exec) {
  return std::make_unique<CudaBackend<K, V>>(exec);
}

template std::unique_ptr<TableBackend<std::uint64_t, std::uint32_t>> make_cuda_backend(const Executor&);
template std::unique_ptr<TableBackend<std::uint64_t, std::uint64_t>> make_cuda_backend(const Executor&);
template std::unique_ptr<TableBackend<Key128, std::uint32_t>> make_cuda_backend(const Executor&);
template std::unique_ptr<TableBackend<Key128, std::uint64_t>> make_cuda_backend(const Executor&);

}  // namespace fem::gpu::detail
