// The bulk kernels of the hash table on one kind of executor: the host twin (OpenMP) or CUDA.
// Both run the per-index bodies of detail/table_ops.hpp; this interface is what differs.
#pragma once

#include <cstdint>
#include <memory>

#include "fem/gpu/detail/table_ops.hpp"
#include "fem/gpu/executor.hpp"

namespace fem::gpu::detail {

/// Scalars the kernels maintain, in executor memory next to the table.
struct Counters {
  unsigned long long size = 0;  ///< keys in the table
  unsigned long long base = 0;  ///< size before the running insert_unique batch
  unsigned int max_probe = 0;   ///< longest probe sequence since the last rebuild
  unsigned int full = 0;        ///< an insert found no free slot
};

template <class K, class V>
class TableBackend {
 public:
  virtual ~TableBackend() = default;
  /// Empty every slot and zero the counters (when c is not null).
  virtual void clear(TableRef<K, V> t, Counters* c) = 0;
  virtual void insert(TableRef<K, V> t, Counters* c, const K* keys, const V* values, std::size_t n) = 0;
  virtual void insert_unique(TableRef<K, V> t, Counters* c, const K* keys, std::size_t n, V* ids,
                             std::uint8_t* is_new) = 0;
  virtual void find(TableRef<K, V> t, const K* keys, std::size_t n, V* values, std::uint8_t* found) = 0;
  /// Compact the occupied slots into keys/values, in slot order, writing at most `bound` entries.
  virtual void export_entries(TableRef<K, V> t, std::size_t bound, K* keys, V* values) = 0;
  /// Insert every entry of `from` into the empty table `to`; c->max_probe is recomputed.
  virtual void rehash(TableRef<K, V> from, TableRef<K, V> to, Counters* c) = 0;
  /// The index of the first reserved key among keys[0, n) in executor memory, or n (blocking).
  virtual std::size_t first_invalid(const K* keys, std::size_t n) = 0;
  /// out[i] = in[i] sign-extended, in executor memory (64-bit keys; the int32 keys of an op).
  virtual void widen(const std::int32_t* in, std::size_t n, K* out) = 0;
};

template <class K, class V>
std::unique_ptr<TableBackend<K, V>> make_host_backend(const Executor& exec);
/// Defined in the CUDA sources, or a stub that throws NotCompiled.
template <class K, class V>
std::unique_ptr<TableBackend<K, V>> make_cuda_backend(const Executor& exec);

}  // namespace fem::gpu::detail
