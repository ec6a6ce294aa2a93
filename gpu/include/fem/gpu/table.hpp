// A hash table as an op: one HashTable behind a handle that a store entry holds, typed at run
// time (key and value dtypes from a small fixed set), so that C (gpu/include/fem/gpu/c_api.h),
// Python and other hosts use the connectivity's table for their own indexing work by key.
//
//   auto t = std::make_shared<const fem::gpu::Table>(Executor::host(), Table::Key::i64,
//                                                    Table::Value::i32, 1000);
//   store.put("ids", t);
//   t->insert_unique(keys, ids, is_new, n);   // dedupe and number in first-occurrence order
//
// The handle is const in the store (its identity and types never change) and the table inside
// is its mutable state: every op takes the handle's lock, so ops on one table are serialized
// and a holder keeps the table alive after the entry is erased or replaced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "fem/gpu/executor.hpp"
#include "fem/type_name.hpp"

namespace fem::gpu {

class Table {
 public:
  /// Key types: 32- and 64-bit signed integers, or a pair of 64-bit halves (128-bit keys, as
  /// the connectivity's edge and face keys). The key -1 is reserved, and so is a high half of
  /// -1 or -2 for pairs (empty and claimed slots).
  enum class Key : std::int32_t { i32 = 1, i64 = 2, pair = 16 };
  /// Value types: 32- and 64-bit signed integers, or doubles.
  enum class Value : std::int32_t { f64 = 0, i32 = 1, i64 = 2 };

  /// A table on `exec` for about `expected_size` keys, growing (to twice its capacity) past
  /// `load_factor` (0.05 .. 0.9). Ids of insert_unique need integer values.
  Table(Executor exec, Key key, Value value, std::size_t expected_size = 0, double load_factor = 0.5);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  Key key_type() const noexcept { return key_; }
  Value value_type() const noexcept { return value_; }
  static std::size_t key_bytes(Key k) noexcept { return k == Key::i32 ? 4 : k == Key::i64 ? 8 : 16; }
  static std::size_t value_bytes(Value v) noexcept { return v == Value::i32 ? 4 : 8; }
  static std::string name(Key k);
  static std::string name(Value v);

  // Batched ops on arrays of n entries of the table's types, aligned to their element size,
  // either all on the host or all in the table's executor memory (device pointers for a CUDA
  // table; the debug device's own allocations), told apart by GpuContext::holds. Host arrays of
  // a device table are copied over in chunks; executor arrays are used where they are, the keys
  // checked there. int64 and pair keys and every value type are used in place (no copy); int32
  // keys are sign-extended (on the executor for executor arrays).
  /// Insert or assign.
  void insert(const void* keys, const void* values, std::size_t n) const;
  /// Dedupe and number: ids[i] the id of keys[i] (new keys numbered size(), size()+1, ... in
  /// order of first occurrence), is_new[i] whether this occurrence introduced it (may be null).
  void insert_unique(const void* keys, void* ids, std::uint8_t* is_new, std::size_t n) const;
  /// values[i] of keys[i]; where absent found[i] = 0 and values[i] all ones (-1, or a NaN).
  void find(const void* keys, void* values, std::uint8_t* found, std::size_t n) const;
  /// Number of keys, from the inserts' counter (no scan).
  std::size_t size() const;
  /// The entries sorted by key (pairs: by high half, then low), at most `capacity` of them;
  /// returns size() (the caller's buffers were too small when it exceeds `capacity`).
  std::size_t export_entries(void* keys, void* values, std::size_t capacity) const;

  std::size_t capacity() const;
  /// Bytes the table holds (the store accounts them) and where.
  std::size_t bytes() const;
  Residency residency() const;
  const Executor& executor() const noexcept;

 private:
  struct Impl;
  Key key_;
  Value value_;
  std::unique_ptr<Impl> impl_;
  mutable std::mutex mutex_;
};

}  // namespace fem::gpu

FEM_TYPE_NAME(fem::gpu::Table, "fem::gpu::Table");
