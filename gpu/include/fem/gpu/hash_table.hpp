// An open-addressing hash table for connectivity keys, in the spirit of a table-handle op with
// Find / Insert / Size / Export. Lives on an explicit Executor: the CUDA device, or its host
// twin, which runs the same probing code (gpu/include/fem/gpu/detail/table_ops.hpp) with host
// atomics and OpenMP, so every algorithm is tested on machines without a GPU.
//
//   HashTable<std::uint64_t, std::uint32_t> edges(Executor::host(), expected_edges);
//   edges.insert_unique(edge_keys, edge_ids);   // dedupe and number, in first-occurrence order
//   edges.find(queries, ids, found);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fem/gpu/executor.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/type_name.hpp"

namespace fem::gpu {

template <class K, class V>
class HashTable {
  static_assert(std::is_same_v<K, std::uint64_t> || std::is_same_v<K, Key128>, "keys are 64 or 128 bits");
  static_assert(std::is_same_v<V, std::uint32_t> || std::is_same_v<V, std::uint64_t>,
                "values are 32 or 64 bits");

 public:
  using key_type = K;
  using value_type = V;

  struct Options {
    /// The table grows (rebuilds at twice the capacity) when size / capacity exceeds this.
    double max_load = 0.5;
    /// ... or when an insert had to inspect more slots than this.
    std::uint32_t max_probe = 128;
  };

  /// A table on `exec` sized for `expected_size` keys without growing.
  explicit HashTable(Executor exec, std::size_t expected_size = 0);
  HashTable(Executor exec, std::size_t expected_size, Options options);
  ~HashTable();
  HashTable(HashTable&&) noexcept;
  HashTable& operator=(HashTable&&) noexcept;

  // --- blocking operations on host arrays (copied to and from the executor when needed) ----

  /// Insert or assign keys[i] -> values[i]. The all-ones key is reserved.
  void insert(std::span<const K> keys, std::span<const V> values);
  /// Deduplicate and number: ids[i] is the id of keys[i], is_new[i] whether this occurrence
  /// introduced it. New keys get ids size(), size()+1, ... in order of first occurrence, so the
  /// numbering is the same for any thread count and on any executor. Values must be ids
  /// (below 2^(bits-1)) for tables used with insert_unique.
  void insert_unique(std::span<const K> keys, std::span<V> ids, std::span<std::uint8_t> is_new = {});
  /// values[i] = the value of keys[i]; for absent keys found[i] = 0 and values[i] = all ones.
  void find(std::span<const K> keys, std::span<V> values, std::span<std::uint8_t> found = {}) const;
  /// All entries, compacted (in slot order, which depends on the hash: compare sorted).
  void export_entries(std::vector<K>& keys, std::vector<V>& values) const;
  /// Number of keys, from the counter the inserts keep (no scan of the capacity).
  std::size_t size() const;
  void clear();
  /// Make room for `n` keys in total without growing.
  void reserve(std::size_t n);

  // --- stream-ordered forms on executor-resident arrays (device pointers for CUDA) ---------
  // They return once the work is queued on the context's stream; they never grow the table
  // (reserve() first: a table found full throws at the next blocking call). An insert gives up
  // after async_probe_limit probes, so that overfilling a table costs a bounded time per key
  // and is reported, rather than every key probing the whole capacity; at the default
  // max_load no probe sequence comes near it.
  //
  // Ordering: the context's stream is a non-blocking one (cudaStreamNonBlocking). It is not
  // ordered against the legacy default stream, nor against other streams: arrays written by
  // the caller's own kernels or copies must be complete (or ordered with an event) before
  // these calls, and results may be read only after the context's synchronize(), a blocking
  // call of this table, or an event recorded on its stream.
  static constexpr std::uint32_t async_probe_limit = 4096;

  void insert_async(const K* keys, const V* values, std::size_t n);
  void insert_unique_async(const K* keys, V* ids, std::uint8_t* is_new, std::size_t n);
  void find_async(const K* keys, V* values, std::uint8_t* found, std::size_t n) const;
  // --- blocking forms on executor-resident arrays: they grow as needed and return when done.
  // Like the _async forms they take the keys as given (the connectivity builds its own);
  // first_invalid_resident checks a batch from elsewhere.
  void insert_resident(const K* keys, const V* values, std::size_t n);
  void insert_unique_resident(const K* keys, V* ids, std::uint8_t* is_new, std::size_t n);
  void find_resident(const K* keys, V* values, std::uint8_t* found, std::size_t n) const;
  /// The index of the first reserved key of keys[0, n) in executor memory, or n.
  std::size_t first_invalid_resident(const K* keys, std::size_t n) const;
  /// out[i] = in[i] sign-extended, both in executor memory (int32 keys for a 64-bit table).
  void widen_keys_resident(const std::int32_t* in, std::size_t n, K* out) const;
  /// Writes size() entries; the arrays must hold that many.
  void export_async(K* keys, V* values) const;

  std::size_t capacity() const noexcept;
  double load_factor() const { return capacity() ? double(size()) / double(capacity()) : 0.0; }
  /// Longest probe sequence seen by inserts since the last rebuild.
  std::uint32_t max_probe_length() const;
  /// How many times the table was rebuilt at a larger capacity.
  std::uint32_t rebuilds() const noexcept;
  std::size_t bytes() const noexcept;
  Residency residency() const noexcept;
  const Executor& executor() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class HashTable<std::uint64_t, std::uint32_t>;
extern template class HashTable<std::uint64_t, std::uint64_t>;
extern template class HashTable<Key128, std::uint32_t>;
extern template class HashTable<Key128, std::uint64_t>;

using HashTable64x32 = HashTable<std::uint64_t, std::uint32_t>;
using HashTable64x64 = HashTable<std::uint64_t, std::uint64_t>;
using HashTable128x32 = HashTable<Key128, std::uint32_t>;
using HashTable128x64 = HashTable<Key128, std::uint64_t>;

}  // namespace fem::gpu

FEM_TYPE_NAME(fem::gpu::HashTable64x32, "fem::gpu::HashTable<u64,u32>");
FEM_TYPE_NAME(fem::gpu::HashTable64x64, "fem::gpu::HashTable<u64,u64>");
FEM_TYPE_NAME(fem::gpu::HashTable128x32, "fem::gpu::HashTable<u128,u32>");
FEM_TYPE_NAME(fem::gpu::HashTable128x64, "fem::gpu::HashTable<u128,u64>");
